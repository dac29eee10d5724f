/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dfccl-bench: an nccl-tests style benchmark for dfccl (installed as bin/dfccl-bench).
 *
 * Launch one process per rank with mpirun, e.g.
 *   mpirun -np 4 dfccl-bench -b 8 -e 64M -f 2 -k allreduce -d float -o sum
 *
 * Each size runs out of place and then in place (-I 0: out of place only), as
 * nccl-tests does; in place is where dfccl.h says the input sits inside the output
 * (alltoall has no in-place form: N/A).
 *
 * For each size the benchmark runs WARMUP untimed collectives, then ITERS timed
 * ones. Every timed iteration is: MPI_Barrier, t0 = MPI_Wtime, submit the
 * collective, dfcclWait, t1 = MPI_Wtime. The per-iteration time is the maximum
 * over ranks (MPI_Allreduce MAX); the time column is the median over the
 * iterations and the last column the minimum.
 *
 * With checking on (the default) the receive buffer is poisoned before every
 * timed iteration (outside the timed region) and compared afterwards with a
 * reference computed from the known rank/index dependent inputs. All inputs are
 * small integers, so sums, products, maxima and minima are exact in every type,
 * float16 and bfloat16 included. #wrong is the number of wrong elements summed
 * over ranks and iterations; the exit status is 1 when it is not zero anywhere.
 *
 * size is the total buffer size in bytes and count the count argument of the
 * dfccl call, as in nccl-tests (for allgather, reduce_scatter and alltoall that
 * is the per-rank block, and size = count * nranks * typesize).
 *
 * -B device puts the buffers in cudaMalloc memory (inputs and the check go through
 * host copies, outside the timed region); -A mpi times the MPI collective on the
 * same buffers instead of the dfccl call, so that one program compares dfccl, MPI
 * through the dfccl Open MPI component and plain MPI.
 *
 * The parts, each a .c with its .h: dfccl_bench_base (the options, the printed names,
 * the rank, the error exit), dfccl_bench_opts (the command line), dfccl_bench_mem (host
 * or CUDA buffers), dfccl_bench_data (inputs, references, geometry), dfccl_bench_call
 * (one collective), dfccl_bench_measure (one size's iterations), dfccl_bench_print (the
 * header and the rows); this file: main, every type, op, root and size.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dfccl_bench_call.h"
#include "dfccl_bench_data.h"
#include "dfccl_bench_measure.h"
#include "dfccl_bench_mem.h"
#include "dfccl_bench_opts.h"
#include "dfccl_bench_print.h"

/* Every size of one type, op and root. */
static void run_sizes(const struct opts *o, const struct target *tgt, char *sendbuf, char *recvbuf,
                      const struct scratch *h, uint64_t *total_wrong, double *bw_sum, int *bw_n)
{
    const size_t tsize = dfcclTypeSize(o->type);
    const char *redop = (o->coll == C_ALLREDUCE || o->coll == C_REDUCE_SCATTER || o->coll == C_REDUCE)
                            ? bench_op_names[o->op]
                            : "none";
    const int root = (o->coll == C_BCAST || o->coll == C_REDUCE) ? o->root : -1;
    for (size_t bytes = o->minbytes; bytes <= o->maxbytes;) {
        struct geom g = bench_geometry(o->coll, bytes, tsize);
        if (g.count == 0) {
            if (bench_rank == 0) /* a comment line in text; CSV and JSON rows stay alone on stdout */
                fprintf(o->format == FMT_TEXT ? stdout : stderr,
                        "# %zu B: fewer than one %s per rank, skipped\n", bytes, bench_type_names[o->type]);
        } else {
            int have_ref = o->check ? bench_fill_expected(o, h->expected, &g) : 0;
            struct pass op = bench_measure(o, tgt, &g, 0, sendbuf, recvbuf, have_ref, h);
            struct pass ip = {0};
            if (o->inplace)
                ip = bench_measure(o, tgt, &g, 1, sendbuf, recvbuf, have_ref, h);
            *total_wrong += op.wrong + ip.wrong;
            *bw_sum += (double)g.size_bytes / 1e9 / op.med * bench_bus_factor(o->coll, bench_nranks);
            ++*bw_n;
            if (bench_rank == 0)
                bench_print_row(o, &g, redop, root, &op, &ip);
        }
        if (o->factor) {
            if (bytes > o->maxbytes / o->factor)
                break;
            bytes *= o->factor;
        } else {
            if (bytes > o->maxbytes - o->stepbytes)
                break;
            bytes += o->stepbytes;
        }
    }
}

/* What -d all runs, one type after the other (-A mpi: the types MPI has); returns how
 * many, with the largest one's size in *tsize_p (the buffers fit every type). */
static int plan_types(const struct opts *o, dfcclDataType_t *types, size_t *tsize_p)
{
    int ntypes = 0;
    for (int t = 0; t < dfcclNumTypes; t++)
        if (o->all_types ? o->api != API_MPI || dfcclMpiDatatype((dfcclDataType_t)t) != MPI_DATATYPE_NULL
                         : t == (int)o->type)
            types[ntypes++] = (dfcclDataType_t)t;
    size_t tsize = 0;
    for (int i = 0; i < ntypes; i++)
        if (dfcclTypeSize(types[i]) > tsize)
            tsize = dfcclTypeSize(types[i]);
    if (tsize == 0)
        bench_die("dfcclTypeSize(%s) returned 0", bench_type_names[o->type]);
    *tsize_p = tsize;
    return ntypes;
}

/* -B device: 1 (the message printed) where the device buffers cannot be used, on every
 * rank; else 0 with rank 0's device described in device. */
static int device_refused(const struct opts *o, char *device, size_t len)
{
    if (o->mem != MEM_DEVICE)
        return 0;
    /* -A mpi with nothing in MPI that takes device pointers: refused rather than
     * crashing in Open MPI's host code. */
    if (o->api == API_MPI) {
        int unable = bench_component_loaded() == 0 && !bench_mpi_cuda_aware(), any;
        MPI_Allreduce(&unable, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            if (bench_rank == 0)
                fprintf(stderr,
                        "dfccl-bench: -B device -A mpi: Open MPI's coll component dfccl is not loaded and "
                        "this MPI is not CUDA-aware (it would read device buffers as host memory)\n");
            return 1;
        }
    }
    /* no usable GPU: one message (the lowest failing rank's), as for a bad option */
    char err[256] = "";
    int bad = bench_device_init(err, sizeof err, device, len) ? bench_rank : bench_nranks, first;
    MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first < bench_nranks) {
        if (bench_rank == first)
            fprintf(stderr, "dfccl-bench: rank %d: %s\n", bench_rank, err);
        return 1;
    }
    return 0;
}

/* The benchmark's buffers, sized for the largest step of every type, and the host
 * scratch; recvbuf zeroed. */
static void alloc_buffers(const struct opts *o, const dfcclDataType_t *types, int ntypes, size_t tsize,
                          void **sendbuf, void **recvbuf, struct scratch *h)
{
    size_t alloc_send = tsize, alloc_recv = tsize;
    for (int i = 0; i < ntypes; i++) {
        const size_t ts = dfcclTypeSize(types[i]);
        const struct geom gmax = bench_geometry(o->coll, o->maxbytes, ts);
        if (gmax.send_elems * ts > alloc_send)
            alloc_send = gmax.send_elems * ts;
        if (gmax.recv_elems * ts > alloc_recv)
            alloc_recv = gmax.recv_elems * ts;
    }
    const int dev = o->mem == MEM_DEVICE;
    *sendbuf = bench_buf_alloc(o->mem, alloc_send);
    *recvbuf = bench_buf_alloc(o->mem, alloc_recv);
    *h = (struct scratch){
        .send_img = dev ? malloc(alloc_send) : NULL,
        .recv_img = dev && o->check ? malloc(alloc_recv) : NULL,
        .expected = o->check ? malloc(alloc_recv) : NULL,
        .times = malloc(sizeof(double) * (size_t)(o->iters > 0 ? o->iters : 1)),
        .maxtimes = malloc(sizeof(double) * (size_t)(o->iters > 0 ? o->iters : 1)),
    };
    if (!*sendbuf || !*recvbuf || (dev && !h->send_img) || (dev && o->check && !h->recv_img) ||
        (o->check && !h->expected) || !h->times || !h->maxtimes)
        bench_die("out of memory allocating %zu + %zu bytes of %s memory", alloc_send, alloc_recv,
                  bench_mem_names[o->mem]);
    bench_buf_set(o->mem, *recvbuf, 0, alloc_recv);
}

static void free_buffers(const struct opts *o, void *sendbuf, void *recvbuf, struct scratch *h)
{
    bench_buf_free(o->mem, sendbuf);
    bench_buf_free(o->mem, recvbuf);
    free(h->send_img);
    free(h->recv_img);
    free(h->expected);
    free(h->times);
    free(h->maxtimes);
}

/* The closing lines (text) and, with -P, the dfccl statistics summed over ranks. */
static void print_totals(const struct opts *o, const struct target *tgt, uint64_t total_wrong, double bw_sum,
                         int bw_n)
{
    if (bench_rank == 0 && o->format == FMT_TEXT) {
        if (o->check)
            printf("# Out of bounds values : %" PRIu64 " %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        else
            printf("# Out of bounds values : not checked (-c 0)\n");
        printf("# Avg bus bandwidth    : %g\n", bw_n ? bw_sum / bw_n : 0.0);
    }

    if (o->stats) {
        dfcclStats_t st;
        DFCHECK(dfcclCommGetStats(tgt->comm, &st));
        uint64_t mine[6] = {st.submitted, st.completed, st.preemptions, st.stalls, st.stall_ns, st.shm_bytes};
        uint64_t sum[6] = {0};
        MPI_Reduce(mine, sum, 6, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        if (bench_rank == 0)
            printf("# dfccl stats (summed over %d ranks): submitted %" PRIu64 " completed %" PRIu64
                   " preemptions %" PRIu64 " (with nothing moved %" PRIu64
                   ") waited_ms %.3f shm_bytes %" PRIu64 "\n",
                   bench_nranks, sum[0], sum[1], sum[2], sum[3], (double)sum[4] / 1e6, sum[5]);
    }
    if (bench_rank == 0)
        fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &bench_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &bench_nranks);

    struct opts o;
    int pr = bench_parse_opts(argc, argv, &o);
    if (pr != 0) {
        if (pr < 0 && bench_rank == 0)
            bench_usage(stderr);
        MPI_Finalize();
        return pr < 0 ? 2 : 0;
    }

    /* what -d all, -o all and -r all run, one after the other */
    dfcclDataType_t types[dfcclNumTypes];
    size_t tsize;
    const int ntypes = plan_types(&o, types, &tsize);
    const int reducing = o.coll == C_ALLREDUCE || o.coll == C_REDUCE_SCATTER || o.coll == C_REDUCE;
    const int rooted = o.coll == C_BCAST || o.coll == C_REDUCE;

    char device[256] = "";
    if (device_refused(&o, device, sizeof device)) {
        MPI_Finalize();
        return 2;
    }

    /* -A mpi creates no dfccl communicator: its daemon would share the cores with
     * the MPI being timed. */
    struct target tgt = {NULL, MPI_COMM_NULL};
    if (o.api == API_MPI) {
        MPI_Comm_dup(MPI_COMM_WORLD, &tgt.mc);
        MPI_Comm_set_errhandler(tgt.mc, MPI_ERRORS_RETURN);
    } else {
        DFCHECK(dfcclCommInitMPI(&tgt.comm, MPI_COMM_WORLD));
    }

    if (o.api == API_MPI)
        bench_engine = bench_mpi_engine(&o);
    bench_print_header(&o, device);

    void *sendbuf, *recvbuf;
    struct scratch h;
    alloc_buffers(&o, types, ntypes, tsize, &sendbuf, &recvbuf, &h);

    uint64_t total_wrong = 0;
    double bw_sum = 0;
    int bw_n = 0;

    for (int ti = 0; ti < ntypes; ti++)
        for (int op = 0; op < dfcclNumOps; op++)
            for (int root = 0; root < bench_nranks; root++) {
                if (o.all_ops && reducing ? op >= dfcclBand && bench_is_float_type(types[ti])
                                          : op != (int)o.op)
                    continue;
                if (o.all_roots && rooted ? 0 : root != o.root)
                    continue;
                struct opts oo = o;
                oo.type = types[ti];
                oo.op = (dfcclRedOp_t)op;
                oo.root = root;
                run_sizes(&oo, &tgt, sendbuf, recvbuf, &h, &total_wrong, &bw_sum, &bw_n);
            }

    print_totals(&o, &tgt, total_wrong, bw_sum, bw_n);

    if (tgt.comm)
        DFCHECK(dfcclCommDestroy(tgt.comm));
    if (tgt.mc != MPI_COMM_NULL)
        MPI_Comm_free(&tgt.mc);
    free_buffers(&o, sendbuf, recvbuf, &h);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
