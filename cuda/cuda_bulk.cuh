/* SPDX-License-Identifier: BSD-3-Clause */
/* Bulk moves through shared memory with Hopper's copy engine (cp.async.bulk), for the
 * direct exchange's and the zero-copy read's block moves (dx_move). A daemon block is
 * one SM, and a thread-driven copy has what its threads' registers hold in flight: 256
 * threads x 4 x 16 B = 16 KiB, ~11 GB/s per SM at ~1.5 us of memory latency, which is
 * what the 1 MiB allreduce and alltoall at 8 ranks were measured at (bench/RESULTS.md,
 * "Where a collective's time goes"). The copy engine keeps up to DX_BULK_BUFS tiles of
 * DX_BULK_TILE bytes in flight per SM with no registers: thread 0 loads tiles into
 * shared memory (an mbarrier per buffer says when one has landed) and stores each back
 * out as soon as it is there.
 *
 * Ordering: the data a move reads was written by other threads and processes with
 * ordinary stores and published behind a flag this block acquired (the generic proxy);
 * the copy engine is the async proxy, so thread 0 puts a proxy fence between the two.
 * The move's stores are complete when thread 0 has waited for every bulk group, and a
 * proxy fence after them orders them before the flags the block then posts.
 * Part of cuda_prims.cuh; not a header of its own. */
#ifndef DFCCL_CUDA_PRIMS_CUH
#error "include cuda_prims.cuh"
#endif
#ifndef DFCCL_CUDA_BULK_CUH
#define DFCCL_CUDA_BULK_CUH

#define DX_BULK_BUFS 8u
#define DX_BULK_TILE 16384u
/* a test's count of the bulk moves (test/gpu/t_dxmove.cu); nothing in the daemon */
#ifndef DX_BULK_COUNT
#define DX_BULK_COUNT() ((void)0)
#endif
/* dynamic shared memory of the kernel with the direct exchange */
#define DX_BULK_SMEM (DX_BULK_BUFS * DX_BULK_TILE)
/* a move of fewer vector bytes than this stays with the threads: the tiles' round trips
 * through shared memory cost more than they save (from 16 KiB the 64 KiB alltoall and
 * allgather at 8 ranks were 14% slower on the H200, 256 KiB and up 5-13% faster) */
#define DX_BULK_MIN 65536u

extern __shared__ __align__(128) unsigned char s_bulk_buf[]; /* DX_BULK_SMEM bytes */

typedef struct {
    uint64_t mbar[DX_BULK_BUFS]; /* a load's landing, per buffer */
    uint32_t parity;             /* bit b: the phase buffer b's next wait is for */
    uint32_t tk[DX_BULK_BUFS], to[DX_BULK_BUFS], tl[DX_BULK_BUFS]; /* each buffer's tile */
} dx_bulk_t;

__device__ __forceinline__ dx_bulk_t *dx_bulk(void)
{
    __shared__ __align__(8) dx_bulk_t s_bulk;
    return &s_bulk;
}

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* Thread 0, at the kernel's start, before a barrier: the buffers' mbarriers (shared
 * memory starts undefined at every launch). */
__device__ __forceinline__ void dx_bulk_init(void)
{
    dx_bulk_t *s = dx_bulk();
    for (uint32_t b = 0; b < DX_BULK_BUFS; b++)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&s->mbar[b])) : "memory");
    s->parity = 0;
    /* the initialized mbarriers, seen by the copy engine */
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* Thread 0: tile `bytes` (a multiple of 16, both ends 16-byte aligned) of global src
 * into buffer b, which signals its mbarrier when it has landed. */
__device__ __forceinline__ void dx_bulk_load(dx_bulk_t *s, uint32_t b, const void *src, uint32_t bytes)
{
    const uint32_t mbar = smem_addr(&s->mbar[b]);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mbar), "r"(bytes) : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smem_addr(s_bulk_buf + (size_t)b * DX_BULK_TILE)),
        "l"(src), "r"(bytes), "r"(mbar)
        : "memory");
}

/* Thread 0: wait until buffer b's load has landed. */
__device__ __forceinline__ void dx_bulk_wait(dx_bulk_t *s, uint32_t b)
{
    const uint32_t mbar = smem_addr(&s->mbar[b]), parity = s->parity >> b & 1u;
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(mbar), "r"(parity)
                     : "memory");
    } while (!done);
    s->parity ^= 1u << b;
}

/* Thread 0: buffer b's tile to global dst, as a bulk group of its own. */
__device__ __forceinline__ void dx_bulk_store(uint32_t b, void *dst, uint32_t bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst),
                 "r"(smem_addr(s_bulk_buf + (size_t)b * DX_BULK_TILE)), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

/* Thread 0: the next tile of the walk over the pieces' whole vectors (piece *k, byte
 * *o) into buffer b; false past the last piece. */
__device__ __forceinline__ bool dx_bulk_next(dx_bulk_t *s, uint32_t b, const char *const *src,
                                             const uint32_t *bytes, uint32_t np, uint32_t *k, uint32_t *o)
{
    while (*k < np && *o >= bytes[*k] / 16 * 16) {
        (*k)++;
        *o = 0;
    }
    if (*k >= np)
        return false;
    const uint32_t left = bytes[*k] / 16 * 16 - *o, len = left < DX_BULK_TILE ? left : DX_BULK_TILE;
    s->tk[b] = *k;
    s->to[b] = *o;
    s->tl[b] = len;
    dx_bulk_load(s, b, src[*k] + *o, len);
    *o += len;
    return true;
}

/* Thread 0: every piece's whole vectors src[k] -> dst[k] (np <= ENG_DX_MAX_RANKS) in
 * tiles, DX_BULK_BUFS - 1 loads ahead of the stores; the stores are complete on return.
 * A buffer's tile is kept in shared memory and the walk is two counters: the kernel's
 * registers are spoken for (a walk in local arrays made the kernel spill 144 bytes). */
static __device__ __noinline__ void dx_bulk_move(const char *const *src, char *const *dst,
                                                 const uint32_t *bytes, uint32_t np)
{
    dx_bulk_t *s = dx_bulk();
    DX_BULK_COUNT();
    /* the inputs, acquired by this block through the generic proxy, before the copy
     * engine reads them */
    asm volatile("fence.proxy.async.global;" ::: "memory");
    uint32_t k = 0, o = 0, nload = 0;
    while (nload < DX_BULK_BUFS - 1 && dx_bulk_next(s, nload, src, bytes, np, &k, &o))
        nload++;
    for (uint32_t nstore = 0; nstore < nload; nstore++) {
        const uint32_t b = nstore % DX_BULK_BUFS, nb = nload % DX_BULK_BUFS;
        dx_bulk_wait(s, b);
        dx_bulk_store(b, dst[s->tk[b]] + s->to[b], s->tl[b]);
        /* refill the buffer store nstore - 1 read from (the group before the latest) */
        if (nload >= DX_BULK_BUFS)
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        if (dx_bulk_next(s, nb, src, bytes, np, &k, &o))
            nload++;
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    /* the copy engine's stores before the generic proxy's flag posts */
    asm volatile("fence.proxy.async.global;" ::: "memory");
}

#endif
