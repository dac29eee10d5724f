/* SPDX-License-Identifier: BSD-3-Clause */
/* The chaos-order scenario with NCCL, for comparison with dfccl's (t_gpu chaos): one
 * communicator per collective, every rank launches the allreduces on one stream in its
 * own order (rank r starts at communicator r and walks backwards). NCCL runs each
 * collective to completion in launch order, so rank 0's first kernel waits for a peer
 * whose stream is busy with a different communicator: the job hangs with the GPUs at
 * 100%. A watchdog turns that into "HANG" and exit status 3 within --deadline seconds;
 * if the collectives complete instead, their results are checked and the program exits
 * 0 (the run script then reports that NCCL did not hang).
 *
 *   t_nccl_chaos [--comms K] [--count N] [--deadline S]
 * One GPU per rank (NCCL refuses two ranks on one GPU): exits 77 otherwise. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_check.h" /* CU(), NC() */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, P, K = 8;
    size_t count = 1 << 16;
    double deadline = 30;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--comms") && i + 1 < argc)
            K = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--deadline") && i + 1 < argc)
            deadline = atof(argv[++i]);
    }
    if (K < 2 || count == 0) {
        if (me == 0)
            fprintf(stderr, "t_nccl_chaos: --comms must be >= 2 and --count > 0\n");
        MPI_Finalize();
        return 2;
    }
    int ndev = 0, nlocal, lrank;
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &nlocal);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < nlocal) {
        if (me == 0)
            printf("SKIP: t_nccl_chaos needs one GPU per rank (%d ranks on a node with %d GPUs)\n", nlocal,
                   ndev);
        MPI_Finalize();
        return 77;
    }
    CU(cudaSetDevice(lrank));

    ncclComm_t *comms = calloc((size_t)K, sizeof(ncclComm_t));
    float **d = calloc((size_t)K, sizeof(float *));
    float *h = malloc(count * sizeof(float));
    for (int k = 0; k < K; k++) {
        ncclUniqueId id;
        if (me == 0)
            NC(ncclGetUniqueId(&id));
        MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
        NC(ncclCommInitRank(&comms[k], P, id, me));
        for (size_t i = 0; i < count; i++)
            h[i] = (float)((me + k + (int)(i % 7)) % 5);
        CU(cudaMalloc((void **)&d[k], count * sizeof(float)));
        CU(cudaMemcpy(d[k], h, count * sizeof(float), cudaMemcpyHostToDevice));
    }
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    MPI_Barrier(MPI_COMM_WORLD);

    /* rank r: communicators r, r-1, ..., r+1 (mod K), all on one stream */
    for (int j = 0; j < K; j++) {
        int k = ((me - j) % K + K) % K;
        NC(ncclAllReduce(d[k], d[k], count, ncclFloat32, ncclSum, comms[k], s));
    }
    const double t0 = now_s();
    cudaError_t q;
    while ((q = cudaStreamQuery(s)) == cudaErrorNotReady) {
        if (now_s() - t0 > deadline) {
            printf("HANG: rank %d: %d allreduces in per-rank order on one stream did not complete in %.0f s "
                   "(NCCL runs each to completion in launch order)\n",
                   me, K, deadline);
            fflush(stdout);
            _exit(3); /* the kernels spin on: nothing can be cleaned up */
        }
        usleep(1000);
    }
    CU(q);
    long bad = 0;
    for (int k = 0; k < K; k++) {
        CU(cudaMemcpy(h, d[k], count * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++) {
            float want = 0;
            for (int r = 0; r < P; r++)
                want += (float)((r + k + (int)(i % 7)) % 5);
            bad += h[i] != want;
        }
    }
    long gbad;
    MPI_Allreduce(&bad, &gbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("t_nccl_chaos: %d allreduces in per-rank order completed in %.3f s, %ld bad elements\n", K,
               now_s() - t0, gbad);
    for (int k = 0; k < K; k++) {
        NC(ncclCommDestroy(comms[k]));
        CU(cudaFree(d[k]));
    }
    CU(cudaStreamDestroy(s));
    free(comms);
    free(d);
    free(h);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return gbad ? 1 : 0;
}
