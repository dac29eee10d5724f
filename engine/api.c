/* SPDX-License-Identifier: BSD-3-Clause */
/* Public collective calls: each is checked (api_check.c), handed to the daemon its
 * memory kind picks and given a request (api_request.c). */
#include <stdint.h>
#include <stdlib.h>

#include "eng_api.h"
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

/* Hand a checked collective to the daemon its memory kind picks. blocks: the table of a
 * v-collective (malloc'd, owned from here on). */
static dfcclResult_t launch(const char *fn, dfcclComm_t comm, eng_coll_args_t *a, eng_block_t *blocks,
                            int on_gpu, int has_data, dfcclRequest_t *request_p)
{
    const int N = comm->nranks;
    uint64_t handle;
    struct dfccl_request *req = eng_request_new(&handle);
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
    a->epoch = (uint8_t)(comm->refusals[on_gpu] & 15u);
    /* a one-shot contribution must fit the FIFO depth of the smallest step of the daemon
     * that runs it (one chunk per step), an LL one one step twice over (its lines carry
     * flags); the net transport's proxy copies steps without 8-byte atomicity, so
     * communicators with net peers never use LL */
    const int any_net = comm->tp_used >> ENG_TP_UCX & 1;
    const uint64_t min_step = on_gpu ? eng_gpu_small_chunk(eng_config.oneshot_max, eng_config.ll_max,
                                                           eng_config.fifo_depth, eng_gpu_chunk(any_net))
                                     : eng_config.chunk_size;
    const uint64_t ll_max = any_net ? 0 : DFCCL_MIN(eng_config.ll_max, min_step / 2);
    /* the LL round split over the channels (eng_ll_wide) */
    const uint64_t ll_wide = eng_ll_wide(eng_ll_wide_max(eng_config.ll_wide_max, on_gpu, N), ll_max,
                                         on_gpu ? eng_gpu->comm_channels(comm->gpu) : comm->channels);
    /* below direct_ranks the ring's few hops beat the direct exchange's traffic */
    const uint64_t direct_max = any_net || (uint32_t)N < eng_config.direct_ranks ? 0 : eng_config.direct_max;
    /* (the direct exchange takes what the one-shot leaves only when it reaches that far) */
    const uint64_t oneshot_max =
        DFCCL_MIN(eng_oneshot_max(eng_config.oneshot_max, N, on_gpu && direct_max >= eng_config.oneshot_max),
                  min_step * eng_config.fifo_depth);
    /* the CPU daemon's one-shot reduces N buffers on one core where two-shot reduces one:
     * slower there (2 ranks, 64-256 KiB, 2 cores: 36-185 us against 27-93) */
    const uint32_t oneshot_ranks = on_gpu ? eng_config.oneshot_ranks : 0;
    /* the zero-copy read: never with net peers (their buffers are on another host) nor
     * with FIFOs of one step (its descriptor and reply take two, algo_read.h); auto on
     * host buffers only where every rank may read every other (comm.c) */
    const int read_off =
        any_net || eng_config.fifo_depth < 2 || (!on_gpu && eng_config.read_min == ENG_AUTO && !comm->cma);
    const uint64_t read_min = read_off ? 0 : eng_read_min(on_gpu, N);
    a->algo =
        (uint8_t)eng_algo_select(a, N, oneshot_max, ll_max, direct_max, oneshot_ranks, read_min, ll_wide);
    size_t nblocks = (size_t)N;
    eng_block_t desc;
    if (a->algo == ENG_ALGO_READ) {
        /* the export descriptor of sendbuf, as a one-entry table: the GPU's submission
         * entry has no room for it, and both daemons already carry a table */
        const uint64_t bytes =
            a->count * eng_type_size(a->dtype) * (a->coll == ENG_COLL_ALLTOALL ? (uint64_t)N : 1);
        nblocks = 1;
        if (on_gpu) {
            eng_gpu->read_export(comm->gpu, a->sendbuf, bytes, &desc);
            a->blocks = &desc; /* copied by submit */
        } else {
            if (!(blocks = (eng_block_t *)malloc(sizeof(*blocks)))) {
                eng_request_drop(req);
                return eng_set_error(dfcclNoMemory, fn, "no memory for a request");
            }
            eng_read_desc_cpu(blocks, a->sendbuf, bytes);
            a->blocks = blocks;
        }
    }
    if (on_gpu) {
        /* the GPU daemon reads a mapped copy of the table, made here */
        uint64_t seq = 0, t_submit = 0;
        dfcclResult_t r = eng_gpu->submit(comm->gpu, a, nblocks, &req->done_p, &req->result_p, &req->gpu_id,
                                          &seq, &t_submit);
        free(blocks);
        if (r != dfcclSuccess) {
            eng_request_drop(req);
            return r;
        }
        req->gpu_seq = seq;
        comm->stats.submitted++;
        eng_sig_publish(comm, 1, seq, a); /* the CPU daemon's are described at submission */
        if (eng_trace_on) {
            req->tkey = eng_trace_key(comm, seq, a, 1);
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

/* The communicator may take the call: not aborted here, nor by a peer (its mark in this
 * rank's segment: one load, sig.c), nor on a look at the peers' descriptions of a bcast or
 * scatter this rank was the root of (only after one). */
static dfcclResult_t comm_open_error(const char *fn, struct dfccl_comm *comm)
{
    dfcclResult_t r = eng_api_aborted_error(fn, comm);
    if (r == dfcclSuccess && DFCCL_UNLIKELY(eng_sig_marked(comm)) && eng_sig_adopt_mark(comm) != dfcclSuccess)
        r = eng_api_aborted_error(fn, comm);
    if (r == dfcclSuccess && DFCCL_UNLIKELY(eng_sig_unverified(comm)) && eng_sig_verify(comm) != dfcclSuccess)
        r = eng_api_aborted_error(fn, comm);
    return r;
}

/* The daemon whose collective a call of these buffers is (or would have been): the GPU
 * daemon's when either is device memory (or managed, on a communicator with a GPU part);
 * with neither, that of the latest call. */
static int refuse_gpu(const struct dfccl_comm *comm, const void *sendbuf, const void *recvbuf)
{
    if (!comm->gpu)
        return 0;
    return sendbuf || recvbuf
               ? (sendbuf && eng_gpu_buffer(sendbuf, 1)) || (recvbuf && eng_gpu_buffer(recvbuf, 1))
               : comm->last_on_gpu;
}

/* A call that failed after its communicator was found, not for an abort: described as
 * refused (sig.c), so that peers that make their part of it fail with its reason instead
 * of waiting for it. Among the collectives of the daemon its buffers would have picked
 * (none: the latest call's), as the peers' calls are. */
static dfcclResult_t refused(struct dfccl_comm *comm, dfcclResult_t r, const void *sendbuf,
                             const void *recvbuf)
{
    if (r == dfcclSuccess || !comm || dfccl_load_acquire(&comm->aborted))
        return r;
    eng_sig_refuse(comm, refuse_gpu(comm, sendbuf, recvbuf), dfcclGetLastError());
    return r;
}

dfcclResult_t dfcclCommRefuse(dfcclComm_t handle, const void *sendbuf, const void *recvbuf, const char *why)
{
    struct dfccl_comm *comm = eng_comm_get(handle);
    if (!comm)
        return DFCCL_ARG_ERROR("comm is not a live communicator (NULL or destroyed)");
    if (!why || !*why)
        return DFCCL_ARG_ERROR("why is NULL or empty");
    if (!dfccl_load_acquire(&comm->aborted)) /* aborted: nobody waits on its calls */
        eng_sig_refuse(comm, refuse_gpu(comm, sendbuf, recvbuf), why);
    return dfcclSuccess;
}

static dfcclResult_t submit_call(const char *fn, eng_coll_t coll, const void *sendbuf, void *recvbuf,
                                 size_t count, dfcclDataType_t datatype, dfcclRedOp_t op, int root,
                                 dfcclComm_t handle, dfcclRequest_t *request_p, struct dfccl_comm **comm_p)
{
    const int reduces = coll == ENG_COLL_ALLREDUCE || coll == ENG_COLL_REDUCE ||
                        coll == ENG_COLL_REDUCE_SCATTER || coll == ENG_COLL_SCAN || coll == ENG_COLL_EXSCAN;
    const int rooted = coll == ENG_COLL_REDUCE || coll == ENG_COLL_BCAST || coll == ENG_COLL_GATHER ||
                       coll == ENG_COLL_SCATTER;
    struct dfccl_comm *comm;
    dfcclResult_t r = eng_api_open_call(fn, handle, request_p, &comm);
    if (r != dfcclSuccess)
        return r;
    *comm_p = comm;
    if (coll != ENG_COLL_BARRIER && !eng_api_type_ok(datatype))
        return eng_set_error(dfcclInvalidArgument, fn, "datatype %d is not a dfcclDataType_t", (int)datatype);
    if (reduces && (r = eng_api_op_error(fn, datatype, op)) != dfcclSuccess)
        return r;
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
        if (coll == ENG_COLL_ALLTOALL &&
            eng_api_overlaps(sendbuf, bytes * (size_t)N, recvbuf, bytes * (size_t)N))
            return eng_api_overlap_error(fn,
                                         "sendbuf and recvbuf overlap (in-place all-to-all is not supported)",
                                         count, ts, sendbuf, bytes * (size_t)N, recvbuf, bytes * (size_t)N);
        if (coll == ENG_COLL_ALLGATHER && sendbuf != (char *)recvbuf + (size_t)me * bytes &&
            eng_api_overlaps(sendbuf, bytes, recvbuf, bytes * (size_t)N))
            return eng_api_overlap_error(fn, "sendbuf overlaps recvbuf but is not recvbuf + rank * sendcount",
                                         count, ts, sendbuf, bytes, recvbuf, bytes * (size_t)N);
        if (coll == ENG_COLL_REDUCE_SCATTER && recvbuf != (const char *)sendbuf + (size_t)me * bytes &&
            eng_api_overlaps(sendbuf, bytes * (size_t)N, recvbuf, bytes))
            return eng_api_overlap_error(fn, "recvbuf overlaps sendbuf but is not sendbuf + rank * recvcount",
                                         count, ts, sendbuf, bytes * (size_t)N, recvbuf, bytes);
        if (coll == ENG_COLL_GATHER && me == root && sendbuf != (char *)recvbuf + (size_t)root * bytes &&
            eng_api_overlaps(sendbuf, bytes, recvbuf, bytes * (size_t)N))
            return eng_api_overlap_error(fn, "sendbuf overlaps recvbuf but is not recvbuf + root * sendcount",
                                         count, ts, sendbuf, bytes, recvbuf, bytes * (size_t)N);
        if (coll == ENG_COLL_SCATTER && me == root &&
            recvbuf != (const char *)sendbuf + (size_t)root * bytes &&
            eng_api_overlaps(recvbuf, bytes, sendbuf, bytes * (size_t)N))
            return eng_api_overlap_error(fn, "recvbuf overlaps sendbuf but is not sendbuf + root * recvcount",
                                         count, ts, sendbuf, bytes * (size_t)N, recvbuf, bytes);
        /* allreduce, scan, reduce and bcast (at the root): in place means equal buffers;
         * a partial overlap would read data the collective already overwrote */
        const int same_size = coll == ENG_COLL_ALLREDUCE || coll == ENG_COLL_SCAN ||
                              coll == ENG_COLL_EXSCAN ||
                              ((coll == ENG_COLL_REDUCE || coll == ENG_COLL_BCAST) && me == root);
        if (same_size && sendbuf != recvbuf && eng_api_overlaps(sendbuf, bytes, recvbuf, bytes))
            return eng_api_overlap_error(
                fn, "sendbuf and recvbuf overlap partially (in place means sendbuf == recvbuf)", count, ts,
                sendbuf, bytes, recvbuf, bytes);
    }
    if ((r = comm_open_error(fn, comm)) != dfcclSuccess)
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
    if ((r = eng_api_kind_error(fn, comm, on_gpu,
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

static dfcclResult_t submit(const char *fn, eng_coll_t coll, const void *sendbuf, void *recvbuf, size_t count,
                            dfcclDataType_t datatype, dfcclRedOp_t op, int root, dfcclComm_t handle,
                            dfcclRequest_t *request_p)
{
    struct dfccl_comm *comm = NULL;
    const dfcclResult_t r =
        submit_call(fn, coll, sendbuf, recvbuf, count, datatype, op, root, handle, request_p, &comm);
    return refused(comm, r, sendbuf, recvbuf);
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

static dfcclResult_t submit_v_call(const char *fn, eng_coll_t coll, const eng_vargs_t *v, dfcclComm_t handle,
                                   dfcclRequest_t *request_p, struct dfccl_comm **comm_p)
{
    struct dfccl_comm *comm;
    dfcclResult_t r = eng_api_open_call(fn, handle, request_p, &comm);
    *comm_p = comm; /* a live one is told of the refusal too (a NULL request_p) */
    if (r != dfcclSuccess)
        return r;
    const int N = comm->nranks, me = comm->rank;
    const int rooted = coll == ENG_COLL_GATHERV || coll == ENG_COLL_SCATTERV;
    if (coll != ENG_COLL_ALLTOALLW && !eng_api_type_ok(v->datatype))
        return eng_set_error(dfcclInvalidArgument, fn, "datatype %d is not a dfcclDataType_t",
                             (int)v->datatype);
    if (rooted && (v->root < 0 || v->root >= N))
        return eng_set_error(dfcclInvalidArgument, fn, "root %d out of range [0, %d)", v->root, N);
    const int rsv = coll == ENG_COLL_REDUCE_SCATTERV;
    if (rsv && (r = eng_api_op_error(fn, v->datatype, v->op)) != dfcclSuccess)
        return r;
    /* the arrays this rank reads */
    const int root_side = rooted && me == v->root;
    const int a2a = coll == ENG_COLL_ALLTOALLV || coll == ENG_COLL_ALLTOALLW;
    const struct {
        const void *p;
        int used;
        const char *name;
    } arrays[] = {
        {v->rcounts, coll == ENG_COLL_ALLGATHERV || a2a || rsv || (coll == ENG_COLL_GATHERV && root_side),
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
    if ((r = comm_open_error(fn, comm)) != dfcclSuccess)
        return r;

    eng_block_t *b = malloc(sizeof(*b) * (size_t)N);
    if (!b)
        return eng_set_error(dfcclNoMemory, fn, "no memory for the %d-rank block table", N);
    r = eng_api_build_blocks(fn, coll, v, N, me, b);
    uint64_t slo, shi, rlo, rhi;
    eng_api_table_span(b, N, 0, &slo, &shi);
    eng_api_table_span(b, N, 1, &rlo, &rhi);
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
                bad = eng_api_overlaps((const char *)sendbuf + b[p].soff, b[p].sbytes, r0, rhi - rlo);
        }
        if (in_place && !bad && !rsv) /* the own block may not overlap another peer's receive
                                        block (reduce_scatterv: every block is received there) */
            for (int p = 0; p < N && !bad; p++)
                bad = p != me && eng_api_overlaps((const char *)recvbuf + b[p].roff, b[p].rbytes,
                                                  (const char *)recvbuf + own->roff, own->rbytes);
        const int s_ok = !bad || eng_api_range_mapped(s0, shi - slo),
                  r_ok = !bad || !s_ok || eng_api_range_mapped(r0, rhi - rlo);
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
        r = eng_api_kind_error(fn, comm, on_gpu, shi > slo && rhi > rlo && dev_send != dev_recv);
    if (r != dfcclSuccess) {
        free(b);
        return r;
    }
    uint64_t largest = 0; /* picks the channels this rank takes part on (eng_pair_chans) */
    for (int p = 0; p < N; p++)
        largest = DFCCL_MAX(largest, DFCCL_MAX(b[p].sbytes, b[p].rbytes));
    /* reduce_scatterv: every rank passes the same counts; a hash of them in the root's
     * place (the collective has none), part of its signature (eng_sig.h), so ranks whose
     * counts differ but whose largest block agrees never take each other's steps */
    uint64_t counts_hash = 1469598103934665603ull; /* FNV-1a */
    for (int p = 0; rsv && p < N; p++)
        counts_hash = (counts_hash ^ (uint64_t)v->rcounts[p]) * 1099511628211ull;
    eng_coll_args_t a = {.coll = (uint8_t)coll,
                         .dtype = (uint8_t)(coll == ENG_COLL_ALLTOALLW ? dfcclUint8 : v->datatype),
                         .op = (uint8_t)(rsv ? v->op : dfcclSum),
                         .count = largest,
                         .root = rooted ? v->root
                                 : rsv  ? (int32_t)((counts_hash ^ counts_hash >> 31) & 0x7fffffff)
                                        : 0,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf};
    return launch(fn, comm, &a, b, on_gpu, shi > slo || rhi > rlo, request_p);
}

static dfcclResult_t submit_v(const char *fn, eng_coll_t coll, const eng_vargs_t *v, dfcclComm_t handle,
                              dfcclRequest_t *request_p)
{
    struct dfccl_comm *comm = NULL;
    const dfcclResult_t r = submit_v_call(fn, coll, v, handle, request_p, &comm);
    return refused(comm, r, v->sendbuf, v->recvbuf);
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

dfcclResult_t dfcclReduceScatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                  dfcclDataType_t datatype, dfcclRedOp_t op, dfcclComm_t comm,
                                  dfcclRequest_t *request_p)
{
    const eng_vargs_t v = {
        .sendbuf = sendbuf, .recvbuf = recvbuf, .rcounts = recvcounts, .datatype = datatype, .op = op};
    return submit_v(__func__, ENG_COLL_REDUCE_SCATTERV, &v, comm, request_p);
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
