/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU-backend primitives: the same names and meaning as engine/prims_cpu.h, executed by a
 * whole thread block. Control decisions (is a peer's step there? is there room?) are
 * taken by thread 0 and broadcast through shared memory, so every thread of the block
 * takes the same branch of the shared algorithm code; counters are advanced by thread 0
 * between barriers; data moves with every thread striding, 16 bytes at a time when the
 * buffers allow it. */
#ifndef DFCCL_CUDA_PRIMS_CUH
#define DFCCL_CUDA_PRIMS_CUH
#define DFCCL_PRIMS_BACKEND /* engine/prims.h: the algorithms use these */

#include "../engine/eng_types.h"
#include "../engine/eng_gpu_layout.h"
#include "../engine/ll_packet.h"
#include "../engine/eng_sig.h"
#include "../engine/ll_plan.h"
#include "../engine/reduce.h"
#include "cuda_atomic.cuh"

__device__ __forceinline__ int block_broadcast_flag(int v)
{
    __shared__ int s_flag;
    __syncthreads(); /* everyone has read the previous value */
    if (threadIdx.x == 0)
        s_flag = v;
    __syncthreads();
    return s_flag;
}

/* --- one connection, by one thread ---------------------------------------------------
 * The step counters (sent, recvd) are written by one thread and read by others, always
 * with volatile accesses: no thread may see a stale L1 copy. */

/* A step from the peer is posted, of a collective with signature sig (eng_sig.h: else
 * it is never ready, and the host's stall diagnosis names the mismatch). The step's size
 * word, in the receiver's own memory, is loaded before the acquire of `posted`, so both
 * loads are in flight at once; it is trusted when it carries this step's tag
 * (eng_step_word) and reloaded only when it does not. Pairs with the release of `posted`
 * in conn_post. */
__device__ __forceinline__ int conn_recv_ready(const eng_conn_t *c, uint32_t depth, uint32_t sig)
{
    const uint64_t recvd = ld_volatile_u64(&c->recvd);
    const uint64_t *wp = &c->recv_ctrl->bytes[eng_mod(recvd, depth)];
    uint64_t w = ld_volatile_u64(wp);
    if (ld_acquire_u64(&c->recv_ctrl->posted, c->sys) <= recvd)
        return 0;
    if (!eng_step_tagged(w, sig, recvd))
        w = ld_volatile_u64(wp); /* loaded before the post: now the step's own */
    return eng_step_sig_ok(w, sig, recvd);
}

/* The peer has room. Pairs with the release of `consumed` in conn_consumed. */
__device__ __forceinline__ int conn_send_ready(const eng_conn_t *c, uint32_t depth)
{
    return ld_volatile_u64(&c->sent) - ld_acquire_u64(&c->send_ctrl->consumed, c->sys) < depth;
}

/* Publish one step (after a barrier: the block's data writes are observed by this
 * thread): size and signature's tag (eng_step_word), a fence at the connection's scope,
 * then `posted` (NCCL postPeer). */
__device__ __forceinline__ void conn_post(eng_conn_t *c, uint32_t depth, uint64_t bytes, uint32_t sig)
{
    const uint64_t sent = ld_volatile_u64(&c->sent);
    st_volatile_u64(&c->send_ctrl->bytes[eng_mod(sent, depth)], eng_step_word(bytes, sig, sent));
    st_volatile_u64(&c->sent, sent + 1);
    fence_acq_rel(c->sys);
    st_release_u64(&c->send_ctrl->posted, sent + 1, c->sys);
}

/* Give one slot back to the sender (after a barrier: every thread has read it). */
__device__ __forceinline__ void conn_consumed(eng_conn_t *c)
{
    const uint64_t recvd = ld_volatile_u64(&c->recvd) + 1;
    st_volatile_u64(&c->recvd, recvd);
    st_release_u64(&c->recv_ctrl->consumed, recvd, c->sys);
}

/* --- readiness ------------------------------------------------------------------------ */

DFCCL_DEV_INLINE int prim_recv_ready(const eng_conn_t *c, const eng_chan_view_t *v)
{
    return block_broadcast_flag(threadIdx.x == 0 && conn_recv_ready(c, v->depth, v->sig));
}

DFCCL_DEV_INLINE int prim_send_ready(const eng_conn_t *c, uint32_t depth)
{
    return block_broadcast_flag(threadIdx.x == 0 && conn_send_ready(c, depth));
}

/* --- slot access -------------------------------------------------------------------- */

/* Where a step of `bytes` bytes is: in the connection's FIFO, or (ENG_CONN_STAGED, a step
 * of fewer than put_min bytes) in the host-staged FIFO whose data follows the control
 * words. The sender posts the size it wrote and the receiver passes the size the
 * algorithm expects, the same at both ends, so both pick the same FIFO without a load. */
DFCCL_DEV_INLINE const char *prim_step_data(const eng_conn_t *c, const eng_chan_view_t *v,
                                            const eng_conn_ctrl_t *ctrl, const char *data, uint64_t bytes)
{
    return (c->sys & ENG_CONN_STAGED) && bytes < v->put_min ? (const char *)ctrl + ENG_GPU_CTRL_BYTES : data;
}

DFCCL_DEV_INLINE const char *prim_recv_buf(const eng_conn_t *c, const eng_chan_view_t *v, uint64_t bytes)
{
    uint32_t s = (uint32_t)eng_mod(ld_volatile_u64(&c->recvd), v->depth);
    return prim_step_data(c, v, c->recv_ctrl, c->recv_data, bytes) + (uint64_t)s * c->rchunk;
}

DFCCL_DEV_INLINE char *prim_send_buf(const eng_conn_t *c, const eng_chan_view_t *v, uint64_t bytes)
{
    return (char *)prim_step_data(c, v, c->send_ctrl, c->send_data, bytes) +
           eng_mod(ld_volatile_u64(&c->sent), v->depth) * c->schunk;
}

/* All threads' data writes, then thread 0 posts the step. */
DFCCL_DEV_INLINE void prim_send_post(eng_conn_t *c, const eng_chan_view_t *v, uint64_t bytes)
{
    __syncthreads();
    if (threadIdx.x == 0)
        conn_post(c, v->depth, bytes, v->sig);
    __syncthreads();
}

/* Every thread has finished reading the slot before the sender may reuse it. */
DFCCL_DEV_INLINE void prim_recv_done(eng_conn_t *c)
{
    __syncthreads();
    if (threadIdx.x == 0)
        conn_consumed(c);
    __syncthreads();
}

/* --- every connection at once (one-shot): lane p of warp 0 handles connection p, so
 * N peers cost one flag round trip instead of N ------------------------------------- */

DFCCL_DEV_INLINE int prim_recv_ready_all(const eng_conn_t *conns, int n, const eng_chan_view_t *v)
{
    int r = 1;
    if (threadIdx.x < 32) {
        int ok = 1;
        for (int p = threadIdx.x; p < n; p += 32)
            ok &= conn_recv_ready(&conns[p], v->depth, v->sig);
        r = __all_sync(0xffffffffu, ok);
    }
    return block_broadcast_flag(r);
}

DFCCL_DEV_INLINE int prim_send_ready_all(const eng_conn_t *conns, int n, uint32_t depth)
{
    int r = 1;
    if (threadIdx.x < 32) {
        int ok = 1;
        for (int p = threadIdx.x; p < n; p += 32)
            ok &= conn_send_ready(&conns[p], depth);
        r = __all_sync(0xffffffffu, ok);
    }
    return block_broadcast_flag(r);
}

DFCCL_DEV_INLINE void prim_send_post_all(eng_conn_t *conns, int n, const eng_chan_view_t *v, uint64_t bytes)
{
    __syncthreads(); /* the block's data writes, observed by every posting lane */
    for (int p = threadIdx.x; p < n && threadIdx.x < 32; p += 32)
        conn_post(&conns[p], v->depth, bytes, v->sig);
    __syncthreads();
}

DFCCL_DEV_INLINE void prim_recv_done_all(eng_conn_t *conns, int n)
{
    __syncthreads(); /* every thread has read the slots */
    for (int p = threadIdx.x; p < n && threadIdx.x < 32; p += 32)
        conn_consumed(&conns[p]);
    __syncthreads();
}

#include "cuda_ll.cuh" /* the LL protocol */

/* --- data movement ------------------------------------------------------------------- */

/* 16-byte loads a thread keeps in flight per operand in the copy and the float32 sum. A
 * daemon block is one SM, so its bandwidth is what it has in flight over the memory
 * latency: 8 with the daemon's 256 threads (GPU_MAX_THREADS) keep the 128 MiB copy rate
 * that 4 had with 512, and the 256-thread kernel has the registers for it. */
#define PRIM_INFLIGHT 8

DFCCL_DEV_INLINE void prim_copy(void *dst, const void *src, size_t bytes)
{
    if (!bytes || dst == src)
        return;
    const size_t tid = threadIdx.x, nt = blockDim.x;
    char *d = (char *)dst;
    const char *s = (const char *)src;
    if ((((uintptr_t)d | (uintptr_t)s) & 15) == 0) {
        const size_t nv = bytes / 16;
        uint4 *dv = (uint4 *)d;
        const uint4 *sv = (const uint4 *)s;
        /* PRIM_INFLIGHT independent 16-byte loads in flight per thread */
        size_t i = tid;
        for (; i + (PRIM_INFLIGHT - 1) * nt < nv; i += PRIM_INFLIGHT * nt) {
            uint4 w[PRIM_INFLIGHT];
#pragma unroll
            for (int u = 0; u < PRIM_INFLIGHT; u++)
                w[u] = __ldcg(&sv[i + u * nt]);
#pragma unroll
            for (int u = 0; u < PRIM_INFLIGHT; u++)
                dv[i + u * nt] = w[u];
        }
        for (; i < nv; i += nt)
            dv[i] = __ldcg(&sv[i]);
        for (size_t j = nv * 16 + tid; j < bytes; j += nt)
            d[j] = __ldcg(&s[j]);
    } else if ((((uintptr_t)d | (uintptr_t)s) & 3) == 0) {
        for (size_t j = tid; j < bytes / 4; j += nt)
            ((uint32_t *)d)[j] = __ldcg(&((const uint32_t *)s)[j]);
        for (size_t j = bytes / 4 * 4 + tid; j < bytes; j += nt)
            d[j] = __ldcg(&s[j]);
    } else {
        for (size_t j = tid; j < bytes; j += nt)
            d[j] = __ldcg(&s[j]);
    }
}

__device__ __forceinline__ float4 f4_add(float4 p, float4 q)
{
    return make_float4(p.x + q.x, p.y + q.y, p.z + q.z, p.w + q.w);
}

__device__ __forceinline__ uint4 u4_reduce(uint4 p, uint4 q, int dtype, int op)
{
    const uint64_t lo = eng_reduce_packet((uint64_t)p.y << 32 | p.x, (uint64_t)q.y << 32 | q.x, dtype, op);
    const uint64_t hi = eng_reduce_packet((uint64_t)p.w << 32 | p.z, (uint64_t)q.w << 32 | q.z, dtype, op);
    return make_uint4((uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32));
}

/* Every other type and op: 16-byte vectors where the buffers allow, each reduced as
 * two 8-byte packets (the packet reduction covers every type and op), four loads in
 * flight per thread; the elements after them (fewer than 16 bytes' worth) and unaligned
 * buffers element by element. Not inlined: one call per chunk, and the daemon's main
 * loop keeps its registers for the float32 path below. */
static __device__ __noinline__ void prim_reduce_any(void *dst, const void *a, const void *b, size_t n,
                                                    int dtype, int op)
{
    const size_t sz = eng_type_size(dtype);
    const size_t vb = (((uintptr_t)dst | (uintptr_t)a | (uintptr_t)b) & 15) == 0 ? n * sz / 16 * 16 : 0;
    const size_t tid = threadIdx.x, nt = blockDim.x, nv = vb / 16;
    uint4 *d = (uint4 *)dst;
    const uint4 *x = (const uint4 *)a, *y = (const uint4 *)b;
    size_t i = tid;
    for (; i + nt < nv; i += 2 * nt) {
        const uint4 p0 = __ldcg(&x[i]), p1 = __ldcg(&x[i + nt]);
        const uint4 q0 = __ldcg(&y[i]), q1 = __ldcg(&y[i + nt]);
        d[i] = u4_reduce(p0, q0, dtype, op);
        d[i + nt] = u4_reduce(p1, q1, dtype, op);
    }
    if (i < nv)
        d[i] = u4_reduce(__ldcg(&x[i]), __ldcg(&y[i]), dtype, op);
    (void)eng_reduce((char *)dst + vb, (const char *)a + vb, (const char *)b + vb, n - vb / sz, dtype, op);
}

/* float32 sum is the hot path of large allreduces: 16-byte vectors there, with
 * 2 x PRIM_INFLIGHT loads in flight per thread (one block is one SM: its bandwidth is what
 * it has in flight divided by the memory latency). */
DFCCL_DEV_INLINE void prim_reduce(void *dst, const void *a, const void *b, size_t n, int dtype, int op)
{
    if (dtype == dfcclFloat32 && op == dfcclSum &&
        (((uintptr_t)dst | (uintptr_t)a | (uintptr_t)b) & 15) == 0) {
        const size_t tid = threadIdx.x, nt = blockDim.x, nv = n / 4;
        float4 *d = (float4 *)dst;
        const float4 *x = (const float4 *)a, *y = (const float4 *)b;
        size_t i = tid;
        for (; i + (PRIM_INFLIGHT - 1) * nt < nv; i += PRIM_INFLIGHT * nt) {
            float4 pv[PRIM_INFLIGHT], qv[PRIM_INFLIGHT];
#pragma unroll
            for (int u = 0; u < PRIM_INFLIGHT; u++) {
                pv[u] = __ldcg(&x[i + u * nt]);
                qv[u] = __ldcg(&y[i + u * nt]);
            }
#pragma unroll
            for (int u = 0; u < PRIM_INFLIGHT; u++)
                d[i + u * nt] = f4_add(pv[u], qv[u]);
        }
        for (; i < nv; i += nt)
            d[i] = f4_add(__ldcg(&x[i]), __ldcg(&y[i]));
        for (size_t i = nv * 4 + tid; i < n; i += nt)
            ((float *)dst)[i] = __ldcg(&((const float *)a)[i]) + __ldcg(&((const float *)b)[i]);
        return;
    }
    prim_reduce_any(dst, a, b, n, dtype, op);
}

#include "cuda_bulk.cuh" /* the copy engine's bulk moves */
#include "cuda_dx.cuh"   /* the direct exchange (uses prim_copy and the bulk moves above) */

#define DFCCL_PRIMS_GPU 1
__device__ __forceinline__ void prim_barrier(void)
{
    __syncthreads();
}

/* The table entries a block read last: a step's two peers (send and receive), so a
 * step that polls while it waits loads them once, not at every poll. Emptied at each
 * task visit (prim_block_cache_reset): an id's table is rewritten for its next
 * collective. */
static __shared__ const eng_block_t *s_blk_src[2];
static __shared__ eng_block_t s_blk[2];
static __shared__ int s_blk_next;

/* thread 0, before the barrier that publishes the visit's task */
__device__ __forceinline__ void prim_block_cache_reset(void)
{
    s_blk_src[0] = s_blk_src[1] = NULL;
    s_blk_next = 0;
}

/* One peer's block of a v-collective's table (the fetcher's copy in device memory,
 * fetch_table): thread 0 reads it once and the block shares it, instead of every warp
 * reading it. Every thread makes the same calls, so all take the same branch; shared
 * memory is written only between the two barriers of a miss. */
DFCCL_DEV_INLINE void prim_load_block(eng_block_t *b, const eng_block_t *src)
{
    const int k = s_blk_src[0] == src ? 0 : s_blk_src[1] == src ? 1 : -1;
    if (k >= 0) {
        *b = s_blk[k];
        return;
    }
    const int slot = s_blk_next;
    __syncthreads(); /* every thread has looked */
    if (threadIdx.x == 0) {
        /* volatile: an id's table is rewritten for its next collective (by the fetcher,
         * on another SM), and L1 is not coherent with that */
        const volatile uint64_t *w = (const volatile uint64_t *)src;
        s_blk[slot].soff = w[0];
        s_blk[slot].sbytes = w[1];
        s_blk[slot].roff = w[2];
        s_blk[slot].rbytes = w[3];
        s_blk_src[slot] = src;
        s_blk_next = slot ^ 1;
    }
    __syncthreads();
    *b = s_blk[slot];
}

#include "cuda_read.cuh" /* the zero-copy read (uses the direct exchange's moves and the table load) */

#include "../engine/prims_compose.h"

#endif
