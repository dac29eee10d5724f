/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every per-collective file shares: the path decision, the coll_dfccl_check
 * record, per-call logging and the blocking / non-blocking drivers.
 *
 * Each coll_dfccl_<coll>.c has one static <coll>_start() that, for the path chosen,
 * takes the engine's view of its buffers and submits to the engine (engine path:
 * device buffers go to the GPU daemon as they are, and are copied through host memory
 * only where the engine communicator has no GPU part), or copies device buffers to host
 * memory and calls the previous module on the copies (staged path; its non-blocking
 * variant when given a place for the inner request). The blocking and `i` entry points wrap it with
 * MCA_COLL_DFCCL_RUN_BLOCKING / MCA_COLL_DFCCL_RUN_NONBLOCKING.
 */
#ifndef MCA_COLL_DFCCL_COMMON_H
#define MCA_COLL_DFCCL_COMMON_H

#include "ompi_config.h"

#include <stdio.h>
#include <string.h>

#include "coll_dfccl.h"
#include "coll_dfccl_cuda.h"
#include "coll_dfccl_dtypes.h"
#include "coll_dfccl_stage.h"

typedef enum {
    MCA_COLL_DFCCL_ALLREDUCE = 1,
    MCA_COLL_DFCCL_REDUCE,
    MCA_COLL_DFCCL_BCAST,
    MCA_COLL_DFCCL_ALLGATHER,
    MCA_COLL_DFCCL_REDUCE_SCATTER_BLOCK,
    MCA_COLL_DFCCL_REDUCE_SCATTER,
    MCA_COLL_DFCCL_ALLTOALL,
    MCA_COLL_DFCCL_GATHER,
    MCA_COLL_DFCCL_GATHERV,
    MCA_COLL_DFCCL_SCATTER,
    MCA_COLL_DFCCL_SCATTERV,
    MCA_COLL_DFCCL_ALLGATHERV,
    MCA_COLL_DFCCL_ALLTOALLV,
    MCA_COLL_DFCCL_ALLTOALLW,
    MCA_COLL_DFCCL_SCAN,
    MCA_COLL_DFCCL_EXSCAN,
    MCA_COLL_DFCCL_NUM_COLLS
} mca_coll_dfccl_coll_t;

extern const char *const mca_coll_dfccl_coll_names[];
extern const char *const mca_coll_dfccl_path_names[];

/**
 * @brief The path of one call. Same inputs on every rank give the same answer:
 *        memory kind and whether the engine can run the datatype/op/size (a failed
 *        engine communicator is the caller's to handle: calls keep their order).
 */
static inline mca_coll_dfccl_path_t mca_coll_dfccl_choose(mca_coll_dfccl_module_t *m,
                                                          mca_coll_dfccl_mem_t kind, bool engine_ok)
{
    if (kind == MCA_COLL_DFCCL_MEM_HOST)
        return engine_ok && mca_coll_dfccl_component.host_buffers ? MCA_COLL_DFCCL_PATH_ENGINE
                                                                  : MCA_COLL_DFCCL_PATH_PREVIOUS;
    return engine_ok && !mca_coll_dfccl_component.device_staged ? MCA_COLL_DFCCL_PATH_ENGINE
                                                                : MCA_COLL_DFCCL_PATH_STAGED;
}

/** @brief This rank is the root of a rooted call (an intercommunicator's root passes
 *         MPI_ROOT; its group's other ranks MPI_PROC_NULL, the remote group the root's rank). */
static inline bool mca_coll_dfccl_is_root(const mca_coll_dfccl_module_t *m, int root)
{
    return m->inter ? root == MPI_ROOT : m->rank == root;
}

/**
 * @brief Decide the memory kinds of a call's send and receive buffers, once per call:
 *        into @p p (host for NULL and MPI_IN_PLACE; the collective passes NULL for a
 *        side it does not use). Staging takes them from the plan, never asking again.
 * @return the stronger of the two (device if either is)
 */
static inline mca_coll_dfccl_mem_t mca_coll_dfccl_kinds(mca_coll_dfccl_plan_t *p, const void *s,
                                                        const void *r)
{
    p->skind = mca_coll_dfccl_mem_kind(s);
    p->rkind = mca_coll_dfccl_mem_kind(r);
    return p->skind == MCA_COLL_DFCCL_MEM_DEVICE ? p->skind : p->rkind;
}

static inline void mca_coll_dfccl_op_init(mca_coll_dfccl_op_t *op)
{
    memset(op, 0, sizeof(*op));
}

/** @brief The op runs on the engine: device buffers go to the GPU daemon as they are
 *         when the engine communicator has a GPU part (with coll_dfccl_fake_device=2,
 *         the host buffers that stand for device ones go to the CPU daemon the same way). */
static inline void mca_coll_dfccl_op_engine(mca_coll_dfccl_op_t *op, dfcclComm_t ecomm)
{
    int direct = 0;
    op->on_gpu = dfcclCommDeviceBuffers(ecomm, &direct) == dfcclSuccess && direct;
    op->device_direct = op->on_gpu || mca_coll_dfccl_component.fake_device >= 2;
}

/** @brief The op's device buffers went to the GPU daemon as they are (so no CPU daemon
 *         thread needs a core while the caller waits for it). */
static inline bool mca_coll_dfccl_op_on_gpu(const mca_coll_dfccl_op_t *op)
{
    return op->on_gpu && op->device_synced;
}

/** @brief Engine path of a reduce-scatter with @p rcount elements per rank (also
 *         MPI_Reduce_scatter with equal counts); MPI_IN_PLACE handled. */
/** @brief MPI_IN_PLACE for a reduce-scatter on the engine: the views of all of recvbuf
 *         (`all` bytes) as input and of this rank's block at byte `off` as output, which
 *         is moved to the front when the op completes (on the device when the GPU
 *         daemon runs it on recvbuf itself, else in the host view). */
int mca_coll_dfccl_rs_in_place(mca_coll_dfccl_op_t *o, const mca_coll_dfccl_plan_t *p, void *rbuf, size_t all,
                               size_t off, size_t mine, void **hs_p, void **hr_p);
int mca_coll_dfccl_rsb_engine_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_plan_t *p,
                                    const void *sbuf, void *rbuf, size_t rcount, mca_coll_dfccl_op_t *o);

/* Size in bytes of count elements of dtype (the payload coll_dfccl_check compares). */
static inline int64_t mca_coll_dfccl_bytes(struct ompi_datatype_t *dtype, size_t count)
{
    size_t size = 0;
    ompi_datatype_type_size(dtype, &size);
    return (int64_t)(size * count);
}

/**
 * @brief Prepare a call that moves rcount elements of rdtype from every rank (allgather:
 *        @p send_blocks 1) or to and from every rank (alltoall: the communicator's
 *        size): the engine runs it as bytes when both sides are one contiguous run each.
 */
static inline bool mca_coll_dfccl_blocks_prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                                                 size_t send_blocks, mca_coll_dfccl_check_t *rec,
                                                 mca_coll_dfccl_plan_t *p)
{
    const bool in_place = a->sbuf == MPI_IN_PLACE;
    const size_t n = (size_t)m->size;
    size_t rbytes = 0, sbytes = 0;
    bool ok = mca_coll_dfccl_contiguous(a->rdtype, (size_t)a->rcount * n, &p->roff, &rbytes);
    p->bytes = rbytes / n;
    p->soff = 0;
    if (!in_place)
        ok = mca_coll_dfccl_contiguous(a->sdtype, (size_t)a->scount * send_blocks, &p->soff, &sbytes) && ok &&
             sbytes == p->bytes * send_blocks;
    /* what this rank receives from each peer: every rank must agree on it */
    rec->bytes = mca_coll_dfccl_bytes(a->rdtype, (size_t)a->rcount);
    rec->types = mca_coll_dfccl_types(a->rdtype);
    if (rec->bytes)
        rec->kind = mca_coll_dfccl_kinds(p, in_place ? NULL : (const char *)a->sbuf + p->soff,
                                         (char *)a->rbuf + p->roff);
    return ok && p->bytes > 0;
}

/**
 * @brief Memory kind of a call whose sides may move nothing on this rank (v-calls, a
 *        root's unused side): the buffers with data decide, else any buffer passed, else
 *        the communicator's latest call (so every rank takes the same path).
 */
static inline mca_coll_dfccl_mem_t mca_coll_dfccl_kind_v(mca_coll_dfccl_module_t *m, mca_coll_dfccl_plan_t *p,
                                                         const void *s, bool s_used, const void *r,
                                                         bool r_used)
{
    const mca_coll_dfccl_mem_t any = mca_coll_dfccl_kinds(p, s, r);
    if (s_used || r_used) {
        const bool dev = (s_used && p->skind == MCA_COLL_DFCCL_MEM_DEVICE) ||
                         (r_used && p->rkind == MCA_COLL_DFCCL_MEM_DEVICE);
        m->last_kind = dev ? MCA_COLL_DFCCL_MEM_DEVICE : MCA_COLL_DFCCL_MEM_HOST;
        return (mca_coll_dfccl_mem_t)m->last_kind;
    }
    if ((s && s != MPI_IN_PLACE) || r)
        return any;
    return (mca_coll_dfccl_mem_t)m->last_kind;
}

/**
 * @brief One side of an engine data-movement call: @p n blocks of counts[i] (or, with
 *        counts NULL, @p uniform) elements of dt (or dts[i]) at displs[i] (in extents,
 *        or bytes with dts; with counts NULL at i * uniform). Contiguous blocks are
 *        viewed where they are; others are packed (coll_dfccl_pack.c). @p kind: the
 *        memory kind of @p user, as the call decided it. Out: the engine's
 *        buffer *@p ebuf_p and each block's bytes and offset in it. @p keep: a receive
 *        side whose current contents matter (in place); a send side that the call's
 *        receive side overwrites (in place alltoallv/w), which is then always copied
 *        (packed) before the engine sees it. Arrays must outlive the call.
 */
int mca_coll_dfccl_engine_side(mca_coll_dfccl_op_t *o, mca_coll_dfccl_mem_t kind, bool recv, bool keep,
                               void *user, int n, const int *counts, int uniform, const int *displs,
                               struct ompi_datatype_t *dt, struct ompi_datatype_t *const *dts, size_t *bcount,
                               size_t *boff, void **ebuf_p);
/** @brief Byte arrays for an engine v-call: 4 arrays of n, freed with free(). */
static inline size_t *mca_coll_dfccl_vtab(int n)
{
    return calloc(4 * (size_t)(n > 0 ? n : 1), sizeof(size_t));
}

/*
 * Drivers around a start call. A start call views its buffers and submits to the
 * engine (engine path) or calls the previous module on host copies (staged
 * path): blocking when its inner-request argument is NULL, non-blocking otherwise.
 * _o names the mca_coll_dfccl_op_t pointer the start call uses, _inner_p the inner
 * request pointer (NULL on the engine path and in blocking calls).
 */
#define MCA_COLL_DFCCL_RUN_BLOCKING(_o, _start_call)                                                         \
    do {                                                                                                     \
        mca_coll_dfccl_op_t _o##_storage;                                                                    \
        mca_coll_dfccl_op_t *_o = &_o##_storage;                                                             \
        mca_coll_dfccl_op_init(_o);                                                                          \
        int rc_ = (_start_call);                                                                             \
        if (rc_ != OMPI_SUCCESS)                                                                             \
            return mca_coll_dfccl_op_finish(_o, rc_);                                                        \
        return mca_coll_dfccl_op_wait(_o);                                                                   \
    } while (0)

#define MCA_COLL_DFCCL_RUN_NONBLOCKING(_m, _path, _request, _o, _inner_p, _start_call, _no_request)          \
    do {                                                                                                     \
        mca_coll_dfccl_req_t *req_ = mca_coll_dfccl_req_get(_m);                                             \
        if (!req_)                                                                                           \
            return (_no_request);                                                                            \
        mca_coll_dfccl_op_t *_o = &req_->op;                                                                 \
        ompi_request_t **_inner_p = (_path) == MCA_COLL_DFCCL_PATH_STAGED ? &req_->op.inner : NULL;          \
        int rc_ = (_start_call);                                                                             \
        if (rc_ != OMPI_SUCCESS) {                                                                           \
            rc_ = mca_coll_dfccl_op_finish(_o, rc_);                                                         \
            mca_coll_dfccl_req_put(req_);                                                                    \
            return rc_;                                                                                      \
        }                                                                                                    \
        mca_coll_dfccl_req_start(req_);                                                                      \
        *(_request) = &req_->super.super;                                                                    \
        return OMPI_SUCCESS;                                                                                 \
    } while (0)

/*
 * A descriptor for one of two variants a file implements with shared static
 * prepare(m, a, rec, variant), start(m, a, o, inner_p, variant) and
 * previous(m, a, request, variant) (Gather and Gatherv, Scan and Exscan, ...): the
 * variant is the descriptor's, never guessed from arguments that may be undefined.
 */
#define MCA_COLL_DFCCL_VARIANT_DESC(_name, _coll, _variant)                                                  \
    static bool _name##_prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,                  \
                                mca_coll_dfccl_check_t *rec, mca_coll_dfccl_plan_t *p)                       \
    {                                                                                                        \
        return prepare(m, a, rec, p, _variant);                                                              \
    }                                                                                                        \
    static int _name##_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,                     \
                             const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o,                         \
                             ompi_request_t **inner_p)                                                       \
    {                                                                                                        \
        return start(m, a, p, o, inner_p, _variant);                                                         \
    }                                                                                                        \
    static int _name##_previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,                  \
                                ompi_request_t **request)                                                    \
    {                                                                                                        \
        return previous(m, a, request, _variant);                                                            \
    }                                                                                                        \
    static const mca_coll_dfccl_coll_desc_t _name##_desc = {_coll, _name##_prepare, _name##_start,           \
                                                            _name##_previous}

/*
 * The blocking and MPI_I* entry points of a collective: both collect the arguments and
 * hand them to mca_coll_dfccl_call with the collective's descriptor. _init is the
 * mca_coll_dfccl_args_t initializer in parentheses; the rest, the MPI parameters before
 * the communicator.
 */
#define MCA_COLL_DFCCL_BRACED(...)                                                                           \
    {                                                                                                        \
        __VA_ARGS__                                                                                          \
    }
/* The previous module's _name (the arguments are the collective's own, in MPI's order):
 * its non-blocking form when _request is not NULL, else the blocking one. */
#define MCA_COLL_DFCCL_PREVIOUS(_m, _name, _request, ...)                                                    \
    ((_request)                                                                                              \
         ? (_m)->previous_i##_name(__VA_ARGS__, (_m)->comm, (_request), (_m)->previous_i##_name##_module)    \
         : (_m)->previous_##_name(__VA_ARGS__, (_m)->comm, (_m)->previous_##_name##_module))

/* A staged call handed to the previous module on host copies: non-blocking into
 * *_inner_p, else blocking with its result in _o->rc. */
#define MCA_COLL_DFCCL_STAGED_PREVIOUS(_m, _name, _o, _inner_p, ...)                                         \
    ((_inner_p) ? MCA_COLL_DFCCL_PREVIOUS(_m, _name, _inner_p, __VA_ARGS__)                                  \
                : ((_o)->rc = MCA_COLL_DFCCL_PREVIOUS(_m, _name, NULL, __VA_ARGS__), OMPI_SUCCESS))

#define MCA_COLL_DFCCL_ENTRIES(_name, _desc, _args, ...)                                                     \
    int mca_coll_dfccl_##_name(__VA_ARGS__, struct ompi_communicator_t *comm,                                \
                               mca_coll_base_module_t *module)                                               \
    {                                                                                                        \
        (void)comm;                                                                                          \
        const mca_coll_dfccl_args_t a = MCA_COLL_DFCCL_BRACED _args;                                         \
        return mca_coll_dfccl_call((mca_coll_dfccl_module_t *)module, &_desc, &a, NULL);                     \
    }                                                                                                        \
    int mca_coll_dfccl_i##_name(__VA_ARGS__, struct ompi_communicator_t *comm, ompi_request_t **request,     \
                                mca_coll_base_module_t *module)                                              \
    {                                                                                                        \
        (void)comm;                                                                                          \
        const mca_coll_dfccl_args_t a = MCA_COLL_DFCCL_BRACED _args;                                         \
        return mca_coll_dfccl_call((mca_coll_dfccl_module_t *)module, &_desc, &a, request);                  \
    }                                                                                                        \
    int mca_coll_dfccl_##_name##_init(__VA_ARGS__, struct ompi_communicator_t *comm,                         \
                                      struct ompi_info_t *info, ompi_request_t **request,                    \
                                      mca_coll_base_module_t *module)                                        \
    {                                                                                                        \
        (void)comm;                                                                                          \
        (void)info;                                                                                          \
        const mca_coll_dfccl_args_t a = MCA_COLL_DFCCL_BRACED _args;                                         \
        return mca_coll_dfccl_persist_new(module, &_desc, &a, request);                                      \
    }

#endif /* MCA_COLL_DFCCL_COMMON_H */
