/* SPDX-License-Identifier: BSD-3-Clause */
/* Large allreduce on device buffers for every datatype, with sum and max: what the
 * daemon's reductions cost per type, against the device's measured copy rate in the same
 * run. One process per rank (N ranks on one GPU under MPS). Median of the per-iteration
 * maximum over ranks, after warm-up; the first timed iteration is checked element by
 * element against the expected result.
 *   gpu_types [-e BYTES] [-n ITERS] [-w WARMUP]
 * Columns: type, op, bytes, us, busbw GB/s, algo traffic GB/s (the ring's, counted step
 * by step as in gpu_bench, on every rank sharing the device) and its share of the copy
 * rate, errors. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/reduce.h" /* the half and bfloat16 conversions */
#include "dfccl_mpi.h"
#include "../test/gpu/gpu_check.h" /* CU(), DC(), the median, the copy rate */
#include "../test/tc_cuda.h"       /* tc_cuda_pick */

static const struct {
    dfcclDataType_t t;
    const char *name;
} types[] = {{dfcclFloat32, "float32"}, {dfcclBfloat16, "bfloat16"}, {dfcclFloat16, "float16"},
             {dfcclFloat64, "float64"}, {dfcclInt32, "int32"},       {dfcclInt8, "int8"}};

/* small integers: exact in every type's sums over up to 8 ranks (int8: 8 x 15) */
static double val(int r, size_t i)
{
    return (double)((r * 5 + (int)(i % 7)) % 16);
}

static void put(void *buf, dfcclDataType_t t, size_t i, double v)
{
    switch (t) {
    case dfcclFloat32: ((float *)buf)[i] = (float)v; break;
    case dfcclBfloat16: ((uint16_t *)buf)[i] = eng_float_to_bf16((float)v); break;
    case dfcclFloat16: ((uint16_t *)buf)[i] = eng_float_to_half((float)v); break;
    case dfcclFloat64: ((double *)buf)[i] = v; break;
    case dfcclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
    default: ((int8_t *)buf)[i] = (int8_t)v; break;
    }
}

static double get(const void *buf, dfcclDataType_t t, size_t i)
{
    switch (t) {
    case dfcclFloat32: return ((const float *)buf)[i];
    case dfcclBfloat16: return eng_bf16_to_float(((const uint16_t *)buf)[i]);
    case dfcclFloat16: return eng_half_to_float(((const uint16_t *)buf)[i]);
    case dfcclFloat64: return ((const double *)buf)[i];
    case dfcclInt32: return ((const int32_t *)buf)[i];
    default: return ((const int8_t *)buf)[i];
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, P, opt, iters = 20, warm = 5;
    size_t bytes = 64u << 20;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    setvbuf(stdout, NULL, _IOLBF, 0);
    while ((opt = getopt(argc, argv, "e:n:w:")) != -1) {
        switch (opt) {
        case 'e': bytes = strtoull(optarg, NULL, 0); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warm = atoi(optarg); break;
        default:
            if (me == 0)
                fprintf(stderr, "usage: gpu_types [-e BYTES] [-n ITERS] [-w WARMUP]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (iters < 1 || iters > 1000)
        iters = 20;
    int nlocal;
    const int ndev = tc_cuda_pick(me, "SKIP: gpu_types needs a CUDA device", 77, &nlocal);
    const int ranks_per_gpu = (nlocal + ndev - 1) / ndev;
    void *din, *dout, *h = malloc(bytes), *hout = malloc(bytes);
    CU(cudaMalloc(&din, bytes));
    CU(cudaMalloc(&dout, bytes));

    const double copy_gbs = gpu_copy_rate(me); /* the ceiling */
    double tv[1000];

    dfcclComm_t comm;
    DC(dfcclCommInitMPI(&comm, MPI_COMM_WORLD));
    if (me == 0) {
        printf("# gpu_types: allreduce, %d ranks, device-to-device copy rate (read+write): %.1f GB/s\n", P,
               copy_gbs);
        printf("# %9s %4s %12s %10s %9s %9s %6s %6s\n", "type", "op", "bytes", "us", "busbw", "traffic",
               "%copy", "errors");
    }
    const double fN = (double)(P - 1) / P;
    long total_err = 0;
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++)
        for (int oi = 0; oi < 2; oi++) {
            const dfcclDataType_t t = types[ti].t;
            const dfcclRedOp_t op = oi ? dfcclMax : dfcclSum;
            const size_t n = bytes / dfcclTypeSize(t);
            for (size_t i = 0; i < n; i++)
                put(h, t, i, val(me, i));
            CU(cudaMemcpy(din, h, n * dfcclTypeSize(t), cudaMemcpyHostToDevice));
            long err = 0;
            for (int k = 0; k < warm + iters; k++) {
                CU(cudaStreamSynchronize(0));
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                dfcclRequest_t req;
                DC(dfcclAllReduce(din, dout, n, t, op, comm, &req));
                DC(dfcclWait(&req));
                double dt = MPI_Wtime() - t0, mx;
                MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (k >= warm)
                    tv[k - warm] = mx;
                if (k == warm) {
                    CU(cudaMemcpy(hout, dout, n * dfcclTypeSize(t), cudaMemcpyDeviceToHost));
                    for (size_t i = 0; i < n; i++) {
                        double want = 0;
                        for (int r = 0; r < P; r++)
                            want = oi ? (r == 0 || val(r, i) > want ? val(r, i) : want) : want + val(r, i);
                        if (get(hout, t, i) != want && err++ < 3)
                            fprintf(stderr, "rank %d %s %s [%zu]: got %g want %g\n", me, types[ti].name,
                                    oi ? "max" : "sum", i, get(hout, t, i), want);
                    }
                }
            }
            const double s = gpu_median(tv, iters), bus = (double)bytes * 2 * fN / s / 1e9;
            const double traffic = ranks_per_gpu * gpu_ring_traffic_bytes(0, P, (double)bytes) / s / 1e9;
            long gerr;
            MPI_Allreduce(&err, &gerr, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            total_err += gerr;
            if (me == 0)
                printf("  %9s %4s %12zu %10.1f %9.2f %9.1f %5.1f%% %6ld\n", types[ti].name,
                       oi ? "max" : "sum", bytes, s * 1e6, bus, traffic, 100 * traffic / copy_gbs, gerr);
        }
    DC(dfcclCommDestroy(comm));
    cudaFree(din);
    cudaFree(dout);
    free(h);
    free(hout);
    MPI_Finalize();
    return total_err ? 1 : 0;
}
