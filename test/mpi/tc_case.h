/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers (test_common.h): one generic collective case (tc_case_t): buffers with
 * guard bytes, in or out of place, set up, submitted, checked against the reference and
 * freed; a checked allreduce; a random valid (type, op). */
#ifndef DFCCL_TC_CASE_H
#define DFCCL_TC_CASE_H

#include "tc_data.h"

/* ------------------------------------------------- generic collective test cases */

typedef enum {
    TC_ALLREDUCE,
    TC_REDUCE,
    TC_BCAST,
    TC_ALLGATHER,
    TC_REDUCESCATTER,
    TC_ALLTOALL,
    TC_BARRIER,
    TC_NCOLL
} tc_coll_t;

static const char *const tc_coll_names[TC_NCOLL] = {"allreduce",      "reduce",   "bcast",  "allgather",
                                                    "reduce_scatter", "alltoall", "barrier"};

static inline int tc_coll_has_op(tc_coll_t c)
{
    return c == TC_ALLREDUCE || c == TC_REDUCE || c == TC_REDUCESCATTER;
}
static inline int tc_coll_has_root(tc_coll_t c)
{
    return c == TC_REDUCE || c == TC_BCAST;
}
static inline int tc_coll_has_inplace(tc_coll_t c)
{
    return c == TC_ALLREDUCE || c == TC_BCAST || c == TC_ALLGATHER || c == TC_REDUCESCATTER;
}

/* One collective with its buffers. The caller sets coll, t, op (TC_COPY when the
 * collective has none), count, inplace, root, seed, comm, P, me and label; the same
 * fields must be identical on every rank of comm (except me). */
typedef struct {
    tc_coll_t coll;
    dfcclDataType_t t;
    dfcclRedOp_t op;
    size_t count;
    int inplace;
    int root;
    uint64_t seed;
    dfcclComm_t comm;
    int P, me;
    int label;                     /* e.g. the communicator's index, for messages */
    int misalign;                  /* buffers element-aligned but not 16-byte aligned */
    void *send, *recv;             /* owned buffers (send NULL in place where it lives in recv) */
    size_t send_bytes, recv_bytes; /* their sizes (guard zones excluded) */
    void *sendp, *recvp;           /* the pointers passed */
    size_t send_elems, recv_elems;
    dfcclRequest_t req;
} tc_case_t;

/* Guard zones around every case buffer catch writes outside it. Layout:
 * [TC_GUARD bytes][misalignment][data][TC_GUARD bytes], guards filled with TC_GUARD_BYTE. */
#define TC_GUARD      64
#define TC_GUARD_BYTE 0x5C

static inline size_t tc_case_offset(const tc_case_t *c)
{
    size_t es = tc_type_size(c->t);
    return c->misalign ? (es == 1 ? 3 : es) : 0;
}

static inline void *tc_case_alloc(const tc_case_t *c, size_t bytes)
{
    size_t off = tc_case_offset(c);
    unsigned char *base = tc_malloc(bytes + 2 * TC_GUARD + off);
    memset(base, TC_GUARD_BYTE, TC_GUARD + off);
    memset(base + TC_GUARD + off + bytes, TC_GUARD_BYTE, TC_GUARD);
    return base + TC_GUARD + off;
}

static inline void tc_case_release(const tc_case_t *c, void *p)
{
    if (p)
        free((unsigned char *)p - TC_GUARD - tc_case_offset(c));
}

/* number of guard bytes around buffer p (of @p bytes) that were overwritten */
static inline size_t tc_case_guard_check(const tc_case_t *c, const char *which, const void *p, size_t bytes)
{
    if (!p)
        return 0;
    size_t off = tc_case_offset(c), bad = 0;
    const unsigned char *lo = (const unsigned char *)p - TC_GUARD - off;
    const unsigned char *hi = (const unsigned char *)p + bytes;
    for (size_t i = 0; i < TC_GUARD + off; i++)
        if (lo[i] != TC_GUARD_BYTE) {
            if (!bad)
                fprintf(stderr,
                        "[rank %d] OVERRUN coll=%s type=%s op=%s count=%zu comm#%d: %s "
                        "written %zu bytes before its start (0x%02x)\n",
                        tc_rank, tc_coll_names[c->coll], tc_type_name(c->t), tc_op_name(c->op), c->count,
                        c->label, which, TC_GUARD + off - i, lo[i]);
            bad++;
        }
    for (size_t i = 0; i < TC_GUARD; i++)
        if (hi[i] != TC_GUARD_BYTE) {
            if (!bad)
                fprintf(stderr,
                        "[rank %d] OVERRUN coll=%s type=%s op=%s count=%zu comm#%d: %s "
                        "written at byte %zu past its end (0x%02x)\n",
                        tc_rank, tc_coll_names[c->coll], tc_type_name(c->t), tc_op_name(c->op), c->count,
                        c->label, which, i, hi[i]);
            bad++;
        }
    return bad;
}

static inline void tc_case_desc(const tc_case_t *c, char *s, size_t len)
{
    snprintf(s, len, "inplace=%d root=%d misalign=%d nranks=%d comm#%d seed=%llu", c->inplace, c->root,
             c->misalign, c->P, c->label, (unsigned long long)c->seed);
}

static inline void tc_case_setup(tc_case_t *c)
{
    size_t es = tc_type_size(c->t), n = c->count;
    int P = c->P, me = c->me;
    c->send = c->recv = c->sendp = c->recvp = NULL;
    c->send_elems = c->recv_elems = 0;
    c->send_bytes = c->recv_bytes = 0;
    c->req = NULL;
    switch (c->coll) {
    case TC_ALLREDUCE:
        c->send_elems = c->recv_elems = n;
        c->recv = tc_case_alloc(c, c->recv_bytes = n * es);
        if (c->inplace) {
            tc_fill(c->recv, c->t, c->op, c->seed, me, 0, n);
            c->sendp = c->recv;
        } else {
            c->send = tc_case_alloc(c, c->send_bytes = n * es);
            tc_fill(c->send, c->t, c->op, c->seed, me, 0, n);
            tc_poison(c->recv, n * es);
            c->sendp = c->send;
        }
        c->recvp = c->recv;
        break;
    case TC_REDUCE:
        c->send_elems = c->recv_elems = n;
        c->send = tc_case_alloc(c, c->send_bytes = n * es);
        c->recv = tc_case_alloc(c, c->recv_bytes = n * es);
        tc_fill(c->send, c->t, c->op, c->seed, me, 0, n);
        tc_poison(c->recv, n * es);
        c->sendp = c->send;
        c->recvp = c->recv;
        break;
    case TC_BCAST:
        c->send_elems = c->recv_elems = n;
        c->recv = tc_case_alloc(c, c->recv_bytes = n * es);
        if (c->inplace) {
            if (me == c->root)
                tc_fill(c->recv, c->t, TC_COPY, c->seed, me, 0, n);
            else
                tc_poison(c->recv, n * es);
            c->sendp = c->recv;
        } else {
            /* every rank passes a valid sendbuf; only the root's is used */
            c->send = tc_case_alloc(c, c->send_bytes = n * es);
            tc_fill(c->send, c->t, TC_COPY, c->seed, me, 0, n);
            tc_poison(c->recv, n * es);
            c->sendp = c->send;
        }
        c->recvp = c->recv;
        break;
    case TC_ALLGATHER:
        c->send_elems = n;
        c->recv_elems = n * (size_t)P;
        c->recv = tc_case_alloc(c, c->recv_bytes = c->recv_elems * es);
        tc_poison(c->recv, c->recv_elems * es);
        if (c->inplace) {
            c->sendp = (char *)c->recv + (size_t)me * n * es;
            tc_fill(c->sendp, c->t, TC_COPY, c->seed, me, 0, n);
        } else {
            c->send = tc_case_alloc(c, c->send_bytes = n * es);
            tc_fill(c->send, c->t, TC_COPY, c->seed, me, 0, n);
            c->sendp = c->send;
        }
        c->recvp = c->recv;
        break;
    case TC_REDUCESCATTER:
        c->send_elems = n * (size_t)P;
        c->recv_elems = n;
        c->send = tc_case_alloc(c, c->send_bytes = c->send_elems * es);
        tc_fill(c->send, c->t, c->op, c->seed, me, 0, c->send_elems);
        c->sendp = c->send;
        if (c->inplace) {
            c->recvp = (char *)c->send + (size_t)me * n * es;
        } else {
            c->recv = tc_case_alloc(c, c->recv_bytes = n * es);
            tc_poison(c->recv, n * es);
            c->recvp = c->recv;
        }
        break;
    case TC_ALLTOALL:
        c->send_elems = c->recv_elems = n * (size_t)P;
        c->send = tc_case_alloc(c, c->send_bytes = c->send_elems * es);
        c->recv = tc_case_alloc(c, c->recv_bytes = c->recv_elems * es);
        tc_fill(c->send, c->t, TC_COPY, c->seed, me, 0, c->send_elems);
        tc_poison(c->recv, c->recv_elems * es);
        c->sendp = c->send;
        c->recvp = c->recv;
        break;
    default: break;
    }
}

/* Submit; returns the result of the submitting call (no abort). */
static inline dfcclResult_t tc_case_submit_rc(tc_case_t *c)
{
    size_t n = c->count;
    switch (c->coll) {
    case TC_ALLREDUCE: return dfcclAllReduce(c->sendp, c->recvp, n, c->t, c->op, c->comm, &c->req);
    case TC_REDUCE: return dfcclReduce(c->sendp, c->recvp, n, c->t, c->op, c->root, c->comm, &c->req);
    case TC_BCAST: return dfcclBroadcast(c->sendp, c->recvp, n, c->t, c->root, c->comm, &c->req);
    case TC_ALLGATHER: return dfcclAllGather(c->sendp, c->recvp, n, c->t, c->comm, &c->req);
    case TC_REDUCESCATTER: return dfcclReduceScatter(c->sendp, c->recvp, n, c->t, c->op, c->comm, &c->req);
    case TC_ALLTOALL: return dfcclAllToAll(c->sendp, c->recvp, n, c->t, c->comm, &c->req);
    case TC_BARRIER: return dfcclBarrier(c->comm, &c->req);
    default: return dfcclInternalError;
    }
}

static inline void tc_case_submit(tc_case_t *c)
{
    dfcclResult_t r = tc_case_submit_rc(c);
    if (r != dfcclSuccess) {
        char d[160];
        tc_case_desc(c, d, sizeof d);
        TC_FAIL("submit coll=%s type=%s op=%s count=%zu %s returned %d (%s): %s", tc_coll_names[c->coll],
                tc_type_name(c->t), tc_op_name(c->op), c->count, d, (int)r, dfcclGetErrorString(r),
                dfcclGetLastError());
    }
}

static inline size_t tc_case_expect(const tc_case_t *c, const char *part, const void *got, const void *exp,
                                    size_t n)
{
    char d[200];
    tc_case_desc(c, d, sizeof d);
    if (part) {
        size_t l = strlen(d);
        snprintf(d + l, sizeof d - l, " part=%s", part);
    }
    return tc_compare(tc_coll_names[c->coll], c->t, c->op, c->count, d, got, exp, n);
}

/* Check the results of a completed case; returns the number of bad elements
 * (already reported on stderr). Also checks that out-of-place inputs were not
 * modified and that a non-root's reduce recvbuf was not written. */
static inline size_t tc_case_check(const tc_case_t *c)
{
    size_t es = tc_type_size(c->t), n = c->count, bad = 0;
    int P = c->P, me = c->me;
    if (c->coll == TC_BARRIER)
        return 0;
    void *exp = tc_malloc((c->recv_elems > c->send_elems ? c->recv_elems : c->send_elems) * es);
    switch (c->coll) {
    case TC_ALLREDUCE:
        tc_ref_reduce(exp, c->t, c->op, c->seed, P, 0, n);
        bad += tc_case_expect(c, NULL, c->recvp, exp, n);
        if (!c->inplace) {
            tc_fill(exp, c->t, c->op, c->seed, me, 0, n);
            bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, n);
        }
        break;
    case TC_REDUCE:
        if (me == c->root) {
            tc_ref_reduce(exp, c->t, c->op, c->seed, P, 0, n);
            bad += tc_case_expect(c, "root-recvbuf", c->recv, exp, n);
        } else {
            tc_poison(exp, n * es);
            bad += tc_case_expect(c, "nonroot-recvbuf-untouched", c->recv, exp, n);
        }
        tc_fill(exp, c->t, c->op, c->seed, me, 0, n);
        bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, n);
        break;
    case TC_BCAST:
        tc_fill(exp, c->t, TC_COPY, c->seed, c->root, 0, n);
        bad += tc_case_expect(c, NULL, c->recv, exp, n);
        if (!c->inplace) {
            tc_fill(exp, c->t, TC_COPY, c->seed, me, 0, n);
            bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, n);
        }
        break;
    case TC_ALLGATHER:
        for (int r = 0; r < P; r++)
            tc_fill((char *)exp + (size_t)r * n * es, c->t, TC_COPY, c->seed, r, 0, n);
        bad += tc_case_expect(c, NULL, c->recv, exp, c->recv_elems);
        if (!c->inplace) {
            tc_fill(exp, c->t, TC_COPY, c->seed, me, 0, n);
            bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, n);
        }
        break;
    case TC_REDUCESCATTER:
        tc_ref_reduce(exp, c->t, c->op, c->seed, P, (size_t)me * n, n);
        bad += tc_case_expect(c, NULL, c->recvp, exp, n);
        break;
    case TC_ALLTOALL:
        for (int p = 0; p < P; p++)
            tc_fill((char *)exp + (size_t)p * n * es, c->t, TC_COPY, c->seed, p, (size_t)me * n, n);
        bad += tc_case_expect(c, NULL, c->recv, exp, c->recv_elems);
        tc_fill(exp, c->t, TC_COPY, c->seed, me, 0, c->send_elems);
        bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, c->send_elems);
        break;
    default: break;
    }
    free(exp);
    bad += tc_case_guard_check(c, "sendbuf", c->send, c->send_bytes);
    bad += tc_case_guard_check(c, "recvbuf", c->recv, c->recv_bytes);
    return bad;
}

static inline void tc_case_free(tc_case_t *c)
{
    tc_case_release(c, c->send);
    tc_case_release(c, c->recv);
    c->send = c->recv = c->sendp = c->recvp = NULL;
}

/* One float-sum allreduce of count elements (inputs from seed) on comm, whose P ranks
 * number this one me, checked; fails the test, naming @p what, when it fails or its result
 * is wrong. */
static inline void tc_checked_allreduce_n(dfcclComm_t comm, int P, int me, size_t count, uint64_t seed,
                                          const char *what)
{
    tc_case_t c;
    memset(&c, 0, sizeof c);
    c.coll = TC_ALLREDUCE;
    c.t = dfcclFloat32;
    c.op = dfcclSum;
    c.count = count;
    c.seed = seed;
    c.comm = comm;
    c.P = P;
    c.me = me;
    tc_case_setup(&c);
    tc_case_submit(&c);
    const dfcclResult_t r = dfcclWait(&c.req);
    if (r != dfcclSuccess)
        TC_FAIL("%s failed: %d (%s): %s", what, (int)r, dfcclGetErrorString(r), dfcclGetLastError());
    if (tc_case_check(&c))
        TC_FAIL("%s gave wrong results", what);
    tc_case_free(&c);
}

/* The same, 100000 elements. */
static inline void tc_checked_allreduce_on(dfcclComm_t comm, int P, int me, const char *what)
{
    tc_checked_allreduce_n(comm, P, me, 100000, 42, what);
}

/* The same on a communicator of every rank of MPI_COMM_WORLD. */
static inline void tc_checked_allreduce(dfcclComm_t comm, const char *what)
{
    tc_checked_allreduce_on(comm, tc_size, tc_rank, what);
}

/* Pick a random valid (type, op) for collective c. */
static inline void tc_random_type_op(tc_rng_t *g, tc_coll_t c, dfcclDataType_t *t, dfcclRedOp_t *op)
{
    *t = tc_all_types[tc_rng_below(g, TC_NTYPES)];
    if (!tc_coll_has_op(c)) {
        *op = TC_COPY;
        return;
    }
    do
        *op = tc_all_ops[tc_rng_below(g, TC_NOPS)];
    while (!tc_op_valid(*t, *op));
}

#endif /* DFCCL_TC_CASE_H */
