/* SPDX-License-Identifier: BSD-3-Clause */
/* Error checks of the plain MPI programs that drive the GPU (gpu_bench, gpu_types,
 * t_nccl_chaos): print the failing call and abort the whole job. NC() exists when nccl.h
 * came first, DC() when dfccl.h did. Also what the benchmarks share: the median, and the
 * ceiling they compare against (the device's copy rate). */
#ifndef DFCCL_GPU_CHECK_H
#define DFCCL_GPU_CHECK_H

#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CU(call)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)

#ifdef NCCL_MAJOR
#define NC(call)                                                                                             \
    do {                                                                                                     \
        ncclResult_t r_ = (call);                                                                            \
        if (r_ != ncclSuccess) {                                                                             \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_));            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)
#endif

#ifdef DFCCL_H
#define DC(call)                                                                                             \
    do {                                                                                                     \
        dfcclResult_t r_ = (call);                                                                           \
        if (r_ != dfcclSuccess) {                                                                            \
            fprintf(stderr, "%s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, dfcclGetErrorString(r_),       \
                    dfcclGetLastError());                                                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)
#endif

/* Bytes of device memory one rank's ring (the chain for bcast) reads and writes for a
 * collective over S bytes (the larger buffer), counted per step from engine/algo_ring.h,
 * algo_chain.h and prims_compose.h, in chunks of S/P: a send reads its input and writes
 * the next rank's FIFO (2); a receive-reduce-send reads the FIFO and the input and writes
 * the next FIFO (3); with a copy to the output besides, 5 (the copy reads the output
 * back); a receive-copy-send reads the FIFO twice and writes two places (4); a
 * receive-copy 2, and so does a local copy. Allreduce over P ranks: step 0 a send, P-2
 * receive-reduce-sends, one with the copy, P-2 receive-copy-sends, a receive-copy:
 * 2 + 3(P-2) + 5 + 4(P-2) + 2 = 7P - 5. Reduce-scatter 2 + 3(P-2) + 3 = 3P - 1.
 * Allgather (step 0 copies its own block and sends it) 4 + 4(P-2) + 2 = 4P - 2. Bcast:
 * the root copies and sends every chunk, the P-2 middle ranks receive-copy-send, the
 * tail receive-copies: (4 + 4(P-2) + 2) / P = (4P - 2) / P of S per rank on average. So
 * coll 0..3 (allreduce, reduce_scatter, allgather, bcast): (7P-5), (3P-1), (4P-2),
 * (4P-2) times S/P. FIFO bytes a peer reads soon after they were written may come from
 * L2 rather than HBM: this counts what the algorithm moves, not what HBM serves. */
static inline double gpu_ring_traffic_bytes(int coll, int P, double S)
{
    const double per = coll == 0 ? 7.0 * P - 5 : coll == 1 ? 3.0 * P - 1 : 4.0 * P - 2;
    return P > 1 ? per * S / P : 0;
}

static inline int gpu_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double gpu_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), gpu_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The ceiling: a 1 GiB device-to-device copy (bytes read + written per second, median
 * of 10 after 3 warm-ups) on rank 0 alone, known to every rank (collective). A smaller
 * copy measures a lower rate. */
static inline double gpu_copy_rate(int me)
{
    const size_t cb = 1ull << 30;
    double gbs = 0, t[10];
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        void *a, *b;
        cudaEvent_t e0, e1;
        CU(cudaMalloc(&a, cb));
        CU(cudaMalloc(&b, cb));
        CU(cudaMemset(a, 1, cb));
        CU(cudaEventCreate(&e0));
        CU(cudaEventCreate(&e1));
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
        gbs = 2.0 * (double)cb / gpu_median(t, 10) / 1e9;
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        cudaFree(a);
        cudaFree(b);
    }
    MPI_Bcast(&gbs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return gbs;
}

#endif
