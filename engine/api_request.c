/* SPDX-License-Identifier: BSD-3-Clause */
/* Requests of the public collective calls: test, wait, wait for all. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "eng_api.h"
#include "eng_atomic.h"
#include "eng_comm.h"
#include "eng_cpu.h"
#include "eng_gpu.h"
#include "eng_log.h"

/* Every request of the process: the caller holds a handle (eng_handle.h), so a copy of a
 * request already completed, or one waited on twice, is found stale instead of read
 * after its free. A slot's memory stays with the table (reused by later requests). */
static eng_htab_t eng_requests = ENG_HTAB_INITIALIZER(struct dfccl_request);

struct dfccl_request *eng_request_new(uint64_t *handle)
{
    return eng_handle_alloc(&eng_requests, handle);
}

void eng_request_drop(struct dfccl_request *req)
{
    eng_handle_free(&eng_requests, req);
}

/* A GPU collective waited on for a while: is a shared-memory peer dead? The GPU daemon
 * spins on its flags and cannot tell; the CPU daemon looks by itself (check_stall). */
static void gpu_watch_peers(struct dfccl_request *req)
{
    const uint64_t now = eng_now_ns();
    if (now - req->since_ns >= ENG_PEER_CHECK_NS && eng_comm_watch_peers(req->comm, req->gpu_seq, now) >= 0)
        eng_gpu->progress(); /* a daemon that quit on the stalled work comes back to fail it */
}

/* The request a caller's handle names, or NULL with the error set (what names it:
 * "*request_p", "requests[3]"). */
static struct dfccl_request *request_of(const char *fn, dfcclRequest_t handle, const char *what)
{
    struct dfccl_request *req = eng_handle_get(&eng_requests, (uintptr_t)handle);
    if (!req)
        eng_set_error(dfcclInvalidArgument, fn,
                      "%s (%p) is not a pending request: a copy of one that already completed (a "
                      "request is freed by the dfcclWait or dfcclTest that completes it), or not a request",
                      what, (void *)handle);
    return req;
}

static dfcclResult_t request_reap(struct dfccl_request *req, dfcclRequest_t *request_p)
{
    dfcclResult_t res = (dfcclResult_t)DFCCL_READ_ONCE(*req->result_p);
    if (req->gpu_id >= 0) {
        if (eng_trace_on)
            eng_trace_complete(&req->tkey, res);
        eng_gpu->release(req->gpu_id); /* DFCCL_TRACE: with a sample of the GPU's clock */
    }
    free(req->blocks);
    if (res < 0) { /* the daemon logged the details; the caller's thread gets the reason too */
        char why[sizeof(((struct dfccl_comm *)0)->why)];
        const int got = eng_comm_why_get(req->comm, why, sizeof why);
        eng_set_error(res, "dfcclWait", "the collective failed: %s%s%s", dfcclGetErrorString(res),
                      got ? ": " : "", got ? why : "");
    }
    eng_handle_free(&eng_requests, req);
    *request_p = NULL;
    return res;
}

dfcclResult_t dfcclTest(dfcclRequest_t *request_p, int *done_p)
{
    if (!request_p)
        return DFCCL_ARG_ERROR("request_p is NULL");
    if (!done_p)
        return DFCCL_ARG_ERROR("done_p is NULL");
    if (!*request_p) {
        *done_p = 1;
        return dfcclSuccess;
    }
    struct dfccl_request *req = request_of(__func__, *request_p, "*request_p");
    if (!req)
        return dfcclInvalidArgument;
    /* acquire: pairs with the daemon's release of the completion word */
    if (!dfccl_load_acquire32(req->done_p)) {
        if (req->gpu_id >= 0) {
            eng_gpu->progress(); /* relaunch a daemon that quit on stalled work */
            gpu_watch_peers(req);
        } else {
            eng_cpu->kick(req);
        }
        *done_p = 0;
        return dfcclSuccess;
    }
    *done_p = 1;
    return request_reap(req, request_p);
}

static dfcclResult_t wait_one(struct dfccl_request *req, dfcclRequest_t *request_p)
{
    if (req->gpu_id < 0) {
        eng_cpu->wait(req);
    } else {
        for (unsigned i = 0; !dfccl_load_acquire32(req->done_p); i++) {
            if (i % 64 == 63) {
                eng_gpu->progress();
                gpu_watch_peers(req);
            }
            if (i < 4096)
                dfccl_cpu_relax();
            else
                sched_yield();
        }
    }
    return request_reap(req, request_p);
}

dfcclResult_t dfcclWait(dfcclRequest_t *request_p)
{
    if (!request_p)
        return DFCCL_ARG_ERROR("request_p is NULL");
    if (!*request_p)
        return dfcclSuccess;
    struct dfccl_request *req = request_of(__func__, *request_p, "*request_p");
    return req ? wait_one(req, request_p) : dfcclInvalidArgument;
}

static int handle_cmp(const void *a, const void *b)
{
    const uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* Every request is checked before any is waited on: a stale one, or one named twice,
 * fails the call with nothing waited on (the second wait of a request would otherwise
 * find it completed and freed by the first). */
dfcclResult_t dfcclWaitAll(int n, dfcclRequest_t *requests)
{
    if (n < 0)
        return DFCCL_ARG_ERROR("n %d is negative", n);
    if (n > 0 && !requests)
        return DFCCL_ARG_ERROR("requests is NULL");
    char what[48];
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "requests[%d]", i);
        if (requests[i] && !request_of(__func__, requests[i], what))
            return dfcclInvalidArgument;
    }
    /* duplicates: pairwise for a few, else in a sorted copy */
    int dup_i = -1, dup_j = -1;
    if (n <= 32) {
        for (int j = 1; j < n && dup_i < 0; j++)
            for (int i = 0; i < j; i++)
                if (requests[j] && requests[i] == requests[j]) {
                    dup_i = i;
                    dup_j = j;
                    break;
                }
    } else {
        uintptr_t *s = malloc(sizeof(*s) * (size_t)n);
        if (!s)
            return eng_set_error(dfcclNoMemory, __func__, "no memory to check %d requests", n);
        for (int i = 0; i < n; i++)
            s[i] = (uintptr_t)requests[i];
        qsort(s, (size_t)n, sizeof(*s), handle_cmp);
        for (int k = 1; k < n && dup_i < 0; k++)
            if (s[k] && s[k] == s[k - 1])
                for (int i = 0; i < n; i++)
                    if ((uintptr_t)requests[i] == s[k]) {
                        if (dup_i < 0)
                            dup_i = i;
                        else {
                            dup_j = i;
                            break;
                        }
                    }
        free(s);
    }
    if (dup_i >= 0)
        return DFCCL_ARG_ERROR("requests[%d] and requests[%d] are the same request (%p): each is waited on "
                               "once; nothing was waited on",
                               dup_i, dup_j, (void *)requests[dup_i]);
    dfcclResult_t first = dfcclSuccess;
    for (int i = 0; i < n; i++) {
        struct dfccl_request *req = requests[i] ? request_of(__func__, requests[i], "requests[i]") : NULL;
        dfcclResult_t r = req ? wait_one(req, &requests[i]) : dfcclSuccess;
        if (r != dfcclSuccess && first == dfcclSuccess)
            first = r;
    }
    return first;
}
