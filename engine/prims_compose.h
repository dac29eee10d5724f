/* SPDX-License-Identifier: BSD-3-Clause */
/* Composite primitives, named in dataflow order (NCCL prims), written once over the
 * backend's base primitives (prim_*_ready, prim_*_buf, prim_send_post, prim_recv_done,
 * prim_copy, prim_reduce, prim_barrier). Included by prims.h (after prims_cpu.h) and
 * cuda_prims.cuh. */
#ifndef DFCCL_PRIMS_COMPOSE_H
#define DFCCL_PRIMS_COMPOSE_H

/* send: local data -> peer FIFO */
DFCCL_DEV_INLINE void prim_send(eng_conn_t *out, const eng_chan_view_t *v, const void *src, size_t bytes)
{
    prim_copy(prim_send_buf(out, v, bytes), src, bytes);
    prim_send_post(out, v, bytes);
}

/* recv_copy: peer FIFO -> local buffer */
DFCCL_DEV_INLINE void prim_recv_copy(eng_conn_t *in, const eng_chan_view_t *v, void *dst, size_t bytes)
{
    prim_copy(dst, prim_recv_buf(in, v, bytes), bytes);
    prim_recv_done(in);
}

/* recv_copy_send: peer FIFO -> local buffer and next peer's FIFO */
DFCCL_DEV_INLINE void prim_recv_copy_send(eng_conn_t *in, eng_conn_t *out, const eng_chan_view_t *v,
                                          void *dst, size_t bytes)
{
    const char *src = prim_recv_buf(in, v, bytes);
    if (dst)
        prim_copy(dst, src, bytes);
    prim_copy(prim_send_buf(out, v, bytes), src, bytes);
    prim_send_post(out, v, bytes);
    prim_recv_done(in);
}

/* recv_reduce_send: (peer FIFO op local) -> next peer's FIFO */
DFCCL_DEV_INLINE void prim_recv_reduce_send(eng_conn_t *in, eng_conn_t *out, const eng_chan_view_t *v,
                                            const void *src, size_t n, int dtype, int op)
{
    size_t bytes = n * eng_type_size(dtype);
    prim_reduce(prim_send_buf(out, v, bytes), prim_recv_buf(in, v, bytes), src, n, dtype, op);
    prim_send_post(out, v, bytes);
    prim_recv_done(in);
}

/* recv_reduce_copy_send: (peer FIFO op local) -> local output and next peer's FIFO */
DFCCL_DEV_INLINE void prim_recv_reduce_copy_send(eng_conn_t *in, eng_conn_t *out, const eng_chan_view_t *v,
                                                 const void *src, void *dst, size_t n, int dtype, int op)
{
    size_t bytes = n * eng_type_size(dtype);
    prim_reduce(dst, prim_recv_buf(in, v, bytes), src, n, dtype, op);
    prim_barrier(); /* the copy reads what other threads of the block reduced */
    prim_copy(prim_send_buf(out, v, bytes), dst, bytes);
    prim_send_post(out, v, bytes);
    prim_recv_done(in);
}

/* recv_reduce_send_copy: (peer FIFO op local) -> next peer's FIFO, and the peer's step
 * as it came -> local output (exscan). dst may be src (in place): it is written only
 * after every thread has read src. */
DFCCL_DEV_INLINE void prim_recv_reduce_send_copy(eng_conn_t *in, eng_conn_t *out, const eng_chan_view_t *v,
                                                 const void *src, void *dst, size_t n, int dtype, int op)
{
    size_t bytes = n * eng_type_size(dtype);
    const char *rb = prim_recv_buf(in, v, bytes);
    prim_reduce(prim_send_buf(out, v, bytes), rb, src, n, dtype, op);
    prim_barrier();
    prim_copy(dst, rb, bytes);
    prim_send_post(out, v, bytes);
    prim_recv_done(in);
}

/* recv_reduce_copy: (peer FIFO op local) -> local output */
DFCCL_DEV_INLINE void prim_recv_reduce_copy(eng_conn_t *in, const eng_chan_view_t *v, const void *src,
                                            void *dst, size_t n, int dtype, int op)
{
    prim_reduce(dst, prim_recv_buf(in, v, n * eng_type_size(dtype)), src, n, dtype, op);
    prim_recv_done(in);
}

#endif
