/* SPDX-License-Identifier: BSD-3-Clause */
/* Transports: how a rank's daemons reach a peer.
 *
 * Every connection speaks one memory protocol, whatever carries it (eng_conn_t and its
 * FIFO, eng_types.h): a daemon posts a step by writing the FIFO slot and then the step
 * counter (`sent`), and polls by reading the peer's counters. That is the data path of
 * every transport, and it is not a call: a function pointer per step would sit in the
 * hottest loop of both daemons. What a transport decides is where that memory lives and
 * what moves it, so its interface is about connections:
 *
 *   reaches   the locality decision: can it carry steps between these two ranks
 *   connect   collective: point this rank's connections with its peers at memory that
 *             reaches them (and start whatever moves the steps)
 *   close     local: stop moving, release
 *   describe  one line for logs: how it reaches a peer
 *   published, ask, tell
 *             what a peer publishes in its segment's header for the others, as this rank
 *             can read it (engine/sig.c: the descriptions of its collectives, the reason
 *             it aborted), and this rank's abort mark, as its peers must see it: shm maps
 *             the peers' headers and writes the mark into them; ucx keeps a copy of each
 *             peer's in my shadow of it, which `ask` refreshes, and sends the mark
 *
 * Instances, in the table's order (engine/transport.c), which is the order of preference
 * and of connecting; closing runs backwards:
 *
 *   shm  engine/shm.c        same host: each rank's segment, mapped by its peers; nothing
 *                            moves the steps. Always first and always connected: it makes
 *                            this rank's segment, where every transport's receives land.
 *   ucx  ucx_transport/      other hosts (or DFCCL_NET=ucx): steps go into a local shadow
 *        (ucx_conn.c)        of the peer's segment, and a proxy thread sends them.
 *
 * A build without UCX has no ucx entry (no stub). The GPU daemon reaches the same peers
 * with the same decision, through its own instances of each entry (gpu_name: CUDA IPC for
 * shm's peers, host-staged FIFOs over ucx; cuda/gpu_comm.cu's table). A new transport is
 * a new file with its eng_transport_t, an id below, and an entry in the table. */
#ifndef DFCCL_TRANSPORT_H
#define DFCCL_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "dfccl.h"
#include "eng_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct dfccl_comm;

/* A transport's id: the same in every build, so ranks with different builds agree on
 * what each other has (eng_tp_card_t.built). */
typedef enum { ENG_TP_SHM = 0, ENG_TP_UCX = 1, ENG_TP_NUM } eng_tp_id_t;

/* What a rank tells the others about itself for the locality decision (part of
 * dfcclCommInit's first all-gather). */
typedef struct {
    char host[64];     /* DFCCL_HOST or the host name */
    uint32_t built;    /* bit (1 << id) for each transport this rank's library has */
    uint32_t net_only; /* DFCCL_NET=ucx: reach every other rank over the net */
} eng_tp_card_t;

/* Every all-gather of a communicator's set-up after the first receives its records into
 * the first one's table (nranks records of ENG_BOOT_REC bytes), allocated before any: a
 * rank out of memory then still takes part in each, with a status that says so, where a
 * table of its own that it failed to allocate would have left its peers waiting in that
 * all-gather for ever. boot: where in that table, with room for nranks records of rec
 * bytes (ENG_BOOT_REC, or less past a part kept for later). Returns boot, or NULL when
 * the record does not fit or the callback failed. */
#define ENG_BOOT_REC 448
static inline void *eng_boot_ag(void *boot, size_t rec, const void *mine, size_t bytes, dfcclAllgatherFn_t ag,
                                void *ctx)
{
    return bytes <= rec && ag(mine, boot, bytes, ctx) == 0 ? boot : NULL;
}

typedef struct eng_transport {
    eng_tp_id_t id;
    const char *name;     /* the CPU daemon's connections: "shm", "ucx" */
    const char *gpu_name; /* the GPU daemon's instance for the same peers */
    int (*reaches)(const eng_tp_card_t *a, const eng_tp_card_t *b);
    /* peers[p] != 0: p is mine on this transport (possibly none on this rank: every rank
     * calls it when any rank uses the transport) */
    dfcclResult_t (*connect)(struct dfccl_comm *c, const uint8_t *peers, dfcclAllgatherFn_t ag, void *ctx);
    void (*close)(struct dfccl_comm *c);
    void (*describe)(const struct dfccl_comm *c, int peer, char *buf, size_t len);
    /* peer's header as this rank sees it (NULL: none yet), read without a lock
     * (eng_sig_desc.h) */
    const eng_seg_hdr_t *(*published)(const struct dfccl_comm *c, int peer);
    /* have this transport's peers refresh what `published` shows, in the background, at
     * most every few ms (NULL: it shows their live headers) */
    void (*ask)(const struct dfccl_comm *c);
    /* this rank aborted c on a mismatch, its reason published in its header: mark every
     * peer of this transport (in its own header's abort_mark), so that its next call or
     * wait on c fails with that reason */
    void (*tell)(struct dfccl_comm *c);
} eng_transport_t;

/* The transports of this build, by id (NULL: not built). */
extern const eng_transport_t *const eng_transports[ENG_TP_NUM];

/* This rank's card (the host and net_only from the configuration). */
void eng_tp_card(eng_tp_card_t *card);

/* The locality decision (locality.c), the same on every rank from the same cards (cards:
 * nranks of them, stride bytes apart): tp[q] is the transport of table (the build's,
 * eng_transports) that rank me uses with q (me itself: shm), *used_p the bit set of
 * transports some pair of ranks uses. dfcclUnsupported, naming the rank, when no
 * transport both ends have reaches a pair. */
dfcclResult_t eng_tp_pick(const eng_transport_t *const table[ENG_TP_NUM], const eng_tp_card_t *cards,
                          size_t stride, int nranks, int me, uint8_t *tp, uint32_t *used_p);

#ifdef __cplusplus
}
#endif

#endif
