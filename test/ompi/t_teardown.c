/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Communicators freed, or left to MPI_Finalize, while their engine set-up may still be
 * in flight (run it with coll_dfccl_eager=1: the set-up starts at MPI_Comm_dup):
 *   - freed with a non-blocking call pending that does not wait for the set-up (a user
 *     op: staged or previous path), then waited for;
 *   - freed right after MPI_Comm_dup;
 *   - never freed (MPI_Finalize tears it down).
 * Every result is checked; the program must end cleanly on every rank.
 *
 *   t_teardown [--n 50]
 */
#include "ompi_test.h"

static void my_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        if (((int *)in)[i] > ((int *)inout)[i])
            ((int *)inout)[i] = ((int *)in)[i];
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int n = atoi(ot_opt(argc, argv, "--n", "50"));
    MPI_Op op;
    OT_MPI(MPI_Op_create(my_max, 1, &op));
    int v[16], out[16];
    for (int i = 0; i < n; i++) {
        MPI_Comm c;
        OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        if (i % 2 == 0) {
            for (int k = 0; k < 16; k++)
                v[k] = ot_rank * 16 + k + i;
            MPI_Request q;
            OT_MPI(MPI_Iallreduce(v, out, 16, MPI_INT, op, c, &q));
            OT_MPI(MPI_Comm_free(&c));
            OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
            for (int k = 0; k < 16; k++)
                if (out[k] != (ot_size - 1) * 16 + k + i)
                    OT_FAIL("round %d element %d: got %d", i, k, out[k]);
        } else {
            OT_MPI(MPI_Comm_free(&c));
        }
    }
    MPI_Comm left[4];
    for (int i = 0; i < 4; i++)
        OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &left[i])); /* never freed */
    MPI_Op_free(&op);
    MPI_Barrier(MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf("OK t_teardown: %d communicators freed with their set-up possibly in flight, 4 left to "
               "MPI_Finalize, on %d ranks\n",
               n, ot_size);
    MPI_Finalize();
    return 0;
}
