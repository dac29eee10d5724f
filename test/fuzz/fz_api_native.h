/* SPDX-License-Identifier: BSD-3-Clause */
/* The deadlock fuzzer over the native API (fz_native, fz_native_dev; fuzz.h): its
 * communicators, each collective's dfccl call and the ways to wait for a group of them.
 * fz_api_mpi.h is the same over plain MPI. */
#ifndef DFCCL_FZ_API_NATIVE_H
#define DFCCL_FZ_API_NATIVE_H

#include "fuzz.h"

#define FZ_OK dfcclSuccess

static dfcclComm_t dcomm[FZ_MAXCOMM];

static int fz_submit(fz_run_t *x)
{
    const fz_op_t *o = x->o;
    dfcclComm_t cm = dcomm[o->comm];
    dfcclRequest_t *q = &x->req;
    size_t n = o->n;
    dfcclResult_t r;
    switch (o->coll) {
    case FZ_ALLREDUCE: r = dfcclAllReduce(x->sendp, x->recvp, n, o->t, o->op, cm, q); break;
    case FZ_REDUCE: r = dfcclReduce(x->sendp, x->recvp, n, o->t, o->op, o->root, cm, q); break;
    case FZ_BCAST: r = dfcclBroadcast(x->sendp, x->recvp, n, o->t, o->root, cm, q); break;
    case FZ_ALLGATHER: r = dfcclAllGather(x->sendp, x->recvp, n, o->t, cm, q); break;
    case FZ_REDUCESCATTER: r = dfcclReduceScatter(x->sendp, x->recvp, n, o->t, o->op, cm, q); break;
    case FZ_ALLTOALL: r = dfcclAllToAll(x->sendp, x->recvp, n, o->t, cm, q); break;
    case FZ_BARRIER: r = dfcclBarrier(cm, q); break;
    case FZ_GATHER: r = dfcclGather(x->sendp, x->recvp, n, o->t, o->root, cm, q); break;
    case FZ_SCATTER: r = dfcclScatter(x->sendp, x->recvp, n, o->t, o->root, cm, q); break;
    case FZ_GATHERV:
        r = dfcclGatherv(x->sendp, x->c[x->me], x->recvp, x->c, x->d, o->t, o->root, cm, q);
        break;
    case FZ_SCATTERV:
        r = dfcclScatterv(x->sendp, x->c, x->d, x->recvp, x->c[x->me], o->t, o->root, cm, q);
        break;
    case FZ_ALLGATHERV: r = dfcclAllGatherv(x->sendp, x->c[x->me], x->recvp, x->c, x->d, o->t, cm, q); break;
    case FZ_ALLTOALLV: r = dfcclAllToAllv(x->sendp, x->c, x->d, x->recvp, x->rc, x->rd, o->t, cm, q); break;
    case FZ_REDUCESCATTERV: r = dfcclReduceScatterv(x->sendp, x->recvp, x->c, o->t, o->op, cm, q); break;
    default: r = dfcclInternalError; break;
    }
    if (r == dfcclSuccess && o->blocking)
        r = dfcclWait(q);
    return (int)r;
}

static const char *fz_errstr(int rc)
{
    static _Thread_local char s[512];
    snprintf(s, sizeof s, "%s: %s", dfcclGetErrorString((dfcclResult_t)rc), dfcclGetLastError());
    return s;
}

static int fz_wait_group(fz_run_t **xs, int k, int how)
{
    dfcclRequest_t q[64];
    int rc = dfcclSuccess;
    if (how == 0 || k == 1) {
        for (int i = 0; i < k; i++) {
            int r = dfcclWait(&xs[i]->req);
            if (rc == dfcclSuccess)
                rc = r;
        }
    } else if (how == 1) {
        for (int i = 0; i < k; i++)
            q[i] = xs[i]->req;
        rc = dfcclWaitAll(k, q);
        for (int i = 0; i < k; i++)
            xs[i]->req = NULL;
    } else {
        int left = k;
        while (left > 0) {
            left = 0;
            for (int i = 0; i < k; i++) {
                int done = 0;
                if (!xs[i]->req)
                    continue;
                int r = dfcclTest(&xs[i]->req, &done);
                if (r != dfcclSuccess && rc == dfcclSuccess)
                    rc = r;
                left += !done;
            }
            if (left)
                sched_yield();
        }
    }
    return rc;
}

/* communicator k of the program: a dfccl communicator over mc, which is freed */
static void fz_comm_adopt(int k, MPI_Comm mc)
{
    CHECK(dfcclCommInitMPI(&dcomm[k], mc));
    MPI_Comm_free(&mc);
}

static void fz_comm_release(int k)
{
    dfcclResult_t r = dfcclCommDestroy(dcomm[k]);
    if (r != dfcclSuccess && !prog.kill)
        TC_FAIL("dfcclCommDestroy(comm %d) returned %d: %s", k, (int)r, fz_errstr(r));
}

#endif /* DFCCL_FZ_API_NATIVE_H */
