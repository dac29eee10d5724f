/* SPDX-License-Identifier: BSD-3-Clause */
/* Public collective calls: argument checks (each error names its argument and leaves
 * every other collective untouched), request objects, test and wait. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "eng_atomic.h"
#include "eng_comm.h"
#include "eng_gpu.h"
#include "eng_gpu_layout.h"
#include "eng_log.h"
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

static dfcclResult_t submit(const char *fn, eng_coll_t coll, const void *sendbuf, void *recvbuf, size_t count,
                            dfcclDataType_t datatype, dfcclRedOp_t op, int root, dfcclComm_t comm,
                            dfcclRequest_t *request_p)
{
    const int reduces =
        coll == ENG_COLL_ALLREDUCE || coll == ENG_COLL_REDUCE || coll == ENG_COLL_REDUCE_SCATTER;
    const int rooted = coll == ENG_COLL_REDUCE || coll == ENG_COLL_BCAST;

    if (!request_p)
        return eng_set_error(dfcclInvalidArgument, fn, "request_p is NULL");
    *request_p = NULL;
    if (!eng_comm_is_live(comm))
        return eng_set_error(dfcclInvalidArgument, fn, "comm is not a live communicator (NULL or destroyed)");
    if (coll != ENG_COLL_BARRIER && ((int)datatype < 0 || datatype >= dfcclNumTypes))
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
        if (coll == ENG_COLL_REDUCE)
            need_recv = me == root;
        if (coll == ENG_COLL_BCAST)
            need_send = me == root;
        if (need_send && !sendbuf)
            return eng_set_error(dfcclInvalidArgument, fn, "sendbuf is NULL with count %zu", count);
        if (need_recv && !recvbuf)
            return eng_set_error(dfcclInvalidArgument, fn, "recvbuf is NULL with count %zu", count);
        if (coll == ENG_COLL_ALLTOALL && overlaps(sendbuf, bytes * (size_t)N, recvbuf, bytes * (size_t)N))
            return eng_set_error(dfcclInvalidArgument, fn,
                                 "sendbuf and recvbuf overlap (in-place all-to-all is not supported)");
        if (coll == ENG_COLL_ALLGATHER && sendbuf != (char *)recvbuf + (size_t)me * bytes &&
            overlaps(sendbuf, bytes, recvbuf, bytes * (size_t)N))
            return eng_set_error(dfcclInvalidArgument, fn,
                                 "sendbuf overlaps recvbuf but is not recvbuf + rank * sendcount");
        if (coll == ENG_COLL_REDUCE_SCATTER && recvbuf != (const char *)sendbuf + (size_t)me * bytes &&
            overlaps(sendbuf, bytes * (size_t)N, recvbuf, bytes))
            return eng_set_error(dfcclInvalidArgument, fn,
                                 "recvbuf overlaps sendbuf but is not sendbuf + rank * recvcount");
        /* allreduce, reduce (at the root), bcast (at the root): in place means equal
         * buffers; a partial overlap would read data the collective already overwrote */
        if ((coll == ENG_COLL_ALLREDUCE || (rooted && me == root)) && sendbuf != recvbuf &&
            overlaps(sendbuf, bytes, recvbuf, bytes))
            return eng_set_error(dfcclInvalidArgument, fn,
                                 "sendbuf and recvbuf overlap partially (in place means sendbuf == recvbuf)");
    }
    if (comm->aborted)
        return eng_set_error(dfcclCommAborted, fn, "communicator %016llx was aborted (%s)",
                             (unsigned long long)comm->uid, dfcclGetErrorString(comm->aborted));

    /* the memory kind picks the daemon; every rank passes the same kind (usage rule) */
    const int dev_send = bytes && sendbuf && eng_gpu_is_device_ptr(sendbuf);
    const int dev_recv = bytes && recvbuf && eng_gpu_is_device_ptr(recvbuf);
    const int on_gpu = dev_send || dev_recv;
    if (on_gpu && sendbuf && recvbuf && dev_send != dev_recv && !(coll == ENG_COLL_REDUCE && me != root) &&
        !(coll == ENG_COLL_BCAST && me != root))
        return eng_set_error(dfcclInvalidArgument, fn,
                             "sendbuf and recvbuf must both be host memory or both device memory");
    if (on_gpu && !comm->gpu)
        return eng_set_error(dfcclUnsupported, fn,
                             "device buffers on a communicator without a GPU part (no GPU backend, "
                             "DFCCL_GPU=0, or a rank without a usable GPU)");

    struct dfccl_request *req = malloc(sizeof(*req));
    if (!req)
        return eng_set_error(dfcclNoMemory, fn, "no memory for a request");
    req->done = 0;
    req->result = dfcclInProgress;
    req->done_p = &req->done;
    req->result_p = &req->result;
    req->gpu_id = -1;
    eng_coll_args_t a = {.coll = (uint8_t)coll,
                         .dtype = (uint8_t)(coll == ENG_COLL_BARRIER ? 0 : datatype),
                         .op = (uint8_t)(reduces ? op : 0),
                         .root = rooted ? root : 0,
                         .count = coll == ENG_COLL_BARRIER ? 0 : count,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf};
    /* a one-shot contribution must fit the FIFO depth of the smallest step of the daemon
     * that runs it (one chunk per step), an LL one one step twice over (its lines carry
     * flags); the net transport's proxy copies steps without 8-byte atomicity, so
     * communicators with net peers never use LL */
    const uint64_t min_step =
        on_gpu ? eng_gpu_small_chunk(eng_config.oneshot_max, eng_config.ll_max, eng_config.fifo_depth,
                                     eng_gpu_chunk(comm->net != NULL))
               : eng_config.chunk_size;
    const uint64_t oneshot_max = DFCCL_MIN(eng_config.oneshot_max, min_step * eng_config.fifo_depth);
    const uint64_t ll_max = comm->net ? 0 : DFCCL_MIN(eng_config.ll_max, min_step / 2);
    a.algo = (uint8_t)eng_algo_select(&a, N, oneshot_max, ll_max);
    if (on_gpu) {
        dfcclResult_t r = eng_gpu_submit(comm->gpu, &a, &req->done_p, &req->result_p, &req->gpu_id);
        if (r != dfcclSuccess) {
            free(req);
            return r;
        }
        comm->stats.submitted++;
    } else {
        eng_daemon_submit(ENG_SQ_COLL, comm, &a, req);
    }
    *request_p = req;
    return dfcclSuccess;
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

static dfcclResult_t request_reap(dfcclRequest_t *request_p)
{
    struct dfccl_request *req = *request_p;
    dfcclResult_t res = (dfcclResult_t)DFCCL_READ_ONCE(*req->result_p);
    if (req->gpu_id >= 0)
        eng_gpu_release(req->gpu_id);
    if (res < 0) /* the daemon logged the details; the caller's thread gets the reason too */
        eng_set_error(res, "dfcclWait", "the collective failed: %s", dfcclGetErrorString(res));
    free(*request_p);
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
    /* acquire: pairs with the daemon's release of the completion word */
    if (!dfccl_load_acquire32((*request_p)->done_p)) {
        if ((*request_p)->gpu_id >= 0)
            eng_gpu_progress(); /* relaunch a daemon that quit on stalled work */
        *done_p = 0;
        return dfcclSuccess;
    }
    *done_p = 1;
    return request_reap(request_p);
}

dfcclResult_t dfcclWait(dfcclRequest_t *request_p)
{
    if (!request_p)
        return DFCCL_ARG_ERROR("request_p is NULL");
    if (!*request_p)
        return dfcclSuccess;
    struct dfccl_request *req = *request_p;
    if (req->gpu_id < 0) {
        eng_daemon_wait(req);
    } else {
        for (unsigned i = 0; !dfccl_load_acquire32(req->done_p); i++) {
            if (i % 64 == 63)
                eng_gpu_progress();
            if (i < 4096)
                dfccl_cpu_relax();
            else
                sched_yield();
        }
    }
    return request_reap(request_p);
}

dfcclResult_t dfcclWaitAll(int n, dfcclRequest_t *requests)
{
    if (n < 0)
        return DFCCL_ARG_ERROR("n %d is negative", n);
    if (n > 0 && !requests)
        return DFCCL_ARG_ERROR("requests is NULL");
    dfcclResult_t first = dfcclSuccess;
    for (int i = 0; i < n; i++) {
        dfcclResult_t r = dfcclWait(&requests[i]);
        if (r != dfcclSuccess && first == dfcclSuccess)
            first = r;
    }
    return first;
}
