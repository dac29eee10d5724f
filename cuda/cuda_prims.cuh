/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU-backend primitives: the same names and meaning as engine/prims_cpu.h, executed by a
 * whole thread block. Control decisions (is a peer's step there? is there room?) are
 * taken by thread 0 and broadcast through shared memory, so every thread of the block
 * takes the same branch of the shared algorithm code; counters are advanced by thread 0
 * between barriers; data moves with every thread striding, 16 bytes at a time when the
 * buffers allow it. */
#ifndef DFCCL_CUDA_PRIMS_CUH
#define DFCCL_CUDA_PRIMS_CUH

#include "../engine/eng_types.h"
#include "../engine/ll_packet.h"
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

/* A step from the peer is posted. Pairs with the release of `posted` in conn_post. */
__device__ __forceinline__ int conn_recv_ready(const eng_conn_t *c)
{
    return ld_acquire_u64(&c->recv_ctrl->posted, c->sys) > ld_volatile_u64(&c->recvd);
}

/* The peer has room. Pairs with the release of `consumed` in conn_consumed. */
__device__ __forceinline__ int conn_send_ready(const eng_conn_t *c, uint32_t depth)
{
    return ld_volatile_u64(&c->sent) - ld_acquire_u64(&c->send_ctrl->consumed, c->sys) < depth;
}

/* Publish one step (after a barrier: the block's data writes are observed by this
 * thread): size, a fence at the connection's scope, then `posted` (NCCL postPeer). */
__device__ __forceinline__ void conn_post(eng_conn_t *c, uint32_t depth, uint64_t bytes)
{
    const uint64_t sent = ld_volatile_u64(&c->sent);
    st_volatile_u64(&c->send_ctrl->bytes[eng_mod(sent, depth)], bytes);
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

DFCCL_DEV_INLINE int prim_recv_ready(const eng_conn_t *c)
{
    return block_broadcast_flag(threadIdx.x == 0 && conn_recv_ready(c));
}

DFCCL_DEV_INLINE int prim_send_ready(const eng_conn_t *c, uint32_t depth)
{
    return block_broadcast_flag(threadIdx.x == 0 && conn_send_ready(c, depth));
}

/* --- slot access -------------------------------------------------------------------- */

DFCCL_DEV_INLINE const char *prim_recv_buf(const eng_conn_t *c, const eng_chan_view_t *v, uint64_t *bytes_p)
{
    uint32_t s = (uint32_t)eng_mod(ld_volatile_u64(&c->recvd), v->depth);
    if (bytes_p)
        *bytes_p = ld_volatile_u64(&c->recv_ctrl->bytes[s]);
    return c->recv_data + (uint64_t)s * c->rchunk;
}

DFCCL_DEV_INLINE char *prim_send_buf(const eng_conn_t *c, const eng_chan_view_t *v)
{
    return c->send_data + eng_mod(ld_volatile_u64(&c->sent), v->depth) * c->schunk;
}

/* All threads' data writes, then thread 0 posts the step. */
DFCCL_DEV_INLINE void prim_send_post(eng_conn_t *c, const eng_chan_view_t *v, uint64_t bytes)
{
    __syncthreads();
    if (threadIdx.x == 0)
        conn_post(c, v->depth, bytes);
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

DFCCL_DEV_INLINE int prim_recv_ready_all(const eng_conn_t *conns, int n)
{
    int r = 1;
    if (threadIdx.x < 32) {
        int ok = 1;
        for (int p = threadIdx.x; p < n; p += 32)
            ok &= conn_recv_ready(&conns[p]);
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
        conn_post(&conns[p], v->depth, bytes);
    __syncthreads();
}

DFCCL_DEV_INLINE void prim_recv_done_all(eng_conn_t *conns, int n)
{
    __syncthreads(); /* every thread has read the slots */
    for (int p = threadIdx.x; p < n && threadIdx.x < 32; p += 32)
        conn_consumed(&conns[p]);
    __syncthreads();
}

/* --- LL lines (eng_types.h): one 16-byte store per line and peer; lane p of warp 0
 * resolves connection p's step and flag once, every thread then owns whole lines -------- */

/* Lane p of warp 0 resolves connection p's current step (the send side's or the receive
 * side's) and its flag into shared memory, for the whole block. */
__device__ __forceinline__ void ll_steps(const eng_conn_t *conns, int n, const eng_chan_view_t *v, bool send,
                                         char **s_ptr, uint32_t *s_flag)
{
    const int tid = (int)threadIdx.x;
    if (tid < n) {
        const eng_conn_t *c = &conns[tid];
        const uint64_t k = ld_volatile_u64(send ? &c->sent : &c->recvd);
        s_ptr[tid] = send ? c->send_data + eng_mod(k, v->depth) * c->schunk
                          : c->recv_data + eng_mod(k, v->depth) * c->rchunk;
        s_flag[tid] = eng_ll_flag(c->ll_salt, k + 1);
    }
    __syncthreads();
}

/* The LL primitives stay out of line: inlined into the daemon kernel they push it past
 * its 128 registers and spill in the ring's loops. */
static __device__ __noinline__ void prim_ll_send_all(eng_conn_t *conns, int n, const eng_chan_view_t *v,
                                                     const void *src, uint64_t bytes)
{
    __shared__ char *s_dst[ENG_LL_MAX_RANKS];
    __shared__ uint32_t s_flag[ENG_LL_MAX_RANKS];
    const int tid = (int)threadIdx.x;
    ll_steps(conns, n, v, true, s_dst, s_flag);
    const uint64_t lines = eng_ll_lines(bytes);
    for (uint64_t i = (uint64_t)tid; i < lines; i += blockDim.x) {
        const uint64_t pk = bytes ? eng_ll_packet_load(src, bytes, i) : 0;
        const uint32_t lo = (uint32_t)pk, hi = (uint32_t)(pk >> 32);
        for (int p = 0; p < n; p++)
            st_volatile_v4_u32(s_dst[p] + ENG_LL_LINE * i, lo, s_flag[p], hi, s_flag[p]);
    }
    /* LL steps publish nothing else (see prims_cpu.h); the barrier keeps s_dst until
     * every thread is done with it */
    __syncthreads();
    if (tid < n)
        st_volatile_u64(&conns[tid].sent, ld_volatile_u64(&conns[tid].sent) + 1);
}

/* Loads of up to ENG_LL_BATCH peers' lines are issued before any is used, so a line
 * costs one memory round trip per batch of peers, not one per peer. */
#define ENG_LL_BATCH 4
static __device__ __noinline__ int prim_ll_reduce_all(eng_conn_t *conns, int n, const eng_chan_view_t *v,
                                                      const eng_coll_args_t *a, uint64_t bytes)
{
    __shared__ char *s_src[ENG_LL_MAX_RANKS];
    __shared__ uint32_t s_flag[ENG_LL_MAX_RANKS];
    const int tid = (int)threadIdx.x;
    ll_steps(conns, n, v, false, s_src, s_flag);
    const uint64_t lines = eng_ll_lines(bytes);
    const int dtype = a->dtype, op = a->op;
    int ok = 1;
    for (uint64_t i = (uint64_t)tid; i < lines; i += blockDim.x) {
        const uint64_t off = ENG_LL_LINE * i;
        uint64_t acc = 0;
        int lok = 1;
        for (int p0 = 0; p0 < n; p0 += ENG_LL_BATCH) {
            uint4 w[ENG_LL_BATCH];
#pragma unroll
            for (int k = 0; k < ENG_LL_BATCH; k++)
                if (p0 + k < n)
                    w[k] = ld_volatile_v4_u32(s_src[p0 + k] + off);
#pragma unroll
            for (int k = 0; k < ENG_LL_BATCH; k++)
                if (p0 + k < n) {
                    const uint32_t f = s_flag[p0 + k];
                    lok &= (w[k].y == f) & (w[k].w == f);
                    const uint64_t pk = (uint64_t)w[k].x | (uint64_t)w[k].z << 32;
                    acc = p0 + k ? eng_reduce_packet(acc, pk, dtype, op) : pk;
                }
        }
        /* a line not complete yet is rewritten on the retry (the output is the user's
         * and nothing reads it before completion) */
        if (lok && bytes)
            eng_ll_packet_store(a->recvbuf, bytes, i, acc);
        ok &= lok;
    }
    return __syncthreads_and(ok);
}

/* --- data movement ------------------------------------------------------------------- */

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
        /* several independent 16-byte loads in flight per thread */
        size_t i = tid;
        for (; i + 3 * nt < nv; i += 4 * nt) {
            uint4 a = __ldcg(&sv[i]), b = __ldcg(&sv[i + nt]), c = __ldcg(&sv[i + 2 * nt]),
                  e = __ldcg(&sv[i + 3 * nt]);
            dv[i] = a;
            dv[i + nt] = b;
            dv[i + 2 * nt] = c;
            dv[i + 3 * nt] = e;
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

/* float32 sum is the hot path of large allreduces: 16-byte vectors there, with eight
 * loads in flight per thread (one block is one SM: its bandwidth is what it has in
 * flight divided by the memory latency). */
DFCCL_DEV_INLINE void prim_reduce(void *dst, const void *a, const void *b, size_t n, int dtype, int op)
{
    if (dtype == dfcclFloat32 && op == dfcclSum &&
        (((uintptr_t)dst | (uintptr_t)a | (uintptr_t)b) & 15) == 0) {
        const size_t tid = threadIdx.x, nt = blockDim.x, nv = n / 4;
        float4 *d = (float4 *)dst;
        const float4 *x = (const float4 *)a, *y = (const float4 *)b;
        size_t i = tid;
        for (; i + 3 * nt < nv; i += 4 * nt) {
            float4 p0 = __ldcg(&x[i]), p1 = __ldcg(&x[i + nt]), p2 = __ldcg(&x[i + 2 * nt]),
                   p3 = __ldcg(&x[i + 3 * nt]);
            float4 q0 = __ldcg(&y[i]), q1 = __ldcg(&y[i + nt]), q2 = __ldcg(&y[i + 2 * nt]),
                   q3 = __ldcg(&y[i + 3 * nt]);
            d[i] = f4_add(p0, q0);
            d[i + nt] = f4_add(p1, q1);
            d[i + 2 * nt] = f4_add(p2, q2);
            d[i + 3 * nt] = f4_add(p3, q3);
        }
        for (; i < nv; i += nt)
            d[i] = f4_add(__ldcg(&x[i]), __ldcg(&y[i]));
        for (size_t i = nv * 4 + tid; i < n; i += nt)
            ((float *)dst)[i] = __ldcg(&((const float *)a)[i]) + __ldcg(&((const float *)b)[i]);
        return;
    }
    prim_reduce_any(dst, a, b, n, dtype, op);
}

#define DFCCL_PRIMS_GPU 1
__device__ __forceinline__ void prim_barrier(void)
{
    __syncthreads();
}

#include "../engine/prims_compose.h"

#endif
