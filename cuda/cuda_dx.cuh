/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU primitives of the direct exchange (engine/algo_direct.h): a chunk to or from every peer of a mask.
 * Part of cuda_prims.cuh, which includes it after what it uses; not a header of its own. */
#ifndef DFCCL_CUDA_PRIMS_CUH
#error "include cuda_prims.cuh"
#endif
#ifndef DFCCL_CUDA_DX_CUH
#define DFCCL_CUDA_DX_CUH

/* --- direct exchange (algo_direct.h): a chunk to or from every peer of a mask. Lane p
 * of warp 0 resolves connection p (n <= ENG_DX_MAX_RANKS = 32) into the block's shared
 * state, so N peers cost one round trip; then the block moves (piece, 16-byte vector)
 * pairs, four loads in flight per thread, whatever the number of peers. ------------- */

typedef struct {
    const char *src[ENG_DX_MAX_RANKS];
    char *dst[ENG_DX_MAX_RANKS];
    uint32_t bytes[ENG_DX_MAX_RANKS];
    uint32_t np; /* pieces */
    uint32_t nv; /* 16-byte vectors of the largest piece */
    int vec;     /* every pointer 16-byte aligned */
    uint32_t nr; /* reduce: the ranks, whose inputs are src[0..nr) in rank order */
} dx_block_t;

/* The block's direct-exchange state: valid from one primitive's first barrier to its
 * last; the next primitive rewrites it. */
__device__ __forceinline__ dx_block_t *dx_block(void)
{
    __shared__ dx_block_t s_dx;
    return &s_dx;
}

/* Every peer of rmask has a step posted and every peer of smask has room. */
DFCCL_DEV_INLINE int prim_ready_mask(const eng_conn_t *conns, int n, uint32_t rmask, uint32_t smask,
                                     const eng_chan_view_t *v)
{
    int r = 1;
    if (threadIdx.x < 32) {
        const int p = (int)threadIdx.x;
        int ok = 1;
        if (p < n) {
            const int rok = (rmask >> p & 1) ? conn_recv_ready(&conns[p], v->depth, v->sig) : 1;
            const int sok = (smask >> p & 1) ? conn_send_ready(&conns[p], v->depth) : 1;
            ok = rok & sok;
        }
        r = __all_sync(0xffffffffu, ok);
    }
    return block_broadcast_flag(r);
}

/* Warp 0, after lanes filled src/dst/bytes of their piece (mine: whether this lane has
 * one): the pieces' count, the largest one's vectors, and whether all are aligned. */
__device__ __forceinline__ void dx_publish(dx_block_t *L, uint32_t mask, uint32_t bytes, int aligned)
{
    const int al = __all_sync(0xffffffffu, aligned);
    const uint32_t nv = __reduce_max_sync(0xffffffffu, bytes / 16);
    if (threadIdx.x == 0) {
        L->np = (uint32_t)__popc(mask);
        L->nv = nv;
        L->vec = al;
    }
}

/* Lane p of warp 0: peer p's piece (src -> dst, bytes) in its place among the peers of
 * mask; whether both ends are 16-byte aligned. */
__device__ __forceinline__ int dx_set_piece(dx_block_t *L, uint32_t mask, int p, const char *src, char *dst,
                                            uint32_t bytes)
{
    const int k = ll_rank_in(mask, p);
    L->src[k] = src;
    L->dst[k] = dst;
    L->bytes[k] = bytes;
    return (((uintptr_t)src | (uintptr_t)dst) & 15) == 0;
}

/* The whole block: every piece src[k] -> dst[k]. Large moves go to the copy engine
 * (cuda_bulk.cuh), driven by thread 0, while the other threads copy the pieces' bytes
 * past their whole vectors. */
__device__ __forceinline__ void dx_move(const dx_block_t *L)
{
    const uint32_t tid = threadIdx.x, nt = blockDim.x, np = L->np, nv = L->nv;
    if (!L->vec) {
        for (uint32_t k = 0; k < np; k++)
            prim_copy(L->dst[k], L->src[k], L->bytes[k]);
        return;
    }
    if ((uint64_t)np * nv * 16 >= DX_BULK_MIN) {
        if (tid == 0)
            dx_bulk_move(L->src, L->dst, L->bytes, np);
        for (uint32_t k = 0; k < np; k++)
            for (uint32_t b = L->bytes[k] / 16 * 16 + tid; b < L->bytes[k]; b += nt)
                L->dst[k][b] = __ldcg(L->src[k] + b);
        return;
    }
    const uint32_t total = np * nv;
    for (uint32_t j0 = tid; j0 < total; j0 += 4 * nt) {
        uint4 w[4];
#pragma unroll
        for (uint32_t u = 0; u < 4; u++) {
            const uint32_t j = j0 + u * nt, k = j / nv, i = j - k * nv;
            if (j < total && i < L->bytes[k] / 16)
                w[u] = __ldcg((const uint4 *)L->src[k] + i);
        }
#pragma unroll
        for (uint32_t u = 0; u < 4; u++) {
            const uint32_t j = j0 + u * nt, k = j / nv, i = j - k * nv;
            if (j < total && i < L->bytes[k] / 16)
                ((uint4 *)L->dst[k])[i] = w[u];
        }
    }
    for (uint32_t k = 0; k < np; k++) /* each piece's bytes past its whole vectors */
        for (uint32_t b = L->bytes[k] / 16 * 16 + tid; b < L->bytes[k]; b += nt)
            L->dst[k][b] = __ldcg(L->src[k] + b);
}

/* Post to every peer p of mask its piece of the chunk: src's block p, or (own) the
 * rank's own block, which src points at, to every peer. Out of line, as the LL ones. */
static __device__ __noinline__ void prim_dx_send(eng_conn_t *conns, int n, uint32_t mask,
                                                 const eng_chan_view_t *v, const eng_dx_chunk_t *d,
                                                 const void *src, int own)
{
    dx_block_t *L = dx_block();
    const int tid = (int)threadIdx.x, mine = tid < n && (mask >> tid & 1);
    uint32_t bytes = 0;
    if (tid < 32) {
        int al = 1;
        if (mine) {
            eng_conn_t *c = &conns[tid];
            bytes = (uint32_t)(eng_dx_elems(d, own ? v->rank : tid) * d->ts);
            const uint64_t at = own ? d->off : (uint64_t)tid * d->S + d->off;
            al = dx_set_piece(L, mask, tid, (const char *)src + at * d->ts,
                              c->send_data + eng_mod(ld_volatile_u64(&c->sent), v->depth) * c->schunk, bytes);
        }
        dx_publish(L, mask, bytes, al);
    }
    __syncthreads();
    dx_move(L);
    __syncthreads(); /* the block's data writes, observed by every posting lane */
    if (mine)
        conn_post(&conns[tid], v->depth, bytes, v->sig);
}

/* Every peer p of mask: its step to dst's block p, and the step given back. */
static __device__ __noinline__ void prim_dx_recv(eng_conn_t *conns, int n, uint32_t mask,
                                                 const eng_chan_view_t *v, const eng_dx_chunk_t *d, void *dst)
{
    dx_block_t *L = dx_block();
    const int tid = (int)threadIdx.x, mine = tid < n && (mask >> tid & 1);
    if (tid < 32) {
        int al = 1;
        uint32_t bytes = 0;
        if (mine) {
            const eng_conn_t *c = &conns[tid];
            bytes = (uint32_t)(eng_dx_elems(d, tid) * d->ts);
            al = dx_set_piece(L, mask, tid,
                              c->recv_data + eng_mod(ld_volatile_u64(&c->recvd), v->depth) * c->rchunk,
                              (char *)dst + ((uint64_t)tid * d->S + d->off) * d->ts, bytes);
        }
        dx_publish(L, mask, bytes, al);
    }
    __syncthreads();
    dx_move(L);
    __syncthreads(); /* every thread has read the steps */
    if (mine)
        conn_consumed(&conns[tid]);
}

/* One element (ts bytes, aligned) as the low bytes of a packet, read past L1: the
 * persistent kernel may hold a line of an earlier use of the same buffer. */
__device__ __forceinline__ uint64_t dx_load_elem(const char *p, uint32_t ts)
{
    switch (ts) {
    case 1: return __ldcg((const unsigned char *)p);
    case 2: return __ldcg((const unsigned short *)p);
    case 4: return __ldcg((const unsigned int *)p);
    default: return __ldcg((const unsigned long long *)p);
    }
}

__device__ __forceinline__ void dx_store_elem(char *p, uint32_t ts, uint64_t v)
{
    switch (ts) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: *(uint16_t *)p = (uint16_t)v; break;
    case 4: *(uint32_t *)p = (uint32_t)v; break;
    default: *(uint64_t *)p = v; break;
    }
}

/* One element of the rank's block, by this thread alone: every rank's input in rank
 * order (src[]), to out and (with send) to every peer's step. The packet reduction
 * covers every type and op; the bytes past the element are never stored. */
__device__ __forceinline__ void dx_reduce_elem(const dx_block_t *L, char *out, uint64_t t, uint32_t ts,
                                               int dtype, int op, int send)
{
    uint64_t acc = dx_load_elem(L->src[0] + t * ts, ts);
    for (uint32_t k = 1; k < L->nr; k++)
        acc = eng_reduce_packet(acc, dx_load_elem(L->src[k] + t * ts, ts), dtype, op);
    dx_store_elem(out + t * ts, ts, acc);
    for (uint32_t k = 0; send && k < L->np; k++)
        dx_store_elem(L->dst[k] + t * ts, ts, acc);
}

/* out = the rank's own block of the chunk reduced over every rank in rank order (own data
 * in the rank's place, the peers of mask from their steps), so every rank that reduces
 * the same inputs gets the same bits; with send, also posted to every peer of mask. out
 * may be own (each element is read and written by one thread). Every rank's loads of a
 * vector are in flight together, up to 8 at a time. */
static __device__ __noinline__ void prim_dx_reduce(eng_conn_t *conns, int n, uint32_t mask,
                                                   const eng_chan_view_t *v, const eng_dx_chunk_t *d,
                                                   const void *own, void *out, int dtype, int op, int send)
{
    dx_block_t *L = dx_block();
    const int tid = (int)threadIdx.x, mine = tid < n && (mask >> tid & 1);
    const uint64_t m = eng_dx_elems(d, v->rank);
    const uint32_t bytes = (uint32_t)(m * d->ts);
    if (tid < 32) {
        int al = (((uintptr_t)out & 15) == 0);
        if (tid < n) {
            eng_conn_t *c = &conns[tid];
            const char *s = tid == v->rank
                                ? (const char *)own
                                : c->recv_data + eng_mod(ld_volatile_u64(&c->recvd), v->depth) * c->rchunk;
            L->src[tid] = s;
            al &= ((uintptr_t)s & 15) == 0;
            if (mine && send) {
                char *t = c->send_data + eng_mod(ld_volatile_u64(&c->sent), v->depth) * c->schunk;
                L->dst[ll_rank_in(mask, tid)] = t;
                al &= ((uintptr_t)t & 15) == 0;
            }
        }
        dx_publish(L, mask, bytes, al);
        if (tid == 0)
            L->nr = (uint32_t)n;
    }
    __syncthreads();
    const uint32_t np = L->np, nr = L->nr, nv = L->vec ? bytes / 16 : 0;
    const bool fsum = dtype == dfcclFloat32 && op == dfcclSum;
    for (uint32_t i = threadIdx.x; i < nv; i += blockDim.x) {
        uint4 acc = __ldcg((const uint4 *)L->src[0] + i);
        for (uint32_t k0 = 1; k0 < nr; k0 += 8) {
            uint4 w[8];
#pragma unroll
            for (uint32_t u = 0; u < 8; u++)
                if (k0 + u < nr)
                    w[u] = __ldcg((const uint4 *)L->src[k0 + u] + i);
#pragma unroll
            for (uint32_t u = 0; u < 8; u++)
                if (k0 + u < nr) {
                    if (fsum) {
                        const float4 s = f4_add(*(const float4 *)&acc, *(const float4 *)&w[u]);
                        acc = *(const uint4 *)&s;
                    } else {
                        acc = u4_reduce(acc, w[u], dtype, op);
                    }
                }
        }
        ((uint4 *)out)[i] = acc;
        for (uint32_t k = 0; send && k < np; k++)
            ((uint4 *)L->dst[k])[i] = acc;
    }
    /* the elements past the whole vectors (every element when unaligned) */
    for (uint64_t t = (uint64_t)nv * 16 / d->ts + threadIdx.x; t < m; t += blockDim.x)
        dx_reduce_elem(L, (char *)out, t, d->ts, dtype, op, send);
    __syncthreads(); /* the block's writes before the posts; every step read before it goes back */
    if (mine) {
        if (send)
            conn_post(&conns[tid], v->depth, bytes, v->sig);
        conn_consumed(&conns[tid]);
    }
}

#endif
