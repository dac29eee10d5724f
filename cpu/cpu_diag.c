/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU daemon's diagnostics, looked at while a task waits: a stall report naming
 * the ranks that have not arrived, a dead or departed peer, a timeout (cpu_state.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_state.h"

/* ---- diagnostics ------------------------------------------------------------------------ */

static void report_stall(eng_task_t *t, uint64_t waited_ns)
{
    struct dfccl_comm *c = t->comm;
    char missing[512];
    size_t len = 0;
    int nmissing = 0;
    missing[0] = 0;
    for (int p = 0; p < c->nranks; p++) {
        /* a rank has arrived at seq once it has submitted seq+1 collectives (peers on
         * the net are not mapped: unknown, not listed) */
        if (c->segs[p] && dfccl_load_acquire64(&eng_seg_hdr(c, p)->arrived) <= t->seq) {
            nmissing++;
            if (len < sizeof(missing) - 16)
                len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%d", nmissing > 1 ? "," : "",
                                        p);
        }
    }
    /* "arrived" says nothing of a peer past seq that is itself stalled on another
     * communicator, or of a net peer: say what is known, not a guess */
    dfccl_warn("%s seq %llu on communicator %016llx (rank %d of %d) stalled for %llu ms; %s%s",
               eng_coll_names[t->args.coll], (unsigned long long)t->seq, (unsigned long long)c->uid, c->rank,
               c->nranks, (unsigned long long)(waited_ns / 1000000),
               nmissing ? "ranks that have not arrived: "
                        : "every shared-memory peer has submitted it (one may be stalled on another "
                          "communicator, or a net peer is late)",
               missing);
}

/* A stalled task's signature diagnosis (sig.c) is due: after ENG_SIG_CHECK_NS of waiting,
 * and every ENG_SIG_CHECK_NS after (a few loads per peer, of lines rarely written). */
static int sig_check_due(eng_wnode_t *n, uint64_t waited, uint64_t now)
{
    if (waited < ENG_SIG_CHECK_NS || now - n->sig_check_ns < ENG_SIG_CHECK_NS)
        return 0;
    n->sig_check_ns = now;
    return 1;
}

/* DFCCL_TRACE: worker W ran t from t0 (eng_now_ns) until now, with this outcome. */
void cpu_trace_run(const eng_worker_t *W, const eng_task_t *t, uint64_t t0, int outcome)
{
    if (eng_trace_on)
        eng_trace_run(t, W->id, t0, eng_now_ns(), outcome);
}

/* Stall report, dead peer and timeout (the run began at run_t0, for the trace). Returns 1
 * when this worker's part was failed. */
int cpu_check_stall(eng_worker_t *W, eng_wnode_t *n, uint64_t now, uint64_t run_t0)
{
    eng_task_t *t = n->task;
    uint64_t waited = now - n->progress_ns;
    struct dfccl_comm *c = t->comm;
    const char *name = eng_coll_names[t->args.coll];
    const unsigned long long seq = (unsigned long long)t->seq;
    dfcclResult_t res = dfcclSuccess;
    char msg[sizeof c->why - 32];
    int p;
    if (waited > ENG_PEER_CHECK_NS && eng_peer_check_due(c, now) && (p = eng_shm_dead_peer(c, now)) >= 0) {
        /* a peer died without leaving: nothing more can run on the communicator */
        char who[128];
        eng_shm_peer_desc(c, p, now, who, sizeof who);
        res = dfcclCommAborted;
        eng_comm_why(c, !dfccl_exchange_relaxed(&t->reported, 1),
                     "peer rank %d (%s) died; %s seq %llu and every later collective on it fail", p, who,
                     name, seq);
    } else if (waited > ENG_PEER_CHECK_NS && (p = eng_shm_left_peer(c, t->seq, 0)) >= 0) {
        /* it destroyed the communicator (or exited) without this collective: nothing
         * will come from it, now or for any later collective */
        res = dfcclCommAborted;
        eng_comm_why(c, !dfccl_exchange_relaxed(&t->reported, 1),
                     "peer rank %d left the communicator (dfcclCommDestroy or exit) before completing %s "
                     "seq %llu; it and every later collective on it fail",
                     p, name, seq);
    } else if (sig_check_due(n, waited, now) && eng_sig_diagnose(c, 0, t->seq, msg, sizeof msg) >= 0) {
        /* the ranks called different collectives (or a peer refused its call, or aborted on
         * such a finding): the steps exchanged so far leave the connections out of step,
         * so nothing more can run on the communicator; every peer is told */
        res = dfcclMismatch;
        eng_sig_abort(c, !dfccl_exchange_relaxed(&t->reported, 1), msg);
    } else {
        if (eng_config.stall_report_ms && waited > eng_config.stall_report_ms * 1000000ull &&
            !dfccl_exchange_relaxed(&t->reported, 1))
            report_stall(t, waited);
        /* the connection counters are now out of step with the peers: nothing more can
         * run on this communicator (the other workers drop their parts on seeing it) */
        if (eng_config.timeout_ms && waited > eng_config.timeout_ms * 1000000ull) {
            res = dfcclTimeout;
            eng_comm_why(c, 1,
                         "%s seq %llu timed out after %llu ms (DFCCL_TIMEOUT); the communicator is aborted",
                         name, seq, (unsigned long long)eng_config.timeout_ms);
        }
    }
    if (res == dfcclSuccess)
        return 0;
    /* the task's result is set before the abort, so that it reads res, not the
     * dfcclCommAborted of another worker that saw the abort in between */
    cpu_task_fail(t, res);
    dfccl_store_release(&c->aborted, res);
    cpu_trace_run(W, t, run_t0, ENG_TR_FAILED);
    cpu_part_finish(W, n, res);
    return 1;
}
