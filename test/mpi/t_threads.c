/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_threads: several host threads per rank, each submitting and waiting
 * collectives on its own communicator at the same time. Communicators are
 * created in the main thread; the threads make dfccl calls only (no MPI). Each
 * thread also makes a bad call now and then and checks that dfcclGetLastError()
 * names its own bad argument (the last error is per thread).
 *
 * usage: t_threads [--threads N] [--iters N]
 */
#include "test_common.h"

#include <pthread.h>

#define MAXT 16

typedef struct {
    int id;
    int iters;
    dfcclComm_t comm;
    int P, me;
    int failed;
    char why[256];
    size_t done;
} targ_t;

static void *worker(void *p)
{
    targ_t *a = p;
    static const tc_coll_t colls[] = {TC_ALLREDUCE,     TC_REDUCE,   TC_BCAST,  TC_ALLGATHER,
                                      TC_REDUCESCATTER, TC_ALLTOALL, TC_BARRIER};
    static const size_t sizes[] = {0, 1, 13, 1000, 5003, 33000, 150001};
    for (int it = 0; it < a->iters && !a->failed; it++) {
        /* same sequence on every rank: depends on the thread id and iteration only */
        tc_rng_t g;
        tc_rng_seed(&g, ((uint64_t)a->id << 32) ^ (uint64_t)it ^ 0x7417eadull);
        int nb = 1 + (int)tc_rng_below(&g, 3); /* 1..3 outstanding at once */
        tc_case_t cs[3];
        dfcclRequest_t rq[3];
        for (int b = 0; b < nb; b++) {
            tc_case_t *c = &cs[b];
            memset(c, 0, sizeof *c);
            c->coll = colls[tc_rng_below(&g, 7)];
            tc_random_type_op(&g, c->coll, &c->t, &c->op);
            c->count = sizes[tc_rng_below(&g, 7)];
            if (c->coll != TC_ALLREDUCE && c->coll != TC_BCAST && c->coll != TC_REDUCE && c->count > 40000)
                c->count /= (size_t)a->P;
            c->inplace = tc_coll_has_inplace(c->coll) ? (int)tc_rng_below(&g, 2) : 0;
            c->root = tc_coll_has_root(c->coll) ? (int)tc_rng_below(&g, (uint64_t)a->P) : 0;
            c->seed = tc_rng_next(&g);
            c->misalign = tc_rng_below(&g, 4) == 0;
            c->comm = a->comm;
            c->P = a->P;
            c->me = a->me;
            c->label = a->id;
            tc_case_setup(c);
            dfcclResult_t r = tc_case_submit_rc(c);
            if (r != dfcclSuccess) {
                snprintf(a->why, sizeof a->why, "thread %d iteration %d: submit %s returned %d (%s): %s",
                         a->id, it, tc_coll_names[c->coll], (int)r, dfcclGetErrorString(r),
                         dfcclGetLastError());
                a->failed = 1;
                return NULL; /* the process aborts: nothing to clean */
            }
            rq[b] = c->req;
        }
        /* a bad call of this thread's own kind; its message must be this thread's */
        {
            dfcclRequest_t bq = NULL;
            double bsend[8] = {1, 2, 3, 4, 5, 6, 7, 8}, brecv[8];
            const char *needle;
            dfcclResult_t r;
            switch (a->id % 3) {
            case 0:
                needle = "datatype";
                r = dfcclAllReduce(bsend, brecv, 1, (dfcclDataType_t)99, dfcclSum, a->comm, &bq);
                break;
            case 1:
                needle = "root";
                r = dfcclBroadcast(bsend, brecv, 1, dfcclInt8, a->P + 3, a->comm, &bq);
                break;
            default:
                needle = "op";
                r = dfcclAllReduce(bsend, brecv, 1, dfcclFloat32, dfcclBxor, a->comm, &bq);
                break;
            }
            sched_yield();
            if (r != dfcclInvalidArgument || !tc_lasterr_has(needle)) {
                snprintf(a->why, sizeof a->why,
                         "thread %d iteration %d: bad call returned %d, last error \"%s\" should name \"%s\"",
                         a->id, it, (int)r, dfcclGetLastError(), needle);
                a->failed = 1;
                return NULL;
            }
        }
        dfcclResult_t r = dfcclWaitAll(nb, rq);
        if (r != dfcclSuccess) {
            snprintf(a->why, sizeof a->why, "thread %d iteration %d: dfcclWaitAll returned %d (%s): %s",
                     a->id, it, (int)r, dfcclGetErrorString(r), dfcclGetLastError());
            a->failed = 1;
            return NULL;
        }
        for (int b = 0; b < nb; b++) {
            if (tc_case_check(&cs[b])) {
                snprintf(a->why, sizeof a->why, "thread %d iteration %d: %s %s %s count=%zu wrong", a->id, it,
                         tc_coll_names[cs[b].coll], tc_type_name(cs[b].t), tc_op_name(cs[b].op), cs[b].count);
                a->failed = 1;
            }
            tc_case_free(&cs[b]);
            a->done++;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tc_init_world();
    int nt = 2, iters = 40;
    if (tc_arg_value(argc, argv, "--threads"))
        nt = atoi(tc_arg_value(argc, argv, "--threads"));
    if (tc_arg_value(argc, argv, "--iters"))
        iters = atoi(tc_arg_value(argc, argv, "--iters"));
    if (nt < 1)
        nt = 1;
    if (nt > MAXT)
        nt = MAXT;

    /* communicators: created in the main thread, before the threads start (works
     * whatever thread level MPI provides, since the threads never call MPI) */
    MPI_Comm mc[MAXT];
    targ_t args[MAXT];
    memset(args, 0, sizeof args);
    for (int t = 0; t < nt; t++) {
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mc[t]));
        CHECK(dfcclCommInitMPI(&args[t].comm, mc[t]));
        CHECK(dfcclCommRank(args[t].comm, &args[t].me));
        CHECK(dfcclCommSize(args[t].comm, &args[t].P));
        args[t].id = t;
        args[t].iters = iters;
    }

    double t0 = MPI_Wtime();
    pthread_t th[MAXT];
    for (int t = 0; t < nt; t++)
        if (pthread_create(&th[t], NULL, worker, &args[t]) != 0)
            TC_FAIL("pthread_create failed");
    for (int t = 0; t < nt; t++)
        pthread_join(th[t], NULL);
    double dt = MPI_Wtime() - t0;

    size_t total = 0;
    for (int t = 0; t < nt; t++) {
        if (args[t].failed)
            TC_FAIL("%s", args[t].why);
        total += args[t].done;
        dfcclStats_t st;
        CHECK(dfcclCommGetStats(args[t].comm, &st));
        if (st.completed != args[t].done || st.submitted != args[t].done)
            TC_FAIL("thread %d: stats submitted=%llu completed=%llu, expected %zu", t,
                    (unsigned long long)st.submitted, (unsigned long long)st.completed, args[t].done);
    }
    for (int t = 0; t < nt; t++) {
        CHECK(dfcclCommDestroy(args[t].comm));
        MPI_Comm_free(&mc[t]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (tc_rank == 0) {
        printf("t_threads: %d threads x %d iterations, %zu collectives, %.2f s, MPI thread level %d, np=%d\n",
               nt, iters, total, dt, provided, tc_size);
        printf("OK\n");
    }
    MPI_Finalize();
    return 0;
}
