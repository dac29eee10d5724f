/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Calls the engine can't run must still give Open MPI's results: user-defined ops
 * (commutative and not), derived datatypes (strided vectors, whose gaps must come
 * back untouched, resized types, 2x2 matrices), MAXLOC/MINLOC pair types, logical
 * ops on integers, 16-bit and long double types. Also contiguous derived types on
 * data movement, which the engine takes as bytes, mixed with predefined types of the
 * same signature on other ranks (legal MPI).
 *
 * With coll_dfccl_host_buffers=1 they reach the previous module; with
 * coll_dfccl_fake_device=1 they are staged through host copies first.
 *
 *   t_fallback [--count N]
 */
#include "ompi_test.h"

static long g_checks;

/* ------------------------------------------------------------------ user ops */

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* sum over the strided "one int then a gap" type of test_vector */
static void user_sum_strided(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[2 * i] += ((int *)in)[2 * i];
}

/* 2x2 integer matrices, inout = in x inout: associative, not commutative */
static void user_matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                    a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof(c));
    }
}

static int mat_val(int r, int k, int e)
{
    return (int)(ot_hash(77, (uint64_t)r, (uint64_t)(k * 4 + e)) % 3); /* 0..2: stays small-ish */
}

static void test_user_ops(MPI_Comm comm, int count)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    MPI_Op sum, matmul;
    OT_MPI(MPI_Op_create(user_sum, 1, &sum));
    OT_MPI(MPI_Op_create(user_matmul, 0, &matmul));

    /* commutative user op: allreduce, reduce (root n-1), reduce_scatter_block, iallreduce */
    int *s = malloc(sizeof(int) * (size_t)count * (size_t)n),
        *rb = ot_alloc(sizeof(int) * (size_t)count * (size_t)n);
    int *want = malloc(sizeof(int) * (size_t)count * (size_t)n);
    for (int i = 0; i < count * n; i++) {
        s[i] = (int)(ot_hash(5, (uint64_t)r, (uint64_t)i) % 1000);
        want[i] = 0;
        for (int k = 0; k < n; k++)
            want[i] += (int)(ot_hash(5, (uint64_t)k, (uint64_t)i) % 1000);
    }
    const ot_type_t *ti = ot_type_by_dt(MPI_INT);
    OT_MPI(MPI_Allreduce(s, rb, count, MPI_INT, sum, comm));
    ot_compare("allreduce user sum", ti, rb, want, (size_t)count);
    MPI_Request q;
    memcpy(rb, s, sizeof(int) * (size_t)count);
    OT_MPI(MPI_Iallreduce(MPI_IN_PLACE, rb, count, MPI_INT, sum, comm, &q));
    OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    ot_compare("iallreduce in place user sum", ti, rb, want, (size_t)count);
    OT_MPI(MPI_Reduce(s, rb, count, MPI_INT, sum, n - 1, comm));
    if (r == n - 1)
        ot_compare("reduce user sum", ti, rb, want, (size_t)count);
    OT_MPI(MPI_Reduce_scatter_block(s, rb, count, MPI_INT, sum, comm));
    ot_compare("reduce_scatter_block user sum", ti, rb, want + (size_t)r * (size_t)count, (size_t)count);
    ot_check_guard("user sum", rb, sizeof(int) * (size_t)count * (size_t)n);
    g_checks += 4;

    /* non-commutative: the product in rank order */
    MPI_Datatype mat;
    OT_MPI(MPI_Type_contiguous(4, MPI_INT, &mat));
    OT_MPI(MPI_Type_commit(&mat));
    int *ms = malloc(sizeof(int) * 4 * (size_t)count), *mr = ot_alloc(sizeof(int) * 4 * (size_t)count);
    int *mw = malloc(sizeof(int) * 4 * (size_t)count);
    for (int k = 0; k < count; k++) {
        for (int e = 0; e < 4; e++)
            ms[k * 4 + e] = mat_val(r, k, e);
        int acc[4] = {mat_val(0, k, 0), mat_val(0, k, 1), mat_val(0, k, 2), mat_val(0, k, 3)};
        for (int j = 1; j < n; j++) { /* acc = acc x M_j */
            int b[4] = {mat_val(j, k, 0), mat_val(j, k, 1), mat_val(j, k, 2), mat_val(j, k, 3)};
            int c[4] = {acc[0] * b[0] + acc[1] * b[2], acc[0] * b[1] + acc[1] * b[3],
                        acc[2] * b[0] + acc[3] * b[2], acc[2] * b[1] + acc[3] * b[3]};
            memcpy(acc, c, sizeof(c));
        }
        memcpy(mw + k * 4, acc, sizeof(acc));
    }
    OT_MPI(MPI_Allreduce(ms, mr, count, mat, matmul, comm));
    ot_compare("allreduce non-commutative user op", ti, mr, mw, (size_t)count * 4);
    OT_MPI(MPI_Ireduce(ms, mr, count, mat, matmul, 0, comm, &q));
    OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (r == 0)
        ot_compare("ireduce non-commutative user op", ti, mr, mw, (size_t)count * 4);
    ot_check_guard("matmul", mr, sizeof(int) * 4 * (size_t)count);
    g_checks += 2;

    MPI_Type_free(&mat);
    MPI_Op_free(&sum);
    MPI_Op_free(&matmul);
    free(s), free(rb), free(want), free(ms), free(mr), free(mw);
}

/* ------------------------------------------------------------------ pair types */

static void test_loc(MPI_Comm comm, int count)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    struct di {
        double v;
        int i;
    };
    int *s2 = malloc(sizeof(int) * 2 * (size_t)count), *r2 = ot_alloc(sizeof(int) * 2 * (size_t)count);
    struct di *sd = malloc(sizeof(*sd) * (size_t)count), *rd = ot_alloc(sizeof(*rd) * (size_t)count);
    for (int k = 0; k < count; k++) {
        s2[2 * k] = (int)(ot_hash(9, (uint64_t)r, (uint64_t)k) % 5); /* ties: lowest index wins */
        s2[2 * k + 1] = r;
        sd[k].v = (double)(ot_hash(10, (uint64_t)r, (uint64_t)k) % 7);
        sd[k].i = r * 10;
    }
    MPI_Request q;
    OT_MPI(MPI_Allreduce(s2, r2, count, MPI_2INT, MPI_MAXLOC, comm));
    OT_MPI(MPI_Iallreduce(sd, rd, count, MPI_DOUBLE_INT, MPI_MINLOC, comm, &q));
    OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int k = 0; k < count; k++) {
        int bv = -1, bi = -1;
        double mv = 1e300;
        int mi = -1;
        for (int j = 0; j < n; j++) {
            int v = (int)(ot_hash(9, (uint64_t)j, (uint64_t)k) % 5);
            if (v > bv)
                bv = v, bi = j;
            double d = (double)(ot_hash(10, (uint64_t)j, (uint64_t)k) % 7);
            if (d < mv)
                mv = d, mi = j * 10;
        }
        if (r2[2 * k] != bv || r2[2 * k + 1] != bi)
            OT_FAIL("MAXLOC element %d: got (%d,%d), want (%d,%d)", k, r2[2 * k], r2[2 * k + 1], bv, bi);
        if (rd[k].v != mv || rd[k].i != mi)
            OT_FAIL("MINLOC element %d: got (%g,%d), want (%g,%d)", k, rd[k].v, rd[k].i, mv, mi);
    }
    ot_check_guard("MAXLOC", r2, sizeof(int) * 2 * (size_t)count);
    ot_check_guard("MINLOC", rd, sizeof(*rd) * (size_t)count);
    g_checks += 2;
    free(s2), free(r2), free(sd), free(rd);
}

/* ------------------------------------------------------------------ strided vectors */

/* count ints at stride 2: the odd slots are gaps that must survive every call */
#define GAP 0x7eadbeef

static int *vec_alloc(int count)
{
    int *p = ot_alloc(sizeof(int) * 2 * (size_t)count);
    for (int i = 0; i < 2 * count; i++)
        p[i] = GAP;
    return p;
}

static void vec_check_gaps(const char *what, const int *p, int count)
{
    for (int i = 0; i < count; i++)
        if (p[2 * i + 1] != GAP)
            OT_FAIL("%s: gap after element %d overwritten (0x%x)", what, i, p[2 * i + 1]);
    ot_check_guard(what, p, sizeof(int) * 2 * (size_t)count);
}

static void test_vector(MPI_Comm comm, int count)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    MPI_Datatype strided, one;
    /* one int followed by a gap, as a resized type: count of them is a strided vector */
    OT_MPI(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &one));
    OT_MPI(MPI_Type_commit(&one));
    OT_MPI(MPI_Type_vector(count, 1, 2, MPI_INT, &strided));
    OT_MPI(MPI_Type_commit(&strided));
    MPI_Op ssum; /* predefined ops take predefined types only */
    OT_MPI(MPI_Op_create(user_sum_strided, 1, &ssum));

    /* allreduce SUM over the resized type */
    int *s = vec_alloc(count), *rb = vec_alloc(count);
    for (int i = 0; i < count; i++)
        s[2 * i] = r + i;
    OT_MPI(MPI_Allreduce(s, rb, count, one, ssum, comm));
    for (int i = 0; i < count; i++)
        if (rb[2 * i] != n * i + n * (n - 1) / 2)
            OT_FAIL("allreduce strided: element %d got %d", i, rb[2 * i]);
    vec_check_gaps("allreduce strided", rb, count);
    vec_check_gaps("allreduce strided sendbuf", s, count);

    /* bcast of one strided vector from the last rank */
    int *b = vec_alloc(count);
    if (r == n - 1)
        for (int i = 0; i < count; i++)
            b[2 * i] = 1000 + i;
    MPI_Request q;
    OT_MPI(MPI_Ibcast(b, 1, strided, n - 1, comm, &q));
    OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int i = 0; i < count; i++)
        if (b[2 * i] != 1000 + i)
            OT_FAIL("ibcast strided: element %d got %d", i, b[2 * i]);
    vec_check_gaps("ibcast strided", b, count);

    /* allgather: each rank contributes count strided ints, receives n*count */
    int *ag = vec_alloc(count * n);
    OT_MPI(MPI_Allgather(s, count, one, ag, count, one, comm));
    for (int j = 0; j < n; j++)
        for (int i = 0; i < count; i++)
            if (ag[2 * (j * count + i)] != j + i)
                OT_FAIL("allgather strided: block %d element %d got %d", j, i, ag[2 * (j * count + i)]);
    vec_check_gaps("allgather strided", ag, count * n);

    /* alltoall in place over the resized type */
    int *aa = vec_alloc(count * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < count; i++)
            aa[2 * (j * count + i)] = r * 100000 + j * 1000 + i;
    OT_MPI(MPI_Alltoall(MPI_IN_PLACE, count, one, aa, count, one, comm));
    for (int j = 0; j < n; j++)
        for (int i = 0; i < count; i++)
            if (aa[2 * (j * count + i)] != j * 100000 + r * 1000 + i)
                OT_FAIL("alltoall in place strided: block %d element %d got %d", j, i,
                        aa[2 * (j * count + i)]);
    vec_check_gaps("alltoall strided", aa, count * n);

    /* reduce_scatter with unequal counts over the resized type, in place */
    int *counts = malloc(sizeof(int) * (size_t)n), total = 0, disp = 0;
    for (int j = 0; j < n; j++) {
        counts[j] = count + j;
        if (j == r)
            disp = total;
        total += counts[j];
    }
    int *rs = vec_alloc(total);
    for (int i = 0; i < total; i++)
        rs[2 * i] = r * i;
    OT_MPI(MPI_Reduce_scatter(MPI_IN_PLACE, rs, counts, one, ssum, comm));
    for (int i = 0; i < counts[r]; i++)
        if (rs[2 * i] != (disp + i) * n * (n - 1) / 2)
            OT_FAIL("reduce_scatter strided: element %d got %d", i, rs[2 * i]);
    vec_check_gaps("reduce_scatter strided", rs, total);

    g_checks += 5;
    free(s), free(rb), free(b), free(ag), free(aa), free(rs), free(counts);
    MPI_Op_free(&ssum);
    MPI_Type_free(&strided);
    MPI_Type_free(&one);
}

/* ------------------------------------------------------------------ contiguous derived types */

static void test_contiguous_mixed(MPI_Comm comm, int count)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    MPI_Datatype block;
    OT_MPI(MPI_Type_contiguous(count, MPI_INT, &block));
    OT_MPI(MPI_Type_commit(&block));
    /* the same signature as one block or as count MPI_INTs, chosen per rank */
    const bool use_block = r % 2 == 0;
    int *b = ot_alloc(sizeof(int) * (size_t)count), *ag = ot_alloc(sizeof(int) * (size_t)count * (size_t)n);
    for (int i = 0; i < count; i++)
        b[i] = r == 0 ? 5000 + i : -1;
    OT_MPI(MPI_Bcast(b, use_block ? 1 : count, use_block ? block : MPI_INT, 0, comm));
    for (int i = 0; i < count; i++)
        if (b[i] != 5000 + i)
            OT_FAIL("bcast mixed contiguous: element %d got %d", i, b[i]);
    for (int i = 0; i < count; i++)
        b[i] = r * 1000 + i;
    OT_MPI(MPI_Allgather(b, use_block ? 1 : count, use_block ? block : MPI_INT, ag, count, MPI_INT, comm));
    for (int j = 0; j < n; j++)
        for (int i = 0; i < count; i++)
            if (ag[j * count + i] != j * 1000 + i)
                OT_FAIL("allgather mixed contiguous: block %d element %d got %d", j, i, ag[j * count + i]);
    ot_check_guard("mixed contiguous", ag, sizeof(int) * (size_t)count * (size_t)n);
    g_checks += 2;
    free(b), free(ag);
    MPI_Type_free(&block);
}

/* ------------------------------------------------------------------ ops and types the engine lacks */

static void test_unmapped(MPI_Comm comm, int count)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    static const struct {
        MPI_Datatype dt;
        MPI_Op op;
    } cases[] = {
        {MPI_INT, MPI_LAND},           {MPI_INT, MPI_LOR},
        {MPI_LONG, MPI_LXOR},          {MPI_SHORT, MPI_SUM},
        {MPI_UNSIGNED_SHORT, MPI_MAX}, {MPI_LONG_DOUBLE, MPI_SUM},
        {MPI_INT16_T, MPI_BXOR},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const ot_type_t *t = ot_type_by_dt(cases[c].dt);
        const size_t bytes = (size_t)count * t->size;
        uint64_t seed = 1000 + c;
        void *s = ot_alloc(bytes), *rb = ot_alloc(bytes), *want = ot_alloc(bytes);
        ot_fill(t, cases[c].op, seed, r, s, (size_t)count);
        OT_MPI(MPI_Allreduce(s, rb, count, t->dt, cases[c].op, comm));
        ot_reference(t, cases[c].op, seed, n, want, (size_t)count);
        ot_compare("allreduce unmapped type/op", t, rb, want, (size_t)count);
        ot_check_guard("allreduce unmapped type/op", rb, bytes);
        free(s), free(rb), free(want);
        g_checks++;
    }
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int count = atoi(ot_opt(argc, argv, "--count", "1001"));
    MPI_Comm dup;
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Comm comms[2] = {MPI_COMM_WORLD, dup};
    for (int c = 0; c < 2; c++) {
        for (int k = 0; k < 2; k++) {
            const int cnt = k ? count : 3;
            test_user_ops(comms[c], cnt);
            test_loc(comms[c], cnt);
            test_vector(comms[c], cnt);
            test_contiguous_mixed(comms[c], cnt);
            test_unmapped(comms[c], cnt);
        }
    }
    OT_MPI(MPI_Comm_free(&dup));
    long total = 0;
    MPI_Reduce(&g_checks, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf("OK t_fallback: %ld checks on %d ranks\n", total, ot_size);
    MPI_Finalize();
    return 0;
}
