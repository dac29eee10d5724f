/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_left: a peer leaves a communicator (dfcclCommDestroy) that rank 0 still waits on.
 * Rank 0's wait must end with dfcclCommAborted within seconds (not hang), its error must
 * name the peer as having left, the communicator's next collective must be refused
 * with the same reason, and another communicator must be untouched. Every scenario
 * first completes a checked allreduce on the communicator, so that the point where the
 * peer left is not the first collective.
 *
 * usage: t_left never|pending
 *   never    rank 0 submits an allreduce; the others destroy the communicator without
 *            calling it
 *   pending  the others submit the allreduce and destroy the communicator at once (their
 *            own request ends with dfcclCommAborted); rank 0 submits it after that
 */
#include "test_common.h"

#define N_ELEMS 4099 /* odd: the tail of every channel's range */

/* How rank 0's wait on A must end: aborted, soon, the reason naming a peer that left. */
static void expect_left(dfcclRequest_t *q, double t0, const char *mode)
{
    const dfcclResult_t rc = dfcclWait(q);
    const double dt = MPI_Wtime() - t0;
    if (rc != dfcclCommAborted)
        TC_FAIL("%s: the wait returned %d (%s), expected dfcclCommAborted: %s", mode, (int)rc,
                dfcclGetErrorString(rc), dfcclGetLastError());
    if (!tc_lasterr_has("left the communicator"))
        TC_FAIL("%s: the error does not say a peer left: %s", mode, dfcclGetLastError());
    if (dt > 10.0)
        TC_FAIL("%s: the wait took %.1f s", mode, dt);
    printf("t_left %s: wait ended after %.2f s: %s\n", mode, dt, dfcclGetLastError());
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    const char *mode = argc > 1 ? argv[1] : "";
    const int pending = !strcmp(mode, "pending");
    if (!pending && strcmp(mode, "never"))
        TC_FAIL("usage: t_left never|pending");
    if (tc_size < 2) {
        printf("SKIP: needs 2 ranks or more\n");
        MPI_Finalize();
        return 0;
    }

    dfcclComm_t A, B;
    CHECK(dfcclCommInitMPI(&A, MPI_COMM_WORLD));
    CHECK(dfcclCommInitMPI(&B, MPI_COMM_WORLD));
    tc_checked_allreduce(A, "allreduce before the peers leave");

    float *s = tc_malloc(N_ELEMS * sizeof(float)), *r = tc_malloc(N_ELEMS * sizeof(float));
    tc_fill(s, dfcclFloat32, dfcclSum, 17, tc_rank, 0, N_ELEMS);
    dfcclRequest_t q = NULL;
    if (tc_rank == 0) {
        if (!pending)
            CHECK(dfcclAllReduce(s, r, N_ELEMS, dfcclFloat32, dfcclSum, A, &q));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* the others leave after this */
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* ... and have left */
        const double t0 = MPI_Wtime();
        if (pending)
            CHECK(dfcclAllReduce(s, r, N_ELEMS, dfcclFloat32, dfcclSum, A, &q));
        expect_left(&q, t0, mode);
        /* the communicator is aborted: its next collective is refused, with the reason */
        const dfcclResult_t rc = dfcclAllReduce(s, r, N_ELEMS, dfcclFloat32, dfcclSum, A, &q);
        if (rc != dfcclCommAborted || !tc_lasterr_has("left the communicator"))
            TC_FAIL("the next allreduce on the aborted communicator returned %d: %s", (int)rc,
                    dfcclGetLastError());
        CHECK(dfcclCommDestroy(A));
    } else {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (pending)
            CHECK(dfcclAllReduce(s, r, N_ELEMS, dfcclFloat32, dfcclSum, A, &q));
        CHECK(dfcclCommDestroy(A));
        if (pending) {
            /* rank 0 has not called it: it cannot have completed here */
            const dfcclResult_t rc = dfcclWait(&q);
            if (rc != dfcclCommAborted)
                TC_FAIL("the allreduce pending at dfcclCommDestroy returned %d, expected dfcclCommAborted",
                        (int)rc);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    /* B never saw any of it */
    tc_checked_allreduce(B, "allreduce on another communicator after a peer left");
    CHECK(dfcclCommDestroy(B));
    free(s);
    free(r);
    MPI_Barrier(MPI_COMM_WORLD);
    if (tc_rank == 0)
        printf("OK\n");
    MPI_Finalize();
    return 0;
}
