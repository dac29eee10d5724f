/* SPDX-License-Identifier: BSD-3-Clause */
/* The deadlock fuzzer's oracle (fuzz.h): one collective's buffers between guard zones,
 * the layouts of the v-forms, the expected receive buffer and the check. */
#ifndef DFCCL_FZ_DATA_H
#define DFCCL_FZ_DATA_H

#include "fuzz.h"
#ifdef FZ_CUDA
#include "fz_device.h"
#endif

/* ------------------------------------------------------------------ v-collective layout */

static size_t fz_vcount(const fz_op_t *o, int i, int j)
{
    return o->n ? (size_t)(tc_mix(o->seed ^ ((uint64_t)i << 20) ^ ((uint64_t)j << 40) ^ 0xc0u) % (o->n + 1))
                : 0;
}

static size_t fz_gap(const fz_op_t *o, int i, int j, int side)
{
    return (size_t)(tc_mix(o->seed ^ ((uint64_t)i << 22) ^ ((uint64_t)j << 42) ^ (uint64_t)side) % 3);
}

/* counts and displacements of a gatherv / scatterv / allgatherv (c[r] from rank r) */
static size_t fz_vlayout(const fz_op_t *o, int P, size_t *c, size_t *d)
{
    size_t at = 0;
    for (int r = 0; r < P; r++) {
        at += fz_gap(o, r, 0, 7);
        c[r] = fz_vcount(o, r, 0);
        d[r] = at;
        at += c[r];
    }
    return at + fz_gap(o, P, 0, 7);
}

/* alltoallv: rank i's send layout (to every j) or receive layout (from every j) */
static size_t fz_a2av_layout(const fz_op_t *o, int P, int i, int recv, size_t *c, size_t *d)
{
    size_t at = 0;
    for (int j = 0; j < P; j++) {
        at += fz_gap(o, i, j, recv ? 2 : 1);
        c[j] = recv ? fz_vcount(o, j, i) : fz_vcount(o, i, j);
        d[j] = at;
        at += c[j];
    }
    return at + fz_gap(o, i, P, recv ? 2 : 1);
}
/* ------------------------------------------------------------------ buffers and the check */

static void *fz_alloc(size_t elems, size_t es)
{
    size_t bytes = elems * es;
    unsigned char *b = tc_malloc(bytes + 2 * FZ_GUARD);
    memset(b, FZ_GBYTE, FZ_GUARD);
    memset(b + FZ_GUARD + bytes, FZ_GBYTE, FZ_GUARD);
    return b + FZ_GUARD;
}

static void fz_release(void *p)
{
    if (p)
        free((unsigned char *)p - FZ_GUARD);
}

static size_t fz_guard_bad(const void *p, size_t bytes)
{
    if (!p)
        return 0;
    const unsigned char *lo = (const unsigned char *)p - FZ_GUARD, *hi = (const unsigned char *)p + bytes;
    size_t bad = 0;
    for (int i = 0; i < FZ_GUARD; i++)
        bad += (lo[i] != FZ_GBYTE) + (hi[i] != FZ_GBYTE);
    return bad;
}

static void fz_setup(fz_run_t *x, const fz_op_t *o)
{
    memset(x, 0, sizeof *x);
    const fz_comm_t *cm = &prog.comm[o->comm];
    x->o = o;
    x->P = cm->n;
    x->me = cm->rank_of[tc_rank];
    size_t n = o->n, P = (size_t)x->P, es = tc_type_size(o->t);
    int me = x->me, root = x->me == o->root;
    switch (o->coll) {
    case FZ_ALLREDUCE:
    case FZ_REDUCE: x->send_n = x->recv_n = n; break;
    case FZ_BCAST:
#ifdef FZ_MPI
        x->recv_n = n; /* one buffer: the root's holds the data */
#else
        x->send_n = x->recv_n = n;
#endif
        break;
    case FZ_ALLGATHER:
        x->send_n = n;
        x->recv_n = n * P;
        break;
    case FZ_REDUCESCATTER:
        x->send_n = n * P;
        x->recv_n = n;
        break;
    case FZ_ALLTOALL: x->send_n = x->recv_n = n * P; break;
    case FZ_BARRIER: break;
    case FZ_GATHER:
        x->send_n = n;
        x->recv_n = root ? n * P : 0;
        break;
    case FZ_SCATTER:
        x->send_n = root ? n * P : 0;
        x->recv_n = n;
        break;
    case FZ_GATHERV:
    case FZ_ALLGATHERV: {
        size_t span = fz_vlayout(o, x->P, x->c, x->d);
        x->send_n = x->c[me];
        x->recv_n = o->coll == FZ_ALLGATHERV || root ? span : 0;
        break;
    }
    case FZ_SCATTERV: {
        size_t span = fz_vlayout(o, x->P, x->c, x->d);
        x->send_n = root ? span : 0;
        x->recv_n = x->c[me];
        break;
    }
    case FZ_REDUCESCATTERV: /* block r of the input for rank r, one after another */
        x->send_n = 0;
        for (int r = 0; r < x->P; r++) {
            x->c[r] = fz_vcount(o, r, 0);
            x->d[r] = x->send_n;
            x->send_n += x->c[r];
        }
        x->recv_n = x->c[me];
        break;
    case FZ_ALLTOALLV:
        x->send_n = fz_a2av_layout(o, x->P, me, 0, x->c, x->d);
        x->recv_n = fz_a2av_layout(o, x->P, me, 1, x->rc, x->rd);
        break;
    default: break;
    }
    if (o->inplace)
        x->send_n = 0;
    x->send = fz_alloc(x->send_n, es);
    x->recv = fz_alloc(x->recv_n, es);
    tc_fill(x->send, o->t, o->op, o->seed, me, 0, x->send_n);
    tc_poison(x->recv, x->recv_n * es);
    x->sendp = x->send;
    x->recvp = x->recv;
    if (o->inplace && o->coll == FZ_ALLREDUCE) {
        tc_fill(x->recv, o->t, o->op, o->seed, me, 0, n);
        x->sendp = x->recv;
    } else if (o->inplace && o->coll == FZ_ALLGATHER) {
        tc_fill((char *)x->recv + (size_t)me * n * es, o->t, o->op, o->seed, me, 0, n);
        x->sendp = (char *)x->recv + (size_t)me * n * es;
    }
#ifdef FZ_MPI
    if (o->coll == FZ_BCAST && root)
        tc_fill(x->recv, o->t, o->op, o->seed, me, 0, n);
#endif
#ifdef FZ_CUDA
    if (fz_device) {
        x->dsend = fz_dev_copy(x->send, x->send_n * es);
        x->drecv = fz_dev_copy(x->recv, x->recv_n * es);
        x->sendp = fz_dev_ptr(x, x->sendp);
        x->recvp = fz_dev_ptr(x, x->recvp);
    }
#endif
}

/* the expected receive buffer; returns 0 when it need not be checked */
static int fz_expect(const fz_run_t *x, void *exp)
{
    const fz_op_t *o = x->o;
    size_t n = o->n, es = tc_type_size(o->t);
    int P = x->P, me = x->me;
    tc_poison(exp, x->recv_n * es);
    switch (o->coll) {
    case FZ_ALLREDUCE: tc_ref_reduce(exp, o->t, o->op, o->seed, P, 0, n); break;
    case FZ_REDUCE:
        if (me == o->root)
            tc_ref_reduce(exp, o->t, o->op, o->seed, P, 0, n);
#ifdef FZ_MPI
        else
            return 0; /* MPI: a non-root's recvbuf is not significant */
#endif
        break;
    case FZ_BCAST: tc_fill(exp, o->t, o->op, o->seed, o->root, 0, n); break;
    case FZ_ALLGATHER:
    case FZ_GATHER:
        for (int r = 0; r < P && x->recv_n; r++)
            tc_fill((char *)exp + (size_t)r * n * es, o->t, o->op, o->seed, r, 0, n);
        break;
    case FZ_REDUCESCATTER: tc_ref_reduce(exp, o->t, o->op, o->seed, P, (size_t)me * n, n); break;
    case FZ_ALLTOALL:
        for (int p = 0; p < P; p++)
            tc_fill((char *)exp + (size_t)p * n * es, o->t, o->op, o->seed, p, (size_t)me * n, n);
        break;
    case FZ_SCATTER: tc_fill(exp, o->t, o->op, o->seed, o->root, (size_t)me * n, n); break;
    case FZ_GATHERV:
    case FZ_ALLGATHERV:
        for (int r = 0; r < P && x->recv_n; r++)
            tc_fill((char *)exp + x->d[r] * es, o->t, o->op, o->seed, r, 0, x->c[r]);
        break;
    case FZ_SCATTERV: tc_fill(exp, o->t, o->op, o->seed, o->root, x->d[me], x->c[me]); break;
    case FZ_REDUCESCATTERV: tc_ref_reduce(exp, o->t, o->op, o->seed, P, x->d[me], x->c[me]); break;
    case FZ_ALLTOALLV:
        for (int p = 0; p < P; p++) {
            size_t sc[FZ_MAXP], sd[FZ_MAXP];
            fz_a2av_layout(o, P, p, 0, sc, sd);
            tc_fill((char *)exp + x->rd[p] * es, o->t, o->op, o->seed, p, sd[me], x->rc[p]);
        }
        break;
    default: break;
    }
    return 1;
}

/* number of wrong elements and guard bytes (reported on stderr) */
static size_t fz_check(const fz_run_t *x)
{
    const fz_op_t *o = x->o;
    size_t es = tc_type_size(o->t), bad = 0;
    char extra[200];
    snprintf(extra, sizeof extra, "seed=%llu op=%d comm=%d (%s) root=%d inplace=%d blocking=%d crank=%d/%d",
             (unsigned long long)prog.seed, o->id, o->comm, prog.comm[o->comm].kind, o->root, o->inplace,
             o->blocking, x->me, x->P);
    size_t m = x->recv_n > x->send_n ? x->recv_n : x->send_n;
    void *exp = tc_malloc(m * es + 1);
    if (fz_expect(x, exp))
        bad += tc_compare(fz_coll_names[o->coll], o->t, o->op, o->n, extra, x->recv, exp, x->recv_n);
    tc_fill(exp, o->t, o->op, o->seed, x->me, 0, x->send_n);
    size_t sb =
        tc_compare(fz_coll_names[o->coll], o->t, o->op, o->n, "sendbuf changed", x->send, exp, x->send_n);
    bad += sb;
    free(exp);
    size_t g = fz_guard_bad(x->send, x->send_n * es) + fz_guard_bad(x->recv, x->recv_n * es);
    if (g)
        fprintf(stderr, "[rank %d] OVERRUN %s %s: %zu guard bytes written\n", tc_rank, fz_coll_names[o->coll],
                extra, g);
    return bad + g;
}

#endif /* DFCCL_FZ_DATA_H */
