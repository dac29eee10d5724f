/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_config: the rules of dfcclConfig_t (dfcclCommInitConfig). Run with
 * DFCCL_SLOTS=3 DFCCL_FIFO_DEPTH=8 in the environment:
 *  - a bad field value, a bad enum and a config not made from the initializer fail with
 *    dfcclInvalidArgument naming the field, and fix nothing;
 *  - the first communicator fixes the process-wide values: its set field wins over the
 *    environment (slots 2 against DFCCL_SLOTS=3), an unset one takes the environment
 *    (fifoDepth from DFCCL_FIFO_DEPTH=8);
 *  - a later communicator whose set fields agree (or that sets none) is created; one
 *    whose set field differs fails with dfcclInvalidUsage naming the field and both
 *    values, on every rank alike (its failure travels in the first all-gather, so no
 *    rank waits there for one that returned);
 *  - a collective on the communicators that were created runs.
 *
 * usage: t_config
 */
#include "test_common.h"

/* The call must fail with @p want and a last-error text holding every one of @p words. */
static void expect_fail(const dfcclConfig_t *cfg, dfcclResult_t want, const char *what,
                        const char *const *words)
{
    dfcclComm_t c = NULL;
    dfcclResult_t r = dfcclCommInitMPIConfig(&c, MPI_COMM_WORLD, cfg);
    if (r != want)
        TC_FAIL("%s: dfcclCommInitConfig returned %s, expected %s (%s)", what, dfcclGetErrorString(r),
                dfcclGetErrorString(want), dfcclGetLastError());
    if (c)
        TC_FAIL("%s: a failed dfcclCommInitConfig left a communicator", what);
    for (; *words; words++)
        if (!strstr(dfcclGetLastError(), *words))
            TC_FAIL("%s: the message does not name '%s': %s", what, *words, dfcclGetLastError());
}

/* A sum over the ranks on @p c: proves the communicator works. */
static void allreduce_on(dfcclComm_t c, int P)
{
    int32_t in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = tc_rank * 1000 + i;
    dfcclRequest_t req;
    CHECK(dfcclAllReduce(in, out, 64, dfcclInt32, dfcclSum, c, &req));
    CHECK(dfcclWait(&req));
    for (int i = 0; i < 64; i++)
        if (out[i] != 1000 * P * (P - 1) / 2 + P * i)
            TC_FAIL("allreduce element %d: %d", i, out[i]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    const char *slots = getenv("DFCCL_SLOTS"), *depth = getenv("DFCCL_FIFO_DEPTH");
    if (!slots || strcmp(slots, "3") || !depth || strcmp(depth, "8"))
        TC_FAIL("run with DFCCL_SLOTS=3 DFCCL_FIFO_DEPTH=8");

    /* bad values: refused before anything is fixed */
    dfcclConfig_t cfg = DFCCL_CONFIG_INITIALIZER;
    cfg.slots = 100;
    expect_fail(&cfg, dfcclInvalidArgument, "slots 100",
                (const char *const[]){"config.slots=100", "[1, 64]", NULL});
    cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    cfg.chunkSize = -5;
    expect_fail(&cfg, dfcclInvalidArgument, "chunkSize -5",
                (const char *const[]){"config.chunkSize=-5", NULL});
    cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    cfg.net = (dfcclNet_t)7;
    expect_fail(&cfg, dfcclInvalidArgument, "net 7",
                (const char *const[]){"config.net=7", "auto or ucx", NULL});
    cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    cfg.magic = 0;
    expect_fail(&cfg, dfcclInvalidArgument, "no magic",
                (const char *const[]){"DFCCL_CONFIG_INITIALIZER", NULL});

    /* the first communicator: slots from its field (not DFCCL_SLOTS), the rest from the
     * environment and the defaults */
    dfcclComm_t A, B, C;
    cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    cfg.slots = 2;
    cfg.channels = 2;
    CHECK(dfcclCommInitMPIConfig(&A, MPI_COMM_WORLD, &cfg));

    /* later ones: agreeing fields pass, differing ones fail naming both values */
    cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    cfg.slots = 3; /* DFCCL_SLOTS: the field of the first communicator won */
    expect_fail(&cfg, dfcclInvalidUsage, "slots 3 after 2",
                (const char *const[]){"config.slots=3", "differs from 2", "DFCCL_SLOTS", NULL});
    cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    cfg.fifoDepth = 4; /* the default: DFCCL_FIFO_DEPTH=8 filled the unset field */
    expect_fail(&cfg, dfcclInvalidUsage, "fifoDepth 4 after the environment's 8",
                (const char *const[]){"config.fifoDepth=4", "differs from 8", NULL});
    cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    cfg.net = dfcclNetUcx;
    expect_fail(&cfg, dfcclInvalidUsage, "net ucx after auto",
                (const char *const[]){"config.net=ucx", "differs from auto", NULL});
    cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    cfg.fifoDepth = 8;
    cfg.slots = 2;
    cfg.net = dfcclNetAuto;
    CHECK(dfcclCommInitMPIConfig(&B, MPI_COMM_WORLD, &cfg));
    CHECK(dfcclCommInitMPI(&C, MPI_COMM_WORLD)); /* no field set: always agrees */

    allreduce_on(A, tc_size);
    allreduce_on(B, tc_size);
    allreduce_on(C, tc_size);
    CHECK(dfcclCommDestroy(C));
    CHECK(dfcclCommDestroy(B));
    CHECK(dfcclCommDestroy(A));
    MPI_Barrier(MPI_COMM_WORLD);
    if (tc_rank == 0)
        printf("OK\n");
    MPI_Finalize();
    return 0;
}
