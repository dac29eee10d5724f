/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU primitives of the LL protocol: lines with flags, every peer of a plan at once. Part of
 * cuda_prims.cuh, which includes it after what it uses; not a header of its own. */
#ifndef DFCCL_CUDA_PRIMS_CUH
#error "include cuda_prims.cuh"
#endif
#ifndef DFCCL_CUDA_LL_CUH
#define DFCCL_CUDA_LL_CUH

/* --- LL lines (eng_types.h): one 16-byte store per line and peer. Lane p of warp 0
 * owns connection p (n <= ENG_LL_MAX_RANKS = 32): it reads the connection once per
 * collective, all its fields in flight together, and the block's threads take the step
 * pointers from shared memory. A collective whose lines are all there costs three
 * memory round trips (the connections and the input, the credit only when the FIFO
 * looks full, the peers' lines) and three barriers. ---------------------------------- */

typedef struct {
    char *dst[ENG_LL_MAX_RANKS];              /* my current step in each peer's FIFO */
    const char *src[ENG_LL_MAX_RANKS];        /* each peer's current step in mine */
    eng_conn_ctrl_t *rctrl[ENG_LL_MAX_RANKS]; /* where I give the step back */
    uint64_t recvd[ENG_LL_MAX_RANKS];         /* steps consumed from each peer */
    uint32_t sflag[ENG_LL_MAX_RANKS], rflag[ENG_LL_MAX_RANKS];
    uint64_t soff[ENG_LL_MAX_RANKS]; /* reduce_scatterv: the table's piece for each peer */
    uint32_t sbytes[ENG_LL_MAX_RANKS];
    uint8_t speer[ENG_LL_MAX_RANKS]; /* the peers written to, in rank order */
    uint8_t rpeer[ENG_LL_MAX_RANKS]; /* the peers read from */
    int ok;                          /* every peer's step is free */
    int recv_valid; /* src/rflag/rctrl/recvd/rpeer are this collective's: the send just set them */
} ll_block_t;

/* The block's LL state (one instance per block). Valid from a send to the reduce of the
 * same call only: between calls another task's LL collective may reuse it. */
__device__ __forceinline__ ll_block_t *ll_block(void)
{
    __shared__ ll_block_t s_ll;
    return &s_ll;
}

/* What a lane reads of its connection, every load in flight at once: the plain fields
 * first, then the counters. A volatile load keeps its place among the code around it, so
 * fields read after the counters each cost a dependent round trip: five of them made
 * this part of the LL send 1.06 us of an 8-byte allreduce at 2 ranks on one H200
 * (bench/RESULTS.md, "What one thread costs per collective"). */
typedef struct {
    char *sdata;
    const char *rdata;
    eng_conn_ctrl_t *sctrl, *rctrl;
    uint64_t schunk, rchunk;
    uint32_t sys, salt;
    uint64_t recvd, sent, credit; /* credit: only where the lane sends */
} ll_conn_words_t;

__device__ __forceinline__ ll_conn_words_t ll_conn_load(const eng_conn_t *c, bool send)
{
    ll_conn_words_t w;
    w.sdata = c->send_data;
    w.rdata = c->recv_data;
    w.sctrl = c->send_ctrl;
    w.rctrl = c->recv_ctrl;
    w.schunk = c->schunk;
    w.rchunk = c->rchunk;
    w.sys = c->sys;
    w.salt = c->ll_salt;
    w.recvd = ld_volatile_u64(&c->recvd);
    w.sent = ld_volatile_u64(&c->sent);
    w.credit = send ? ld_volatile_u64(&c->credit) : 0;
    return w;
}

/* Lane p (< n, warp 0): resolve connection p's receive step into the block's state. The
 * signature salts the flag (eng_sig.h): lines of a peer of another signature never pass. */
__device__ __forceinline__ void ll_recv_step(ll_block_t *L, const ll_conn_words_t &w, int p, uint32_t depth,
                                             uint32_t sig)
{
    L->src[p] = w.rdata + eng_mod(w.recvd, depth) * w.rchunk;
    L->rflag[p] = eng_ll_flag(w.salt ^ sig, w.recvd + 1);
    L->rctrl[p] = w.rctrl;
    L->recvd[p] = w.recvd;
}

/* Thread p (< n): p's place among the peers of mask (it is in mask). */
__device__ __forceinline__ int ll_rank_in(uint32_t mask, int p)
{
    return __popc(mask & ((1u << p) - 1u));
}

/* The LL primitives stay out of line: inlined into the daemon kernel of 512 threads (128
 * registers a thread) they made it spill in the ring's loops; not measured again since
 * the kernel has 256 threads. */

/* Every peer of the plan's smask (ll_plan.h) has its step free: write each its piece
 * (sendbuf + p * sstride, or the table's block for p: reduce_scatterv) as lines (LL steps publish nothing
 * else: `posted` stays at the last Simple step) and return 1; else 0, nothing written. The receive side's
 * steps (its rmask) are resolved in the same round trip, and a table's pieces with them (lane p, from the
 * fetcher's device copy). One piece for every peer (sstride 0, no table) is loaded once per line. */
static __device__ __noinline__ int prim_ll_send_all(eng_conn_t *conns, int n, const eng_chan_view_t *v,
                                                    const eng_coll_args_t *a, const eng_ll_plan_t *plan)
{
    ll_block_t *L = ll_block();
    const int tid = (int)threadIdx.x;
    const eng_ll_plan_t pl = *plan;
    const void *src = a->sendbuf;
    /* this channel's lines [l0, l0 + lines) of each piece, at line 0 of its steps (a
     * table's: of its largest piece, whose bytes the count holds) */
    const uint64_t bytes = pl.bytes, l0 = pl.l0, sstride = pl.sstride;
    const uint64_t lines = eng_ll_chan_lines(l0, pl.l1, pl.tab ? a->count : bytes);
    const uint32_t smask = pl.smask, rmask = pl.rmask;
    const int ns = __popc(smask), per_peer = sstride || pl.tab;
    /* this thread's first packet, loaded while warp 0 reads the connections */
    const uint64_t pk0 =
        bytes && !per_peer && (uint64_t)tid < lines ? eng_ll_packet_load(src, bytes, l0 + (uint64_t)tid) : 0;
    uint64_t sent = 0; /* lane tid < n: connection tid's */
    if (tid < 32) {
        int ok = 1;
        if (tid < n) {
            eng_conn_t *c = &conns[tid];
            const bool sends = smask >> tid & 1;
            /* the table's piece for this peer (reduce_scatterv) in the same round trip */
            const eng_block_t *tb = pl.tab && sends ? &pl.tab[tid] : NULL;
            const uint64_t soff = tb ? tb->soff : 0, sbytes = tb ? tb->sbytes : 0;
            const ll_conn_words_t w = ll_conn_load(c, sends);
            const uint32_t depth = v->depth, sig = v->sig;
            sent = w.sent;
            if (sends) {
                uint64_t credit = w.credit;
                if (sent - credit >= depth) { /* looks full: how far has the peer read? */
                    credit = ld_acquire_u64(&w.sctrl->consumed, w.sys);
                    st_volatile_u64(&c->credit, credit);
                }
                ok = sent - credit < depth;
                L->dst[tid] = w.sdata + eng_mod(sent, depth) * w.schunk;
                L->sflag[tid] = eng_ll_flag(w.salt ^ sig, sent + 1);
                L->speer[ll_rank_in(smask, tid)] = (uint8_t)tid;
                if (tb) {
                    L->soff[tid] = soff;
                    L->sbytes[tid] = (uint32_t)sbytes; /* <= ll_max */
                }
            }
            if (rmask >> tid & 1) {
                ll_recv_step(L, w, tid, depth, sig);
                L->rpeer[ll_rank_in(rmask, tid)] = (uint8_t)tid;
            }
        }
        ok = __all_sync(0xffffffffu, ok);
        if (tid == 0) {
            L->ok = ok;
            L->recv_valid = ok && rmask; /* else a later call of another task would take them */
        }
    }
    __syncthreads();
    if (!L->ok)
        return 0;
    if (!per_peer) {
        for (uint64_t i = (uint64_t)tid; i < lines; i += blockDim.x) {
            const uint64_t pk = !bytes               ? 0
                                : i == (uint64_t)tid ? pk0
                                                     : eng_ll_packet_load(src, bytes, l0 + i);
            const uint32_t lo = (uint32_t)pk, hi = (uint32_t)(pk >> 32);
            if (ns == n) { /* every peer (allreduce, allgather, barrier): no indirection */
                for (int p = 0; p < n; p++)
                    st_volatile_v4_u32(L->dst[p] + ENG_LL_LINE * i, lo, L->sflag[p], hi, L->sflag[p]);
                continue;
            }
            for (int k = 0; k < ns; k++) {
                const int p = L->speer[k];
                st_volatile_v4_u32(L->dst[p] + ENG_LL_LINE * i, lo, L->sflag[p], hi, L->sflag[p]);
            }
        }
    } else { /* a piece per peer: (peer, line) pairs over the block (lines < 2^32); a table's
              * pieces differ in size: pairs over the largest */
        const uint32_t nl = (uint32_t)lines, total = (uint32_t)ns * nl;
        for (uint32_t j = (uint32_t)tid; j < total; j += blockDim.x) {
            const uint32_t k = j / nl, i = j - k * nl;
            const int p = L->speer[k];
            const uint64_t pb = pl.tab ? L->sbytes[p] : bytes;
            if (pl.tab && l0 + i >= eng_ll_lines(pb))
                continue; /* past p's piece */
            const char *ps = (const char *)src + (pl.tab ? L->soff[p] : (uint64_t)p * sstride);
            const uint64_t pk = eng_ll_packet_load(ps, pb, l0 + i);
            st_volatile_v4_u32(L->dst[p] + ENG_LL_LINE * i, (uint32_t)pk, L->sflag[p], (uint32_t)(pk >> 32),
                               L->sflag[p]);
        }
    }
    if (tid < n && (smask >> tid & 1))
        st_volatile_u64(&conns[tid].sent, sent + 1);
    /* my own lines (the connection to myself) before any thread reads them */
    __syncthreads();
    return 1;
}

/* Loads of up to ENG_LL_BATCH lines are issued before any is used, so a line costs one
 * memory round trip per batch, not one per peer. Returns 1 when the current step of every
 * peer of the plan's rmask holds all lines with its flag: reduced in rank order into
 * recvbuf (its reduce: every rank's), or peer p's copied to recvbuf + p * rstride; else 0 (a line
 * not complete yet is rewritten on the retry: the output is the user's and nothing reads
 * it before completion). */
/* 8 (every peer's line in flight at 8 ranks) measured 1.00-1.06x slower than 4 on one
 * H200 for 8 B-64 KiB reduce_scatter and allreduce (2026-12-03, bench/RESULTS.md) */
#define ENG_LL_BATCH 4
static __device__ __noinline__ int prim_ll_recv_all(eng_conn_t *conns, int n, const eng_chan_view_t *v,
                                                    const eng_coll_args_t *a, const eng_ll_plan_t *plan)
{
    ll_block_t *L = ll_block();
    const int tid = (int)threadIdx.x;
    const eng_ll_plan_t pl = *plan;
    const uint32_t rmask = pl.rmask;
    if (!L->recv_valid) { /* a retry, or nothing sent: the steps again (one round trip) */
        if (tid < n && (rmask >> tid & 1)) {
            ll_recv_step(L, ll_conn_load(&conns[tid], false), tid, v->depth, v->sig);
            L->rpeer[ll_rank_in(rmask, tid)] = (uint8_t)tid;
        }
        __syncthreads();
    }
    /* this channel's lines [l0, l0 + lines) of the pieces (a table's: of this rank's) */
    const uint64_t bytes = pl.bytes, l0 = pl.l0, lines = eng_ll_chan_lines(l0, pl.l1, bytes);
    const int dtype = a->dtype, op = a->op;
    int ok = 1;
    if (pl.reduce) { /* every rank's piece, folded in rank order */
        for (uint64_t i = (uint64_t)tid; i < lines; i += blockDim.x) {
            const uint64_t off = ENG_LL_LINE * i;
            uint64_t acc = 0;
            int lok = 1;
            for (int p0 = 0; p0 < n; p0 += ENG_LL_BATCH) {
                uint4 w[ENG_LL_BATCH];
#pragma unroll
                for (int k = 0; k < ENG_LL_BATCH; k++)
                    if (p0 + k < n)
                        w[k] = ld_volatile_v4_u32(L->src[p0 + k] + off);
#pragma unroll
                for (int k = 0; k < ENG_LL_BATCH; k++)
                    if (p0 + k < n) {
                        const uint32_t f = L->rflag[p0 + k];
                        lok &= (w[k].y == f) & (w[k].w == f);
                        const uint64_t pk = (uint64_t)w[k].x | (uint64_t)w[k].z << 32;
                        acc = p0 + k ? eng_reduce_packet(acc, pk, dtype, op) : pk;
                    }
            }
            if (lok && bytes)
                eng_ll_packet_store(a->recvbuf, bytes, l0 + i, acc);
            ok &= lok;
        }
    } else { /* (peer, line) pairs over the block, ENG_LL_BATCH loads in flight */
        const uint32_t nl = (uint32_t)lines, total = (uint32_t)__popc(rmask) * nl, nt = blockDim.x;
        for (uint32_t j0 = (uint32_t)tid; j0 < total; j0 += ENG_LL_BATCH * nt) {
            uint4 w[ENG_LL_BATCH];
#pragma unroll
            for (int k = 0; k < ENG_LL_BATCH; k++) {
                const uint32_t j = j0 + (uint32_t)k * nt, q = j / nl;
                w[k] = j < total ? ld_volatile_v4_u32(L->src[L->rpeer[q]] + ENG_LL_LINE * (j - q * nl))
                                 : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int k = 0; k < ENG_LL_BATCH; k++) {
                const uint32_t j = j0 + (uint32_t)k * nt, q = j / nl;
                if (j >= total)
                    break;
                const int p = L->rpeer[q];
                const uint32_t f = L->rflag[p];
                const int lok = (w[k].y == f) & (w[k].w == f);
                if (lok && bytes)
                    eng_ll_packet_store((char *)a->recvbuf + (uint64_t)p * pl.rstride, bytes,
                                        l0 + (j - q * nl), (uint64_t)w[k].x | (uint64_t)w[k].z << 32);
                ok &= lok;
            }
        }
    }
    ok = __syncthreads_and(ok);
    if (tid == 0)
        L->recv_valid = 0; /* every thread has read it (the barrier came first) */
    return ok;
}

/* After a read that returned 1 (its barrier: every thread has read the lines): give
 * every peer of rmask its step back. No fence: the lines' values were used before the
 * barrier, so no read of them is outstanding, and LL lines carry their own flags (NCCL's
 * LL head update is the same plain store). */
DFCCL_DEV_INLINE void prim_ll_recv_done_all(eng_conn_t *conns, int n, uint32_t rmask)
{
    ll_block_t *L = ll_block();
    const int tid = (int)threadIdx.x;
    if (tid < n && (rmask >> tid & 1)) {
        const uint64_t k = L->recvd[tid] + 1;
        st_volatile_u64(&conns[tid].recvd, k);
        st_volatile_u64(&L->rctrl[tid]->consumed, k);
    }
}

#endif
