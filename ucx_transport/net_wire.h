/* SPDX-License-Identifier: BSD-3-Clause */
/* What the net transport's proxies send each other: the active message ids, the header
 * every message carries, and what a message of descriptions holds. In a header of its
 * own so that the hostile test (test/net/t_netstray.c) sends what a peer would. */
#ifndef DFCCL_NET_WIRE_H
#define DFCCL_NET_WIRE_H

#include <stdint.h>

#include "eng_types.h"

/* dfccl's ids, AM_STEP to AM_DESC (every other id a peer can name is dropped):
 *   AM_STEP    a step (or an eager piece of one): the header, then its bytes
 *   AM_CREDIT  the receiver's `consumed`, into the sender's shadow
 *   AM_BYE     the sender left the communicator
 *   AM_ASK     send me your descriptions (engine/sig.c's stall diagnosis, transport.h's ask)
 *   AM_DESC    my descriptions (net_desc_t): an answer, or the news that I aborted the
 *              communicator on a mismatch (step & NET_DESC_TOLD: the receiver marks
 *              itself, as a shared-memory peer's mark would)
 *   AM_BYEACK  on a communicator whose steps go by put: the answer to a goodbye, sent
 *              once every put of mine to the leaving rank has completed there (a flush),
 *              and after which I put nothing more into its segment */
enum { AM_STEP = 11, AM_CREDIT = 12, AM_BYE = 13, AM_ASK = 14, AM_DESC = 15, AM_BYEACK = 16 };
#define AM_FIRST AM_STEP
#define AM_LAST  AM_BYEACK

#define NET_DESC_TOLD 1u

/* AM_STEP's flags: the step's bytes are in the receiver's slot already (an RDMA put that
 * completed there before this header-only message was sent) */
#define NET_STEP_PUT 1u

/* Every message's header. */
typedef struct {
    uint32_t dst;   /* the receiving rank's communicator id */
    int32_t src;    /* the sending rank */
    uint32_t idx;   /* the connection, among those between the two ranks */
    uint32_t off;   /* AM_STEP: where this piece of the step goes */
    uint64_t key;   /* the receiving rank's random key of the communicator (see comm_by_id) */
    uint64_t step;  /* AM_STEP: the step; AM_CREDIT: steps consumed; AM_DESC: NET_DESC_TOLD */
    uint64_t total; /* AM_STEP: the step's bytes, over all its pieces */
    uint32_t tag;   /* AM_STEP: its collective's signature tag (eng_sig.h, eng_step_word) */
    uint32_t flags; /* AM_STEP: NET_STEP_PUT */
} net_am_hdr_t;

/* AM_DESC's payload: what the sender's segment header publishes for its peers, as it was
 * when sent (an entry being written then goes with seq1 0), copied by the receiver into
 * its shadow of the sender, where engine/sig.c reads it as it reads a shared-memory
 * peer's header. */
typedef struct {
    uint64_t why_seq1;
    char why[sizeof(((eng_seg_hdr_t *)0)->why)];
    eng_sig_entry_t sigs[2][ENG_SIG_RING];
} net_desc_t;

#endif
