/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives on an intercommunicator (the even and the odd ranks of MPI_COMM_WORLD),
 * blocking and non-blocking, checked element by element against values computed here:
 * allreduce, bcast, reduce, allgather, allgatherv, alltoall, alltoallv, gather, gatherv,
 * scatter, scatterv, barrier. dfccl runs none of them itself; with
 * device buffers (coll_dfccl_fake_device=1 in CI: host buffers taken for device memory)
 * it must stage each one through host memory for the other components, so no device
 * pointer reaches their host-only algorithms. Every receive buffer starts as a sentinel,
 * so a block staged back from the wrong place shows.
 *
 * Built with -DOT_DEVICE (t_inter_dev, GPU machines) every buffer the MPI call sees is a
 * device copy (cudaMalloc) of the host array the test fills and checks.
 *
 *   t_inter [--count 29]
 */
#ifdef OT_DEVICE
#include <cuda_runtime.h>
#endif
#include "ompi_test.h"

#define SENT (-7)

static int lrank, lsize, rsize, group; /* group: 0 even ranks, 1 odd ranks */
static long checks;

/* what local rank r of group g sends to remote rank d, element i */
static int v(int g, int r, int d, int i)
{
    return g * 100000 + r * 1000 + d * 37 + i;
}

static void expect(const char *what, int got, int want, int i)
{
    if (got != want)
        OT_FAIL("%s: element %d: got %d want %d (group %d, rank %d of %d, remote %d)", what, i, got, want,
                group, lrank, lsize, rsize);
    checks++;
}

/* The buffer an MPI call sees: the host array itself, or (OT_DEVICE) a device copy made
 * here and copied back by pull() once the call has completed. */
#ifdef OT_DEVICE
static struct {
    int *h;
    void *d;
    size_t n;
} tw[8];
static int ntw;

static void *D(int *h, long n)
{
    const size_t bytes = sizeof(int) * (size_t)(n > 0 ? n : 1);
    void *d = NULL;
    if (ntw == 8)
        OT_FAIL("more than 8 device twins");
    CU(cudaMalloc(&d, bytes));
    CU(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    CU(cudaStreamSynchronize(0)); /* landed before the collective reads it */
    tw[ntw].h = h, tw[ntw].d = d, tw[ntw].n = bytes;
    ntw++;
    return d;
}

static void pull(void)
{
    for (int i = 0; i < ntw; i++) {
        CU(cudaMemcpy(tw[i].h, tw[i].d, tw[i].n, cudaMemcpyDeviceToHost));
        CU(cudaFree(tw[i].d));
    }
    ntw = 0;
}
#else
#define D(h, n) ((void)(n), (void *)(h))
static void pull(void)
{
}
#endif

static void finish(MPI_Request *q, bool nb)
{
    if (nb)
        OT_MPI(MPI_Wait(q, MPI_STATUS_IGNORE));
    pull();
}

static int *ints(long n, int fill)
{
    const size_t m = n > 0 ? (size_t)n : 1;
    int *p = malloc(sizeof(int) * m);
    if (!p)
        OT_FAIL("no memory for %zu ints", m);
    for (size_t i = 0; i < m; i++)
        p[i] = fill;
    return p;
}

/* the root argument of the rooted calls: group 0's rank 0 is the root, group 1 passes 0 */
static int root_arg(void)
{
    return group == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
}

/* allreduce: the sum over the remote group */
static void inter_allreduce(MPI_Comm ic, int cnt, bool nb)
{
    const int og = 1 - group;
    MPI_Request q = MPI_REQUEST_NULL;
    int *s = ints((long)cnt, 0), *r = ints((long)cnt, SENT);
    for (int i = 0; i < cnt; i++)
        s[i] = v(group, lrank, 0, i);
    void *ds = D(s, cnt), *dr = D(r, cnt);
    if (nb)
        OT_MPI(MPI_Iallreduce(ds, dr, cnt, MPI_INT, MPI_SUM, ic, &q));
    else
        OT_MPI(MPI_Allreduce(ds, dr, cnt, MPI_INT, MPI_SUM, ic));
    finish(&q, nb);
    for (int i = 0; i < cnt; i++) {
        int want = 0;
        for (int p = 0; p < rsize; p++)
            want += v(og, p, 0, i);
        expect("allreduce", r[i], want, i);
    }
    free(s), free(r);
}

/* bcast from group 0's rank 0 (the root of every rooted call; group 1 passes 0) */
static void inter_bcast(MPI_Comm ic, int cnt, bool nb)
{
    const int root = root_arg();
    MPI_Request q = MPI_REQUEST_NULL;
    int *b = ints((long)cnt, SENT);
    if (root == MPI_ROOT)
        for (int i = 0; i < cnt; i++)
            b[i] = v(0, 0, 1, i);
    void *db = D(b, cnt);
    if (nb)
        OT_MPI(MPI_Ibcast(db, cnt, MPI_INT, root, ic, &q));
    else
        OT_MPI(MPI_Bcast(db, cnt, MPI_INT, root, ic));
    finish(&q, nb);
    for (int i = 0; i < cnt; i++)
        expect("bcast", b[i], root == MPI_PROC_NULL ? SENT : v(0, 0, 1, i), i);
    free(b);
}

/* reduce (max) to group 0's rank 0 */
static void inter_reduce(MPI_Comm ic, int cnt, bool nb)
{
    const int root = root_arg();
    MPI_Request q = MPI_REQUEST_NULL;
    int *s = ints((long)cnt, 0), *r = ints((long)cnt, SENT);
    for (int i = 0; i < cnt; i++)
        s[i] = v(group, lrank, 2, i);
    void *ds = D(s, cnt), *dr = D(r, cnt);
    if (nb)
        OT_MPI(MPI_Ireduce(ds, dr, cnt, MPI_INT, MPI_MAX, root, ic, &q));
    else
        OT_MPI(MPI_Reduce(ds, dr, cnt, MPI_INT, MPI_MAX, root, ic));
    finish(&q, nb);
    for (int i = 0; i < cnt; i++)
        expect("reduce", r[i], root == MPI_ROOT ? v(1, rsize - 1, 2, i) : SENT, i);
    free(s), free(r);
}

/* allgather: the remote group's blocks in its rank order */
static void inter_allgather(MPI_Comm ic, int cnt, bool nb)
{
    const int og = 1 - group;
    MPI_Request q = MPI_REQUEST_NULL;
    int *s = ints((long)cnt, 0), *r = ints((long)cnt * rsize, SENT);
    for (int i = 0; i < cnt; i++)
        s[i] = v(group, lrank, 3, i);
    void *ds = D(s, cnt), *dr = D(r, (long)cnt * rsize);
    if (nb)
        OT_MPI(MPI_Iallgather(ds, cnt, MPI_INT, dr, cnt, MPI_INT, ic, &q));
    else
        OT_MPI(MPI_Allgather(ds, cnt, MPI_INT, dr, cnt, MPI_INT, ic));
    finish(&q, nb);
    for (int p = 0; p < rsize; p++)
        for (int i = 0; i < cnt; i++)
            expect("allgather", r[p * cnt + i], v(og, p, 3, i), p * cnt + i);
    free(s), free(r);
}

/* allgatherv: as allgather, in uneven blocks */
static void inter_allgatherv(MPI_Comm ic, int cnt, bool nb)
{
    const int og = 1 - group;
    MPI_Request q = MPI_REQUEST_NULL;
    /* remote rank p contributes cnt + p elements; blocks in reverse order, gaps of 2 */
    int *rc = ints((long)rsize, 0), *rd = ints((long)rsize, 0), total = 0;
    for (int p = rsize - 1; p >= 0; p--) {
        rc[p] = cnt + p;
        rd[p] = total;
        total += rc[p] + 2;
    }
    const int mine = cnt + lrank;
    int *s = ints((long)mine, 0), *r = ints((long)total, SENT);
    for (int i = 0; i < mine; i++)
        s[i] = v(group, lrank, 4, i);
    void *ds = D(s, mine), *dr = D(r, total);
    if (nb)
        OT_MPI(MPI_Iallgatherv(ds, mine, MPI_INT, dr, rc, rd, MPI_INT, ic, &q));
    else
        OT_MPI(MPI_Allgatherv(ds, mine, MPI_INT, dr, rc, rd, MPI_INT, ic));
    finish(&q, nb);
    for (int p = 0; p < rsize; p++) {
        for (int i = 0; i < rc[p]; i++)
            expect("allgatherv", r[rd[p] + i], v(og, p, 4, i), rd[p] + i);
        expect("allgatherv gap", r[rd[p] + rc[p]], SENT, rd[p] + rc[p]);
    }
    free(s), free(r), free(rc), free(rd);
}

/* alltoall: block d of my send buffer to remote rank d */
static void inter_alltoall(MPI_Comm ic, int cnt, bool nb)
{
    const int og = 1 - group;
    MPI_Request q = MPI_REQUEST_NULL;
    int *s = ints((long)cnt * rsize, 0), *r = ints((long)cnt * rsize, SENT);
    for (int d = 0; d < rsize; d++)
        for (int i = 0; i < cnt; i++)
            s[d * cnt + i] = v(group, lrank, d, i);
    void *ds = D(s, (long)cnt * rsize), *dr = D(r, (long)cnt * rsize);
    if (nb)
        OT_MPI(MPI_Ialltoall(ds, cnt, MPI_INT, dr, cnt, MPI_INT, ic, &q));
    else
        OT_MPI(MPI_Alltoall(ds, cnt, MPI_INT, dr, cnt, MPI_INT, ic));
    finish(&q, nb);
    for (int p = 0; p < rsize; p++)
        for (int i = 0; i < cnt; i++)
            expect("alltoall", r[p * cnt + i], v(og, p, lrank, i), p * cnt + i);
    free(s), free(r);
}

/* alltoallv: as alltoall, in uneven blocks */
static void inter_alltoallv(MPI_Comm ic, int cnt, bool nb)
{
    (void)cnt; /* the counts follow the ranks */
    const int og = 1 - group;
    MPI_Request q = MPI_REQUEST_NULL;
    /* local rank a sends a + d + 1 elements to remote rank d */
    int *sc = ints((long)rsize, 0), *sd = ints((long)rsize, 0), *rc = ints((long)rsize, 0),
        *rd = ints((long)rsize, 0), st = 0, rt = 0;
    for (int d = 0; d < rsize; d++) {
        sc[d] = lrank + d + 1;
        sd[d] = st;
        st += sc[d];
    }
    for (int p = rsize - 1; p >= 0; p--) {
        rc[p] = p + lrank + 1;
        rd[p] = rt;
        rt += rc[p] + 1;
    }
    int *s = ints((long)st, 0), *r = ints((long)rt, SENT);
    for (int d = 0; d < rsize; d++)
        for (int i = 0; i < sc[d]; i++)
            s[sd[d] + i] = v(group, lrank, d, i);
    void *ds = D(s, st), *dr = D(r, rt);
    if (nb)
        OT_MPI(MPI_Ialltoallv(ds, sc, sd, MPI_INT, dr, rc, rd, MPI_INT, ic, &q));
    else
        OT_MPI(MPI_Alltoallv(ds, sc, sd, MPI_INT, dr, rc, rd, MPI_INT, ic));
    finish(&q, nb);
    for (int p = 0; p < rsize; p++) {
        for (int i = 0; i < rc[p]; i++)
            expect("alltoallv", r[rd[p] + i], v(og, p, lrank, i), rd[p] + i);
        expect("alltoallv gap", r[rd[p] + rc[p]], SENT, rd[p] + rc[p]);
    }
    free(s), free(r), free(sc), free(sd), free(rc), free(rd);
}

/* gather at group 0's rank 0 */
static void inter_gather(MPI_Comm ic, int cnt, bool nb)
{
    const int root = root_arg();
    MPI_Request q = MPI_REQUEST_NULL;
    int *s = ints((long)cnt, 0), *r = ints((long)cnt * rsize, SENT);
    for (int i = 0; i < cnt; i++)
        s[i] = v(group, lrank, 5, i);
    void *ds = D(s, cnt), *dr = D(r, (long)cnt * rsize);
    if (nb)
        OT_MPI(MPI_Igather(ds, cnt, MPI_INT, dr, cnt, MPI_INT, root, ic, &q));
    else
        OT_MPI(MPI_Gather(ds, cnt, MPI_INT, dr, cnt, MPI_INT, root, ic));
    finish(&q, nb);
    for (int p = 0; p < rsize; p++)
        for (int i = 0; i < cnt; i++)
            expect("gather", r[p * cnt + i], root == MPI_ROOT ? v(1, p, 5, i) : SENT, p * cnt + i);
    free(s), free(r);
}

/* gatherv at group 0's rank 0, in uneven blocks */
static void inter_gatherv(MPI_Comm ic, int cnt, bool nb)
{
    const int root = root_arg();
    MPI_Request q = MPI_REQUEST_NULL;
    int *rc = ints((long)rsize, 0), *rd = ints((long)rsize, 0), total = 0;
    for (int p = rsize - 1; p >= 0; p--) {
        rc[p] = cnt + 2 * p;
        rd[p] = total;
        total += rc[p] + 1;
    }
    const int mine = cnt + 2 * lrank;
    int *s = ints((long)mine, 0), *r = ints((long)total, SENT);
    for (int i = 0; i < mine; i++)
        s[i] = v(group, lrank, 6, i);
    void *ds = D(s, mine), *dr = D(r, total);
    if (nb)
        OT_MPI(MPI_Igatherv(ds, mine, MPI_INT, dr, rc, rd, MPI_INT, root, ic, &q));
    else
        OT_MPI(MPI_Gatherv(ds, mine, MPI_INT, dr, rc, rd, MPI_INT, root, ic));
    finish(&q, nb);
    for (int p = 0; p < rsize && root == MPI_ROOT; p++) {
        for (int i = 0; i < rc[p]; i++)
            expect("gatherv", r[rd[p] + i], v(1, p, 6, i), rd[p] + i);
        expect("gatherv gap", r[rd[p] + rc[p]], SENT, rd[p] + rc[p]);
    }
    free(s), free(r), free(rc), free(rd);
}

/* scatter from group 0's rank 0 */
static void inter_scatter(MPI_Comm ic, int cnt, bool nb)
{
    const int root = root_arg();
    MPI_Request q = MPI_REQUEST_NULL;
    int *s = ints((long)cnt * rsize, 0), *r = ints((long)cnt, SENT);
    for (int d = 0; d < rsize; d++)
        for (int i = 0; i < cnt; i++)
            s[d * cnt + i] = v(group, lrank, d, i);
    void *ds = D(s, (long)cnt * rsize), *dr = D(r, cnt);
    if (nb)
        OT_MPI(MPI_Iscatter(ds, cnt, MPI_INT, dr, cnt, MPI_INT, root, ic, &q));
    else
        OT_MPI(MPI_Scatter(ds, cnt, MPI_INT, dr, cnt, MPI_INT, root, ic));
    finish(&q, nb);
    for (int i = 0; i < cnt; i++)
        expect("scatter", r[i], group == 1 ? v(0, 0, lrank, i) : SENT, i);
    free(s), free(r);
}

/* scatterv from group 0's rank 0, in uneven blocks */
static void inter_scatterv(MPI_Comm ic, int cnt, bool nb)
{
    const int root = root_arg();
    MPI_Request q = MPI_REQUEST_NULL;
    int *sc = ints((long)rsize, 0), *sd = ints((long)rsize, 0), total = 0;
    for (int d = rsize - 1; d >= 0; d--) {
        sc[d] = cnt + d;
        sd[d] = total;
        total += sc[d] + 3;
    }
    int *s = ints((long)total, 0), *r = ints((long)cnt + lrank + 1, SENT);
    for (int d = 0; d < rsize; d++)
        for (int i = 0; i < sc[d]; i++)
            s[sd[d] + i] = v(group, lrank, d, i);
    const int mine = group == 1 ? cnt + lrank : 0;
    void *ds = D(s, total), *dr = D(r, (long)cnt + lrank + 1);
    if (nb)
        OT_MPI(MPI_Iscatterv(ds, sc, sd, MPI_INT, dr, mine, MPI_INT, root, ic, &q));
    else
        OT_MPI(MPI_Scatterv(ds, sc, sd, MPI_INT, dr, mine, MPI_INT, root, ic));
    finish(&q, nb);
    for (int i = 0; i < mine; i++)
        expect("scatterv", r[i], v(0, 0, lrank, i), i);
    expect("scatterv end", r[mine], SENT, mine);
    free(s), free(r), free(sc), free(sd);
}

static void run(MPI_Comm ic, int cnt, bool nb)
{
    inter_allreduce(ic, cnt, nb);
    inter_bcast(ic, cnt, nb);
    inter_reduce(ic, cnt, nb);
    inter_allgather(ic, cnt, nb);
    inter_allgatherv(ic, cnt, nb);
    inter_alltoall(ic, cnt, nb);
    inter_alltoallv(ic, cnt, nb);
    inter_gather(ic, cnt, nb);
    inter_gatherv(ic, cnt, nb);
    inter_scatter(ic, cnt, nb);
    inter_scatterv(ic, cnt, nb);
    MPI_Request q = MPI_REQUEST_NULL;
    if (nb)
        OT_MPI(MPI_Ibarrier(ic, &q));
    else
        OT_MPI(MPI_Barrier(ic));
    finish(&q, nb);
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int cnt = atoi(ot_opt(argc, argv, "--count", "29"));
    if (ot_size < 2) {
        if (ot_rank == 0)
            printf("SKIP t_inter: needs 2 ranks\n");
        MPI_Finalize();
        return 0;
    }
    group = ot_rank % 2;
    MPI_Comm local, ic;
    OT_MPI(MPI_Comm_split(MPI_COMM_WORLD, group, ot_rank, &local));
    /* the other group's leader: world rank 1 for group 0, world rank 0 for group 1 */
    OT_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - group, 77, &ic));
    MPI_Comm_rank(ic, &lrank);
    MPI_Comm_size(ic, &lsize);
    MPI_Comm_remote_size(ic, &rsize);
    for (int nb = 0; nb < 2; nb++) {
        run(ic, cnt, nb);
        run(ic, 1, nb);
    }
    OT_MPI(MPI_Comm_free(&ic));
    OT_MPI(MPI_Comm_free(&local));
    long all = 0;
    MPI_Reduce(&checks, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf(
            "OK t_inter: %ld checks on %d ranks (intercommunicator of the even and the odd ranks; blocking "
            "and non-blocking)\n",
            all, ot_size);
    MPI_Finalize();
    return 0;
}
