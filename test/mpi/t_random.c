/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_random: many communicators, random collectives, random order per rank.
 *   NCOMM (>= 32) communicators (dups of world, every 8th a parity split); each
 *   round gives every communicator 1..3 collectives (allreduce, reduce, bcast,
 *   allgather, reduce_scatter, alltoall, barrier; random type/op/size 0..~300k
 *   elements/in place/root), identical on all of its ranks; each rank submits all
 *   of them in its own random interleaving (per-communicator order kept), then
 *   waits for all of them and checks every result.
 *
 * usage: t_random [--comms N] [--rounds R] [--seed S] [--deadline SEC]
 */
#include "test_common.h"

#define MAXPER 3

/* One random collective on communicator comm (P ranks, this one me): the same draws, in
 * the same order, on each of its ranks. */
static void random_case(tc_case_t *c, tc_rng_t *g, size_t max_elems, dfcclComm_t comm, int P, int me,
                        int label)
{
    memset(c, 0, sizeof *c);
    c->coll = (tc_coll_t)tc_rng_below(g, TC_NCOLL);
    tc_random_type_op(g, c->coll, &c->t, &c->op);
    /* size: 0 with 1/10 probability, else log-uniform in [1, max_elems] */
    size_t count = 0;
    if (tc_rng_below(g, 10) != 0) {
        double u = (double)tc_rng_below(g, 1u << 20) / (double)(1u << 20);
        count = (size_t)exp(u * log((double)max_elems));
    }
    if (c->coll == TC_ALLGATHER || c->coll == TC_ALLTOALL || c->coll == TC_REDUCESCATTER)
        if (count > max_elems / (size_t)P)
            count = max_elems / (size_t)P;
    c->count = count;
    c->inplace = tc_coll_has_inplace(c->coll) ? (int)tc_rng_below(g, 2) : 0;
    c->root = tc_coll_has_root(c->coll) ? (int)tc_rng_below(g, (uint64_t)P) : 0;
    c->seed = tc_rng_next(g);
    c->misalign = tc_rng_below(g, 4) == 0;
    c->comm = comm;
    c->P = P;
    c->me = me;
    c->label = label;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    int ncomm = 32, rounds = 4;
    uint64_t seed0 = 12345;
    double deadline = 0;
    if (tc_arg_value(argc, argv, "--comms"))
        ncomm = atoi(tc_arg_value(argc, argv, "--comms"));
    if (tc_arg_value(argc, argv, "--rounds"))
        rounds = atoi(tc_arg_value(argc, argv, "--rounds"));
    if (tc_arg_value(argc, argv, "--seed"))
        seed0 = strtoull(tc_arg_value(argc, argv, "--seed"), NULL, 0);
    if (tc_arg_value(argc, argv, "--deadline"))
        deadline = atof(tc_arg_value(argc, argv, "--deadline"));
    if (ncomm < 1)
        ncomm = 1;

    MPI_Comm *mc = tc_malloc(sizeof(MPI_Comm) * (size_t)ncomm);
    dfcclComm_t *dc = tc_malloc(sizeof(dfcclComm_t) * (size_t)ncomm);
    int *P = tc_malloc(sizeof(int) * (size_t)ncomm), *me = tc_malloc(sizeof(int) * (size_t)ncomm);
    for (int k = 0; k < ncomm; k++) {
        if (k % 8 == 7)
            MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, tc_rank % 2, tc_rank, &mc[k]));
        else
            MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mc[k]));
        CHECK(dfcclCommInitMPI(&dc[k], mc[k]));
        CHECK(dfcclCommRank(dc[k], &me[k]));
        CHECK(dfcclCommSize(dc[k], &P[k]));
    }

    const size_t max_elems = 300000;
    tc_case_t *cases = tc_malloc(sizeof(tc_case_t) * (size_t)ncomm * MAXPER);
    dfcclRequest_t *reqs = tc_malloc(sizeof(dfcclRequest_t) * (size_t)ncomm * MAXPER);
    char(*names)[128] = tc_malloc(sizeof(*names) * (size_t)ncomm * MAXPER);
    const char **np = tc_malloc(sizeof(char *) * (size_t)ncomm * MAXPER);
    int *nper = tc_malloc(sizeof(int) * (size_t)ncomm), *next = tc_malloc(sizeof(int) * (size_t)ncomm);
    uint64_t *run = calloc((size_t)ncomm, sizeof(uint64_t));
    size_t total = 0, coll_count[TC_NCOLL] = {0};
    double t0 = MPI_Wtime();

    for (int round = 0; round < rounds; round++) {
        /* 1. the collectives of every communicator, identical on its ranks */
        for (int k = 0; k < ncomm; k++) {
            tc_rng_t g;
            tc_rng_seed(&g, tc_mix(seed0) ^ ((uint64_t)round << 40) ^ ((uint64_t)k << 16));
            nper[k] = 1 + (int)tc_rng_below(&g, MAXPER);
            for (int m = 0; m < nper[k]; m++)
                random_case(&cases[k * MAXPER + m], &g, max_elems, dc[k], P[k], me[k], k);
            next[k] = 0;
        }
        /* 2. this rank's own interleaving, keeping each communicator's order */
        tc_rng_t mine;
        tc_rng_seed(&mine, tc_mix(seed0 + 1) ^ ((uint64_t)tc_rank << 32) ^ (uint64_t)round);
        int left = 0;
        for (int k = 0; k < ncomm; k++)
            left += nper[k];
        int n = 0;
        while (left > 0) {
            int k;
            do
                k = (int)tc_rng_below(&mine, (uint64_t)ncomm);
            while (next[k] >= nper[k]);
            tc_case_t *c = &cases[k * MAXPER + next[k]];
            tc_case_setup(c);
            tc_case_submit(c);
            reqs[n] = c->req;
            snprintf(names[n], sizeof names[n], "round %d #%d: comm#%d op %d/%d %s %s %s count=%zu", round, n,
                     k, next[k], nper[k], tc_coll_names[c->coll], tc_type_name(c->t), tc_op_name(c->op),
                     c->count);
            np[n] = names[n];
            next[k]++;
            run[k]++;
            coll_count[c->coll]++;
            n++;
            left--;
        }
        /* 3. wait for everything, check everything */
        dfcclResult_t r = tc_wait_deadline(n, reqs, deadline, np);
        if (r != dfcclSuccess)
            TC_FAIL("round %d: wait returned %d (%s): %s", round, (int)r, dfcclGetErrorString(r),
                    dfcclGetLastError());
        size_t bad = 0;
        for (int k = 0; k < ncomm; k++)
            for (int m = 0; m < nper[k]; m++) {
                bad += tc_case_check(&cases[k * MAXPER + m]);
                tc_case_free(&cases[k * MAXPER + m]);
            }
        if (bad)
            TC_FAIL("round %d: %zu elements wrong", round, bad);
        total += (size_t)n;
    }
    double dt = MPI_Wtime() - t0;

    uint64_t pre = 0, stalls = 0;
    for (int k = 0; k < ncomm; k++) {
        dfcclStats_t st;
        CHECK(dfcclCommGetStats(dc[k], &st));
        if (st.submitted != run[k] || st.completed != run[k])
            TC_FAIL("comm#%d: stats submitted=%llu completed=%llu, expected %llu", k,
                    (unsigned long long)st.submitted, (unsigned long long)st.completed,
                    (unsigned long long)run[k]);
        pre += st.preemptions;
        stalls += st.stalls;
    }
    for (int k = 0; k < ncomm; k++) {
        CHECK(dfcclCommDestroy(dc[k]));
        MPI_Comm_free(&mc[k]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (tc_rank == 0) {
        printf("t_random: %d communicators, %d rounds, %zu collectives (", ncomm, rounds, total);
        for (int c = 0; c < TC_NCOLL; c++)
            printf("%s%s=%zu", c ? " " : "", tc_coll_names[c], coll_count[c]);
        printf(") in %.2f s, rank 0 preemptions=%llu stalls=%llu, np=%d\n", dt, (unsigned long long)pre,
               (unsigned long long)stalls, tc_size);
        printf("OK\n");
    }
    free(cases);
    free(reqs);
    free(names);
    free(np);
    free(nper);
    free(next);
    free(run);
    free(mc);
    free(dc);
    free(P);
    free(me);
    MPI_Finalize();
    return 0;
}
