/* SPDX-License-Identifier: BSD-3-Clause */
/* Public collective calls: argument checks (each error names its argument and leaves
 * every other collective untouched), request objects, test and wait. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "eng_atomic.h"
#include "eng_comm.h"
#include "eng_cpu.h"
#include "eng_gpu.h"
#include "eng_gpu_layout.h"
#include "eng_log.h"
#include "memkind.h"
#include "transport.h"
#include "reduce.h"
#include "algo.h"

static const char *const type_names[dfcclNumTypes] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                                      "uint64", "float16", "bfloat16", "float32", "float64"};
static const char *const op_names[dfcclNumOps] = {"sum", "prod", "max", "min", "band", "bor", "bxor"};

size_t dfcclTypeSize(dfcclDataType_t datatype)
{
    return eng_type_size((int)datatype);
}

static int overlaps(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return alen && blen && x < y + blen && y < x + alen;
}

/* Is [p, p + len) all mapped memory? (msync fails with ENOMEM over a hole.) Only on the
 * way to an error: a syscall. */
static int range_mapped(const void *p, size_t len)
{
    const uintptr_t pg = (uintptr_t)ENG_PAGE, a = (uintptr_t)p & ~(pg - 1);
    const uintptr_t end = (uintptr_t)p + len;
    if (!len)
        return 1;
    if (end < (uintptr_t)p)
        return 0;
    return msync((void *)a, end - a, MS_ASYNC) == 0 || errno != ENOMEM;
}

/* The buffers' ranges overlap: the reason, unless a count larger than the buffers is the
 * true one (2^40 elements reach from one buffer into any other; a range that is not all
 * mapped memory says so). */
static dfcclResult_t overlap_error(const char *fn, const char *msg, size_t count, size_t ts,
                                   const void *sendbuf, size_t sbytes, const void *recvbuf, size_t rbytes)
{
    const int s_ok = range_mapped(sendbuf, sbytes), r_ok = s_ok && range_mapped(recvbuf, rbytes);
    if (!s_ok || !r_ok)
        return eng_set_error(dfcclInvalidArgument, fn,
                             "count %zu is larger than %s: its %zu bytes (%zu-byte elements) from %p are not "
                             "all mapped memory",
                             count, !s_ok ? "sendbuf" : "recvbuf", !s_ok ? sbytes : rbytes, ts,
                             !s_ok ? sendbuf : (const void *)recvbuf);
    return eng_set_error(dfcclInvalidArgument, fn, "%s", msg);
}

/* Every request of the process: the caller holds a handle (eng_handle.h), so a copy of a
 * request already completed, or one waited on twice, is found stale instead of read
 * after its free. A slot's memory stays with the table (reused by later requests). */
static eng_htab_t eng_requests = ENG_HTAB_INITIALIZER(struct dfccl_request);

/* Hand a checked collective to the daemon its memory kind picks. blocks: the table of a
 * v-collective (malloc'd, owned from here on). */
static dfcclResult_t launch(const char *fn, dfcclComm_t comm, eng_coll_args_t *a, eng_block_t *blocks,
                            int on_gpu, int has_data, dfcclRequest_t *request_p)
{
    const int N = comm->nranks;
    uint64_t handle;
    struct dfccl_request *req = eng_handle_alloc(&eng_requests, &handle);
    if (!req) {
        free(blocks);
        return eng_set_error(dfcclNoMemory, fn, "no memory for a request");
    }
    req->done = 0;
    req->result = dfcclInProgress;
    req->done_p = &req->done;
    req->result_p = &req->result;
    req->gpu_id = -1;
    req->blocks = NULL;
    req->comm = (dfcclComm_t)comm->handle;
    req->since_ns = eng_now_ns();
    req->wake_due = 0;
    a->blocks = blocks;
    /* a one-shot contribution must fit the FIFO depth of the smallest step of the daemon
     * that runs it (one chunk per step), an LL one one step twice over (its lines carry
     * flags); the net transport's proxy copies steps without 8-byte atomicity, so
     * communicators with net peers never use LL */
    const int any_net = comm->tp_used >> ENG_TP_UCX & 1;
    const uint64_t min_step = on_gpu ? eng_gpu_small_chunk(eng_config.oneshot_max, eng_config.ll_max,
                                                           eng_config.fifo_depth, eng_gpu_chunk(any_net))
                                     : eng_config.chunk_size;
    const uint64_t oneshot_max = DFCCL_MIN(eng_config.oneshot_max, min_step * eng_config.fifo_depth);
    const uint64_t ll_max = any_net ? 0 : DFCCL_MIN(eng_config.ll_max, min_step / 2);
    const uint64_t direct_max = any_net ? 0 : eng_config.direct_max;
    /* the CPU daemon's one-shot reduces N buffers on one core where two-shot reduces one:
     * slower there (2 ranks, 64-256 KiB, 2 cores: 36-185 us against 27-93) */
    const uint32_t oneshot_ranks = on_gpu ? eng_config.oneshot_ranks : 0;
    a->algo = (uint8_t)eng_algo_select(a, N, oneshot_max, ll_max, direct_max, oneshot_ranks);
    if (on_gpu) {
        /* the GPU daemon reads a mapped copy of the table, made here */
        uint64_t seq = 0, t_submit = 0;
        dfcclResult_t r = eng_gpu->submit(comm->gpu, a, (size_t)N, &req->done_p, &req->result_p, &req->gpu_id,
                                          &seq, &t_submit);
        free(blocks);
        if (r != dfcclSuccess) {
            eng_handle_free(&eng_requests, req);
            return r;
        }
        req->gpu_seq = seq;
        comm->stats.submitted++;
        if (eng_trace_on) {
            req->tkey = eng_trace_key(comm, seq, a->coll, 1);
            eng_trace_submit(&req->tkey, t_submit);
        }
    } else {
        req->blocks = blocks;
        eng_cpu->submit(ENG_SQ_COLL, comm, a, req);
    }
    /* what a later v-collective of this rank without data or buffers follows: only a
     * call whose own buffers decided the daemon (not a barrier, not a zero count) */
    if (has_data)
        comm->last_on_gpu = on_gpu;
    *request_p = (dfcclRequest_t)(uintptr_t)handle;
    return dfcclSuccess;
}

/* The start of every collective's checks: a place for the request, a live communicator. */
static dfcclResult_t open_call(const char *fn, dfcclComm_t handle, dfcclRequest_t *request_p,
                               struct dfccl_comm **comm_p)
{
    *comm_p = eng_comm_get(handle);
    if (!request_p)
        return eng_set_error(dfcclInvalidArgument, fn, "request_p is NULL");
    *request_p = NULL;
    if (!*comm_p)
        return eng_set_error(dfcclInvalidArgument, fn, "comm is not a live communicator (NULL or destroyed)");
    return dfcclSuccess;
}

static dfcclResult_t aborted_error(const char *fn, const struct dfccl_comm *comm)
{
    if (!comm->aborted)
        return dfcclSuccess;
    const int why = dfccl_load_acquire32(&comm->why_state) == 2;
    return eng_set_error(dfcclCommAborted, fn, "communicator %016llx was aborted (%s)%s%s",
                         (unsigned long long)comm->uid, dfcclGetErrorString(comm->aborted), why ? ": " : "",
                         why ? comm->why : "");
}

/* The daemon the memory kind picks must exist, and both sides be of one kind (mixed:
 * sendbuf and recvbuf, both used, of different kinds). */
static dfcclResult_t kind_error(const char *fn, const struct dfccl_comm *comm, int on_gpu, int mixed)
{
    if (mixed)
        return eng_set_error(dfcclInvalidArgument, fn,
                             "sendbuf and recvbuf must both be host memory or both device memory");
    if (on_gpu && !comm->gpu)
        return eng_set_error(dfcclUnsupported, fn,
                             "device buffers on a communicator without a GPU part (no GPU backend, "
                             "DFCCL_GPU=0, or a rank without a usable GPU)");
    return dfcclSuccess;
}

static int type_ok(dfcclDataType_t t)
{
    return (int)t >= 0 && t < dfcclNumTypes;
}

static dfcclResult_t submit(const char *fn, eng_coll_t coll, const void *sendbuf, void *recvbuf, size_t count,
                            dfcclDataType_t datatype, dfcclRedOp_t op, int root, dfcclComm_t handle,
                            dfcclRequest_t *request_p)
{
    const int reduces = coll == ENG_COLL_ALLREDUCE || coll == ENG_COLL_REDUCE ||
                        coll == ENG_COLL_REDUCE_SCATTER || coll == ENG_COLL_SCAN || coll == ENG_COLL_EXSCAN;
    const int rooted = coll == ENG_COLL_REDUCE || coll == ENG_COLL_BCAST || coll == ENG_COLL_GATHER ||
                       coll == ENG_COLL_SCATTER;
    struct dfccl_comm *comm;
    dfcclResult_t r = open_call(fn, handle, request_p, &comm);
    if (r != dfcclSuccess)
        return r;
    if (coll != ENG_COLL_BARRIER && !type_ok(datatype))
        return eng_set_error(dfcclInvalidArgument, fn, "datatype %d is not a dfcclDataType_t", (int)datatype);
    if (reduces && ((int)op < 0 || op >= dfcclNumOps))
        return eng_set_error(dfcclInvalidArgument, fn, "op %d is not a dfcclRedOp_t", (int)op);
    if (reduces && !eng_op_valid((int)datatype, (int)op))
        return eng_set_error(dfcclInvalidArgument, fn,
                             "op %s is not valid for datatype %s (bitwise ops take integer types)",
                             op_names[op], type_names[datatype]);
    const int N = comm->nranks, me = comm->rank;
    if (rooted && (root < 0 || root >= N))
        return eng_set_error(dfcclInvalidArgument, fn, "root %d out of range [0, %d)", root, N);

    const size_t ts = coll == ENG_COLL_BARRIER ? 0 : eng_type_size((int)datatype);
    if (ts && count > SIZE_MAX / ts / (size_t)N)
        return eng_set_error(dfcclInvalidArgument, fn, "count %zu is too large", count);
    const size_t bytes = count * ts;
    if (bytes) {
        int need_send = 1, need_recv = 1;
        if (coll == ENG_COLL_REDUCE || coll == ENG_COLL_GATHER)
            need_recv = me == root;
        if (coll == ENG_COLL_BCAST || coll == ENG_COLL_SCATTER)
            need_send = me == root;
        if (coll == ENG_COLL_EXSCAN)
            need_recv = me != 0;
        if (need_send && !sendbuf)
            return eng_set_error(dfcclInvalidArgument, fn, "sendbuf is NULL with count %zu", count);
        if (need_recv && !recvbuf)
            return eng_set_error(dfcclInvalidArgument, fn, "recvbuf is NULL with count %zu", count);
        if (coll == ENG_COLL_ALLTOALL && overlaps(sendbuf, bytes * (size_t)N, recvbuf, bytes * (size_t)N))
            return overlap_error(fn, "sendbuf and recvbuf overlap (in-place all-to-all is not supported)",
                                 count, ts, sendbuf, bytes * (size_t)N, recvbuf, bytes * (size_t)N);
        if (coll == ENG_COLL_ALLGATHER && sendbuf != (char *)recvbuf + (size_t)me * bytes &&
            overlaps(sendbuf, bytes, recvbuf, bytes * (size_t)N))
            return overlap_error(fn, "sendbuf overlaps recvbuf but is not recvbuf + rank * sendcount", count,
                                 ts, sendbuf, bytes, recvbuf, bytes * (size_t)N);
        if (coll == ENG_COLL_REDUCE_SCATTER && recvbuf != (const char *)sendbuf + (size_t)me * bytes &&
            overlaps(sendbuf, bytes * (size_t)N, recvbuf, bytes))
            return overlap_error(fn, "recvbuf overlaps sendbuf but is not sendbuf + rank * recvcount", count,
                                 ts, sendbuf, bytes * (size_t)N, recvbuf, bytes);
        if (coll == ENG_COLL_GATHER && me == root && sendbuf != (char *)recvbuf + (size_t)root * bytes &&
            overlaps(sendbuf, bytes, recvbuf, bytes * (size_t)N))
            return overlap_error(fn, "sendbuf overlaps recvbuf but is not recvbuf + root * sendcount", count,
                                 ts, sendbuf, bytes, recvbuf, bytes * (size_t)N);
        if (coll == ENG_COLL_SCATTER && me == root &&
            recvbuf != (const char *)sendbuf + (size_t)root * bytes &&
            overlaps(recvbuf, bytes, sendbuf, bytes * (size_t)N))
            return overlap_error(fn, "recvbuf overlaps sendbuf but is not sendbuf + root * recvcount", count,
                                 ts, sendbuf, bytes * (size_t)N, recvbuf, bytes);
        /* allreduce, scan, reduce and bcast (at the root): in place means equal buffers;
         * a partial overlap would read data the collective already overwrote */
        const int same_size = coll == ENG_COLL_ALLREDUCE || coll == ENG_COLL_SCAN ||
                              coll == ENG_COLL_EXSCAN ||
                              ((coll == ENG_COLL_REDUCE || coll == ENG_COLL_BCAST) && me == root);
        if (same_size && sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
            return overlap_error(fn,
                                 "sendbuf and recvbuf overlap partially (in place means sendbuf == recvbuf)",
                                 count, ts, sendbuf, bytes, recvbuf, bytes);
    }
    if ((r = aborted_error(fn, comm)) != dfcclSuccess)
        return r;

    /* the memory kind picks the daemon; every rank passes the same kind (usage rule) */
    const int dev_send = bytes && sendbuf && eng_gpu_buffer(sendbuf, comm->gpu != NULL);
    /* in place: one buffer, asked once (the driver query is on every call's path) */
    const int dev_recv =
        recvbuf == sendbuf ? dev_send : bytes && recvbuf && eng_gpu_buffer(recvbuf, comm->gpu != NULL);
    const int on_gpu = dev_send || dev_recv;
    /* the side a rank does not use (MPI leaves it undefined there) */
    const int send_unused = (coll == ENG_COLL_BCAST || coll == ENG_COLL_SCATTER) && me != root;
    const int recv_unused = (coll == ENG_COLL_REDUCE || coll == ENG_COLL_GATHER) && me != root;
    if ((r = kind_error(fn, comm, on_gpu,
                        on_gpu && sendbuf && recvbuf && dev_send != dev_recv && !recv_unused &&
                            !send_unused)) != dfcclSuccess)
        return r;

    eng_coll_args_t a = {.coll = (uint8_t)coll,
                         .dtype = (uint8_t)(coll == ENG_COLL_BARRIER ? 0 : datatype),
                         .op = (uint8_t)(reduces ? op : 0),
                         .root = rooted ? root : 0,
                         .count = coll == ENG_COLL_BARRIER ? 0 : count,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf};
    return launch(fn, comm, &a, NULL, on_gpu, bytes > 0, request_p);
}

dfcclResult_t dfcclAllReduce(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                             dfcclRedOp_t op, dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_ALLREDUCE, sendbuf, recvbuf, count, datatype, op, 0, comm, request_p);
}

dfcclResult_t dfcclReduce(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                          dfcclRedOp_t op, int root, dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_REDUCE, sendbuf, recvbuf, count, datatype, op, root, comm, request_p);
}

dfcclResult_t dfcclBroadcast(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                             int root, dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_BCAST, sendbuf, recvbuf, count, datatype, dfcclSum, root, comm,
                  request_p);
}

dfcclResult_t dfcclAllGather(const void *sendbuf, void *recvbuf, size_t sendcount, dfcclDataType_t datatype,
                             dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, datatype, dfcclSum, 0, comm,
                  request_p);
}

dfcclResult_t dfcclReduceScatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                 dfcclDataType_t datatype, dfcclRedOp_t op, dfcclComm_t comm,
                                 dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, datatype, op, 0, comm,
                  request_p);
}

dfcclResult_t dfcclAllToAll(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                            dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_ALLTOALL, sendbuf, recvbuf, count, datatype, dfcclSum, 0, comm,
                  request_p);
}

dfcclResult_t dfcclBarrier(dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_BARRIER, NULL, NULL, 0, dfcclInt8, dfcclSum, 0, comm, request_p);
}

/* ---- collectives moved block by block from a per-peer table ------------------------- */

/* What a v- or w-collective's caller passed: counts and displacements in elements of
 * the datatype (w: per-peer types, displacements in bytes). NULL arrays are the side a
 * rank does not use. */
typedef struct {
    const void *sendbuf;
    void *recvbuf;
    size_t sendcount, recvcount; /* gatherv / allgatherv: sendcount; scatterv: recvcount */
    const size_t *scounts, *sdispls, *rcounts, *rdispls;
    const dfcclDataType_t *stypes, *rtypes; /* alltoallw */
    dfcclDataType_t datatype;
    int root;
} eng_vargs_t;

/* elements * type size, or 0 with *ovf set when it does not fit */
static uint64_t mul_bytes(size_t n, size_t ts, int *ovf)
{
    if (ts && n > (SIZE_MAX >> 1) / ts)
        *ovf = 1;
    return (uint64_t)n * ts;
}

/* Build rank me's table for a v- or w-collective, checking every array it reads. */
static dfcclResult_t build_blocks(const char *fn, eng_coll_t coll, const eng_vargs_t *v, int N, int me,
                                  eng_block_t *b)
{
    const size_t ts = coll == ENG_COLL_ALLTOALLW ? 1 : eng_type_size((int)v->datatype);
    const int root_side = me == v->root;
    int ovf = 0;
    for (int p = 0; p < N; p++) {
        eng_block_t *e = &b[p];
        *e = (eng_block_t){0, 0, 0, 0};
        switch (coll) {
        case ENG_COLL_GATHERV:
            if (p == v->root)
                e->sbytes = mul_bytes(v->sendcount, ts, &ovf);
            if (root_side) {
                e->rbytes = mul_bytes(v->rcounts[p], ts, &ovf);
                e->roff = mul_bytes(v->rdispls[p], ts, &ovf);
            }
            break;
        case ENG_COLL_SCATTERV:
            if (p == v->root)
                e->rbytes = mul_bytes(v->recvcount, ts, &ovf);
            if (root_side) {
                e->sbytes = mul_bytes(v->scounts[p], ts, &ovf);
                e->soff = mul_bytes(v->sdispls[p], ts, &ovf);
            }
            break;
        case ENG_COLL_ALLGATHERV:
            e->sbytes = mul_bytes(v->sendcount, ts, &ovf);
            e->rbytes = mul_bytes(v->rcounts[p], ts, &ovf);
            e->roff = mul_bytes(v->rdispls[p], ts, &ovf);
            break;
        case ENG_COLL_ALLTOALLV:
            e->sbytes = mul_bytes(v->scounts[p], ts, &ovf);
            e->soff = mul_bytes(v->sdispls[p], ts, &ovf);
            e->rbytes = mul_bytes(v->rcounts[p], ts, &ovf);
            e->roff = mul_bytes(v->rdispls[p], ts, &ovf);
            break;
        default: /* ENG_COLL_ALLTOALLW: displacements in bytes, a type per peer */
            if (!type_ok(v->stypes[p]))
                return eng_set_error(dfcclInvalidArgument, fn, "sendtypes[%d] %d is not a dfcclDataType_t", p,
                                     (int)v->stypes[p]);
            if (!type_ok(v->rtypes[p]))
                return eng_set_error(dfcclInvalidArgument, fn, "recvtypes[%d] %d is not a dfcclDataType_t", p,
                                     (int)v->rtypes[p]);
            e->sbytes = mul_bytes(v->scounts[p], eng_type_size((int)v->stypes[p]), &ovf);
            e->soff = v->sdispls[p];
            e->rbytes = mul_bytes(v->rcounts[p], eng_type_size((int)v->rtypes[p]), &ovf);
            e->roff = v->rdispls[p];
            break;
        }
        if (ovf || e->soff > (SIZE_MAX >> 1) - e->sbytes || e->roff > (SIZE_MAX >> 1) - e->rbytes)
            return eng_set_error(dfcclInvalidArgument, fn,
                                 "the counts or displacements for rank %d are too large", p);
    }
    return dfcclSuccess;
}

/* [lo, hi) bytes the table touches on one side; empty: lo == hi == 0 */
static void table_span(const eng_block_t *b, int N, int recv, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (int p = 0; p < N; p++) {
        const uint64_t off = recv ? b[p].roff : b[p].soff, n = recv ? b[p].rbytes : b[p].sbytes;
        if (!n)
            continue;
        *lo = DFCCL_MIN(*lo, off);
        *hi = off + n > *hi ? off + n : *hi;
    }
    if (*hi == 0)
        *lo = 0;
}

static dfcclResult_t submit_v(const char *fn, eng_coll_t coll, const eng_vargs_t *v, dfcclComm_t handle,
                              dfcclRequest_t *request_p)
{
    struct dfccl_comm *comm;
    dfcclResult_t r = open_call(fn, handle, request_p, &comm);
    if (r != dfcclSuccess)
        return r;
    const int N = comm->nranks, me = comm->rank;
    const int rooted = coll == ENG_COLL_GATHERV || coll == ENG_COLL_SCATTERV;
    if (coll != ENG_COLL_ALLTOALLW && !type_ok(v->datatype))
        return eng_set_error(dfcclInvalidArgument, fn, "datatype %d is not a dfcclDataType_t",
                             (int)v->datatype);
    if (rooted && (v->root < 0 || v->root >= N))
        return eng_set_error(dfcclInvalidArgument, fn, "root %d out of range [0, %d)", v->root, N);
    /* the arrays this rank reads */
    const int root_side = rooted && me == v->root;
    const int a2a = coll == ENG_COLL_ALLTOALLV || coll == ENG_COLL_ALLTOALLW;
    const struct {
        const void *p;
        int used;
        const char *name;
    } arrays[] = {
        {v->rcounts, coll == ENG_COLL_ALLGATHERV || a2a || (coll == ENG_COLL_GATHERV && root_side),
         "recvcounts"},
        {v->rdispls, coll == ENG_COLL_ALLGATHERV || a2a || (coll == ENG_COLL_GATHERV && root_side), "displs"},
        {v->scounts, a2a || (coll == ENG_COLL_SCATTERV && root_side), "sendcounts"},
        {v->sdispls, a2a || (coll == ENG_COLL_SCATTERV && root_side), "sdispls"},
        {v->stypes, coll == ENG_COLL_ALLTOALLW, "sendtypes"},
        {v->rtypes, coll == ENG_COLL_ALLTOALLW, "recvtypes"},
    };
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
        if (arrays[i].used && !arrays[i].p)
            return eng_set_error(dfcclInvalidArgument, fn, "%s is NULL", arrays[i].name);
    if ((r = aborted_error(fn, comm)) != dfcclSuccess)
        return r;

    eng_block_t *b = malloc(sizeof(*b) * (size_t)N);
    if (!b)
        return eng_set_error(dfcclNoMemory, fn, "no memory for the %d-rank block table", N);
    r = build_blocks(fn, coll, v, N, me, b);
    uint64_t slo, shi, rlo, rhi;
    table_span(b, N, 0, &slo, &shi);
    table_span(b, N, 1, &rlo, &rhi);
    const void *sendbuf = v->sendbuf;
    void *recvbuf = v->recvbuf;
    const char *s0 = (const char *)sendbuf + slo, *r0 = (const char *)recvbuf + rlo;
    if (r == dfcclSuccess && shi > slo && !sendbuf)
        r = eng_set_error(dfcclInvalidArgument, fn, "sendbuf is NULL with %llu bytes to send",
                          (unsigned long long)(shi - slo));
    if (r == dfcclSuccess && rhi > rlo && !recvbuf)
        r = eng_set_error(dfcclInvalidArgument, fn, "recvbuf is NULL with %llu bytes to receive",
                          (unsigned long long)(rhi - rlo));
    if (r == dfcclSuccess && shi > slo && rhi > rlo) {
        /* in place: this rank's own block is where it is received, and nothing else the
         * rank sends lies where it receives */
        const eng_block_t *own = &b[me];
        const int in_place = coll != ENG_COLL_ALLTOALLV && coll != ENG_COLL_ALLTOALLW && own->sbytes &&
                             (const char *)sendbuf + own->soff == (const char *)recvbuf + own->roff;
        int bad = 0;
        for (int p = 0; p < N && !bad; p++) {
            /* in place, the own block is sent from where it is received (all-gather-v
             * sends it to every peer) */
            if (in_place && b[p].soff == own->soff && b[p].sbytes == own->sbytes)
                continue;
            if (b[p].sbytes)
                bad = overlaps((const char *)sendbuf + b[p].soff, b[p].sbytes, r0, rhi - rlo);
        }
        if (in_place && !bad) /* the own block may not overlap another peer's receive block */
            for (int p = 0; p < N && !bad; p++)
                bad = p != me && overlaps((const char *)recvbuf + b[p].roff, b[p].rbytes,
                                          (const char *)recvbuf + own->roff, own->rbytes);
        const int s_ok = !bad || range_mapped(s0, shi - slo),
                  r_ok = !bad || !s_ok || range_mapped(r0, rhi - rlo);
        if (!s_ok || !r_ok) /* a count or displacement past a buffer: the true reason */
            r = eng_set_error(
                dfcclInvalidArgument, fn,
                "the counts and displacements reach past %s: its %llu bytes from %p are not all "
                "mapped memory",
                !s_ok ? "sendbuf" : "recvbuf", (unsigned long long)(!s_ok ? shi - slo : rhi - rlo),
                !s_ok ? (const void *)s0 : (const void *)r0);
        else if (bad)
            r = eng_set_error(
                dfcclInvalidArgument, fn,
                coll == ENG_COLL_ALLTOALLV || coll == ENG_COLL_ALLTOALLW
                    ? "the send and receive regions overlap (in-place all-to-all is not supported)"
                    : "sendbuf overlaps recvbuf but is not this rank's block of it");
    }
    /* the memory kind picks the daemon; every rank passes the same kind (usage rule). A
     * rank that moves nothing goes by the buffers it passed anyway, else with the
     * communicator's latest collective. */
    const int dev_send = shi > slo && eng_gpu_buffer(s0, comm->gpu != NULL);
    const int dev_recv = rhi > rlo && eng_gpu_buffer(r0, comm->gpu != NULL);
    int on_gpu = dev_send || dev_recv;
    if (shi == slo && rhi == rlo) {
        if (sendbuf || recvbuf)
            on_gpu = (sendbuf && eng_gpu_buffer(sendbuf, comm->gpu != NULL)) ||
                     (recvbuf && eng_gpu_buffer(recvbuf, comm->gpu != NULL));
        else
            on_gpu = comm->last_on_gpu;
        on_gpu = on_gpu && comm->gpu; /* nothing to move: never an error */
    }
    if (r == dfcclSuccess)
        r = kind_error(fn, comm, on_gpu, shi > slo && rhi > rlo && dev_send != dev_recv);
    if (r != dfcclSuccess) {
        free(b);
        return r;
    }
    uint64_t largest = 0; /* picks the channels this rank takes part on (eng_pair_chans) */
    for (int p = 0; p < N; p++)
        largest = DFCCL_MAX(largest, DFCCL_MAX(b[p].sbytes, b[p].rbytes));
    eng_coll_args_t a = {.coll = (uint8_t)coll,
                         .dtype = (uint8_t)(coll == ENG_COLL_ALLTOALLW ? dfcclUint8 : v->datatype),
                         .count = largest,
                         .root = rooted ? v->root : 0,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf};
    return launch(fn, comm, &a, b, on_gpu, shi > slo || rhi > rlo, request_p);
}

dfcclResult_t dfcclGather(const void *sendbuf, void *recvbuf, size_t sendcount, dfcclDataType_t datatype,
                          int root, dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_GATHER, sendbuf, recvbuf, sendcount, datatype, dfcclSum, root, comm,
                  request_p);
}

dfcclResult_t dfcclScatter(const void *sendbuf, void *recvbuf, size_t recvcount, dfcclDataType_t datatype,
                           int root, dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_SCATTER, sendbuf, recvbuf, recvcount, datatype, dfcclSum, root, comm,
                  request_p);
}

dfcclResult_t dfcclScan(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                        dfcclRedOp_t op, dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_SCAN, sendbuf, recvbuf, count, datatype, op, 0, comm, request_p);
}

dfcclResult_t dfcclExscan(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                          dfcclRedOp_t op, dfcclComm_t comm, dfcclRequest_t *request_p)
{
    return submit(__func__, ENG_COLL_EXSCAN, sendbuf, recvbuf, count, datatype, op, 0, comm, request_p);
}

dfcclResult_t dfcclGatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                           const size_t *displs, dfcclDataType_t datatype, int root, dfcclComm_t comm,
                           dfcclRequest_t *request_p)
{
    const eng_vargs_t v = {.sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .sendcount = sendcount,
                           .rcounts = recvcounts,
                           .rdispls = displs,
                           .datatype = datatype,
                           .root = root};
    return submit_v(__func__, ENG_COLL_GATHERV, &v, comm, request_p);
}

dfcclResult_t dfcclScatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                            void *recvbuf, size_t recvcount, dfcclDataType_t datatype, int root,
                            dfcclComm_t comm, dfcclRequest_t *request_p)
{
    const eng_vargs_t v = {.sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .recvcount = recvcount,
                           .scounts = sendcounts,
                           .sdispls = displs,
                           .datatype = datatype,
                           .root = root};
    return submit_v(__func__, ENG_COLL_SCATTERV, &v, comm, request_p);
}

dfcclResult_t dfcclAllGatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                              const size_t *displs, dfcclDataType_t datatype, dfcclComm_t comm,
                              dfcclRequest_t *request_p)
{
    const eng_vargs_t v = {.sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .sendcount = sendcount,
                           .rcounts = recvcounts,
                           .rdispls = displs,
                           .datatype = datatype};
    return submit_v(__func__, ENG_COLL_ALLGATHERV, &v, comm, request_p);
}

dfcclResult_t dfcclAllToAllv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                             void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                             dfcclDataType_t datatype, dfcclComm_t comm, dfcclRequest_t *request_p)
{
    const eng_vargs_t v = {.sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .scounts = sendcounts,
                           .sdispls = sdispls,
                           .rcounts = recvcounts,
                           .rdispls = rdispls,
                           .datatype = datatype};
    return submit_v(__func__, ENG_COLL_ALLTOALLV, &v, comm, request_p);
}

dfcclResult_t dfcclAllToAllw(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                             const dfcclDataType_t *sendtypes, void *recvbuf, const size_t *recvcounts,
                             const size_t *rdispls, const dfcclDataType_t *recvtypes, dfcclComm_t comm,
                             dfcclRequest_t *request_p)
{
    const eng_vargs_t v = {.sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .scounts = sendcounts,
                           .sdispls = sdispls,
                           .rcounts = recvcounts,
                           .rdispls = rdispls,
                           .stypes = sendtypes,
                           .rtypes = recvtypes};
    return submit_v(__func__, ENG_COLL_ALLTOALLW, &v, comm, request_p);
}

/* A GPU collective waited on for a while: is a shared-memory peer dead? The GPU daemon
 * spins on its flags and cannot tell; the CPU daemon looks by itself (check_stall). */
static void gpu_watch_peers(struct dfccl_request *req)
{
    const uint64_t now = eng_now_ns();
    if (now - req->since_ns >= ENG_PEER_CHECK_NS && eng_comm_watch_peers(req->comm, req->gpu_seq, now) >= 0)
        eng_gpu->progress(); /* a daemon that quit on the stalled work comes back to fail it */
}

/* The request a caller's handle names, or NULL with the error set (what names it:
 * "*request_p", "requests[3]"). */
static struct dfccl_request *request_of(const char *fn, dfcclRequest_t handle, const char *what)
{
    struct dfccl_request *req = eng_handle_get(&eng_requests, (uintptr_t)handle);
    if (!req)
        eng_set_error(dfcclInvalidArgument, fn,
                      "%s (%p) is not a pending request: a copy of one that already completed (a "
                      "request is freed by the dfcclWait or dfcclTest that completes it), or not a request",
                      what, (void *)handle);
    return req;
}

static dfcclResult_t request_reap(struct dfccl_request *req, dfcclRequest_t *request_p)
{
    dfcclResult_t res = (dfcclResult_t)DFCCL_READ_ONCE(*req->result_p);
    if (req->gpu_id >= 0) {
        if (eng_trace_on)
            eng_trace_complete(&req->tkey, res);
        eng_gpu->release(req->gpu_id); /* DFCCL_TRACE: with a sample of the GPU's clock */
    }
    free(req->blocks);
    if (res < 0) { /* the daemon logged the details; the caller's thread gets the reason too */
        char why[sizeof(((struct dfccl_comm *)0)->why)];
        const int got = eng_comm_why_get(req->comm, why, sizeof why);
        eng_set_error(res, "dfcclWait", "the collective failed: %s%s%s", dfcclGetErrorString(res),
                      got ? ": " : "", got ? why : "");
    }
    eng_handle_free(&eng_requests, req);
    *request_p = NULL;
    return res;
}

dfcclResult_t dfcclTest(dfcclRequest_t *request_p, int *done_p)
{
    if (!request_p)
        return DFCCL_ARG_ERROR("request_p is NULL");
    if (!done_p)
        return DFCCL_ARG_ERROR("done_p is NULL");
    if (!*request_p) {
        *done_p = 1;
        return dfcclSuccess;
    }
    struct dfccl_request *req = request_of(__func__, *request_p, "*request_p");
    if (!req)
        return dfcclInvalidArgument;
    /* acquire: pairs with the daemon's release of the completion word */
    if (!dfccl_load_acquire32(req->done_p)) {
        if (req->gpu_id >= 0) {
            eng_gpu->progress(); /* relaunch a daemon that quit on stalled work */
            gpu_watch_peers(req);
        } else {
            eng_cpu->kick(req);
        }
        *done_p = 0;
        return dfcclSuccess;
    }
    *done_p = 1;
    return request_reap(req, request_p);
}

static dfcclResult_t wait_one(struct dfccl_request *req, dfcclRequest_t *request_p)
{
    if (req->gpu_id < 0) {
        eng_cpu->wait(req);
    } else {
        for (unsigned i = 0; !dfccl_load_acquire32(req->done_p); i++) {
            if (i % 64 == 63) {
                eng_gpu->progress();
                gpu_watch_peers(req);
            }
            if (i < 4096)
                dfccl_cpu_relax();
            else
                sched_yield();
        }
    }
    return request_reap(req, request_p);
}

dfcclResult_t dfcclWait(dfcclRequest_t *request_p)
{
    if (!request_p)
        return DFCCL_ARG_ERROR("request_p is NULL");
    if (!*request_p)
        return dfcclSuccess;
    struct dfccl_request *req = request_of(__func__, *request_p, "*request_p");
    return req ? wait_one(req, request_p) : dfcclInvalidArgument;
}

static int handle_cmp(const void *a, const void *b)
{
    const uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* Every request is checked before any is waited on: a stale one, or one named twice,
 * fails the call with nothing waited on (the second wait of a request would otherwise
 * find it completed and freed by the first). */
dfcclResult_t dfcclWaitAll(int n, dfcclRequest_t *requests)
{
    if (n < 0)
        return DFCCL_ARG_ERROR("n %d is negative", n);
    if (n > 0 && !requests)
        return DFCCL_ARG_ERROR("requests is NULL");
    char what[48];
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "requests[%d]", i);
        if (requests[i] && !request_of(__func__, requests[i], what))
            return dfcclInvalidArgument;
    }
    /* duplicates: pairwise for a few, else in a sorted copy */
    int dup_i = -1, dup_j = -1;
    if (n <= 32) {
        for (int j = 1; j < n && dup_i < 0; j++)
            for (int i = 0; i < j; i++)
                if (requests[j] && requests[i] == requests[j]) {
                    dup_i = i;
                    dup_j = j;
                    break;
                }
    } else {
        uintptr_t *s = malloc(sizeof(*s) * (size_t)n);
        if (!s)
            return eng_set_error(dfcclNoMemory, __func__, "no memory to check %d requests", n);
        for (int i = 0; i < n; i++)
            s[i] = (uintptr_t)requests[i];
        qsort(s, (size_t)n, sizeof(*s), handle_cmp);
        for (int k = 1; k < n && dup_i < 0; k++)
            if (s[k] && s[k] == s[k - 1])
                for (int i = 0; i < n; i++)
                    if ((uintptr_t)requests[i] == s[k]) {
                        if (dup_i < 0)
                            dup_i = i;
                        else {
                            dup_j = i;
                            break;
                        }
                    }
        free(s);
    }
    if (dup_i >= 0)
        return DFCCL_ARG_ERROR("requests[%d] and requests[%d] are the same request (%p): each is waited on "
                               "once; nothing was waited on",
                               dup_i, dup_j, (void *)requests[dup_i]);
    dfcclResult_t first = dfcclSuccess;
    for (int i = 0; i < n; i++) {
        struct dfccl_request *req = requests[i] ? request_of(__func__, requests[i], "requests[i]") : NULL;
        dfcclResult_t r = req ? wait_one(req, &requests[i]) : dfcclSuccess;
        if (r != dfcclSuccess && first == dfcclSuccess)
            first = r;
    }
    return first;
}
