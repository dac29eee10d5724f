/* SPDX-License-Identifier: BSD-3-Clause */
/* Inside the public collective calls: the argument checks (api_check.c) and the requests
 * (api_request.c) that the collective submission (api.c) uses. Not installed. */
#ifndef DFCCL_ENG_API_H
#define DFCCL_ENG_API_H

#include <stddef.h>
#include <stdint.h>

#include "dfccl.h"
#include "eng_comm.h"
#include "eng_types.h"

/* What a v- or w-collective's caller passed: counts and displacements in elements of
 * the datatype (w: per-peer types, displacements in bytes). NULL arrays are the side a
 * rank does not use. */
typedef struct {
    const void *sendbuf;
    void *recvbuf;
    size_t sendcount, recvcount; /* gatherv / allgatherv: sendcount; scatterv: recvcount */
    const size_t *scounts, *sdispls, *rcounts, *rdispls;
    const dfcclDataType_t *stypes, *rtypes; /* alltoallw */
    dfcclDataType_t datatype;
    dfcclRedOp_t op; /* reduce_scatterv */
    int root;
} eng_vargs_t;

/* ---- argument checks (api_check.c) ---------------------------------------------------- */
int eng_api_overlaps(const void *a, size_t alen, const void *b, size_t blen);
int eng_api_range_mapped(const void *p, size_t len);
dfcclResult_t eng_api_overlap_error(const char *fn, const char *msg, size_t count, size_t ts,
                                    const void *sendbuf, size_t sbytes, const void *recvbuf, size_t rbytes);
dfcclResult_t eng_api_open_call(const char *fn, dfcclComm_t handle, dfcclRequest_t *request_p,
                                struct dfccl_comm **comm_p);
dfcclResult_t eng_api_aborted_error(const char *fn, const struct dfccl_comm *comm);
dfcclResult_t eng_api_kind_error(const char *fn, const struct dfccl_comm *comm, int on_gpu, int mixed);
int eng_api_type_ok(dfcclDataType_t t);
dfcclResult_t eng_api_op_error(const char *fn, dfcclDataType_t datatype, dfcclRedOp_t op);
dfcclResult_t eng_api_build_blocks(const char *fn, eng_coll_t coll, const eng_vargs_t *v, int N, int me,
                                   eng_block_t *b);
void eng_api_table_span(const eng_block_t *b, int N, int recv, uint64_t *lo, uint64_t *hi);

/* ---- requests (api_request.c) --------------------------------------------------------- */
/* A new request and its handle, or NULL (no memory). */
struct dfccl_request *eng_request_new(uint64_t *handle);
/* Give back a request that was never handed to the caller. */
void eng_request_drop(struct dfccl_request *req);

#endif
