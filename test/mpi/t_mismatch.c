/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_mismatch: a knob that shapes a communicator (its FIFOs or its choice of algorithm)
 * set differently on the last rank. dfcclCommInit must fail on every rank, at once, with
 * dfcclInvalidArgument and a message naming the knob, instead of laying out FIFOs the
 * ranks disagree on (corrupt results) or running different algorithms (a hang). The
 * suite checks that no shared-memory segment is left behind.
 *
 * With --refused the last rank's value is one the library refuses (a malformed number,
 * DFCCL_GPU=0 beside ranks with the GPU backend): every rank must fail alike, its
 * message naming the last rank and its value (with --refused-code the result code that
 * is expected, invalid-argument or invalid-usage), instead of the others hanging in the
 * first all-gather that the last rank never reached.
 *
 * usage: t_mismatch NAME VALUE VALUE_OF_THE_LAST_RANK [--refused [--refused-code usage]]
 */
#include "test_common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    if (argc < 4) {
        fprintf(stderr,
                "usage: t_mismatch NAME VALUE VALUE_OF_THE_LAST_RANK [--refused [--refused-code usage]]\n");
        tc_abort();
    }
    const int refused = argc > 4 && !strcmp(argv[4], "--refused");
    const dfcclResult_t want =
        argc > 6 && !strcmp(argv[6], "usage") ? dfcclInvalidUsage : dfcclInvalidArgument;
    char who[64], what[256];
    snprintf(who, sizeof who, "rank %d of %d", tc_size - 1, tc_size);
    snprintf(what, sizeof what, "%s=%s", argv[1], argv[3]);
    /* before the library reads its environment (at the first communicator) */
    setenv(argv[1], tc_rank == tc_size - 1 ? argv[3] : argv[2], 1);
    dfcclComm_t c = NULL;
    const dfcclResult_t r = dfcclCommInitMPI(&c, MPI_COMM_WORLD);
    const char *msg = dfcclGetLastError();
    if (r != want || c != NULL)
        TC_FAIL("dfcclCommInit with %s=%s on rank %d: %s (%d), expected %s", argv[1], getenv(argv[1]),
                tc_rank, dfcclGetErrorString(r), (int)r, dfcclGetErrorString(want));
    if (!refused && (!msg || !strstr(msg, argv[1]) || !strstr(msg, "differs between ranks")))
        TC_FAIL("the message does not name %s: '%s'", argv[1], msg ? msg : "(none)");
    if (refused && (!msg || !strstr(msg, who) || !strstr(msg, what)))
        TC_FAIL("the message does not name %s and %s: '%s'", who, what, msg ? msg : "(none)");
    if (tc_rank == 0)
        printf("case: %s=%s, %s on the last rank -> %s: %s\n", argv[1], argv[2], argv[3],
               dfcclGetErrorString(r), msg);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank came back: nobody waited for the others */
    if (tc_rank == 0)
        printf("t_mismatch: %s %s / %s refused on %d ranks: %s\nOK\n", argv[1], argv[2], argv[3], tc_size,
               msg);
    MPI_Finalize();
    return 0;
}
