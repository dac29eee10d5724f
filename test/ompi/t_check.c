/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_dfccl_check=1: ranks passing different counts, datatypes, roots or ops to one
 * collective get MPI_ERR_ARG on every rank (with a message naming the difference),
 * instead of a hang or corrupted data: from the call for a blocking one, from its
 * request for a non-blocking one; the communicator stays usable afterwards.
 * The communicator uses MPI_ERRORS_RETURN so the program sees the error codes.
 *
 *   t_check
 */
#include "ompi_test.h"

static void expect_arg_error(const char *what, int rc)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_ARG)
        OT_FAIL("%s: got error class %d, want MPI_ERR_ARG (%d)", what, cls, MPI_ERR_ARG);
}

static void expect_ok(MPI_Comm c, int round)
{
    int v = ot_rank + round, sum = -1;
    OT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
    if (sum != ot_size * (ot_size - 1) / 2 + ot_size * round)
        OT_FAIL("allreduce after a caught mismatch: got %d", sum);
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    MPI_Comm c;
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    /* Open MPI 4.1 reports an error of a collective request found by MPI_Wait through
     * MPI_COMM_WORLD's handler (its own collectives' too) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int buf[64] = {0}, out[64 * 16];
    const int odd = ot_rank == ot_size - 1; /* the last rank passes something else */

    expect_ok(c, 0);
    expect_arg_error("allreduce, counts differ", MPI_Allreduce(buf, out, odd ? 11 : 10, MPI_INT, MPI_SUM, c));
    expect_ok(c, 1);
    expect_arg_error("bcast, roots differ", MPI_Bcast(buf, 8, MPI_INT, odd ? 1 : 0, c));
    expect_ok(c, 2);
    expect_arg_error("reduce, roots differ", MPI_Reduce(buf, out, 8, MPI_INT, MPI_SUM, odd ? 0 : 1, c));
    expect_ok(c, 3);
    expect_arg_error("allreduce, ops differ",
                     MPI_Allreduce(buf, out, 8, MPI_INT, odd ? MPI_MAX : MPI_SUM, c));
    expect_ok(c, 4);
    /* non-blocking: the call returns a request at once (its check must not block), and
     * the request completes with the error */
    MPI_Request q = MPI_REQUEST_NULL;
    OT_MPI(MPI_Iallgather(buf, odd ? 3 : 2, MPI_INT, out, odd ? 3 : 2, MPI_INT, c, &q));
    expect_arg_error("iallgather, counts differ", MPI_Wait(&q, MPI_STATUS_IGNORE));
    expect_ok(c, 5);
    /* same bytes, other datatype */
    float fbuf[8] = {0};
    expect_arg_error(
        "allreduce, datatypes differ (MPI_INT vs MPI_FLOAT)",
        MPI_Allreduce(odd ? (void *)fbuf : (void *)buf, out, 8, odd ? MPI_FLOAT : MPI_INT, MPI_SUM, c));
    expect_ok(c, 7);
    /* count 0 against non-zero. Open MPI's bindings (MPI_Bcast, MPI_Ibcast, MPI_Allreduce,
     * MPI_Iallreduce, ...) return at once for count 0 without reaching any component, so
     * the rank passing 0 never takes part in that check: the others get MPI_ERR_ARG from
     * the call when its next call's record arrives, and that next call fails too */
    OT_MPI(MPI_Iallreduce(buf, out, odd ? 0 : 4, MPI_INT, MPI_SUM, c, &q));
    if (odd) {
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        expect_arg_error("allreduce after a count-0 iallreduce",
                         MPI_Allreduce(buf, out, 4, MPI_INT, MPI_SUM, c));
    } else {
        expect_arg_error("iallreduce, count 0 on another rank", MPI_Wait(&q, MPI_STATUS_IGNORE));
    }
    expect_ok(c, 9);
    int counts[64];
    for (int i = 0; i < ot_size; i++)
        counts[i] = 2 + (odd && i == 0);
    expect_arg_error("reduce_scatter, recvcounts differ",
                     MPI_Reduce_scatter(buf, out, counts, MPI_INT, MPI_SUM, c));
    expect_ok(c, 6);

    OT_MPI(MPI_Comm_free(&c));
    MPI_Barrier(MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf("OK t_check: 8 mismatches caught with MPI_ERR_ARG on %d ranks, communicator still usable\n",
               ot_size);
    MPI_Finalize();
    return 0;
}
