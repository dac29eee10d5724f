/* SPDX-License-Identifier: BSD-3-Clause */
/* The deadlock fuzzer over plain MPI (fz_mpi, -DFZ_MPI; fuzz.h): its communicators, each
 * collective's MPI call and the ways to wait for a group of them. fz_api_native.h is the
 * same over the native API. */
#ifndef DFCCL_FZ_API_MPI_H
#define DFCCL_FZ_API_MPI_H

#include "fuzz.h"

#define FZ_OK MPI_SUCCESS

static MPI_Comm mcomm[FZ_MAXCOMM];

/* MPI_I<coll> (blocking: the blocking call, completed on return) */
static int fz_submit(fz_run_t *x)
{
    const fz_op_t *o = x->o;
    MPI_Comm cm = mcomm[o->comm];
    MPI_Datatype dt = dfcclMpiDatatype(o->t);
    MPI_Op op = dfcclMpiOp(o->op);
    int n = (int)o->n, b = o->blocking, P = x->P;
    /* MPI reads a non-blocking call's arrays until it completes: they live in x */
    int *c = x->ic, *d = x->id, *rc = x->irc, *rd = x->ird;
    for (int r = 0; r < P; r++) {
        c[r] = (int)x->c[r];
        d[r] = (int)x->d[r];
        rc[r] = (int)x->rc[r];
        rd[r] = (int)x->rd[r];
    }
    const void *sp = o->inplace ? MPI_IN_PLACE : x->sendp;
    void *rp = x->recvp;
    MPI_Request *q = &x->req;
    x->req = MPI_REQUEST_NULL;
    switch (o->coll) {
    case FZ_ALLREDUCE:
        return b ? MPI_Allreduce(sp, rp, n, dt, op, cm) : MPI_Iallreduce(sp, rp, n, dt, op, cm, q);
    case FZ_REDUCE:
        return b ? MPI_Reduce(sp, rp, n, dt, op, o->root, cm)
                 : MPI_Ireduce(sp, rp, n, dt, op, o->root, cm, q);
    case FZ_BCAST: return b ? MPI_Bcast(rp, n, dt, o->root, cm) : MPI_Ibcast(rp, n, dt, o->root, cm, q);
    case FZ_ALLGATHER:
        return b ? MPI_Allgather(sp, n, dt, rp, n, dt, cm) : MPI_Iallgather(sp, n, dt, rp, n, dt, cm, q);
    case FZ_REDUCESCATTER:
        return b ? MPI_Reduce_scatter_block(sp, rp, n, dt, op, cm)
                 : MPI_Ireduce_scatter_block(sp, rp, n, dt, op, cm, q);
    case FZ_ALLTOALL:
        return b ? MPI_Alltoall(sp, n, dt, rp, n, dt, cm) : MPI_Ialltoall(sp, n, dt, rp, n, dt, cm, q);
    case FZ_BARRIER: return b ? MPI_Barrier(cm) : MPI_Ibarrier(cm, q);
    case FZ_GATHER:
        return b ? MPI_Gather(sp, n, dt, rp, n, dt, o->root, cm)
                 : MPI_Igather(sp, n, dt, rp, n, dt, o->root, cm, q);
    case FZ_SCATTER:
        return b ? MPI_Scatter(sp, n, dt, rp, n, dt, o->root, cm)
                 : MPI_Iscatter(sp, n, dt, rp, n, dt, o->root, cm, q);
    case FZ_GATHERV:
        return b ? MPI_Gatherv(sp, c[x->me], dt, rp, c, d, dt, o->root, cm)
                 : MPI_Igatherv(sp, c[x->me], dt, rp, c, d, dt, o->root, cm, q);
    case FZ_SCATTERV:
        return b ? MPI_Scatterv(sp, c, d, dt, rp, c[x->me], dt, o->root, cm)
                 : MPI_Iscatterv(sp, c, d, dt, rp, c[x->me], dt, o->root, cm, q);
    case FZ_ALLGATHERV:
        return b ? MPI_Allgatherv(sp, c[x->me], dt, rp, c, d, dt, cm)
                 : MPI_Iallgatherv(sp, c[x->me], dt, rp, c, d, dt, cm, q);
    case FZ_ALLTOALLV:
        return b ? MPI_Alltoallv(sp, c, d, dt, rp, rc, rd, dt, cm)
                 : MPI_Ialltoallv(sp, c, d, dt, rp, rc, rd, dt, cm, q);
    case FZ_REDUCESCATTERV:
        return b ? MPI_Reduce_scatter(sp, rp, c, dt, op, cm) : MPI_Ireduce_scatter(sp, rp, c, dt, op, cm, q);
    default: return MPI_ERR_OTHER;
    }
}

static const char *fz_errstr(int rc)
{
    static _Thread_local char s[MPI_MAX_ERROR_STRING];
    int l = 0;
    MPI_Error_string(rc, s, &l);
    return s;
}

/* wait for a group of collectives in one of three ways */
static int fz_wait_group(fz_run_t **xs, int k, int how)
{
    MPI_Request q[64];
    int rc = MPI_SUCCESS;
    /* kill programs wait for every request of the group, failed or not: the buffers of
     * one still in flight are freed after this (a failed request stays allocated: MPI
     * frees none that failed) */
    if (how == 0 || k == 1) {
        for (int i = 0; i < k && (rc == MPI_SUCCESS || prog.kill); i++) {
            const int r = MPI_Wait(&xs[i]->req, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = r;
        }
    } else if (how == 1) {
        for (int i = 0; i < k; i++)
            q[i] = xs[i]->req;
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
        /* Open MPI 4.1's MPI_Waitall never returns under MPI_THREAD_MULTIPLE when one of
         * its requests has already failed: it skips the wait and then spins for ever in
         * WAIT_SYNC_RELEASE on a flag only a wait clears (ompi/request/req_wait.c; fixed
         * in 5.0). Only kill programs fail requests: they wait with MPI_Testall. */
        if (prog.kill) {
            int all = 0;
            while (!all && (rc = MPI_Testall(k, q, &all, MPI_STATUSES_IGNORE)) == MPI_SUCCESS)
                if (!all)
                    sched_yield();
        } else
#endif
            rc = MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
    } else {
        int left = k, over[64] = {0};
        while (left > 0 && (rc == MPI_SUCCESS || prog.kill)) {
            left = 0;
            for (int i = 0; i < k && (rc == MPI_SUCCESS || prog.kill); i++) {
                int done = 0;
                if (over[i] || xs[i]->req == MPI_REQUEST_NULL)
                    continue;
                const int r = MPI_Test(&xs[i]->req, &done, MPI_STATUS_IGNORE);
                if (r != MPI_SUCCESS)
                    done = 1; /* failed: complete, and left allocated by MPI */
                if (rc == MPI_SUCCESS)
                    rc = r;
                over[i] = done;
                left += !done;
            }
            if (left)
                sched_yield();
        }
    }
    return rc;
}

/* communicator k of the program is mc from now on */
static void fz_comm_adopt(int k, MPI_Comm mc)
{
    mcomm[k] = mc;
}

static void fz_comm_release(int k)
{
    MPI_CHECK(MPI_Comm_free(&mcomm[k]));
}

#endif /* DFCCL_FZ_API_MPI_H */
