/* SPDX-License-Identifier: BSD-3-Clause */
/* Zero-copy read for large alltoall and allgather (ENG_ALGO_READ): each rank copies its
 * peers' blocks straight out of their send buffers into its receive buffer, one copy per
 * byte instead of the FIFOs' two (sender into the FIFO, receiver out of it), and two
 * handshakes per collective instead of a flag round trip per chunk.
 *
 *   step 0  (room to every peer)   post every peer this rank's export descriptor of
 *                                  sendbuf (a->blocks[0], one small step); copy the own
 *                                  block locally
 *   step 1  (every peer's step,    for each peer p: read p's descriptor; if the backend
 *            room to every peer)   can read p's buffer, copy this channel's range of p's
 *                                  block into recvbuf block p and reply DONE (a step of
 *                                  0 bytes), else reply PUSH (1 byte, no data); give the
 *                                  descriptor's step back. pull = the peers asked to push
 *   step 2  (every peer's reply)   take the replies: push = the peers that asked me
 *   step 3.. (pull or push set)    the direct exchange's one-phase window restricted to
 *                                  the masks: phase A posts up to W = depth chunks of my
 *                                  block for p to every push peer, phase B receives the
 *                                  window's chunks from every pull peer
 *
 * A rank finishes only after step 2, when every peer has replied, and a peer replies
 * only after its read: no reader ever reads a buffer its owner may already have handed
 * back to the user. Step 0's sends take one slot per connection and step 1's replies a
 * second (depth >= 2, checked at selection), each consumed by the peer's step 1 or 2,
 * which need nothing more from this rank: no credit cycle. Phase A of window w+1 waits
 * for room a push peer frees in its phase B of window w, which needs nothing more from
 * the sender either (as in algo_direct.h).
 *
 * What the descriptor holds and how a buffer is read is the backend's: the CPU reads a
 * peer process's memory with process_vm_readv (prims_cpu_read.h); the GPU maps the
 * peer's allocation with CUDA IPC once per buffer and copies from the mapping
 * (cuda/cuda_read.cuh), PUSHing until its host has opened the handle.
 *
 * Channel c owns the same range [lo, hi) of every block, in 16-byte grains, as in the
 * direct exchange (eng_split_span). The saved context: step as below, off the window's
 * first grain (as algo_direct.h), sub the pull mask, sub2 the push mask (both 32-bit
 * peer masks: nranks <= ENG_DX_MAX_RANKS). Every step checks the readiness of all it
 * needs before it moves anything, so none runs twice after a preemption. */
#ifndef DFCCL_ALGO_READ_H
#define DFCCL_ALGO_READ_H

#include "eng_types.h"
#include "prims.h"

#ifdef __cplusplus
static_assert(ENG_ALGO_COUNT <= 16, "eng_coll_args_t.algo is a 4-bit field");
#else
_Static_assert(ENG_ALGO_COUNT <= 16, "eng_coll_args_t.algo is a 4-bit field");
#endif

/* The steps (x->step). From ENG_READ_XCHG on, step - ENG_READ_XCHG is phase << 8 | the
 * chunk of the window the phase is at (W = depth <= ENG_MAX_FIFO_DEPTH < 256). */
enum { ENG_READ_DESC = 0, ENG_READ_PULL = 1, ENG_READ_REPLIES = 2, ENG_READ_XCHG = 3 };

/* The largest block read: the GPU moves every peer's piece of a channel in one block
 * move, whose counts are 32-bit (31 pieces of 2^26 vectors fit). */
#define ENG_READ_MAX (1ull << 30)

/* The block (what one rank sends one peer) from which alltoall and allgather read
 * their peers' buffers, for a communicator of nranks (read_min 0: never). The caller
 * passes 0 with net peers and for FIFOs of depth < 2. */
DFCCL_INLINE int eng_read_pick(const eng_coll_args_t *a, int nranks, uint64_t read_min)
{
    const uint64_t block = a->count * eng_type_size(a->dtype);
    return read_min > 0 && block >= read_min && block <= ENG_READ_MAX && !a->blocks && nranks > 1 &&
           nranks <= ENG_DX_MAX_RANKS && (a->coll == ENG_COLL_ALLTOALL || a->coll == ENG_COLL_ALLGATHER);
}

/* Out of line on the GPU, with its primitives inlined, and called from
 * algo_direct_progress so that the daemon kernel keeps one call site for both. The
 * direct exchange's kernel spilled 124 bytes with a second call site, 56 with this one
 * and the primitives out of line, 8 with them out of line but no 1 GiB rounds in the
 * pull; none so (255 registers, 336 bytes of stack against 254 and 296 before). */
DFCCL_DEV_OUTLINE eng_prog_t algo_read_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks, r = v->rank;
    const uint32_t all = N >= 32 ? 0xffffffffu : (1u << N) - 1u, peers = all & ~(1u << r);
    const uint32_t ts = (uint32_t)eng_type_size(a->dtype);
    const uint64_t G = eng_div(16, ts), S = a->count;
    const uint64_t end = DFCCL_MIN(x->hi * G, S);
    const int ag = a->coll == ENG_COLL_ALLGATHER;
    const char *sbuf = (const char *)a->sendbuf;
    char *rbuf = (char *)a->recvbuf;
    eng_dx_chunk_t d;
    d.S = S;
    d.total = (uint64_t)N * S;
    d.ts = ts;
    eng_prog_t prog = ENG_WAIT;
    if (x->step == ENG_READ_DESC) {
        if (!prim_ready_mask(v->conns, N, 0, peers, v))
            return prog;
        prim_read_post_desc(v->conns, N, peers, v, a->blocks);
        const uint64_t lo = x->lo * G;
        prim_copy(rbuf + ((uint64_t)r * S + lo) * ts, sbuf + ((ag ? 0 : (uint64_t)r * S) + lo) * ts,
                  (end - lo) * ts);
        x->step = ENG_READ_PULL;
        prog = ENG_PROGRESS;
    }
    if (x->step == ENG_READ_PULL) {
        if (!prim_ready_mask(v->conns, N, peers, peers, v))
            return prog;
        d.off = x->lo * G;
        d.e = end - d.off;
        /* where this channel's range of my block lies in each peer's exported buffer */
        const uint64_t src_off = ((ag ? 0 : (uint64_t)r * S) + d.off) * ts;
        x->sub = prim_read_pull(v->conns, N, peers, v, &d, src_off, rbuf);
        x->step = ENG_READ_REPLIES;
        prog = ENG_PROGRESS;
    }
    if (x->step == ENG_READ_REPLIES) {
        if (!prim_ready_mask(v->conns, N, peers, 0, v))
            return prog;
        x->sub2 = prim_read_replies(v->conns, N, peers, v);
        x->step = ENG_READ_XCHG;
        prog = ENG_PROGRESS;
    }
    const uint32_t pull = x->sub, push = x->sub2;
    if (!(pull | push))
        return ENG_DONE;
    /* the windowed exchange with the peers that could not read (algo_direct.h) */
    const uint32_t W = v->depth;
    const uint64_t CE = eng_div(v->conns[r].rchunk, ts); /* elements per step: whole grains */
    while (x->off < x->hi) {
        const uint64_t o = x->off * G;
        const uint32_t k = (uint32_t)DFCCL_MIN((uint64_t)W, eng_div(end - o + CE - 1, CE));
        for (;;) {
            const uint32_t s = x->step - ENG_READ_XCHG, phase = s >> 8, j = s & 255u;
            if (phase == 2)
                break;
            d.off = o + (uint64_t)j * CE;
            d.e = DFCCL_MIN(CE, end - d.off);
            if (!prim_ready_mask(v->conns, N, phase ? pull : 0, phase ? 0 : push, v))
                return prog;
            if (phase == 0)
                prim_dx_send(v->conns, N, push, v, &d, sbuf, ag);
            else
                prim_dx_recv(v->conns, N, pull, v, &d, rbuf);
            prog = ENG_PROGRESS;
            x->step = j + 1 == k ? ENG_READ_XCHG + ((phase + 1) << 8) : x->step + 1;
        }
        /* the window is done: the next one */
        x->off = DFCCL_MIN(x->hi, x->off + (uint64_t)k * eng_div(CE, G));
        x->step = ENG_READ_XCHG;
    }
    return ENG_DONE;
}

#endif
