/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU benchmark: dfccl allreduce on device buffers against, in the same run,
 *   - the device's measured device-to-device copy rate (the ceiling for big messages),
 *   - what an MPI user does without dfccl: copy to host, MPI_Allreduce, copy back.
 * One process per rank (N ranks on one GPU under MPS, or one per GPU). Median of the
 * per-iteration maximum over ranks, after warm-up; results checked every iteration.
 *   gpu_bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-s (skip staged MPI)]
 *             [-m (also MPI_Allreduce on device buffers: needs the dfccl coll component)]
 * Columns: bytes, dfccl us, busbw GB/s, algo traffic GB/s (bytes the algorithm moves
 * through device memory per second) and its share of the copy rate, staged MPI us,
 * speed-up, errors. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dfccl_mpi.h"

#define CU(call)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)
#define DC(call)                                                                                             \
    do {                                                                                                     \
        dfcclResult_t r_ = (call);                                                                           \
        if (r_ != dfcclSuccess) {                                                                            \
            fprintf(stderr, "%s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, dfcclGetErrorString(r_),       \
                    dfcclGetLastError());                                                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    setvbuf(stdout, NULL, _IOLBF, 0);
    size_t minb = 8, maxb = 256u << 20;
    double factor = 4;
    int iters = 50, warm = 10, staged = 1, viampi = 0, opt;
    while ((opt = getopt(argc, argv, "b:e:f:n:w:sm")) != -1) {
        switch (opt) {
        case 'b': minb = parse_size(optarg); break;
        case 'e': maxb = parse_size(optarg); break;
        case 'f': factor = atof(optarg); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warm = atoi(optarg); break;
        case 's': staged = 0; break;
        case 'm': viampi = 1; break;
        default:
            if (me == 0)
                fprintf(stderr,
                        "usage: gpu_bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-s] [-m]\n");
            MPI_Finalize();
            return 2;
        }
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (me == 0)
            printf("SKIP: gpu_bench needs a CUDA device\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm local;
    int lrank;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    CU(cudaSetDevice(lrank % ndev));

    /* ceiling: device-to-device copy, bytes read + written, measured by rank 0 alone */
    double copy_gbs = 0;
    {
        const size_t cb = 1ull << 30;
        void *a, *b;
        CU(cudaMalloc(&a, cb));
        CU(cudaMalloc(&b, cb));
        CU(cudaMemset(a, 1, cb));
        cudaEvent_t e0, e1;
        CU(cudaEventCreate(&e0));
        CU(cudaEventCreate(&e1));
        double t[10];
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == 0) {
            for (int i = 0; i < 13; i++) {
                CU(cudaEventRecord(e0, 0));
                CU(cudaMemcpy(b, a, cb, cudaMemcpyDeviceToDevice));
                CU(cudaEventRecord(e1, 0));
                CU(cudaEventSynchronize(e1));
                float ms;
                CU(cudaEventElapsedTime(&ms, e0, e1));
                if (i >= 3)
                    t[i - 3] = ms * 1e-3;
            }
            copy_gbs = 2.0 * (double)cb / median(t, 10) / 1e9;
        }
        MPI_Bcast(&copy_gbs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        cudaFree(a);
        cudaFree(b);
    }

    dfcclComm_t comm;
    DC(dfcclCommInitMPI(&comm, MPI_COMM_WORLD));
    const char *pre = getenv("DFCCL_PREEMPT");
    if (me == 0) {
        printf("# gpu_bench: allreduce float32 sum, %d ranks, %d device(s), DFCCL_PREEMPT=%s\n", P, ndev,
               pre ? pre : "1 (default)");
        printf("# device-to-device copy rate (read+write): %.1f GB/s\n", copy_gbs);
        printf("# %12s %10s %10s %10s %7s %12s %9s %6s %10s\n", "bytes", "dfccl_us", "busbw", "traffic",
               "%copy", "staged_us", "speedup", "errors", "mpi_us");
    }
    /* where a small collective's time goes: the host's pointer-kind query (two per call),
     * and a one-rank communicator's round trip (submission picked up by the daemon, a
     * 4-byte copy, completion seen by the host) with no peer to wait for */
    {
        float *d1, *d2;
        CU(cudaMalloc((void **)&d1, 64));
        CU(cudaMalloc((void **)&d2, 64));
        CU(cudaMemset(d1, 0, 64));
        CU(cudaStreamSynchronize(0));
        double tq[50], ts[200];
        for (int k = 0; k < 50; k++) {
            double t0 = MPI_Wtime();
            for (int j = 0; j < 100; j++) {
                struct cudaPointerAttributes pa;
                CU(cudaPointerGetAttributes(&pa, (j & 1) ? d1 : d2));
            }
            tq[k] = (MPI_Wtime() - t0) / 100;
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
        double q = median(tq, 50) * 1e6, r = median(ts, 200) * 1e6, rl = median(tr, 10) * 1e6, qmax, rmax,
               rlmax;
        MPI_Reduce(&q, &qmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&r, &rmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&rl, &rlmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (me == 0)
            printf("# cudaPointerGetAttributes: %.2f us per call; one-rank allreduce round trip (pick-up + "
                   "4-byte copy + completion, all %d processes at once): %.2f us (median, slowest rank); "
                   "after an idle quit (relaunch, %llu launches for 10 calls): %.2f us\n",
                   qmax, P, rmax, (unsigned long long)(s1.daemon_launches - s0.daemon_launches), rlmax);
        /* how long a daemon holding a stalled collective keeps the SMs: rank 0 posts an
         * allreduce nobody else has posted yet and times cudaDeviceSynchronize (it returns
         * once the daemon's stall quit lets the kernel end); then the others join */
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
                       median(th, 5) * 1e6);
        }
        cudaFree(d1);
        cudaFree(d2);
    }
    size_t maxn = maxb / 4 ? maxb / 4 : 1;
    float *h = malloc(maxn * sizeof(float)), *hexp = malloc(maxn * sizeof(float)),
          *hout = malloc(maxn * sizeof(float));
    float *din, *dout;
    CU(cudaMalloc((void **)&din, maxn * sizeof(float)));
    CU(cudaMalloc((void **)&dout, maxn * sizeof(float)));
    double *tv = malloc(sizeof(double) * (size_t)(iters > 0 ? iters : 1));
    long total_err = 0;
    for (size_t bytes = minb; bytes <= maxb; bytes = (size_t)((double)bytes * factor)) {
        size_t n = bytes / 4 ? bytes / 4 : 1;
        int it = bytes >= (64u << 20) ? (iters < 10 ? iters : 10) : iters;
        for (size_t i = 0; i < n; i++) {
            h[i] = (float)((me * 13 + (int)(i % 101)) % 17);
            float s = 0;
            for (int r = 0; r < P; r++)
                s += (float)((r * 13 + (int)(i % 101)) % 17);
            hexp[i] = s;
        }
        CU(cudaMemcpy(din, h, n * 4, cudaMemcpyHostToDevice));
        CU(cudaStreamSynchronize(0));
        long err = 0;
        for (int k = 0; k < warm + it; k++) {
            CU(cudaMemset(dout, 0xff, n * 4));
            /* the legacy stream only: cudaDeviceSynchronize would also wait for the
             * daemon kernel to quit */
            CU(cudaStreamSynchronize(0));
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            dfcclRequest_t req;
            DC(dfcclAllReduce(din, dout, n, dfcclFloat32, dfcclSum, comm, &req));
            DC(dfcclWait(&req));
            double dt = MPI_Wtime() - t0, mx;
            MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (k >= warm)
                tv[k - warm] = mx;
            if (k == warm) { /* check one timed iteration fully */
                CU(cudaMemcpy(hout, dout, n * 4, cudaMemcpyDeviceToHost));
                for (size_t i = 0; i < n; i++)
                    err += hout[i] != hexp[i];
            }
        }
        double us = median(tv, it) * 1e6;
        /* staged: what a non-CUDA-aware MPI user does */
        double sus = 0;
        if (staged) {
            for (int k = 0; k < warm / 2 + it; k++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                CU(cudaMemcpy(h, din, n * 4, cudaMemcpyDeviceToHost));
                MPI_Allreduce(MPI_IN_PLACE, h, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                CU(cudaMemcpy(dout, h, n * 4, cudaMemcpyHostToDevice));
                double dt = MPI_Wtime() - t0, mx;
                MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (k >= warm / 2)
                    tv[k - warm / 2] = mx;
            }
            sus = median(tv, it) * 1e6;
        }
        /* -m: MPI_Allreduce on the device buffers, through the coll component the run
         * loaded (dfccl's takes them to the GPU daemon) */
        double mus = 0;
        if (viampi) {
            for (int k = 0; k < warm + it; k++) {
                CU(cudaMemset(dout, 0xff, n * 4));
                CU(cudaStreamSynchronize(0));
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                MPI_Allreduce(din, dout, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                double dt = MPI_Wtime() - t0, mx;
                MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (k >= warm)
                    tv[k - warm] = mx;
                if (k == warm) {
                    CU(cudaMemcpy(hout, dout, n * 4, cudaMemcpyDeviceToHost));
                    for (size_t i = 0; i < n; i++)
                        err += hout[i] != hexp[i];
                }
            }
            mus = median(tv, it) * 1e6;
        }
        long gerr;
        MPI_Allreduce(&err, &gerr, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        total_err += gerr;
        /* ring: every rank reads and writes about 3 x 2(P-1)/P x bytes of device memory
         * (FIFO write, FIFO read, input or output); the whole GPU sees P times that */
        double algbw = (double)n * 4 / (us * 1e-6) / 1e9, busbw = algbw * 2.0 * (P - 1) / P;
        double traffic = P > 1 ? (double)P * 3.0 * busbw : 0;
        if (me == 0)
            printf("  %12zu %10.2f %10.2f %10.1f %6.1f%% %12.2f %8.1fx %6ld %10.2f\n", n * 4, us, busbw,
                   traffic, copy_gbs > 0 ? 100.0 * traffic / copy_gbs : 0, sus, sus > 0 ? sus / us : 0, gerr,
                   mus);
    }
    dfcclStats_t st;
    DC(dfcclCommGetStats(comm, &st));
    if (me == 0)
        printf("# rank 0: completed %llu, preemptions %llu, daemon launches %llu, device memory for the "
               "communicator %.1f MiB\n",
               (unsigned long long)st.completed, (unsigned long long)st.preemptions,
               (unsigned long long)st.daemon_launches, (double)st.device_bytes / 1048576.0);
    DC(dfcclCommDestroy(comm));
    cudaFree(din);
    cudaFree(dout);
    free(h);
    free(hexp);
    free(hout);
    free(tv);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return total_err ? 1 : 0;
}
