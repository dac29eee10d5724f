/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every collective the component takes over (allreduce, reduce, bcast, allgather,
 * reduce_scatter_block, reduce_scatter, alltoall), blocking and non-blocking, in
 * place and not, root 0 and others, over every predefined datatype x op Open MPI
 * accepts, at sizes 0, 1, odd, past the one-shot limit and (--big) a few MiB,
 * checked element by element against Open MPI's own reduction (MPI_Reduce_local).
 * Types/ops the engine can't run go through the fallback; the results must be the
 * same either way.
 *
 *   t_colls [--quick] [--big] [--comms world,dup,split,many] [--seed N]
 *
 * --quick: fewer types and sizes (for 8 ranks). --comms: which communicators
 * (default all four; "many" runs the matrix on four dups at once, non-blocking).
 */
#ifdef OT_DEVICE
#include <cuda_runtime.h> /* before ompi_test.h: it then defines CU() */
#endif

#include "ompi_test.h"

static uint64_t g_seed = 1;

static const char *op_name(MPI_Op op)
{
    for (int i = 0; i < OT_NOPS; i++)
        if (ot_ops[i].op == op)
            return ot_ops[i].name;
    return "user op";
}
static long g_checks;
static bool g_quick;
static const char *g_types; /* --types: only these (comma-separated names) */

/* ------------------------------------------------------------------ device mirrors */

#ifdef OT_DEVICE
/* Built with -DOT_DEVICE (t_colls_dev, GPU machines): every buffer an MPI call sees is a
 * device copy of the host buffer the test fills and checks, guard zone included; after
 * the call completes the copies come back, so the same checks (values, guard, unchanged
 * send buffers) apply. Copies come from one device arena (cudaMalloc/cudaFree per call
 * would wait for the GPU daemon to exit). */
static struct {
    char *arena;
    size_t size, used;
    int n;
    struct {
        void *h, *d;
        size_t len;
    } m[64];
} g_dev;

static void *DV(const void *h, size_t bytes)
{
    if (!h || h == MPI_IN_PLACE)
        return (void *)h;
    const size_t len = bytes + OT_GUARD, at = (g_dev.used + 255) & ~(size_t)255;
    if (!g_dev.arena) {
        g_dev.size = (size_t)1 << 30;
        CU(cudaMalloc((void **)&g_dev.arena, g_dev.size));
    }
    if (at + len > g_dev.size || g_dev.n == 64)
        OT_FAIL("device arena full (%zu + %zu bytes, %d buffers)", at, len, g_dev.n);
    void *d = g_dev.arena + at;
    CU(cudaMemcpy(d, h, len, cudaMemcpyHostToDevice));
    g_dev.m[g_dev.n].h = (void *)h;
    g_dev.m[g_dev.n].d = d;
    g_dev.m[g_dev.n].len = len;
    g_dev.n++;
    g_dev.used = at + len;
    return d;
}

/* the call is complete: every device copy back into its host buffer */
static void BACK(void)
{
    for (int i = 0; i < g_dev.n; i++)
        CU(cudaMemcpy(g_dev.m[i].h, g_dev.m[i].d, g_dev.m[i].len, cudaMemcpyDeviceToHost));
    g_dev.n = 0;
    g_dev.used = 0;
}
#else
#define DV(h, bytes) ((void *)(h))
#define BACK()       ((void)0)
#endif

/* ------------------------------------------------------------------ reductions */

static void test_allreduce(MPI_Comm comm, const ot_type_t *t, MPI_Op op, size_t count, bool in_place, bool nb)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    const size_t bytes = count * t->size;
    uint64_t seed = ++g_seed;
    void *s = ot_alloc(bytes), *rb = ot_alloc(bytes), *want = ot_alloc(bytes), *s0 = ot_alloc(bytes);
    ot_fill(t, op, seed, r, s, count);
    memcpy(s0, s, bytes);
    if (in_place)
        memcpy(rb, s, bytes);
    const void *sb = in_place ? MPI_IN_PLACE : s;
    if (nb) {
        MPI_Request q;
        OT_MPI(MPI_Iallreduce(DV(sb, bytes), DV(rb, bytes), (int)count, t->dt, op, comm, &q));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else {
        OT_MPI(MPI_Allreduce(DV(sb, bytes), DV(rb, bytes), (int)count, t->dt, op, comm));
    }
    BACK();
    ot_reference(t, op, seed, n, want, count);
    char what[160];
    snprintf(what, sizeof(what), "%sallreduce%s %s count %zu", nb ? "i" : "", in_place ? " in place" : "",
             op_name(op), count);
    ot_compare(what, t, rb, want, count);
    ot_check_guard(what, rb, bytes);
    if (!in_place)
        ot_compare_bytes("allreduce sendbuf changed", s, s0, bytes);
    free(s), free(rb), free(want), free(s0);
    g_checks++;
}

static void test_reduce(MPI_Comm comm, const ot_type_t *t, MPI_Op op, size_t count, bool in_place, bool nb,
                        int root)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    const size_t bytes = count * t->size;
    uint64_t seed = ++g_seed;
    void *s = ot_alloc(bytes), *rb = ot_alloc(bytes), *want = ot_alloc(bytes);
    ot_fill(t, op, seed, r, s, count);
    const bool root_in_place = in_place && r == root;
    if (root_in_place)
        memcpy(rb, s, bytes);
    /* recvbuf is insignificant off the root: pass NULL there every other call */
    void *rarg = r == root || (g_seed & 1) ? rb : NULL;
    const void *sb = root_in_place ? MPI_IN_PLACE : s;
    if (nb) {
        MPI_Request q;
        OT_MPI(MPI_Ireduce(DV(sb, bytes), DV(rarg, bytes), (int)count, t->dt, op, root, comm, &q));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else {
        OT_MPI(MPI_Reduce(DV(sb, bytes), DV(rarg, bytes), (int)count, t->dt, op, root, comm));
    }
    BACK();
    char what[160];
    snprintf(what, sizeof(what), "%sreduce%s %s count %zu root %d", nb ? "i" : "",
             in_place ? " in place" : "", op_name(op), count, root);
    if (r == root) {
        ot_reference(t, op, seed, n, want, count);
        ot_compare(what, t, rb, want, count);
    }
    ot_check_guard(what, rb, bytes);
    free(s), free(rb), free(want);
    g_checks++;
}

static void test_rsb(MPI_Comm comm, const ot_type_t *t, MPI_Op op, size_t count, bool in_place, bool nb)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    const size_t all = count * (size_t)n, bytes = count * t->size, abytes = all * t->size;
    uint64_t seed = ++g_seed;
    void *s = ot_alloc(abytes), *rb = ot_alloc(in_place ? abytes : bytes), *want = ot_alloc(abytes);
    ot_fill(t, op, seed, r, s, all);
    if (in_place)
        memcpy(rb, s, abytes);
    const void *sb = in_place ? MPI_IN_PLACE : s;
    if (nb) {
        MPI_Request q;
        OT_MPI(MPI_Ireduce_scatter_block(DV(sb, abytes), DV(rb, in_place ? abytes : bytes), (int)count, t->dt,
                                         op, comm, &q));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else {
        OT_MPI(MPI_Reduce_scatter_block(DV(sb, abytes), DV(rb, in_place ? abytes : bytes), (int)count, t->dt,
                                        op, comm));
    }
    BACK();
    ot_reference(t, op, seed, n, want, all);
    char what[160];
    snprintf(what, sizeof(what), "%sreduce_scatter_block%s %s count %zu", nb ? "i" : "",
             in_place ? " in place" : "", op_name(op), count);
    ot_compare(what, t, rb, (char *)want + (size_t)r * bytes, count);
    ot_check_guard(what, rb, in_place ? abytes : bytes);
    free(s), free(rb), free(want);
    g_checks++;
}

/* equal: every count the same; else counts differ per rank, one rank gets none */
static void test_rs(MPI_Comm comm, const ot_type_t *t, MPI_Op op, size_t count, bool in_place, bool nb,
                    bool equal)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    int *counts = malloc(sizeof(int) * (size_t)n);
    size_t all = 0, disp = 0;
    for (int i = 0; i < n; i++) {
        counts[i] = equal ? (int)count : (int)(count + (size_t)(i % 3));
        if (!equal && n > 2 && i == 1)
            counts[i] = 0;
        if (i == r)
            disp = all;
        all += (size_t)counts[i];
    }
    const size_t mine = (size_t)counts[r] * t->size, abytes = all * t->size;
    uint64_t seed = ++g_seed;
    void *s = ot_alloc(abytes), *rb = ot_alloc(in_place ? abytes : mine), *want = ot_alloc(abytes);
    ot_fill(t, op, seed, r, s, all);
    if (in_place)
        memcpy(rb, s, abytes);
    const void *sb = in_place ? MPI_IN_PLACE : s;
    if (nb) {
        MPI_Request q;
        OT_MPI(MPI_Ireduce_scatter(DV(sb, abytes), DV(rb, in_place ? abytes : mine), counts, t->dt, op, comm,
                                   &q));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else {
        OT_MPI(MPI_Reduce_scatter(DV(sb, abytes), DV(rb, in_place ? abytes : mine), counts, t->dt, op, comm));
    }
    BACK();
    ot_reference(t, op, seed, n, want, all);
    char what[160];
    snprintf(what, sizeof(what), "%sreduce_scatter%s %s %s counts (base %zu)", nb ? "i" : "",
             in_place ? " in place" : "", op_name(op), equal ? "equal" : "unequal", count);
    ot_compare(what, t, rb, (char *)want + disp * t->size, (size_t)counts[r]);
    ot_check_guard(what, rb, in_place ? abytes : mine);
    free(s), free(rb), free(want), free(counts);
    g_checks++;
}

/* ------------------------------------------------------------------ data movement */

static void test_bcast(MPI_Comm comm, const ot_type_t *t, size_t count, bool nb, int root)
{
    int r;
    MPI_Comm_rank(comm, &r);
    const size_t bytes = count * t->size;
    uint64_t seed = ++g_seed;
    void *b = ot_alloc(bytes), *want = ot_alloc(bytes);
    ot_fill_bytes(seed, root, 0, want, bytes);
    if (r == root)
        memcpy(b, want, bytes);
    if (nb) {
        MPI_Request q;
        OT_MPI(MPI_Ibcast(DV(b, bytes), (int)count, t->dt, root, comm, &q));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else {
        OT_MPI(MPI_Bcast(DV(b, bytes), (int)count, t->dt, root, comm));
    }
    BACK();
    char what[160];
    snprintf(what, sizeof(what), "%sbcast %s count %zu root %d", nb ? "i" : "", t->name, count, root);
    ot_compare_bytes(what, b, want, bytes);
    ot_check_guard(what, b, bytes);
    free(b), free(want);
    g_checks++;
}

static void test_allgather(MPI_Comm comm, const ot_type_t *t, size_t count, bool in_place, bool nb)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    const size_t bytes = count * t->size, all = bytes * (size_t)n;
    uint64_t seed = ++g_seed;
    void *s = ot_alloc(bytes), *rb = ot_alloc(all), *want = ot_alloc(all);
    for (int i = 0; i < n; i++)
        ot_fill_bytes(seed, i, 0, (char *)want + (size_t)i * bytes, bytes);
    ot_fill_bytes(seed, r, 0, s, bytes);
    if (in_place)
        memcpy((char *)rb + (size_t)r * bytes, s, bytes);
    const void *sb = in_place ? MPI_IN_PLACE : s;
    if (nb) {
        MPI_Request q;
        OT_MPI(MPI_Iallgather(DV(sb, bytes), (int)count, t->dt, DV(rb, all), (int)count, t->dt, comm, &q));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else {
        OT_MPI(MPI_Allgather(DV(sb, bytes), (int)count, t->dt, DV(rb, all), (int)count, t->dt, comm));
    }
    BACK();
    char what[160];
    snprintf(what, sizeof(what), "%sallgather%s %s count %zu", nb ? "i" : "", in_place ? " in place" : "",
             t->name, count);
    ot_compare_bytes(what, rb, want, all);
    ot_check_guard(what, rb, all);
    free(s), free(rb), free(want);
    g_checks++;
}

static void test_alltoall(MPI_Comm comm, const ot_type_t *t, size_t count, bool in_place, bool nb)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    const size_t bytes = count * t->size, all = bytes * (size_t)n;
    uint64_t seed = ++g_seed;
    void *s = ot_alloc(all), *rb = ot_alloc(all), *want = ot_alloc(all);
    for (int j = 0; j < n; j++) {
        ot_fill_bytes(seed, r, j, (char *)s + (size_t)j * bytes, bytes);    /* to rank j */
        ot_fill_bytes(seed, j, r, (char *)want + (size_t)j * bytes, bytes); /* from rank j */
    }
    if (in_place)
        memcpy(rb, s, all);
    const void *sb = in_place ? MPI_IN_PLACE : s;
    if (nb) {
        MPI_Request q;
        OT_MPI(MPI_Ialltoall(DV(sb, all), (int)count, t->dt, DV(rb, all), (int)count, t->dt, comm, &q));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else {
        OT_MPI(MPI_Alltoall(DV(sb, all), (int)count, t->dt, DV(rb, all), (int)count, t->dt, comm));
    }
    BACK();
    char what[160];
    snprintf(what, sizeof(what), "%salltoall%s %s count %zu", nb ? "i" : "", in_place ? " in place" : "",
             t->name, count);
    ot_compare_bytes(what, rb, want, all);
    ot_check_guard(what, rb, all);
    free(s), free(rb), free(want);
    g_checks++;
}

/* ------------------------------------------------------------------ the matrix */

static bool quick_type(const ot_type_t *t)
{
    return t->dt == MPI_INT || t->dt == MPI_FLOAT || t->dt == MPI_DOUBLE || t->dt == MPI_UINT8_T ||
           t->dt == MPI_C_BOOL || t->dt == MPI_SHORT || t->dt == MPI_UNSIGNED_LONG;
}

static void run_matrix(MPI_Comm comm, bool big)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    /* 0, 1, odd, odd past the 16 KiB one-shot limit for 4-byte types */
    static const size_t sizes_full[] = {0, 1, 7, 1023, 5001};
    static const size_t sizes_quick[] = {0, 1, 7, 5001};
    const size_t *sizes = g_quick ? sizes_quick : sizes_full;
    const int nsizes = g_quick ? 4 : 5;
    const int roots[3] = {n - 1, 0, n / 2};
    int iter = 0;

    for (int ti = 0; ti < OT_NTYPES; ti++) {
        const ot_type_t *t = &ot_types[ti];
        if ((g_quick && !quick_type(t)) || (g_types && !strstr(g_types, t->name)))
            continue;
        for (int oi = 0; oi < OT_NOPS; oi++) {
            MPI_Op op = ot_ops[oi].op;
            if (!ot_valid(t, op))
                continue;
            for (int si = 0; si < nsizes; si++)
                for (int v = 0; v < 4; v++) {
                    const bool in_place = v & 1, nb = v & 2;
                    const size_t c = sizes[si];
                    test_allreduce(comm, t, op, c, in_place, nb);
                    test_reduce(comm, t, op, c, in_place, nb, roots[iter++ % 3]);
                    test_rsb(comm, t, op, c, in_place, nb);
                    test_rs(comm, t, op, c, in_place, nb, iter & 1);
                }
        }
        for (int si = 0; si < nsizes; si++)
            for (int v = 0; v < 4; v++) {
                const bool in_place = v & 1, nb = v & 2;
                test_bcast(comm, t, sizes[si], nb, roots[iter++ % 3]);
                test_allgather(comm, t, sizes[si], in_place, nb);
                test_alltoall(comm, t, sizes[si], in_place, nb);
            }
    }

    if (big) {
        /* a few MiB per buffer, one op per type class */
        static const struct {
            MPI_Datatype dt;
            MPI_Op op;
        } bigs[] = {
            {MPI_FLOAT, MPI_SUM}, {MPI_INT, MPI_BXOR}, {MPI_UINT8_T, MPI_MAX}, {MPI_DOUBLE, MPI_PROD}};
        const size_t target = 3u << 20;
        for (size_t k = 0; k < sizeof(bigs) / sizeof(bigs[0]); k++) {
            const ot_type_t *t = ot_type_by_dt(bigs[k].dt);
            const size_t c = target / t->size + 3; /* odd tail */
            for (int v = 0; v < 2; v++) {
                test_allreduce(comm, t, bigs[k].op, c, v, v);
                test_reduce(comm, t, bigs[k].op, c, v, !v, roots[k % 3]);
                test_rsb(comm, t, bigs[k].op, c / (size_t)n, v, v);
                test_rs(comm, t, bigs[k].op, c / (size_t)n, v, !v, false);
            }
        }
        const ot_type_t *t = ot_type_by_dt(MPI_BYTE);
        for (int v = 0; v < 2; v++) {
            test_bcast(comm, t, target + 5, v, roots[v]);
            test_allgather(comm, t, target / (size_t)n + 1, v, !v);
            test_alltoall(comm, t, target / (size_t)n + 1, v, v);
        }
    }
}

/* The same matrix on several communicators at once: each step's non-blocking calls
 * are all posted before any is waited for. */
static void run_many(MPI_Comm base)
{
    enum { K = 4 };
    MPI_Comm c[K];
    for (int k = 0; k < K; k++)
        OT_MPI(MPI_Comm_dup(base, &c[k]));
    int n, r;
    MPI_Comm_size(base, &n);
    MPI_Comm_rank(base, &r);
    static const size_t sizes[] = {1, 7, 5001, 70001};
    for (int si = 0; si < 4; si++) {
        const size_t count = sizes[si];
        const ot_type_t *t = ot_type_by_dt(si & 1 ? MPI_DOUBLE : MPI_INT);
        MPI_Op op = si & 2 ? MPI_MAX : MPI_SUM;
        void *s[K], *rb[K], *want = ot_alloc(count * t->size);
        MPI_Request q[2 * K];
        uint64_t seed = ++g_seed;
        size_t bb = count * t->size * (size_t)n;
        void *ag[K];
        for (int k = 0; k < K; k++) {
            s[k] = ot_alloc(count * t->size);
            rb[k] = ot_alloc(count * t->size);
            ag[k] = ot_alloc(bb);
            ot_fill(t, op, seed + (uint64_t)k, r, s[k], count);
            void *ds = DV(s[k], count * t->size);
            OT_MPI(MPI_Iallreduce(ds, DV(rb[k], count * t->size), (int)count, t->dt, op, c[k], &q[k]));
            OT_MPI(MPI_Iallgather(ds, (int)count, t->dt, DV(ag[k], bb), (int)count, t->dt, c[(k + 1) % K],
                                  &q[K + k]));
        }
        OT_MPI(MPI_Waitall(2 * K, q, MPI_STATUSES_IGNORE));
        BACK();
        for (int k = 0; k < K; k++) {
            ot_reference(t, op, seed + (uint64_t)k, n, want, count);
            ot_compare("many: iallreduce", t, rb[k], want, count);
            ot_check_guard("many: iallreduce", rb[k], count * t->size);
            /* allgather on c[(k+1)%K] gathered s[k] of every rank: block i is rank i's */
            for (int i = 0; i < n; i++) {
                ot_fill(t, op, seed + (uint64_t)k, i, want, count);
                ot_compare("many: iallgather", t, (char *)ag[k] + (size_t)i * count * t->size, want, count);
            }
            free(s[k]), free(rb[k]), free(ag[k]);
            g_checks += 2;
        }
        free(want);
    }
    for (int k = 0; k < K; k++)
        OT_MPI(MPI_Comm_free(&c[k]));
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    g_quick = ot_flag(argc, argv, "--quick");
    const bool big = ot_flag(argc, argv, "--big");
    g_types = ot_opt(argc, argv, "--types", NULL);
    const char *comms = ot_opt(argc, argv, "--comms", "world,dup,split,many");
    g_seed = (uint64_t)strtoull(ot_opt(argc, argv, "--seed", "1"), NULL, 0) << 32;

    double t0 = MPI_Wtime();
    if (strstr(comms, "world"))
        run_matrix(MPI_COMM_WORLD, big);
    if (strstr(comms, "dup")) {
        MPI_Comm d;
        OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        run_matrix(d, false);
        OT_MPI(MPI_Comm_free(&d));
    }
    if (strstr(comms, "split")) {
        /* two halves, ranks reversed: comm ranks differ from world ranks */
        MPI_Comm s;
        OT_MPI(MPI_Comm_split(MPI_COMM_WORLD, ot_rank % 2, ot_size - ot_rank, &s));
        run_matrix(s, false);
        OT_MPI(MPI_Comm_free(&s));
    }
    if (strstr(comms, "many"))
        run_many(MPI_COMM_WORLD);
    long total = 0;
    MPI_Reduce(&g_checks, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf("OK t_colls: %ld checks on %d ranks (%s%s%s) in %.1f s\n", total, ot_size, comms,
               g_quick ? ", quick" : "", big ? ", big" : "", MPI_Wtime() - t0);
    MPI_Finalize();
    return 0;
}
