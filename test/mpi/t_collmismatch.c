/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_collmismatch: the last rank calls one collective differently from the others (or its
 * call is refused by the argument check while the others make theirs), with the default
 * settings. Before the in-band signatures (docs/usage.md, "Mismatched collectives") the
 * count, root and kind cases hung and the op, datatype and bcast-root ones returned wrong
 * data. Now every rank must get an error within seconds, at the mismatched call or at its
 * very next call on the communicator (a rank whose part needs nothing from a mismatched
 * peer completes its part), the message naming the difference; every later call is
 * refused with that reason; nothing hangs (each wait has a deadline: HANG and exit 3);
 * another communicator, and a new one, work.
 *
 * usage: t_collmismatch CASE [--elems N]
 *   CASE: count, reduce-root, bcast-root, kind (allreduce against bcast), op, datatype,
 *         vcounts (reduce_scatterv: the last rank puts the largest block at rank 1, the
 *         others at rank 0: same largest, other counts),
 *         refused (the last rank passes a NULL recvbuf), none (no mismatch: all succeed),
 *         refused-all (every rank passes a NULL recvbuf, then rank 0 makes its next call
 *         100 ms after the others: no error, the communicator stays usable),
 *         commrefuse (the last rank makes no call: dfcclCommRefuse says why, as the MPI
 *         component does when its own preparation of a call fails; its peers must fail
 *         with that reason instead of waiting for it),
 *         refused-ahead (the last rank's call is refused and it makes its next one at
 *         once, 100 ms before the others make theirs: its next call has the number the
 *         refused one would have had, and must not complete with the others' call, whose
 *         arguments are the same; before the epoch in the signature every rank
 *         succeeded, each pairing a different call),
 *         two-roots (the last rank passes itself as a bcast's root, the others rank 0:
 *         both roots only send and every rank completes the bcast; the roots find it at
 *         their next call, the others from their mark. Over UCX, DFCCL_NET=ucx, the next
 *         calls may complete until one reuses the bcast's connections, stalls on the step
 *         left there and names the bcast: up to 16 calls are made),
 *         memkind (the last rank passes host memory, the others device memory: with
 *         -DTM_DEVICE only, else SKIP)
 *   --elems N: elements of the collective (default 64: an LL round; 65536: the ring and
 *         the chain)
 * Built with -DTM_DEVICE (t_collmismatch_dev): the mismatched collective and the calls
 * after it take device buffers (the GPU daemon; the checked allreduces stay on the host).
 */
#ifdef TM_DEVICE
#include <cuda_runtime.h>
#endif
#include "test_common.h"
#ifdef TM_DEVICE
#include "../tc_cuda.h" /* tc_cuda_pick */
#endif

#define DEADLINE_S 20.0

/* The case's collective as this rank calls it; the request, or the call's error. */
static dfcclResult_t call_case(const char *mode, int odd, int32_t *s, int32_t *r, size_t n, dfcclComm_t c,
                               dfcclRequest_t *q)
{
    if (!strcmp(mode, "two-roots"))
        return dfcclBroadcast(s, r, n, dfcclInt32, odd ? tc_rank : 0, c, q);
    if (!strcmp(mode, "count"))
        return dfcclAllReduce(s, r, odd ? n + 1 : n, dfcclInt32, dfcclSum, c, q);
    if (!strcmp(mode, "reduce-root"))
        return dfcclReduce(s, r, n, dfcclInt32, dfcclSum, odd ? 1 : 0, c, q);
    if (!strcmp(mode, "bcast-root"))
        return dfcclBroadcast(s, r, n, dfcclInt32, odd ? 1 : 0, c, q);
    if (!strcmp(mode, "kind"))
        return odd ? dfcclBroadcast(s, r, n, dfcclInt32, 0, c, q)
                   : dfcclAllReduce(s, r, n, dfcclInt32, dfcclSum, c, q);
    if (!strcmp(mode, "op"))
        return dfcclAllReduce(s, r, n, dfcclInt32, odd ? dfcclMax : dfcclSum, c, q);
    if (!strcmp(mode, "datatype"))
        return dfcclAllReduce(s, r, n, odd ? dfcclFloat32 : dfcclInt32, dfcclSum, c, q);
    if (!strcmp(mode, "refused") || !strcmp(mode, "refused-ahead"))
        return dfcclAllReduce(s, odd ? NULL : r, n, dfcclInt32, dfcclSum, c, q);
    if (!strcmp(mode, "refused-all"))
        return dfcclAllReduce(s, NULL, n, dfcclInt32, dfcclSum, c, q);
    if (!strcmp(mode, "vcounts")) { /* the same largest block, in another rank's place */
        size_t cnt[64];
        for (int p = 0; p < tc_size && p < 64; p++)
            cnt[p] = p == (odd ? 1 : 0) ? n / 2 : n / (2 * (size_t)tc_size);
        return dfcclReduceScatterv(s, r, cnt, dfcclInt32, dfcclSum, c, q);
    }
    return dfcclAllReduce(s, r, n, dfcclInt32, dfcclSum, c, q);
}

/* What every rank's error must say. */
static const char *expected_reason(const char *mode)
{
    if (!strcmp(mode, "count") || !strcmp(mode, "vcounts"))
        return "the counts differ";
    if (!strcmp(mode, "reduce-root") || !strcmp(mode, "bcast-root") || !strcmp(mode, "two-roots"))
        return "the roots differ";
    if (!strcmp(mode, "memkind"))
        return "the memory kinds differ";
    if (!strcmp(mode, "kind"))
        return "the collectives differ";
    if (!strcmp(mode, "op"))
        return "the ops differ";
    if (!strcmp(mode, "datatype"))
        return "the datatypes differ";
    if (!strcmp(mode, "commrefuse"))
        return "refused its call (its allreduce found no memory for a temporary)";
    return "refused its call";
}

static dfcclResult_t wait_deadline(dfcclRequest_t *q, const char *what)
{
    const char *names[1] = {what};
    return tc_wait_deadline(1, q, DEADLINE_S, names);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    const char *mode = argc > 1 ? argv[1] : "";
    const char *ev = tc_arg_value(argc, argv, "--elems");
    const size_t n = ev ? (size_t)strtoull(ev, NULL, 10) : 64;
    const int all_refused = !strcmp(mode, "refused-all");
    const int ahead = !strcmp(mode, "refused-ahead");
    const int crefuse = !strcmp(mode, "commrefuse");
    const int none = !strcmp(mode, "none") || all_refused,
              refused = !strcmp(mode, "refused") || ahead || crefuse;
    if (tc_size < 2) {
        printf("SKIP: needs 2 ranks or more\n");
        MPI_Finalize();
        return 0;
    }
    const int odd = tc_rank == tc_size - 1;
    const int memkind = !strcmp(mode, "memkind"), two_roots = !strcmp(mode, "two-roots");
    const char *net = getenv("DFCCL_NET");
    /* calls after the mismatched one until the error: 1, but over UCX two roots are found
     * by the stall of the first call that reuses the bcast's connections */
    const int max_next = two_roots && net && !strcmp(net, "ucx") ? 16 : 1;
#ifndef TM_DEVICE
    if (memkind) {
        if (tc_rank == 0)
            printf("SKIP: memkind needs device buffers (t_collmismatch_dev)\n");
        MPI_Finalize();
        return 0;
    }
#else
    tc_cuda_pick(tc_rank, "SKIP: no CUDA device", 0, NULL);
#endif
    dfcclComm_t A, B;
    CHECK(dfcclCommInitMPI(&A, MPI_COMM_WORLD));
    CHECK(dfcclCommInitMPI(&B, MPI_COMM_WORLD));
    tc_checked_allreduce(A, "allreduce before the mismatch");

    int32_t *hs = tc_malloc((n + 1) * sizeof(int32_t)), *s = hs, *r = tc_malloc((n + 1) * sizeof(int32_t));
    for (size_t i = 0; i <= n; i++)
        hs[i] = tc_rank + 1;
#ifdef TM_DEVICE
    int32_t *hr = r;
    if (cudaMalloc((void **)&s, (n + 1) * sizeof(int32_t)) != cudaSuccess ||
        cudaMalloc((void **)&r, (n + 1) * sizeof(int32_t)) != cudaSuccess ||
        cudaMemcpy(s, hs, (n + 1) * sizeof(int32_t), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaStreamSynchronize(0) != cudaSuccess)
        TC_FAIL("device buffers of %zu elements", n + 1);
#endif
    const char *reason = expected_reason(mode);
    char msg[1024] = "";
    int where = 0; /* 1: the mismatched call failed here, 2: the next one, 0: none */

    const double t0 = MPI_Wtime();
    dfcclRequest_t q = NULL;
    if (ahead && !odd)
        tc_sleep_us(100000);
    dfcclResult_t rc;
    if (crefuse && odd) {
        /* the buffers the allreduce would have passed pick its daemon, as the peers' do */
        CHECK(dfcclCommRefuse(A, s, r, "its allreduce found no memory for a temporary"));
        rc = dfcclInvalidArgument; /* what the refused call's caller had, to the check below */
    } else {
#ifdef TM_DEVICE
        /* memkind: the last rank's buffers are host memory (the CPU daemon), the others'
         * device memory (the GPU daemon) */
        rc = call_case(mode, odd, memkind && odd ? hs : s, memkind && odd ? hr : r, n, A, &q);
#else
        rc = call_case(mode, odd, s, r, n, A, &q);
#endif
    }
    if ((refused && odd) || all_refused) {
        if (rc != dfcclInvalidArgument)
            TC_FAIL("%s: the NULL recvbuf gave %d (%s), expected dfcclInvalidArgument", mode, (int)rc,
                    dfcclGetErrorString(rc));
        rc = dfcclSuccess; /* its own error is the argument's: what matters is the next call */
        if (ahead) {
            /* the next call, before the others make the one refused here */
            rc = dfcclAllReduce(s, r, n, dfcclInt32, dfcclSum, A, &q);
            if (rc == dfcclSuccess)
                rc = wait_deadline(&q, "the call right after the refused one");
            where = 1;
            snprintf(msg, sizeof msg, "%s", dfcclGetLastError());
            if (rc != dfcclMismatch && rc != dfcclCommAborted)
                TC_FAIL(
                    "refused-ahead: the call after the refused one returned %d (%s), expected a mismatch: %s",
                    (int)rc, dfcclGetErrorString(rc), msg);
        }
        if (all_refused) {
            /* the others make their next call first and wait on rank 0 past the diagnosis's
             * 10 ms, while its description of that collective still says refused */
            if (tc_rank == 0)
                tc_sleep_us(100000);
            rc = dfcclAllReduce(s, r, n, dfcclInt32, dfcclSum, A, &q);
            if (rc == dfcclSuccess)
                rc = wait_deadline(&q, "the call after a call every rank refused");
            if (rc != dfcclSuccess)
                TC_FAIL("refused-all: the next call returned %d: %s", (int)rc, dfcclGetLastError());
        }
    } else if (rc != dfcclSuccess) {
        /* a rank slower to call than its peers were to find the mismatch: refused at once,
         * with the reason */
        where = 1;
        snprintf(msg, sizeof msg, "%s", dfcclGetLastError());
        if (none || (rc != dfcclCommAborted && rc != dfcclMismatch))
            TC_FAIL("%s: the call returned %d (%s): %s", mode, (int)rc, dfcclGetErrorString(rc), msg);
    } else {
        rc = wait_deadline(&q, mode);
        if (rc != dfcclSuccess) {
            where = 1;
            snprintf(msg, sizeof msg, "%s", dfcclGetLastError());
            if (rc != dfcclMismatch)
                TC_FAIL("%s: the wait returned %d (%s), expected dfcclMismatch: %s", mode, (int)rc,
                        dfcclGetErrorString(rc), msg);
        }
    }
    const double dt = MPI_Wtime() - t0;
    /* everyone is back (those that failed, and those whose part completed) */
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    /* the next call: refused with the reason where the mismatched one completed (or
     * where it did not fail yet); refused as aborted everywhere else */
    int next = 0;
    do {
        rc = dfcclAllReduce(s, r, n, dfcclInt32, dfcclSum, A, &q);
        if (rc == dfcclSuccess)
            rc = wait_deadline(&q, "the next allreduce");
    } while (rc == dfcclSuccess && ++next < max_next);
    if (none) {
        if (rc != dfcclSuccess || where)
            TC_FAIL("none: an error without a mismatch: %s", dfcclGetLastError());
    } else {
        if (rc != dfcclCommAborted && rc != dfcclMismatch)
            TC_FAIL("%s: the call after the mismatch returned %d (%s), expected an abort: %s", mode, (int)rc,
                    dfcclGetErrorString(rc), dfcclGetLastError());
        if (!where) {
            where = 2;
            snprintf(msg, sizeof msg, "%s", dfcclGetLastError());
        }
        if (!strstr(msg, reason))
            TC_FAIL("%s: the error does not say '%s': %s", mode, reason, msg);
        if (where == 1 && dt > 5.0)
            TC_FAIL("%s: the mismatch took %.1f s to be found", mode, dt);
        /* and again: every later call is refused */
        rc = dfcclBarrier(A, &q);
        if (rc != dfcclCommAborted || !tc_lasterr_has(reason))
            TC_FAIL("%s: a later barrier returned %d: %s", mode, (int)rc, dfcclGetLastError());
        printf("t_collmismatch %s rank %d: %s after %.3f s: %s\n", mode, tc_rank,
               where == 1 ? "the call failed"
               : next     ? "a later call failed"
                          : "the next call failed",
               dt, msg);
    }
    /* other communicators are untouched, and new ones work */
    tc_checked_allreduce(B, "allreduce on another communicator");
    CHECK(dfcclCommDestroy(A));
    CHECK(dfcclCommDestroy(B));
    CHECK(dfcclCommInitMPI(&A, MPI_COMM_WORLD));
    tc_checked_allreduce(A, "allreduce on a new communicator");
    CHECK(dfcclCommDestroy(A));
#ifdef TM_DEVICE
    cudaFree(s);
    cudaFree(r);
    s = hs;
    r = hr;
#endif
    free(s);
    free(r);
    int failed_here = where == 1, failed_calls = 0;
    MPI_Reduce(&failed_here, &failed_calls, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (tc_rank == 0)
        printf("t_collmismatch %s, %zu elements, %d ranks: the call failed on %d, the next call on the "
               "others\nOK\n",
               mode, n, tc_size, failed_calls);
    MPI_Finalize();
    return 0;
}
