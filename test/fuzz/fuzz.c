/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The deadlock fuzzer's program: one random, valid program of collectives per seed,
 * run on every rank and checked element by element against a host reference.
 *
 * Built twice from this file: fz_native (the native API, dfccl*) and, with -DFZ_MPI,
 * fz_mpi (plain MPI, run with mca_coll_dfccl loaded and coll_dfccl_host_buffers=1, so
 * the component puts the host buffers on the engine's CPU daemon).
 *
 * The program (the same on every rank: it depends on the seed and the world size only)
 *   - communicators: a duplicate of world, then creation events spread over the phases:
 *     duplicates, reordered duplicates (keys permuted), splits into 2-3 colours and
 *     random overlapping subsets; some are freed at the end of a phase (mid-program);
 *   - phases: at the start of each the main thread creates that phase's communicators
 *     (every world rank, in one order), then T host threads each run the collectives of
 *     their own communicators (communicator k belongs to thread k mod T), then the main
 *     thread frees the communicators whose last phase it was;
 *   - collectives: allreduce, reduce, bcast, allgather, reduce_scatter, alltoall,
 *     barrier, gather, scatter, gatherv, scatterv, allgatherv, alltoallv; every type
 *     (native: float16 and bfloat16 too) and valid op; sizes from 0 over the LL round
 *     (up to 1 KiB), a few KiB, tens of KiB to 4 MiB (one-shot, direct exchange, ring)
 *     to 8 MiB; in place sometimes; v-forms with uneven counts and gaps; blocking
 *     (submit and wait) or non-blocking; some waited only in the next phase.
 *   - order: each rank issues its thread's collectives in its own interleaving, which
 *     keeps every communicator's order (so the program is valid MPI) and the global
 *     order of the blocking ones (so no rank waits on the host of a rank that waits on
 *     it). Different communicators interleave differently on every rank: what hangs
 *     run-to-completion libraries. Non-blocking ones are then waited in random groups
 *     (dfcclWait, dfcclWaitAll, a dfcclTest loop; MPI_Wait, MPI_Waitall, MPI_Test).
 *   - faults (--faults): "late": now and then a rank sleeps up to 100 ms before a
 *     collective; "kill": in the last phase one rank raises SIGKILL after a random
 *     number of its submissions, and every survivor must then end with an error (the
 *     phase ends with a blocking barrier on the world duplicate, which the victim never
 *     reaches; fz_mpi: a 1-element allreduce, and no MPI_Barrier nor 0-element call in
 *     kill programs, since the component leaves those to Open MPI's own components) and
 *     print "FZ-SURVIVOR", never hang. Run kill programs with `mpirun --enable-recovery`.
 *
 * Oracle: every input element is a hash of (seed, rank, index) (test/mpi/test_common.h:
 * not all equal, not all zero, exact in every type and op), every receive buffer starts
 * poisoned and lies between guard zones; after completion the whole receive buffer
 * (gaps and non-root buffers that must stay untouched included) is compared with a
 * reference computed on the host, inputs that are not in place must be unchanged and
 * the guards intact.
 *
 * Hangs: a watchdog thread prints "HANG: ..." with this rank's pending collectives and
 * _exit(3)s when nothing was submitted or completed for --stall seconds.
 *
 * usage: fz_native|fz_mpi --seed S [--stall SEC] [--faults none|late|kill|any] [--threads T]
 *                         [--keep-ops all|LIST] [--keep-comms all|LIST] [--print] [--count]
 *   --keep-ops / --keep-comms  run only these collectives / communicators (ids as
 *                         --print shows them; comma lists); what the shrinker passes
 *   --print               rank 0 prints the program before running it
 *   --inject-wrong OP     after collective OP completes, communicator rank 0 flips one bit
 *                         of one received element before the check: the oracle must
 *                         report it (the suite's proof that the oracle and shrinker bite)
 *   --count               rank 0 prints "ops N comms M" and "op-comms" (each collective's
 *                         communicator), then every rank exits (no run)
 * fz_native_dev (-DFZ_CUDA, built where CUDA is; run on the GPU machine) takes --device:
 * every buffer is then a cudaMalloc copy of the host one (the GPU daemon runs the
 * collectives) and, before one submission in four, the rank calls cudaDeviceSynchronize,
 * cudaFree or waits for a cudaMemsetAsync on the legacy stream while collectives are
 * pending. Without --device it is fz_native.
 * Output: rank 0 prints "OK fuzz ..." at the end; a wrong element is a MISMATCH line and
 * exit 1 (MPI_Abort); a hang a HANG line and exit 3.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "../mpi/test_common.h"

#ifdef FZ_CUDA
#include <cuda_runtime.h>
#endif

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
    FZ_NCOLL
} fz_coll_t;

static const char *const fz_coll_names[FZ_NCOLL] = {
    "allreduce", "reduce",  "bcast",   "allgather", "reduce_scatter", "alltoall", "barrier",
    "gather",    "scatter", "gatherv", "scatterv",  "allgatherv",     "alltoallv"};

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

static fz_prog_t prog;
static double stall_s = 20;
static int inject_op = -1; /* --inject-wrong: the oracle's own test */

/* ------------------------------------------------------------------ the generator */

static int fz_threads_of(uint64_t seed)
{
    tc_rng_t g;
    tc_rng_seed(&g, seed ^ 0x7472656164ull);
    uint64_t u = tc_rng_below(&g, 10);
    return u < 6 ? 1 : u < 9 ? 2 : 3;
}

static int fz_has_root(fz_coll_t c)
{
    return c == FZ_REDUCE || c == FZ_BCAST || c == FZ_GATHER || c == FZ_SCATTER || c == FZ_GATHERV ||
           c == FZ_SCATTERV;
}

static int fz_has_op(fz_coll_t c)
{
    return c == FZ_ALLREDUCE || c == FZ_REDUCE || c == FZ_REDUCESCATTER;
}

/* bytes of one rank's piece: 0, the LL round, a few KiB, one-shot/direct/ring, large */
static size_t fz_size_class(tc_rng_t *g)
{
    uint64_t u = tc_rng_below(g, 100);
    if (u < 3)
        return 0;
    if (u < 38)
        return 1 + tc_rng_below(g, 1024);
    if (u < 63)
        return 1024 + tc_rng_below(g, 7 * 1024);
    if (u < 88)
        return 8192 + tc_rng_below(g, 248 * 1024);
    if (u < 97)
        return 256 * 1024 + tc_rng_below(g, 3840 * 1024);
    return 4 * 1024 * 1024 + tc_rng_below(g, 4 * 1024 * 1024);
}

static void fz_add_comm(fz_prog_t *pr, int event, int phase, const char *kind, const int *color, int want,
                        const int *key)
{
    fz_comm_t *c = &pr->comm[pr->ncomm];
    memset(c, 0, sizeof *c);
    c->event = event;
    c->create_phase = phase;
    c->free_phase = pr->nphase; /* at the end */
    snprintf(c->kind, sizeof c->kind, "%s", kind);
    /* communicator ranks as MPI_Comm_split orders them: by key, then world rank */
    int order[FZ_MAXP], n = 0;
    for (int r = 0; r < pr->P; r++)
        if (color[r] == want)
            order[n++] = r;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && key[order[j - 1]] > key[order[j]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int r = 0; r < pr->P; r++)
        c->rank_of[r] = -1;
    for (int i = 0; i < n; i++) {
        c->members[i] = order[i];
        c->rank_of[order[i]] = i;
    }
    c->n = n;
    c->owner = pr->ncomm % pr->T;
    pr->ncomm++;
}

static void fz_gen_op(fz_prog_t *pr, tc_rng_t *g, int k, int phase, int mpi)
{
    fz_op_t *o = &pr->op[pr->nops];
    const fz_comm_t *c = &pr->comm[k];
    memset(o, 0, sizeof *o);
    o->id = pr->nops;
    o->comm = k;
    o->phase = phase;
    o->coll = tc_rng_below(g, 20) == 0 ? FZ_BARRIER : (fz_coll_t)tc_rng_below(g, FZ_NCOLL);
    /* MPI kill programs: MPI_Barrier is Open MPI's own (the component leaves it to the
     * other components), which waits for a dead rank forever by design */
    while (mpi && pr->kill && o->coll == FZ_BARRIER)
        o->coll = (fz_coll_t)tc_rng_below(g, FZ_NCOLL);
    int ntypes = mpi ? 8 : TC_NTYPES; /* no float16 / bfloat16 in MPI */
    static const dfcclDataType_t mpi_types[8] = {dfcclInt8,  dfcclUint8,  dfcclInt32,   dfcclUint32,
                                                 dfcclInt64, dfcclUint64, dfcclFloat32, dfcclFloat64};
    o->t = mpi ? mpi_types[tc_rng_below(g, 8)] : tc_all_types[tc_rng_below(g, (uint64_t)ntypes)];
    o->op = TC_COPY;
    if (fz_has_op(o->coll))
        do
            o->op = tc_all_ops[tc_rng_below(g, TC_NOPS)];
        while (!tc_op_valid(o->t, o->op));
    size_t es = tc_type_size(o->t), bytes = fz_size_class(g);
    /* N-fold buffers: at most 1 MiB a piece */
    int nfold = o->coll == FZ_ALLGATHER || o->coll == FZ_REDUCESCATTER || o->coll == FZ_ALLTOALL ||
                o->coll == FZ_GATHER || o->coll == FZ_SCATTER || o->coll >= FZ_GATHERV;
    if (nfold && bytes > (1u << 20))
        bytes = (1u << 20) - tc_rng_below(g, 4096);
    o->n = bytes / es;
    if (bytes && !o->n)
        o->n = 1;
    if (o->coll == FZ_BARRIER)
        o->n = 0;
    /* MPI kill programs: the component leaves a call that moves nothing to Open MPI's own
     * components too (an MPI_Ialltoall of 0 elements to libnbc), which wait for a dead rank
     * forever as MPI_Barrier does; no draw, so the rest of the program is unchanged */
    else if (mpi && pr->kill && o->n == 0)
        o->n = 1;
    o->root = fz_has_root(o->coll) ? (int)tc_rng_below(g, (uint64_t)c->n) : 0;
    o->inplace = (o->coll == FZ_ALLREDUCE || o->coll == FZ_ALLGATHER) && tc_rng_below(g, 3) == 0;
    o->blocking = tc_rng_below(g, 5) == 0;
    o->deferred = !o->blocking && phase + 1 < pr->nphase && c->free_phase > phase && tc_rng_below(g, 6) == 0;
    o->late_rank = -1;
    if (pr->late && tc_rng_below(g, 15) == 0) {
        o->late_rank = c->members[tc_rng_below(g, (uint64_t)c->n)];
        o->late_ms = 1 + (int)tc_rng_below(g, 100);
    }
    o->seed = tc_rng_next(g);
    pr->nops++;
}

static void fz_generate(fz_prog_t *pr, uint64_t seed, int P, int mpi, int late, int kill, int threads)
{
    memset(pr, 0, sizeof *pr);
    pr->seed = seed;
    pr->P = P;
    pr->T = threads > 0 ? threads : fz_threads_of(seed);
    pr->late = late;
    pr->kill = kill && P >= 2;
    tc_rng_t g;
    tc_rng_seed(&g, seed);
    pr->nphase = 1 + (int)tc_rng_below(&g, FZ_MAXPHASE);
    int color[FZ_MAXP], key[FZ_MAXP];
    for (int r = 0; r < P; r++) {
        color[r] = 0;
        key[r] = r;
    }
    fz_add_comm(pr, -1, 0, "world-dup", color, 0, key);
    int nev = 1 + (int)tc_rng_below(&g, 5);
    for (int e = 0; e < nev && pr->nevent < FZ_MAXEV; e++) {
        fz_event_t *ev = &pr->ev[pr->nevent];
        ev->phase = (int)tc_rng_below(&g, (uint64_t)pr->nphase);
        if (pr->kill)
            ev->phase = (int)tc_rng_below(&g, (uint64_t)(pr->nphase > 1 ? pr->nphase - 1 : 1));
        ev->first = pr->ncomm;
        uint64_t kind = tc_rng_below(&g, 4);
        int perm[FZ_MAXP];
        for (int r = 0; r < P; r++)
            perm[r] = r;
        if (kind != 0)
            tc_shuffle_int(&g, perm, P);
        const char *name = "dup";
        int ncol = 1;
        if (kind == 0 || kind == 1) {
            name = kind ? "reordered-dup" : "dup";
            for (int r = 0; r < P; r++)
                color[r] = 0;
        } else if (kind == 2) {
            name = "split";
            ncol = P >= 3 ? 2 + (int)tc_rng_below(&g, 2) : 2;
            uint64_t how = tc_rng_below(&g, 3);
            for (int r = 0; r < P; r++)
                color[r] = how == 0   ? r % ncol
                           : how == 1 ? r * ncol / P
                                      : (int)tc_rng_below(&g, (uint64_t)ncol);
        } else {
            name = "subset";
            int want = P <= 2 ? P : 2 + (int)tc_rng_below(&g, (uint64_t)(P - 1));
            for (int r = 0; r < P; r++)
                color[perm[r]] = r < want ? 0 : -1;
        }
        for (int r = 0; r < P; r++) {
            ev->color[r] = color[r];
            ev->key[r] = perm[r];
        }
        int made = 0;
        for (int cc = 0; cc < ncol && pr->ncomm < FZ_MAXCOMM; cc++) {
            int any = 0;
            for (int r = 0; r < P; r++)
                any |= color[r] == cc;
            if (!any) { /* an empty colour: nobody is in it */
                for (int r = 0; r < P; r++)
                    if (ev->color[r] == cc)
                        ev->color[r] = -1;
                continue;
            }
            /* renumber colours so that colour c is communicator first + c */
            for (int r = 0; r < P; r++)
                if (color[r] == cc)
                    ev->color[r] = made;
            char kn[24];
            snprintf(kn, sizeof kn, ncol > 1 ? "%s[%d]" : "%s", name, cc);
            fz_add_comm(pr, pr->nevent, ev->phase, kn, ev->color, made, ev->key);
            made++;
        }
        ev->ncolors = made;
        if (!made)
            continue;
        /* freed mid-program now and then */
        if (tc_rng_below(&g, 5) < 2 && !pr->kill)
            for (int k = ev->first; k < ev->first + made; k++)
                pr->comm[k].free_phase =
                    ev->phase + (int)tc_rng_below(&g, (uint64_t)(pr->nphase - ev->phase));
        pr->nevent++;
    }
    /* collectives, phase by phase, in one global order */
    for (int p = 0; p < pr->nphase; p++) {
        int live[FZ_MAXCOMM], nlive = 0;
        for (int k = 0; k < pr->ncomm; k++)
            if (pr->comm[k].create_phase <= p && pr->comm[k].free_phase >= p)
                live[nlive++] = k;
        int nops = 1 + (int)tc_rng_below(&g, (uint64_t)(3 * nlive));
        for (int i = 0; i < nops && pr->nops < FZ_MAXOPS - 1; i++)
            fz_gen_op(pr, &g, live[tc_rng_below(&g, (uint64_t)nlive)], p, mpi);
    }
    if (pr->kill) {
        pr->victim = (int)tc_rng_below(&g, (uint64_t)P);
        pr->kill_at = (int)tc_rng_below(&g, 64);
        pr->kill_delay_us = (int)tc_rng_below(&g, 20000);
        fz_op_t *o = &pr->op[pr->nops];
        memset(o, 0, sizeof *o);
        o->id = pr->nops++;
        o->comm = 0;
        o->phase = pr->nphase - 1;
        o->coll = FZ_BARRIER;
        o->t = dfcclInt8;
        o->op = TC_COPY;
        if (mpi) { /* an engine collective (see above) */
            o->coll = FZ_ALLREDUCE;
            o->t = dfcclInt32;
            o->op = dfcclSum;
            o->n = 1;
            o->seed = tc_rng_next(&g);
        }
        o->blocking = 1;
        o->final = 1;
        o->late_rank = -1;
        for (int i = 0; i < pr->nops; i++)
            if (pr->op[i].phase == pr->nphase - 1)
                pr->op[i].deferred = 0;
    }
    memset(pr->keep_op, 1, sizeof pr->keep_op);
    memset(pr->keep_comm, 1, sizeof pr->keep_comm);
}

static void fz_parse_keep(const char *s, unsigned char *keep, int n)
{
    if (!s || !strcmp(s, "all"))
        return;
    memset(keep, 0, (size_t)n);
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s)
            break;
        if (v >= 0 && v < n)
            keep[v] = 1;
        s = *end == ',' ? end + 1 : end;
    }
}

static int fz_op_kept(const fz_prog_t *pr, int i)
{
    return pr->keep_op[i] && pr->keep_comm[pr->op[i].comm];
}

static void fz_print(const fz_prog_t *pr)
{
    printf("fuzz program seed=%llu np=%d threads=%d phases=%d comms=%d ops=%d%s%s\n",
           (unsigned long long)pr->seed, pr->P, pr->T, pr->nphase, pr->ncomm, pr->nops,
           pr->late ? " late" : "", pr->kill ? " kill" : "");
    for (int k = 0; k < pr->ncomm; k++) {
        const fz_comm_t *c = &pr->comm[k];
        if (!pr->keep_comm[k])
            continue;
        printf("  comm %d: %s, phases %d..%d, thread %d, world ranks", k, c->kind, c->create_phase,
               c->free_phase, c->owner);
        for (int i = 0; i < c->n; i++)
            printf(" %d", c->members[i]);
        printf("\n");
    }
    for (int i = 0; i < pr->nops; i++) {
        const fz_op_t *o = &pr->op[i];
        if (!fz_op_kept(pr, i))
            continue;
        printf("  op %d: phase %d comm %d %s %s %s n=%zu root=%d%s%s%s%s", i, o->phase, o->comm,
               fz_coll_names[o->coll], tc_type_name(o->t), tc_op_name(o->op), o->n, o->root,
               o->inplace ? " inplace" : "", o->blocking ? " blocking" : "", o->deferred ? " deferred" : "",
               o->final ? " final" : "");
        if (o->late_rank >= 0)
            printf(" late(rank %d, %d ms)", o->late_rank, o->late_ms);
        printf("\n");
    }
    if (pr->kill)
        printf("  kill: world rank %d after %d of its submissions in phase %d, +%d us\n", pr->victim,
               pr->kill_at, pr->nphase - 1, pr->kill_delay_us);
}

/* ------------------------------------------------------------------ v-collective layout */

static size_t fz_vcount(const fz_op_t *o, int i, int j)
{
    return o->n ? (size_t)(tc_mix(o->seed ^ ((uint64_t)i << 20) ^ ((uint64_t)j << 40) ^ 0xc0u) % (o->n + 1))
                : 0;
}

static size_t fz_gap(const fz_op_t *o, int i, int j, int side)
{
    return (size_t)(tc_mix(o->seed ^ ((uint64_t)i << 22) ^ ((uint64_t)j << 42) ^ (uint64_t)side) % 3);
}

/* counts and displacements of a gatherv / scatterv / allgatherv (c[r] from rank r) */
static size_t fz_vlayout(const fz_op_t *o, int P, size_t *c, size_t *d)
{
    size_t at = 0;
    for (int r = 0; r < P; r++) {
        at += fz_gap(o, r, 0, 7);
        c[r] = fz_vcount(o, r, 0);
        d[r] = at;
        at += c[r];
    }
    return at + fz_gap(o, P, 0, 7);
}

/* alltoallv: rank i's send layout (to every j) or receive layout (from every j) */
static size_t fz_a2av_layout(const fz_op_t *o, int P, int i, int recv, size_t *c, size_t *d)
{
    size_t at = 0;
    for (int j = 0; j < P; j++) {
        at += fz_gap(o, i, j, recv ? 2 : 1);
        c[j] = recv ? fz_vcount(o, j, i) : fz_vcount(o, i, j);
        d[j] = at;
        at += c[j];
    }
    return at + fz_gap(o, i, P, recv ? 2 : 1);
}

/* ------------------------------------------------------------------ one collective at run time */

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

static void *fz_alloc(size_t elems, size_t es)
{
    size_t bytes = elems * es;
    unsigned char *b = tc_malloc(bytes + 2 * FZ_GUARD);
    memset(b, FZ_GBYTE, FZ_GUARD);
    memset(b + FZ_GUARD + bytes, FZ_GBYTE, FZ_GUARD);
    return b + FZ_GUARD;
}

static void fz_release(void *p)
{
    if (p)
        free((unsigned char *)p - FZ_GUARD);
}

static size_t fz_guard_bad(const void *p, size_t bytes)
{
    if (!p)
        return 0;
    const unsigned char *lo = (const unsigned char *)p - FZ_GUARD, *hi = (const unsigned char *)p + bytes;
    size_t bad = 0;
    for (int i = 0; i < FZ_GUARD; i++)
        bad += (lo[i] != FZ_GBYTE) + (hi[i] != FZ_GBYTE);
    return bad;
}

#ifdef FZ_CUDA
/* --device: every buffer is a device copy of the host one (guard zones included), and
 * before a submission the rank now and then synchronizes the device while collectives
 * are pending (what the GPU daemon's stall quit exists for) */
static int fz_device;

#define FZ_CU(call)                                                                                          \
    do {                                                                                                     \
        cudaError_t fz_e_ = (call);                                                                          \
        if (fz_e_ != cudaSuccess)                                                                            \
            TC_FAIL("%s: %s", #call, cudaGetErrorString(fz_e_));                                             \
    } while (0)

static void fz_cuda_bind(void)
{
    const char *l = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int ndev = 0;
    FZ_CU(cudaGetDeviceCount(&ndev));
    if (ndev < 1)
        TC_FAIL("--device: no CUDA device");
    FZ_CU(cudaSetDevice((l ? atoi(l) : tc_rank) % ndev));
}

static void *fz_dev_copy(const void *host, size_t bytes)
{
    void *d = NULL;
    FZ_CU(cudaMalloc(&d, bytes + 2 * FZ_GUARD));
    FZ_CU(cudaMemcpy(d, (const char *)host - FZ_GUARD, bytes + 2 * FZ_GUARD, cudaMemcpyHostToDevice));
    return d;
}

static void fz_dev_back(void *host, void *d, size_t bytes)
{
    FZ_CU(cudaMemcpy((char *)host - FZ_GUARD, d, bytes + 2 * FZ_GUARD, cudaMemcpyDeviceToHost));
    FZ_CU(cudaFree(d));
}

/* map a host pointer into x->send or x->recv onto its device copy */
static void *fz_dev_ptr(const fz_run_t *x, void *p)
{
    if ((char *)p >= (char *)x->recv && (char *)p <= (char *)x->recv + x->recv_n * tc_type_size(x->o->t))
        return (char *)x->drecv + FZ_GUARD + ((char *)p - (char *)x->recv);
    return (char *)x->dsend + FZ_GUARD + ((char *)p - (char *)x->send);
}

static void fz_dev_sync(tc_rng_t *g)
{
    static _Thread_local void *scratch;
    switch (tc_rng_below(g, 12)) {
    case 0: FZ_CU(cudaDeviceSynchronize()); break;
    case 1: { /* a cudaFree waits for the device too */
        void *d = NULL;
        FZ_CU(cudaMalloc(&d, 4096));
        FZ_CU(cudaFree(d));
        break;
    }
    case 2: /* work on the legacy default stream, waited for */
        if (!scratch)
            FZ_CU(cudaMalloc(&scratch, 1 << 20));
        FZ_CU(cudaMemsetAsync(scratch, (int)tc_rng_below(g, 256), 1 << 20, 0));
        FZ_CU(cudaStreamSynchronize(0));
        break;
    default: break;
    }
}
#endif

static void fz_setup(fz_run_t *x, const fz_op_t *o)
{
    memset(x, 0, sizeof *x);
    const fz_comm_t *cm = &prog.comm[o->comm];
    x->o = o;
    x->P = cm->n;
    x->me = cm->rank_of[tc_rank];
    size_t n = o->n, P = (size_t)x->P, es = tc_type_size(o->t);
    int me = x->me, root = x->me == o->root;
    switch (o->coll) {
    case FZ_ALLREDUCE:
    case FZ_REDUCE: x->send_n = x->recv_n = n; break;
    case FZ_BCAST:
#ifdef FZ_MPI
        x->recv_n = n; /* one buffer: the root's holds the data */
#else
        x->send_n = x->recv_n = n;
#endif
        break;
    case FZ_ALLGATHER:
        x->send_n = n;
        x->recv_n = n * P;
        break;
    case FZ_REDUCESCATTER:
        x->send_n = n * P;
        x->recv_n = n;
        break;
    case FZ_ALLTOALL: x->send_n = x->recv_n = n * P; break;
    case FZ_BARRIER: break;
    case FZ_GATHER:
        x->send_n = n;
        x->recv_n = root ? n * P : 0;
        break;
    case FZ_SCATTER:
        x->send_n = root ? n * P : 0;
        x->recv_n = n;
        break;
    case FZ_GATHERV:
    case FZ_ALLGATHERV: {
        size_t span = fz_vlayout(o, x->P, x->c, x->d);
        x->send_n = x->c[me];
        x->recv_n = o->coll == FZ_ALLGATHERV || root ? span : 0;
        break;
    }
    case FZ_SCATTERV: {
        size_t span = fz_vlayout(o, x->P, x->c, x->d);
        x->send_n = root ? span : 0;
        x->recv_n = x->c[me];
        break;
    }
    case FZ_ALLTOALLV:
        x->send_n = fz_a2av_layout(o, x->P, me, 0, x->c, x->d);
        x->recv_n = fz_a2av_layout(o, x->P, me, 1, x->rc, x->rd);
        break;
    default: break;
    }
    if (o->inplace)
        x->send_n = 0;
    x->send = fz_alloc(x->send_n, es);
    x->recv = fz_alloc(x->recv_n, es);
    tc_fill(x->send, o->t, o->op, o->seed, me, 0, x->send_n);
    tc_poison(x->recv, x->recv_n * es);
    x->sendp = x->send;
    x->recvp = x->recv;
    if (o->inplace && o->coll == FZ_ALLREDUCE) {
        tc_fill(x->recv, o->t, o->op, o->seed, me, 0, n);
        x->sendp = x->recv;
    } else if (o->inplace && o->coll == FZ_ALLGATHER) {
        tc_fill((char *)x->recv + (size_t)me * n * es, o->t, o->op, o->seed, me, 0, n);
        x->sendp = (char *)x->recv + (size_t)me * n * es;
    }
#ifdef FZ_MPI
    if (o->coll == FZ_BCAST && root)
        tc_fill(x->recv, o->t, o->op, o->seed, me, 0, n);
#endif
#ifdef FZ_CUDA
    if (fz_device) {
        x->dsend = fz_dev_copy(x->send, x->send_n * es);
        x->drecv = fz_dev_copy(x->recv, x->recv_n * es);
        x->sendp = fz_dev_ptr(x, x->sendp);
        x->recvp = fz_dev_ptr(x, x->recvp);
    }
#endif
}

/* the expected receive buffer; returns 0 when it need not be checked */
static int fz_expect(const fz_run_t *x, void *exp)
{
    const fz_op_t *o = x->o;
    size_t n = o->n, es = tc_type_size(o->t);
    int P = x->P, me = x->me;
    tc_poison(exp, x->recv_n * es);
    switch (o->coll) {
    case FZ_ALLREDUCE: tc_ref_reduce(exp, o->t, o->op, o->seed, P, 0, n); break;
    case FZ_REDUCE:
        if (me == o->root)
            tc_ref_reduce(exp, o->t, o->op, o->seed, P, 0, n);
#ifdef FZ_MPI
        else
            return 0; /* MPI: a non-root's recvbuf is not significant */
#endif
        break;
    case FZ_BCAST: tc_fill(exp, o->t, o->op, o->seed, o->root, 0, n); break;
    case FZ_ALLGATHER:
    case FZ_GATHER:
        for (int r = 0; r < P && x->recv_n; r++)
            tc_fill((char *)exp + (size_t)r * n * es, o->t, o->op, o->seed, r, 0, n);
        break;
    case FZ_REDUCESCATTER: tc_ref_reduce(exp, o->t, o->op, o->seed, P, (size_t)me * n, n); break;
    case FZ_ALLTOALL:
        for (int p = 0; p < P; p++)
            tc_fill((char *)exp + (size_t)p * n * es, o->t, o->op, o->seed, p, (size_t)me * n, n);
        break;
    case FZ_SCATTER: tc_fill(exp, o->t, o->op, o->seed, o->root, (size_t)me * n, n); break;
    case FZ_GATHERV:
    case FZ_ALLGATHERV:
        for (int r = 0; r < P && x->recv_n; r++)
            tc_fill((char *)exp + x->d[r] * es, o->t, o->op, o->seed, r, 0, x->c[r]);
        break;
    case FZ_SCATTERV: tc_fill(exp, o->t, o->op, o->seed, o->root, x->d[me], x->c[me]); break;
    case FZ_ALLTOALLV:
        for (int p = 0; p < P; p++) {
            size_t sc[FZ_MAXP], sd[FZ_MAXP];
            fz_a2av_layout(o, P, p, 0, sc, sd);
            tc_fill((char *)exp + x->rd[p] * es, o->t, o->op, o->seed, p, sd[me], x->rc[p]);
        }
        break;
    default: break;
    }
    return 1;
}

/* number of wrong elements and guard bytes (reported on stderr) */
static size_t fz_check(const fz_run_t *x)
{
    const fz_op_t *o = x->o;
    size_t es = tc_type_size(o->t), bad = 0;
    char extra[200];
    snprintf(extra, sizeof extra, "seed=%llu op=%d comm=%d (%s) root=%d inplace=%d blocking=%d crank=%d/%d",
             (unsigned long long)prog.seed, o->id, o->comm, prog.comm[o->comm].kind, o->root, o->inplace,
             o->blocking, x->me, x->P);
    size_t m = x->recv_n > x->send_n ? x->recv_n : x->send_n;
    void *exp = tc_malloc(m * es + 1);
    if (fz_expect(x, exp))
        bad += tc_compare(fz_coll_names[o->coll], o->t, o->op, o->n, extra, x->recv, exp, x->recv_n);
    tc_fill(exp, o->t, o->op, o->seed, x->me, 0, x->send_n);
    size_t sb =
        tc_compare(fz_coll_names[o->coll], o->t, o->op, o->n, "sendbuf changed", x->send, exp, x->send_n);
    bad += sb;
    free(exp);
    size_t g = fz_guard_bad(x->send, x->send_n * es) + fz_guard_bad(x->recv, x->recv_n * es);
    if (g)
        fprintf(stderr, "[rank %d] OVERRUN %s %s: %zu guard bytes written\n", tc_rank, fz_coll_names[o->coll],
                extra, g);
    return bad + g;
}

/* ------------------------------------------------------------------ watchdog */

static _Atomic long long fz_last_ns;
static _Atomic unsigned char fz_pending[FZ_MAXOPS];
static _Atomic int fz_phase_now;

static long long fz_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void fz_progress(void)
{
    atomic_store(&fz_last_ns, fz_now_ns());
}

static void *fz_watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        tc_sleep_us(100000);
        double idle = (double)(fz_now_ns() - atomic_load(&fz_last_ns)) / 1e9;
        if (idle < stall_s)
            continue;
        char line[1024];
        int l = snprintf(line, sizeof line,
                         "HANG: seed=%llu rank %d: nothing completed for %.1f s in phase %d; pending ops:",
                         (unsigned long long)prog.seed, tc_rank, idle, atomic_load(&fz_phase_now));
        for (int i = 0; i < prog.nops && l < (int)sizeof line - 16; i++)
            if (atomic_load(&fz_pending[i]))
                l += snprintf(line + l, sizeof line - (size_t)l, " %d(%s,comm %d)", i,
                              fz_coll_names[prog.op[i].coll], prog.op[i].comm);
        printf("%s\n", line);
        fflush(stdout);
        _exit(3);
    }
    return NULL;
}

/* ------------------------------------------------------------------ submit and wait */

#ifdef FZ_MPI
static MPI_Comm mcomm[FZ_MAXCOMM];

static MPI_Datatype fz_mpi_type(dfcclDataType_t t)
{
    switch (t) {
    case dfcclInt8: return MPI_INT8_T;
    case dfcclUint8: return MPI_UINT8_T;
    case dfcclInt32: return MPI_INT32_T;
    case dfcclUint32: return MPI_UINT32_T;
    case dfcclInt64: return MPI_INT64_T;
    case dfcclUint64: return MPI_UINT64_T;
    case dfcclFloat32: return MPI_FLOAT;
    default: return MPI_DOUBLE;
    }
}

static MPI_Op fz_mpi_op(dfcclRedOp_t op)
{
    switch (op) {
    case dfcclSum: return MPI_SUM;
    case dfcclProd: return MPI_PROD;
    case dfcclMax: return MPI_MAX;
    case dfcclMin: return MPI_MIN;
    case dfcclBand: return MPI_BAND;
    case dfcclBor: return MPI_BOR;
    default: return MPI_BXOR;
    }
}

/* MPI_I<coll> (blocking: the blocking call, completed on return) */
static int fz_submit(fz_run_t *x)
{
    const fz_op_t *o = x->o;
    MPI_Comm cm = mcomm[o->comm];
    MPI_Datatype dt = fz_mpi_type(o->t);
    MPI_Op op = fz_mpi_op(o->op);
    int n = (int)o->n, b = o->blocking, P = x->P;
    /* MPI reads a non-blocking call's arrays until it completes: they live in x */
    int *c = x->ic, *d = x->id, *rc = x->irc, *rd = x->ird;
    for (int r = 0; r < P; r++) {
        c[r] = (int)x->c[r];
        d[r] = (int)x->d[r];
        rc[r] = (int)x->rc[r];
        rd[r] = (int)x->rd[r];
    }
    const void *sp = o->inplace ? MPI_IN_PLACE : x->sendp;
    void *rp = x->recvp;
    MPI_Request *q = &x->req;
    x->req = MPI_REQUEST_NULL;
    switch (o->coll) {
    case FZ_ALLREDUCE:
        return b ? MPI_Allreduce(sp, rp, n, dt, op, cm) : MPI_Iallreduce(sp, rp, n, dt, op, cm, q);
    case FZ_REDUCE:
        return b ? MPI_Reduce(sp, rp, n, dt, op, o->root, cm)
                 : MPI_Ireduce(sp, rp, n, dt, op, o->root, cm, q);
    case FZ_BCAST: return b ? MPI_Bcast(rp, n, dt, o->root, cm) : MPI_Ibcast(rp, n, dt, o->root, cm, q);
    case FZ_ALLGATHER:
        return b ? MPI_Allgather(sp, n, dt, rp, n, dt, cm) : MPI_Iallgather(sp, n, dt, rp, n, dt, cm, q);
    case FZ_REDUCESCATTER:
        return b ? MPI_Reduce_scatter_block(sp, rp, n, dt, op, cm)
                 : MPI_Ireduce_scatter_block(sp, rp, n, dt, op, cm, q);
    case FZ_ALLTOALL:
        return b ? MPI_Alltoall(sp, n, dt, rp, n, dt, cm) : MPI_Ialltoall(sp, n, dt, rp, n, dt, cm, q);
    case FZ_BARRIER: return b ? MPI_Barrier(cm) : MPI_Ibarrier(cm, q);
    case FZ_GATHER:
        return b ? MPI_Gather(sp, n, dt, rp, n, dt, o->root, cm)
                 : MPI_Igather(sp, n, dt, rp, n, dt, o->root, cm, q);
    case FZ_SCATTER:
        return b ? MPI_Scatter(sp, n, dt, rp, n, dt, o->root, cm)
                 : MPI_Iscatter(sp, n, dt, rp, n, dt, o->root, cm, q);
    case FZ_GATHERV:
        return b ? MPI_Gatherv(sp, c[x->me], dt, rp, c, d, dt, o->root, cm)
                 : MPI_Igatherv(sp, c[x->me], dt, rp, c, d, dt, o->root, cm, q);
    case FZ_SCATTERV:
        return b ? MPI_Scatterv(sp, c, d, dt, rp, c[x->me], dt, o->root, cm)
                 : MPI_Iscatterv(sp, c, d, dt, rp, c[x->me], dt, o->root, cm, q);
    case FZ_ALLGATHERV:
        return b ? MPI_Allgatherv(sp, c[x->me], dt, rp, c, d, dt, cm)
                 : MPI_Iallgatherv(sp, c[x->me], dt, rp, c, d, dt, cm, q);
    case FZ_ALLTOALLV:
        return b ? MPI_Alltoallv(sp, c, d, dt, rp, rc, rd, dt, cm)
                 : MPI_Ialltoallv(sp, c, d, dt, rp, rc, rd, dt, cm, q);
    default: return MPI_ERR_OTHER;
    }
}

static const char *fz_errstr(int rc)
{
    static _Thread_local char s[MPI_MAX_ERROR_STRING];
    int l = 0;
    MPI_Error_string(rc, s, &l);
    return s;
}

/* wait for a group of collectives in one of three ways */
static int fz_wait_group(fz_run_t **xs, int k, int how)
{
    MPI_Request q[64];
    int rc = MPI_SUCCESS;
    /* kill programs wait for every request of the group, failed or not: the buffers of
     * one still in flight are freed after this (a failed request stays allocated: MPI
     * frees none that failed) */
    if (how == 0 || k == 1) {
        for (int i = 0; i < k && (rc == MPI_SUCCESS || prog.kill); i++) {
            const int r = MPI_Wait(&xs[i]->req, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = r;
        }
    } else if (how == 1) {
        for (int i = 0; i < k; i++)
            q[i] = xs[i]->req;
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
        /* Open MPI 4.1's MPI_Waitall never returns under MPI_THREAD_MULTIPLE when one of
         * its requests has already failed: it skips the wait and then spins for ever in
         * WAIT_SYNC_RELEASE on a flag only a wait clears (ompi/request/req_wait.c; fixed
         * in 5.0). Only kill programs fail requests: they wait with MPI_Testall. */
        if (prog.kill) {
            int all = 0;
            while (!all && (rc = MPI_Testall(k, q, &all, MPI_STATUSES_IGNORE)) == MPI_SUCCESS)
                if (!all)
                    sched_yield();
        } else
#endif
            rc = MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
    } else {
        int left = k, over[64] = {0};
        while (left > 0 && (rc == MPI_SUCCESS || prog.kill)) {
            left = 0;
            for (int i = 0; i < k && (rc == MPI_SUCCESS || prog.kill); i++) {
                int done = 0;
                if (over[i] || xs[i]->req == MPI_REQUEST_NULL)
                    continue;
                const int r = MPI_Test(&xs[i]->req, &done, MPI_STATUS_IGNORE);
                if (r != MPI_SUCCESS)
                    done = 1; /* failed: complete, and left allocated by MPI */
                if (rc == MPI_SUCCESS)
                    rc = r;
                over[i] = done;
                left += !done;
            }
            if (left)
                sched_yield();
        }
    }
    return rc;
}
#define FZ_OK MPI_SUCCESS
#else
static dfcclComm_t dcomm[FZ_MAXCOMM];

static int fz_submit(fz_run_t *x)
{
    const fz_op_t *o = x->o;
    dfcclComm_t cm = dcomm[o->comm];
    dfcclRequest_t *q = &x->req;
    size_t n = o->n;
    dfcclResult_t r;
    switch (o->coll) {
    case FZ_ALLREDUCE: r = dfcclAllReduce(x->sendp, x->recvp, n, o->t, o->op, cm, q); break;
    case FZ_REDUCE: r = dfcclReduce(x->sendp, x->recvp, n, o->t, o->op, o->root, cm, q); break;
    case FZ_BCAST: r = dfcclBroadcast(x->sendp, x->recvp, n, o->t, o->root, cm, q); break;
    case FZ_ALLGATHER: r = dfcclAllGather(x->sendp, x->recvp, n, o->t, cm, q); break;
    case FZ_REDUCESCATTER: r = dfcclReduceScatter(x->sendp, x->recvp, n, o->t, o->op, cm, q); break;
    case FZ_ALLTOALL: r = dfcclAllToAll(x->sendp, x->recvp, n, o->t, cm, q); break;
    case FZ_BARRIER: r = dfcclBarrier(cm, q); break;
    case FZ_GATHER: r = dfcclGather(x->sendp, x->recvp, n, o->t, o->root, cm, q); break;
    case FZ_SCATTER: r = dfcclScatter(x->sendp, x->recvp, n, o->t, o->root, cm, q); break;
    case FZ_GATHERV:
        r = dfcclGatherv(x->sendp, x->c[x->me], x->recvp, x->c, x->d, o->t, o->root, cm, q);
        break;
    case FZ_SCATTERV:
        r = dfcclScatterv(x->sendp, x->c, x->d, x->recvp, x->c[x->me], o->t, o->root, cm, q);
        break;
    case FZ_ALLGATHERV: r = dfcclAllGatherv(x->sendp, x->c[x->me], x->recvp, x->c, x->d, o->t, cm, q); break;
    case FZ_ALLTOALLV: r = dfcclAllToAllv(x->sendp, x->c, x->d, x->recvp, x->rc, x->rd, o->t, cm, q); break;
    default: r = dfcclInternalError; break;
    }
    if (r == dfcclSuccess && o->blocking)
        r = dfcclWait(q);
    return (int)r;
}

static const char *fz_errstr(int rc)
{
    static _Thread_local char s[512];
    snprintf(s, sizeof s, "%s: %s", dfcclGetErrorString((dfcclResult_t)rc), dfcclGetLastError());
    return s;
}

static int fz_wait_group(fz_run_t **xs, int k, int how)
{
    dfcclRequest_t q[64];
    int rc = dfcclSuccess;
    if (how == 0 || k == 1) {
        for (int i = 0; i < k; i++) {
            int r = dfcclWait(&xs[i]->req);
            if (rc == dfcclSuccess)
                rc = r;
        }
    } else if (how == 1) {
        for (int i = 0; i < k; i++)
            q[i] = xs[i]->req;
        rc = dfcclWaitAll(k, q);
        for (int i = 0; i < k; i++)
            xs[i]->req = NULL;
    } else {
        int left = k;
        while (left > 0) {
            left = 0;
            for (int i = 0; i < k; i++) {
                int done = 0;
                if (!xs[i]->req)
                    continue;
                int r = dfcclTest(&xs[i]->req, &done);
                if (r != dfcclSuccess && rc == dfcclSuccess)
                    rc = r;
                left += !done;
            }
            if (left)
                sched_yield();
        }
    }
    return rc;
}
#define FZ_OK dfcclSuccess
#endif

/* ------------------------------------------------------------------ one thread's part of a phase */

typedef struct {
    int thread;
    fz_run_t *carry[FZ_MAXOPS]; /* deferred: waited in a later phase */
    int ncarry;
    size_t ran, failed, bad;
    int first_err;
    char first_err_msg[800];
} fz_thread_t;

static fz_thread_t fz_thr[FZ_MAXT];
static int fz_phase_arg;

static void fz_failed(fz_thread_t *th, const fz_op_t *o, int rc)
{
    th->failed++;
    if (!th->first_err) {
        th->first_err = 1;
        snprintf(th->first_err_msg, sizeof th->first_err_msg, "op %d (%s on comm %d): %s", o->id,
                 fz_coll_names[o->coll], o->comm, fz_errstr(rc));
    }
    if (!prog.kill) {
        fprintf(stderr, "[rank %d] FAIL seed=%llu op %d %s comm %d: error %d: %s\n", tc_rank,
                (unsigned long long)prog.seed, o->id, fz_coll_names[o->coll], o->comm, rc, fz_errstr(rc));
        tc_abort();
    }
}

static void fz_finish(fz_thread_t *th, fz_run_t *x)
{
    atomic_store(&fz_pending[x->o->id], 0);
    fz_progress();
#ifdef FZ_CUDA
    if (x->dsend) { /* results back to the host copies, then the same check */
        size_t es = tc_type_size(x->o->t);
        fz_dev_back(x->send, x->dsend, x->send_n * es);
        fz_dev_back(x->recv, x->drecv, x->recv_n * es);
    }
#endif
    if (x->o->id == inject_op && x->recv_n && prog.comm[x->o->comm].rank_of[tc_rank] == 0)
        ((unsigned char *)x->recv)[x->recv_n * tc_type_size(x->o->t) / 2] ^= 0x10; /* one bit, one element */
    size_t b = x->result == FZ_OK ? fz_check(x) : 0;
    if (b) {
        th->bad += b;
        if (!prog.kill) {
            fprintf(stderr, "[rank %d] FAIL seed=%llu op %d: %zu wrong\n", tc_rank,
                    (unsigned long long)prog.seed, x->o->id, b);
            tc_abort();
        }
    }
    fz_release(x->send);
    fz_release(x->recv);
    free(x);
}

static void *fz_thread_phase(void *arg)
{
    fz_thread_t *th = arg;
    int p = fz_phase_arg, t = th->thread;
    /* this rank's collectives of the phase, per communicator in program order */
    int q[FZ_MAXCOMM][FZ_MAXOPS / 4 + 8], qn[FZ_MAXCOMM], qh[FZ_MAXCOMM];
    int total = 0, final = -1;
    memset(qn, 0, sizeof qn);
    memset(qh, 0, sizeof qh);
    for (int i = 0; i < prog.nops; i++) {
        const fz_op_t *o = &prog.op[i];
        const fz_comm_t *c = &prog.comm[o->comm];
        if (o->phase != p || c->owner != t || c->rank_of[tc_rank] < 0 || !fz_op_kept(&prog, i))
            continue;
        if (o->final) {
            final = i;
            continue;
        }
        if (qn[o->comm] < (int)(sizeof q[0] / sizeof q[0][0])) {
            q[o->comm][qn[o->comm]++] = i;
            total++;
        }
    }
    tc_rng_t g;
    tc_rng_seed(&g, tc_mix(prog.seed ^ 0x6f72646572ull) ^ ((uint64_t)tc_rank << 32) ^ ((uint64_t)p << 8) ^
                        (uint64_t)t);
    fz_run_t *pool[FZ_MAXOPS];
    int npool = 0;
#ifdef FZ_CUDA
    tc_rng_t dg; /* device synchronizations: a stream of their own, the order stays the seed's */
    tc_rng_seed(&dg, tc_mix(prog.seed ^ 0x64657669ull) ^ ((uint64_t)tc_rank << 32) ^ ((uint64_t)p << 8) ^
                         (uint64_t)t);
    if (fz_device && t > 0)
        fz_cuda_bind();
#endif
    for (int i = 0; i < th->ncarry; i++)
        pool[npool++] = th->carry[i];
    th->ncarry = 0;
    int kill_here = prog.kill && tc_rank == prog.victim && t == 0 && p == prog.nphase - 1;
    int kill_at = kill_here ? (total ? prog.kill_at % total : 0) : -1;
    for (int s = 0; s <= total; s++) {
        if (s == kill_at) {
            printf("FZ-VICTIM: world rank %d pid %ld dies after %d of its %d submissions in phase %d\n",
                   tc_rank, (long)getpid(), s, total, p);
            fflush(stdout);
            tc_sleep_us(prog.kill_delay_us);
            raise(SIGKILL);
        }
        if (s == total)
            break;
        /* the next collective: any communicator's head, but blocking ones in program order */
        int minb = prog.nops;
        for (int k = 0; k < prog.ncomm; k++)
            for (int j = qh[k]; j < qn[k]; j++)
                if (prog.op[q[k][j]].blocking && q[k][j] < minb)
                    minb = q[k][j];
        int cand[FZ_MAXCOMM], nc = 0;
        for (int k = 0; k < prog.ncomm; k++)
            if (qh[k] < qn[k] && (!prog.op[q[k][qh[k]]].blocking || q[k][qh[k]] == minb))
                cand[nc++] = k;
        int k = cand[tc_rng_below(&g, (uint64_t)nc)];
        const fz_op_t *o = &prog.op[q[k][qh[k]++]];
        if (o->late_rank == tc_rank)
            tc_sleep_us(1000L * o->late_ms);
#ifdef FZ_CUDA
        if (fz_device)
            fz_dev_sync(&dg);
#endif
        fz_run_t *x = tc_malloc(sizeof *x);
        fz_setup(x, o);
        atomic_store(&fz_pending[o->id], 1);
        fz_progress();
        x->result = fz_submit(x);
        th->ran++;
        if (x->result != FZ_OK)
            fz_failed(th, o, x->result);
        if (o->blocking || x->result != FZ_OK)
            fz_finish(th, x);
        else if (o->deferred)
            th->carry[th->ncarry++] = x;
        else
            pool[npool++] = x;
    }
    /* wait in random groups, in this rank's own order */
    for (int i = npool - 1; i > 0; i--) {
        int j = (int)tc_rng_below(&g, (uint64_t)i + 1);
        fz_run_t *tmp = pool[i];
        pool[i] = pool[j];
        pool[j] = tmp;
    }
    for (int i = 0; i < npool;) {
        int k = 1 + (int)tc_rng_below(&g, 4);
        if (k > npool - i)
            k = npool - i;
        int how = (int)tc_rng_below(&g, 3);
        int rc = fz_wait_group(&pool[i], k, how);
        if (rc != FZ_OK)
            fz_failed(th, pool[i]->o, rc);
        for (int j = 0; j < k; j++) {
            pool[i + j]->result = rc;
            fz_finish(th, pool[i + j]);
        }
        i += k;
    }
    if (final >= 0) {
        fz_run_t *x = tc_malloc(sizeof *x);
        fz_setup(x, &prog.op[final]);
        atomic_store(&fz_pending[final], 1);
        x->result = fz_submit(x);
        th->ran++;
        if (x->result != FZ_OK)
            fz_failed(th, x->o, x->result);
        fz_finish(th, x);
    }
    return NULL;
}

/* ------------------------------------------------------------------ communicators */

static void fz_create(int p)
{
    if (p == 0 && prog.keep_comm[0]) {
#ifdef FZ_MPI
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mcomm[0]));
#else
        MPI_Comm mc;
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mc));
        CHECK(dfcclCommInitMPI(&dcomm[0], mc));
        MPI_Comm_free(&mc);
#endif
    }
    for (int e = 0; e < prog.nevent; e++) {
        const fz_event_t *ev = &prog.ev[e];
        if (ev->phase != p)
            continue;
        int any = 0;
        for (int k = ev->first; k < ev->first + ev->ncolors; k++)
            any |= prog.keep_comm[k];
        if (!any)
            continue;
        int col = ev->color[tc_rank];
        if (col >= 0 && !prog.keep_comm[ev->first + col])
            col = -1;
        MPI_Comm mc;
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, col >= 0 ? col : MPI_UNDEFINED, ev->key[tc_rank], &mc));
        if (col < 0)
            continue;
        int k = ev->first + col, r = -1;
        MPI_Comm_rank(mc, &r);
        if (r != prog.comm[k].rank_of[tc_rank])
            TC_FAIL("comm %d: MPI rank %d, the generator expected %d", k, r, prog.comm[k].rank_of[tc_rank]);
#ifdef FZ_MPI
        mcomm[k] = mc;
#else
        CHECK(dfcclCommInitMPI(&dcomm[k], mc));
        MPI_Comm_free(&mc);
#endif
        fz_progress();
    }
}

static void fz_free(int p)
{
    for (int k = 0; k < prog.ncomm; k++) {
        const fz_comm_t *c = &prog.comm[k];
        if (c->free_phase != p || c->rank_of[tc_rank] < 0 || !prog.keep_comm[k])
            continue;
#ifdef FZ_MPI
        MPI_CHECK(MPI_Comm_free(&mcomm[k]));
#else
        dfcclResult_t r = dfcclCommDestroy(dcomm[k]);
        if (r != dfcclSuccess && !prog.kill)
            TC_FAIL("dfcclCommDestroy(comm %d) returned %d: %s", k, (int)r, fz_errstr(r));
#endif
    }
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    const char *s = tc_arg_value(argc, argv, "--seed");
    uint64_t seed = s ? strtoull(s, NULL, 0) : 1;
    const char *faults = tc_arg_value(argc, argv, "--faults");
    int threads = tc_arg_value(argc, argv, "--threads") ? atoi(tc_arg_value(argc, argv, "--threads")) : 0;
    if (threads > FZ_MAXT)
        threads = FZ_MAXT;
    if (tc_arg_value(argc, argv, "--stall"))
        stall_s = atof(tc_arg_value(argc, argv, "--stall"));
    if (tc_arg_value(argc, argv, "--inject-wrong"))
        inject_op = atoi(tc_arg_value(argc, argv, "--inject-wrong"));
    int late = 0, kill = 0;
    if (faults && (!strcmp(faults, "late") || !strcmp(faults, "any")))
        late = 1;
    if (faults && (!strcmp(faults, "kill") || !strcmp(faults, "any")))
        kill = 1;
    int T = threads > 0 ? threads : fz_threads_of(seed);
    int provided = 0;
    MPI_Init_thread(&argc, &argv, T > 1 ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
    tc_init_world();
    if (tc_size > FZ_MAXP)
        TC_FAIL("at most %d ranks", FZ_MAXP);
#ifdef FZ_MPI
    const int mpi = 1;
    if (T > 1 && provided < MPI_THREAD_MULTIPLE)
        TC_FAIL("MPI_THREAD_MULTIPLE not provided (%d)", provided);
    /* errors come back to fz_failed, which names the collective (dups inherit it) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
#else
    const int mpi = 0;
#endif
    fz_generate(&prog, seed, tc_size, mpi, late, kill, T);
    fz_parse_keep(tc_arg_value(argc, argv, "--keep-ops"), prog.keep_op, FZ_MAXOPS);
    fz_parse_keep(tc_arg_value(argc, argv, "--keep-comms"), prog.keep_comm, FZ_MAXCOMM);
    if (tc_arg_flag(argc, argv, "--count")) {
        if (tc_rank == 0) {
            printf("ops %d comms %d\nop-comms", prog.nops, prog.ncomm);
            for (int i = 0; i < prog.nops; i++)
                printf(" %d", prog.op[i].comm);
            printf("\n");
        }
        MPI_Finalize();
        return 0;
    }
    if (tc_rank == 0 && tc_arg_flag(argc, argv, "--print"))
        fz_print(&prog);
#ifdef FZ_CUDA
    fz_device = tc_arg_flag(argc, argv, "--device");
    if (fz_device)
        fz_cuda_bind();
#endif
    fz_progress();
    pthread_t wd;
    if (pthread_create(&wd, NULL, fz_watchdog, NULL) != 0)
        TC_FAIL("pthread_create failed");
    double t0 = MPI_Wtime();
    for (int t = 0; t < prog.T; t++)
        fz_thr[t].thread = t;
    for (int p = 0; p < prog.nphase; p++) {
        atomic_store(&fz_phase_now, p);
        fz_create(p);
        /* kill programs: every set-up done before the victim may die */
        if (prog.kill && p + 1 == prog.nphase)
            MPI_Barrier(MPI_COMM_WORLD);
        fz_phase_arg = p;
        if (prog.T == 1) {
            fz_thread_phase(&fz_thr[0]);
        } else {
            pthread_t th[FZ_MAXT];
            for (int t = 0; t < prog.T; t++)
                if (pthread_create(&th[t], NULL, fz_thread_phase, &fz_thr[t]) != 0)
                    TC_FAIL("pthread_create failed");
            for (int t = 0; t < prog.T; t++)
                pthread_join(th[t], NULL);
        }
        fz_progress();
        if (!prog.kill || p + 1 < prog.nphase)
            fz_free(p);
    }
    size_t ran = 0, failed = 0, bad = 0;
    for (int t = 0; t < prog.T; t++) {
        ran += fz_thr[t].ran;
        failed += fz_thr[t].failed;
        bad += fz_thr[t].bad;
    }
    if (prog.kill) {
        /* the survivors: every one must have seen an error (the closing barrier at least) */
        const char *first = "";
        for (int t = 0; t < prog.T; t++)
            if (fz_thr[t].first_err) {
                first = fz_thr[t].first_err_msg;
                break;
            }
        printf("FZ-SURVIVOR: seed=%llu world rank %d: %zu collectives, %zu failed, %zu wrong%s%s\n",
               (unsigned long long)seed, tc_rank, ran, failed, bad, failed ? "; first error: " : "", first);
        fflush(stdout);
#ifndef FZ_MPI
        fz_free(prog.nphase); /* dfcclCommDestroy is local; MPI_Comm_free is left alone */
#endif
        _exit(failed && !bad ? 0 : 1);
    }
    fz_free(prog.nphase);
    double dt = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned long long all = 0, mine = ran;
    MPI_Reduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (tc_rank == 0)
        printf("OK fuzz seed=%llu np=%d threads=%d phases=%d comms=%d ops=%d: %llu collectives run, %.2f s\n",
               (unsigned long long)seed, tc_size, prog.T, prog.nphase, prog.ncomm, prog.nops, all, dt);
    MPI_Finalize();
    return 0;
}
