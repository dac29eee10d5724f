/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The life of one collective call, shared by every collective: the path, the
 * optional cross-rank check, waiting for the engine communicator, starting, and the
 * blocking and non-blocking drivers. Each coll_dfccl_<coll>.c supplies a descriptor
 * (prepare, start, previous) and two one-line entry points.
 *
 * A call that can't start at once waits in its module's queue, in call order:
 *   - an engine call while the engine communicator is being set up;
 *   - with coll_dfccl_check, every call until its record has been compared with every
 *     rank's (one private all-gather per call, one at a time per communicator);
 *   - an engine call behind another waiting one (engine calls on a communicator start
 *     in call order: that is how every rank numbers them alike).
 * Nothing in here blocks on another rank: the queue moves from the progress callback,
 * so ranks may reach their calls on different communicators in any order.
 *
 * Calls on the previous path never wait for the set-up: posted at call time, they
 * reach the previous module in the same order on every rank relative to the
 * communicator's other collectives. With coll_dfccl_check a non-blocking one is posted
 * at once too and its check runs alongside; a blocking one waits for its check.
 */
#include "ompi_config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

#include "coll_dfccl.h"
#include "coll_dfccl_common.h"

/* The path of a call whose engine communicator could not be created. */
static mca_coll_dfccl_path_t fallback_path(const mca_coll_dfccl_check_t *rec)
{
    return rec->kind == MCA_COLL_DFCCL_MEM_HOST ? MCA_COLL_DFCCL_PATH_PREVIOUS : MCA_COLL_DFCCL_PATH_STAGED;
}

/* Each kind of fallback is said once at warning level, so that a job that gets less of
 * dfccl than it expects can read why: device buffers staged (once per process), and
 * host buffers left to Open MPI (once per job, on the world's rank 0: every GPU job
 * takes that one). An engine set-up that failed is said where it fails (boot.c). */
static void note_fallback(const mca_coll_dfccl_module_t *m, const mca_coll_dfccl_check_t *rec,
                          mca_coll_dfccl_path_t path, bool engine_ok)
{
    static int said_staged, said_host;
    const mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    if (!rec->bytes)
        return;
    char name[40];
    if (path == MCA_COLL_DFCCL_PATH_STAGED && !__atomic_exchange_n(&said_staged, 1, __ATOMIC_RELAXED)) {
        mca_coll_dfccl_call_name(name, sizeof name, rec->coll, rec->nonblocking);
        const char *why = m->inter            ? "an intercommunicator"
                          : !engine_ok        ? (rec->op < 0 ? "a user-defined op"
                                                             : "a datatype or op without an engine equivalent, or "
                                                               "a non-contiguous datatype")
                          : cm->device_staged ? "coll_dfccl_device_staged=1"
                                              : "no engine communicator";
        DFCCL_WARN(
            "MPI_%s on device buffers of %s is staged through host memory for Open MPI's own "
            "algorithms (%s); later staged calls are not reported (coll_dfccl_verbose 3 names the path "
            "of every call)",
            name, m->comm->c_name, why);
    } else if (path == MCA_COLL_DFCCL_PATH_PREVIOUS && rec->kind == MCA_COLL_DFCCL_MEM_HOST &&
               !cm->host_buffers && ompi_comm_rank(&ompi_mpi_comm_world.comm) == 0 &&
               !__atomic_exchange_n(&said_host, 1, __ATOMIC_RELAXED)) {
        DFCCL_WARN(
            "host buffers go to Open MPI's own collectives (coll_dfccl_host_buffers 0, the default)%s; "
            "--mca coll_dfccl_host_buffers 1 runs them on dfccl's CPU daemon",
            mca_coll_dfccl_cuda_driver() ? ""
                                         : ", and with no CUDA driver on this node that is every "
                                           "collective: dfccl takes none here");
    }
}

/* The engine state, as the progress side last published it. */
static mca_coll_dfccl_engine_state_t engine_state(mca_coll_dfccl_module_t *m)
{
    return __atomic_load_n(&m->engine, __ATOMIC_ACQUIRE);
}

static void verbose_call(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_check_t *rec,
                         mca_coll_dfccl_path_t path, bool blocking, const char *when)
{
    char name[32];
    mca_coll_dfccl_call_name(name, sizeof(name), rec->coll, !blocking);
    DFCCL_VERBOSE(3, "MPI_%s on %s (cid %u, %d ranks): -> %s (%s memory, %lld bytes)%s", name,
                  m->comm->c_name, m->comm->c_contextid, m->size, mca_coll_dfccl_path_names[path],
                  rec->kind == MCA_COLL_DFCCL_MEM_HOST ? "host" : "device", (long long)rec->bytes, when);
}

/* An engine call on a communicator whose set-up lost a peer: it fails, as it would on
 * a live communicator with a dead peer (boot.c said why once; verbose 1 says each call). */
static int lost_error(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_check_t *rec, bool blocking)
{
    if (mca_coll_dfccl_component.verbose >= 1) {
        char name[32];
        mca_coll_dfccl_call_name(name, sizeof(name), rec->coll, !blocking);
        DFCCL_VERBOSE(1, "MPI_%s on %s (cid %u) fails: %s", name, m->comm->c_name, m->comm->c_contextid,
                      m->lost);
    }
    return MPI_ERR_OTHER;
}

/* An engine call that waited for the set-up, once it has ended (state): on the engine
 * communicator when it is live, the fallback path when the set-up failed, MPI_ERR_OTHER
 * when it lost a peer. */
static int engine_settled(mca_coll_dfccl_module_t *m, mca_coll_dfccl_engine_state_t state,
                          const mca_coll_dfccl_check_t *rec, mca_coll_dfccl_plan_t *plan, bool blocking)
{
    int rc = OMPI_SUCCESS;
    if (state == MCA_COLL_DFCCL_ENGINE_LIVE)
        plan->ecomm = m->ecomm;
    else if (state == MCA_COLL_DFCCL_ENGINE_LOST)
        rc = lost_error(m, rec, blocking);
    else
        plan->path = fallback_path(rec);
    if (mca_coll_dfccl_component.verbose >= 3)
        verbose_call(m, rec, plan->path, blocking, " after waiting");
    return rc;
}

/* An engine call that failed here before it reached the engine (rc: no memory for a
 * temporary or a request, a failed device copy) is refused to the peers, whose part of it
 * would otherwise wait for this rank's for ever; a call the engine refuses itself, it
 * describes itself. Made where the call would have been: the communicator's queue is
 * empty and its engine communicator live. The call's own buffers pick the daemon, as the
 * engine picks it (device buffers reach it as they are on a communicator with a GPU
 * part; none reach it in place of device ones there). no_request: what was missing was
 * the call's request. Returns rc. */
static int refuse_call(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_coll_desc_t *desc,
                       const mca_coll_dfccl_args_t *a, dfcclComm_t ecomm, bool nonblocking, int rc,
                       bool no_request)
{
    char name[32], why[160];
    mca_coll_dfccl_call_name(name, sizeof name, desc->coll, nonblocking);
    const char *what = no_request ? "no memory for its request"
                       : rc == MPI_ERR_NO_MEM || rc == OMPI_ERR_OUT_OF_RESOURCE
                           ? "no memory for a temporary buffer"
                       : rc == MPI_ERR_COUNT ? "a count too large for Open MPI's datatype engine"
                                             : "a device copy or a staging step failed";
    snprintf(why, sizeof why, "its MPI_%s failed before the engine call: %s", name, what);
    const dfcclResult_t res = dfcclCommRefuse(ecomm, a->sbuf == MPI_IN_PLACE ? NULL : a->sbuf, a->rbuf, why);
    DFCCL_VERBOSE(1, "MPI_%s on %s (cid %u) failed before the engine call (%s): %s", name, m->comm->c_name,
                  m->comm->c_contextid, what,
                  res == dfcclSuccess ? "refused to the peers" : dfcclGetLastError());
    return rc;
}

/* Start a call on the engine or staged path (a failure before the engine call refused). */
static int start_call(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_coll_desc_t *desc,
                      const mca_coll_dfccl_args_t *a, const mca_coll_dfccl_plan_t *plan, bool nonblocking,
                      mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const int rc = desc->start(m, a, plan, o, inner_p);
    if (rc == OMPI_SUCCESS || plan->path != MCA_COLL_DFCCL_PATH_ENGINE || o->reached)
        return rc;
    return refuse_call(m, desc, a, plan->ecomm, nonblocking, rc, false);
}

/* Start a request that waited: engine submission, or the previous module's
 * non-blocking call (on host copies for the staged path). */
static int start_waited(mca_coll_dfccl_req_t *req)
{
    mca_coll_dfccl_module_t *m = req->module;
    if (req->plan.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return req->desc->previous(m, &req->args, &req->op.inner);
    return start_call(m, req->desc, &req->args, &req->plan, !req->blocking, &req->op,
                      req->plan.path == MCA_COLL_DFCCL_PATH_STAGED ? &req->op.inner : NULL);
}

/* Advance the head's check; true when it is done (req->op.rc says how). */
static bool check_advance(mca_coll_dfccl_module_t *m, mca_coll_dfccl_req_t *req)
{
    if (!req->check) {
        /* out of memory is tried again at the next progress: a rank that left the
         * exchange would leave the others waiting in it, and pair their next ones wrongly */
        req->check = malloc(sizeof(*req->check));
        const int rc = req->check ? mca_coll_dfccl_xchg_start(req->check, m->comm, MCA_COLL_DFCCL_TAG_CHECK,
                                                              &req->rec, sizeof(req->rec))
                                  : OMPI_ERR_OUT_OF_RESOURCE;
        if (rc != OMPI_SUCCESS) {
            free(req->check);
            req->check = NULL;
            if (rc == OMPI_ERR_OUT_OF_RESOURCE)
                return false;
            req->op.rc = rc;
            req->checked = true;
            return true;
        }
        req->check->watch = &m->watch; /* a dead peer fails the call instead of a hang */
        req->check->what = "coll_dfccl_check's exchange";
    }
    if (!mca_coll_dfccl_xchg_test(req->check))
        return false;
    if (req->check->rc != OMPI_SUCCESS) {
        req->op.rc = req->check->rc;
        if (req->check->lost_rank >= 0 || req->check->timed_out) {
            char why[160];
            mca_coll_dfccl_xchg_why(req->check, why, sizeof why);
            DFCCL_ERROR("coll_dfccl_check on %s (cid %u): %s; the call fails with MPI_ERR_OTHER",
                        m->comm->c_name, m->comm->c_contextid, why);
        }
    } else {
        mca_coll_dfccl_check_t *all = malloc(sizeof(*all) * (size_t)m->size);
        if (!all) {
            return false; /* the exchange is done: its comparison is tried again */
        } else {
            mca_coll_dfccl_xchg_result(req->check, all);
            req->op.rc = mca_coll_dfccl_check_compare(m, all);
            free(all);
        }
    }
    mca_coll_dfccl_xchg_fini(req->check);
    free(req->check);
    req->check = NULL;
    req->checked = true;
    return true;
}

void mca_coll_dfccl_queue_advance(mca_coll_dfccl_module_t *m)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    for (;;) {
        OPAL_THREAD_LOCK(&cm->lock);
        mca_coll_dfccl_req_t *req = m->queue_head;
        OPAL_THREAD_UNLOCK(&cm->lock);
        if (!req)
            return;
        if (cm->check && !req->checked && !check_advance(m, req))
            return;
        if (req->op.rc == OMPI_SUCCESS && req->stage == MCA_COLL_DFCCL_REQ_QUEUED &&
            req->plan.path == MCA_COLL_DFCCL_PATH_ENGINE) {
            const mca_coll_dfccl_engine_state_t state = engine_state(m);
            if (state == MCA_COLL_DFCCL_ENGINE_SETUP)
                return; /* waits for the set-up, and so does everything behind it */
            req->op.rc = engine_settled(m, state, &req->rec, &req->plan, req->blocking);
        }
        /* started while still at the head: a call another thread issues meanwhile on
         * this communicator queues behind it instead of reaching the engine first */
        if (req->stand_in && req->op.rc == OMPI_SUCCESS && req->plan.path == MCA_COLL_DFCCL_PATH_ENGINE)
            refuse_call(m, req->desc, &req->args, req->plan.ecomm, true, MPI_ERR_NO_MEM, true);
        else if (!req->blocking && req->stage == MCA_COLL_DFCCL_REQ_QUEUED && req->op.rc == OMPI_SUCCESS)
            req->op.rc = start_waited(req);
        OPAL_THREAD_LOCK(&cm->lock);
        m->queue_head = req->queue_next;
        if (!m->queue_head)
            m->queue_tail = NULL;
        req->queue_next = NULL;
        const bool stand_in = req->stand_in;
        if (stand_in) { /* the spare again: its call failed when it was made */
            req->stand_in = false;
            m->spare_queued = false;
        }
        OPAL_THREAD_UNLOCK(&cm->lock);
        if (stand_in)
            continue;
        /* a blocking call's caller starts it (it may block: not in here); the progress
         * callback completes a non-blocking one (with op.rc set, at once) */
        __atomic_store_n(&req->stage, MCA_COLL_DFCCL_REQ_STARTED, __ATOMIC_RELEASE);
    }
}

/* Into the module's queue, and the module onto the component's list to advance. */
static void enqueue(mca_coll_dfccl_module_t *m, mca_coll_dfccl_req_t *req)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    OPAL_THREAD_LOCK(&cm->lock);
    req->queue_next = NULL;
    if (m->queue_tail)
        m->queue_tail->queue_next = req;
    else
        m->queue_head = req;
    m->queue_tail = req;
    mca_coll_dfccl_module_wait_locked(m);
    OPAL_THREAD_UNLOCK(&cm->lock);
}

/* Does anything wait in the queue of m? */
static bool queue_busy(mca_coll_dfccl_module_t *m)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    OPAL_THREAD_LOCK(&cm->lock);
    bool busy = m->queue_head != NULL;
    OPAL_THREAD_UNLOCK(&cm->lock);
    return busy;
}

/* An engine call that must wait but got no request to wait in (no memory): it waits
 * here instead, driving the queue, until the calls before it have started and the set-up
 * has ended. A blocking one then runs as an unqueued call does (its place among the
 * communicator's calls is the same: a blocking call's thread issues nothing meanwhile).
 * A non-blocking one comes here only when the module's spare is queued already or none
 * was taken (stand_in); this wait then depends on the peers (the set-up needs each
 * rank's first call on the communicator), which a non-blocking call should not: a last
 * resort. It has no request to return: it is refused to the peers in its place, whose
 * part would otherwise wait for it for ever, and fails here with MPI_ERR_NO_MEM; after a
 * failed set-up the previous module takes it, request and all. One checked by
 * coll_dfccl_check needs its request for the check's exchange, and a non-blocking one
 * staged for the previous module needs it for its host copies: those return
 * MPI_ERR_NO_MEM unrefused (a rank that skips a call of Open MPI's own leaves its peers
 * waiting the same way). */
static int run_unqueued(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_coll_desc_t *desc,
                        const mca_coll_dfccl_args_t *a, mca_coll_dfccl_plan_t *plan,
                        const mca_coll_dfccl_check_t *rec, ompi_request_t **request)
{
    mca_coll_dfccl_engine_state_t state = engine_state(m);
    while (queue_busy(m) || (state = engine_state(m)) == MCA_COLL_DFCCL_ENGINE_SETUP) {
        opal_progress();
        sched_yield(); /* the set-up thread may need this core */
    }
    const int rc = engine_settled(m, state, rec, plan, request == NULL);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (plan->path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return desc->previous(m, a, request);
    if (request)
        return plan->path == MCA_COLL_DFCCL_PATH_ENGINE
                   ? refuse_call(m, desc, a, plan->ecomm, true, MPI_ERR_NO_MEM, true)
                   : MPI_ERR_NO_MEM;
    MCA_COLL_DFCCL_RUN_BLOCKING(o, start_call(m, desc, a, plan, false, o, NULL));
}

/* A non-blocking engine call that must wait but got no request (no memory): the module's
 * spare takes its place in the queue and refuses it to the peers at its turn
 * (queue_advance), whose part would otherwise wait for it for ever, and the call fails
 * here at once with MPI_ERR_NO_MEM, as MPI asks of a non-blocking call: it must not wait
 * for the peers (the set-up waits for every rank's first call on the communicator). With
 * the spare in the queue already, or none taken, it waits in run_unqueued. */
static int stand_in(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_coll_desc_t *desc,
                    const mca_coll_dfccl_args_t *a, mca_coll_dfccl_plan_t *plan,
                    const mca_coll_dfccl_check_t *rec, ompi_request_t **request)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    mca_coll_dfccl_req_t *s = NULL;
    OPAL_THREAD_LOCK(&cm->lock);
    if (m->spare && !m->spare_queued) {
        s = m->spare;
        m->spare_queued = true;
    }
    OPAL_THREAD_UNLOCK(&cm->lock);
    if (!s)
        return run_unqueued(m, desc, a, plan, rec, request);
    s->desc = desc;
    s->args = *a;
    s->plan = *plan;
    s->rec = *rec;
    s->blocking = false;
    s->checked = true;
    s->stand_in = true;
    mca_coll_dfccl_op_init(&s->op);
    s->stage = MCA_COLL_DFCCL_REQ_QUEUED;
    if (cm->verbose >= 3)
        verbose_call(m, rec, plan->path, false, " (no memory for its request: refused in its turn)");
    enqueue(m, s);
    return MPI_ERR_NO_MEM;
}

int mca_coll_dfccl_call(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_coll_desc_t *desc,
                        const mca_coll_dfccl_args_t *a, ompi_request_t **request)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    const bool blocking = request == NULL;
    mca_coll_dfccl_check_t rec;
    mca_coll_dfccl_plan_t plan;
    memset(&rec, 0, sizeof(rec));
    memset(&plan, 0, sizeof(plan));
    rec.coll = desc->coll;
    rec.nonblocking = !blocking;

    /* intercommunicators: never the engine; device buffers staged for the others */
    const bool engine_ok = desc->prepare(m, a, &rec, &plan) && !m->inter;
    if (rec.bytes > 0) /* a call with data (v-calls record theirs in mca_coll_dfccl_kind_v) */
        m->last_kind = rec.kind;
    plan.path = mca_coll_dfccl_choose(m, (mca_coll_dfccl_mem_t)rec.kind, engine_ok);
    if (!engine_ok && rec.bytes && cm->verbose >= 5)
        DFCCL_VERBOSE(5, "MPI_%s on %s: not for the engine (%s)", mca_coll_dfccl_coll_names[rec.coll],
                      m->comm->c_name,
                      rec.op < 0 ? "user-defined op"
                                 : "datatype/op without an engine equivalent, or a non-contiguous datatype");
    rec.path = (int32_t)plan.path; /* before any fallback: what this rank's arguments ask for */
    mca_coll_dfccl_engine_state_t state = engine_state(m);
    if (plan.path == MCA_COLL_DFCCL_PATH_ENGINE) {
        if (state == MCA_COLL_DFCCL_ENGINE_NONE) {
            mca_coll_dfccl_engine_begin(m); /* the first engine call: the set-up starts */
            state = engine_state(m);
            if (!m->spare) /* while there is memory: see stand_in */
                m->spare = mca_coll_dfccl_req_get(m);
        }
        /* after a failed set-up the previous module runs it, in call order behind any
         * call still waiting (those fall back when they leave the queue) */
        if (state == MCA_COLL_DFCCL_ENGINE_FAILED && !queue_busy(m))
            plan.path = fallback_path(&rec);
        if (state == MCA_COLL_DFCCL_ENGINE_LOST && !queue_busy(m) && !cm->check)
            return lost_error(m, &rec, blocking);
    }
    note_fallback(m, &rec, plan.path, engine_ok);
    const bool wait = (cm->check && !m->inter) || (plan.path == MCA_COLL_DFCCL_PATH_ENGINE &&
                                                   (state != MCA_COLL_DFCCL_ENGINE_LIVE || queue_busy(m)));

    if (!wait) {
        if (cm->verbose >= 3)
            verbose_call(m, &rec, plan.path, blocking, "");
        if (plan.path == MCA_COLL_DFCCL_PATH_ENGINE)
            plan.ecomm = m->ecomm;
        if (plan.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
            return desc->previous(m, a, request);
        if (blocking)
            MCA_COLL_DFCCL_RUN_BLOCKING(o, start_call(m, desc, a, &plan, false, o, NULL));
        /* no request for it: refused to the peers like any failure before the engine call */
        MCA_COLL_DFCCL_RUN_NONBLOCKING(m, plan.path, request, o, inner_p,
                                       start_call(m, desc, a, &plan, true, o, inner_p),
                                       plan.path == MCA_COLL_DFCCL_PATH_ENGINE
                                           ? refuse_call(m, desc, a, plan.ecomm, true, MPI_ERR_NO_MEM, true)
                                           : MPI_ERR_NO_MEM);
    }

    /* it waits in the queue */
    mca_coll_dfccl_req_t *req = mca_coll_dfccl_req_get(m);
    if (!req && !cm->check && plan.path == MCA_COLL_DFCCL_PATH_ENGINE)
        return blocking ? run_unqueued(m, desc, a, &plan, &rec, NULL)
                        : stand_in(m, desc, a, &plan, &rec, request);
    if (!req) /* one whose check needs it: see run_unqueued */
        return MPI_ERR_NO_MEM;
    req->desc = desc;
    req->args = *a;
    req->plan = plan;
    req->rec = rec;
    req->blocking = blocking;
    req->checked = !cm->check || m->inter;
    req->stage = MCA_COLL_DFCCL_REQ_QUEUED;
    if (plan.path != MCA_COLL_DFCCL_PATH_ENGINE) {
        /* previous path with coll_dfccl_check: only the check waits */
        if (cm->verbose >= 3)
            verbose_call(m, &rec, plan.path, blocking, " (checked first)");
        if (!blocking) {
            int rc = start_waited(req);
            if (rc != OMPI_SUCCESS) {
                rc = mca_coll_dfccl_op_finish(&req->op, rc);
                mca_coll_dfccl_req_put(req);
                return rc;
            }
            req->stage = MCA_COLL_DFCCL_REQ_CHECKING;
        }
    } else if (cm->verbose >= 3) {
        verbose_call(m, &rec, plan.path, blocking,
                     state == MCA_COLL_DFCCL_ENGINE_SETUP ? " (waits for the engine communicator)"
                                                          : " (waits in the queue)");
    }
    if (!blocking) {
        mca_coll_dfccl_req_start(req); /* on the active list before the queue can start it */
        enqueue(m, req);
        *request = &req->super.super;
        return OMPI_SUCCESS;
    }

    /* blocking: wait for its turn (driving the queue), then run it here */
    enqueue(m, req);
    while (__atomic_load_n(&req->stage, __ATOMIC_ACQUIRE) == MCA_COLL_DFCCL_REQ_QUEUED) {
        opal_progress();
        if (engine_state(m) == MCA_COLL_DFCCL_ENGINE_SETUP)
            sched_yield(); /* the set-up thread may need this core */
    }
    int rc = req->op.rc;
    plan = req->plan;
    mca_coll_dfccl_req_put(req);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (plan.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return desc->previous(m, a, NULL);
    MCA_COLL_DFCCL_RUN_BLOCKING(o, start_call(m, desc, a, &plan, false, o, NULL));
}
