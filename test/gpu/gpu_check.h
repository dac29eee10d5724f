/* SPDX-License-Identifier: BSD-3-Clause */
/* Error checks of the plain MPI programs that drive the GPU (gpu_bench, t_nccl_chaos):
 * print the failing call and abort the whole job. NC() exists when nccl.h came first. */
#ifndef DFCCL_GPU_CHECK_H
#define DFCCL_GPU_CHECK_H

#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>

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

#endif
