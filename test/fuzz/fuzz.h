/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The deadlock fuzzer (fuzz.c): the program's types, one collective at run time, and the
 * program itself. The fuzzer is one translation unit, as every test program is
 * (test_common.h keeps state per unit: tc_rank). Its parts are headers of static
 * functions, each included once, each including the parts it uses:
 *   fz_gen.h         the generator: one random, valid program per seed; --keep-*, --print
 *   fz_device.h      -DFZ_CUDA, --device: device copies of the buffers, device syncs
 *   fz_data.h        one collective's buffers, layouts, reference and check (the oracle)
 *   fz_watch.h       the no-progress watchdog
 *   fz_api_native.h  communicators, submit and wait over the native API (fz_native)
 *   fz_api_mpi.h     the same over plain MPI (-DFZ_MPI: fz_mpi)
 *   fz_thread.h      one host thread's part of a phase
 *   fuzz.c           the phases and main
 */
#ifndef DFCCL_FUZZ_H
#define DFCCL_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "../mpi/test_common.h"

#define FZ_MAXP     64
#define FZ_MAXCOMM  24
#define FZ_MAXEV    12
#define FZ_MAXOPS   320
#define FZ_MAXPHASE 4
#define FZ_MAXT     3
#define FZ_GUARD    64
#define FZ_GBYTE    0x5C

typedef enum {
    FZ_ALLREDUCE,
    FZ_REDUCE,
    FZ_BCAST,
    FZ_ALLGATHER,
    FZ_REDUCESCATTER,
    FZ_ALLTOALL,
    FZ_BARRIER,
    FZ_GATHER,
    FZ_SCATTER,
    FZ_GATHERV,
    FZ_SCATTERV,
    FZ_ALLGATHERV,
    FZ_ALLTOALLV,
    FZ_REDUCESCATTERV, /* MPI_Reduce_scatter with uneven counts; dfcclReduceScatterv */
    FZ_NCOLL
} fz_coll_t;

static const char *const fz_coll_names[FZ_NCOLL] = {
    "allreduce", "reduce",  "bcast",   "allgather", "reduce_scatter", "alltoall",  "barrier",
    "gather",    "scatter", "gatherv", "scatterv",  "allgatherv",     "alltoallv", "reduce_scatterv"};

typedef struct {
    int event; /* creation event, -1 for the world duplicate */
    int create_phase, free_phase;
    int n;                /* members */
    int members[FZ_MAXP]; /* world ranks in communicator-rank order */
    int rank_of[FZ_MAXP]; /* communicator rank of each world rank, -1: not a member */
    int owner;            /* the host thread that drives it */
    char kind[24];
} fz_comm_t;

typedef struct {
    int phase;
    int first, ncolors; /* communicators first .. first + ncolors - 1 */
    int color[FZ_MAXP]; /* -1: in none */
    int key[FZ_MAXP];
} fz_event_t;

typedef struct {
    int id, comm, phase;
    fz_coll_t coll;
    dfcclDataType_t t;
    dfcclRedOp_t op;
    size_t n;
    int root, inplace, blocking, deferred;
    int late_rank, late_ms;
    int final; /* kill programs: the closing barrier on the world duplicate */
    uint64_t seed;
} fz_op_t;

typedef struct {
    uint64_t seed;
    int P, T, nphase, ncomm, nevent, nops;
    fz_comm_t comm[FZ_MAXCOMM];
    fz_event_t ev[FZ_MAXEV];
    fz_op_t op[FZ_MAXOPS];
    int late, kill, victim, kill_at, kill_delay_us;
    unsigned char keep_op[FZ_MAXOPS], keep_comm[FZ_MAXCOMM];
} fz_prog_t;

typedef struct {
    const fz_op_t *o;
    int P, me;
    void *send, *recv;     /* owned buffers (between guard zones) */
    size_t send_n, recv_n; /* their element counts */
    void *sendp, *recvp;   /* what is passed */
    size_t c[FZ_MAXP], d[FZ_MAXP], rc[FZ_MAXP], rd[FZ_MAXP];
#ifdef FZ_CUDA
    void *dsend, *drecv; /* --device: device copies of send and recv, guards included */
#endif
#ifdef FZ_MPI
    int ic[FZ_MAXP], id[FZ_MAXP], irc[FZ_MAXP], ird[FZ_MAXP];
    MPI_Request req;
#else
    dfcclRequest_t req;
#endif
    int result;
} fz_run_t;

static fz_prog_t prog; /* the program: the same on every rank */

#endif /* DFCCL_FUZZ_H */
