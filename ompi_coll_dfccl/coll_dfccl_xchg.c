/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component's own all-gather: a few bytes per rank over point-to-point messages
 * on a private tag, non-blocking, advanced from the progress callback.
 *
 * Why not the previous module's (i)allgather: a collective must be posted in the same
 * order on every rank relative to the communicator's other collectives, and the
 * engine communicator's set-up and coll_dfccl_check post theirs whenever a rank gets
 * there (ranks reach their first calls on different communicators in different
 * orders: the case dfccl exists for). Messages on a tag of their own match by
 * (source, tag, communicator) alone, whatever else the communicator carries.
 *
 * Bruck's dissemination: in round k (distance d = 2^k) a rank sends the first
 * min(d, n - d) blocks it holds to rank - d and receives as many from rank + d, so
 * after ceil(log2 n) rounds block i holds rank (rank + i) % n's contribution. Every
 * pair exchanges at most one message per all-gather, and messages between a pair
 * are not overtaking, so all-gathers on one (communicator, tag) run one after the
 * other without ambiguity; the callers never keep two in flight on one.
 *
 * A dead peer never sends, and Open MPI 4.1 fails no request for it: an exchange
 * stalled for LOOK_NS looks at its peers' processes every LOOK_NS (coll_dfccl_watch.c)
 * and ends with an error when one is gone; coll_dfccl_timeout, if set, ends it too.
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi/constants.h"
#include "ompi/mca/pml/pml.h"

#include "coll_dfccl.h"

/* a stalled exchange looks at its peers this often (as the engine's dead-peer watch) */
#define LOOK_NS 200000000LL

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int post_round(mca_coll_dfccl_xchg_t *x)
{
    const int d = x->dist, n = x->size;
    const int blocks = d < n - d ? d : n - d;
    const size_t len = (size_t)blocks * x->bytes;
    const int from = (x->rank + d) % n, to = (x->rank - d + n) % n;
    int rc = MCA_PML_CALL(
        irecv(x->buf + (size_t)d * x->bytes, (int)len, MPI_BYTE, from, x->tag, x->comm, &x->req[0]));
    if (rc != OMPI_SUCCESS) {
        x->req[0] = NULL;
        return rc;
    }
    rc = MCA_PML_CALL(
        isend(x->buf, (int)len, MPI_BYTE, to, x->tag, MCA_PML_BASE_SEND_STANDARD, x->comm, &x->req[1]));
    if (rc != OMPI_SUCCESS)
        x->req[1] = NULL;
    return rc;
}

/* A round that failed to post: its receive (if posted) is cancelled and freed; its
 * buffer stays allocated if a receive was posted (it might still land), else freed. */
static void abandon(mca_coll_dfccl_xchg_t *x)
{
    if (x->req[0]) {
        ompi_request_cancel(x->req[0]);
        ompi_request_free(&x->req[0]);
    } else {
        free(x->buf);
    }
    x->req[0] = x->req[1] = NULL;
    x->buf = NULL;
    x->dist = x->size;
}

int mca_coll_dfccl_xchg_start(mca_coll_dfccl_xchg_t *x, struct ompi_communicator_t *comm, int tag,
                              const void *mine, size_t bytes)
{
    memset(x, 0, sizeof(*x));
    x->comm = comm;
    x->tag = tag;
    x->rank = ompi_comm_rank(comm);
    x->size = ompi_comm_size(comm);
    x->bytes = bytes;
    x->dist = 1;
    x->lost_rank = x->lost_pid = -1;
    x->t_round = x->t_look = now_ns();
    if (!bytes || bytes > (size_t)INT_MAX / (size_t)x->size)
        return OMPI_ERR_BAD_PARAM;
    if (!(x->buf = malloc(bytes * (size_t)x->size)))
        return OMPI_ERR_OUT_OF_RESOURCE;
    memcpy(x->buf, mine, bytes);
    if (x->size == 1)
        return OMPI_SUCCESS; /* nothing to exchange: finished */
    int rc = post_round(x);
    if (rc != OMPI_SUCCESS)
        abandon(x);
    return rc;
}

/* End an exchange that will never finish: its receive cancelled; a send still in flight
 * keeps its buffer (a few bytes, left to the PML). */
static void give_up(mca_coll_dfccl_xchg_t *x)
{
    bool busy = false;
    for (int i = 0; i < 2; i++) {
        if (!x->req[i])
            continue;
        if (!REQUEST_COMPLETE(x->req[i])) {
            busy = true;
            if (i == 0)
                ompi_request_cancel(x->req[i]);
        }
        ompi_request_free(&x->req[i]);
        x->req[i] = NULL;
    }
    if (busy)
        x->buf = NULL;
    x->dist = x->size;
    x->rc = MPI_ERR_OTHER;
}

/* Nothing arrived this time: a dead peer, coll_dfccl_timeout, the stall report. True
 * when the exchange is over (failed). */
static bool stalled(mca_coll_dfccl_xchg_t *x)
{
    const mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    if (!x->watch)
        return false;
    const long long t = now_ns(), waited = t - x->t_round;
    if (waited < LOOK_NS || t - x->t_look < LOOK_NS)
        return false;
    x->t_look = t;
    int pid = -1;
    const int lost = mca_coll_dfccl_watch_lost(x->watch, x->comm, &pid);
    if (lost >= 0) {
        x->lost_rank = lost;
        x->lost_pid = pid;
        give_up(x);
        return true;
    }
    if (cm->xchg_timeout_ms > 0 && waited >= cm->xchg_timeout_ms * 1000000LL) {
        x->timed_out = true;
        x->awaited = (x->rank + x->dist) % x->size;
        give_up(x);
        return true;
    }
    if (cm->xchg_stall_ms > 0 && waited >= cm->xchg_stall_ms * 1000000LL && !x->stall_said) {
        x->stall_said = true;
        const int unseen = mca_coll_dfccl_watch_unseen(*x->watch);
        char others[96] = "";
        if (unseen)
            snprintf(others, sizeof others, "; %d can't be watched from here (other hosts or pid namespaces)",
                     unseen);
        DFCCL_WARN("%s on %s (cid %u, rank %d of %d) has waited %.1f s for rank %d's message; %d same-host "
                   "peers are alive%s (coll_dfccl_timeout ends the wait)",
                   x->what ? x->what : "exchange", x->comm->c_name, x->comm->c_contextid, x->rank, x->size,
                   (double)waited / 1e9, (x->rank + x->dist) % x->size, x->size - 1 - unseen, others);
    }
    return false;
}

bool mca_coll_dfccl_xchg_test(mca_coll_dfccl_xchg_t *x)
{
    while (x->dist < x->size) {
        for (int i = 0; i < 2; i++)
            if (x->req[i] && !REQUEST_COMPLETE(x->req[i]))
                return stalled(x);
        for (int i = 0; i < 2; i++) {
            if (!x->req[i])
                continue;
            if (x->req[i]->req_status.MPI_ERROR != MPI_SUCCESS && x->rc == OMPI_SUCCESS)
                x->rc = x->req[i]->req_status.MPI_ERROR;
            ompi_request_free(&x->req[i]);
            x->req[i] = NULL;
        }
        if (x->rc != OMPI_SUCCESS) {
            x->dist = x->size;
            break;
        }
        x->dist *= 2;
        x->t_round = x->t_look = now_ns();
        if (x->dist < x->size && (x->rc = post_round(x)) != OMPI_SUCCESS)
            abandon(x);
    }
    return true;
}

void mca_coll_dfccl_xchg_result(const mca_coll_dfccl_xchg_t *x, void *all)
{
    for (int i = 0; i < x->size && x->buf; i++)
        memcpy((char *)all + (size_t)((x->rank + i) % x->size) * x->bytes, x->buf + (size_t)i * x->bytes,
               x->bytes);
}

void mca_coll_dfccl_xchg_fini(mca_coll_dfccl_xchg_t *x)
{
    free(x->buf);
    x->buf = NULL;
}

void mca_coll_dfccl_xchg_why(const mca_coll_dfccl_xchg_t *x, char *buf, size_t len)
{
    if (x->lost_rank >= 0) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(x->comm, x->lost_rank);
        snprintf(buf, len, "rank %d of it (pid %d on %s) is gone", x->lost_rank, x->lost_pid,
                 proc ? opal_get_proc_hostname(&proc->super) : "this host");
    } else if (x->timed_out) {
        snprintf(buf, len, "rank %d's message did not come within coll_dfccl_timeout (%lld ms)", x->awaited,
                 mca_coll_dfccl_component.xchg_timeout_ms);
    } else {
        snprintf(buf, len, "MPI error %d", x->rc);
    }
}
