/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * deadlock_demo: collectives on 8 communicators, issued by every rank in its own
 * order ("chaos order").
 *
 *   mpirun -np 4 ./deadlock_demo [--iters N] [--deadline SEC] [--stagger MS]
 *
 * Each of 8 communicators (MPI_Comm_dup of MPI_COMM_WORLD, then
 * dfcclCommInitMPI) gets one all-reduce per iteration. Every rank submits the 8
 * all-reduces in a different permutation, then waits for all of them. With
 * blocking collectives (or a progress engine that runs one collective to
 * completion before it starts the next) this deadlocks: rank 0 waits in the
 * collective it started first for a rank that is waiting in another one.
 * dfccl preempts a collective stalled on its peers and runs another, so every
 * collective completes.
 *
 * --deadline SEC: if no collective completes during SEC seconds, rank 0 says the
 * collectives are deadlocked and every rank exits with status 3. Use it with
 * DFCCL_PREEMPT=0 to see the deadlock without hanging forever.
 *
 * --stagger MS: rank r starts each iteration's submissions r x MS ms late, so that the
 * earlier ranks' collectives stall on ranks that have not submitted them yet (a
 * DFCCL_TRACE timeline then names those late ranks).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "dfccl.h"
#include "dfccl_mpi.h"

#ifdef DFCCL_DEMO_CUDA
#include <cuda_runtime.h>
#define DEMO_CU(call)                                                                                        \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "deadlock_demo: %s: %s\n", #call, cudaGetErrorString(e_));                       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)
#endif

#define NCOMMS 8

static const size_t counts[NCOMMS] = {256, 147456, 2048, 1024, 65536, 147456, 524288, 1048576};

/* Orders for 4 ranks: each rank starts with a different collective. */
static const int orders4[4][NCOMMS] = {
    {0, 1, 2, 3, 4, 5, 6, 7},
    {7, 6, 5, 4, 3, 2, 1, 0},
    {3, 5, 7, 1, 0, 6, 2, 4},
    {6, 0, 4, 2, 7, 1, 3, 5},
};

static int g_rank, g_nranks;
static int g_stagger_ms; /* --stagger */

static void fail(const char *what, dfcclResult_t r)
{
    fprintf(stderr, "deadlock_demo: rank %d: %s: %s (%d): %s\n", g_rank, what, dfcclGetErrorString(r), (int)r,
            dfcclGetLastError());
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void make_order(int rank, int *order)
{
    if (g_nranks == 4) {
        memcpy(order, orders4[rank], sizeof orders4[rank]);
        return;
    }
    /* Other rank counts: rank 0 in order, the others shuffled (seed = rank). */
    for (int i = 0; i < NCOMMS; i++)
        order[i] = i;
    if (rank == 0)
        return;
    uint32_t s = 2654435761u * (uint32_t)(rank + 1);
    for (int i = NCOMMS - 1; i > 0; i--) {
        s = s * 1664525u + 1013904223u;
        int j = (int)((s >> 8) % (uint32_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    if (order[0] == 0) { /* make sure this rank does not start like rank 0 */
        int t = order[0];
        order[0] = order[NCOMMS - 1];
        order[NCOMMS - 1] = t;
    }
}

/* Input of rank r, communicator c, iteration it, element i: a small integer, so
 * the float sums are exact. */
static float input(int r, int c, int it, size_t i)
{
    return (float)(r + 1 + (int)((i + (size_t)c + (size_t)it) % 8));
}

static float expected(int c, int it, size_t i)
{
    int n = g_nranks;
    return (float)(n * (n + 1) / 2 + n * (int)((i + (size_t)c + (size_t)it) % 8));
}

static void deadlocked(double deadline, const int *order, const dfcclRequest_t *req, int it,
                       int in_final_barrier)
{
    if (g_rank == 0) {
        if (in_final_barrier) {
            printf("rank 0: all its collectives completed, but other ranks are still stuck\n");
        } else {
            printf("rank 0, iteration %d: still waiting for", it + 1);
            for (int k = 0; k < NCOMMS; k++)
                if (req[order[k]])
                    printf(" comm %d (%zu floats)", order[k], counts[order[k]]);
            printf("\n");
        }
        printf("no progress after %g s: the collectives are deadlocked "
               "(this is what happens without preemption)\n",
               deadline);
        fflush(stdout);
    } else {
        /* Let rank 0 say it first: once one rank exits, mpirun kills the others. */
        sleep(2);
    }
    fflush(stderr);
    _exit(3);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np 4 deadlock_demo [--iters N] [--deadline SEC] [--stagger MS]\n"
               "  --iters N       iterations (default 5)\n"
               "  --deadline SEC  give up (exit 3) when nothing completes for SEC seconds\n"
               "  --stagger MS    rank r submits each iteration r x MS ms late (default 0)\n");
}

/* The command line into *iters and *deadline: -1 to run, else the exit status (0 after
 * --help, 2 for a bad argument; rank 0 prints). */
static int parse_args(int argc, char **argv, int *iters, double *deadline)
{
    for (int a = 1; a < argc; a++) {
        char *end = NULL;
        if (!strcmp(argv[a], "--iters") && a + 1 < argc) {
            long v = strtol(argv[++a], &end, 10);
            if (*end || v < 1 || v > 1000000)
                goto bad;
            *iters = (int)v;
        } else if (!strcmp(argv[a], "--deadline") && a + 1 < argc) {
            *deadline = strtod(argv[++a], &end);
            if (*end || !(*deadline > 0))
                goto bad;
        } else if (!strcmp(argv[a], "--stagger") && a + 1 < argc) {
            long v = strtol(argv[++a], &end, 10);
            if (*end || v < 0 || v > 10000)
                goto bad;
            g_stagger_ms = (int)v;
        } else if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) {
            if (g_rank == 0)
                usage(stdout);
            return 0;
        } else {
        bad:
            if (g_rank == 0) {
                fprintf(stderr, "deadlock_demo: bad argument '%s'\n", argv[a]);
                usage(stderr);
            }
            return 2;
        }
    }
    return -1;
}

/* Device buffers (the GPU daemon) when this build has CUDA and every rank has a GPU
 * (this one: its host rank modulo the devices); host buffers (the CPU daemon) otherwise,
 * or with DFCCL_DEMO_HOST=1. Collective: 1 for device buffers. */
static int pick_buffers(void)
{
    int use_gpu = 0;
#ifdef DFCCL_DEMO_CUDA
    int ndev = 0;
    const char *force_host = getenv("DFCCL_DEMO_HOST");
    if (!(force_host && *force_host == '1') && cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) {
        MPI_Comm local;
        int lrank;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
        MPI_Comm_rank(local, &lrank);
        MPI_Comm_free(&local);
        DEMO_CU(cudaSetDevice(lrank % ndev));
        use_gpu = 1;
    }
    cudaGetLastError();
#endif
    int all_gpu = 0;
    MPI_Allreduce(&use_gpu, &all_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all_gpu; /* every rank must pass the same memory kind */
}

/* Wait for all of an iteration's all-reduces, by polling, so that a deadline can be
 * kept. */
static void wait_all(dfcclRequest_t *req, const int *order, double deadline, int it)
{
    int pending = NCOMMS;
    double last_progress = MPI_Wtime();
    while (pending > 0) {
        int progressed = 0;
        for (int k = 0; k < NCOMMS; k++) {
            int c = order[k];
            if (!req[c])
                continue;
            int done = 0;
            dfcclResult_t r = dfcclTest(&req[c], &done);
            if (r != dfcclSuccess) {
                char what[64];
                snprintf(what, sizeof what, "all-reduce on comm %d", c);
                fail(what, r);
            }
            if (done) {
                pending--;
                progressed = 1;
            }
        }
        double now = MPI_Wtime();
        if (progressed)
            last_progress = now;
        else if (deadline > 0 && now - last_progress > deadline)
            deadlocked(deadline, order, req, it, 0);
        else
            sched_yield();
    }
}

/* Statistics per communicator, summed over ranks, and the verdict (rank 0 prints). */
static void print_summary(const dfcclComm_t *comms, uint64_t wrong_all, double elapsed, int iters,
                          int preempt)
{
    uint64_t mine[NCOMMS][6], sum[NCOMMS][6];
    for (int c = 0; c < NCOMMS; c++) {
        dfcclStats_t st;
        dfcclResult_t r = dfcclCommGetStats(comms[c], &st);
        if (r != dfcclSuccess)
            fail("dfcclCommGetStats", r);
        mine[c][0] = st.submitted;
        mine[c][1] = st.completed;
        mine[c][2] = st.preemptions;
        mine[c][3] = st.stalls;
        mine[c][4] = st.stall_ns;
        mine[c][5] = st.shm_bytes;
    }
    MPI_Reduce(mine, sum, NCOMMS * 6, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);

    if (g_rank == 0) {
        if (wrong_all == 0)
            printf("dfccl: all %d collectives completed on every rank in %d iterations, "
                   "results correct (%.3f s)\n",
                   NCOMMS, iters, elapsed);
        else
            printf("dfccl: all %d collectives completed on every rank in %d iterations, "
                   "but %" PRIu64 " results are WRONG\n",
                   NCOMMS, iters, wrong_all);
        printf("per communicator, summed over the %d ranks:\n", g_nranks);
        printf("  %4s %10s %9s %9s %11s %9s %11s\n", "comm", "floats", "submitted", "completed",
               "preemptions", "stalls", "stalled_ms");
        uint64_t tp = 0, ts = 0;
        for (int c = 0; c < NCOMMS; c++) {
            printf("  %4d %10zu %9" PRIu64 " %9" PRIu64 " %11" PRIu64 " %9" PRIu64 " %11.3f\n", c, counts[c],
                   sum[c][0], sum[c][1], sum[c][2], sum[c][3], (double)sum[c][4] / 1e6);
            tp += sum[c][2];
            ts += sum[c][3];
        }
        printf("  total preemptions %" PRIu64 ", stalls %" PRIu64 "\n", tp, ts);
        if (preempt && tp > 0)
            printf("a preemption is dfccl setting aside a collective that waited on a peer and "
                   "running another one: that is what kept the ranks from deadlocking\n");
        fflush(stdout);
    }
}

/* Every rank's order, gathered to rank 0 so that they print in rank order. */
static void print_orders(const int *order, double deadline)
{
    int *all = g_rank == 0 ? malloc(sizeof(int) * NCOMMS * (size_t)g_nranks) : NULL;
    MPI_Gather(order, NCOMMS, MPI_INT, all, NCOMMS, MPI_INT, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("submission order of the communicators on each rank:\n");
        for (int r = 0; r < g_nranks; r++) {
            printf("  rank %d:", r);
            for (int k = 0; k < NCOMMS; k++)
                printf(" %d", all[r * NCOMMS + k]);
            printf("\n");
        }
        printf("every rank first submits all 8, then waits for all 8%s\n",
               deadline > 0 ? "" : " (no deadline)");
        fflush(stdout);
        free(all);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);

    int iters = 5;
    double deadline = 0; /* 0: wait forever */
    const int rc = parse_args(argc, argv, &iters, &deadline);
    if (rc >= 0) {
        MPI_Finalize();
        return rc;
    }

    const int use_gpu = pick_buffers();

    const char *pre = getenv("DFCCL_PREEMPT");
    int preempt = pre && *pre ? strtoul(pre, NULL, 0) != 0 : 1; /* as the engine reads it */
    if (g_rank == 0) {
        printf("dfccl deadlock demo: %d ranks, %d communicators, %d iterations, "
               "preemption %s (DFCCL_PREEMPT=%s)\n",
               g_nranks, NCOMMS, iters, preempt ? "ON" : "OFF", pre ? pre : "unset");
        if (g_nranks != 4)
            printf("(the demo is meant for 4 ranks; using generated orders)\n");
        printf("buffers: %s\n", use_gpu ? "device memory (the GPU daemon)" : "host memory (the CPU daemon)");
        printf("one all-reduce per communicator per iteration, sizes in floats:");
        for (int c = 0; c < NCOMMS; c++)
            printf(" %zu", counts[c]);
        printf("\n");
    }

    /* Communicators. */
    MPI_Comm mpi_comms[NCOMMS];
    dfcclComm_t comms[NCOMMS];
    for (int c = 0; c < NCOMMS; c++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &mpi_comms[c]);
        dfcclResult_t r = dfcclCommInitMPI(&comms[c], mpi_comms[c]);
        if (r != dfcclSuccess)
            fail("dfcclCommInitMPI", r);
    }

    /* Orders: gathered to rank 0 so that they print in rank order. */
    int order[NCOMMS];
    make_order(g_rank, order);
    print_orders(order, deadline);

    float *send[NCOMMS], *recv[NCOMMS];
    void *dsend[NCOMMS] = {0}, *drecv[NCOMMS] = {0}; /* device twins in GPU mode */
    for (int c = 0; c < NCOMMS; c++) {
        send[c] = malloc(counts[c] * sizeof(float));
        recv[c] = malloc(counts[c] * sizeof(float));
        if (!send[c] || !recv[c]) {
            fprintf(stderr, "deadlock_demo: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
#ifdef DFCCL_DEMO_CUDA
        if (use_gpu) {
            DEMO_CU(cudaMalloc(&dsend[c], counts[c] * sizeof(float)));
            DEMO_CU(cudaMalloc(&drecv[c], counts[c] * sizeof(float)));
        }
#endif
    }

    MPI_Barrier(MPI_COMM_WORLD);
    double t_start = MPI_Wtime();
    uint64_t wrong = 0;
    for (int it = 0; it < iters; it++) {
        for (int c = 0; c < NCOMMS; c++) {
            for (size_t i = 0; i < counts[c]; i++)
                send[c][i] = input(g_rank, c, it, i);
            memset(recv[c], 0xff, counts[c] * sizeof(float)); /* NaN poison */
#ifdef DFCCL_DEMO_CUDA
            if (use_gpu) {
                DEMO_CU(cudaMemcpy(dsend[c], send[c], counts[c] * sizeof(float), cudaMemcpyHostToDevice));
                DEMO_CU(cudaMemset(drecv[c], 0xff, counts[c] * sizeof(float)));
            }
#endif
        }
#ifdef DFCCL_DEMO_CUDA
        if (use_gpu) /* the GPU daemon has its own stream: the inputs must have landed */
            DEMO_CU(cudaStreamSynchronize(0));
#endif
        if (g_stagger_ms) {
            const long ns = (long)g_rank * g_stagger_ms * 1000000L;
            struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
        }
        dfcclRequest_t req[NCOMMS] = {0};
        for (int k = 0; k < NCOMMS; k++) {
            int c = order[k];
            dfcclResult_t r = dfcclAllReduce(use_gpu ? dsend[c] : send[c], use_gpu ? drecv[c] : recv[c],
                                             counts[c], dfcclFloat32, dfcclSum, comms[c], &req[c]);
            if (r != dfcclSuccess)
                fail("dfcclAllReduce", r);
        }
        wait_all(req, order, deadline, it);
#ifdef DFCCL_DEMO_CUDA
        if (use_gpu)
            for (int c = 0; c < NCOMMS; c++)
                DEMO_CU(cudaMemcpy(recv[c], drecv[c], counts[c] * sizeof(float), cudaMemcpyDeviceToHost));
#endif
        for (int c = 0; c < NCOMMS; c++)
            for (size_t i = 0; i < counts[c]; i++)
                if (recv[c][i] != expected(c, it, i))
                    wrong++;
    }

    /* All ranks done? A rank that finished must not block forever in MPI when the
     * others are stuck, so this barrier is polled under the deadline too. */
    MPI_Request breq;
    MPI_Ibarrier(MPI_COMM_WORLD, &breq);
    double t_wait = MPI_Wtime();
    for (;;) {
        int flag = 0;
        MPI_Test(&breq, &flag, MPI_STATUS_IGNORE);
        if (flag)
            break;
        if (deadline > 0 && MPI_Wtime() - t_wait > deadline)
            deadlocked(deadline, order, NULL, iters - 1, 1);
        sched_yield();
    }
    double elapsed = MPI_Wtime() - t_start;

    uint64_t wrong_all = 0;
    MPI_Allreduce(&wrong, &wrong_all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);

    print_summary(comms, wrong_all, elapsed, iters, preempt);

    for (int c = 0; c < NCOMMS; c++) {
        dfcclResult_t r = dfcclCommDestroy(comms[c]);
        if (r != dfcclSuccess)
            fail("dfcclCommDestroy", r);
        MPI_Comm_free(&mpi_comms[c]);
        free(send[c]);
        free(recv[c]);
#ifdef DFCCL_DEMO_CUDA
        cudaFree(dsend[c]);
        cudaFree(drecv[c]);
#endif
    }
    MPI_Finalize();
    return wrong_all ? 1 : 0;
}
