/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU benchmark: dfccl allreduce on device buffers against, in the same run,
 *   - the device's measured device-to-device copy rate (the ceiling for big messages),
 *   - what an MPI user does without dfccl: copy to host, MPI_Allreduce, copy back.
 * One process per rank (N ranks on one GPU under MPS, or one per GPU). Median of the
 * per-iteration maximum over ranks, after warm-up; results checked every iteration.
 *   gpu_bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-s (skip staged MPI)]
 *             [-m (also MPI_Allreduce on device buffers: needs the dfccl coll component)]
 *             [-o (also an OSU-style back-to-back loop, allreduce only; see osu_table)]
 * Columns: bytes, dfccl us, busbw GB/s, algo traffic GB/s (bytes the ring moves through
 * device memory per second, counted step by step: gpu_ring_traffic_bytes) and its share
 * of the copy rate, staged MPI us, speed-up, errors. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef DFCCL_BENCH_NCCL
#include <nccl.h>
#endif

#include "dfccl_mpi.h"
#include "../test/gpu/gpu_check.h" /* CU(), DC(), NC() with NCCL, the copy rate */
#include "../test/tc_cuda.h"       /* tc_cuda_pick */

#ifdef DFCCL_BENCH_NCCL
static ncclComm_t g_nccl;
#endif

typedef enum { C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_BCAST, C_NUM } coll_t;
static const char *const coll_name[] = {"allreduce", "reduce_scatter", "allgather", "bcast"};
static coll_t coll;

/* what is timed, in this order in one run */
enum { IMPL_DFCCL, IMPL_NCCL, IMPL_STAGED, IMPL_MPI };
static const char *const impl_name[] = {"dfccl", "nccl", "staged", "mpi"};

/* input element i of rank r: small integers, exact in float32 sums */
static float val(int r, size_t i)
{
    return (float)((r * 13 + (int)(i % 101)) % 17);
}

/* One collective to completion. n: elements of the larger buffer; part: n / P (the
 * per-rank block of reduce_scatter and allgather). h, hout: host staging buffers. */
static void run_once(int impl, const float *din, float *dout, size_t n, size_t part, dfcclComm_t comm,
                     cudaStream_t nstream, float *h, float *hout)
{
    (void)nstream;
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    switch (impl) {
    case IMPL_DFCCL: {
        dfcclRequest_t req;
        switch (coll) {
        case C_ALLREDUCE: DC(dfcclAllReduce(din, dout, n, dfcclFloat32, dfcclSum, comm, &req)); break;
        case C_REDUCE_SCATTER:
            DC(dfcclReduceScatter(din, dout, part, dfcclFloat32, dfcclSum, comm, &req));
            break;
        case C_ALLGATHER: DC(dfcclAllGather(din, dout, part, dfcclFloat32, comm, &req)); break;
        default: DC(dfcclBroadcast(din, dout, n, dfcclFloat32, 0, comm, &req)); break;
        }
        DC(dfcclWait(&req));
        break;
    }
#ifdef DFCCL_BENCH_NCCL
    case IMPL_NCCL:
        switch (coll) {
        case C_ALLREDUCE: NC(ncclAllReduce(din, dout, n, ncclFloat32, ncclSum, g_nccl, nstream)); break;
        case C_REDUCE_SCATTER:
            NC(ncclReduceScatter(din, dout, part, ncclFloat32, ncclSum, g_nccl, nstream));
            break;
        case C_ALLGATHER: NC(ncclAllGather(din, dout, part, ncclFloat32, g_nccl, nstream)); break;
        default: NC(ncclBroadcast(din, dout, n, ncclFloat32, 0, g_nccl, nstream)); break;
        }
        CU(cudaStreamSynchronize(nstream));
        break;
#endif
    case IMPL_STAGED: /* what an MPI user does without a CUDA-aware path */
        switch (coll) {
        case C_ALLREDUCE:
            CU(cudaMemcpy(h, din, n * 4, cudaMemcpyDeviceToHost));
            MPI_Allreduce(MPI_IN_PLACE, h, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            CU(cudaMemcpy(dout, h, n * 4, cudaMemcpyHostToDevice));
            break;
        case C_REDUCE_SCATTER:
            CU(cudaMemcpy(h, din, n * 4, cudaMemcpyDeviceToHost));
            MPI_Reduce_scatter_block(h, hout, (int)part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            CU(cudaMemcpy(dout, hout, part * 4, cudaMemcpyHostToDevice));
            break;
        case C_ALLGATHER:
            CU(cudaMemcpy(h, din, part * 4, cudaMemcpyDeviceToHost));
            MPI_Allgather(h, (int)part, MPI_FLOAT, hout, (int)part, MPI_FLOAT, MPI_COMM_WORLD);
            CU(cudaMemcpy(dout, hout, part * (size_t)P * 4, cudaMemcpyHostToDevice));
            break;
        default:
            CU(cudaMemcpy(h, din, n * 4, cudaMemcpyDeviceToHost));
            MPI_Bcast(h, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
            CU(cudaMemcpy(dout, h, n * 4, cudaMemcpyHostToDevice));
            break;
        }
        break;
    default: /* IMPL_MPI: device buffers through the coll component the run loaded */
        switch (coll) {
        case C_ALLREDUCE: MPI_Allreduce(din, dout, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
        case C_REDUCE_SCATTER:
            MPI_Reduce_scatter_block(din, dout, (int)part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            break;
        case C_ALLGATHER:
            MPI_Allgather(din, (int)part, MPI_FLOAT, dout, (int)part, MPI_FLOAT, MPI_COMM_WORLD);
            break;
        default: MPI_Bcast(dout, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD); break; /* root: dout = din */
        }
        break;
    }
}

/* OSU-style latency (allreduce): LOOPS loops of ITERS back-to-back calls, no barrier or
 * reset in between; per call the loop's average, median over the loops, slowest rank.
 * Besides the native call and MPI_Allreduce (with -m), the native call with each part
 * of what the component adds for device buffers, so that the MPI path's extra time
 * splits into them: "+query" = two memory-kind queries before the submission, "+sync"
 * = a legacy-stream synchronization (coll_dfccl_device_sync=1), "+progress" = waiting
 * with opal_progress (MPI_Iprobe drives it) between the completion tests. */
enum { OSU_NATIVE, OSU_QUERY, OSU_SYNC, OSU_PROGRESS, OSU_MPI, OSU_NUM };
static const char *const osu_name[] = {"native", "+query", "+sync", "+progress", "MPI"};

static void osu_call(int mode, const float *din, float *dout, size_t n, dfcclComm_t comm)
{
    if (mode == OSU_MPI) {
        MPI_Allreduce(din, dout, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        return;
    }
    if (mode == OSU_QUERY) {
        struct cudaPointerAttributes pa;
        CU(cudaPointerGetAttributes(&pa, din));
        CU(cudaPointerGetAttributes(&pa, dout));
    } else if (mode == OSU_SYNC) {
        CU(cudaStreamSynchronize(0));
    }
    dfcclRequest_t req;
    DC(dfcclAllReduce(din, dout, n, dfcclFloat32, dfcclSum, comm, &req));
    if (mode == OSU_PROGRESS) {
        int done = 0, flag;
        for (;;) {
            DC(dfcclTest(&req, &done));
            if (done)
                break;
            MPI_Iprobe(MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        }
    } else {
        DC(dfcclWait(&req));
    }
}

static long osu_table(size_t minb, size_t maxb, double factor, int iters, int viampi, dfcclComm_t comm,
                      float *din, float *dout, float *h, int me, int P)
{
    enum { LOOPS = 7 };
    long bad = 0;
    if (me == 0)
        printf("# OSU-style allreduce float32 sum: us per call, back-to-back (median of %d loops of %d "
               "calls, slowest rank)\n# %12s %10s %10s %10s %10s %10s\n",
               LOOPS, iters, "bytes", osu_name[0], osu_name[1], osu_name[2], osu_name[3],
               viampi ? osu_name[4] : "-");
    for (size_t bytes = minb; bytes <= maxb; bytes = (size_t)((double)bytes * factor)) {
        const size_t n = bytes / 4 ? bytes / 4 : 1;
        for (size_t i = 0; i < n; i++)
            h[i] = val(me, i);
        CU(cudaMemcpy(din, h, n * 4, cudaMemcpyHostToDevice));
        CU(cudaStreamSynchronize(0));
        double res[OSU_NUM] = {-1, -1, -1, -1, -1};
        for (int mode = 0; mode < OSU_NUM; mode++) {
            if (mode == OSU_MPI && !viampi)
                continue;
            double t[LOOPS];
            CU(cudaMemset(dout, 0xff, n * 4));
            CU(cudaStreamSynchronize(0));
            for (int l = -1; l < LOOPS; l++) { /* loop -1: the warm-up */
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int k = 0; k < iters; k++)
                    osu_call(mode, din, dout, n, comm);
                const double us = (MPI_Wtime() - t0) / iters * 1e6;
                if (l >= 0)
                    MPI_Allreduce(&us, &t[l], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            }
            res[mode] = gpu_median(t, LOOPS);
            CU(cudaMemcpy(h, dout, n * 4, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < n; i++) {
                float s = 0;
                for (int r = 0; r < P; r++)
                    s += val(r, i);
                if (h[i] != s && bad++ < 3)
                    fprintf(stderr, "rank %d osu %s %zu B [%zu]: got %g want %g\n", me, osu_name[mode], bytes,
                            i, h[i], s);
            }
        }
        if (me == 0)
            printf("  %12zu %10.2f %10.2f %10.2f %10.2f %10.2f\n", n * 4, res[0], res[1], res[2], res[3],
                   res[4]);
    }
    long gbad;
    MPI_Allreduce(&bad, &gbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0 && gbad)
        printf("# OSU-style loop: %ld wrong elements\n", gbad);
    return gbad;
}

/* The ncheck elements this rank's output must hold (part: the per-rank block). */
static void expected(float *hexp, size_t ncheck, size_t part, int me, int P)
{
    for (size_t i = 0; i < ncheck; i++) {
        float s = 0;
        switch (coll) {
        case C_ALLREDUCE:
            for (int r = 0; r < P; r++)
                s += val(r, i);
            break;
        case C_REDUCE_SCATTER:
            for (int r = 0; r < P; r++)
                s += val(r, (size_t)me * part + i);
            break;
        case C_ALLGATHER: s = val((int)(i / part), i % part); break;
        default: s = val(0, i); break; /* bcast from rank 0 */
        }
        hexp[i] = s;
    }
}

/* -N: the NCCL communicator (g_nccl) and its stream, where NCCL can run: 1, or 0 with
 * the reason printed. */
static int nccl_setup(int ranks_per_gpu, int me, int P, cudaStream_t *nstream)
{
#ifdef DFCCL_BENCH_NCCL
    /* NCCL takes one GPU per rank */
    if (ranks_per_gpu > 1) {
        if (me == 0)
            printf("# NCCL column off: %d ranks share a GPU (NCCL needs one GPU per rank)\n", ranks_per_gpu);
        return 0;
    }
    ncclUniqueId id;
    if (me == 0)
        NC(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    NC(ncclCommInitRank(&g_nccl, P, id, me));
    CU(cudaStreamCreateWithFlags(nstream, cudaStreamNonBlocking));
    return 1;
#else
    (void)ranks_per_gpu;
    (void)P;
    (void)nstream;
    if (me == 0)
        printf("# NCCL column off: built without NCCL\n");
    return 0;
#endif
}

/* how long a daemon holding a stalled collective keeps the SMs: rank 0 posts an
 * allreduce nobody else has posted yet and times cudaDeviceSynchronize (it returns
 * once the daemon's stall quit lets the kernel end); then the others join */
static void stall_hold(dfcclComm_t comm, float *d1, float *d2, int me, int P)
{
    const char *pe = getenv("DFCCL_PREEMPT");
    if (P > 1 && !(pe && atoi(pe) == 0)) { /* without preemption this is the GPU-sync deadlock */
        double th[5];
        for (int k = 0; k < 5; k++) {
            dfcclRequest_t req = NULL;
            MPI_Barrier(MPI_COMM_WORLD);
            if (me == 0) {
                DC(dfcclAllReduce(d1, d2, 1, dfcclFloat32, dfcclSum, comm, &req));
                double t0 = MPI_Wtime();
                CU(cudaDeviceSynchronize());
                th[k] = MPI_Wtime() - t0;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (me != 0)
                DC(dfcclAllReduce(d1, d2, 1, dfcclFloat32, dfcclSum, comm, &req));
            DC(dfcclWait(&req));
        }
        if (me == 0)
            printf("# a stalled daemon holds the SMs for %.0f us (median cudaDeviceSynchronize with a "
                   "collective stalled on its peers)\n",
                   gpu_median(th, 5) * 1e6);
    }
}

/* where a small collective's time goes: the host's pointer-kind query (two per call),
 * and a one-rank communicator's round trip (submission picked up by the daemon, a
 * 4-byte copy, completion seen by the host) with no peer to wait for */
static void small_call_costs(dfcclComm_t comm, int me, int P)
{
    float *d1, *d2;
    CU(cudaMalloc((void **)&d1, 64));
    CU(cudaMalloc((void **)&d2, 64));
    CU(cudaMemset(d1, 0, 64));
    CU(cudaStreamSynchronize(0));
    double tq[50], ts[200], tsy[50], tsq[50];
    for (int k = 0; k < 50; k++) {
        double t0 = MPI_Wtime();
        for (int j = 0; j < 100; j++) {
            struct cudaPointerAttributes pa;
            CU(cudaPointerGetAttributes(&pa, (j & 1) ? d1 : d2));
        }
        tq[k] = (MPI_Wtime() - t0) / 100;
        /* what the component's per-call synchronization of the (idle) legacy stream
         * costs, and what asking it costs */
        t0 = MPI_Wtime();
        for (int j = 0; j < 100; j++)
            CU(cudaStreamSynchronize(0));
        tsy[k] = (MPI_Wtime() - t0) / 100;
        t0 = MPI_Wtime();
        for (int j = 0; j < 100; j++)
            CU(cudaStreamQuery(0));
        tsq[k] = (MPI_Wtime() - t0) / 100;
    }
    {
        double sy = gpu_median(tsy, 50) * 1e6, sq = gpu_median(tsq, 50) * 1e6, sym, sqm;
        MPI_Reduce(&sy, &sym, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&sq, &sqm, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (me == 0)
            printf("# idle legacy stream: cudaStreamSynchronize %.2f us, cudaStreamQuery %.2f us per call\n",
                   sym, sqm);
    }
    dfcclComm_t self;
    DC(dfcclCommInitMPI(&self, MPI_COMM_SELF));
    for (int k = 0; k < 220; k++) {
        double t0 = MPI_Wtime();
        dfcclRequest_t req;
        DC(dfcclAllReduce(d1, d2, 1, dfcclFloat32, dfcclSum, self, &req));
        DC(dfcclWait(&req));
        if (k >= 20)
            ts[k - 20] = MPI_Wtime() - t0;
    }
    /* the same after the daemon exited idle: the relaunch's cost */
    const char *iq = getenv("DFCCL_GPU_IDLE_QUIT");
    const useconds_t idle_us = (useconds_t)(iq ? atoi(iq) : 5000);
    double tr[10];
    dfcclStats_t s0, s1;
    DC(dfcclCommGetStats(self, &s0));
    for (int k = 0; k < 10; k++) {
        usleep(2 * idle_us + 2000);
        double t0 = MPI_Wtime();
        dfcclRequest_t req;
        DC(dfcclAllReduce(d1, d2, 1, dfcclFloat32, dfcclSum, self, &req));
        DC(dfcclWait(&req));
        tr[k] = MPI_Wtime() - t0;
    }
    DC(dfcclCommGetStats(self, &s1));
    DC(dfcclCommDestroy(self));
    double q = gpu_median(tq, 50) * 1e6, r = gpu_median(ts, 200) * 1e6, rl = gpu_median(tr, 10) * 1e6, qmax,
           rmax, rlmax;
    MPI_Reduce(&q, &qmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&r, &rmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rl, &rlmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("# cudaPointerGetAttributes: %.2f us per call; one-rank allreduce round trip (pick-up + "
               "4-byte copy + completion, all %d processes at once): %.2f us (median, slowest rank); "
               "after an idle quit (relaunch, %llu launches for 10 calls): %.2f us\n",
               qmax, P, rmax, (unsigned long long)(s1.daemon_launches - s0.daemon_launches), rlmax);
    stall_hold(comm, d1, d2, me, P);
    cudaFree(d1);
    cudaFree(d2);
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k')
        v *= 1024;
    else if (*end == 'M' || *end == 'm')
        v *= 1024 * 1024;
    else if (*end == 'G' || *end == 'g')
        v *= 1024.0 * 1024 * 1024;
    return (size_t)v;
}

/* The command line. */
struct args {
    size_t minb, maxb;
    double factor;
    int iters, warm, staged, viampi, want_nccl, osu;
};

/* 0, or 2 with the reason printed by rank 0 (a bad option, an unknown -c). */
static int parse_args(int argc, char **argv, int me, struct args *a)
{
    *a = (struct args){.minb = 8, .maxb = 256u << 20, .factor = 4, .iters = 50, .warm = 10, .staged = 1};
    int opt;
    while ((opt = getopt(argc, argv, "b:e:f:n:w:smNoc:")) != -1) {
        switch (opt) {
        case 'b': a->minb = parse_size(optarg); break;
        case 'e': a->maxb = parse_size(optarg); break;
        case 'f': a->factor = atof(optarg); break;
        case 'n': a->iters = atoi(optarg); break;
        case 'w': a->warm = atoi(optarg); break;
        case 's': a->staged = 0; break;
        case 'm': a->viampi = 1; break;
        case 'N': a->want_nccl = 1; break;
        case 'o': a->osu = 1; break;
        case 'c':
            coll = C_NUM;
            for (int c = 0; c < C_NUM; c++)
                if (!strcmp(optarg, coll_name[c]))
                    coll = (coll_t)c;
            if (coll == C_NUM) {
                if (me == 0)
                    fprintf(stderr,
                            "gpu_bench: -c %s: expected allreduce, reduce_scatter, allgather or bcast\n",
                            optarg);
                return 2;
            }
            break;
        default:
            if (me == 0)
                fprintf(stderr, "usage: gpu_bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-s] "
                                "[-m] [-N] [-o] [-c COLL]\n");
            return 2;
        }
    }
    return 0;
}

/* Rank 0: the run's settings, the ceiling, the column heads. */
static void print_header(int P, int ndev, int ranks_per_gpu, int nccl_on, int staged, int viampi,
                         double copy_gbs)
{
    const char *pre = getenv("DFCCL_PREEMPT"), *ne = getenv("NCCL_NVLS_ENABLE");
    printf("# gpu_bench: %s float32%s, %d ranks, %d device(s) per node, %d rank(s) per GPU, "
           "DFCCL_PREEMPT=%s%s%s\n",
           coll_name[coll], coll == C_ALLREDUCE || coll == C_REDUCE_SCATTER ? " sum" : "", P, ndev,
           ranks_per_gpu, pre ? pre : "1 (default)", nccl_on ? ", NCCL_NVLS_ENABLE=" : "",
           nccl_on ? (ne ? ne : "(unset)") : "");
    printf("# device-to-device copy rate (read+write): %.1f GB/s\n", copy_gbs);
    printf("# %12s %10s %9s %9s %7s", "bytes", "dfccl_us", "busbw", "traffic", "%copy");
    if (nccl_on)
        printf(" %10s %9s %7s", "nccl_us", "nccl_bw", "nccl/df");
    if (staged)
        printf(" %11s %9s", "staged_us", "speedup");
    if (viampi)
        printf(" %10s", "mpi_us");
    printf(" %6s\n", "errors");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct args a;
    if (parse_args(argc, argv, me, &a)) {
        MPI_Finalize();
        return 2;
    }
    const size_t minb = a.minb, maxb = a.maxb;
    const double factor = a.factor;
    const int iters = a.iters, warm = a.warm, staged = a.staged, viampi = a.viampi, osu = a.osu;
    int nlocal;
    const int ndev = tc_cuda_pick(me, "SKIP: gpu_bench needs a CUDA device", 77, &nlocal);

    const double copy_gbs = gpu_copy_rate(me); /* the ceiling */

    dfcclComm_t comm;
    DC(dfcclCommInitMPI(&comm, MPI_COMM_WORLD));
    const char *osm = getenv("DFCCL_ONESHOT_MAX");
    const size_t oneshot_max = osm ? (size_t)strtoull(osm, NULL, 0) : 32768;
    /* ranks sharing one device (N ranks on one GPU under MPS, or one per GPU) */
    const int ranks_per_gpu = (nlocal + ndev - 1) / ndev;
    cudaStream_t nstream = NULL;
    const int nccl_on = a.want_nccl && nccl_setup(ranks_per_gpu, me, P, &nstream);
    if (me == 0)
        print_header(P, ndev, ranks_per_gpu, nccl_on, staged, viampi, copy_gbs);
    small_call_costs(comm, me, P);
    /* nccl-tests' conventions: "bytes" is the larger buffer (allgather's output,
     * reduce_scatter's input); busbw = algbw x (2(P-1)/P | (P-1)/P | 1) */
    const double busf = coll == C_ALLREDUCE ? 2.0 * (P - 1) / P : coll == C_BCAST ? 1.0 : (double)(P - 1) / P;
    size_t maxn = maxb / 4 ? maxb / 4 : 1;
    float *h = malloc(maxn * sizeof(float)), *hexp = malloc(maxn * sizeof(float)),
          *hout = malloc(maxn * sizeof(float));
    float *din, *dout;
    CU(cudaMalloc((void **)&din, maxn * sizeof(float)));
    CU(cudaMalloc((void **)&dout, maxn * sizeof(float)));
    double *tv = malloc(sizeof(double) * (size_t)(iters > 0 ? iters : 1));
    long total_err = 0;
    for (size_t bytes = minb; bytes <= maxb; bytes = (size_t)((double)bytes * factor)) {
        const size_t n = bytes / 4 ? bytes / 4 : 1;
        /* per-rank counts: reduce_scatter's output and allgather's input are n / P */
        const size_t part = n / (size_t)P;
        if ((coll == C_REDUCE_SCATTER || coll == C_ALLGATHER) && part == 0)
            continue;
        const size_t nin = coll == C_ALLGATHER ? part : n, nout = coll == C_REDUCE_SCATTER ? part : n;
        const size_t ncheck = coll == C_ALLGATHER ? part * (size_t)P : nout;
        /* the bytes the collective covers (rounded down to whole blocks, as nccl-tests) */
        const size_t cbytes = (coll == C_ALLGATHER || coll == C_REDUCE_SCATTER ? part * (size_t)P : n) * 4;
        int it = bytes >= (64u << 20) ? (iters < 10 ? iters : 10) : iters;
        for (size_t i = 0; i < nin; i++)
            h[i] = val(me, i);
        expected(hexp, ncheck, part, me, P);
        CU(cudaMemcpy(din, h, nin * 4, cudaMemcpyHostToDevice));
        CU(cudaStreamSynchronize(0));
        long err = 0;
        double us = -1, nus = -1, sus = -1, mus = -1;
        /* the same loop for every implementation: reset the output, line the ranks up,
         * time one call to completion, keep the slowest rank; check one timed iteration */
        for (int impl = 0; impl < 4; impl++) {
            if ((impl == IMPL_NCCL && !nccl_on) || (impl == IMPL_STAGED && !staged) ||
                (impl == IMPL_MPI && !viampi))
                continue;
            const int w = impl == IMPL_STAGED ? warm / 2 : warm;
            for (int k = 0; k < w + it; k++) {
                CU(cudaMemset(dout, 0xff, nout * 4));
                if (coll == C_BCAST && impl == IMPL_MPI && me == 0) /* MPI_Bcast works in place */
                    CU(cudaMemcpy(dout, din, n * 4, cudaMemcpyDeviceToDevice));
                /* the legacy stream only: cudaDeviceSynchronize would also wait for the
                 * daemon kernel to quit */
                CU(cudaStreamSynchronize(0));
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                run_once(impl, din, dout, n, part, comm, nstream, h, hout);
                double dt = MPI_Wtime() - t0, mx;
                MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (k >= w)
                    tv[k - w] = mx;
                if (k == w && impl != IMPL_STAGED) {
                    CU(cudaMemcpy(hout, dout, ncheck * 4, cudaMemcpyDeviceToHost));
                    for (size_t i = 0; i < ncheck; i++)
                        if (hout[i] != hexp[i] && err++ < 3)
                            fprintf(stderr, "rank %d %s %s %zu B [%zu]: got %g want %g\n", me,
                                    impl_name[impl], coll_name[coll], bytes, i, hout[i], hexp[i]);
                }
            }
            double m = gpu_median(tv, it) * 1e6;
            if (impl == IMPL_DFCCL)
                us = m;
            else if (impl == IMPL_NCCL)
                nus = m;
            else if (impl == IMPL_STAGED)
                sus = m;
            else
                mus = m;
        }
        long gerr;
        MPI_Allreduce(&err, &gerr, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        total_err += gerr;
        const double busbw = (double)cbytes / (us * 1e-6) / 1e9 * busf;
        /* device-memory traffic the algorithm performs, counted step by step
         * (gpu_ring_traffic_bytes), on every rank that shares the device; allreduces up to
         * DFCCL_ONESHOT_MAX take the one-shot, whose traffic is not counted (0) */
        const double traffic = coll == C_ALLREDUCE && cbytes <= oneshot_max
                                   ? 0
                                   : (double)ranks_per_gpu *
                                         gpu_ring_traffic_bytes((int)coll, P, (double)cbytes) / (us * 1e-6) /
                                         1e9;
        if (me == 0) {
            printf("  %12zu %10.2f %9.2f %9.1f %6.1f%%", cbytes, us, busbw, traffic,
                   copy_gbs > 0 ? 100.0 * traffic / copy_gbs : 0);
            if (nccl_on)
                printf(" %10.2f %9.2f %7.2f", nus, (double)cbytes / (nus * 1e-6) / 1e9 * busf, nus / us);
            if (staged)
                printf(" %11.2f %8.1fx", sus, sus / us);
            if (viampi)
                printf(" %10.2f", mus);
            printf(" %6ld\n", gerr);
        }
    }
    if (osu && coll == C_ALLREDUCE)
        total_err += osu_table(minb, maxb, factor, iters, viampi, comm, din, dout, h, me, P);
    dfcclStats_t st;
    DC(dfcclCommGetStats(comm, &st));
    if (me == 0)
        printf("# rank 0: completed %llu, preemptions %llu, daemon launches %llu, device memory for the "
               "communicator %.1f MiB\n",
               (unsigned long long)st.completed, (unsigned long long)st.preemptions,
               (unsigned long long)st.daemon_launches, (double)st.device_bytes / 1048576.0);
    DC(dfcclCommDestroy(comm));
#ifdef DFCCL_BENCH_NCCL
    if (nccl_on) {
        NC(ncclCommDestroy(g_nccl));
        CU(cudaStreamDestroy(nstream));
    }
#endif
    cudaFree(din);
    cudaFree(dout);
    free(h);
    free(hexp);
    free(hout);
    free(tv);
    MPI_Finalize();
    return total_err ? 1 : 0;
}
