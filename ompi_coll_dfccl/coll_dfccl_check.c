/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_dfccl_check: the comparison of the records every rank passed for one call
 * (the exchange itself is the call's, in coll_dfccl_call.c). The first difference
 * fails the call on every rank; rank 0 says what differs. Also the names of the
 * collectives and paths that it and the verbose lines of the calls use.
 */
#include "ompi_config.h"

#include <stdio.h>

#include "ompi/constants.h"

#include "coll_dfccl.h"
#include "coll_dfccl_common.h"

const char *const mca_coll_dfccl_coll_names[] = {
    "?",         "Allreduce", "Reduce",  "Bcast",   "Allgather", "Reduce_scatter_block", "Reduce_scatter",
    "Alltoall",  "Gather",    "Gatherv", "Scatter", "Scatterv",  "Allgatherv",           "Alltoallv",
    "Alltoallw", "Scan",      "Exscan"};
const char *const mca_coll_dfccl_path_names[] = {"previous module", "engine",
                                                 "previous module (staged through host)"};

/* The MPI name of a call after "MPI_": Allreduce, Iallreduce (coll may come from a peer) */
void mca_coll_dfccl_call_name(char *buf, size_t len, int32_t coll, bool nonblocking)
{
    const char *base = mca_coll_dfccl_coll_names[(uint32_t)coll % MCA_COLL_DFCCL_NUM_COLLS];
    snprintf(buf, len, "%s%s", nonblocking ? "I" : "", base);
    if (nonblocking && buf[1])
        buf[1] = (char)(buf[1] - 'A' + 'a');
}

static const char *const kind_names[] = {"host", "device"};

int mca_coll_dfccl_check_compare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_check_t *all)
{
    const mca_coll_dfccl_check_t *r0 = &all[0];
    char what[256] = "";
    int bad = -1;
    for (int i = 1; i < m->size && bad < 0; i++) {
        const mca_coll_dfccl_check_t *ri = &all[i];
        bad = i;
        if (ri->coll != r0->coll || ri->nonblocking != r0->nonblocking)
            snprintf(
                what, sizeof(what), "rank %d called MPI_%s%s, rank 0 MPI_%s%s", i,
                ri->nonblocking ? "I-" : "", mca_coll_dfccl_coll_names[ri->coll % MCA_COLL_DFCCL_NUM_COLLS],
                r0->nonblocking ? "I-" : "", mca_coll_dfccl_coll_names[r0->coll % MCA_COLL_DFCCL_NUM_COLLS]);
        else if (ri->bytes != r0->bytes)
            snprintf(what, sizeof(what),
                     "rank %d passed %lld bytes, rank 0 %lld bytes (count or datatype differ)", i,
                     (long long)ri->bytes, (long long)r0->bytes);
        else if (ri->types != r0->types)
            snprintf(what, sizeof(what),
                     "rank %d passed a datatype of other basic types than rank 0 (type map bits %#llx, rank "
                     "0 %#llx)",
                     i, (unsigned long long)ri->types, (unsigned long long)r0->types);
        else if (ri->kind != r0->kind && !r0->loose)
            snprintf(what, sizeof(what), "rank %d passed %s memory, rank 0 %s memory", i,
                     kind_names[ri->kind & 1], kind_names[r0->kind & 1]);
        else if (ri->counts_hash != r0->counts_hash)
            snprintf(what, sizeof(what), "rank %d passed other recvcounts than rank 0", i);
        else if (ri->loose != r0->loose)
            snprintf(what, sizeof(what), "rank %d and rank 0 disagree on the collective", i);
        else if (ri->root != r0->root)
            snprintf(what, sizeof(what), "rank %d passed root %d, rank 0 root %d", i, ri->root, r0->root);
        else if (ri->op != r0->op)
            snprintf(what, sizeof(what), "rank %d passed another op than rank 0", i);
        else if (ri->path != r0->path && !r0->loose)
            snprintf(what, sizeof(what),
                     "rank %d would run it on the %s path, rank 0 on the %s path "
                     "(datatypes differ)",
                     i, mca_coll_dfccl_path_names[ri->path % 3], mca_coll_dfccl_path_names[r0->path % 3]);
        else
            bad = -1;
    }
    if (bad < 0)
        return OMPI_SUCCESS;
    /* every rank saw the same table and fails the same way; one of them says why */
    if (m->rank == 0) {
        char name[32];
        mca_coll_dfccl_call_name(name, sizeof(name), r0->coll, r0->nonblocking);
        DFCCL_ERROR("coll_dfccl_check: MPI_%s on %s (cid %u): %s; returning MPI_ERR_ARG", name,
                    m->comm->c_name, m->comm->c_contextid, what);
    }
    return MPI_ERR_ARG;
}
