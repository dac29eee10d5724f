/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU tests through the native API on device buffers (N ranks under MPS on one GPU, or
 * one rank per GPU). Modes:
 *   matrix   every collective x type x op x size (0, 1, 7, 1000, 65537, 5003, 1M for a subset),
 *            in place, root != 0, against the host reference, element by element
 *   chaos    8 communicators, per-rank submission order, device buffers  [--deadline S]
 *            (--ll-sizes: counts of LL rounds split over the channels only)
 *   sync     rank 0 posts a collective, then cudaDeviceSynchronize, then tells rank 1,
 *            which posts only then                                      [--deadline S]
 *   deplete  more collectives in flight than slots x channels, random interleaving
 *   comms    100 communicators alive at once (--comms N), each used with device buffers
 *            in a per-rank order, checked; device memory per communicator reported
 *   reuse    the same buffers, rewritten from the host before every allreduce (in place
 *            and not, LL, one-shot and ring sizes), within one daemon launch: a read
 *            served from an SM's L1 left over from the previous round would show
 *   readreuse alltoall and allgather on rewritten, cycled, reallocated and pool buffers
 *            (with DFCCL_READ_MIN=1: the zero-copy read's staged first calls, mapped
 *            later ones, re-exports and never-exported buffers), checked
 *   left     after a checked allreduce, rank 0 waits on a second one that the other ranks
 *            never call: they destroy the communicator. The wait ends with
 *            dfcclCommAborted naming a peer that left, within 10 s; the next call is
 *            refused; the other communicator still works
 * Exits 77 (skip) without a GPU; 3 when a --deadline watchdog fires. */
#include <cuda_runtime.h>
#include <signal.h>
#include <unistd.h>

#include "../mpi/test_common.h"
#include "../tc_cuda.h" /* tc_cuda_pick */
#include "dfccl_mpi.h"

#define CU(call)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess)                                                                               \
            TC_FAIL("%s: %s", #call, cudaGetErrorString(e_));                                                \
    } while (0)

static double deadline_s = 0;

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "HANG: the watchdog fired (no progress before the deadline)\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(3);
}

/* Device twins of a host case's buffers; host pointers map to the same offsets. */
typedef struct {
    void *dsend, *drecv; /* data start: same misalignment as the host buffers */
    void *send_base, *recv_base;
    size_t send_bytes, recv_bytes;
} dev_case_t;

static void *to_dev(const tc_case_t *c, const dev_case_t *d, const void *p)
{
    if (!p)
        return NULL;
    if (c->send && (const char *)p >= (const char *)c->send &&
        (const char *)p < (const char *)c->send + d->send_bytes + 1)
        return (char *)d->dsend + ((const char *)p - (const char *)c->send);
    return (char *)d->drecv + ((const char *)p - (const char *)c->recv);
}

static void dev_setup(tc_case_t *c, dev_case_t *d)
{
    const size_t off = tc_case_offset(c);
    memset(d, 0, sizeof *d);
    d->send_bytes = c->send ? c->send_bytes : 0;
    d->recv_bytes = c->recv ? c->recv_bytes : 0;
    if (c->send) {
        CU(cudaMalloc(&d->send_base, d->send_bytes + off + 16));
        d->dsend = (char *)d->send_base + off;
        CU(cudaMemcpy(d->dsend, c->send, d->send_bytes, cudaMemcpyHostToDevice));
    }
    if (c->recv) {
        CU(cudaMalloc(&d->recv_base, d->recv_bytes + off + 16));
        d->drecv = (char *)d->recv_base + off;
        CU(cudaMemcpy(d->drecv, c->recv, d->recv_bytes, cudaMemcpyHostToDevice));
    }
    c->sendp = to_dev(c, d, c->sendp);
    c->recvp = to_dev(c, d, c->recvp);
    /* a cudaMemcpy from pageable memory may return before its DMA lands: the buffers
     * must be complete when the collective is submitted (dfccl.h) */
    CU(cudaStreamSynchronize(0));
}

static void dev_finish(tc_case_t *c, dev_case_t *d)
{
    if (c->send)
        CU(cudaMemcpy(c->send, d->dsend, d->send_bytes, cudaMemcpyDeviceToHost));
    if (c->recv)
        CU(cudaMemcpy(c->recv, d->drecv, d->recv_bytes, cudaMemcpyDeviceToHost));
    /* checks read sendp/recvp as host pointers again */
    if (c->sendp)
        c->sendp = c->send && (char *)c->sendp >= (char *)d->dsend &&
                           (char *)c->sendp <= (char *)d->dsend + d->send_bytes
                       ? (char *)c->send + ((char *)c->sendp - (char *)d->dsend)
                       : (char *)c->recv + ((char *)c->sendp - (char *)d->drecv);
    if (c->recvp)
        c->recvp = c->recv && (char *)c->recvp >= (char *)d->drecv &&
                           (char *)c->recvp <= (char *)d->drecv + d->recv_bytes
                       ? (char *)c->recv + ((char *)c->recvp - (char *)d->drecv)
                       : (char *)c->send + ((char *)c->recvp - (char *)d->dsend);
    cudaFree(d->send_base);
    cudaFree(d->recv_base);
}

static void wait_or_hang(dfcclRequest_t *reqs, int n)
{
    double t0 = MPI_Wtime();
    for (;;) {
        int all = 1;
        for (int i = 0; i < n; i++) {
            int done = 0;
            dfcclResult_t r = dfcclTest(&reqs[i], &done);
            if (r != dfcclSuccess)
                TC_FAIL("request %d failed: %s (%s)", i, dfcclGetErrorString(r), dfcclGetLastError());
            all &= done;
        }
        if (all)
            return;
        if (deadline_s > 0 && MPI_Wtime() - t0 > deadline_s) {
            fprintf(stderr, "HANG: rank %d not complete after %.0f s\n", tc_rank, deadline_s);
            _exit(3);
        }
    }
}

static size_t run_case(tc_case_t *c)
{
    dev_case_t d;
    tc_case_setup(c);
    dev_setup(c, &d);
    tc_case_submit(c);
    CHECK(dfcclWait(&c->req));
    dev_finish(c, &d);
    size_t bad = tc_case_check(c);
    tc_case_free(c);
    return bad;
}

/* --small: a subset for compute-sanitizer (every collective, three types, two ops,
 * four sizes, misaligned pointers included; 5003: LL rounds split over the channels
 * where DFCCL_LL_WIDE_MAX is set) */
static int small_run;

static int small_skip(dfcclDataType_t t, dfcclRedOp_t op, size_t si)
{
    if (!small_run)
        return 0;
    return !(t == dfcclFloat32 || t == dfcclFloat16 || t == dfcclInt8) ||
           !(op == TC_COPY || op == dfcclSum || op == dfcclMax) ||
           !(si == 1 || si == 3 || si == 4 || si == 5);
}

static int mode_matrix(dfcclComm_t comm, int P, int me)
{
    /* 1000 and 5003: LL rounds split over 2-20 channels, by the type's size */
    static const size_t sizes[] = {0, 1, 7, 1000, 65537, 5003};
    size_t bad = 0, ncases = 0;
    for (int coll = 0; coll < TC_NCOLL; coll++)
        for (int ti = 0; ti < TC_NTYPES; ti++)
            for (int oi = 0; oi < (tc_coll_has_op((tc_coll_t)coll) ? TC_NOPS : 1); oi++) {
                dfcclDataType_t t = tc_all_types[ti];
                dfcclRedOp_t op = tc_coll_has_op((tc_coll_t)coll) ? tc_all_ops[oi] : TC_COPY;
                if (op != TC_COPY && !tc_op_valid(t, op))
                    continue;
                for (size_t si = 0; si < sizeof sizes / sizeof sizes[0] + 1; si++) {
                    size_t n = si < sizeof sizes / sizeof sizes[0] ? sizes[si] : (size_t)1 << 20;
                    /* the large size for a subset, to keep the matrix short */
                    if (n == (size_t)1 << 20 &&
                        !(t == dfcclFloat32 || (t == dfcclBfloat16 && op == dfcclSum) ||
                          (t == dfcclInt32 && op == dfcclMax)))
                        continue;
                    if (small_skip(t, op, si))
                        continue;
                    for (int inplace = 0; inplace <= (tc_coll_has_inplace((tc_coll_t)coll) ? 1 : 0);
                         inplace++) {
                        tc_case_t c;
                        memset(&c, 0, sizeof c);
                        c.coll = (tc_coll_t)coll;
                        c.t = t;
                        c.op = op;
                        c.count = coll == TC_BARRIER ? 0 : n;
                        c.inplace = inplace;
                        c.root = tc_coll_has_root((tc_coll_t)coll) ? (int)(si % (size_t)P) : 0;
                        c.misalign = si == 2 || si == 4; /* unaligned device pointers too */
                        c.seed = 1000 + coll * 100 + ti * 10 + oi + si;
                        c.comm = comm;
                        c.P = P;
                        c.me = me;
                        bad += run_case(&c);
                        ncases++;
                        if (coll == TC_BARRIER)
                            goto next_coll;
                    }
                }
            }
next_coll:
    if (me == 0)
        printf("t_gpu matrix: %zu cases on device buffers, np=%d, %zu bad elements\n", ncases, P, bad);
    return bad != 0;
}

/* rank's input for salt into the n floats at d (the sum over ranks: dev_check_sum) */
static void dev_write_float(void *d, size_t n, int rank, int salt)
{
    float *h = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        h[i] = (float)((rank * 31 + salt * 7 + (int)(i % 97)) % 19);
    CU(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    CU(cudaStreamSynchronize(0)); /* the data is complete before any submission */
    free(h);
}

static void *dev_fill_float(size_t n, int rank, int salt)
{
    void *d;
    CU(cudaMalloc(&d, n * sizeof(float)));
    dev_write_float(d, n, rank, salt);
    return d;
}

static size_t dev_check_sum(const void *d, size_t n, int P, int salt, const char *what)
{
    float *h = malloc(n * sizeof(float));
    CU(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < P; r++)
            want += (float)((r * 31 + salt * 7 + (int)(i % 97)) % 19);
        if (h[i] != want) {
            if (bad < 5)
                fprintf(stderr, "rank %d %s [%zu]: got %g want %g\n", tc_rank, what, i, h[i], want);
            bad++;
        }
    }
    free(h);
    return bad;
}

static int ll_sizes; /* --ll-sizes: chaos of LL rounds split over the channels only */

static int mode_chaos(int P, int me, int iters)
{
    static const size_t chaos_counts[8] = {256, 147456, 2048, 1024, 65536, 147456, 524288, 1048576};
    /* 4.1-64 KB: with DFCCL_LL_WIDE_MAX=65536 every one an LL round split over the channels */
    static const size_t ll_counts[8] = {1025, 1100, 2048, 3000, 4000, 6000, 9000, 16000};
    const size_t *counts = ll_sizes ? ll_counts : chaos_counts;
    MPI_Comm mc[8];
    dfcclComm_t dc[8];
    void *in[8], *out[8];
    for (int i = 0; i < 8; i++) {
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mc[i]));
        CHECK(dfcclCommInitMPI(&dc[i], mc[i]));
        in[i] = dev_fill_float(counts[i], me, i);
        CU(cudaMalloc(&out[i], counts[i] * sizeof(float)));
    }
    tc_rng_t g;
    size_t bad = 0;
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        int order[8];
        for (int i = 0; i < 8; i++)
            order[i] = i;
        tc_rng_seed(&g, (uint64_t)(me * 1000 + it));
        tc_shuffle_int(&g, order, 8);
        dfcclRequest_t req[8];
        for (int k = 0; k < 8; k++) {
            int i = order[k];
            CHECK(dfcclAllReduce(in[i], out[i], counts[i], dfcclFloat32, dfcclSum, dc[i], &req[k]));
        }
        wait_or_hang(req, 8);
        for (int i = 0; i < 8; i++)
            bad += dev_check_sum(out[i], counts[i], P, i, "chaos");
    }
    double dt = MPI_Wtime() - t0;
    for (int i = 0; i < 8; i++) {
        dfcclStats_t s;
        CHECK(dfcclCommGetStats(dc[i], &s));
        if (me == 0)
            printf("t_gpu chaos: comm#%d count=%zu completed=%llu preemptions=%llu device_bytes=%llu\n", i,
                   counts[i], (unsigned long long)s.completed, (unsigned long long)s.preemptions,
                   (unsigned long long)s.device_bytes);
        CHECK(dfcclCommDestroy(dc[i]));
        MPI_Comm_free(&mc[i]);
        cudaFree(in[i]);
        cudaFree(out[i]);
    }
    if (me == 0)
        printf("t_gpu chaos: %d iterations x 8 communicators in %.2f s, np=%d, %zu bad\n", iters, dt, P, bad);
    return bad != 0;
}

static int mode_sync(dfcclComm_t comm, int P, int me)
{
    const size_t n = 1 << 16;
    void *in = dev_fill_float(n, me, 3), *out;
    CU(cudaMalloc(&out, n * sizeof(float)));
    dfcclRequest_t req;
    int token = 0;
    if (deadline_s > 0) {
        signal(SIGALRM, on_alarm);
        alarm((unsigned)deadline_s);
    }
    if (me == 0) {
        CHECK(dfcclAllReduce(in, out, n, dfcclFloat32, dfcclSum, comm, &req));
        /* the collective waits for rank 1, which waits for this message, which comes
         * after the synchronize: only a daemon that quits while stalled lets it return */
        CU(cudaDeviceSynchronize());
        for (int r = 1; r < P; r++)
            MPI_CHECK(MPI_Send(&token, 1, MPI_INT, r, 7, MPI_COMM_WORLD));
    } else {
        MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(dfcclAllReduce(in, out, n, dfcclFloat32, dfcclSum, comm, &req));
    }
    CHECK(dfcclWait(&req));
    alarm(0);
    size_t bad = dev_check_sum(out, n, P, 3, "sync");
    if (me == 0)
        printf("t_gpu sync: cudaDeviceSynchronize returned with a collective pending; completed, %zu bad\n",
               bad);
    cudaFree(in);
    cudaFree(out);
    return bad != 0;
}

static int mode_deplete(int P, int me)
{
    /* 4 communicators x 24 allreduces = 96 in flight, far more than slots x channels */
    enum { NC = 4, PER = 24 };
    MPI_Comm mc[NC];
    dfcclComm_t dc[NC];
    void *in[NC][PER], *out[NC][PER];
    for (int c = 0; c < NC; c++) {
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mc[c]));
        CHECK(dfcclCommInitMPI(&dc[c], mc[c]));
        for (int k = 0; k < PER; k++) {
            in[c][k] = dev_fill_float(4096 + (size_t)k * 1000, me, c * PER + k);
            CU(cudaMalloc(&out[c][k], (4096 + (size_t)k * 1000) * sizeof(float)));
        }
    }
    /* random interleaving across communicators, in order within each */
    int next[NC] = {0};
    dfcclRequest_t req[NC * PER];
    tc_rng_t g;
    tc_rng_seed(&g, (uint64_t)me * 77 + 1);
    for (int k = 0; k < NC * PER; k++) {
        int c;
        do
            c = (int)tc_rng_below(&g, NC);
        while (next[c] == PER);
        int j = next[c]++;
        CHECK(dfcclAllReduce(in[c][j], out[c][j], 4096 + (size_t)j * 1000, dfcclFloat32, dfcclSum, dc[c],
                             &req[k]));
    }
    wait_or_hang(req, NC * PER);
    size_t bad = 0;
    for (int c = 0; c < NC; c++) {
        for (int k = 0; k < PER; k++) {
            bad += dev_check_sum(out[c][k], 4096 + (size_t)k * 1000, P, c * PER + k, "deplete");
            cudaFree(in[c][k]);
            cudaFree(out[c][k]);
        }
        CHECK(dfcclCommDestroy(dc[c]));
        MPI_Comm_free(&mc[c]);
    }
    if (me == 0)
        printf("t_gpu deplete: %d collectives in flight on %d communicators completed, %zu bad\n", NC * PER,
               NC, bad);
    return bad != 0;
}

/* The daemon kernel outlives every collective, so its SMs' L1 may hold lines of a user
 * buffer from the previous round; each round the host rewrites the buffer with new
 * values (the stream synchronized, as the API asks) and the result must be this round's. */
static int mode_reuse(dfcclComm_t comm, int P, int me)
{
    static const size_t sizes[] = {1, 7, 1000, 2048, 6000, 70000};
    const size_t nmax = 70000;
    void *d, *o;
    CU(cudaMalloc(&d, nmax * sizeof(float)));
    CU(cudaMalloc(&o, nmax * sizeof(float)));
    size_t bad = 0, checks = 0;
    for (int round = 0; round < 120; round++) {
        const size_t n = sizes[round % 6];
        const int in_place = (round / 6) % 2;
        dev_write_float(d, n, me, round);
        dfcclRequest_t req;
        CHECK(dfcclAllReduce(d, in_place ? d : o, n, dfcclFloat32, dfcclSum, comm, &req));
        CHECK(dfcclWait(&req));
        char what[64];
        snprintf(what, sizeof(what), "reuse round %d (%zu floats%s)", round, n, in_place ? ", in place" : "");
        bad += dev_check_sum(in_place ? d : o, n, P, round, what);
        checks += n;
    }
    size_t all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf(
            "t_gpu reuse: 120 rounds on rewritten buffers, np=%d, %zu elements checked per rank, %zu bad\n",
            P, checks, all);
    cudaFree(d);
    cudaFree(o);
    return all != 0;
}

/* The zero-copy read (run with DFCCL_READ_MIN=1): alltoall and allgather, each round on
 * rewritten buffers, so that the first call on a buffer is staged while the peers map it
 * and the later ones read the mapping. Buffers cycle through more than the export slots
 * (re-exports into reused slots), one pair is freed and allocated again every few rounds
 * (a new allocation, maybe at the same address: never the old mapping), one comes from a
 * cudaMallocAsync pool (not exportable: always staged), and every other round of
 * allgather is in place. Every element is checked. */
static float rv(int r, size_t i, int round)
{
    return (float)(((size_t)r * 1000003u + i * 7u + (size_t)round * 13u) % 65521u);
}

#define RR_BUFS 11 /* more than ENG_READ_SLOTS */
static int mode_readreuse(dfcclComm_t comm, int P, int me)
{
    static const size_t sizes[] = {1, 7, 1000, 65537, 262144};
    const size_t nmax = 262144, bytes = nmax * (size_t)P * sizeof(float);
    void *sb[RR_BUFS], *rb[RR_BUFS];
    cudaStream_t st;
    CU(cudaStreamCreate(&st));
    for (int b = 0; b < RR_BUFS; b++) {
        if (b == RR_BUFS - 1)
            CU(cudaMallocAsync(&sb[b], bytes, st)); /* a pool's: cannot be exported */
        else
            CU(cudaMalloc(&sb[b], bytes));
        CU(cudaMalloc(&rb[b], bytes));
    }
    CU(cudaStreamSynchronize(st));
    float *h = (float *)malloc(bytes), *g = (float *)malloc(bytes);
    size_t bad = 0, checks = 0;
    for (int round = 0; round < 150; round++) {
        const size_t n = sizes[round % 5];
        const int b = (round / 5) % RR_BUFS, a2a = (round / 2) % 2, in_place = !a2a && (round / 10) % 2;
        if (round % 37 == 36) { /* a new allocation for buffer 0 (the driver may hand out the same address) */
            CU(cudaFree(sb[0]));
            CU(cudaMalloc(&sb[0], bytes));
        }
        const size_t nsend = a2a ? n * (size_t)P : n;
        for (size_t i = 0; i < nsend; i++)
            h[i] = rv(me, i, round);
        float *send = in_place ? (float *)rb[b] + (size_t)me * n : (float *)sb[b];
        CU(cudaMemcpy(send, h, nsend * sizeof(float), cudaMemcpyHostToDevice));
        /* from pageable memory the copy may return before it lands; dfccl makes it
         * synchronous with SYNC_MEMOPS, which a pool's allocation does not take: there the
         * application synchronizes, as any CUDA-aware MPI asks (docs/usage.md) */
        if (b == RR_BUFS - 1 && !in_place)
            CU(cudaStreamSynchronize(NULL));
        dfcclRequest_t req;
        if (a2a)
            CHECK(dfcclAllToAll(send, rb[b], n, dfcclFloat32, comm, &req));
        else
            CHECK(dfcclAllGather(send, rb[b], n, dfcclFloat32, comm, &req));
        CHECK(dfcclWait(&req));
        CU(cudaMemcpy(g, rb[b], n * (size_t)P * sizeof(float), cudaMemcpyDeviceToHost));
        for (int p = 0; p < P; p++)
            for (size_t i = 0; i < n; i++) {
                const float want = rv(p, a2a ? (size_t)me * n + i : i, round);
                if (g[(size_t)p * n + i] != want && bad++ < 10)
                    fprintf(stderr,
                            "[rank %d] readreuse round %d (%s of %zu, buffer %d%s): [%d][%zu] %g != %g\n", me,
                            round, a2a ? "alltoall" : "allgather", n, b, in_place ? ", in place" : "", p, i,
                            (double)g[(size_t)p * n + i], (double)want);
            }
        checks += n * (size_t)P;
    }
    size_t all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("t_gpu readreuse: 150 rounds of alltoall and allgather, np=%d, %zu elements checked per rank, "
               "%zu bad\n",
               P, checks, all);
    for (int b = 0; b < RR_BUFS; b++) {
        if (b == RR_BUFS - 1)
            CU(cudaFreeAsync(sb[b], st));
        else
            CU(cudaFree(sb[b]));
        CU(cudaFree(rb[b]));
    }
    CU(cudaStreamSynchronize(st));
    CU(cudaStreamDestroy(st));
    free(h);
    free(g);
    return all != 0;
}

static int ncomms = 100;

static int mode_comms(int P, int me)
{
    MPI_Comm *mc = calloc((size_t)ncomms, sizeof(MPI_Comm));
    dfcclComm_t *dc = calloc((size_t)ncomms, sizeof(dfcclComm_t));
    dfcclRequest_t *req = calloc((size_t)ncomms, sizeof(dfcclRequest_t));
    int *order = calloc((size_t)ncomms, sizeof(int));
    const size_t n = 4099; /* odd: the ring's last block is short */
    void *in = dev_fill_float(n, me, 5);
    void **out = calloc((size_t)ncomms, sizeof(void *));
    double t0 = MPI_Wtime();
    for (int i = 0; i < ncomms; i++) {
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mc[i]));
        CHECK(dfcclCommInitMPI(&dc[i], mc[i]));
        CU(cudaMalloc(&out[i], n * sizeof(float)));
        order[i] = i;
    }
    const double t_init = MPI_Wtime() - t0;
    size_t free_b = 0, total_b = 0;
    CU(cudaMemGetInfo(&free_b, &total_b));
    /* every communicator at once, each rank in its own order: preemption keeps it moving */
    tc_rng_t g;
    tc_rng_seed(&g, (uint64_t)me * 7919u + 1);
    tc_shuffle_int(&g, order, ncomms);
    for (int k = 0; k < ncomms; k++)
        CHECK(dfcclAllReduce(in, out[order[k]], n, dfcclFloat32, dfcclSum, dc[order[k]], &req[k]));
    wait_or_hang(req, ncomms);
    size_t bad = 0;
    for (int i = 0; i < ncomms; i++)
        bad += dev_check_sum(out[i], n, P, 5, "comms");
    dfcclStats_t s;
    CHECK(dfcclCommGetStats(dc[0], &s));
    for (int i = 0; i < ncomms; i++) {
        CHECK(dfcclCommDestroy(dc[i]));
        MPI_Comm_free(&mc[i]);
        cudaFree(out[i]);
    }
    size_t free_after = 0;
    CU(cudaMemGetInfo(&free_after, &total_b));
    if (me == 0)
        printf(
            "t_gpu comms: %d communicators alive at once, created in %.2f s, one allreduce each in per-rank "
            "order, np=%d, %zu bad; device memory per communicator %.1f MiB (stats); device memory free with "
            "all alive %.1f GiB, after destroy %.1f GiB\n",
            ncomms, t_init, P, bad, (double)s.device_bytes / 1048576.0, (double)free_b / 1073741824.0,
            (double)free_after / 1073741824.0);
    cudaFree(in);
    free(mc);
    free(dc);
    free(req);
    free(order);
    free(out);
    return bad != 0;
}

static int mode_left(dfcclComm_t other, int P, int me)
{
    if (P < 2)
        return 0;
    enum { n = 4099 };
    dfcclComm_t A;
    CHECK(dfcclCommInitMPI(&A, MPI_COMM_WORLD));
    float *h = tc_malloc(n * sizeof(float)), *d = NULL;
    CU(cudaMalloc((void **)&d, 2 * n * sizeof(float)));
    for (int i = 0; i < n; i++)
        h[i] = (float)(i % 13 + me);
    CU(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    dfcclRequest_t q = NULL;
    CHECK(dfcclAllReduce(d, d + n, n, dfcclFloat32, dfcclSum, A, &q));
    CHECK(dfcclWait(&q));
    CU(cudaMemcpy(h, d + n, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n && !bad; i++)
        if (h[i] != (float)(P * (i % 13) + P * (P - 1) / 2)) {
            fprintf(stderr, "[rank %d] left: element %d is %g, expected %d\n", me, i, h[i],
                    P * (i % 13) + P * (P - 1) / 2);
            bad = 1;
        }
    if (me == 0) {
        CHECK(dfcclAllReduce(d, d + n, n, dfcclFloat32, dfcclSum, A, &q));
        MPI_Barrier(MPI_COMM_WORLD); /* the others leave after this */
        MPI_Barrier(MPI_COMM_WORLD); /* ... and have left */
        const double t0 = MPI_Wtime();
        const dfcclResult_t rc = dfcclWait(&q);
        const double dt = MPI_Wtime() - t0;
        printf("t_gpu left: the wait returned %d after %.2f s: %s\n", (int)rc, dt, dfcclGetLastError());
        if (rc != dfcclCommAborted || !tc_lasterr_has("left the communicator") || dt > 10.0)
            bad = 1;
        const dfcclResult_t rc2 = dfcclAllReduce(d, d + n, n, dfcclFloat32, dfcclSum, A, &q);
        if (rc2 != dfcclCommAborted || !tc_lasterr_has("left the communicator")) {
            printf("t_gpu left: the next allreduce returned %d: %s\n", (int)rc2, dfcclGetLastError());
            bad = 1;
        }
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CHECK(dfcclCommDestroy(A));
    if (me != 0)
        MPI_Barrier(MPI_COMM_WORLD);
    CU(cudaFree(d));
    free(h);
    /* the other communicator never saw any of it */
    if (mode_reuse(other, P, me))
        bad = 1;
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    const char *mode = argc > 1 ? argv[1] : "matrix";
    int iters = 10;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--deadline") && i + 1 < argc)
            deadline_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--small"))
            small_run = 1;
        else if (!strcmp(argv[i], "--ll-sizes"))
            ll_sizes = 1;
        else if (!strcmp(argv[i], "--comms") && i + 1 < argc)
            ncomms = atoi(argv[++i]);
    }
    tc_cuda_pick(tc_rank, "SKIP: t_gpu needs a CUDA device", 77, NULL);
    /* the memory-kind query, on every kind of allocation, before any communicator */
    {
        void *d = NULL, *m = NULL, *h = NULL, *pg = malloc(64);
        CU(cudaMalloc(&d, 64));
        CU(cudaMallocManaged(&m, 64, cudaMemAttachGlobal));
        CU(cudaMallocHost(&h, 64));
        const struct {
            const void *p;
            dfcclMemKind_t want;
            const char *what;
        } k[] = {{d, dfcclMemDevice, "cudaMalloc"},
                 {(char *)d + 8, dfcclMemDevice, "inside a cudaMalloc"},
                 {m, dfcclMemManaged, "cudaMallocManaged"},
                 {h, dfcclMemHost, "cudaMallocHost"},
                 {pg, dfcclMemHost, "malloc"},
                 {NULL, dfcclMemHost, "NULL"}};
        for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
            dfcclMemKind_t got = (dfcclMemKind_t)-1;
            CHECK(dfcclPointerGetKind(k[i].p, &got));
            if (got != k[i].want)
                TC_FAIL("dfcclPointerGetKind(%s) = %d, expected %d", k[i].what, (int)got, (int)k[i].want);
        }
        CU(cudaFree(d));
        CU(cudaFree(m));
        CU(cudaFreeHost(h));
        free(pg);
    }
    dfcclComm_t comm;
    CHECK(dfcclCommInitMPI(&comm, MPI_COMM_WORLD));
    int fail = 0;
    if (!strcmp(mode, "matrix"))
        fail = mode_matrix(comm, tc_size, tc_rank);
    else if (!strcmp(mode, "chaos"))
        fail = mode_chaos(tc_size, tc_rank, iters);
    else if (!strcmp(mode, "sync"))
        fail = mode_sync(comm, tc_size, tc_rank);
    else if (!strcmp(mode, "deplete"))
        fail = mode_deplete(tc_size, tc_rank);
    else if (!strcmp(mode, "comms"))
        fail = mode_comms(tc_size, tc_rank);
    else if (!strcmp(mode, "reuse"))
        fail = mode_reuse(comm, tc_size, tc_rank);
    else if (!strcmp(mode, "readreuse"))
        fail = mode_readreuse(comm, tc_size, tc_rank);
    else if (!strcmp(mode, "left"))
        fail = mode_left(comm, tc_size, tc_rank);
    else
        TC_FAIL("unknown mode %s", mode);
    int any = 0;
    MPI_Allreduce(&fail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(dfcclCommDestroy(comm));
    if (tc_rank == 0)
        printf(any ? "FAILED\n" : "OK\n");
    MPI_Finalize();
    return any ? 1 : 0;
}
