/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU primitives of the zero-copy read (engine/algo_read.h). Part of cuda_prims.cuh,
 * which includes it after what it uses (the direct exchange's block moves, the table
 * load); not a header of its own.
 *
 * The descriptor (eng_block_t, made by the owner's host in cuda/gpu_read.cu):
 *   soff   sendbuf's offset in its allocation
 *   sbytes the bytes a reader may read from there
 *   roff   the export's generation (0: not exported: every reader asks for a PUSH)
 *   rbytes the owner's export slot
 * A reader's daemon looks (slot, generation) up in its copy of its map of the owner's
 * slots (eng_conn_t.read_cache, device memory), then in the map entry itself
 * (host-mapped; a hit there fills the copy): a hit copies from the
 * mapping; a miss asks the reader's host to map that generation (want) and replies
 * PUSH, so the first call on a new buffer is staged and the later ones are not. The
 * descriptor itself is in device memory too (the fetcher's copy, gpu_daemon.cu): once a
 * buffer is mapped, no block of a read crosses PCIe. The host never replaces a mapping a
 * daemon may still read: the owner reuses a slot only once every collective that named
 * it has completed, which needs every reader's reply, which follows its copy. */
#ifndef DFCCL_CUDA_PRIMS_CUH
#error "include cuda_prims.cuh"
#endif
#ifndef DFCCL_CUDA_READ_CUH
#define DFCCL_CUDA_READ_CUH

/* Inlined into algo_read_progress (itself out of line): out of line, a third level of
 * calls under the kernel made it spill (engine/algo_read.h). */

/* Post this rank's descriptor (the fetcher's copy in device memory: thread 0 reads it once for the block) to
 * every peer of mask, lane p to peer p. */
static __device__ __forceinline__ void prim_read_post_desc(eng_conn_t *conns, int n, uint32_t mask,
                                                           const eng_chan_view_t *v, const eng_block_t *desc)
{
    eng_block_t d;
    prim_load_block(&d, desc);
    const int tid = (int)threadIdx.x;
    if (tid < n && (mask >> tid & 1)) {
        eng_conn_t *c = &conns[tid];
        uint64_t *w = (uint64_t *)(c->send_data + eng_mod(ld_volatile_u64(&c->sent), v->depth) * c->schunk);
        st_volatile_u64(&w[0], d.soff);
        st_volatile_u64(&w[1], d.sbytes);
        st_volatile_u64(&w[2], d.roff);
        st_volatile_u64(&w[3], d.rbytes);
        conn_post(c, v->depth, sizeof(d), v->sig); /* its fence orders the words first */
    }
    __syncthreads();
}

/* Lane p of warp 0, peer p's descriptor in its step (recv_data): where this channel's
 * range of its block is (d->e elements from byte src_off of the exported buffer) in this
 * rank's mapping, or NULL on a miss (the host is asked for the generation). */
__device__ __forceinline__ const char *read_source(const eng_conn_t *c, const eng_chan_view_t *v,
                                                   uint64_t src_off, uint64_t bytes)
{
    const uint64_t *w =
        (const uint64_t *)(c->recv_data + eng_mod(ld_volatile_u64(&c->recvd), v->depth) * c->rchunk);
    const uint64_t soff = ld_volatile_u64(&w[0]), sbytes = ld_volatile_u64(&w[1]);
    const uint64_t gen = ld_volatile_u64(&w[2]), slot = ld_volatile_u64(&w[3]);
    if (!gen || !c->read_cache || slot >= ENG_READ_SLOTS || src_off > sbytes || bytes > sbytes - src_off)
        return NULL;
    uint64_t base, size;
    eng_read_cache_t *k = c->read_cache + slot;
    if (ld_acquire_gpu_u64(&k->gen) == gen) { /* this daemon found it before */
        base = ld_volatile_u64(&k->base);
        size = ld_volatile_u64(&k->size);
    } else {
        /* set at creation; volatile: a copy freed with one communicator may be allocated
         * again for the next at the same address */
        eng_read_map_t *m = (eng_read_map_t *)(uintptr_t)ld_volatile_u64((const uint64_t *)&k->map);
        /* acquire at system scope: the host's base and size before its gen (gpu_read.cu) */
        if (ld_acquire_u64(&m->gen, 1) != gen) {
            if (ld_volatile_u64(&m->want) != gen)
                st_volatile_u64(&m->want, gen); /* the host maps it at its next progress call */
            return NULL;
        }
        base = ld_volatile_u64(&m->base);
        size = ld_volatile_u64(&m->size);
        /* Blocks that fill it at once write the same words. A slot's next generation is
         * looked up only after every collective naming this one completed at the owner,
         * after every reply, which follows this store: no block mixes two generations. */
        st_volatile_u64(&k->base, base);
        st_volatile_u64(&k->size, size);
        st_release_gpu_u64(&k->gen, gen);
    }
    if (soff > size || sbytes > size - soff)
        return NULL;
    return (const char *)base + soff + src_off;
}

/* Every peer p of mask (its descriptor's step is there, and it has room for a reply):
 * copy this channel's range of p's exported buffer (d->e elements from byte src_off)
 * into dst's block p (elements d->off..) where this rank has it mapped, reply DONE there
 * and PUSH elsewhere, and give the descriptor's step back. Every peer's piece moves at
 * once (the direct exchange's block move). Returns the peers replied PUSH, in every
 * thread. */
static __device__ __forceinline__ uint32_t prim_read_pull(eng_conn_t *conns, int n, uint32_t mask,
                                                          const eng_chan_view_t *v, const eng_dx_chunk_t *d,
                                                          uint64_t src_off, char *dst)
{
    dx_block_t *L = dx_block();
    const int tid = (int)threadIdx.x, mine = tid < n && (mask >> tid & 1);
    const uint64_t bytes = d->e * d->ts;
    const char *src = NULL;
    uint32_t got = 0; /* warp 0: the peers read */
    if (tid < 32) {
        if (mine)
            src = read_source(&conns[tid], v, src_off, bytes);
        got = __ballot_sync(0xffffffffu, src != NULL);
    }
    const uint32_t read = (uint32_t)block_broadcast_flag((int)got);
    if (read) { /* bytes <= ENG_READ_MAX: the move's 32-bit counts hold every piece */
        if (tid < 32) {
            const int al = (read >> tid & 1)
                               ? dx_set_piece(L, read, tid, src,
                                              dst + ((uint64_t)tid * d->S + d->off) * d->ts, (uint32_t)bytes)
                               : 1;
            dx_publish(L, read, (read >> tid & 1) ? (uint32_t)bytes : 0, al);
        }
        __syncthreads();
        dx_move(L);
        __syncthreads(); /* every piece read before the replies */
    }
    if (mine) {
        conn_consumed(&conns[tid]);
        conn_post(&conns[tid], v->depth, (read >> tid & 1) ? 0 : ENG_READ_PUSH, v->sig);
    }
    __syncthreads();
    return mask & ~read;
}

/* Every peer p of mask (its reply is there): take it. Returns the peers that asked for a
 * PUSH, in every thread. */
static __device__ __forceinline__ uint32_t prim_read_replies(eng_conn_t *conns, int n, uint32_t mask,
                                                             const eng_chan_view_t *v)
{
    uint32_t push = 0;
    if (threadIdx.x < 32) {
        const int p = (int)threadIdx.x;
        int want = 0;
        if (p < n && (mask >> p & 1)) {
            eng_conn_t *c = &conns[p];
            const uint64_t w =
                ld_volatile_u64(&c->recv_ctrl->bytes[eng_mod(ld_volatile_u64(&c->recvd), v->depth)]);
            want = eng_step_bytes(w) == ENG_READ_PUSH;
            conn_consumed(c);
        }
        push = __ballot_sync(0xffffffffu, want);
    }
    return (uint32_t)block_broadcast_flag((int)push);
}

#endif
