/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport as the engine sees it (ucx_transport/). For a peer on the net the
 * sender's daemon writes steps into a local *shadow* of the peer's connection, and the
 * proxy thread sends each step to the peer with UCX (one active message: header and
 * data), whose proxy lands it in the real FIFO and publishes the step counter; the
 * receiver's `consumed` counter travels back into the sender's shadow the same way. The
 * algorithms never know. Both backends use it: the CPU daemon with its shared-memory
 * segment, the GPU daemon with host-pinned FIFOs mapped into the device (host-staged);
 * the layout says where each connection lives (ucx_transport/ucx_conn.c, cuda/gpu_net.cu).
 * Built only with UCX: transport.c's table then has its entry. */
#ifndef DFCCL_ENG_NET_H
#define DFCCL_ENG_NET_H

#include <stddef.h>
#include <stdint.h>

#include "dfccl.h"
#include "eng_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eng_net_comm eng_net_t;

/* One connection with a net peer, as this rank sees both of its directions. A rank lists
 * its connections grouped by peer, and the two ends of a pair list theirs in the same
 * order: a message names a connection by its position in that list. */
typedef struct {
    int peer;
    size_t shadow_off; /* me -> peer: the connection in my shadow of the peer */
    size_t recv_off;   /* peer -> me: the connection in my receive segment */
    size_t peer_off;   /* me -> peer: the connection in the peer's receive segment (where puts go) */
    uint64_t schunk;   /* bytes per step, me -> peer */
    uint64_t rchunk;   /* bytes per step, peer -> me */
    uint32_t lane;     /* the same at both ends (the channel): proxy thread lane mod threads moves it */
} eng_net_conn_desc_t;

typedef struct {
    uint64_t uid; /* for messages */
    int rank, nranks;
    char *seg;                 /* my receive segment; an eng_seg_hdr_t first */
    size_t seg_bytes;          /* its size (registered with UCX when steps go by put) */
    const size_t *shadow_size; /* [nranks]: bytes of my shadow of each peer, 0: not on the net */
    size_t ctrl_bytes;         /* a connection's data starts this far after its control words */
    uint32_t depth;
    const eng_net_conn_desc_t *conns;
    size_t nconns;
    int32_t *abort_words[2]; /* set to dfcclCommAborted when a peer fails (NULL: unused) */
    int put;                 /* ask for steps by RDMA put: granted when every rank asks */
    /* where steps by put land and leave, when not in seg and the shadows: a region of
     * seg's layout (a connection's data at recv_off + ctrl_bytes; its control words stay
     * in seg), and per peer one of its shadow's layout; device memory when put_cuda.
     * NULL: seg and the transport's shadows */
    char *put_seg;
    char *const *put_shadow; /* [nranks] */
    int put_cuda;
    void (*put_landed)(void); /* run by the proxy before it publishes a step a put wrote (NULL: none) */
    uint64_t put_min;         /* with put: steps of fewer bytes go as active messages, not by put
                                 (with put_cuda between seg's and the shadows' FIFOs: host-staged) */
    void *boot;           /* the communicator set-up's table: its all-gathers receive there (eng_boot_ag) */
    size_t boot_rec;      /* with room for records of this many bytes */
    dfcclResult_t status; /* a failure of the caller's before the set-up: reported through it */
} eng_net_layout_t;

/* A reference on the process's UCX state (the context, the workers and their proxy
 * threads), made if there is none: the GPU daemon asks before it places its FIFOs.
 * *cuda_p: 1 when UCX carries CUDA device memory here. Release with eng_net_close. */
dfcclResult_t eng_net_open(int *cuda_p);
void eng_net_close(void);

/* fn runs on every proxy thread before it next moves anything (once per thread and
 * setting): the GPU backend makes its device current there, for UCX's CUDA transports. */
void eng_net_thread_hook(void (*fn)(void));

/* Collective over the communicator's ranks (every rank calls it, in the same order as
 * every other net setup). Allocates my shadows of the net peers (zeroed, page-aligned,
 * with a header first), connects, and hands the connections to the proxy thread. */
dfcclResult_t eng_net_setup(const eng_net_layout_t *L, dfcclAllgatherFn_t ag, void *ctx, eng_net_t **net_p);

/* Which UCX is in use and the memory types it carries ("UCX 1.13.1, memory types:
 * host"), once a communicator has net peers; 1 when CUDA device memory is among them. */
int eng_net_describe(char *buf, size_t len);

/* 1 when the steps to and from peer p go by put (every rank asked for it, and p is on
 * another host or the FIFOs are device memory), else 0; p < 0: to any peer. */
int eng_net_puts(const eng_net_t *net, int p);

/* My shadow of peer p (NULL when p is not on the net). */
char *eng_net_shadow(eng_net_t *net, int p);

/* What peer p published in its segment's header (engine/sig.c: its descriptions, its
 * reason for an abort), as my copy in the header of my shadow of it has it: refreshed by
 * eng_net_ask, read under each entry's seqlock (eng_sig_desc.h). NULL: p is not on the net. */
const eng_seg_hdr_t *eng_net_published(const eng_net_t *net, int p);

/* Ask every net peer for its descriptions, into my copies (at most every few ms: the
 * proxy sends the asks, the peers' proxies the answers, in the background). */
void eng_net_ask(eng_net_t *net);

/* This rank aborted the communicator on a mismatch (the reason in my header): the proxy
 * sends my descriptions to every net peer with the news, and each marks itself. */
void eng_net_tell(eng_net_t *net);

/* Local: pushes the steps still in the shadows, says goodbye, unregisters from the
 * proxy, releases endpoints and shadows. Waits (a bounded time) for the receives still
 * landing in the caller's segment (L->seg): returns nonzero when some never finished,
 * and the caller must then leave the segment mapped (UCX cannot cancel them). */
int eng_net_teardown(eng_net_t *net);

#ifdef __cplusplus
}
#endif

#endif
