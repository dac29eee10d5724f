/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_badinput: every bad argument is rejected with the right code and a message
 * that names the argument; a rejected call has no effect on other communicators
 * (a checked collective on a live communicator follows every bad call) nor on the
 * communicator it was made on. Also: count 0 with NULL buffers is legal, stale
 * (destroyed) handles are rejected, dfcclCommInit validates its arguments, a
 * failing bootstrap gives dfcclBootstrapError, and destroying a communicator with a
 * collective pending completes it with dfcclCommAborted. Request handles: a copy of a
 * request that already completed, a request named twice in dfcclWaitAll and forged
 * words are rejected naming the argument (no use after free). Rank 0 prints every case
 * it tried and what it gave ("case: CALL -> CODE: MESSAGE").
 *
 * usage: t_badinput
 */
#include "test_common.h"

static dfcclComm_t A, B; /* A gets the bad calls; B proves other communicators work */
static int P, me;
static int nbad, ngood;
static uint64_t good_seed = 1000;
static uint64_t a_submitted; /* successful submissions on A */

/* A checked collective on communicator @p c (rotating through collectives). */
static void good_on(dfcclComm_t c, const char *after)
{
    static const tc_coll_t colls[] = {TC_ALLREDUCE,     TC_BCAST,  TC_ALLGATHER,
                                      TC_REDUCESCATTER, TC_REDUCE, TC_ALLTOALL};
    tc_case_t x;
    memset(&x, 0, sizeof x);
    x.coll = colls[ngood % 6];
    x.t = (ngood / 6) % 2 ? dfcclFloat32 : dfcclInt32;
    x.op = tc_coll_has_op(x.coll) ? dfcclSum : TC_COPY;
    x.count = 37 + (size_t)(ngood % 5) * 100;
    x.root = tc_coll_has_root(x.coll) ? (ngood % P) : 0;
    x.seed = good_seed++;
    x.comm = c;
    x.P = P;
    x.me = me;
    x.label = c == A ? 0 : 1;
    tc_case_setup(&x);
    dfcclResult_t r = tc_case_submit_rc(&x);
    if (r != dfcclSuccess)
        TC_FAIL("good %s on comm %s after [%s] failed to submit: %d (%s): %s", tc_coll_names[x.coll],
                c == A ? "A" : "B", after, (int)r, dfcclGetErrorString(r), dfcclGetLastError());
    r = dfcclWait(&x.req);
    if (r != dfcclSuccess)
        TC_FAIL("good %s on comm %s after [%s] completed with %d (%s): %s", tc_coll_names[x.coll],
                c == A ? "A" : "B", after, (int)r, dfcclGetErrorString(r), dfcclGetLastError());
    if (tc_case_check(&x))
        TC_FAIL("good %s on comm %s after [%s] gave wrong results", tc_coll_names[x.coll], c == A ? "A" : "B",
                after);
    tc_case_free(&x);
    if (c == A)
        a_submitted++;
    ngood++;
}

/* The call must return @p want and the last error must contain @p needle. */
static void bad_check(int line, const char *txt, dfcclResult_t got, dfcclResult_t want, dfcclResult_t want2,
                      const char *needle)
{
    if (got != want && got != want2)
        TC_FAIL("line %d: %s returned %d (%s), expected %d (%s); last error: \"%s\"", line, txt, (int)got,
                dfcclGetErrorString(got), (int)want, dfcclGetErrorString(want), dfcclGetLastError());
    if (needle && !tc_lasterr_has(needle))
        TC_FAIL("line %d: %s returned %d but the last error \"%s\" does not name \"%s\"", line, txt, (int)got,
                dfcclGetLastError(), needle);
    if (me == 0)
        printf("case: %s -> %s: %s\n", txt, dfcclGetErrorString(got), dfcclGetLastError());
    nbad++;
    /* the rejected call must not disturb another live communicator */
    good_on(B, txt);
}

#define BAD(needle, call)                                                                                    \
    bad_check(__LINE__, #call, (call), dfcclInvalidArgument, dfcclInvalidArgument, needle)
/* a stale handle: invalid argument or invalid usage are both right */
#define BAD_STALE(call) bad_check(__LINE__, #call, (call), dfcclInvalidArgument, dfcclInvalidUsage, "comm")

/* the bootstrap all-gather over MPI_COMM_WORLD, whatever nranks the caller passed */
static int mpi_ag(const void *s, void *r, size_t bytes, void *ctx)
{
    (void)ctx;
    return MPI_Allgather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS;
}

static int cb_calls;
static int cb_fail(const void *s, void *r, size_t bytes, void *ctx)
{
    (void)s;
    (void)r;
    (void)bytes;
    (void)ctx;
    cb_calls++;
    return -1;
}

/* A stale handle, before any other communicator is created: C was destroyed; then a new
 * communicator, most likely in C's slot of the handle table. */
static void check_stale(dfcclComm_t C, float *sb, float *rb, size_t n)
{
    const dfcclDataType_t F = dfcclFloat32;
    dfcclRequest_t req = NULL;
    int st_rank, st_size;
    dfcclStats_t stats;

    CHECK(dfcclCommDestroy(C));
    BAD_STALE(dfcclAllReduce(sb, rb, n, F, dfcclSum, C, &req));
    BAD_STALE(dfcclReduce(sb, rb, n, F, dfcclSum, 0, C, &req));
    BAD_STALE(dfcclBroadcast(sb, rb, n, F, 0, C, &req));
    BAD_STALE(dfcclAllGather(sb, rb, n, F, C, &req));
    BAD_STALE(dfcclReduceScatter(sb, rb, n, F, dfcclSum, C, &req));
    BAD_STALE(dfcclAllToAll(sb, rb, n, F, C, &req));
    BAD_STALE(dfcclBarrier(C, &req));
    BAD_STALE(dfcclCommRank(C, &st_rank));
    BAD_STALE(dfcclCommSize(C, &st_size));
    BAD_STALE(dfcclCommGetStats(C, &stats));
    BAD_STALE(dfcclCommRefuse(C, NULL, NULL, "a stale handle"));
    BAD_STALE(dfcclCommDestroy(C));
    good_on(A, "stale handle tests");
    /* the memory-kind query: its one argument, and host memory (what this suite has) */
    BAD("kind_p", dfcclPointerGetKind(sb, NULL));
    dfcclMemKind_t kind = dfcclMemDevice;
    CHECK(dfcclPointerGetKind(sb, &kind));
    if (kind != dfcclMemHost)
        TC_FAIL("dfcclPointerGetKind(malloc'd buffer) = %d, expected dfcclMemHost", (int)kind);
    kind = dfcclMemDevice;
    CHECK(dfcclPointerGetKind(NULL, &kind));
    if (kind != dfcclMemHost)
        TC_FAIL("dfcclPointerGetKind(NULL) = %d, expected dfcclMemHost", (int)kind);
    /* a new communicator, most likely in the destroyed one's slot of the handle table
     * (the low 24 bits of a handle): the old handle still names nothing, the new one works */
    dfcclComm_t D;
    CHECK(dfcclCommInitMPI(&D, MPI_COMM_WORLD));
    const int reused = (((uintptr_t)C ^ (uintptr_t)D) & ((1ull << 24) - 1)) == 0;
    BAD_STALE(dfcclAllReduce(sb, rb, n, F, dfcclSum, C, &req));
    BAD_STALE(dfcclCommRank(C, &st_rank));
    BAD_STALE(dfcclCommDestroy(C));
    /* D's own slot under another generation: what C's handle would be, had D reused C's
     * slot (deterministic, whatever the table did) */
    const dfcclComm_t other_gen = (dfcclComm_t)((uintptr_t)D ^ (1ull << 48));
    BAD_STALE(dfcclAllReduce(sb, rb, n, F, dfcclSum, other_gen, &req));
    BAD_STALE(dfcclCommSize(other_gen, &st_size));
    good_on(D, "a new communicator after a stale handle");
    CHECK(dfcclCommDestroy(D));
    if (tc_rank == 0)
        printf("stale handle: the new communicator %s the destroyed one's slot\n",
               reused ? "reused" : "did not reuse");
}

/* NULL communicators, NULL buffers with count > 0, partly overlapping buffers */
static void check_null_args(float *sb, float *rb, size_t n)
{
    const dfcclDataType_t F = dfcclFloat32;
    dfcclRequest_t req = NULL;
    int st_rank, st_size;
    dfcclStats_t stats;

    /* ---- NULL communicator ---- */
    BAD("comm", dfcclAllReduce(sb, rb, n, F, dfcclSum, NULL, &req));
    BAD("comm", dfcclReduce(sb, rb, n, F, dfcclSum, 0, NULL, &req));
    BAD("comm", dfcclBroadcast(sb, rb, n, F, 0, NULL, &req));
    BAD("comm", dfcclAllGather(sb, rb, n, F, NULL, &req));
    BAD("comm", dfcclReduceScatter(sb, rb, n, F, dfcclSum, NULL, &req));
    BAD("comm", dfcclAllToAll(sb, rb, n, F, NULL, &req));
    BAD("comm", dfcclBarrier(NULL, &req));
    BAD("comm", dfcclCommRank(NULL, &st_rank));
    BAD("comm", dfcclCommSize(NULL, &st_size));
    BAD("comm", dfcclCommGetStats(NULL, &stats));
    BAD("comm", dfcclCommRefuse(NULL, sb, rb, "no communicator"));
    /* refusing a call: a bad argument refuses nothing (every rank makes these, and the
     * checked collectives after each one complete) */
    BAD("why", dfcclCommRefuse(A, sb, rb, NULL));
    BAD("why", dfcclCommRefuse(A, NULL, NULL, ""));
    BAD("comm", dfcclCommDestroy(NULL));

    /* ---- NULL buffers with count > 0 ---- */
    BAD("sendbuf", dfcclAllReduce(NULL, rb, n, F, dfcclSum, A, &req));
    BAD("recvbuf", dfcclAllReduce(sb, NULL, n, F, dfcclSum, A, &req));
    BAD("sendbuf", dfcclReduce(NULL, rb, n, F, dfcclSum, me, A, &req));
    BAD("recvbuf", dfcclReduce(sb, NULL, n, F, dfcclSum, me, A, &req)); /* on the root */
    BAD("sendbuf", dfcclBroadcast(NULL, rb, n, F, me, A, &req));        /* on the root */
    BAD("recvbuf", dfcclBroadcast(sb, NULL, n, F, me, A, &req));
    BAD("recvbuf", dfcclBroadcast(sb, NULL, n, F, (me + 1) % P, A, &req));
    BAD("sendbuf", dfcclAllGather(NULL, rb, n, F, A, &req));
    BAD("recvbuf", dfcclAllGather(sb, NULL, n, F, A, &req));
    BAD("sendbuf", dfcclReduceScatter(NULL, rb, n, F, dfcclSum, A, &req));
    BAD("recvbuf", dfcclReduceScatter(sb, NULL, n, F, dfcclSum, A, &req));
    BAD("sendbuf", dfcclAllToAll(NULL, rb, n, F, A, &req));
    /* partial overlap: in place means equal buffers (all-to-all has no in-place form) */
    BAD("overlap", dfcclAllReduce(sb, sb + 1, n, F, dfcclSum, A, &req));
    BAD("overlap", dfcclAllReduce(sb + 5, sb, n, F, dfcclSum, A, &req));
    BAD("overlap", dfcclReduce(sb, sb + 3, n, F, dfcclSum, me, A, &req)); /* on the root */
    BAD("overlap", dfcclBroadcast(sb + 2, sb, n, F, me, A, &req));        /* on the root */
    BAD("overlap", dfcclAllToAll(sb, sb + 1, n, F, A, &req));
    BAD("recvbuf", dfcclAllToAll(sb, NULL, n, F, A, &req));
}

/* a count larger than the buffers: that is the reason, not an overlap */
static void check_huge_counts(float *sb, float *rb)
{
    const dfcclDataType_t F = dfcclFloat32;
    dfcclRequest_t req = NULL;

    const size_t huge = (size_t)1 << 40;
    BAD("count 1099511627776 is larger than", dfcclAllReduce(sb, rb, huge, F, dfcclSum, A, &req));
    BAD("is larger than", dfcclReduce(sb, rb, huge, F, dfcclSum, me, A, &req)); /* on the root */
    BAD("is larger than", dfcclAllGather(sb, rb, huge >> 4, F, A, &req));
    BAD("is larger than", dfcclAllToAll(sb, rb, huge >> 4, F, A, &req));
    BAD("is larger than", dfcclReduceScatter(sb, rb, huge >> 4, F, dfcclSum, A, &req));
    size_t *cnt = tc_malloc(sizeof(size_t) * (size_t)P), *dsp = tc_malloc(sizeof(size_t) * (size_t)P);
    for (int p = 0; p < P; p++) {
        cnt[p] = huge >> 4;
        dsp[p] = (size_t)p * (huge >> 4);
    }
    BAD("reach past", dfcclAllToAllv(sb, cnt, dsp, rb, cnt, dsp, F, A, &req));
    free(cnt);
    free(dsp);
}

/* NULL request_p; datatype, op and root out of range; bitwise ops on floating types */
static void check_ranges(float *sb, float *rb, size_t n)
{
    const dfcclDataType_t F = dfcclFloat32;
    dfcclRequest_t req = NULL;

    /* ---- NULL request_p ---- */
    BAD("request", dfcclAllReduce(sb, rb, n, F, dfcclSum, A, NULL));
    BAD("request", dfcclReduce(sb, rb, n, F, dfcclSum, 0, A, NULL));
    BAD("request", dfcclBroadcast(sb, rb, n, F, 0, A, NULL));
    BAD("request", dfcclAllGather(sb, rb, n, F, A, NULL));
    BAD("request", dfcclReduceScatter(sb, rb, n, F, dfcclSum, A, NULL));
    BAD("request", dfcclAllToAll(sb, rb, n, F, A, NULL));
    BAD("request", dfcclBarrier(A, NULL));

    /* ---- datatype out of range ---- */
    const int bad_types[] = {-1, dfcclNumTypes, dfcclNumTypes + 1, 1000};
    for (int i = 0; i < 4; i++) {
        dfcclDataType_t bt = (dfcclDataType_t)bad_types[i];
        BAD("datatype", dfcclAllReduce(sb, rb, n, bt, dfcclSum, A, &req));
        BAD("datatype", dfcclReduce(sb, rb, n, bt, dfcclSum, 0, A, &req));
        BAD("datatype", dfcclBroadcast(sb, rb, n, bt, 0, A, &req));
        BAD("datatype", dfcclAllGather(sb, rb, n, bt, A, &req));
        BAD("datatype", dfcclReduceScatter(sb, rb, n, bt, dfcclSum, A, &req));
        BAD("datatype", dfcclAllToAll(sb, rb, n, bt, A, &req));
        if (dfcclTypeSize(bt) != 0)
            TC_FAIL("dfcclTypeSize(%d) = %zu, expected 0", bad_types[i], dfcclTypeSize(bt));
    }
    for (int i = 0; i < TC_NTYPES; i++)
        if (dfcclTypeSize(tc_all_types[i]) != tc_type_size(tc_all_types[i]))
            TC_FAIL("dfcclTypeSize(%s) = %zu, expected %zu", tc_type_name(tc_all_types[i]),
                    dfcclTypeSize(tc_all_types[i]), tc_type_size(tc_all_types[i]));

    /* ---- op out of range ---- */
    const int bad_ops[] = {-1, dfcclNumOps, dfcclNumOps + 1, 1000};
    for (int i = 0; i < 4; i++) {
        dfcclRedOp_t bo = (dfcclRedOp_t)bad_ops[i];
        BAD("op", dfcclAllReduce(sb, rb, n, dfcclInt32, bo, A, &req));
        BAD("op", dfcclReduce(sb, rb, n, dfcclInt32, bo, 0, A, &req));
        BAD("op", dfcclReduceScatter(sb, rb, n, dfcclInt32, bo, A, &req));
    }

    /* ---- bitwise ops on floating types ---- */
    const dfcclDataType_t ftypes[] = {dfcclFloat16, dfcclBfloat16, dfcclFloat32, dfcclFloat64};
    const dfcclRedOp_t bops[] = {dfcclBand, dfcclBor, dfcclBxor};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            BAD("op", dfcclAllReduce(sb, rb, n, ftypes[i], bops[j], A, &req));
            BAD("op", dfcclReduce(sb, rb, n, ftypes[i], bops[j], 0, A, &req));
            BAD("op", dfcclReduceScatter(sb, rb, n, ftypes[i], bops[j], A, &req));
        }

    /* ---- root out of range ---- */
    const int bad_roots[] = {-1, P, P + 7, -1000};
    for (int i = 0; i < 4; i++) {
        BAD("root", dfcclReduce(sb, rb, n, F, dfcclSum, bad_roots[i], A, &req));
        BAD("root", dfcclBroadcast(sb, rb, n, F, bad_roots[i], A, &req));
    }
}

/* NULL output pointers of the other calls; the version; every error string */
static void check_null_outputs(void)
{
    int done;

    /* ---- NULL output pointers of the other calls ---- */
    BAD(NULL, dfcclCommRank(A, NULL));
    BAD(NULL, dfcclCommSize(A, NULL));
    BAD(NULL, dfcclCommGetStats(A, NULL));
    BAD(NULL, dfcclGetVersion(NULL));
    BAD(NULL, dfcclWait(NULL));
    BAD(NULL, dfcclTest(NULL, &done));
    BAD(NULL, dfcclWaitAll(2, NULL));
    {
        dfcclRequest_t nullreq = NULL;
        BAD(NULL, dfcclTest(&nullreq, NULL));
        /* a NULL request completes at once */
        CHECK(dfcclWait(&nullreq));
        if (nullreq != NULL)
            TC_FAIL("dfcclWait(&NULL) changed the request");
    }
    int version = 0;
    CHECK(dfcclGetVersion(&version));
    if (version != DFCCL_VERSION_CODE)
        TC_FAIL("dfcclGetVersion = %d, header says %d", version, DFCCL_VERSION_CODE);
    for (int code = -12; code <= 2; code++) {
        const char *s = dfcclGetErrorString((dfcclResult_t)code);
        if (!s || !*s)
            TC_FAIL("dfcclGetErrorString(%d) is NULL or empty", code);
    }
}

/* request handles: a stale copy, one request twice, forged words */
static void check_request_handles(float *sb, float *rb, size_t n)
{
    const dfcclDataType_t F = dfcclFloat32;
    int done;

    dfcclRequest_t r1 = NULL, r2 = NULL, copy, forged;
    CHECK(dfcclAllReduce(sb, rb, n, F, dfcclSum, A, &r1));
    copy = r1;
    CHECK(dfcclWait(&r1));
    a_submitted++;
    const dfcclRequest_t stale = copy;
    BAD("request_p", dfcclWait(&copy));
    BAD("request_p", dfcclTest(&copy, &done));
    if (copy != stale)
        TC_FAIL("a rejected wait changed the caller's (stale) request handle");
    /* a new request, most likely in the completed one's slot: the copy still names nothing */
    CHECK(dfcclAllReduce(sb, rb, n, F, dfcclSum, A, &r2));
    BAD("request_p", dfcclWait(&copy));
    dfcclRequest_t twice[3] = {r2, NULL, r2};
    BAD("requests[0] and requests[2]", dfcclWaitAll(3, twice));
    if (twice[0] != r2 || twice[2] != r2)
        TC_FAIL("a rejected dfcclWaitAll changed its requests");
    dfcclRequest_t mixed[2] = {r2, copy};
    BAD("requests[1]", dfcclWaitAll(2, mixed));
    CHECK(dfcclWait(&r2)); /* nothing above waited on it */
    a_submitted++;
    BAD("request_p", dfcclWait(&twice[2])); /* the second copy, after the first's wait */
    forged = (dfcclRequest_t)0x1;
    BAD("request_p", dfcclWait(&forged));
    forged = (dfcclRequest_t)A; /* a communicator's handle is no request */
    BAD("request_p", dfcclTest(&forged, &done));
    forged = (dfcclRequest_t)(uintptr_t)~0ull;
    BAD("request_p", dfcclWait(&forged));
    /* many requests (the sorted check), one of them twice */
    enum { NR = 40 };
    dfcclRequest_t many[NR + 1];
    for (int i = 0; i < NR; i++)
        CHECK(dfcclBarrier(A, &many[i]));
    many[NR] = many[7];
    BAD("requests[7] and requests[40]", dfcclWaitAll(NR + 1, many));
    CHECK(dfcclWaitAll(NR, many));
    a_submitted += NR;
    for (int i = 0; i < NR; i++)
        if (many[i])
            TC_FAIL("request %d not NULL after dfcclWaitAll", i);
    BAD("requests[0]", dfcclWaitAll(1, &many[NR]));
}

/* count 0 with NULL buffers is legal (collective: every rank does it) */
static void check_count0(void)
{
    const dfcclDataType_t F = dfcclFloat32;

    dfcclRequest_t z[8] = {NULL};
    int root = P - 1;
    CHECK(dfcclAllReduce(NULL, NULL, 0, F, dfcclSum, A, &z[0]));
    CHECK(dfcclReduce(NULL, NULL, 0, dfcclInt64, dfcclMax, root, A, &z[1]));
    CHECK(dfcclBroadcast(NULL, NULL, 0, dfcclUint8, root, A, &z[2]));
    CHECK(dfcclAllGather(NULL, NULL, 0, dfcclFloat16, A, &z[3]));
    CHECK(dfcclReduceScatter(NULL, NULL, 0, dfcclBfloat16, dfcclMin, A, &z[4]));
    CHECK(dfcclAllToAll(NULL, NULL, 0, dfcclFloat64, A, &z[5]));
    CHECK(dfcclAllReduce(NULL, NULL, 0, dfcclUint32, dfcclBxor, A, &z[6]));
    CHECK(dfcclBarrier(A, &z[7]));
    a_submitted += 8;
    for (int i = 0; i < 8; i++)
        if (z[i] == NULL)
            TC_FAIL("count-0 collective %d returned a NULL request", i);
    CHECK(dfcclWaitAll(8, z));
    for (int i = 0; i < 8; i++)
        if (z[i] != NULL)
            TC_FAIL("count-0 request %d not NULL after dfcclWaitAll", i);
    good_on(A, "count-0 collectives");
    good_on(B, "count-0 collectives");
}

/* dfcclCommInit argument checks (local: the callback must not be called) */
static void check_comm_init(void)
{
    dfcclComm_t x = NULL;
    cb_calls = 0;
    BAD("rank", dfcclCommInit(&x, P, -1, cb_fail, NULL));
    BAD("rank", dfcclCommInit(&x, P, P, cb_fail, NULL));
    BAD("rank", dfcclCommInit(&x, P, P + 100, cb_fail, NULL));
    BAD("nranks", dfcclCommInit(&x, 0, 0, cb_fail, NULL));
    BAD("nranks", dfcclCommInit(&x, -3, 0, cb_fail, NULL));
    BAD("allgather", dfcclCommInit(&x, P, me, NULL, NULL));
    BAD("comm", dfcclCommInit(NULL, P, me, cb_fail, NULL));
    if (cb_calls != 0)
        TC_FAIL("dfcclCommInit called the bootstrap all-gather %d times for invalid arguments", cb_calls);
    /* valid arguments, failing bootstrap (every rank fails locally) */
    dfcclResult_t r = dfcclCommInit(&x, P, me, cb_fail, NULL);
    if (r != dfcclBootstrapError)
        TC_FAIL("dfcclCommInit with a failing all-gather returned %d (%s), expected %d; last "
                "error \"%s\"",
                (int)r, dfcclGetErrorString(r), (int)dfcclBootstrapError, dfcclGetLastError());
    if (cb_calls < 1)
        TC_FAIL("dfcclCommInit returned dfcclBootstrapError without calling the all-gather");
    MPI_Barrier(MPI_COMM_WORLD);
    good_on(A, "failed dfcclCommInit");
    good_on(B, "failed dfcclCommInit");
    /* nranks larger than the processes the all-gather spans, and every process
     * passing rank 0: named as such (not as a knob that differs), on every rank */
    BAD("spans fewer processes", dfcclCommInit(&x, P + 1, me, mpi_ag, NULL));
    if (x)
        TC_FAIL("a failed dfcclCommInit left a communicator");
    if (P > 1)
        BAD("passed the same rank", dfcclCommInit(&x, P, 0, mpi_ag, NULL));
}

/* destroy with a collective pending: it completes with dfcclCommAborted */
static void check_destroy_pending(float *sb, float *rb, size_t n)
{
    const dfcclDataType_t F = dfcclFloat32;
    int done;

    if (P < 2)
        return;
    dfcclComm_t D;
    CHECK(dfcclCommInitMPI(&D, MPI_COMM_WORLD));
    if (me == 0) {
        /* only rank 0 submits: the collective can never complete */
        dfcclRequest_t pr = NULL;
        CHECK(dfcclAllReduce(sb, rb, n, F, dfcclSum, D, &pr));
        for (int i = 0; i < 20; i++) {
            CHECK(dfcclTest(&pr, &done));
            if (done)
                TC_FAIL("an allreduce submitted on rank 0 only completed");
            tc_sleep_us(1000);
        }
        CHECK(dfcclCommDestroy(D));
        dfcclResult_t r = dfcclWait(&pr);
        if (r != dfcclCommAborted)
            TC_FAIL("pending allreduce of a destroyed communicator completed with %d (%s), "
                    "expected %d (dfcclCommAborted)",
                    (int)r, dfcclGetErrorString(r), (int)dfcclCommAborted);
        if (pr != NULL)
            TC_FAIL("dfcclWait left the aborted request non-NULL");
    } else {
        CHECK(dfcclCommDestroy(D));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    good_on(A, "destroy with a pending collective");
    good_on(B, "destroy with a pending collective");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    (void)argc;
    (void)argv;
    P = tc_size;
    me = tc_rank;

    dfcclComm_t C; /* destroyed early: its stale handle must be rejected */
    CHECK(dfcclCommInitMPI(&A, MPI_COMM_WORLD));
    CHECK(dfcclCommInitMPI(&B, MPI_COMM_WORLD));
    CHECK(dfcclCommInitMPI(&C, MPI_COMM_WORLD));

    const size_t n = 64; /* elements per rank */
    float *sb = tc_malloc(n * (size_t)P * sizeof(double));
    float *rb = tc_malloc(n * (size_t)P * sizeof(double));
    memset(sb, 0, n * (size_t)P * sizeof(double));

    check_stale(C, sb, rb, n);
    check_null_args(sb, rb, n);
    check_huge_counts(sb, rb);
    check_ranges(sb, rb, n);
    check_null_outputs();
    check_request_handles(sb, rb, n);

    /* A, having rejected all of the above, still works */
    good_on(A, "all bad calls on A");

    check_count0();

    /* statistics of A count only the accepted collectives */
    dfcclStats_t stats;
    CHECK(dfcclCommGetStats(A, &stats));
    if (stats.submitted != a_submitted || stats.completed != a_submitted)
        TC_FAIL("stats of A: submitted=%llu completed=%llu, expected %llu (rejected calls must not count)",
                (unsigned long long)stats.submitted, (unsigned long long)stats.completed,
                (unsigned long long)a_submitted);

    check_comm_init();
    check_destroy_pending(sb, rb, n);

    CHECK(dfcclCommDestroy(A));
    CHECK(dfcclCommDestroy(B));
    int left = tc_shm_count((long)getpid(), 1);
    if (left)
        TC_FAIL("%d /dev/shm/dfccl-%ld-* segments remain after destroying every communicator", left,
                (long)getpid());
    free(sb);
    free(rb);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        printf("t_badinput: %d bad calls rejected, %d good collectives checked, np=%d\n", nbad, ngood, P);
        printf("OK\n");
    }
    MPI_Finalize();
    return 0;
}
