/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Non-blocking fallbacks for communicators with no previous module (dfccl the only coll
 * component): every MPI_I* collective as one round of point-to-point messages on
 * MCA_COLL_DFCCL_TAG_SCHED, all posted at the call (receives first), completed by the
 * component's progress callback; reductions fold the contributions in rank order at
 * completion, so user-defined and non-commutative ops come out right.
 *
 * One round only, every message posted at the call: messages of one tag between two ranks
 * match in posting order, so successive collectives on a communicator never take each
 * other's messages. For the same reason a message between two ranks exists whenever the
 * collective has one between them, even of zero bytes: both sides decide it alike.
 * A rank's own block travels as a message to itself (the PML copies it, whatever the
 * two datatypes).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "ompi/mca/coll/base/coll_base_functions.h"
#include "ompi/mca/pml/pml.h"

#include "coll_dfccl.h"
#include "coll_dfccl_common.h"

typedef struct mca_coll_dfccl_sched_t {
    int nreq, done; /**< posted requests; the first `done` are complete */
    ompi_request_t **reqs;
    char *tmp; /**< temporaries: contributions, in-place snapshots */
    int rc;    /**< a failure to post: what the request ends with */
    /* reductions: result = part[0] op part[1] op ... op part[nparts - 1] */
    int nparts;
    char *parts; /**< part i at parts + i * part_len (offset by the datatype's lower bound) */
    size_t part_len;
    void *result;
    int count;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    mca_coll_base_module_t *module;
} mca_coll_dfccl_sched_t;

static mca_coll_dfccl_sched_t *sched_new(int maxreq)
{
    mca_coll_dfccl_sched_t *s =
        calloc(1, sizeof(*s) + sizeof(ompi_request_t *) * (size_t)(maxreq ? maxreq : 1));
    if (s)
        s->reqs = (ompi_request_t **)(s + 1);
    return s;
}

static void sched_recv(mca_coll_dfccl_sched_t *s, struct ompi_communicator_t *comm, void *buf, int count,
                       struct ompi_datatype_t *dt, int peer)
{
    if (s->rc != OMPI_SUCCESS)
        return;
    s->rc = MCA_PML_CALL(irecv(buf, count, dt, peer, MCA_COLL_DFCCL_TAG_SCHED, comm, &s->reqs[s->nreq]));
    if (s->rc == OMPI_SUCCESS)
        s->nreq++;
}

static void sched_send(mca_coll_dfccl_sched_t *s, struct ompi_communicator_t *comm, const void *buf,
                       int count, struct ompi_datatype_t *dt, int peer)
{
    if (s->rc != OMPI_SUCCESS)
        return;
    s->rc = MCA_PML_CALL(isend(buf, count, dt, peer, MCA_COLL_DFCCL_TAG_SCHED, MCA_PML_BASE_SEND_STANDARD,
                               comm, &s->reqs[s->nreq]));
    if (s->rc == OMPI_SUCCESS)
        s->nreq++;
}

/* Room for nparts contributions of count elements of dt; receive buffers for them. */
static int sched_parts(mca_coll_dfccl_sched_t *s, int nparts, int count, struct ompi_datatype_t *dt,
                       struct ompi_op_t *op, void *result, mca_coll_base_module_t *module)
{
    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(dt, (size_t)(count > 0 ? count : 0), &lo, &len);
    s->count = count;
    s->dtype = dt;
    s->op = op;
    s->result = result;
    s->module = module;
    s->part_len = len;
    s->nparts = len ? nparts : 0;
    if (!s->nparts)
        return OMPI_SUCCESS;
    s->tmp = malloc(len * (size_t)nparts);
    if (!s->tmp)
        return OMPI_ERR_OUT_OF_RESOURCE;
    s->parts = s->tmp - lo;
    return OMPI_SUCCESS;
}

static void *part(mca_coll_dfccl_sched_t *s, int i)
{
    return s->parts + (size_t)i * s->part_len;
}

bool mca_coll_dfccl_sched_test(mca_coll_dfccl_sched_t *s)
{
    while (s->done < s->nreq && REQUEST_COMPLETE(s->reqs[s->done]))
        s->done++;
    return s->done == s->nreq;
}

int mca_coll_dfccl_sched_finish(mca_coll_dfccl_sched_t *s, int rc)
{
    if (rc == OMPI_SUCCESS)
        rc = s->rc;
    for (int i = 0; i < s->nreq; i++) {
        if (rc == OMPI_SUCCESS && s->reqs[i]->req_status.MPI_ERROR != OMPI_SUCCESS)
            rc = s->reqs[i]->req_status.MPI_ERROR;
        ompi_request_free(&s->reqs[i]);
    }
    if (rc == OMPI_SUCCESS && s->nparts) {
        /* right to left: part[i] op (part[i+1] op ...), the rank order MPI defines */
        for (int i = s->nparts - 2; i >= 0 && rc == OMPI_SUCCESS; i--)
            rc = mca_coll_base_reduce_local(part(s, i), part(s, s->nparts - 1), s->count, s->dtype, s->op,
                                            s->module);
        if (rc == OMPI_SUCCESS)
            rc = ompi_datatype_copy_content_same_ddt(s->dtype, (size_t)s->count, s->result,
                                                     part(s, s->nparts - 1));
    }
    free(s->tmp);
    free(s);
    return rc;
}

/* Hand a schedule to the progress callback as the request of the call. A failure to post
 * (s->rc) completes it with that error once what was posted is done. */
static int sched_launch(mca_coll_base_module_t *module, mca_coll_dfccl_sched_t *s, ompi_request_t **request)
{
    mca_coll_dfccl_req_t *req = mca_coll_dfccl_req_get((mca_coll_dfccl_module_t *)module);
    if (!req) {
        if (s->nreq) /* posted messages can't be taken back: wait them out */
            ompi_request_wait_all((size_t)s->nreq, s->reqs, MPI_STATUSES_IGNORE);
        mca_coll_dfccl_sched_finish(s, OMPI_ERR_OUT_OF_RESOURCE);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->sched = s;
    mca_coll_dfccl_req_start(req);
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

/* Failure before anything was posted. */
static int sched_abort(mca_coll_dfccl_sched_t *s, int rc)
{
    if (s)
        mca_coll_dfccl_sched_finish(s, OMPI_SUCCESS);
    return rc;
}

static ptrdiff_t extent_of(struct ompi_datatype_t *dt)
{
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dt, &lb, &extent);
    return extent;
}

/* A host snapshot of the blocks a v-described buffer covers, for an in-place call that
 * sends what it also receives over: *view_p stands for @p buf. */
static int snapshot(mca_coll_dfccl_sched_t *s, const void *buf, int n, const int *counts, const int *displs,
                    bool displ_bytes, struct ompi_datatype_t *dtype, struct ompi_datatype_t *const *dtypes,
                    const char **view_p)
{
    ptrdiff_t lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    *view_p = buf;
    for (int i = 0; i < n; i++) {
        struct ompi_datatype_t *dt = dtypes ? dtypes[i] : dtype;
        ptrdiff_t blo;
        size_t blen;
        mca_coll_dfccl_span(dt, (size_t)(counts[i] > 0 ? counts[i] : 0), &blo, &blen);
        if (!blen)
            continue;
        const ptrdiff_t base = displ_bytes ? (ptrdiff_t)displs[i] : (ptrdiff_t)displs[i] * extent_of(dt);
        lo = base + blo < lo ? base + blo : lo;
        hi = base + blo + (ptrdiff_t)blen > hi ? base + blo + (ptrdiff_t)blen : hi;
    }
    if (lo >= hi)
        return OMPI_SUCCESS;
    s->tmp = malloc((size_t)(hi - lo));
    if (!s->tmp)
        return OMPI_ERR_OUT_OF_RESOURCE;
    memcpy(s->tmp, (const char *)buf + lo, (size_t)(hi - lo));
    *view_p = s->tmp - lo;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ data movement */

static int fb_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm), r = ompi_comm_rank(comm);
    mca_coll_dfccl_sched_t *s = sched_new(2 * n);
    if (!s)
        return OMPI_ERR_OUT_OF_RESOURCE;
    for (int p = 0; p < n; p++)
        if (p != r)
            sched_recv(s, comm, NULL, 0, MPI_BYTE, p);
    for (int p = 0; p < n; p++)
        if (p != r)
            sched_send(s, comm, NULL, 0, MPI_BYTE, p);
    return sched_launch(module, s, request);
}

static int fb_ibcast(void *buf, int count, struct ompi_datatype_t *dt, int root,
                     struct ompi_communicator_t *comm, ompi_request_t **request,
                     mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm), r = ompi_comm_rank(comm);
    mca_coll_dfccl_sched_t *s = sched_new(n);
    if (!s)
        return OMPI_ERR_OUT_OF_RESOURCE;
    if (r != root)
        sched_recv(s, comm, buf, count, dt, root);
    else
        for (int p = 0; p < n; p++)
            if (p != root)
                sched_send(s, comm, buf, count, dt, p);
    return sched_launch(module, s, request);
}

/* gather and gatherv: rcounts NULL is rcount for every rank, at p * rcount */
static int gather_common(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                         const int *rcounts, const int *displs, struct ompi_datatype_t *rdt, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm), r = ompi_comm_rank(comm);
    const bool in_place = sbuf == MPI_IN_PLACE;
    mca_coll_dfccl_sched_t *s = sched_new(n + 1);
    if (!s)
        return OMPI_ERR_OUT_OF_RESOURCE;
    if (r == root) {
        const ptrdiff_t ext = extent_of(rdt);
        for (int p = 0; p < n; p++) {
            if (p == root && in_place)
                continue;
            const int c = rcounts ? rcounts[p] : rcount;
            const ptrdiff_t d = rcounts ? (ptrdiff_t)displs[p] : (ptrdiff_t)p * rcount;
            sched_recv(s, comm, (char *)rbuf + d * ext, c, rdt, p);
        }
    }
    if (!(r == root && in_place))
        sched_send(s, comm, sbuf, scount, sdt, root);
    return sched_launch(module, s, request);
}

static int fb_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                      struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    return gather_common(sbuf, scount, sdt, rbuf, rcount, NULL, NULL, rdt, root, comm, request, module);
}

static int fb_igatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                       const int *rcounts, const int *displs, struct ompi_datatype_t *rdt, int root,
                       struct ompi_communicator_t *comm, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    return gather_common(sbuf, scount, sdt, rbuf, 0, rcounts, displs, rdt, root, comm, request, module);
}

/* scatter and scatterv: scounts NULL is scount for every rank, at p * scount */
static int scatter_common(const void *sbuf, int scount, const int *scounts, const int *displs,
                          struct ompi_datatype_t *sdt, void *rbuf, int rcount, struct ompi_datatype_t *rdt,
                          int root, struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm), r = ompi_comm_rank(comm);
    const bool in_place = rbuf == MPI_IN_PLACE;
    mca_coll_dfccl_sched_t *s = sched_new(n + 1);
    if (!s)
        return OMPI_ERR_OUT_OF_RESOURCE;
    if (!(r == root && in_place))
        sched_recv(s, comm, rbuf, rcount, rdt, root);
    if (r == root) {
        const ptrdiff_t ext = extent_of(sdt);
        for (int p = 0; p < n; p++) {
            if (p == root && in_place)
                continue;
            const int c = scounts ? scounts[p] : scount;
            const ptrdiff_t d = scounts ? (ptrdiff_t)displs[p] : (ptrdiff_t)p * scount;
            sched_send(s, comm, (const char *)sbuf + d * ext, c, sdt, p);
        }
    }
    return sched_launch(module, s, request);
}

static int fb_iscatter(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                       struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    return scatter_common(sbuf, scount, NULL, NULL, sdt, rbuf, rcount, rdt, root, comm, request, module);
}

static int fb_iscatterv(const void *sbuf, const int *scounts, const int *displs, struct ompi_datatype_t *sdt,
                        void *rbuf, int rcount, struct ompi_datatype_t *rdt, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    return scatter_common(sbuf, 0, scounts, displs, sdt, rbuf, rcount, rdt, root, comm, request, module);
}

/* allgather and allgatherv: rcounts NULL is rcount for every rank, at p * rcount. In place,
 * this rank's block is in rbuf already and goes out from there. */
static int allgather_common(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                            const int *rcounts, const int *displs, struct ompi_datatype_t *rdt,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm), r = ompi_comm_rank(comm);
    const bool in_place = sbuf == MPI_IN_PLACE;
    const ptrdiff_t ext = extent_of(rdt);
    mca_coll_dfccl_sched_t *s = sched_new(2 * n);
    if (!s)
        return OMPI_ERR_OUT_OF_RESOURCE;
#define BLOCK(_p) ((char *)rbuf + (rcounts ? (ptrdiff_t)displs[_p] : (ptrdiff_t)(_p)*rcount) * ext)
#define COUNT(_p) (rcounts ? rcounts[_p] : rcount)
    for (int p = 0; p < n; p++)
        if (!(p == r && in_place))
            sched_recv(s, comm, BLOCK(p), COUNT(p), rdt, p);
    for (int p = 0; p < n; p++) {
        if (in_place && p != r)
            sched_send(s, comm, BLOCK(r), COUNT(r), rdt, p);
        else if (!in_place)
            sched_send(s, comm, sbuf, scount, sdt, p);
    }
#undef BLOCK
#undef COUNT
    return sched_launch(module, s, request);
}

static int fb_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    return allgather_common(sbuf, scount, sdt, rbuf, rcount, NULL, NULL, rdt, comm, request, module);
}

static int fb_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                          const int *rcounts, const int *displs, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    return allgather_common(sbuf, scount, sdt, rbuf, 0, rcounts, displs, rdt, comm, request, module);
}

/* alltoall, alltoallv, alltoallw as one: counts, displacements (bytes for w) and datatypes
 * per peer. In place, the data to send is a snapshot of the receive buffer. */
static int alltoall_common(const void *sbuf, const int *scounts, const int *sdispls, bool sbytes,
                           struct ompi_datatype_t *sdt, struct ompi_datatype_t *const *sdts, void *rbuf,
                           const int *rcounts, const int *rdispls, bool rbytes, struct ompi_datatype_t *rdt,
                           struct ompi_datatype_t *const *rdts, struct ompi_communicator_t *comm,
                           ompi_request_t **request, mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm);
    mca_coll_dfccl_sched_t *s = sched_new(2 * n);
    if (!s)
        return OMPI_ERR_OUT_OF_RESOURCE;
    const char *src = sbuf;
    if (sbuf == MPI_IN_PLACE) {
        int rc = snapshot(s, rbuf, n, rcounts, rdispls, rbytes, rdt, rdts, &src);
        if (rc != OMPI_SUCCESS)
            return sched_abort(s, rc);
        scounts = rcounts, sdispls = rdispls, sbytes = rbytes, sdt = rdt, sdts = rdts;
    }
    for (int p = 0; p < n; p++) {
        struct ompi_datatype_t *dt = rdts ? rdts[p] : rdt;
        const ptrdiff_t d = rbytes ? (ptrdiff_t)rdispls[p] : (ptrdiff_t)rdispls[p] * extent_of(dt);
        sched_recv(s, comm, (char *)rbuf + d, rcounts[p], dt, p);
    }
    for (int p = 0; p < n; p++) {
        struct ompi_datatype_t *dt = sdts ? sdts[p] : sdt;
        const ptrdiff_t d = sbytes ? (ptrdiff_t)sdispls[p] : (ptrdiff_t)sdispls[p] * extent_of(dt);
        sched_send(s, comm, src + d, scounts[p], dt, p);
    }
    return sched_launch(module, s, request);
}

static int fb_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                        struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm);
    int *v = malloc(sizeof(int) * 4 * (size_t)n);
    if (!v)
        return OMPI_ERR_OUT_OF_RESOURCE;
    for (int p = 0; p < n; p++) {
        v[p] = scount, v[n + p] = p * scount;
        v[2 * n + p] = rcount, v[3 * n + p] = p * rcount;
    }
    /* the arrays are read at the call only: every message is posted by then */
    int rc = alltoall_common(sbuf, v, v + n, false, sdt, NULL, rbuf, v + 2 * n, v + 3 * n, false, rdt, NULL,
                             comm, request, module);
    free(v);
    return rc;
}

static int fb_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *sdt, void *rbuf, const int *rcounts, const int *rdispls,
                         struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    return alltoall_common(sbuf, scounts, sdispls, false, sdt, NULL, rbuf, rcounts, rdispls, false, rdt, NULL,
                           comm, request, module);
}

static int fb_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *const *sdts, void *rbuf, const int *rcounts,
                         const int *rdispls, struct ompi_datatype_t *const *rdts,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    return alltoall_common(sbuf, scounts, sdispls, true, NULL, sdts, rbuf, rcounts, rdispls, true, NULL, rdts,
                           comm, request, module);
}

/* ------------------------------------------------------------------ reductions */

/* Rank r receives the contributions of ranks [0, nparts) (its own through a message to
 * itself) and sends its own to every rank in [first_to, last_to): reduce, allreduce, scan
 * and exscan. @p src is the contribution (the receive buffer in place). */
static int reduce_common(const void *src, void *result, int count, struct ompi_datatype_t *dt,
                         struct ompi_op_t *op, int nparts, int first_to, int last_to,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm);
    mca_coll_dfccl_sched_t *s = sched_new(2 * n);
    if (!s)
        return OMPI_ERR_OUT_OF_RESOURCE;
    int rc = sched_parts(s, nparts, count, dt, op, result, module);
    if (rc != OMPI_SUCCESS)
        return sched_abort(s, rc);
    for (int p = 0; p < nparts; p++)
        sched_recv(s, comm, s->nparts ? part(s, p) : NULL, count, dt, p);
    for (int p = first_to; p < last_to; p++)
        sched_send(s, comm, src, count, dt, p);
    return sched_launch(module, s, request);
}

static int fb_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dt,
                      struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm), r = ompi_comm_rank(comm);
    const void *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    return reduce_common(src, rbuf, count, dt, op, r == root ? n : 0, root, root + 1, comm, request, module);
}

static int fb_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dt,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm);
    const void *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    return reduce_common(src, rbuf, count, dt, op, n, 0, n, comm, request, module);
}

static int fb_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dt, struct ompi_op_t *op,
                    struct ompi_communicator_t *comm, ompi_request_t **request,
                    mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm), r = ompi_comm_rank(comm);
    const void *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    return reduce_common(src, rbuf, count, dt, op, r + 1, r, n, comm, request, module);
}

static int fb_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dt,
                      struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                      mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm), r = ompi_comm_rank(comm);
    const void *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    /* rank 0's receive buffer is undefined by MPI: left alone */
    return reduce_common(src, rbuf, count, dt, op, r, r + 1, n, comm, request, module);
}

/* reduce_scatter(_block): block p of every rank's input goes to rank p, which folds them */
static int reduce_scatter_common(const void *sbuf, void *rbuf, int rcount, const int *rcounts,
                                 struct ompi_datatype_t *dt, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    const int n = ompi_comm_size(comm), r = ompi_comm_rank(comm);
    const char *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    const ptrdiff_t ext = extent_of(dt);
    mca_coll_dfccl_sched_t *s = sched_new(2 * n);
    if (!s)
        return OMPI_ERR_OUT_OF_RESOURCE;
    const int mine = rcounts ? rcounts[r] : rcount;
    int rc = sched_parts(s, n, mine, dt, op, rbuf, module);
    if (rc != OMPI_SUCCESS)
        return sched_abort(s, rc);
    for (int p = 0; p < n; p++)
        sched_recv(s, comm, s->nparts ? part(s, p) : NULL, mine, dt, p);
    ptrdiff_t displ = 0;
    for (int p = 0; p < n; p++) {
        const int c = rcounts ? rcounts[p] : rcount;
        sched_send(s, comm, src + displ * ext, c, dt, p);
        displ += c;
    }
    return sched_launch(module, s, request);
}

static int fb_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dt,
                                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    return reduce_scatter_common(sbuf, rbuf, rcount, NULL, dt, op, comm, request, module);
}

static int fb_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dt,
                              struct ompi_op_t *op, struct ompi_communicator_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    return reduce_scatter_common(sbuf, rbuf, 0, rcounts, dt, op, comm, request, module);
}

const mca_coll_base_module_ibarrier_fn_t mca_coll_dfccl_fb_ibarrier = fb_ibarrier;
const mca_coll_base_module_ibcast_fn_t mca_coll_dfccl_fb_ibcast = fb_ibcast;
const mca_coll_base_module_igather_fn_t mca_coll_dfccl_fb_igather = fb_igather;
const mca_coll_base_module_igatherv_fn_t mca_coll_dfccl_fb_igatherv = fb_igatherv;
const mca_coll_base_module_iscatter_fn_t mca_coll_dfccl_fb_iscatter = fb_iscatter;
const mca_coll_base_module_iscatterv_fn_t mca_coll_dfccl_fb_iscatterv = fb_iscatterv;
const mca_coll_base_module_iallgather_fn_t mca_coll_dfccl_fb_iallgather = fb_iallgather;
const mca_coll_base_module_iallgatherv_fn_t mca_coll_dfccl_fb_iallgatherv = fb_iallgatherv;
const mca_coll_base_module_ialltoall_fn_t mca_coll_dfccl_fb_ialltoall = fb_ialltoall;
const mca_coll_base_module_ialltoallv_fn_t mca_coll_dfccl_fb_ialltoallv = fb_ialltoallv;
const mca_coll_base_module_ialltoallw_fn_t mca_coll_dfccl_fb_ialltoallw = fb_ialltoallw;
const mca_coll_base_module_ireduce_fn_t mca_coll_dfccl_fb_ireduce = fb_ireduce;
const mca_coll_base_module_iallreduce_fn_t mca_coll_dfccl_fb_iallreduce = fb_iallreduce;
const mca_coll_base_module_iscan_fn_t mca_coll_dfccl_fb_iscan = fb_iscan;
const mca_coll_base_module_iexscan_fn_t mca_coll_dfccl_fb_iexscan = fb_iexscan;
const mca_coll_base_module_ireduce_scatter_block_fn_t mca_coll_dfccl_fb_ireduce_scatter_block =
    fb_ireduce_scatter_block;
const mca_coll_base_module_ireduce_scatter_fn_t mca_coll_dfccl_fb_ireduce_scatter = fb_ireduce_scatter;
