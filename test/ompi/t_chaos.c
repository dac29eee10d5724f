/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Chaos order through MPI, from the very first call: fresh communicators, and every
 * rank posts MPI_Iallreduce on them in its own permutation, then waits for all of them.
 * No warm-up: the first engine call on each communicator comes in a different order on
 * every rank, which is what users do. Legal MPI (each communicator sees its calls in
 * the same order everywhere); with the engine's preemption it completes and every
 * result is checked element by element; with coll_dfccl_preempt=0 (run to
 * completion, like NCCL) it deadlocks. A watchdog proves the hang instead of waiting
 * forever: past --deadline seconds it prints HANG and exits with code 3.
 *
 *   --kind dup     MPI_Comm_dup of MPI_COMM_WORLD (default)
 *   --kind split   MPI_Comm_split: every other one reorders all ranks, the rest split
 *                  them into even and odd ranks
 *   --kind group   MPI_Comm_create_group: every other one all ranks in reverse order,
 *                  the rest the lower half of the ranks (the others get MPI_COMM_NULL)
 *   --thread L     MPI_Init_thread level: single, funneled, serialized, multiple
 *                  (default: MPI_Init)
 *   --threads T    T threads per rank (needs multiple), each owning every T-th
 *                  communicator and running its own chaos on them at the same time
 *   --blocking     every other iteration a blocking MPI_Allreduce per communicator
 *                  instead, in one order on every rank (with several threads the
 *                  threads' calls interleave differently on every rank)
 *   --mix          communicator c carries another collective instead of MPI_Iallreduce:
 *                  MPI_Igatherv, MPI_Ialltoallv, MPI_Iallgatherv, MPI_Iscatterv, MPI_Iscan
 *                  in turn (uneven counts with gaps, a root that moves with c and the
 *                  iteration), so the hang proof bites on them alone
 *   --uniform      the same with the uniform collectives: MPI_Ibcast, MPI_Ireduce,
 *                  MPI_Iallgather, MPI_Ireduce_scatter_block, MPI_Ialltoall,
 *                  MPI_Igather, MPI_Iscatter (blocks of 1, 100, 4096 and up to 70000
 *                  elements: the small ones run in one LL round, the others in a chain,
 *                  ring or pairwise exchange)
 *
 * Built with -DOT_DEVICE (t_chaos_dev, GPU machines) the buffers are device memory.
 *
 *   t_chaos [--ncomms 8] [--iters 20] [--deadline 20] [options above]
 */
#ifdef OT_DEVICE
#include <cuda_runtime.h>
#endif
#include <pthread.h>

#include "ompi_test.h"

#define MAXCOUNT 70000
#define MAXBUF   (2 * MAXCOUNT) /* --mix: a v-collective's receive side */
static const int counts[] = {1, 100, 4096, MAXCOUNT};

static int ncomms, iters, nthreads, kind_split, kind_group, blocking_too, mix;
static double deadline;
static MPI_Comm *comms;
static int *nmember;  /* ranks in communicator c */
static long *sum_wr1; /* sum over its members of (world rank + 1) */

/* Is world rank r in communicator c (and its color for split)? */
static int member(int c, int r)
{
    if (c % 2 == 0 || (!kind_split && !kind_group))
        return 1;
    if (kind_split)
        return 1; /* every rank is in one of the two halves */
    return r < (ot_size + 1) / 2;
}

/* The world ranks that share communicator c with world rank r. */
static void members_of(int c, int r, int *n_p, long *sum_p)
{
    int n = 0;
    long sum = 0;
    for (int q = 0; q < ot_size; q++) {
        int same = member(c, q) && member(c, r);
        if (kind_split && c % 2)
            same = q % 2 == r % 2;
        if (same) {
            n++;
            sum += q + 1;
        }
    }
    *n_p = n;
    *sum_p = sum;
}

static void make_comms(void)
{
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ranks = malloc(sizeof(int) * (size_t)ot_size);
    for (int c = 0; c < ncomms; c++) {
        comms[c] = MPI_COMM_NULL;
        if (kind_split) {
            const int color = c % 2 ? ot_rank % 2 : 0;
            OT_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, ot_size - ot_rank, &comms[c]));
        } else if (kind_group) {
            int n = 0;
            for (int q = 0; q < ot_size; q++)
                if (member(c, q))
                    ranks[n++] = c % 2 ? q : ot_size - 1 - q;
            if (member(c, ot_rank)) {
                MPI_Group g;
                OT_MPI(MPI_Group_incl(world, n, ranks, &g));
                OT_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, g, 100 + c, &comms[c]));
                MPI_Group_free(&g);
            }
        } else {
            OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]));
        }
        members_of(c, ot_rank, &nmember[c], &sum_wr1[c]);
    }
    free(ranks);
    MPI_Group_free(&world);
}

/* ---- --mix: the collective communicator c carries, its data and its check ------------ */
enum { MIX_ALLREDUCE, MIX_GATHERV, MIX_ALLTOALLV, MIX_ALLGATHERV, MIX_SCATTERV, MIX_SCAN, MIX_N };
/* --uniform */
enum { U_BCAST = MIX_N, U_REDUCE, U_ALLGATHER, U_REDSCAT, U_ALLTOALL, U_GATHER, U_SCATTER, U_END };
static int uniform;
static const char *const u_names[] = {"bcast",    "reduce", "allgather", "reduce_scatter_block",
                                      "alltoall", "gather", "scatter"};

/* the collective communicator c carries: every one but the allreduce, in turn */
static int mix_kind(int c)
{
    if (uniform)
        return U_BCAST + c % (U_END - U_BCAST);
    return 1 + c % (MIX_N - 1);
}

/* elements rank a sends to rank b (uneven, never more than MAXBUF / 8 in all) */
static int mix_count(int count, int a, int b)
{
    const int base = count / 9 + 1;
    return base * (1 + (a + 2 * b) % 3) / 3 + (a % 2);
}

/* value element i of what rank a sends to rank b carries (small integers: exact) */
static float mix_val(int a, int b, int i, int c, int it)
{
    return (float)((a + 1) * 1000 + b * 10 + i % 97 + c + it % 5);
}

typedef struct {
    int sc[64], sd[64], rc[64], rd[64];
    int root, me, n, stotal, rtotal;
    int b; /* --uniform: elements of one rank's block */
} mix_t;

/* --uniform: what this rank sends (in[]) for the collective of kind on communicator c */
static void uniform_prepare(int kind, int c, int it, int count, float *in, mix_t *x)
{
    const int me = x->me, n = x->n;
    x->b = count < MAXBUF / (2 * n) ? count : MAXBUF / (2 * n);
    const int b = x->b;
    switch (kind) {
    case U_BCAST: /* the root's buffer; the others receive into out[] */
    case U_REDUCE:
    case U_ALLGATHER:
    case U_GATHER:
        for (int i = 0; i < b; i++)
            in[i] = mix_val(kind == U_BCAST ? x->root : me, 0, i, c, it);
        x->stotal = b;
        break;
    default: /* U_REDSCAT, U_ALLTOALL, U_SCATTER: block p for rank p */
        for (int p = 0; p < n; p++)
            for (int i = 0; i < b; i++)
                in[p * b + i] = mix_val(me, p, i, c, it);
        x->stotal = n * b;
        break;
    }
}

/* Fill in[] with what this rank sends and the layout; returns the elements to send. */
static void mix_prepare(int c, int it, int count, MPI_Comm comm, float *in, mix_t *x)
{
    MPI_Comm_rank(comm, &x->me);
    MPI_Comm_size(comm, &x->n);
    const int me = x->me, n = x->n, kind = mix_kind(c);
    x->root = (c + it) % n;
    x->stotal = x->rtotal = 0;
    if (kind >= U_BCAST) {
        uniform_prepare(kind, c, it, count, in, x);
        return;
    }
    for (int p = 0; p < n; p++) {
        int s = 0, r = 0;
        switch (kind) {
        case MIX_GATHERV:
            s = p == x->root ? mix_count(count, me, 0) : 0;
            r = me == x->root ? mix_count(count, p, 0) : 0;
            break;
        case MIX_ALLGATHERV:
            s = mix_count(count, me, 0);
            r = mix_count(count, p, 0);
            break;
        case MIX_SCATTERV:
            s = me == x->root ? mix_count(count, p, 1) : 0;
            r = p == x->root ? mix_count(count, me, 1) : 0;
            break;
        case MIX_ALLTOALLV:
            s = mix_count(count, me, p);
            r = mix_count(count, p, me);
            break;
        default: break;
        }
        x->sc[p] = s;
        x->rc[p] = r;
    }
    /* receive blocks in reverse rank order with a gap of 3 after each */
    for (int p = n - 1, off = 0; p >= 0; p--) {
        x->rd[p] = off;
        off += x->rc[p] + 3;
        x->rtotal = off;
    }
    if (kind == MIX_SCATTERV) /* one block, at the start of recvbuf */
        for (int p = 0; p < n; p++)
            x->rd[p] = 0;
    for (int p = 0, off = 0; p < n; p++) {
        x->sd[p] = off;
        for (int i = 0; i < x->sc[p]; i++)
            in[off + i] = mix_val(me, kind == MIX_ALLGATHERV || kind == MIX_GATHERV ? 0 : p, i, c, it);
        off += x->sc[p];
        x->stotal = off;
    }
    if (kind == MIX_SCAN || kind == MIX_ALLREDUCE) {
        for (int i = 0; i < count; i++)
            in[i] = (float)((ot_rank + 1) * (c + 1) + i % 7);
        x->stotal = x->rtotal = count;
    }
}

static void mix_post(int c, int count, MPI_Comm comm, void *sb, void *rb, const mix_t *x, MPI_Request *q)
{
    const int b = x->b, root = x->root;
    switch (mix_kind(c)) {
    case U_BCAST: OT_MPI(MPI_Ibcast(x->me == root ? sb : rb, b, MPI_FLOAT, root, comm, q)); break;
    case U_REDUCE: OT_MPI(MPI_Ireduce(sb, rb, b, MPI_FLOAT, MPI_SUM, root, comm, q)); break;
    case U_ALLGATHER: OT_MPI(MPI_Iallgather(sb, b, MPI_FLOAT, rb, b, MPI_FLOAT, comm, q)); break;
    case U_REDSCAT: OT_MPI(MPI_Ireduce_scatter_block(sb, rb, b, MPI_FLOAT, MPI_SUM, comm, q)); break;
    case U_ALLTOALL: OT_MPI(MPI_Ialltoall(sb, b, MPI_FLOAT, rb, b, MPI_FLOAT, comm, q)); break;
    case U_GATHER: OT_MPI(MPI_Igather(sb, b, MPI_FLOAT, rb, b, MPI_FLOAT, root, comm, q)); break;
    case U_SCATTER: OT_MPI(MPI_Iscatter(sb, b, MPI_FLOAT, rb, b, MPI_FLOAT, root, comm, q)); break;
    case MIX_ALLREDUCE: OT_MPI(MPI_Iallreduce(sb, rb, count, MPI_FLOAT, MPI_SUM, comm, q)); break;
    case MIX_GATHERV:
        OT_MPI(MPI_Igatherv(sb, x->sc[x->root], MPI_FLOAT, rb, x->rc, x->rd, MPI_FLOAT, x->root, comm, q));
        break;
    case MIX_ALLTOALLV:
        OT_MPI(MPI_Ialltoallv(sb, x->sc, x->sd, MPI_FLOAT, rb, x->rc, x->rd, MPI_FLOAT, comm, q));
        break;
    case MIX_ALLGATHERV:
        OT_MPI(MPI_Iallgatherv(sb, x->sc[0], MPI_FLOAT, rb, x->rc, x->rd, MPI_FLOAT, comm, q));
        break;
    case MIX_SCATTERV:
        OT_MPI(MPI_Iscatterv(sb, x->sc, x->sd, MPI_FLOAT, rb, x->rc[x->root], MPI_FLOAT, x->root, comm, q));
        break;
    default: OT_MPI(MPI_Iscan(sb, rb, count, MPI_FLOAT, MPI_SUM, comm, q)); break;
    }
}

/* --uniform: out[] against what the senders put in, and nothing written past it */
static void uniform_check(int kind, int c, int it, const float *out, const mix_t *x)
{
    const int me = x->me, n = x->n, b = x->b, root = x->root;
    int len = 0; /* elements of out[] this rank receives */
    for (int j = 0; j < n * b; j++) {
        float want = 0;
        int p = j / b, i = j % b;
        switch (kind) {
        case U_BCAST:
            if (me == root || j >= b)
                continue;
            want = mix_val(root, 0, j, c, it);
            break;
        case U_REDUCE:
        case U_REDSCAT:
            if (j >= b || (kind == U_REDUCE && me != root))
                continue;
            for (int q = 0; q < n; q++) /* the members' values, whatever their world ranks */
                want += kind == U_REDUCE ? mix_val(q, 0, j, c, it) : mix_val(q, me, j, c, it);
            break;
        case U_ALLGATHER: want = mix_val(p, 0, i, c, it); break;
        case U_GATHER:
            if (me != root)
                continue;
            want = mix_val(p, 0, i, c, it);
            break;
        case U_ALLTOALL: want = mix_val(p, me, i, c, it); break;
        default: /* U_SCATTER */
            if (j >= b)
                continue;
            want = mix_val(root, me, j, c, it);
            break;
        }
        if (out[j] != want)
            OT_FAIL("iter %d comm %d (%s, root %d, %d a block) element %d: got %g want %g", it, c,
                    u_names[kind - U_BCAST], root, b, j, out[j], want);
        len = j + 1;
    }
    for (int j = len; j < len + 3 && j < MAXBUF; j++)
        if (out[j] != 0)
            OT_FAIL("iter %d comm %d (%s): element %d past the output written (%g)", it, c,
                    u_names[kind - U_BCAST], j, out[j]);
}

/* out[] starts at 0: every element not received stays 0 */
static void mix_check(int c, int it, int count, const float *out, const mix_t *x)
{
    const int kind = mix_kind(c);
    if (kind >= U_BCAST) {
        uniform_check(kind, c, it, out, x);
        return;
    }
    if (kind == MIX_SCAN) {
        /* ranks of comm in comm order: their world ranks are not needed, only the sum
         * of (world rank + 1) over comm ranks 0..me, exchanged here */
        long mine = ot_rank + 1, pre = 0;
        OT_MPI(MPI_Scan(&mine, &pre, 1, MPI_LONG, MPI_SUM, comms[c]));
        for (int i = 0; i < count; i++) {
            const float want = (float)((c + 1) * pre + (x->me + 1) * (i % 7));
            if (out[i] != want)
                OT_FAIL("iter %d comm %d scan element %d: got %g want %g", it, c, i, out[i], want);
        }
        return;
    }
    if (kind == MIX_ALLREDUCE) {
        for (int i = 0; i < count; i++) {
            const float want = (float)((c + 1) * sum_wr1[c] + nmember[c] * (i % 7));
            if (out[i] != want)
                OT_FAIL("iter %d comm %d element %d: got %g want %g", it, c, i, out[i], want);
        }
        return;
    }
    for (int p = 0; p < x->n; p++) {
        if (kind == MIX_SCATTERV && p != x->root)
            continue;
        const int gap_end = x->rd[p] + x->rc[p] + 3;
        for (int i = 0; i < x->rc[p]; i++) {
            const float want =
                mix_val(p, kind == MIX_ALLGATHERV || kind == MIX_GATHERV ? 0 : x->me, i, c, it);
            if (out[x->rd[p] + i] != want)
                OT_FAIL("iter %d comm %d (%s) block of rank %d element %d: got %g want %g", it, c,
                        kind == MIX_GATHERV     ? "gatherv"
                        : kind == MIX_ALLTOALLV ? "alltoallv"
                        : kind == MIX_SCATTERV  ? "scatterv"
                                                : "allgatherv",
                        p, i, out[x->rd[p] + i], want);
        }
        for (int i = x->rd[p] + x->rc[p]; i < gap_end && i < MAXBUF; i++)
            if (out[i] != 0)
                OT_FAIL("iter %d comm %d: gap element %d written (%g)", it, c, i, out[i]);
    }
}

typedef struct {
    int t;
    float *in[64], *out[64]; /* per communicator, host copies the test fills and checks */
    void *din[64], *dout[64];
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    int mine[64], n = 0;
    MPI_Request q[64];
    for (int c = w->t; c < ncomms; c += nthreads)
        if (comms[c] != MPI_COMM_NULL)
            mine[n++] = c;
    for (int it = 0; it < iters; it++) {
        const int count = counts[it % 4];
        const bool blocking = blocking_too && it % 2 == 1;
        /* this rank's permutation of its communicators: a seeded shuffle whose first
         * one depends on the rank, so ranks start on different ones. Blocking calls go
         * in one order everywhere (a thread blocked on one can't reach the next): the
         * chaos is then between the threads */
        int order[64];
        for (int k = 0; k < n; k++)
            order[k] = mine[k];
        for (int k = n - 1; k > 0 && !blocking; k--) {
            int j = (int)(ot_hash((uint64_t)it, (uint64_t)ot_rank * 64 + (uint64_t)w->t, (uint64_t)k) %
                          (uint64_t)(k + 1));
            int tmp = order[k];
            order[k] = order[j];
            order[j] = tmp;
        }
        if (n > 1 && !blocking) {
            int first = (it + ot_rank) % n, tmp = order[0];
            for (int k = 0; k < n; k++)
                if (order[k] == mine[first]) {
                    order[0] = order[k];
                    order[k] = tmp;
                    break;
                }
        }
        mix_t mx[64];
        for (int k = 0; k < n; k++) {
            const int c = order[k];
            if (mix)
                mix_prepare(c, it, count, comms[c], w->in[c], &mx[c]);
            else
                for (int i = 0; i < count; i++)
                    w->in[c][i] = (float)((ot_rank + 1) * (c + 1) + i % 7);
            void *sb = w->in[c], *rb = w->out[c];
#ifdef OT_DEVICE
            CU(cudaMemcpy(w->din[c], w->in[c], sizeof(float) * (size_t)(mix ? mx[c].stotal : count),
                          cudaMemcpyHostToDevice));
            CU(cudaMemset(w->dout[c], 0, sizeof(float) * MAXBUF));
            CU(cudaStreamSynchronize(0)); /* landed before the collective reads it */
            sb = w->din[c];
            rb = w->dout[c];
#else
            memset(w->out[c], 0, sizeof(float) * MAXBUF);
#endif
            q[k] = MPI_REQUEST_NULL;
            if (mix)
                mix_post(c, count, comms[c], sb, rb, &mx[c], &q[k]);
            else if (blocking)
                OT_MPI(MPI_Allreduce(sb, rb, count, MPI_FLOAT, MPI_SUM, comms[c]));
            else
                OT_MPI(MPI_Iallreduce(sb, rb, count, MPI_FLOAT, MPI_SUM, comms[c], &q[k]));
        }
        if (!blocking || mix)
            ot_waitall_deadline(n, q, deadline);
        for (int k = 0; k < n; k++) {
            const int c = mine[k];
#ifdef OT_DEVICE
            CU(cudaMemcpy(w->out[c], w->dout[c], sizeof(float) * MAXBUF, cudaMemcpyDeviceToHost));
#endif
            if (mix) {
                mix_check(c, it, count, w->out[c], &mx[c]);
                continue;
            }
            for (int i = 0; i < count; i++) {
                float want = (float)((c + 1) * sum_wr1[c] + nmember[c] * (i % 7));
                if (w->out[c][i] != want)
                    OT_FAIL("iter %d comm %d element %d: got %g want %g", it, c, i, w->out[c][i], want);
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *level = ot_opt(argc, argv, "--thread", "");
    if (*level) {
        int want = !strcmp(level, "multiple")     ? MPI_THREAD_MULTIPLE
                   : !strcmp(level, "serialized") ? MPI_THREAD_SERIALIZED
                   : !strcmp(level, "funneled")   ? MPI_THREAD_FUNNELED
                                                  : MPI_THREAD_SINGLE;
        int got = 0;
        MPI_Init_thread(&argc, &argv, want, &got);
        MPI_Comm_rank(MPI_COMM_WORLD, &ot_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &ot_size);
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (got < want)
            OT_FAIL("MPI_Init_thread(%s) gave level %d", level, got);
    } else {
        ot_init(&argc, &argv);
    }
    ncomms = atoi(ot_opt(argc, argv, "--ncomms", "8"));
    iters = atoi(ot_opt(argc, argv, "--iters", "20"));
    deadline = atof(ot_opt(argc, argv, "--deadline", "20"));
    nthreads = atoi(ot_opt(argc, argv, "--threads", "1"));
    const char *kind = ot_opt(argc, argv, "--kind", "dup");
    kind_split = !strcmp(kind, "split");
    kind_group = !strcmp(kind, "group");
    blocking_too = ot_flag(argc, argv, "--blocking");
    uniform = ot_flag(argc, argv, "--uniform");
    mix = ot_flag(argc, argv, "--mix") || uniform;
    if (mix && (blocking_too || nthreads > 1))
        OT_FAIL("--mix and --uniform go without --blocking and --threads");
    if (ncomms < 1 || ncomms > 64 || nthreads < 1 || nthreads > ncomms)
        OT_FAIL("--ncomms 1..64 and --threads 1..ncomms");
    if (nthreads > 1 && strcmp(level, "multiple"))
        OT_FAIL("--threads needs --thread multiple");

    comms = malloc(sizeof(MPI_Comm) * (size_t)ncomms);
    nmember = malloc(sizeof(int) * (size_t)ncomms);
    sum_wr1 = malloc(sizeof(long) * (size_t)ncomms);
    make_comms();

    worker_t *w = calloc((size_t)nthreads, sizeof(worker_t));
    pthread_t *th = malloc(sizeof(pthread_t) * (size_t)nthreads);
    for (int t = 0; t < nthreads; t++) {
        w[t].t = t;
        for (int c = t; c < ncomms; c += nthreads) {
            w[t].in[c] = malloc(sizeof(float) * MAXBUF);
            w[t].out[c] = ot_alloc(sizeof(float) * MAXBUF);
#ifdef OT_DEVICE
            CU(cudaMalloc(&w[t].din[c], sizeof(float) * MAXBUF));
            CU(cudaMalloc(&w[t].dout[c], sizeof(float) * MAXBUF));
#endif
        }
    }
    if (nthreads == 1) {
        worker(&w[0]);
    } else {
        for (int t = 0; t < nthreads; t++)
            if (pthread_create(&th[t], NULL, worker, &w[t]))
                OT_FAIL("pthread_create");
        for (int t = 0; t < nthreads; t++)
            pthread_join(th[t], NULL);
    }
    for (int t = 0; t < nthreads; t++)
        for (int c = t; c < ncomms; c += nthreads) {
            ot_check_guard("chaos", w[t].out[c], sizeof(float) * MAXBUF);
            free(w[t].in[c]);
            free(w[t].out[c]);
#ifdef OT_DEVICE
            CU(cudaFree(w[t].din[c]));
            CU(cudaFree(w[t].dout[c]));
#endif
        }
    for (int c = 0; c < ncomms; c++)
        if (comms[c] != MPI_COMM_NULL)
            OT_MPI(MPI_Comm_free(&comms[c]));
    MPI_Barrier(MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf("OK t_chaos: %d iterations x %d %s communicators on %d ranks, %d thread(s)%s%s, every rank in "
               "its own order from the first call%s\n",
               iters, ncomms, kind, ot_size, nthreads, *level ? " at level " : "", level,
               uniform ? " (bcast, reduce, allgather, reduce_scatter_block, alltoall, gather, scatter)"
               : mix   ? " (gatherv, alltoallv, allgatherv, scatterv, scan)"
                       : "");
    free(w), free(th), free(comms), free(nmember), free(sum_wr1);
    MPI_Finalize();
    return 0;
}
