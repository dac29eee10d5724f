/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_chaos: the chaos-order scenario.
 *   8 communicators (MPI_Comm_dup of world, one dfccl communicator each), one float32
 *   sum allreduce on each, of {256, 147456, 2048, 1024, 65536, 147456, 524288,
 *   1048576} elements; every rank submits the eight in a different permutation
 *   (seeded by rank and iteration), then waits for all of them and checks results.
 *   With preemption this completes; with DFCCL_PREEMPT=0 it deadlocks (the suite's
 *   hang proof runs it with --deadline).
 *
 * usage: t_chaos [ITERATIONS] [--iters N] [--deadline SEC] [--expect-timeout] [--ll-sizes]
 *   --ll-sizes        allreduces of 1025-6000 elements instead (4.1-24 KB: with
 *                     DFCCL_LL_WIDE_MAX=32768 on 3 channels, every one an LL round split
 *                     over the channels, so the hang proof's waits are that round's)
 *   --deadline SEC    poll with dfcclTest; if an iteration is not complete after SEC
 *                     s, print "HANG: not complete after SEC s" plus the incomplete
 *                     requests and _exit(3).
 *   --expect-timeout  (run with DFCCL_PREEMPT=0 and DFCCL_TIMEOUT set) the first
 *                     iteration must fail with dfcclTimeout on every rank; then the
 *                     communicators are destroyed and the program ends with OK.
 */
#include "test_common.h"

#define NCOMM 8
static const size_t chaos_sizes[NCOMM] = {256, 147456, 2048, 1024, 65536, 147456, 524288, 1048576};
static const size_t ll_sizes[NCOMM] = {1025, 1100, 1536, 2048, 3000, 4000, 5000, 6000};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    int iters = 20, expect_timeout = 0;
    double deadline = 0;
    const size_t *sizes = chaos_sizes;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--expect-timeout"))
            expect_timeout = 1;
        else if (!strcmp(argv[i], "--ll-sizes"))
            sizes = ll_sizes;
        else if (!strcmp(argv[i], "--deadline") && i + 1 < argc)
            deadline = atof(argv[++i]);
        else if (argv[i][0] != '-')
            iters = atoi(argv[i]);
    }

    MPI_Comm mc[NCOMM];
    dfcclComm_t dc[NCOMM];
    for (int k = 0; k < NCOMM; k++) {
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mc[k]));
        CHECK(dfcclCommInitMPI(&dc[k], mc[k]));
    }

    float *send[NCOMM], *recv[NCOMM], *exp[NCOMM];
    for (int k = 0; k < NCOMM; k++) {
        send[k] = tc_malloc(sizes[k] * sizeof(float));
        recv[k] = tc_malloc(sizes[k] * sizeof(float));
        exp[k] = tc_malloc(sizes[k] * sizeof(float));
    }

    double t0 = MPI_Wtime();
    int iters_done = 0;
    for (int it = 0; it < iters; it++) {
        int perm[NCOMM];
        for (int k = 0; k < NCOMM; k++)
            perm[k] = k;
        tc_rng_t g;
        tc_rng_seed(&g, ((uint64_t)tc_rank << 32) ^ (uint64_t)it ^ 0xc4a05ull);
        tc_shuffle_int(&g, perm, NCOMM);

        dfcclRequest_t reqs[NCOMM];
        char names[NCOMM][96];
        const char *np[NCOMM];
        for (int j = 0; j < NCOMM; j++) {
            int k = perm[j];
            uint64_t seed = ((uint64_t)it << 8) | (uint64_t)k;
            tc_fill(send[k], dfcclFloat32, dfcclSum, seed, tc_rank, 0, sizes[k]);
            tc_poison(recv[k], sizes[k] * sizeof(float));
            CHECK(dfcclAllReduce(send[k], recv[k], sizes[k], dfcclFloat32, dfcclSum, dc[k], &reqs[j]));
            snprintf(names[j], sizeof names[j],
                     "iteration %d, submitted #%d: comm#%d allreduce of %zu floats", it, j, k, sizes[k]);
            np[j] = names[j];
        }
        dfcclResult_t r = tc_wait_deadline(NCOMM, reqs, deadline, np);
        if (expect_timeout) {
            /* every request is complete (freed) here, whatever its result */
            for (int j = 0; j < NCOMM; j++)
                if (reqs[j] != NULL)
                    TC_FAIL("request %d not NULL after the wait", j);
            if (r != dfcclTimeout)
                TC_FAIL("iteration %d: expected dfcclTimeout (%d), the wait returned %d (%s): %s", it,
                        (int)dfcclTimeout, (int)r, dfcclGetErrorString(r), dfcclGetLastError());
            printf("t_chaos: rank %d: wait returned dfcclTimeout as expected after %.2f s\n", tc_rank,
                   MPI_Wtime() - t0);
            break;
        }
        if (r != dfcclSuccess)
            TC_FAIL("iteration %d: wait returned %d (%s): %s", it, (int)r, dfcclGetErrorString(r),
                    dfcclGetLastError());
        iters_done++;
        for (int k = 0; k < NCOMM; k++) {
            uint64_t seed = ((uint64_t)it << 8) | (uint64_t)k;
            tc_ref_reduce(exp[k], dfcclFloat32, dfcclSum, seed, tc_size, 0, sizes[k]);
            char extra[64];
            snprintf(extra, sizeof extra, "comm#%d iteration=%d", k, it);
            if (tc_compare("allreduce", dfcclFloat32, dfcclSum, sizes[k], extra, recv[k], exp[k], sizes[k]))
                tc_abort();
        }
    }
    double dt = MPI_Wtime() - t0;

    for (int k = 0; k < NCOMM && !expect_timeout; k++) {
        dfcclStats_t st;
        CHECK(dfcclCommGetStats(dc[k], &st));
        if (st.completed != (uint64_t)iters || st.submitted != (uint64_t)iters)
            TC_FAIL("comm#%d: stats submitted=%llu completed=%llu, expected %d", k,
                    (unsigned long long)st.submitted, (unsigned long long)st.completed, iters);
        if (tc_rank == 0)
            printf("t_chaos: comm#%d count=%-8zu preemptions=%llu stalls=%llu stall_ms=%.1f\n", k, sizes[k],
                   (unsigned long long)st.preemptions, (unsigned long long)st.stalls,
                   (double)st.stall_ns / 1e6);
    }
    for (int k = 0; k < NCOMM; k++) {
        CHECK(dfcclCommDestroy(dc[k]));
        MPI_Comm_free(&mc[k]);
        free(send[k]);
        free(recv[k]);
        free(exp[k]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (tc_rank == 0) {
        printf("t_chaos: %d iterations x %d communicators in %.2f s, np=%d\n", iters_done, NCOMM, dt,
               tc_size);
        printf("OK\n");
    }
    MPI_Finalize();
    return 0;
}
