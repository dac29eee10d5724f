/* SPDX-License-Identifier: BSD-3-Clause */
/* The deadlock fuzzer's generator (fuzz.h): one random, valid program per seed and world
 * size, the same on every rank; the --keep-ops / --keep-comms lists; --print. */
#ifndef DFCCL_FZ_GEN_H
#define DFCCL_FZ_GEN_H

#include "fuzz.h"

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
    return c == FZ_ALLREDUCE || c == FZ_REDUCE || c == FZ_REDUCESCATTER || c == FZ_REDUCESCATTERV;
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

#endif /* DFCCL_FZ_GEN_H */
