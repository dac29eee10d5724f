/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_matrix: every collective x datatype x op (where valid) x size against a host
 * reference, element by element; in-place variants; root != 0; misaligned buffers;
 * guard zones around every buffer catch writes outside it.
 *
 * usage: t_matrix [--quick] [--only COLL]
 *   --quick      small sizes only (0, 1, 7, 1000, 20011)
 *   --only COLL  one of allreduce reduce bcast allgather reduce_scatter alltoall
 */
#include "test_common.h"

static int P, me;
static dfcclComm_t comm;
static uint64_t seed_counter = 1;
static size_t ncases, nelems_checked;
static uint64_t nsubmitted; /* collectives submitted on comm */

/* Submit all cases of a batch (on one communicator, same order on every rank),
 * wait for all of them, then check each. */
static void run_batch(tc_case_t *cs, int n)
{
    dfcclRequest_t *reqs = tc_malloc(sizeof(*reqs) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        cs[i].seed = seed_counter++;
        cs[i].comm = comm;
        cs[i].P = P;
        cs[i].me = me;
        tc_case_setup(&cs[i]);
        tc_case_submit(&cs[i]);
        nsubmitted++;
        reqs[i] = cs[i].req;
    }
    dfcclResult_t r = dfcclWaitAll(n, reqs);
    if (r != dfcclSuccess) {
        fprintf(stderr, "[rank %d] batch of %d cases:\n", tc_rank, n);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "[rank %d]   coll=%s type=%s op=%s count=%zu inplace=%d root=%d\n", tc_rank,
                    tc_coll_names[cs[i].coll], tc_type_name(cs[i].t), tc_op_name(cs[i].op), cs[i].count,
                    cs[i].inplace, cs[i].root);
        TC_FAIL("dfcclWaitAll returned %d (%s): %s", (int)r, dfcclGetErrorString(r), dfcclGetLastError());
    }
    for (int i = 0; i < n; i++)
        if (reqs[i] != NULL)
            TC_FAIL("dfcclWaitAll left request %d non-NULL", i);
    for (int i = 0; i < n; i++) {
        if (tc_case_check(&cs[i]))
            tc_abort();
        nelems_checked += cs[i].recv_elems;
        ncases++;
        tc_case_free(&cs[i]);
    }
    free(reqs);
}

static void barrier_check(void)
{
    dfcclRequest_t r = NULL;
    CHECK(dfcclBarrier(comm, &r));
    nsubmitted++;
    CHECK(dfcclWait(&r));
    if (r != NULL)
        TC_FAIL("dfcclWait left the barrier request non-NULL");
}

/* Is (type, op) in the subset that also runs at large sizes? */
static int big_combo(tc_coll_t c, dfcclDataType_t t, dfcclRedOp_t op)
{
    if (tc_coll_has_op(c)) {
        int hot = (t == dfcclFloat32 && op == dfcclSum) || (t == dfcclInt32 && op == dfcclMax) ||
                  (t == dfcclUint8 && op == dfcclBxor) || (t == dfcclFloat16 && op == dfcclSum);
        if (c != TC_ALLREDUCE) /* reduce, reduce_scatter: fewer combos (reference cost) */
            hot = (t == dfcclFloat32 && op == dfcclSum) || (t == dfcclUint8 && op == dfcclBxor);
        return hot;
    }
    if (c == TC_BCAST)
        return t == dfcclFloat32 || t == dfcclUint8;
    if (c == TC_ALLGATHER)
        return t == dfcclFloat32 || t == dfcclFloat16;
    if (c == TC_ALLTOALL)
        return t == dfcclInt32;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    int quick = tc_arg_flag(argc, argv, "--quick");
    const char *only = tc_arg_value(argc, argv, "--only");
    int only_coll = -1;
    if (only) {
        for (int c = 0; c < TC_ALLTOALL + 1; c++)
            if (!strcmp(only, tc_coll_names[c]))
                only_coll = c;
        if (only_coll < 0)
            TC_FAIL("unknown collective '%s' for --only", only);
    }

    CHECK(dfcclCommInitMPI(&comm, MPI_COMM_WORLD));
    CHECK(dfcclCommRank(comm, &me));
    CHECK(dfcclCommSize(comm, &P));
    if (me != tc_rank || P != tc_size)
        TC_FAIL("dfccl rank/size %d/%d != MPI %d/%d", me, P, tc_rank, tc_size);

    static const size_t small_sizes[] = {0, 1, 7, 1000, 20011};
    const int nsmall = (int)(sizeof small_sizes / sizeof small_sizes[0]);
    int roots[2] = {P - 1, 1 % P};
    int nroots = roots[0] == roots[1] ? 1 : 2;
    double t_start = MPI_Wtime();

    for (int c = 0; c <= TC_ALLTOALL; c++) {
        if (only_coll >= 0 && c != only_coll)
            continue;
        double t0 = MPI_Wtime();
        size_t cases_before = ncases;
        /* ---- small sizes: everything, batched per (type, op) ---- */
        for (int ti = 0; ti < TC_NTYPES; ti++) {
            dfcclDataType_t t = tc_all_types[ti];
            int nops = tc_coll_has_op((tc_coll_t)c) ? TC_NOPS : 1;
            for (int oi = 0; oi < nops; oi++) {
                dfcclRedOp_t op = tc_coll_has_op((tc_coll_t)c) ? tc_all_ops[oi] : TC_COPY;
                if (op != TC_COPY && !tc_op_valid(t, op))
                    continue;
                tc_case_t cs[64];
                int n = 0;
                for (int si = 0; si < nsmall; si++) {
                    int ninp = tc_coll_has_inplace((tc_coll_t)c) ? 2 : 1;
                    for (int inp = 0; inp < ninp; inp++) {
                        int nr = tc_coll_has_root((tc_coll_t)c) ? nroots : 1;
                        for (int ri = 0; ri < nr; ri++) {
                            tc_case_t *x = &cs[n++];
                            memset(x, 0, sizeof *x);
                            x->coll = (tc_coll_t)c;
                            x->t = t;
                            x->op = op;
                            x->count = small_sizes[si];
                            x->inplace = inp;
                            x->root = tc_coll_has_root((tc_coll_t)c) ? roots[ri] : 0;
                        }
                    }
                    if (small_sizes[si] >= 7) {
                        /* element-aligned but not 16-byte-aligned buffers */
                        tc_case_t *x = &cs[n++];
                        memset(x, 0, sizeof *x);
                        x->coll = (tc_coll_t)c;
                        x->t = t;
                        x->op = op;
                        x->count = small_sizes[si];
                        x->inplace = tc_coll_has_inplace((tc_coll_t)c) && small_sizes[si] == 1000;
                        x->root = tc_coll_has_root((tc_coll_t)c) ? roots[0] : 0;
                        x->misalign = 1;
                    }
                }
                run_batch(cs, n);
            }
        }
        barrier_check();
        /* ---- big sizes: a subset of type/op, one at a time ---- */
        if (!quick) {
            for (int ti = 0; ti < TC_NTYPES; ti++) {
                dfcclDataType_t t = tc_all_types[ti];
                int nops = tc_coll_has_op((tc_coll_t)c) ? TC_NOPS : 1;
                for (int oi = 0; oi < nops; oi++) {
                    dfcclRedOp_t op = tc_coll_has_op((tc_coll_t)c) ? tc_all_ops[oi] : TC_COPY;
                    if (op != TC_COPY && !tc_op_valid(t, op))
                        continue;
                    if (!big_combo((tc_coll_t)c, t, op))
                        continue;
                    size_t big_sizes[2] = {(3u << 20) / tc_type_size(t), 1000003};
                    for (int si = 0; si < 2; si++) {
                        tc_case_t x;
                        memset(&x, 0, sizeof x);
                        x.coll = (tc_coll_t)c;
                        x.t = t;
                        x.op = op;
                        x.count = big_sizes[si];
                        /* in place: float32 at the odd size, bcast (uint8) at 3 MiB */
                        x.inplace = tc_coll_has_inplace((tc_coll_t)c) &&
                                    (t == dfcclFloat32 ? si == 1 : (c == TC_BCAST && si == 0));
                        x.root = tc_coll_has_root((tc_coll_t)c) ? roots[si % nroots] : 0;
                        if (c == TC_REDUCE)
                            x.root = P - 1;
                        x.misalign = si == 0 && (t == dfcclFloat32 || t == dfcclFloat16);
                        run_batch(&x, 1);
                    }
                }
            }
            barrier_check();
        }
        if (me == 0)
            printf("t_matrix: %-14s %4zu cases ok in %.2f s (np=%d)\n", tc_coll_names[c],
                   ncases - cases_before, MPI_Wtime() - t0, P);
    }

    /* a few barriers back to back */
    for (int i = 0; i < 3; i++)
        barrier_check();

    dfcclStats_t st;
    CHECK(dfcclCommGetStats(comm, &st));
    if (st.submitted != nsubmitted || st.completed != nsubmitted)
        TC_FAIL("stats: submitted=%llu completed=%llu, expected %llu each", (unsigned long long)st.submitted,
                (unsigned long long)st.completed, (unsigned long long)nsubmitted);
    CHECK(dfcclCommDestroy(comm));
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        printf("t_matrix: %zu cases, %zu elements checked per rank, %.2f s, np=%d%s\n", ncases,
               nelems_checked, MPI_Wtime() - t_start, P, quick ? " (quick)" : "");
        printf("OK\n");
    }
    MPI_Finalize();
    return 0;
}
