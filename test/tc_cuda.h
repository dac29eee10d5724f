/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU of an MPI test or benchmark process on device buffers (test/mpi with
 * -DTV_DEVICE or -DTM_DEVICE, test/gpu, test/ompi/t_device, bench/gpu_*): the process's
 * rank on its host modulo the devices, or a SKIP line when there is no device. Include
 * it only where the program is built with the CUDA runtime. */
#ifndef DFCCL_TEST_TC_CUDA_H
#define DFCCL_TEST_TC_CUDA_H

#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* Collective over MPI_COMM_WORLD, after MPI_Init. Without a CUDA device, world rank 0
 * prints @p skip (the "SKIP..." line the runners look for) and every rank finalizes MPI
 * and exits with @p skip_rc (77, or 0 where the runner counts a skip as a pass). Else
 * this process takes the device of its host rank modulo the devices and the call
 * returns the number of devices; @p nlocal_p (may be NULL) gets the number of ranks on
 * this host. */
static inline int tc_cuda_pick(int rank, const char *skip, int skip_rc, int *nlocal_p)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0)
            printf("%s\n", skip);
        MPI_Finalize();
        exit(skip_rc);
    }
    MPI_Comm local;
    int lrank, nlocal;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &nlocal);
    MPI_Comm_free(&local);
    const cudaError_t e = cudaSetDevice(lrank % ndev);
    if (e != cudaSuccess) {
        fprintf(stderr, "[rank %d] FAIL %s:%d: cudaSetDevice(%d): %s\n", rank, __FILE__, __LINE__,
                lrank % ndev, cudaGetErrorString(e));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (nlocal_p)
        *nlocal_p = nlocal;
    return ndev;
}

#endif /* DFCCL_TEST_TC_CUDA_H */
