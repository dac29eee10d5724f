/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Blocking fallbacks for communicators with no previous module (dfccl the only coll
 * component): Open MPI's base algorithms that libmpi exports, chosen among those that use
 * point-to-point messages only (never the communicator's collectives, which are dfccl's
 * again) and that are right for any communicator size and for non-commutative ops:
 *   allgather, allgatherv   ring
 *   allreduce               recursive doubling (keeps the rank order of the operands)
 *   alltoall, alltoallv     pairwise (MPI_IN_PLACE through the base's in-place variant)
 *   barrier                 recursive doubling
 *   bcast                   binomial tree, unsegmented
 *   gather, scatter         linear
 *   reduce                  linear (folds in rank order)
 *   reduce_scatter(_block)  butterfly (Traff's, for any op); on one rank the schedule
 *   scan, exscan            recursive doubling
 * libmpi has no base algorithm for gatherv, scatterv and alltoallw: those run their
 * non-blocking schedule (coll_dfccl_nbsched.c) and wait for it.
 * reduce_local: Open MPI's op on host memory, device buffers staged through host copies.
 */
#include "ompi_config.h"

#include "ompi/constants.h"
#include "ompi/mca/coll/base/coll_base_functions.h"

#include "coll_dfccl.h"
#include "coll_dfccl_common.h"

/* the state Open MPI's base algorithms keep per module (cached trees, request arrays) */
OMPI_DECLSPEC extern opal_class_t mca_coll_base_comm_t_class;

int mca_coll_dfccl_fallback_base_data(mca_coll_dfccl_module_t *m)
{
    if (!m->super.base_data)
        m->super.base_data = (struct mca_coll_base_comm_t *)opal_obj_new(&mca_coll_base_comm_t_class);
    return m->super.base_data ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
}

static int fb_bcast(void *buf, int count, struct ompi_datatype_t *dt, int root,
                    struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return ompi_coll_base_bcast_intra_binomial(buf, count, dt, root, comm, module, 0);
}

/* the non-blocking schedule, waited for (the request read after the call that sets it) */
static int wait_for(int rc, ompi_request_t **req)
{
    if (rc != OMPI_SUCCESS)
        return rc;
    return ompi_request_wait(req, MPI_STATUS_IGNORE);
}

static int fb_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                      const int *rcounts, const int *displs, struct ompi_datatype_t *rdt, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    return wait_for(
        mca_coll_dfccl_fb_igatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm, &req, module),
        &req);
}

static int fb_scatterv(const void *sbuf, const int *scounts, const int *displs, struct ompi_datatype_t *sdt,
                       void *rbuf, int rcount, struct ompi_datatype_t *rdt, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    return wait_for(
        mca_coll_dfccl_fb_iscatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm, &req, module),
        &req);
}

static int fb_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                        struct ompi_datatype_t *const *sdts, void *rbuf, const int *rcounts,
                        const int *rdispls, struct ompi_datatype_t *const *rdts,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    return wait_for(mca_coll_dfccl_fb_ialltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts,
                                                 comm, &req, module),
                    &req);
}

/* the butterflies leave a one-rank communicator's receive buffer alone: the schedule copies */
static int fb_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dt,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    if (ompi_comm_size(comm) > 1)
        return ompi_coll_base_reduce_scatter_block_intra_butterfly(sbuf, rbuf, rcount, dt, op, comm, module);
    return wait_for(mca_coll_dfccl_fb_ireduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm, &req, module),
                    &req);
}

static int fb_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dt,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    if (ompi_comm_size(comm) > 1)
        return ompi_coll_base_reduce_scatter_intra_butterfly(sbuf, rbuf, rcounts, dt, op, comm, module);
    return wait_for(mca_coll_dfccl_fb_ireduce_scatter(sbuf, rbuf, rcounts, dt, op, comm, &req, module), &req);
}

static int fb_reduce_local(const void *inbuf, void *inoutbuf, int count, struct ompi_datatype_t *dt,
                           struct ompi_op_t *op, mca_coll_base_module_t *module)
{
    const mca_coll_dfccl_mem_t kin = mca_coll_dfccl_mem_kind(inbuf),
                               kinout = mca_coll_dfccl_mem_kind(inoutbuf);
    if (kin == MCA_COLL_DFCCL_MEM_HOST && kinout == MCA_COLL_DFCCL_MEM_HOST)
        return mca_coll_base_reduce_local(inbuf, inoutbuf, count, dt, op, module);
    /* Open MPI's ops run on the CPU: host copies of the span each buffer covers */
    mca_coll_dfccl_op_t o;
    mca_coll_dfccl_op_init(&o);
    ptrdiff_t lo;
    size_t len;
    void *hin = (void *)inbuf, *hinout = inoutbuf;
    mca_coll_dfccl_span(dt, (size_t)(count > 0 ? count : 0), &lo, &len);
    int rc = mca_coll_dfccl_view(&o, kinout, inoutbuf, lo, len, true, 0, len, &hinout);
    if (rc == OMPI_SUCCESS)
        rc = mca_coll_dfccl_view(&o, kin, inbuf, lo, len, true, 0, 0, &hin);
    if (rc == OMPI_SUCCESS)
        rc = mca_coll_base_reduce_local(hin, hinout, count, dt, op, module);
    return mca_coll_dfccl_op_finish(&o, rc);
}

const mca_coll_base_module_allgather_fn_t mca_coll_dfccl_fb_allgather = ompi_coll_base_allgather_intra_ring;
const mca_coll_base_module_allgatherv_fn_t mca_coll_dfccl_fb_allgatherv =
    ompi_coll_base_allgatherv_intra_ring;
const mca_coll_base_module_allreduce_fn_t mca_coll_dfccl_fb_allreduce =
    ompi_coll_base_allreduce_intra_recursivedoubling;
const mca_coll_base_module_alltoall_fn_t mca_coll_dfccl_fb_alltoall = ompi_coll_base_alltoall_intra_pairwise;
const mca_coll_base_module_alltoallv_fn_t mca_coll_dfccl_fb_alltoallv =
    ompi_coll_base_alltoallv_intra_pairwise;
const mca_coll_base_module_alltoallw_fn_t mca_coll_dfccl_fb_alltoallw = fb_alltoallw;
const mca_coll_base_module_barrier_fn_t mca_coll_dfccl_fb_barrier =
    ompi_coll_base_barrier_intra_recursivedoubling;
const mca_coll_base_module_bcast_fn_t mca_coll_dfccl_fb_bcast = fb_bcast;
const mca_coll_base_module_exscan_fn_t mca_coll_dfccl_fb_exscan =
    ompi_coll_base_exscan_intra_recursivedoubling;
const mca_coll_base_module_gather_fn_t mca_coll_dfccl_fb_gather = ompi_coll_base_gather_intra_basic_linear;
const mca_coll_base_module_gatherv_fn_t mca_coll_dfccl_fb_gatherv = fb_gatherv;
const mca_coll_base_module_reduce_fn_t mca_coll_dfccl_fb_reduce = ompi_coll_base_reduce_intra_basic_linear;
const mca_coll_base_module_reduce_scatter_block_fn_t mca_coll_dfccl_fb_reduce_scatter_block =
    fb_reduce_scatter_block;
const mca_coll_base_module_reduce_scatter_fn_t mca_coll_dfccl_fb_reduce_scatter = fb_reduce_scatter;
const mca_coll_base_module_scan_fn_t mca_coll_dfccl_fb_scan = ompi_coll_base_scan_intra_recursivedoubling;
const mca_coll_base_module_scatter_fn_t mca_coll_dfccl_fb_scatter = ompi_coll_base_scatter_intra_basic_linear;
const mca_coll_base_module_scatterv_fn_t mca_coll_dfccl_fb_scatterv = fb_scatterv;
const mca_coll_base_module_reduce_local_fn_t mca_coll_dfccl_fb_reduce_local = fb_reduce_local;

/* The persistent *_init slots no other component fills: the component's own
 * (coll_dfccl_persist.c). Returns how many. */
static int persist_slots(mca_coll_dfccl_module_t *m, struct ompi_communicator_t *comm)
{
    int filled = 0;
#define DFCCL_FILL_INIT(_api)                                                                                \
    if (!comm->c_coll->coll_##_api##_init || !comm->c_coll->coll_##_api##_init_module) {                     \
        m->super.coll_##_api##_init = mca_coll_dfccl_##_api##_init;                                          \
        filled++;                                                                                            \
    }
    DFCCL_FILL_INIT(allreduce)
    DFCCL_FILL_INIT(reduce)
    DFCCL_FILL_INIT(bcast)
    DFCCL_FILL_INIT(allgather)
    DFCCL_FILL_INIT(reduce_scatter_block)
    DFCCL_FILL_INIT(reduce_scatter)
    DFCCL_FILL_INIT(alltoall)
    DFCCL_FILL_INIT(gather)
    DFCCL_FILL_INIT(gatherv)
    DFCCL_FILL_INIT(scatter)
    DFCCL_FILL_INIT(scatterv)
    DFCCL_FILL_INIT(allgatherv)
    DFCCL_FILL_INIT(alltoallv)
    DFCCL_FILL_INIT(alltoallw)
    DFCCL_FILL_INIT(scan)
    DFCCL_FILL_INIT(exscan)
    DFCCL_FILL_INIT(barrier)
#undef DFCCL_FILL_INIT
    return filled;
}

int mca_coll_dfccl_fallback_slots(mca_coll_dfccl_module_t *m, struct ompi_communicator_t *comm)
{
    int filled = 0;
#define DFCCL_FILL(_api)                                                                                     \
    if (!comm->c_coll->coll_##_api || !comm->c_coll->coll_##_api##_module) {                                 \
        m->super.coll_##_api = mca_coll_dfccl_fb_##_api;                                                     \
        filled++;                                                                                            \
    }
    DFCCL_FILL(barrier)
    DFCCL_FILL(ibarrier)
    DFCCL_FILL(reduce_local)
#undef DFCCL_FILL
    return filled + persist_slots(m, comm);
}
