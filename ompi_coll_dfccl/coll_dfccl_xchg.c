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
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "ompi/mca/pml/pml.h"

#include "coll_dfccl.h"

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

bool mca_coll_dfccl_xchg_test(mca_coll_dfccl_xchg_t *x)
{
    while (x->dist < x->size) {
        for (int i = 0; i < 2; i++)
            if (x->req[i] && !REQUEST_COMPLETE(x->req[i]))
                return false;
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
