/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_killed: ranks die by SIGKILL with a communicator alive (so shared memory
 * segments exist); the driver (run_suite.sh) then checks that no /dev/shm/dfccl-*
 * segment of theirs remains and that the next normal run leaves none at all.
 *
 * usage: t_killed [--mid | --normal]
 *   (default)  create a communicator, run one checked allreduce, every rank
 *              raises SIGKILL on itself
 *   --mid      same, but the ranks die while a large allreduce and a second
 *              communicator's collectives are in flight
 *   --normal   no kill: run, destroy, finalize, exit 0 (the follow-up run)
 * Each rank prints "t_killed: rank R pid PID" before it dies.
 */
#include "test_common.h"

#include <signal.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    int mid = tc_arg_flag(argc, argv, "--mid");
    int normal = tc_arg_flag(argc, argv, "--normal");

    dfcclComm_t comm, comm2;
    CHECK(dfcclCommInitMPI(&comm, MPI_COMM_WORLD));
    CHECK(dfcclCommInitMPI(&comm2, MPI_COMM_WORLD));

    tc_checked_allreduce(comm, "allreduce before the kill");

    printf("t_killed: rank %d pid %ld\n", tc_rank, (long)getpid());
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);

    if (normal) {
        CHECK(dfcclCommDestroy(comm));
        CHECK(dfcclCommDestroy(comm2));
        MPI_Barrier(MPI_COMM_WORLD);
        if (tc_rank == 0)
            printf("OK\n");
        MPI_Finalize();
        return 0;
    }

    if (mid) {
        /* leave collectives in flight on both communicators, then die */
        size_t big = 4u << 20;
        float *s = tc_malloc(big * sizeof(float)), *r = tc_malloc(big * sizeof(float));
        tc_fill(s, dfcclFloat32, dfcclSum, 7, tc_rank, 0, big);
        dfcclRequest_t q[3];
        CHECK(dfcclAllReduce(s, r, big, dfcclFloat32, dfcclSum, comm, &q[0]));
        CHECK(dfcclAllGather(s, r, 1000, dfcclFloat32, comm2, &q[1]));
        CHECK(dfcclBarrier(comm2, &q[2]));
        tc_sleep_us(2000 + 1000 * (long)tc_rank);
    }
    raise(SIGKILL);
    return 99; /* not reached */
}
