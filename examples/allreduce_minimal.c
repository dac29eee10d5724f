/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allreduce_minimal: the smallest complete dfccl program.
 *
 * Build and run it (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig where dfccl went to a PREFIX of
 * your own; the rpath lets the program find libdfccl without LD_LIBRARY_PATH):
 *
 *   mpicc -std=c11 allreduce_minimal.c $(pkg-config --cflags --libs dfccl) -Wl,-rpath,$(pkg-config --variable=libdir dfccl) -o allreduce_minimal
 *   mpirun -np 4 ./allreduce_minimal
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "dfccl.h"
#include "dfccl_mpi.h"

#define COUNT 1024

static void check(dfcclResult_t r, const char *what)
{
    if (r != dfcclSuccess) {
        fprintf(stderr, "%s failed: %s: %s\n", what, dfcclGetErrorString(r), dfcclGetLastError());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    /* 1. A dfccl communicator with the ranks of MPI_COMM_WORLD (collective). */
    dfcclComm_t comm;
    check(dfcclCommInitMPI(&comm, MPI_COMM_WORLD), "dfcclCommInitMPI");

    /* 2. Host buffers: rank r contributes r + i at index i. */
    float *sendbuf = malloc(COUNT * sizeof(float));
    float *recvbuf = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; i++)
        sendbuf[i] = (float)(rank + i);

    /* 3. Submit the all-reduce (non-blocking), then wait: dfcclWait frees the request. */
    dfcclRequest_t req;
    check(dfcclAllReduce(sendbuf, recvbuf, COUNT, dfcclFloat32, dfcclSum, comm, &req), "dfcclAllReduce");
    check(dfcclWait(&req), "dfcclWait");

    /* 4. Check: sum over r of (r + i) = n(n-1)/2 + n*i. */
    int wrong = 0;
    for (int i = 0; i < COUNT; i++)
        if (recvbuf[i] != (float)(nranks * (nranks - 1) / 2 + nranks * i))
            wrong++;
    int wrong_all = 0;
    MPI_Allreduce(&wrong, &wrong_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("allreduce of %d floats on %d ranks: %s\n", COUNT, nranks, wrong_all ? "WRONG" : "correct");

    /* 5. Clean up. */
    check(dfcclCommDestroy(comm), "dfcclCommDestroy");
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return wrong_all ? 1 : 0;
}
