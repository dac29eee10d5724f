/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_firstfail: a failed first dfcclCommInit does not poison the process; the next one,
 * with good settings, creates a communicator that works. One mode per process (the first
 * communicator of a process fixes the configuration):
 *   env        DFCCL_CHANNELS=banana set in the process: the first init fails naming it;
 *              the variable is then removed and the next init succeeds
 *   bootstrap  the first init (config.slots 2) fails in its all-gather; the next one
 *              with config.slots 4 succeeds (nothing was fixed by the failed one)
 *   shape      rank 0 asks for config.channels 2, the others 1: every rank fails naming
 *              DFCCL_CHANNELS; then every rank asks for 1 and succeeds
 * Each step prints what it tried and what it gave; rank 0 prints "OK".
 *
 * usage: t_firstfail env|bootstrap|shape
 */
#include "test_common.h"

static int fail_ag(const void *s, void *r, size_t bytes, void *ctx)
{
    (void)s, (void)r, (void)bytes, (void)ctx;
    return -1;
}

/* The call must fail with @p want and a message holding @p needle; printed on rank 0. */
static void expect(const char *what, dfcclResult_t got, dfcclResult_t want, const char *needle)
{
    if (tc_rank == 0)
        printf("case: %s -> %s: %s\n", what, dfcclGetErrorString(got), got ? dfcclGetLastError() : "");
    if (got != want)
        TC_FAIL("%s returned %s, expected %s: %s", what, dfcclGetErrorString(got), dfcclGetErrorString(want),
                dfcclGetLastError());
    if (needle && !tc_lasterr_has(needle))
        TC_FAIL("%s: the message does not name %s: %s", what, needle, dfcclGetLastError());
}

static void works(dfcclComm_t c, const char *what)
{
    tc_checked_allreduce(c, what);
    CHECK(dfcclCommDestroy(c));
    if (tc_rank == 0)
        printf("case: %s -> a checked allreduce on it is right\n", what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    const char *mode = argc > 1 ? argv[1] : "";
    dfcclComm_t c = NULL;
    dfcclConfig_t cfg = DFCCL_CONFIG_INITIALIZER;
    if (!strcmp(mode, "env")) {
        setenv("DFCCL_CHANNELS", "banana", 1);
        expect("first init with DFCCL_CHANNELS=banana", dfcclCommInitMPI(&c, MPI_COMM_WORLD),
               dfcclInvalidArgument, "DFCCL_CHANNELS=banana");
        unsetenv("DFCCL_CHANNELS");
        expect("next init, DFCCL_CHANNELS removed", dfcclCommInitMPI(&c, MPI_COMM_WORLD), dfcclSuccess, NULL);
        works(c, "the communicator of the next init");
    } else if (!strcmp(mode, "bootstrap")) {
        cfg.slots = 2;
        expect("first init (config.slots 2) with a failing all-gather",
               dfcclCommInitConfig(&c, tc_size, tc_rank, fail_ag, NULL, &cfg), dfcclBootstrapError, NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        cfg.slots = 4;
        expect("next init with config.slots 4", dfcclCommInitMPIConfig(&c, MPI_COMM_WORLD, &cfg),
               dfcclSuccess, NULL);
        works(c, "the communicator of the next init");
        cfg.slots = 2; /* now the first communicator has fixed 4 */
        expect("a later init with config.slots 2", dfcclCommInitMPIConfig(&c, MPI_COMM_WORLD, &cfg),
               dfcclInvalidUsage, "config.slots=2 differs");
    } else if (!strcmp(mode, "shape")) {
        cfg.channels = tc_rank == 0 && tc_size > 1 ? 2 : 1;
        expect("first init, config.channels 2 on rank 0 and 1 elsewhere",
               dfcclCommInitMPIConfig(&c, MPI_COMM_WORLD, &cfg),
               tc_size > 1 ? dfcclInvalidArgument : dfcclSuccess,
               tc_size > 1 ? "DFCCL_CHANNELS differs" : NULL);
        if (tc_size == 1)
            CHECK(dfcclCommDestroy(c));
        cfg.channels = 1;
        expect("next init, config.channels 1 everywhere", dfcclCommInitMPIConfig(&c, MPI_COMM_WORLD, &cfg),
               dfcclSuccess, NULL);
        works(c, "the communicator of the next init");
    } else {
        TC_FAIL("usage: t_firstfail env|bootstrap|shape");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (tc_rank == 0)
        printf("OK\n");
    MPI_Finalize();
    return 0;
}
