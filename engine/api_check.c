/* SPDX-License-Identifier: BSD-3-Clause */
/* The public collective calls' argument checks: each error names its argument and leaves
 * every other collective untouched. */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "eng_api.h"
#include "eng_atomic.h"
#include "eng_comm.h"
#include "eng_log.h"
#include "reduce.h"

size_t dfcclTypeSize(dfcclDataType_t datatype)
{
    return eng_type_size((int)datatype);
}

int eng_api_overlaps(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return alen && blen && x < y + blen && y < x + alen;
}

/* Is [p, p + len) all mapped memory? (msync fails with ENOMEM over a hole.) Only on the
 * way to an error: a syscall. */
int eng_api_range_mapped(const void *p, size_t len)
{
    const uintptr_t pg = (uintptr_t)ENG_PAGE, a = (uintptr_t)p & ~(pg - 1);
    const uintptr_t end = (uintptr_t)p + len;
    if (!len)
        return 1;
    if (end < (uintptr_t)p)
        return 0;
    return msync((void *)a, end - a, MS_ASYNC) == 0 || errno != ENOMEM;
}

/* The buffers' ranges overlap: the reason, unless a count larger than the buffers is the
 * true one (2^40 elements reach from one buffer into any other; a range that is not all
 * mapped memory says so). */
dfcclResult_t eng_api_overlap_error(const char *fn, const char *msg, size_t count, size_t ts,
                                    const void *sendbuf, size_t sbytes, const void *recvbuf, size_t rbytes)
{
    const int s_ok = eng_api_range_mapped(sendbuf, sbytes),
              r_ok = s_ok && eng_api_range_mapped(recvbuf, rbytes);
    if (!s_ok || !r_ok)
        return eng_set_error(dfcclInvalidArgument, fn,
                             "count %zu is larger than %s: its %zu bytes (%zu-byte elements) from %p are not "
                             "all mapped memory",
                             count, !s_ok ? "sendbuf" : "recvbuf", !s_ok ? sbytes : rbytes, ts,
                             !s_ok ? sendbuf : (const void *)recvbuf);
    return eng_set_error(dfcclInvalidArgument, fn, "%s", msg);
}

/* The start of every collective's checks: a place for the request, a live communicator. */
dfcclResult_t eng_api_open_call(const char *fn, dfcclComm_t handle, dfcclRequest_t *request_p,
                                struct dfccl_comm **comm_p)
{
    *comm_p = eng_comm_get(handle);
    if (!request_p)
        return eng_set_error(dfcclInvalidArgument, fn, "request_p is NULL");
    *request_p = NULL;
    if (!*comm_p)
        return eng_set_error(dfcclInvalidArgument, fn, "comm is not a live communicator (NULL or destroyed)");
    return dfcclSuccess;
}

dfcclResult_t eng_api_aborted_error(const char *fn, const struct dfccl_comm *comm)
{
    if (!comm->aborted)
        return dfcclSuccess;
    const int why = dfccl_load_acquire32(&comm->why_state) == 2;
    return eng_set_error(dfcclCommAborted, fn, "communicator %016llx was aborted (%s)%s%s",
                         (unsigned long long)comm->uid, dfcclGetErrorString(comm->aborted), why ? ": " : "",
                         why ? comm->why : "");
}

/* The daemon the memory kind picks must exist, and both sides be of one kind (mixed:
 * sendbuf and recvbuf, both used, of different kinds). */
dfcclResult_t eng_api_kind_error(const char *fn, const struct dfccl_comm *comm, int on_gpu, int mixed)
{
    if (mixed)
        return eng_set_error(dfcclInvalidArgument, fn,
                             "sendbuf and recvbuf must both be host memory or both device memory");
    if (on_gpu && !comm->gpu)
        return eng_set_error(dfcclUnsupported, fn,
                             "device buffers on a communicator without a GPU part (no GPU backend, "
                             "DFCCL_GPU=0, or a rank without a usable GPU)");
    return dfcclSuccess;
}

int eng_api_type_ok(dfcclDataType_t t)
{
    return (int)t >= 0 && t < dfcclNumTypes;
}

/* A reduction's op: a dfcclRedOp_t, and one the datatype takes; dfcclSuccess or the
 * error naming it. */
dfcclResult_t eng_api_op_error(const char *fn, dfcclDataType_t datatype, dfcclRedOp_t op)
{
    if ((int)op < 0 || op >= dfcclNumOps)
        return eng_set_error(dfcclInvalidArgument, fn, "op %d is not a dfcclRedOp_t", (int)op);
    if (!eng_op_valid((int)datatype, (int)op))
        return eng_set_error(dfcclInvalidArgument, fn,
                             "op %s is not valid for datatype %s (bitwise ops take integer types)",
                             eng_op_name(op), eng_type_name(datatype));
    return dfcclSuccess;
}

/* elements * type size, or 0 with *ovf set when it does not fit */
static uint64_t mul_bytes(size_t n, size_t ts, int *ovf)
{
    if (ts && n > (SIZE_MAX >> 1) / ts)
        *ovf = 1;
    return (uint64_t)n * ts;
}

/* Build rank me's table for a v- or w-collective, checking every array it reads. */
dfcclResult_t eng_api_build_blocks(const char *fn, eng_coll_t coll, const eng_vargs_t *v, int N, int me,
                                   eng_block_t *b)
{
    const size_t ts = coll == ENG_COLL_ALLTOALLW ? 1 : eng_type_size((int)v->datatype);
    const int root_side = me == v->root;
    int ovf = 0;
    uint64_t at = 0; /* reduce_scatterv: where block p starts in sendbuf */
    for (int p = 0; p < N; p++) {
        eng_block_t *e = &b[p];
        *e = (eng_block_t){0, 0, 0, 0};
        switch (coll) {
        case ENG_COLL_GATHERV:
            if (p == v->root)
                e->sbytes = mul_bytes(v->sendcount, ts, &ovf);
            if (root_side) {
                e->rbytes = mul_bytes(v->rcounts[p], ts, &ovf);
                e->roff = mul_bytes(v->rdispls[p], ts, &ovf);
            }
            break;
        case ENG_COLL_SCATTERV:
            if (p == v->root)
                e->rbytes = mul_bytes(v->recvcount, ts, &ovf);
            if (root_side) {
                e->sbytes = mul_bytes(v->scounts[p], ts, &ovf);
                e->soff = mul_bytes(v->sdispls[p], ts, &ovf);
            }
            break;
        case ENG_COLL_ALLGATHERV:
            e->sbytes = mul_bytes(v->sendcount, ts, &ovf);
            e->rbytes = mul_bytes(v->rcounts[p], ts, &ovf);
            e->roff = mul_bytes(v->rdispls[p], ts, &ovf);
            break;
        case ENG_COLL_REDUCE_SCATTERV: /* block p of sendbuf to p; every block received lands
                                           on (is reduced into) recvbuf */
            e->sbytes = mul_bytes(v->rcounts[p], ts, &ovf);
            e->soff = at;
            e->rbytes = mul_bytes(v->rcounts[me], ts, &ovf);
            at = e->soff > (SIZE_MAX >> 1) - e->sbytes ? SIZE_MAX : e->soff + e->sbytes;
            break;
        case ENG_COLL_ALLTOALLV:
            e->sbytes = mul_bytes(v->scounts[p], ts, &ovf);
            e->soff = mul_bytes(v->sdispls[p], ts, &ovf);
            e->rbytes = mul_bytes(v->rcounts[p], ts, &ovf);
            e->roff = mul_bytes(v->rdispls[p], ts, &ovf);
            break;
        default: /* ENG_COLL_ALLTOALLW: displacements in bytes, a type per peer */
            if (!eng_api_type_ok(v->stypes[p]))
                return eng_set_error(dfcclInvalidArgument, fn, "sendtypes[%d] %d is not a dfcclDataType_t", p,
                                     (int)v->stypes[p]);
            if (!eng_api_type_ok(v->rtypes[p]))
                return eng_set_error(dfcclInvalidArgument, fn, "recvtypes[%d] %d is not a dfcclDataType_t", p,
                                     (int)v->rtypes[p]);
            e->sbytes = mul_bytes(v->scounts[p], eng_type_size((int)v->stypes[p]), &ovf);
            e->soff = v->sdispls[p];
            e->rbytes = mul_bytes(v->rcounts[p], eng_type_size((int)v->rtypes[p]), &ovf);
            e->roff = v->rdispls[p];
            break;
        }
        if (ovf || e->soff > (SIZE_MAX >> 1) - e->sbytes || e->roff > (SIZE_MAX >> 1) - e->rbytes)
            return eng_set_error(dfcclInvalidArgument, fn,
                                 "the counts or displacements for rank %d are too large", p);
    }
    return dfcclSuccess;
}

/* [lo, hi) bytes the table touches on one side; empty: lo == hi == 0 */
void eng_api_table_span(const eng_block_t *b, int N, int recv, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (int p = 0; p < N; p++) {
        const uint64_t off = recv ? b[p].roff : b[p].soff, n = recv ? b[p].rbytes : b[p].sbytes;
        if (!n)
            continue;
        *lo = DFCCL_MIN(*lo, off);
        *hi = off + n > *hi ? off + n : *hi;
    }
    if (*hi == 0)
        *lo = 0;
}
