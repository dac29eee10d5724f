/* SPDX-License-Identifier: BSD-3-Clause */
/* The deadlock fuzzer (fuzz.h): one host thread's part of a phase. It issues the
 * collectives of its communicators in this rank's own interleaving, waits for them in
 * random groups and checks each; in kill programs the victim dies here. */
#ifndef DFCCL_FZ_THREAD_H
#define DFCCL_FZ_THREAD_H

#include "fuzz.h"
#include "fz_data.h"
#include "fz_gen.h"
#include "fz_watch.h"
#ifdef FZ_MPI
#include "fz_api_mpi.h"
#else
#include "fz_api_native.h"
#endif

static int inject_op = -1; /* --inject-wrong: the oracle's own test */

typedef struct {
    int thread;
    fz_run_t *carry[FZ_MAXOPS]; /* deferred: waited in a later phase */
    int ncarry;
    size_t ran, failed, bad;
    int first_err;
    char first_err_msg[800];
} fz_thread_t;

static fz_thread_t fz_thr[FZ_MAXT];
static int fz_phase_arg;

static void fz_failed(fz_thread_t *th, const fz_op_t *o, int rc)
{
    th->failed++;
    if (!th->first_err) {
        th->first_err = 1;
        snprintf(th->first_err_msg, sizeof th->first_err_msg, "op %d (%s on comm %d): %s", o->id,
                 fz_coll_names[o->coll], o->comm, fz_errstr(rc));
    }
    if (!prog.kill) {
        fprintf(stderr, "[rank %d] FAIL seed=%llu op %d %s comm %d: error %d: %s\n", tc_rank,
                (unsigned long long)prog.seed, o->id, fz_coll_names[o->coll], o->comm, rc, fz_errstr(rc));
        tc_abort();
    }
}

static void fz_finish(fz_thread_t *th, fz_run_t *x)
{
    atomic_store(&fz_pending[x->o->id], 0);
    fz_progress();
#ifdef FZ_CUDA
    if (x->dsend) { /* results back to the host copies, then the same check */
        size_t es = tc_type_size(x->o->t);
        fz_dev_back(x->send, x->dsend, x->send_n * es);
        fz_dev_back(x->recv, x->drecv, x->recv_n * es);
    }
#endif
    if (x->o->id == inject_op && x->recv_n && prog.comm[x->o->comm].rank_of[tc_rank] == 0)
        ((unsigned char *)x->recv)[x->recv_n * tc_type_size(x->o->t) / 2] ^= 0x10; /* one bit, one element */
    size_t b = x->result == FZ_OK ? fz_check(x) : 0;
    if (b) {
        th->bad += b;
        if (!prog.kill) {
            fprintf(stderr, "[rank %d] FAIL seed=%llu op %d: %zu wrong\n", tc_rank,
                    (unsigned long long)prog.seed, x->o->id, b);
            tc_abort();
        }
    }
    fz_release(x->send);
    fz_release(x->recv);
    free(x);
}

static void *fz_thread_phase(void *arg)
{
    fz_thread_t *th = arg;
    int p = fz_phase_arg, t = th->thread;
    /* this rank's collectives of the phase, per communicator in program order */
    int q[FZ_MAXCOMM][FZ_MAXOPS / 4 + 8], qn[FZ_MAXCOMM], qh[FZ_MAXCOMM];
    int total = 0, final = -1;
    memset(qn, 0, sizeof qn);
    memset(qh, 0, sizeof qh);
    for (int i = 0; i < prog.nops; i++) {
        const fz_op_t *o = &prog.op[i];
        const fz_comm_t *c = &prog.comm[o->comm];
        if (o->phase != p || c->owner != t || c->rank_of[tc_rank] < 0 || !fz_op_kept(&prog, i))
            continue;
        if (o->final) {
            final = i;
            continue;
        }
        if (qn[o->comm] < (int)(sizeof q[0] / sizeof q[0][0])) {
            q[o->comm][qn[o->comm]++] = i;
            total++;
        }
    }
    tc_rng_t g;
    tc_rng_seed(&g, tc_mix(prog.seed ^ 0x6f72646572ull) ^ ((uint64_t)tc_rank << 32) ^ ((uint64_t)p << 8) ^
                        (uint64_t)t);
    fz_run_t *pool[FZ_MAXOPS];
    int npool = 0;
#ifdef FZ_CUDA
    tc_rng_t dg; /* device synchronizations: a stream of their own, the order stays the seed's */
    tc_rng_seed(&dg, tc_mix(prog.seed ^ 0x64657669ull) ^ ((uint64_t)tc_rank << 32) ^ ((uint64_t)p << 8) ^
                         (uint64_t)t);
    if (fz_device && t > 0)
        fz_cuda_bind();
#endif
    for (int i = 0; i < th->ncarry; i++)
        pool[npool++] = th->carry[i];
    th->ncarry = 0;
    int kill_here = prog.kill && tc_rank == prog.victim && t == 0 && p == prog.nphase - 1;
    int kill_at = kill_here ? (total ? prog.kill_at % total : 0) : -1;
    for (int s = 0; s <= total; s++) {
        if (s == kill_at) {
            printf("FZ-VICTIM: world rank %d pid %ld dies after %d of its %d submissions in phase %d\n",
                   tc_rank, (long)getpid(), s, total, p);
            fflush(stdout);
            tc_sleep_us(prog.kill_delay_us);
            raise(SIGKILL);
        }
        if (s == total)
            break;
        /* the next collective: any communicator's head, but blocking ones in program order */
        int minb = prog.nops;
        for (int k = 0; k < prog.ncomm; k++)
            for (int j = qh[k]; j < qn[k]; j++)
                if (prog.op[q[k][j]].blocking && q[k][j] < minb)
                    minb = q[k][j];
        int cand[FZ_MAXCOMM], nc = 0;
        for (int k = 0; k < prog.ncomm; k++)
            if (qh[k] < qn[k] && (!prog.op[q[k][qh[k]]].blocking || q[k][qh[k]] == minb))
                cand[nc++] = k;
        int k = cand[tc_rng_below(&g, (uint64_t)nc)];
        const fz_op_t *o = &prog.op[q[k][qh[k]++]];
        if (o->late_rank == tc_rank)
            tc_sleep_us(1000L * o->late_ms);
#ifdef FZ_CUDA
        if (fz_device)
            fz_dev_sync(&dg);
#endif
        fz_run_t *x = tc_malloc(sizeof *x);
        fz_setup(x, o);
        atomic_store(&fz_pending[o->id], 1);
        fz_progress();
        x->result = fz_submit(x);
        th->ran++;
        if (x->result != FZ_OK)
            fz_failed(th, o, x->result);
        if (o->blocking || x->result != FZ_OK)
            fz_finish(th, x);
        else if (o->deferred)
            th->carry[th->ncarry++] = x;
        else
            pool[npool++] = x;
    }
    /* wait in random groups, in this rank's own order */
    for (int i = npool - 1; i > 0; i--) {
        int j = (int)tc_rng_below(&g, (uint64_t)i + 1);
        fz_run_t *tmp = pool[i];
        pool[i] = pool[j];
        pool[j] = tmp;
    }
    for (int i = 0; i < npool;) {
        int k = 1 + (int)tc_rng_below(&g, 4);
        if (k > npool - i)
            k = npool - i;
        int how = (int)tc_rng_below(&g, 3);
        int rc = fz_wait_group(&pool[i], k, how);
        if (rc != FZ_OK)
            fz_failed(th, pool[i]->o, rc);
        for (int j = 0; j < k; j++) {
            pool[i + j]->result = rc;
            fz_finish(th, pool[i + j]);
        }
        i += k;
    }
    if (final >= 0) {
        fz_run_t *x = tc_malloc(sizeof *x);
        fz_setup(x, &prog.op[final]);
        atomic_store(&fz_pending[final], 1);
        x->result = fz_submit(x);
        th->ran++;
        if (x->result != FZ_OK)
            fz_failed(th, x->o, x->result);
        fz_finish(th, x);
    }
    return NULL;
}

#endif /* DFCCL_FZ_THREAD_H */
