/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_vcolls: the collectives moved block by block and the prefix reductions, through the
 * native API: dfcclGather, Gatherv, Scatter, Scatterv, AllGatherv, AllToAllv, AllToAllw,
 * ReduceScatterv, Scan, Exscan. Every receive buffer is compared byte by byte (scan and
 * reduce_scatterv: element by element)
 * against an image built here: blocks where they belong, a sentinel in every gap, so a
 * block written in the wrong place or not at all shows. Cases:
 *   - counts 0, 1, 7, 1000, 20011 elements per block, element sizes 1, 2, 4, 8;
 *   - v-counts uneven with zeros, displacements in reverse rank order with gaps;
 *   - one very uneven round: a 3 MiB block among 5-element ones (every channel moves it);
 *   - every root; in place wherever the call allows it;
 *   - alltoallw with a different type per pair of ranks;
 *   - scan and exscan for every type x valid op, folded in rank order;
 *   - reduce_scatterv for every type x valid op, uneven counts with zeros, in place and
 *     not (and with max, byte by byte, among the rounds and in the chaos order);
 *   - each round submitted at once (non-blocking, many in flight), then one by one;
 *   - argument errors: each names its argument and leaves the communicator usable.
 * --chaos ITERS: the chaos order instead. 8 communicators, on each one of the kinds
 * above (blocks of about --scale elements, larger than a FIFO holds, so senders stall),
 * every rank submitting them in its own permutation each iteration, then checking all.
 * With preemption this completes; with DFCCL_PREEMPT=0 it deadlocks, and --deadline S
 * reports "HANG" and exits 3 when an iteration is not done after S seconds.
 * Built with -DTV_DEVICE (t_vcolls_dev): every buffer is device memory (the GPU daemon).
 *
 * usage: t_vcolls [--quick] [--chaos ITERS [--scale N] [--deadline S]]
 */
#ifdef TV_DEVICE
#include <cuda_runtime.h>
#endif
#include <unistd.h>

#include "test_common.h"
#include "dfccl_mpi.h"
#ifdef TV_DEVICE
#include "../tc_cuda.h" /* tc_cuda_pick */
#endif

#define SENT 0xA5

static int P, me;
static dfcclComm_t comm;
static size_t nchecked;

/* ---- a buffer: the host image and the pointer the call gets (device twin or itself) */
typedef struct {
    unsigned char *h;
    char *d;
    size_t bytes;
} tbuf_t;

static tbuf_t tb_new(size_t bytes)
{
    tbuf_t b = {tc_malloc(bytes ? bytes : 1), NULL, bytes};
    memset(b.h, SENT, bytes);
#ifdef TV_DEVICE
    if (cudaMalloc((void **)&b.d, bytes ? bytes : 1) != cudaSuccess)
        TC_FAIL("cudaMalloc of %zu bytes failed", bytes);
#else
    b.d = (char *)b.h;
#endif
    return b;
}

static void tb_push(tbuf_t *b)
{
#ifdef TV_DEVICE
    /* from pageable memory the copy may return before its DMA lands: the data must be
     * in place before the collective is submitted (dfccl.h) */
    if (b->bytes && (cudaMemcpy(b->d, b->h, b->bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
                     cudaStreamSynchronize(0) != cudaSuccess))
        TC_FAIL("cudaMemcpy to the device failed");
#else
    (void)b;
#endif
}

static void tb_pull(tbuf_t *b)
{
#ifdef TV_DEVICE
    if (b->bytes && cudaMemcpy(b->h, b->d, b->bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        TC_FAIL("cudaMemcpy from the device failed");
#else
    (void)b;
#endif
}

static void tb_free(tbuf_t *b)
{
#ifdef TV_DEVICE
    cudaFree(b->d);
#endif
    free(b->h);
    b->h = NULL;
}

/* byte k of the data rank src sends to rank dst in case `salt` */
static unsigned char gen_byte(int src, int dst, uint64_t salt, size_t k)
{
    return (unsigned char)tc_mix(salt * 0x9E3779B97F4A7C15ull ^ ((uint64_t)src << 48) ^
                                 ((uint64_t)dst << 36) ^ k);
}

static void gen(unsigned char *p, int src, int dst, uint64_t salt, size_t bytes)
{
    for (size_t k = 0; k < bytes; k++)
        p[k] = gen_byte(src, dst, salt, k);
}

/* uneven counts with zeros; pattern picks the shape */
static size_t vcount(int a, int b, size_t scale, int pattern)
{
    if (pattern == 2) /* very uneven: one large block, the rest tiny */
        return a == 0 && b == P - 1 ? scale : 5;
    if ((a * 7 + b * 3 + pattern) % 4 == 0)
        return 0;
    return (size_t)((a * 13 + b * 5 + pattern) % 9 + 1) * scale / 5 + (size_t)((a + b) % 3);
}

/* displacements (elements) in reverse rank order with a gap after odd ranks; returns
 * the extent in bytes */
static size_t rev_displs(const size_t *cnt, size_t *displs, size_t unit)
{
    size_t off = 0;
    for (int p = P - 1; p >= 0; p--) {
        displs[p] = off;
        off += cnt[p] + (size_t)(p % 2) * 3;
    }
    return off * unit;
}

static void compare_bytes(const char *what, size_t ts, size_t scale, const unsigned char *got,
                          const unsigned char *exp, size_t bytes)
{
    for (size_t k = 0; k < bytes; k++)
        if (got[k] != exp[k])
            TC_FAIL("%s (element size %zu, scale %zu): byte %zu of %zu is 0x%02x, expected 0x%02x", what, ts,
                    scale, k, bytes, got[k], exp[k]);
    nchecked += bytes;
}

/* ---- one case: its buffers, arrays and expected receive image ---------------------- */
typedef enum {
    K_GATHER,
    K_GATHERV,
    K_SCATTER,
    K_SCATTERV,
    K_ALLGATHERV,
    K_ALLTOALLV,
    K_ALLTOALLW,
    K_REDUCE_SCATTERV, /* max: exact in any order, so compared byte by byte */
    K_NK
} kind_t;
static const char *const knames[K_NK] = {"gather",     "gatherv",   "scatter",   "scatterv",
                                         "allgatherv", "alltoallv", "alltoallw", "reduce_scatterv"};

typedef struct {
    kind_t k;
    dfcclDataType_t t;
    size_t ts, scale;
    int root, in_place, pattern;
    uint64_t salt;
    tbuf_t s, r;
    unsigned char *exp; /* expected image of r */
    size_t *sc, *sd, *rc, *rd, sendcount, recvcount;
    dfcclDataType_t st[64], rt[64];
    const void *sp;
    void *rp;
    dfcclComm_t comm; /* NULL: the world's */
    dfcclRequest_t req;
} vcase_t;

static const dfcclDataType_t wtypes[4] = {dfcclInt8, dfcclFloat16, dfcclInt32, dfcclFloat64};

static void vcase_setup(vcase_t *c)
{
    const size_t ts = c->ts, n = c->scale;
    const int R = c->root;
    c->sc = calloc((size_t)P, sizeof(size_t));
    c->sd = calloc((size_t)P, sizeof(size_t));
    c->rc = calloc((size_t)P, sizeof(size_t));
    c->rd = calloc((size_t)P, sizeof(size_t));
    size_t sbytes = 0, rbytes = 0;
    switch (c->k) {
    case K_GATHER:
    case K_SCATTER:
        for (int p = 0; p < P; p++) {
            c->sc[p] = c->rc[p] = n;
            c->sd[p] = c->rd[p] = (size_t)p * n;
        }
        sbytes = (c->k == K_SCATTER ? (size_t)P : 1) * n * ts;
        rbytes = (c->k == K_GATHER ? (size_t)P : 1) * n * ts;
        break;
    case K_GATHERV:
    case K_ALLGATHERV:
        for (int p = 0; p < P; p++)
            c->rc[p] = vcount(p, 0, n, c->pattern);
        c->sendcount = c->rc[me];
        rbytes = rev_displs(c->rc, c->rd, ts);
        sbytes = c->sendcount * ts;
        break;
    case K_SCATTERV:
        for (int p = 0; p < P; p++)
            c->sc[p] = vcount(0, p, n, c->pattern);
        c->recvcount = c->sc[me];
        sbytes = rev_displs(c->sc, c->sd, ts);
        rbytes = c->recvcount * ts;
        break;
    case K_ALLTOALLV:
        for (int p = 0; p < P; p++) {
            c->sc[p] = vcount(me, p, n, c->pattern);
            c->rc[p] = vcount(p, me, n, c->pattern);
        }
        sbytes = rev_displs(c->sc, c->sd, ts);
        rbytes = rev_displs(c->rc, c->rd, ts);
        break;
    case K_ALLTOALLW: {
        /* a type per pair; displacements in bytes */
        size_t so = 0, ro = 0;
        for (int p = P - 1; p >= 0; p--) {
            c->st[p] = wtypes[(me + p) % 4];
            c->rt[p] = wtypes[(p + me) % 4];
            c->sc[p] = vcount(me, p, n, c->pattern);
            c->rc[p] = vcount(p, me, n, c->pattern);
            c->sd[p] = so;
            c->rd[p] = ro;
            so += c->sc[p] * tc_type_size(c->st[p]) + 5;
            ro += c->rc[p] * tc_type_size(c->rt[p]) + 5;
        }
        sbytes = so;
        rbytes = ro;
        break;
    }
    case K_REDUCE_SCATTERV: /* rd: where block p starts in sendbuf (elements) */
        for (int p = 0; p < P; p++) {
            c->rc[p] = vcount(p, 0, n, c->pattern);
            c->rd[p] = p ? c->rd[p - 1] + c->rc[p - 1] : 0;
        }
        sbytes = (c->rd[P - 1] + c->rc[P - 1]) * ts;
        rbytes = c->rc[me] * ts;
        break;
    default: break;
    }
    const int sroot = c->k == K_SCATTER || c->k == K_SCATTERV, groot = c->k == K_GATHER || c->k == K_GATHERV;
    if (sroot && me != R)
        sbytes = 0;
    if (groot && me != R)
        rbytes = 0;
    c->s = tb_new(sbytes);
    c->r = tb_new(rbytes);
    c->exp = tc_malloc(rbytes ? rbytes : 1);
    memset(c->exp, SENT, rbytes);

    /* send side: what this rank sends to each peer (unit: bytes of the block) */
#define UNIT_S(p) (c->k == K_ALLTOALLW ? tc_type_size(c->st[p]) : c->ts)
#define UNIT_R(p) (c->k == K_ALLTOALLW ? tc_type_size(c->rt[p]) : c->ts)
#define OFF_S(p)  (c->k == K_ALLTOALLW ? c->sd[p] : c->sd[p] * c->ts)
#define OFF_R(p)  (c->k == K_ALLTOALLW ? c->rd[p] : c->rd[p] * c->ts)
    switch (c->k) {
    case K_GATHER:
    case K_GATHERV:
    case K_ALLGATHERV: {
        const size_t mine = (c->k == K_GATHER ? n : c->sendcount) * ts;
        gen(c->s.h, me, 0, c->salt, mine);
        if (c->k == K_ALLGATHERV || me == R)
            for (int p = 0; p < P; p++)
                gen(c->exp + OFF_R(p), p, 0, c->salt, c->rc[p] * ts);
        break;
    }
    case K_SCATTER:
    case K_SCATTERV:
        if (me == R)
            for (int p = 0; p < P; p++)
                gen(c->s.h + OFF_S(p), R, p, c->salt, c->sc[p] * ts);
        gen(c->exp, R, me, c->salt, (c->k == K_SCATTER ? n : c->recvcount) * ts);
        break;
    case K_REDUCE_SCATTERV:
        tc_fill(c->s.h, c->t, dfcclMax, c->salt, me, 0, sbytes / ts);
        tc_ref_reduce(c->exp, c->t, dfcclMax, c->salt, P, c->rd[me], c->rc[me]);
        break;
    default: /* all-to-all v / w */
        for (int p = 0; p < P; p++) {
            gen(c->s.h + OFF_S(p), me, p, c->salt, c->sc[p] * UNIT_S(p));
            gen(c->exp + OFF_R(p), p, me, c->salt, c->rc[p] * UNIT_R(p));
        }
        break;
    }
    c->sp = c->s.d;
    c->rp = c->r.d;
    if (c->in_place) {
        /* this rank's own block sits where it is received, and the call points there */
        switch (c->k) {
        case K_GATHER:
        case K_GATHERV:
            if (me == R) {
                gen(c->r.h + OFF_R(R), R, 0, c->salt, c->rc[R] * ts);
                c->sp = c->r.d + OFF_R(R);
            }
            break;
        case K_ALLGATHERV:
            gen(c->r.h + OFF_R(me), me, 0, c->salt, c->rc[me] * ts);
            c->sp = c->r.d + OFF_R(me);
            break;
        case K_SCATTER:
        case K_SCATTERV:
            if (me == R) {
                /* the root's block stays in sendbuf: nothing is received */
                c->rp = c->s.d + OFF_S(R);
                memset(c->exp, SENT, c->r.bytes);
            }
            break;
        default: break;
        }
    }
    tb_push(&c->s);
    tb_push(&c->r);
}

static void vcase_submit(vcase_t *c)
{
    const int R = c->root;
    dfcclComm_t cm = c->comm ? c->comm : comm;
    dfcclResult_t res;
    switch (c->k) {
    case K_GATHER: res = dfcclGather(c->sp, c->rp, c->scale, c->t, R, cm, &c->req); break;
    case K_GATHERV: res = dfcclGatherv(c->sp, c->sendcount, c->rp, c->rc, c->rd, c->t, R, cm, &c->req); break;
    case K_SCATTER: res = dfcclScatter(c->sp, c->rp, c->scale, c->t, R, cm, &c->req); break;
    case K_SCATTERV:
        res = dfcclScatterv(c->sp, c->sc, c->sd, c->rp, c->recvcount, c->t, R, cm, &c->req);
        break;
    case K_ALLGATHERV:
        res = dfcclAllGatherv(c->sp, c->sendcount, c->rp, c->rc, c->rd, c->t, cm, &c->req);
        break;
    case K_ALLTOALLV:
        res = dfcclAllToAllv(c->sp, c->sc, c->sd, c->rp, c->rc, c->rd, c->t, cm, &c->req);
        break;
    case K_REDUCE_SCATTERV:
        res = dfcclReduceScatterv(c->sp, c->rp, c->rc, c->t, dfcclMax, cm, &c->req);
        break;
    default: res = dfcclAllToAllw(c->sp, c->sc, c->sd, c->st, c->rp, c->rc, c->rd, c->rt, cm, &c->req); break;
    }
    if (res != dfcclSuccess)
        TC_FAIL("%s (element size %zu, scale %zu, root %d, in place %d) returned %s: %s", knames[c->k], c->ts,
                c->scale, c->root, c->in_place, dfcclGetErrorString(res), dfcclGetLastError());
    /* the arrays are read during the call: scribbling on them now must not matter */
    for (int p = 0; p < P; p++) {
        c->sc[p] ^= 0x5555;
        c->rd[p] ^= 0x3333;
    }
}

static void vcase_check(vcase_t *c)
{
    for (int p = 0; p < P; p++) {
        c->sc[p] ^= 0x5555;
        c->rd[p] ^= 0x3333;
    }
    tb_pull(&c->r);
    char what[96];
    snprintf(what, sizeof what, "%s root %d%s pattern %d", knames[c->k], c->root,
             c->in_place ? " in place" : "", c->pattern);
    compare_bytes(what, c->ts, c->scale, c->r.h, c->exp, c->r.bytes);
    if (c->in_place && (c->k == K_SCATTER || c->k == K_SCATTERV) && me == c->root) {
        /* the root's send buffer is untouched */
        tb_pull(&c->s);
        for (int p = 0; p < P; p++)
            for (size_t k = 0; k < c->sc[p] * c->ts; k++)
                if (c->s.h[OFF_S(p) + k] != gen_byte(c->root, p, c->salt, k))
                    TC_FAIL("%s: the root's sendbuf changed at block %d byte %zu", what, p, k);
    }
    tb_free(&c->s);
    tb_free(&c->r);
    free(c->exp);
    free(c->sc);
    free(c->sd);
    free(c->rc);
    free(c->rd);
}

/* A round: every case submitted at once (together = 1) or each waited in turn. */
static void run_round(vcase_t *cs, int n, int together)
{
    for (int i = 0; i < n; i++) {
        vcase_setup(&cs[i]);
        vcase_submit(&cs[i]);
        if (!together) {
            CHECK(dfcclWait(&cs[i].req));
            vcase_check(&cs[i]);
        }
    }
    if (together) {
        for (int i = 0; i < n; i++)
            CHECK(dfcclWait(&cs[i].req));
        for (int i = 0; i < n; i++)
            vcase_check(&cs[i]);
    }
}

/* ---- scan and exscan ---------------------------------------------------------------- */
static void scan_case(dfcclDataType_t t, dfcclRedOp_t op, size_t count, int ex, int in_place, uint64_t seed)
{
    const size_t ts = tc_type_size(t), bytes = count * ts;
    tbuf_t s = tb_new(bytes), r = tb_new(bytes);
    unsigned char *exp = tc_malloc(bytes ? bytes : 1);
    tc_fill(s.h, t, op, seed, me, 0, count);
    if (in_place)
        memcpy(r.h, s.h, bytes);
    if (ex && me == 0)
        memcpy(exp, r.h, bytes); /* rank 0's output is left as it was */
    else
        tc_ref_reduce(exp, t, op, seed, ex ? me : me + 1, 0, count);
    tb_push(&s);
    tb_push(&r);
    dfcclRequest_t req;
    const void *sp = in_place ? (const void *)r.d : (const void *)s.d;
    dfcclResult_t res =
        ex ? dfcclExscan(sp, r.d, count, t, op, comm, &req) : dfcclScan(sp, r.d, count, t, op, comm, &req);
    if (res != dfcclSuccess)
        TC_FAIL("%s returned %s: %s", ex ? "dfcclExscan" : "dfcclScan", dfcclGetErrorString(res),
                dfcclGetLastError());
    CHECK(dfcclWait(&req));
    tb_pull(&r);
    char extra[32];
    snprintf(extra, sizeof extra, "in_place=%d", in_place);
    if (ex && me == 0) {
        if (memcmp(r.h, exp, bytes))
            TC_FAIL("exscan changed rank 0's receive buffer");
    } else if (tc_compare(ex ? "exscan" : "scan", t, op, count, extra, r.h, exp, count)) {
        tc_abort();
    }
    nchecked += bytes;
    tb_free(&s);
    tb_free(&r);
    free(exp);
}

/* ---- reduce_scatterv ------------------------------------------------------------------ */
/* Uneven blocks (zeros among them; the same counts on every rank), every rank's input
 * reduced element by element against the reference; out of place the receive buffer's
 * guard past this rank's block stays untouched; in place the result lands in this rank's
 * block of the input. */
static void rsv_case(dfcclDataType_t t, dfcclRedOp_t op, size_t scale, int pattern, int in_place,
                     uint64_t seed)
{
    const size_t ts = tc_type_size(t), np = (size_t)P, guard = 64;
    size_t *rc = calloc(np, sizeof(size_t)), total = 0, at = 0;
    if (!rc)
        TC_FAIL("no memory");
    for (int p = 0; p < P; p++) {
        rc[p] = vcount(p, 0, scale, pattern);
        if (p < me)
            at += rc[p];
        total += rc[p];
    }
    const size_t mine = rc[me] * ts;
    tbuf_t s = tb_new(total * ts), r = tb_new(in_place ? 0 : mine + guard);
    unsigned char *exp = tc_malloc(mine ? mine : 1), *got = in_place ? s.h + at * ts : r.h;
    tc_fill(s.h, t, op, seed, me, 0, total);
    tc_ref_reduce(exp, t, op, seed, P, at, rc[me]);
    tb_push(&s);
    tb_push(&r);
    dfcclRequest_t req;
    char *rp = in_place ? s.d + at * ts : r.d;
    dfcclResult_t res = dfcclReduceScatterv(s.d, rp, rc, t, op, comm, &req);
    if (res != dfcclSuccess)
        TC_FAIL("dfcclReduceScatterv returned %s: %s", dfcclGetErrorString(res), dfcclGetLastError());
    CHECK(dfcclWait(&req));
    tb_pull(in_place ? &s : &r);
    char extra[64];
    snprintf(extra, sizeof extra, "in_place=%d pattern=%d scale=%zu", in_place, pattern, scale);
    if (tc_compare("reduce_scatterv", t, op, rc[me], extra, got, exp, rc[me]))
        tc_abort();
    for (size_t k = 0; !in_place && k < guard; k++)
        if (r.h[mine + k] != SENT)
            TC_FAIL("reduce_scatterv (%s): byte %zu past this rank's %zu-byte block was written", extra, k,
                    mine);
    nchecked += mine;
    tb_free(&s);
    tb_free(&r);
    free(exp);
    free(rc);
}

/* ---- argument errors: each names its argument, nothing is submitted ----------------- */
#define BADV(word, call)                                                                                     \
    do {                                                                                                     \
        dfcclRequest_t rq_ = (dfcclRequest_t)0x1;                                                            \
        dfcclResult_t r_ = (call);                                                                           \
        if (r_ != dfcclInvalidArgument || !strstr(dfcclGetLastError(), word) || rq_ != NULL)                 \
            TC_FAIL("%s: expected dfcclInvalidArgument naming '%s', got %d: %s", #call, word, (int)r_,       \
                    dfcclGetLastError());                                                                    \
    } while (0)

static void bad_input(void)
{
    size_t cnt[64] = {0}, dsp[64] = {0};
    dfcclDataType_t ty[64];
    int buf[256] = {0};
    for (int p = 0; p < P; p++) {
        cnt[p] = 1;
        dsp[p] = (size_t)p;
        ty[p] = dfcclInt32;
    }
    dfcclRequest_t rq_;
#define RQ (rq_ = (dfcclRequest_t)0x1, &rq_)
    (void)rq_;
    BADV("root", dfcclGatherv(buf, 1, buf + 64, cnt, dsp, dfcclInt32, P, comm, RQ));
    BADV("root", dfcclScatter(buf, buf + 64, 1, dfcclInt32, -1, comm, RQ));
    BADV("datatype", dfcclAllGatherv(buf, 1, buf + 64, cnt, dsp, (dfcclDataType_t)77, comm, RQ));
    BADV("recvcounts", dfcclAllGatherv(buf, 1, buf + 64, NULL, dsp, dfcclInt32, comm, RQ));
    BADV("sdispls", dfcclAllToAllv(buf, cnt, NULL, buf + 64, cnt, dsp, dfcclInt32, comm, RQ));
    BADV("overlap", dfcclAllToAllv(buf, cnt, dsp, buf + P / 2, cnt, dsp, dfcclInt32, comm, RQ));
    ty[P - 1] = (dfcclDataType_t)-3;
    BADV("sendtypes", dfcclAllToAllw(buf, cnt, dsp, ty, buf + 64, cnt, dsp, ty, comm, RQ));
    BADV("op", dfcclScan(buf, buf + 64, 4, dfcclFloat32, dfcclBand, comm, RQ));
    BADV("recvcounts", dfcclReduceScatterv(buf, buf + 64, NULL, dfcclInt32, dfcclSum, comm, RQ));
    BADV("op", dfcclReduceScatterv(buf, buf + 64, cnt, dfcclFloat32, dfcclBor, comm, RQ));
    BADV("op", dfcclReduceScatterv(buf, buf + 64, cnt, dfcclInt32, (dfcclRedOp_t)99, comm, RQ));
    BADV("datatype", dfcclReduceScatterv(buf, buf + 64, cnt, (dfcclDataType_t)77, dfcclSum, comm, RQ));
    BADV("overlaps", dfcclReduceScatterv(buf, (char *)buf + 2, cnt, dfcclInt32, dfcclSum, comm, RQ));
    BADV("overlap", dfcclScan(buf, buf + 1, 4, dfcclInt32, dfcclSum, comm, RQ));
    cnt[0] = SIZE_MAX / 2;
    BADV("too large", dfcclAllToAllv(buf, cnt, dsp, buf + 64, cnt, dsp, dfcclInt32, comm, RQ));
#undef RQ
}

/* A rank that moves nothing and passes NULL follows the daemon of its latest collective
 * with data (device buffers: the GPU daemon), not of a barrier in between: its peers run
 * the gatherv there, and a rank on the other daemon would put every later collective of
 * both daemons one slot out of step. */
static void null_rank_after_barrier(uint64_t salt)
{
    const int idle = P - 1, root = 0;
    const size_t np = P > 0 ? (size_t)P : 1;
    size_t *cnt = calloc(np, sizeof(size_t)), *dsp = calloc(np, sizeof(size_t)), total = 0;
    if (!cnt || !dsp)
        TC_FAIL("no memory");
    for (int p = 0; p < P; p++) {
        cnt[p] = p == idle && P > 1 ? 0 : (size_t)(3 + p);
        dsp[p] = total;
        total += cnt[p] + 1;
    }
    dfcclRequest_t rq;
    CHECK(dfcclBarrier(comm, &rq));
    CHECK(dfcclWait(&rq));
    for (int round = 0; round < 3; round++) { /* and the collectives after it still line up */
        tbuf_t s = tb_new(cnt[me] * 4), r = tb_new(total * 4);
        unsigned char *exp = tc_malloc(total * 4);
        memset(exp, SENT, total * 4);
        gen(s.h, me, 0, salt + (uint64_t)round, cnt[me] * 4);
        for (int p = 0; p < P; p++)
            gen(exp + dsp[p] * 4, p, 0, salt + (uint64_t)round, cnt[p] * 4);
        tb_push(&s);
        tb_push(&r);
        CHECK(dfcclGatherv(cnt[me] ? s.d : NULL, cnt[me], me == root ? r.d : NULL, cnt, dsp, dfcclInt32, root,
                           comm, &rq));
        CHECK(dfcclWait(&rq));
        if (me == root) {
            tb_pull(&r);
            compare_bytes("gatherv with a NULL rank after a barrier", 4, 3, r.h, exp, total * 4);
        }
        CHECK(dfcclBarrier(comm, &rq));
        CHECK(dfcclWait(&rq));
        tb_free(&s);
        tb_free(&r);
        free(exp);
    }
    free(cnt);
    free(dsp);
}

/* ---- the chaos order ------------------------------------------------------------------ */
static double deadline_s;

static int run_chaos(int iters, size_t scale)
{
    enum { NC = 8 };
    dfcclComm_t cs[NC];
    MPI_Comm mc[NC];
    for (int i = 0; i < NC; i++) {
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mc[i]));
        CHECK(dfcclCommInitMPI(&cs[i], mc[i]));
    }
    uint64_t salt = 1000;
    for (int it = 0; it < iters; it++) {
        vcase_t v[NC];
        int order[NC];
        for (int i = 0; i < NC; i++) {
            memset(&v[i], 0, sizeof(v[i]));
            v[i].k = (kind_t)(i % K_NK);
            v[i].t = dfcclInt32;
            v[i].ts = 4;
            v[i].scale = scale;
            v[i].root = (it + i) % P;
            v[i].pattern = 1;
            v[i].salt = salt++;
            v[i].comm = cs[i];
            order[i] = i;
        }
        tc_rng_t g;
        tc_rng_seed(&g, (uint64_t)me * 7919 + (uint64_t)it);
        tc_shuffle_int(&g, order, NC);
        for (int i = 0; i < NC; i++) {
            vcase_setup(&v[order[i]]);
            vcase_submit(&v[order[i]]);
        }
        const double t0 = MPI_Wtime();
        for (int left = NC; left > 0;) {
            left = 0;
            for (int i = 0; i < NC; i++) {
                int done = 1;
                if (v[i].req)
                    CHECK(dfcclTest(&v[i].req, &done));
                left += !done;
            }
            if (left && deadline_s > 0 && MPI_Wtime() - t0 > deadline_s) {
                fprintf(stderr, "HANG: iteration %d: %d of %d collectives not complete after %.0f s\n", it,
                        left, NC, deadline_s);
                _exit(3);
            }
            if (left)
                usleep(100);
        }
        for (int i = 0; i < NC; i++)
            vcase_check(&v[i]);
    }
    for (int i = 0; i < NC; i++) {
        CHECK(dfcclCommDestroy(cs[i]));
        MPI_Comm_free(&mc[i]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    const int quick = tc_arg_flag(argc, argv, "--quick");
    if (tc_size > 64)
        TC_FAIL("at most 64 ranks");
#ifdef TV_DEVICE
    tc_cuda_pick(tc_rank, "SKIP: no CUDA device", 0, NULL);
#endif
    CHECK(dfcclCommInitMPI(&comm, MPI_COMM_WORLD));
    CHECK(dfcclCommRank(comm, &me));
    CHECK(dfcclCommSize(comm, &P));
    const char *chaos = tc_arg_value(argc, argv, "--chaos");
    if (chaos) {
        const char *sc = tc_arg_value(argc, argv, "--scale"), *dl = tc_arg_value(argc, argv, "--deadline");
        deadline_s = dl ? atof(dl) : 0;
        const int iters = atoi(chaos);
        run_chaos(iters, sc ? (size_t)atoll(sc) : 100000);
        CHECK(dfcclCommDestroy(comm));
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == 0)
            printf("t_vcolls --chaos: %d ranks, %d iterations, %zu bytes checked\nOK\n", P, iters, nchecked);
        MPI_Finalize();
        return 0;
    }
    bad_input();

    static const size_t scales[] = {0, 1, 7, 1000, 20011};
    static const dfcclDataType_t mtypes[] = {dfcclInt32, dfcclInt8, dfcclFloat16, dfcclFloat64};
    const int nscales = quick ? 4 : 5, ntypes = quick ? 2 : 4;
    uint64_t salt = 1;
    int rounds = 0;
    for (int ti = 0; ti < ntypes; ti++) {
        for (int si = 0; si < nscales; si++) {
            /* one round: every kind, a root per rank (rotating), in place and not */
            vcase_t cs[K_NK * 2];
            int n = 0;
            for (int k = 0; k < K_NK; k++) {
                if (k == K_ALLTOALLW && ti > 0)
                    continue; /* its types are per pair already */
                for (int ip = 0; ip < 2; ip++) {
                    if (ip && (k == K_ALLTOALLV || k == K_ALLTOALLW || k == K_REDUCE_SCATTERV))
                        continue;
                    vcase_t *c = &cs[n++];
                    memset(c, 0, sizeof(*c));
                    c->k = (kind_t)k;
                    c->t = mtypes[ti];
                    c->ts = tc_type_size(c->t);
                    c->scale = scales[si];
                    c->root = (int)((salt * 5 + (uint64_t)k) % (uint64_t)P);
                    c->in_place = ip;
                    c->pattern = (int)(salt % 2);
                    c->salt = salt++;
                }
            }
            run_round(cs, n, (rounds++ % 2) == 0);
        }
    }
    /* very uneven: a 3 MiB block among tiny ones, on every kind that takes counts */
    {
        vcase_t cs[4];
        const kind_t ks[4] = {K_GATHERV, K_SCATTERV, K_ALLGATHERV, K_ALLTOALLV};
        for (int i = 0; i < 4; i++) {
            memset(&cs[i], 0, sizeof(cs[i]));
            cs[i].k = ks[i];
            cs[i].t = dfcclInt32;
            cs[i].ts = 4;
            cs[i].scale = (3u << 20) / 4 + 3;
            cs[i].root = 0;
            cs[i].pattern = 2;
            cs[i].salt = salt++;
        }
        run_round(cs, 4, 1);
    }
    /* every root once more for the rooted kinds, small */
    for (int R = 0; R < P; R++) {
        vcase_t cs[4];
        for (int i = 0; i < 4; i++) {
            memset(&cs[i], 0, sizeof(cs[i]));
            cs[i].k = (kind_t)i; /* gather, gatherv, scatter, scatterv */
            cs[i].t = dfcclInt32;
            cs[i].ts = 4;
            cs[i].scale = 33;
            cs[i].root = R;
            cs[i].in_place = R % 2;
            cs[i].salt = salt++;
        }
        run_round(cs, 4, R % 2);
    }
    null_rank_after_barrier(salt);
    salt += 3;
    /* scan, exscan and reduce_scatterv (uneven counts with zeros): every type x valid op,
     * in place and not; then a very uneven reduce_scatterv (a large block among 5-element
     * ones) */
    static const size_t scounts[] = {1, 7, 1000, 70001}, rscales[] = {1, 7, 1000, 20011};
    for (int ti = 0; ti < TC_NTYPES; ti++)
        for (int oi = 0; oi < TC_NOPS; oi++) {
            const dfcclDataType_t t = tc_all_types[ti];
            const dfcclRedOp_t op = tc_all_ops[oi];
            if (!tc_op_valid(t, op))
                continue;
            for (int ci = 0; ci < (quick ? 2 : 4); ci++) {
                for (int ex = 0; ex < 2; ex++)
                    scan_case(t, op, scounts[(ci + ti) % 4], ex, (ti + oi + ci) % 2, salt++);
                rsv_case(t, op, rscales[(ci + ti + oi) % 4], (ci + oi) % 2, (ti + oi + ci) % 2, salt++);
            }
        }
    rsv_case(dfcclFloat32, dfcclSum, quick ? 100000 : 800000, 2, 0, salt++);
    rsv_case(dfcclInt64, dfcclMax, quick ? 100000 : 800000, 2, 1, salt++);
    CHECK(dfcclCommDestroy(comm));
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        printf("t_vcolls: %d ranks, %zu bytes checked\nOK\n", P, nchecked);
    MPI_Finalize();
    return 0;
}
