/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What dfccl alone (--mca coll dfccl) must serve beyond the collective matrices, each
 * result checked against values computed here (never all-equal inputs):
 *   - MPI_COMM_SELF, a duplicate and a split of MPI_COMM_WORLD (sizes 1 and up);
 *   - a non-commutative user-defined op (digit concatenation: the rank order shows),
 *     blocking and non-blocking: Allreduce, Reduce, Scan, Exscan, Reduce_scatter_block;
 *   - a strided datatype, non-blocking: Ibcast, Iallgather, Ialltoall (gaps must stay);
 *   - persistent collectives (MPIX_*_init): Allreduce, Bcast, Barrier, Alltoall, several
 *     starts with new inputs each time;
 *   - MPI_Reduce_local with a predefined and a user-defined op;
 *   - Barrier and Ibarrier.
 * With --inter it instead expects MPI_Intercomm_create to fail (dfccl alone does not
 * serve intercommunicators) under MPI_ERRORS_RETURN.
 *
 *   t_alone [--count 29] [--starts 5] [--inter]
 */
#include "ompi_test.h"

#include <mpi-ext.h>

#define MOD      1000003LL
#define SENTINEL (-7)

static long checks;

static void expect_ll(const char *what, long long got, long long want, int i)
{
    checks++;
    if (got != want)
        OT_FAIL("%s: element %d: got %lld want %lld", what, i, got, want);
}

/* ---- a non-commutative, associative op: (v, l) is a number v of l decimal digits;
 *      a o b = (a.v * 10^b.l + b.v, a.l + b.l) mod MOD, i.e. digit strings concatenated */
typedef struct {
    long long v, l;
} cat_t;

static long long pow10_mod(long long l)
{
    long long p = 1;
    for (long long i = 0; i < l; i++)
        p = p * 10 % MOD;
    return p;
}

static void cat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    cat_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        /* inout = in o inout: in is the lower-ranked operand */
        b[i].v = (a[i].v * pow10_mod(b[i].l) + b[i].v) % MOD;
        b[i].l = a[i].l + b[i].l;
    }
}

/* rank r's element i: one digit that differs by rank and index */
static cat_t cat_of(int r, int i, int salt)
{
    cat_t c = {(r * 3 + i + salt) % 9 + 1, 1};
    return c;
}

/* the concatenation of ranks [from, to) at index i */
static cat_t cat_range(int from, int to, int i, int salt)
{
    cat_t acc = {0, 0};
    for (int r = from; r < to; r++) {
        cat_t c = cat_of(r, i, salt);
        acc.v = (acc.v * 10 + c.v) % MOD;
        acc.l += 1;
    }
    return acc;
}

static void cat_check(const char *what, const cat_t *got, int count, int from, int to, int salt)
{
    for (int i = 0; i < count; i++) {
        cat_t want = cat_range(from, to, i, salt);
        expect_ll(what, got[i].v, want.v, i);
        expect_ll(what, got[i].l, want.l, i);
    }
}

static void test_user_op(MPI_Comm comm, MPI_Datatype cat, MPI_Op op, int count, bool nb, int salt)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    cat_t *s = malloc(sizeof(cat_t) * (size_t)count * (size_t)n);
    cat_t *res = malloc(sizeof(cat_t) * (size_t)count * 5);
    if (!s || !res)
        OT_FAIL("out of memory");
    for (int i = 0; i < count * n; i++)
        s[i] = cat_of(me, i, salt);
    MPI_Request q[5];
    const int root = n - 1;
    cat_t *ar = res, *re = res + count, *sc = res + 2 * count, *ex = res + 3 * count, *rsb = res + 4 * count;
    for (int i = 0; i < count * 5; i++)
        res[i].v = SENTINEL, res[i].l = SENTINEL;
    if (nb) {
        OT_MPI(MPI_Iallreduce(s, ar, count, cat, op, comm, &q[0]));
        OT_MPI(MPI_Ireduce(s, re, count, cat, op, root, comm, &q[1]));
        OT_MPI(MPI_Iscan(s, sc, count, cat, op, comm, &q[2]));
        OT_MPI(MPI_Iexscan(s, ex, count, cat, op, comm, &q[3]));
        OT_MPI(MPI_Ireduce_scatter_block(s, rsb, count, cat, op, comm, &q[4]));
        ot_waitall_deadline(5, q, 60);
    } else {
        OT_MPI(MPI_Allreduce(s, ar, count, cat, op, comm));
        OT_MPI(MPI_Reduce(s, re, count, cat, op, root, comm));
        OT_MPI(MPI_Scan(s, sc, count, cat, op, comm));
        OT_MPI(MPI_Exscan(s, ex, count, cat, op, comm));
        OT_MPI(MPI_Reduce_scatter_block(s, rsb, count, cat, op, comm));
    }
    cat_check(nb ? "Iallreduce (user op)" : "Allreduce (user op)", ar, count, 0, n, salt);
    if (me == root)
        cat_check(nb ? "Ireduce (user op)" : "Reduce (user op)", re, count, 0, n, salt);
    cat_check(nb ? "Iscan (user op)" : "Scan (user op)", sc, count, 0, me + 1, salt);
    if (me > 0)
        cat_check(nb ? "Iexscan (user op)" : "Exscan (user op)", ex, count, 0, me, salt);
    /* block me of every rank's input: index me * count + i */
    for (int i = 0; i < count; i++) {
        cat_t want = cat_range(0, n, me * count + i, salt);
        expect_ll("Reduce_scatter_block (user op)", rsb[i].v, want.v, i);
        expect_ll("Reduce_scatter_block (user op)", rsb[i].l, want.l, i);
    }
    free(res);
    free(s);
}

/* ---- strided: every other int, non-blocking */
static void test_strided_nb(MPI_Comm comm, int cnt, int salt)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Datatype vec, stride;
    OT_MPI(MPI_Type_vector(cnt, 1, 2, MPI_INT, &vec));
    OT_MPI(MPI_Type_create_resized(vec, 0, (MPI_Aint)(sizeof(int) * 2 * (size_t)cnt), &stride));
    OT_MPI(MPI_Type_commit(&stride));
    const size_t blk = 2 * (size_t)cnt;
    int *b = malloc(sizeof(int) * blk), *sa = malloc(sizeof(int) * blk * (size_t)n),
        *ga = malloc(sizeof(int) * blk * (size_t)n), *ra = malloc(sizeof(int) * blk * (size_t)n),
        *s1 = malloc(sizeof(int) * (size_t)cnt);
    if (!b || !sa || !ga || !ra || !s1)
        OT_FAIL("out of memory");
    const int root = n > 1 ? 1 : 0;
    for (size_t i = 0; i < blk; i++)
        b[i] = me == root ? (i % 2 ? SENTINEL : (int)(i / 2) * 5 + salt) : SENTINEL;
    for (int i = 0; i < cnt; i++)
        s1[i] = me * 1000 + i + salt;
    for (size_t i = 0; i < blk * (size_t)n; i++) {
        ga[i] = ra[i] = SENTINEL;
        /* alltoall: block p, element j (even index) = what this rank sends to p */
        sa[i] = i % 2 ? SENTINEL : me * 100000 + (int)(i / blk) * 1000 + (int)(i % blk) / 2 + salt;
    }
    MPI_Request q[3];
    OT_MPI(MPI_Ibcast(b, 1, stride, root, comm, &q[0]));
    OT_MPI(MPI_Iallgather(s1, cnt, MPI_INT, ga, 1, stride, comm, &q[1]));
    OT_MPI(MPI_Ialltoall(sa, 1, stride, ra, 1, stride, comm, &q[2]));
    ot_waitall_deadline(3, q, 60);
    for (size_t i = 0; i < blk; i++)
        expect_ll("Ibcast (strided)", b[i], i % 2 ? SENTINEL : (int)(i / 2) * 5 + salt, (int)i);
    for (int p = 0; p < n; p++)
        for (size_t i = 0; i < blk; i++) {
            const size_t at = (size_t)p * blk + i;
            expect_ll("Iallgather (strided)", ga[at], i % 2 ? SENTINEL : p * 1000 + (int)(i / 2) + salt,
                      (int)at);
            expect_ll("Ialltoall (strided)", ra[at],
                      i % 2 ? SENTINEL : p * 100000 + me * 1000 + (int)(i / 2) + salt, (int)at);
        }
    MPI_Type_free(&stride);
    MPI_Type_free(&vec);
    free(b), free(sa), free(ga), free(ra), free(s1);
}

/* ---- persistent collectives, several starts, new inputs each time */
static void test_persistent(MPI_Comm comm, int count, int starts)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    long long *s = malloc(sizeof(long long) * (size_t)count), *r = malloc(sizeof(long long) * (size_t)count),
              *b = malloc(sizeof(long long) * (size_t)count);
    int *as = malloc(sizeof(int) * (size_t)n * 2), *ar = malloc(sizeof(int) * (size_t)n * 2);
    if (!s || !r || !b || !as || !ar)
        OT_FAIL("out of memory");
    MPI_Request q[4];
    const int root = n - 1;
    OT_MPI(MPIX_Allreduce_init(s, r, count, MPI_LONG_LONG, MPI_SUM, comm, MPI_INFO_NULL, &q[0]));
    OT_MPI(MPIX_Bcast_init(b, count, MPI_LONG_LONG, root, comm, MPI_INFO_NULL, &q[1]));
    OT_MPI(MPIX_Barrier_init(comm, MPI_INFO_NULL, &q[2]));
    OT_MPI(MPIX_Alltoall_init(as, 2, MPI_INT, ar, 2, MPI_INT, comm, MPI_INFO_NULL, &q[3]));
    for (int k = 0; k < starts; k++) {
        for (int i = 0; i < count; i++) {
            s[i] = (long long)me * 7919 + i * 31 + k * 1000003LL;
            r[i] = SENTINEL;
            b[i] = me == root ? (long long)i * i + k : SENTINEL;
        }
        for (int i = 0; i < 2 * n; i++) {
            as[i] = me * 10000 + i * 10 + k;
            ar[i] = SENTINEL;
        }
        if (k % 2) {
            OT_MPI(MPI_Startall(4, q));
        } else {
            for (int j = 0; j < 4; j++)
                OT_MPI(MPI_Start(&q[j]));
        }
        ot_waitall_deadline(4, q, 60);
        for (int i = 0; i < count; i++) {
            long long want = 0;
            for (int p = 0; p < n; p++)
                want += (long long)p * 7919 + i * 31 + k * 1000003LL;
            expect_ll("persistent Allreduce", r[i], want, i);
            expect_ll("persistent Bcast", b[i], (long long)i * i + k, i);
        }
        for (int p = 0; p < n; p++)
            for (int j = 0; j < 2; j++)
                expect_ll("persistent Alltoall", ar[2 * p + j], p * 10000 + (2 * me + j) * 10 + k, 2 * p + j);
    }
    for (int j = 0; j < 4; j++)
        OT_MPI(MPI_Request_free(&q[j]));
    free(s), free(r), free(b), free(as), free(ar);
}

static void test_reduce_local(MPI_Datatype cat, MPI_Op op, int count)
{
    int *in = malloc(sizeof(int) * (size_t)count), *io = malloc(sizeof(int) * (size_t)count);
    cat_t *cin = malloc(sizeof(cat_t) * (size_t)count), *cio = malloc(sizeof(cat_t) * (size_t)count);
    if (!in || !io || !cin || !cio)
        OT_FAIL("out of memory");
    for (int i = 0; i < count; i++) {
        in[i] = i * 3 + ot_rank;
        io[i] = 1000 - i;
        cin[i] = cat_of(0, i, 1);
        cio[i] = cat_of(1, i, 1);
    }
    OT_MPI(MPI_Reduce_local(in, io, count, MPI_INT, MPI_SUM));
    OT_MPI(MPI_Reduce_local(cin, cio, count, cat, op));
    for (int i = 0; i < count; i++)
        expect_ll("Reduce_local SUM", io[i], i * 3 + ot_rank + 1000 - i, i);
    cat_check("Reduce_local (user op)", cio, count, 0, 2, 1);
    free(in), free(io), free(cin), free(cio);
}

static void test_barriers(MPI_Comm comm)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    (void)n, (void)me;
    for (int k = 0; k < 3; k++) {
        OT_MPI(MPI_Barrier(comm));
        MPI_Request q;
        OT_MPI(MPI_Ibarrier(comm, &q));
        ot_waitall_deadline(1, &q, 60);
    }
    checks++;
}

static void run_all(MPI_Comm comm, MPI_Datatype cat, MPI_Op op, int count, int starts, int salt)
{
    test_barriers(comm);
    test_user_op(comm, cat, op, count, false, salt);
    test_user_op(comm, cat, op, count, true, salt + 1);
    test_strided_nb(comm, count, salt);
    test_persistent(comm, count, starts);
}

static void test_inter(void)
{
    /* two halves of MPI_COMM_WORLD joined by an intercommunicator */
    if (ot_size < 2) {
        printf("OK t_alone --inter: skipped on 1 rank\n");
        return;
    }
    MPI_Comm half, inter;
    OT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OT_MPI(MPI_Comm_split(MPI_COMM_WORLD, ot_rank % 2, ot_rank, &half));
    OT_MPI(MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN));
    int rc = MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, ot_rank % 2 ? 0 : 1, 99, &inter);
    if (rc == MPI_SUCCESS)
        OT_FAIL("MPI_Intercomm_create succeeded with dfccl alone: expected it to fail");
    if (ot_rank == 0)
        printf("OK t_alone --inter: MPI_Intercomm_create failed as expected (rc %d)\n", rc);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int count = atoi(ot_opt(argc, argv, "--count", "29"));
    const int starts = atoi(ot_opt(argc, argv, "--starts", "5"));
    if (ot_flag(argc, argv, "--inter")) {
        test_inter();
        MPI_Finalize();
        return 0;
    }
    MPI_Datatype cat;
    MPI_Op op;
    OT_MPI(MPI_Type_contiguous(2, MPI_LONG_LONG, &cat));
    OT_MPI(MPI_Type_commit(&cat));
    OT_MPI(MPI_Op_create(cat_op, 0, &op));
    double t0 = MPI_Wtime();

    test_reduce_local(cat, op, count);
    run_all(MPI_COMM_SELF, cat, op, count, starts, 1);
    run_all(MPI_COMM_WORLD, cat, op, count, starts, 2);
    MPI_Comm dup, split;
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    run_all(dup, cat, op, count, starts, 3);
    /* uneven halves, reversed rank order: a rank's place differs from its world rank */
    OT_MPI(MPI_Comm_split(MPI_COMM_WORLD, ot_rank % 3 == 0, ot_size - ot_rank, &split));
    run_all(split, cat, op, count, starts, 4);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);

    MPI_Op_free(&op);
    MPI_Type_free(&cat);
    long all = 0;
    OT_MPI(MPI_Reduce(&checks, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (ot_rank == 0)
        printf(
            "OK t_alone: %ld checks on %d ranks in %.1f s (COMM_SELF, world, dup, split; user op and strided "
            "non-blocking; persistent; Reduce_local; barriers)\n",
            all, ot_size, MPI_Wtime() - t0);
    MPI_Finalize();
    return 0;
}
