/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: one collective to completion, through the dfccl call or
 * (-A mpi) the blocking MPI one on the same buffers. */
#include "dfccl_bench_call.h"

static void submit(const struct opts *o, dfcclComm_t comm, const void *sendbuf, void *recvbuf, size_t count,
                   dfcclRequest_t *req)
{
    dfcclResult_t r;
    switch (o->coll) {
    case C_ALLREDUCE: r = dfcclAllReduce(sendbuf, recvbuf, count, o->type, o->op, comm, req); break;
    case C_REDUCE_SCATTER: r = dfcclReduceScatter(sendbuf, recvbuf, count, o->type, o->op, comm, req); break;
    case C_ALLGATHER: r = dfcclAllGather(sendbuf, recvbuf, count, o->type, comm, req); break;
    case C_BCAST: r = dfcclBroadcast(sendbuf, recvbuf, count, o->type, o->root, comm, req); break;
    case C_REDUCE: r = dfcclReduce(sendbuf, recvbuf, count, o->type, o->op, o->root, comm, req); break;
    case C_ALLTOALL:
    default: r = dfcclAllToAll(sendbuf, recvbuf, count, o->type, comm, req); break;
    }
    if (r != dfcclSuccess)
        bench_die("submitting %s of %zu x %s failed: %s (%d): %s", bench_coll_names[o->coll], count,
                  bench_type_names[o->type], dfcclGetErrorString(r), (int)r, dfcclGetLastError());
}

static void wait_req(const struct opts *o, dfcclRequest_t *req, size_t count)
{
    dfcclResult_t r = dfcclWait(req);
    if (r != dfcclSuccess)
        bench_die("%s of %zu x %s completed with an error: %s (%d): %s", bench_coll_names[o->coll], count,
                  bench_type_names[o->type], dfcclGetErrorString(r), (int)r, dfcclGetLastError());
}

const char *const bench_mpi_names[C_NUM] = {
    "MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Allgather", "MPI_Bcast", "MPI_Reduce", "MPI_Alltoall",
};

/* One blocking MPI collective on the benchmark's MPI communicator (errors returned).
 * In place: MPI_IN_PLACE, with the data where MPI wants it (pass_bufs in dfccl_bench_measure.c). */
static void mpi_call(const struct opts *o, MPI_Comm mc, const void *s, void *r, size_t count, int inplace)
{
    const MPI_Datatype dt = dfcclMpiDatatype(o->type);
    const MPI_Op op = dfcclMpiOp(o->op);
    const int n = (int)count; /* check_opts keeps count <= INT_MAX */
    const void *src = inplace ? MPI_IN_PLACE : s;
    int rc;
    switch (o->coll) {
    case C_ALLREDUCE: rc = MPI_Allreduce(src, r, n, dt, op, mc); break;
    case C_REDUCE_SCATTER: rc = MPI_Reduce_scatter_block(src, r, n, dt, op, mc); break;
    case C_ALLGATHER:
        rc = inplace ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, dt, mc)
                     : MPI_Allgather(s, n, dt, r, n, dt, mc);
        break;
    case C_BCAST: rc = MPI_Bcast(bench_rank == o->root ? (void *)s : r, n, dt, o->root, mc); break;
    case C_REDUCE: /* MPI_IN_PLACE is the root's alone; the others send from their buffer */
        rc = MPI_Reduce(inplace && bench_rank == o->root ? MPI_IN_PLACE : s, r, n, dt, op, o->root, mc);
        break;
    case C_ALLTOALL:
    default:
        rc = inplace ? MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, dt, mc)
                     : MPI_Alltoall(s, n, dt, r, n, dt, mc);
        break;
    }
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        bench_die("%s of %zu x %s%s failed: %s", bench_mpi_names[o->coll], count, bench_type_names[o->type],
                  inplace ? " (MPI_IN_PLACE)" : "", msg);
    }
}

/* One collective to completion. */
void bench_run_coll(const struct opts *o, const struct target *t, const char *s, char *r, size_t count,
                    int inplace)
{
    if (o->api == API_MPI) {
        mpi_call(o, t->mc, s, r, count, inplace);
        return;
    }
    dfcclRequest_t req = NULL;
    submit(o, t->comm, s, r, count, &req);
    wait_req(o, &req, count);
}
