/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives dfccl stages for the previous module, through MPI, checked element by
 * element against values computed here: MPI_Gather(v), MPI_Scatter(v), MPI_Allgatherv,
 * MPI_Alltoallv, MPI_Alltoallw, MPI_Scan, MPI_Exscan, blocking and non-blocking; uneven
 * v-counts with zeros, reversed displacements with gaps (which must stay untouched), roots
 * 0 and size-1, MPI_IN_PLACE where MPI allows it, a user-defined op and a strided
 * datatype. Every receive buffer starts as a sentinel, so a block never written shows.
 *
 * Built with -DOT_DEVICE (t_allcolls_dev, GPU machines) every buffer the MPI call sees is a
 * device copy (cudaMalloc); with coll_dfccl_fake_device=1 the component treats host
 * buffers as device memory and stages them (CI).
 *
 *   t_allcolls [--count 37]
 */
#ifdef OT_DEVICE
#include <cuda_runtime.h>
#endif
#include "ompi_test.h"

#define SENTINEL (-7)

static long checks;

/* the value rank `src` contributes at index i of collective `salt` */
static int val(int src, int i, int salt)
{
    return src * 1000 + i + salt * 7;
}

/* ---- buffers the MPI call sees: the host array itself, or a device copy of it */
typedef struct {
    int *host;
    void *dev;
    size_t n;
} buf_t;

static buf_t buf_new(size_t n, int fill)
{
    buf_t b = {malloc(sizeof(int) * (n ? n : 1)), NULL, n};
    if (!b.host)
        OT_FAIL("out of memory");
    for (size_t i = 0; i < n; i++)
        b.host[i] = fill;
#ifdef OT_DEVICE
    CU(cudaMalloc(&b.dev, sizeof(int) * (n ? n : 1)));
#endif
    return b;
}

/* the pointer for the MPI call, the host contents copied in */
static void *buf_in(buf_t *b)
{
#ifdef OT_DEVICE
    CU(cudaMemcpy(b->dev, b->host, sizeof(int) * b->n, cudaMemcpyHostToDevice));
    return b->dev;
#else
    return b->host;
#endif
}

static void buf_out(buf_t *b)
{
#ifdef OT_DEVICE
    CU(cudaMemcpy(b->host, b->dev, sizeof(int) * b->n, cudaMemcpyDeviceToHost));
#else
    (void)b;
#endif
}

static void buf_free(buf_t *b)
{
#ifdef OT_DEVICE
    CU(cudaFree(b->dev));
#endif
    free(b->host);
}

static void expect(const char *what, int got, int want, size_t i)
{
    checks++;
    if (got != want)
        OT_FAIL("%s: element %zu: got %d want %d", what, i, got, want);
}

/* wait for a non-blocking call, or nothing for a blocking one */
static void finish(MPI_Request *q)
{
    if (*q != MPI_REQUEST_NULL)
        OT_MPI(MPI_Wait(q, MPI_STATUS_IGNORE));
}

/* uneven counts with zeros, and reversed displacements with a gap of one after each */
static int vcount(int r, int cnt)
{
    return r % 3 == 1 ? 0 : cnt / 2 + r * 3;
}

static void vlayout(int n, int cnt, int *counts, int *displs, int *total)
{
    int at = 0;
    for (int r = n - 1; r >= 0; r--) {
        counts[r] = vcount(r, cnt);
        displs[r] = at;
        at += counts[r] + 1;
    }
    *total = at;
}

static void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] = (((int *)inout)[i] + ((int *)in)[i]) % 1000003;
}

static void test_gather(int cnt, int root, bool nb, bool in_place)
{
    const int n = ot_size, me = ot_rank, salt = 1;
    buf_t s = buf_new((size_t)cnt, 0), r = buf_new((size_t)cnt * (size_t)n, SENTINEL);
    for (int i = 0; i < cnt; i++)
        s.host[i] = val(me, i, salt);
    if (in_place && me == root)
        for (int i = 0; i < cnt; i++)
            r.host[(size_t)me * (size_t)cnt + (size_t)i] = val(me, i, salt);
    MPI_Request q = MPI_REQUEST_NULL;
    const void *sp = in_place && me == root ? MPI_IN_PLACE : buf_in(&s);
    void *rp = buf_in(&r);
    if (nb)
        OT_MPI(MPI_Igather(sp, cnt, MPI_INT, rp, cnt, MPI_INT, root, MPI_COMM_WORLD, &q));
    else
        OT_MPI(MPI_Gather(sp, cnt, MPI_INT, rp, cnt, MPI_INT, root, MPI_COMM_WORLD));
    finish(&q);
    buf_out(&r);
    if (me == root)
        for (int p = 0; p < n; p++)
            for (int i = 0; i < cnt; i++)
                expect("gather", r.host[(size_t)p * (size_t)cnt + (size_t)i], val(p, i, salt),
                       (size_t)p * (size_t)cnt + (size_t)i);
    buf_free(&s);
    buf_free(&r);
}

/* gather into a strided receive type at the root: every other int of the buffer */
static void test_gather_strided(int cnt, int root, bool nb)
{
    const int n = ot_size, me = ot_rank, salt = 2;
    MPI_Datatype vec, rtype;
    OT_MPI(MPI_Type_vector(cnt, 1, 2, MPI_INT, &vec));
    OT_MPI(MPI_Type_create_resized(vec, 0, (MPI_Aint)(sizeof(int) * 2 * (size_t)cnt), &rtype));
    OT_MPI(MPI_Type_commit(&rtype));
    buf_t s = buf_new((size_t)cnt, 0), r = buf_new((size_t)cnt * 2 * (size_t)n, SENTINEL);
    for (int i = 0; i < cnt; i++)
        s.host[i] = val(me, i, salt);
    MPI_Request q = MPI_REQUEST_NULL;
    void *sp = buf_in(&s), *rp = buf_in(&r);
    if (nb)
        OT_MPI(MPI_Igather(sp, cnt, MPI_INT, rp, 1, rtype, root, MPI_COMM_WORLD, &q));
    else
        OT_MPI(MPI_Gather(sp, cnt, MPI_INT, rp, 1, rtype, root, MPI_COMM_WORLD));
    finish(&q);
    buf_out(&r);
    if (me == root)
        for (int p = 0; p < n; p++)
            for (int i = 0; i < 2 * cnt; i++) {
                const size_t at = (size_t)p * 2 * (size_t)cnt + (size_t)i;
                expect("gather, strided type", r.host[at], i % 2 ? SENTINEL : val(p, i / 2, salt), at);
            }
    MPI_Type_free(&rtype);
    MPI_Type_free(&vec);
    buf_free(&s);
    buf_free(&r);
}

static void test_gatherv(int cnt, int root, bool nb, bool in_place)
{
    const int n = ot_size, me = ot_rank, salt = 3;
    int *counts = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n), total;
    vlayout(n, cnt, counts, displs, &total);
    buf_t s = buf_new((size_t)counts[me], 0), r = buf_new((size_t)total, SENTINEL);
    for (int i = 0; i < counts[me]; i++)
        s.host[i] = val(me, i, salt);
    if (in_place && me == root)
        for (int i = 0; i < counts[me]; i++)
            r.host[displs[me] + i] = val(me, i, salt);
    MPI_Request q = MPI_REQUEST_NULL;
    const void *sp = in_place && me == root ? MPI_IN_PLACE : buf_in(&s);
    void *rp = buf_in(&r);
    /* recvcounts and displs count at the root only: NULL elsewhere */
    const int *rc = me == root ? counts : NULL, *rd = me == root ? displs : NULL;
    if (nb)
        OT_MPI(MPI_Igatherv(sp, counts[me], MPI_INT, rp, rc, rd, MPI_INT, root, MPI_COMM_WORLD, &q));
    else
        OT_MPI(MPI_Gatherv(sp, counts[me], MPI_INT, rp, rc, rd, MPI_INT, root, MPI_COMM_WORLD));
    finish(&q);
    buf_out(&r);
    if (me == root)
        for (int p = 0; p < n; p++) {
            for (int i = 0; i < counts[p]; i++)
                expect("gatherv", r.host[displs[p] + i], val(p, i, salt), (size_t)(displs[p] + i));
            expect("gatherv gap", r.host[displs[p] + counts[p]], SENTINEL, (size_t)(displs[p] + counts[p]));
        }
    free(counts);
    free(displs);
    buf_free(&s);
    buf_free(&r);
}

static void test_scatter(int cnt, int root, bool nb, bool in_place, bool v)
{
    const int n = ot_size, me = ot_rank, salt = v ? 5 : 4;
    int *counts = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n), total;
    if (v) {
        vlayout(n, cnt, counts, displs, &total);
    } else {
        for (int p = 0; p < n; p++)
            counts[p] = cnt, displs[p] = p * cnt;
        total = n * cnt;
    }
    buf_t s = buf_new((size_t)total, SENTINEL), r = buf_new((size_t)counts[me] + 1, SENTINEL);
    if (me == root)
        for (int p = 0; p < n; p++)
            for (int i = 0; i < counts[p]; i++)
                s.host[displs[p] + i] = val(p, i, salt);
    MPI_Request q = MPI_REQUEST_NULL;
    void *sp = buf_in(&s);
    void *rp = in_place && me == root ? MPI_IN_PLACE : buf_in(&r);
    if (v && nb)
        OT_MPI(MPI_Iscatterv(sp, me == root ? counts : NULL, me == root ? displs : NULL, MPI_INT, rp,
                             counts[me], MPI_INT, root, MPI_COMM_WORLD, &q));
    else if (v)
        OT_MPI(MPI_Scatterv(sp, me == root ? counts : NULL, me == root ? displs : NULL, MPI_INT, rp,
                            counts[me], MPI_INT, root, MPI_COMM_WORLD));
    else if (nb)
        OT_MPI(MPI_Iscatter(sp, cnt, MPI_INT, rp, cnt, MPI_INT, root, MPI_COMM_WORLD, &q));
    else
        OT_MPI(MPI_Scatter(sp, cnt, MPI_INT, rp, cnt, MPI_INT, root, MPI_COMM_WORLD));
    finish(&q);
    if (in_place && me == root) {
        buf_out(&s); /* its own block stays where it is, untouched */
        for (int i = 0; i < counts[me]; i++)
            expect(v ? "scatterv in place" : "scatter in place", s.host[displs[me] + i], val(me, i, salt),
                   (size_t)i);
    } else {
        buf_out(&r);
        for (int i = 0; i < counts[me]; i++)
            expect(v ? "scatterv" : "scatter", r.host[i], val(me, i, salt), (size_t)i);
        expect(v ? "scatterv past the block" : "scatter past the block", r.host[counts[me]], SENTINEL,
               (size_t)counts[me]);
    }
    free(counts);
    free(displs);
    buf_free(&s);
    buf_free(&r);
}

static void test_allgatherv(int cnt, bool nb, bool in_place)
{
    const int n = ot_size, me = ot_rank, salt = 6;
    int *counts = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n), total;
    vlayout(n, cnt, counts, displs, &total);
    buf_t s = buf_new((size_t)counts[me], 0), r = buf_new((size_t)total, SENTINEL);
    for (int i = 0; i < counts[me]; i++)
        s.host[i] = val(me, i, salt);
    if (in_place)
        for (int i = 0; i < counts[me]; i++)
            r.host[displs[me] + i] = val(me, i, salt);
    MPI_Request q = MPI_REQUEST_NULL;
    const void *sp = in_place ? MPI_IN_PLACE : buf_in(&s);
    void *rp = buf_in(&r);
    if (nb)
        OT_MPI(MPI_Iallgatherv(sp, counts[me], MPI_INT, rp, counts, displs, MPI_INT, MPI_COMM_WORLD, &q));
    else
        OT_MPI(MPI_Allgatherv(sp, counts[me], MPI_INT, rp, counts, displs, MPI_INT, MPI_COMM_WORLD));
    finish(&q);
    buf_out(&r);
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < counts[p]; i++)
            expect("allgatherv", r.host[displs[p] + i], val(p, i, salt), (size_t)(displs[p] + i));
        expect("allgatherv gap", r.host[displs[p] + counts[p]], SENTINEL, (size_t)(displs[p] + counts[p]));
    }
    free(counts);
    free(displs);
    buf_free(&s);
    buf_free(&r);
}

/* alltoallv / alltoallw: rank r sends (r + p) % 3 * k elements to p (symmetric, so that
 * MPI_IN_PLACE is legal), at reversed displacements with gaps */
static int a2a_count(int r, int p, int k)
{
    return (r + p) % 3 * k;
}

static void test_alltoallv(int cnt, bool nb, bool in_place, bool w)
{
    const int n = ot_size, me = ot_rank, salt = w ? 8 : 7, k = cnt / 4 + 1;
    int *sc = malloc(sizeof(int) * (size_t)n), *sd = malloc(sizeof(int) * (size_t)n);
    int *rc = malloc(sizeof(int) * (size_t)n), *rd = malloc(sizeof(int) * (size_t)n);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)n);
    int stot = 0, rtot = 0;
    for (int p = n - 1; p >= 0; p--) {
        sc[p] = a2a_count(me, p, k);
        rc[p] = a2a_count(p, me, k);
        sd[p] = stot;
        rd[p] = rtot;
        stot += sc[p] + 1;
        rtot += rc[p] + 1;
        types[p] = MPI_INT;
    }
    buf_t s = buf_new((size_t)stot, SENTINEL), r = buf_new((size_t)rtot, SENTINEL);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < sc[p]; i++)
            (in_place ? r.host : s.host)[(in_place ? rd : sd)[p] + i] = val(me, p * 100 + i, salt);
    if (w) /* byte displacements */
        for (int p = 0; p < n; p++)
            sd[p] *= (int)sizeof(int), rd[p] *= (int)sizeof(int);
    MPI_Request q = MPI_REQUEST_NULL;
    const void *sp = in_place ? MPI_IN_PLACE : buf_in(&s);
    void *rp = buf_in(&r);
    if (w && nb)
        OT_MPI(MPI_Ialltoallw(sp, sc, sd, types, rp, rc, rd, types, MPI_COMM_WORLD, &q));
    else if (w)
        OT_MPI(MPI_Alltoallw(sp, sc, sd, types, rp, rc, rd, types, MPI_COMM_WORLD));
    else if (nb)
        OT_MPI(MPI_Ialltoallv(sp, sc, sd, MPI_INT, rp, rc, rd, MPI_INT, MPI_COMM_WORLD, &q));
    else
        OT_MPI(MPI_Alltoallv(sp, sc, sd, MPI_INT, rp, rc, rd, MPI_INT, MPI_COMM_WORLD));
    finish(&q);
    buf_out(&r);
    if (w)
        for (int p = 0; p < n; p++)
            rd[p] /= (int)sizeof(int);
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < rc[p]; i++)
            expect(w ? "alltoallw" : "alltoallv", r.host[rd[p] + i], val(p, me * 100 + i, salt),
                   (size_t)(rd[p] + i));
        expect(w ? "alltoallw gap" : "alltoallv gap", r.host[rd[p] + rc[p]], SENTINEL,
               (size_t)(rd[p] + rc[p]));
    }
    free(sc), free(sd), free(rc), free(rd), free(types);
    buf_free(&s);
    buf_free(&r);
}

static void test_scan(int cnt, bool nb, bool in_place, bool ex, MPI_Op op)
{
    const int me = ot_rank, salt = ex ? 10 : 9;
    buf_t s = buf_new((size_t)cnt, 0), r = buf_new((size_t)cnt, SENTINEL);
    for (int i = 0; i < cnt; i++)
        (in_place ? r.host : s.host)[i] = val(me, i, salt);
    MPI_Request q = MPI_REQUEST_NULL;
    const void *sp = in_place ? MPI_IN_PLACE : buf_in(&s);
    void *rp = buf_in(&r);
    if (ex && nb)
        OT_MPI(MPI_Iexscan(sp, rp, cnt, MPI_INT, op, MPI_COMM_WORLD, &q));
    else if (ex)
        OT_MPI(MPI_Exscan(sp, rp, cnt, MPI_INT, op, MPI_COMM_WORLD));
    else if (nb)
        OT_MPI(MPI_Iscan(sp, rp, cnt, MPI_INT, op, MPI_COMM_WORLD, &q));
    else
        OT_MPI(MPI_Scan(sp, rp, cnt, MPI_INT, op, MPI_COMM_WORLD));
    finish(&q);
    buf_out(&r);
    if (!ex || me > 0) /* exscan leaves rank 0's result undefined */
        for (int i = 0; i < cnt; i++) {
            long want = 0;
            for (int p = 0; p < (ex ? me : me + 1); p++)
                want = op == MPI_SUM ? want + val(p, i, salt) : (want + val(p, i, salt)) % 1000003;
            expect(ex ? "exscan" : "scan", r.host[i], (int)want, (size_t)i);
        }
    buf_free(&s);
    buf_free(&r);
}

/* A rank that moves nothing and passes NULL (a common idiom) right after calls that
 * move nothing at all: it must take the path of the others (the memory kind of the
 * communicator's latest call with data), not the one of the empty calls. */
static void test_gatherv_null_rank(bool nb)
{
    const int n = ot_size, me = ot_rank, root = 0, salt = 11, idle = n - 1;
    int *counts = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n), total = 0;
    for (int p = 0; p < n; p++) {
        counts[p] = p == idle && n > 1 ? 0 : 5 + p;
        displs[p] = total;
        total += counts[p] + 1;
    }
    /* calls that move nothing first (those Open MPI does not answer itself reach dfccl) */
    OT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    buf_t z = buf_new(1, 0);
    void *zp = buf_in(&z);
    OT_MPI(MPI_Alltoall(zp, 0, MPI_INT, zp, 0, MPI_INT, MPI_COMM_WORLD));
    OT_MPI(MPI_Gather(zp, 0, MPI_INT, zp, 0, MPI_INT, root, MPI_COMM_WORLD));
    buf_t s = buf_new((size_t)counts[me], 0), r = buf_new((size_t)total, SENTINEL);
    for (int i = 0; i < counts[me]; i++)
        s.host[i] = val(me, i, salt);
    const void *sp = counts[me] ? buf_in(&s) : NULL;
    void *rp = me == root ? buf_in(&r) : NULL;
    MPI_Request q = MPI_REQUEST_NULL;
    const int *rc = me == root ? counts : NULL, *rd = me == root ? displs : NULL;
    if (nb)
        OT_MPI(MPI_Igatherv(sp, counts[me], MPI_INT, rp, rc, rd, MPI_INT, root, MPI_COMM_WORLD, &q));
    else
        OT_MPI(MPI_Gatherv(sp, counts[me], MPI_INT, rp, rc, rd, MPI_INT, root, MPI_COMM_WORLD));
    finish(&q);
    if (me == root) {
        buf_out(&r);
        for (int p = 0; p < n; p++) {
            for (int i = 0; i < counts[p]; i++)
                expect("gatherv, a rank with NULL", r.host[displs[p] + i], val(p, i, salt),
                       (size_t)(displs[p] + i));
            expect("gatherv, a rank with NULL: gap", r.host[displs[p] + counts[p]], SENTINEL,
                   (size_t)(displs[p] + counts[p]));
        }
    }
    free(counts);
    free(displs);
    buf_free(&z);
    buf_free(&s);
    buf_free(&r);
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int cnt = atoi(ot_opt(argc, argv, "--count", "37"));
    MPI_Op user;
    OT_MPI(MPI_Op_create(my_sum, 1, &user));
    double t0 = MPI_Wtime();
    for (int nb = 0; nb < 2; nb++) {
        for (int root = 0; root<ot_size; root += ot_size> 1 ? ot_size - 1 : 1) {
            for (int ip = 0; ip < 2; ip++) {
                test_gather(cnt, root, nb, ip);
                test_gatherv(cnt, root, nb, ip);
                test_scatter(cnt, root, nb, ip, false);
                test_scatter(cnt, root, nb, ip, true);
            }
            test_gather_strided(cnt, root, nb);
        }
        test_gatherv_null_rank(nb);
        for (int ip = 0; ip < 2; ip++) {
            test_allgatherv(cnt, nb, ip);
            test_alltoallv(cnt, nb, ip, false);
            test_alltoallv(cnt, nb, ip, true);
            test_scan(cnt, nb, ip, false, MPI_SUM);
            test_scan(cnt, nb, ip, true, MPI_SUM);
            test_scan(cnt, nb, ip, false, user);
            test_scan(cnt, nb, ip, true, user);
        }
    }
    MPI_Op_free(&user);
    long all = 0;
    MPI_Reduce(&checks, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf(
            "OK t_allcolls: %ld checks on %d ranks in %.1f s (gather(v), scatter(v), allgatherv, alltoallv, "
            "alltoallw, scan, exscan; blocking and non-blocking)\n",
            all, ot_size, MPI_Wtime() - t0);
    MPI_Finalize();
    return 0;
}
