/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_comms: many communicators at once.
 *   world dup, MPI_Comm_split odd/even, N x MPI_Comm_dup, a split into halves, a
 *   reversed-rank split; one dfccl communicator each. Every round submits several
 *   collectives on every communicator (all outstanding together), then one
 *   dfcclWaitAll; results checked. At the end dfcclCommGetStats must count exactly
 *   the collectives run, then every communicator is destroyed and a fresh one
 *   still works. A burst phase keeps N requests outstanding on each of two
 *   communicators (rank-specific interleaving) and completes them in reverse order.
 *
 * usage: t_comms [--rounds R] [--dups N] [--burst N]
 */
#include "test_common.h"

#define MAXC 64

typedef struct {
    const char *kind;
    MPI_Comm mc;
    dfcclComm_t dc;
    int P, me;
    uint64_t run; /* collectives run on it (this rank) */
} comm_t;

/* The communicators (cs zeroed): a world dup, a parity split, ndup dups, a split into halves, a
 * reversed-rank split, each with its dfccl communicator; returns how many. */
static int create_comms(comm_t *cs, int ndup)
{
    int nc = 0;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &cs[nc].mc));
    cs[nc++].kind = "world-dup";
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, tc_rank % 2, tc_rank, &cs[nc].mc));
    cs[nc++].kind = "split-parity";
    for (int i = 0; i < ndup; i++) {
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &cs[nc].mc));
        cs[nc++].kind = "dup";
    }
    MPI_CHECK(MPI_Comm_split(cs[2 % nc].mc, tc_rank < tc_size / 2, tc_rank, &cs[nc].mc));
    cs[nc++].kind = "split-halves";
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, tc_size - tc_rank, &cs[nc].mc));
    cs[nc++].kind = "split-reversed";

    /* one dfccl communicator per MPI communicator; rank and size must agree */
    for (int k = 0; k < nc; k++) {
        int mr, ms;
        MPI_Comm_rank(cs[k].mc, &mr);
        MPI_Comm_size(cs[k].mc, &ms);
        CHECK(dfcclCommInitMPI(&cs[k].dc, cs[k].mc));
        CHECK(dfcclCommRank(cs[k].dc, &cs[k].me));
        CHECK(dfcclCommSize(cs[k].dc, &cs[k].P));
        if (cs[k].me != mr || cs[k].P != ms)
            TC_FAIL("comm#%d (%s): dfccl rank/size %d/%d != MPI %d/%d", k, cs[k].kind, cs[k].me, cs[k].P, mr,
                    ms);
    }
    for (int k = 0; k < nc; k++)
        for (int j = 0; j < k; j++)
            if (cs[k].dc == cs[j].dc)
                TC_FAIL("comm#%d and comm#%d have the same handle", k, j);
    return nc;
}

/* burst: many requests outstanding on two communicators at once, submitted in a
 * rank-specific interleaving, completed in reverse order with dfcclWait; returns how
 * many ran. */
static size_t run_burst(comm_t *cs, int nc, int burst)
{
    const int per = burst;
    int ka = 0, kb = nc > 2 ? 2 : 0;
    int nreq = ka == kb ? per : 2 * per;
    tc_case_t *bc = tc_malloc(sizeof(tc_case_t) * (size_t)nreq);
    int na = 0, nb = 0, n = 0;
    tc_rng_t mine;
    tc_rng_seed(&mine, 0xb0a5ull ^ ((uint64_t)tc_rank << 20));
    while (n < nreq) {
        int useb = kb != ka && (na >= per || (nb < per && tc_rng_below(&mine, 2)));
        int k = useb ? kb : ka;
        int m = useb ? nb++ : na++;
        tc_rng_t g; /* identical on every rank */
        tc_rng_seed(&g, 0xb0b0ull ^ ((uint64_t)k << 32) ^ (uint64_t)m);
        tc_case_t *c = &bc[n];
        memset(c, 0, sizeof *c);
        c->coll = (tc_coll_t)tc_rng_below(&g, TC_NCOLL);
        tc_random_type_op(&g, c->coll, &c->t, &c->op);
        c->count = tc_rng_below(&g, 300);
        c->inplace = tc_coll_has_inplace(c->coll) ? (int)tc_rng_below(&g, 2) : 0;
        c->root = tc_coll_has_root(c->coll) ? (int)tc_rng_below(&g, (uint64_t)cs[k].P) : 0;
        c->seed = tc_rng_next(&g);
        c->comm = cs[k].dc;
        c->P = cs[k].P;
        c->me = cs[k].me;
        c->label = k;
        tc_case_setup(c);
        tc_case_submit(c);
        cs[k].run++;
        n++;
    }
    for (int i = nreq - 1; i >= 0; i--) {
        dfcclResult_t r = dfcclWait(&bc[i].req);
        if (r != dfcclSuccess)
            TC_FAIL("burst request %d (comm#%d %s count=%zu): dfcclWait returned %d (%s): %s", i, bc[i].label,
                    tc_coll_names[bc[i].coll], bc[i].count, (int)r, dfcclGetErrorString(r),
                    dfcclGetLastError());
        if (bc[i].req != NULL)
            TC_FAIL("burst request %d not NULL after dfcclWait", i);
    }
    size_t bad = 0;
    for (int i = 0; i < nreq; i++) {
        bad += tc_case_check(&bc[i]);
        tc_case_free(&bc[i]);
    }
    if (bad)
        TC_FAIL("burst: %zu elements wrong", bad);
    free(bc);
    return (size_t)nreq;
}

/* statistics: exactly what this rank ran on each communicator */
static void check_stats(const comm_t *cs, int nc)
{
    for (int k = 0; k < nc; k++) {
        dfcclStats_t st;
        CHECK(dfcclCommGetStats(cs[k].dc, &st));
        if (st.submitted != cs[k].run || st.completed != cs[k].run)
            TC_FAIL("comm#%d (%s): stats submitted=%llu completed=%llu, expected %llu each", k, cs[k].kind,
                    (unsigned long long)st.submitted, (unsigned long long)st.completed,
                    (unsigned long long)cs[k].run);
        if (tc_rank == 0)
            printf("t_comms: comm#%d %-14s P=%d completed=%llu preemptions=%llu stalls=%llu shm=%llu\n", k,
                   cs[k].kind, cs[k].P, (unsigned long long)st.completed, (unsigned long long)st.preemptions,
                   (unsigned long long)st.stalls, (unsigned long long)st.shm_bytes);
    }
}

/* a fresh communicator after all were destroyed still works */
static void check_fresh_comm(void)
{
    dfcclComm_t fresh;
    CHECK(dfcclCommInitMPI(&fresh, MPI_COMM_WORLD));
    tc_case_t c;
    memset(&c, 0, sizeof c);
    c.coll = TC_ALLREDUCE;
    c.t = dfcclInt64;
    c.op = dfcclSum;
    c.count = 5000;
    c.seed = 777;
    c.comm = fresh;
    c.P = tc_size;
    c.me = tc_rank;
    c.label = -1;
    tc_case_setup(&c);
    tc_case_submit(&c);
    CHECK(dfcclWait(&c.req));
    if (tc_case_check(&c))
        TC_FAIL("allreduce on a fresh communicator after destroying all others");
    tc_case_free(&c);
    CHECK(dfcclCommDestroy(fresh));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    int rounds = 8, ndup = 6, burst = 150;
    if (tc_arg_value(argc, argv, "--rounds"))
        rounds = atoi(tc_arg_value(argc, argv, "--rounds"));
    if (tc_arg_value(argc, argv, "--dups"))
        ndup = atoi(tc_arg_value(argc, argv, "--dups"));
    if (tc_arg_value(argc, argv, "--burst"))
        burst = atoi(tc_arg_value(argc, argv, "--burst"));
    if (ndup > MAXC - 8)
        ndup = MAXC - 8;

    comm_t cs[MAXC];
    memset(cs, 0, sizeof cs);
    const int nc = create_comms(cs, ndup);

    const int per_comm = 3;
    tc_case_t *cases = tc_malloc(sizeof(tc_case_t) * (size_t)(nc * per_comm));
    dfcclRequest_t *reqs = tc_malloc(sizeof(dfcclRequest_t) * (size_t)(nc * per_comm));
    static const size_t sizes[] = {0, 1, 7, 100, 1000, 4099, 40000, 70001};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    double t0 = MPI_Wtime();
    size_t total = 0;

    for (int round = 0; round < rounds; round++) {
        int n = 0;
        for (int j = 0; j < nc; j++) {
            int k = (j + round) % nc; /* rotate the communicator order every round */
            for (int m = 0; m < per_comm; m++) {
                tc_rng_t g; /* identical on every rank of the communicator */
                tc_rng_seed(&g, ((uint64_t)round << 32) ^ ((uint64_t)k << 8) ^ (uint64_t)m);
                tc_case_t *c = &cases[n];
                memset(c, 0, sizeof *c);
                c->coll = (tc_coll_t)tc_rng_below(&g, TC_NCOLL);
                tc_random_type_op(&g, c->coll, &c->t, &c->op);
                c->count = sizes[tc_rng_below(&g, (uint64_t)nsizes)];
                c->inplace = tc_coll_has_inplace(c->coll) ? (int)tc_rng_below(&g, 2) : 0;
                c->root = tc_coll_has_root(c->coll) ? (int)tc_rng_below(&g, (uint64_t)cs[k].P) : 0;
                c->seed = tc_rng_next(&g);
                c->misalign = tc_rng_below(&g, 4) == 0;
                c->comm = cs[k].dc;
                c->P = cs[k].P;
                c->me = cs[k].me;
                c->label = k;
                tc_case_setup(c);
                tc_case_submit(c);
                reqs[n] = c->req;
                cs[k].run++;
                n++;
            }
        }
        dfcclResult_t r = dfcclWaitAll(n, reqs);
        if (r != dfcclSuccess)
            TC_FAIL("round %d: dfcclWaitAll returned %d (%s): %s", round, (int)r, dfcclGetErrorString(r),
                    dfcclGetLastError());
        size_t bad = 0;
        for (int i = 0; i < n; i++) {
            if (reqs[i] != NULL)
                TC_FAIL("round %d: request %d not NULL after dfcclWaitAll", round, i);
            bad += tc_case_check(&cases[i]);
            tc_case_free(&cases[i]);
        }
        if (bad)
            TC_FAIL("round %d: %zu elements wrong", round, bad);
        total += (size_t)n;
    }

    total += run_burst(cs, nc, burst);

    check_stats(cs, nc);

    for (int k = 0; k < nc; k++) {
        CHECK(dfcclCommDestroy(cs[k].dc));
        MPI_Comm_free(&cs[k].mc);
    }

    check_fresh_comm();

    free(cases);
    free(reqs);
    MPI_Barrier(MPI_COMM_WORLD);
    if (tc_rank == 0) {
        printf("t_comms: %d communicators, %d rounds, %zu collectives, %.2f s, np=%d\n", nc, rounds, total,
               MPI_Wtime() - t0, tc_size);
        printf("OK\n");
    }
    MPI_Finalize();
    return 0;
}
