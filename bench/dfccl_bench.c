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
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <mpi.h>

#ifdef DFCCL_BENCH_CUDA
#include <cuda_runtime.h>
#endif

#include "dfccl.h"
#include "dfccl_mpi.h"

#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif
#endif

extern char **environ;

enum coll { C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_BCAST, C_REDUCE, C_ALLTOALL, C_NUM };

static const char *const coll_names[C_NUM] = {
    "allreduce", "reduce_scatter", "allgather", "bcast", "reduce", "alltoall",
};

/* Printed names follow nccl-tests. */
static const char *const type_names[dfcclNumTypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double",
};

static const char *const op_names[dfcclNumOps] = {
    "sum", "prod", "max", "min", "band", "bor", "bxor",
};

struct opts {
    size_t minbytes, maxbytes;
    size_t factor;    /* -f; 0: add stepbytes instead */
    size_t stepbytes; /* -i */
    enum coll coll;
    dfcclDataType_t type;
    dfcclRedOp_t op;
    int root;
    int all_types, all_ops, all_roots; /* -d all, -o all, -r all */
    int warmup, iters;
    int agg;     /* -m: collectives per timed iteration, each to completion */
    int average; /* -a: an iteration's time over ranks: AVG_RANK0, AVG_MEAN, AVG_MIN, AVG_MAX */
    int check;
    int inplace; /* also time the in-place form */
    int format;  /* FMT_TEXT, FMT_CSV or FMT_JSON */
    int stats;
    int sync; /* before each timed call: SYNC_MPI, SYNC_DFCCL or SYNC_NONE */
    int mem;  /* MEM_HOST or MEM_DEVICE */
    int api;  /* API_DFCCL or API_MPI */
};

enum { SYNC_MPI, SYNC_DFCCL, SYNC_NONE };
enum { AVG_RANK0, AVG_MEAN, AVG_MIN, AVG_MAX };
static const char *const average_names[] = {"rank 0's time", "the mean over ranks", "the fastest rank",
                                            "the slowest rank"};
enum { FMT_TEXT, FMT_CSV, FMT_JSON };
enum { MEM_HOST, MEM_DEVICE };
enum { API_DFCCL, API_MPI };

static const char *const mem_names[] = {"host", "device"};
static const char *const api_names[] = {"dfccl", "mpi"};

static int g_rank, g_nranks;

/* What runs the timed calls: "dfccl" (the native API, or MPI through dfccl's component)
 * or "openmpi" (plain Open MPI's components); in every output format, so that plots and
 * scripts can tell the two apart. */
static const char *g_engine = "dfccl";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dfccl-bench: rank %d: ", g_rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

#define DFCHECK(call)                                                                                        \
    do {                                                                                                     \
        dfcclResult_t r_ = (call);                                                                           \
        if (r_ != dfcclSuccess)                                                                              \
            die("%s failed: %s (%d): %s", #call, dfcclGetErrorString(r_), (int)r_, dfcclGetLastError());     \
    } while (0)

/* ------------------------------------------------------------------------- */
/* Buffer memory. Host memory is read and written in place; device memory only
 * through cudaMemcpy/cudaMemset, so the inputs and the reference stay host code.  */

#ifdef DFCCL_BENCH_CUDA
#define CUCHECK(call)                                                                                        \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess)                                                                               \
            die("%s failed: %s", #call, cudaGetErrorString(e_));                                             \
    } while (0)
#endif

static void *buf_alloc(int mem, size_t bytes)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        void *p = NULL;
        return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
    }
#endif
    (void)mem;
    return malloc(bytes);
}

static void buf_free(int mem, void *p)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        if (p)
            cudaFree(p);
        return;
    }
#endif
    (void)mem;
    free(p);
}

/* dst (a benchmark buffer) = the host bytes src. */
static void buf_put(int mem, void *dst, const void *src, size_t bytes)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        CUCHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
        return;
    }
#endif
    (void)mem;
    memcpy(dst, src, bytes);
}

static void buf_get(int mem, void *dst, const void *src, size_t bytes)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        CUCHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
        return;
    }
#endif
    (void)mem;
    memcpy(dst, src, bytes);
}

static void buf_set(int mem, void *p, int byte, size_t bytes)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        CUCHECK(cudaMemset(p, byte, bytes));
        return;
    }
#endif
    (void)mem;
    memset(p, byte, bytes);
}

/* Before a timed call: the daemon and MPI use their own streams, so the copies and
 * the memset must have landed (cudaMemset may return before it has). */
static void buf_settle(int mem)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE)
        CUCHECK(cudaDeviceSynchronize());
#endif
    (void)mem;
}

/* -B device: this rank's GPU (local rank modulo the devices, as bench/gpu_bench),
 * chosen before the dfccl communicator exists so that it gets a GPU part.
 * 0, or -1 with the reason in err. */
static int device_init(char *err, size_t len, char *name, size_t nlen)
{
#ifdef DFCCL_BENCH_CUDA
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        snprintf(err, len, "-B device: no CUDA device on this node (cudaGetDeviceCount: %s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return -1;
    }
    MPI_Comm local;
    int lrank;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_free(&local);
    struct cudaDeviceProp prop;
    if ((e = cudaSetDevice(lrank % ndev)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&prop, lrank % ndev)) != cudaSuccess) {
        snprintf(err, len, "-B device: cudaSetDevice(%d): %s", lrank % ndev, cudaGetErrorString(e));
        return -1;
    }
    snprintf(name, nlen, "GPU %d of %d: %.200s", lrank % ndev, ndev, prop.name);
    return 0;
#else
    (void)name;
    (void)nlen;
    snprintf(err, len, "-B device: this dfccl-bench was built without CUDA");
    return -1;
#endif
}

/* ------------------------------------------------------------------------- */
/* Element conversion. Values are small integers, exactly representable.      */

static uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff) /* inf / nan */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) { /* subnormal or zero */
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* may carry into the exponent: still correct */
    return (uint16_t)h;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

/* Store the integer value v as element i of buf. */
static void store(dfcclDataType_t t, void *buf, size_t i, int64_t v)
{
    switch (t) {
    case dfcclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case dfcclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case dfcclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case dfcclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case dfcclInt64: ((int64_t *)buf)[i] = v; break;
    case dfcclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case dfcclFloat16: ((uint16_t *)buf)[i] = float_to_half((float)v); break;
    case dfcclBfloat16: ((uint16_t *)buf)[i] = float_to_bf16((float)v); break;
    case dfcclFloat32: ((float *)buf)[i] = (float)v; break;
    case dfcclFloat64: ((double *)buf)[i] = (double)v; break;
    default: break;
    }
}

static int is_float_type(dfcclDataType_t t)
{
    return t == dfcclFloat16 || t == dfcclBfloat16 || t == dfcclFloat32 || t == dfcclFloat64;
}

/* ------------------------------------------------------------------------- */
/* Inputs: element i of the send buffer of rank r (the global index i runs over
 * the whole send buffer, all blocks included). */

static int64_t input_value(const struct opts *o, int r, size_t i)
{
    /* Non-reducing collectives and max/min: values that identify rank and index.
     * Period 101 keeps 8-bit and bfloat16 (exact up to 256) values exact. */
    int small = (o->type == dfcclInt8 || o->type == dfcclUint8 || o->type == dfcclBfloat16);
    int64_t period = small ? 101 : 1021;
    int64_t mix = ((int64_t)r * 37 + (int64_t)(i % 1000003u) * 11) % period;
    int reducing = (o->coll == C_ALLREDUCE || o->coll == C_REDUCE_SCATTER || o->coll == C_REDUCE);
    if (!reducing)
        return mix;
    switch (o->op) {
    case dfcclSum: return ((int64_t)r * 3 + (int64_t)(i % 4u) * 7 + (int64_t)(i / 4u % 3u)) % 4; /* 0..3 */
    case dfcclProd: return ((i + (size_t)r) % 8 == 0) ? 2 : 1; /* at most ceil(n/8) factors of 2 */
    default: return mix;
    }
}

static int64_t apply_op(dfcclRedOp_t op, int64_t a, int64_t b)
{
    switch (op) {
    case dfcclSum: return a + b;
    case dfcclProd: return a * b;
    case dfcclMax: return a > b ? a : b;
    case dfcclMin: return a < b ? a : b;
    case dfcclBand: return a & b;
    case dfcclBor: return a | b;
    case dfcclBxor: return a ^ b;
    default: return 0;
    }
}

static int64_t reduced_value(const struct opts *o, size_t i)
{
    int64_t acc = input_value(o, 0, i);
    for (int r = 1; r < g_nranks; r++)
        acc = apply_op(o->op, acc, input_value(o, r, i));
    return acc;
}

/* Buffer geometry for one size. */
struct geom {
    size_t count;      /* the count argument of the dfccl call */
    size_t send_elems; /* elements in sendbuf */
    size_t recv_elems; /* elements in recvbuf */
    size_t size_bytes; /* printed size: max(send, recv) bytes */
};

static struct geom geometry(enum coll c, size_t bytes, size_t tsize)
{
    struct geom g;
    size_t n = (size_t)g_nranks;
    size_t total = bytes / tsize;
    switch (c) {
    case C_ALLREDUCE:
    case C_BCAST:
    case C_REDUCE:
        g.count = total;
        g.send_elems = total;
        g.recv_elems = total;
        break;
    case C_REDUCE_SCATTER:
        g.count = total / n;
        g.send_elems = g.count * n;
        g.recv_elems = g.count;
        break;
    case C_ALLGATHER:
        g.count = total / n;
        g.send_elems = g.count;
        g.recv_elems = g.count * n;
        break;
    case C_ALLTOALL:
    default:
        g.count = total / n;
        g.send_elems = g.count * n;
        g.recv_elems = g.count * n;
        break;
    }
    g.size_bytes = (g.send_elems > g.recv_elems ? g.send_elems : g.recv_elems) * tsize;
    return g;
}

static void fill_send(const struct opts *o, void *sendbuf, const struct geom *g)
{
    if (o->coll == C_BCAST && g_rank != o->root) {
        /* Only the root's buffer matters; give the others something different. */
        for (size_t i = 0; i < g->send_elems; i++)
            store(o->type, sendbuf, i, 7);
        return;
    }
    for (size_t i = 0; i < g->send_elems; i++)
        store(o->type, sendbuf, i, input_value(o, g_rank, i));
}

/* Reference for this rank's receive buffer. Returns 0 when this rank's recvbuf
 * is not defined by the collective (reduce on a non-root rank). */
static int fill_expected(const struct opts *o, void *expected, const struct geom *g)
{
    size_t cnt = g->count;
    switch (o->coll) {
    case C_ALLREDUCE:
        for (size_t i = 0; i < cnt; i++)
            store(o->type, expected, i, reduced_value(o, i));
        return 1;
    case C_REDUCE:
        if (g_rank != o->root)
            return 0;
        for (size_t i = 0; i < cnt; i++)
            store(o->type, expected, i, reduced_value(o, i));
        return 1;
    case C_REDUCE_SCATTER:
        for (size_t i = 0; i < cnt; i++)
            store(o->type, expected, i, reduced_value(o, (size_t)g_rank * cnt + i));
        return 1;
    case C_ALLGATHER:
        for (int r = 0; r < g_nranks; r++)
            for (size_t i = 0; i < cnt; i++)
                store(o->type, expected, (size_t)r * cnt + i, input_value(o, r, i));
        return 1;
    case C_BCAST:
        for (size_t i = 0; i < cnt; i++)
            store(o->type, expected, i, input_value(o, o->root, i));
        return 1;
    case C_ALLTOALL:
        for (int r = 0; r < g_nranks; r++)
            for (size_t i = 0; i < cnt; i++)
                store(o->type, expected, (size_t)r * cnt + i, input_value(o, r, (size_t)g_rank * cnt + i));
        return 1;
    default: return 0;
    }
}

static uint64_t count_wrong(const void *got, const void *want, size_t elems, size_t tsize)
{
    if (memcmp(got, want, elems * tsize) == 0)
        return 0;
    uint64_t wrong = 0;
    const unsigned char *a = got, *b = want;
    for (size_t i = 0; i < elems; i++)
        if (memcmp(a + i * tsize, b + i * tsize, tsize) != 0)
            wrong++;
    return wrong;
}

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
        die("submitting %s of %zu x %s failed: %s (%d): %s", coll_names[o->coll], count, type_names[o->type],
            dfcclGetErrorString(r), (int)r, dfcclGetLastError());
}

static void wait_req(const struct opts *o, dfcclRequest_t *req, size_t count)
{
    dfcclResult_t r = dfcclWait(req);
    if (r != dfcclSuccess)
        die("%s of %zu x %s completed with an error: %s (%d): %s", coll_names[o->coll], count,
            type_names[o->type], dfcclGetErrorString(r), (int)r, dfcclGetLastError());
}

/* -A mpi: the MPI datatype and op of the dfccl ones. MPI_DATATYPE_NULL where MPI has
 * none (Open MPI 4.1 has no 16-bit floating point type). */
static MPI_Datatype mpi_type(dfcclDataType_t t)
{
    switch (t) {
    case dfcclInt8: return MPI_INT8_T;
    case dfcclUint8: return MPI_UINT8_T;
    case dfcclInt32: return MPI_INT32_T;
    case dfcclUint32: return MPI_UINT32_T;
    case dfcclInt64: return MPI_INT64_T;
    case dfcclUint64: return MPI_UINT64_T;
    case dfcclFloat32: return MPI_FLOAT;
    case dfcclFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(dfcclRedOp_t op)
{
    switch (op) {
    case dfcclSum: return MPI_SUM;
    case dfcclProd: return MPI_PROD;
    case dfcclMax: return MPI_MAX;
    case dfcclMin: return MPI_MIN;
    case dfcclBand: return MPI_BAND;
    case dfcclBor: return MPI_BOR;
    case dfcclBxor: return MPI_BXOR;
    default: return MPI_OP_NULL;
    }
}

static const char *const mpi_names[C_NUM] = {
    "MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Allgather", "MPI_Bcast", "MPI_Reduce", "MPI_Alltoall",
};

/* One blocking MPI collective on the benchmark's MPI communicator (errors returned).
 * In place: MPI_IN_PLACE, with the data where MPI wants it (pass_bufs). */
static void mpi_call(const struct opts *o, MPI_Comm mc, const void *s, void *r, size_t count, int inplace)
{
    const MPI_Datatype dt = mpi_type(o->type);
    const MPI_Op op = mpi_op(o->op);
    const int n = (int)count; /* parse_opts keeps count <= INT_MAX */
    const void *src = inplace ? MPI_IN_PLACE : s;
    int rc;
    switch (o->coll) {
    case C_ALLREDUCE: rc = MPI_Allreduce(src, r, n, dt, op, mc); break;
    case C_REDUCE_SCATTER: rc = MPI_Reduce_scatter_block(src, r, n, dt, op, mc); break;
    case C_ALLGATHER:
        rc = inplace ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, dt, mc)
                     : MPI_Allgather(s, n, dt, r, n, dt, mc);
        break;
    case C_BCAST: rc = MPI_Bcast(g_rank == o->root ? (void *)s : r, n, dt, o->root, mc); break;
    case C_REDUCE: /* MPI_IN_PLACE is the root's alone; the others send from their buffer */
        rc = MPI_Reduce(inplace && g_rank == o->root ? MPI_IN_PLACE : s, r, n, dt, op, o->root, mc);
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
        die("%s of %zu x %s%s failed: %s", mpi_names[o->coll], count, type_names[o->type],
            inplace ? " (MPI_IN_PLACE)" : "", msg);
    }
}

/* nccl-tests bus bandwidth factors. */
static double bus_factor(enum coll c, int n)
{
    switch (c) {
    case C_ALLREDUCE: return 2.0 * (n - 1) / n;
    case C_REDUCE_SCATTER:
    case C_ALLGATHER:
    case C_ALLTOALL: return (double)(n - 1) / n;
    case C_BCAST:
    case C_REDUCE:
    default: return 1.0;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void fmt_time(char *buf, size_t len, double us)
{
    if (us >= 10000.0)
        snprintf(buf, len, "%8.0f", us);
    else if (us >= 100.0)
        snprintf(buf, len, "%8.1f", us);
    else
        snprintf(buf, len, "%8.2f", us);
}

/* ------------------------------------------------------------------------- */
/* Options.                                                                   */

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    double mul = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mul = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1024.0 * 1024;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1024.0 * 1024 * 1024;
        end++;
        break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return -1;
    v *= mul;
    if (v > (double)SIZE_MAX / 4)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static int parse_type(const char *s)
{
    int t = lookup(s, type_names, dfcclNumTypes);
    if (t >= 0)
        return t;
    if (!strcmp(s, "float16") || !strcmp(s, "fp16"))
        return dfcclFloat16;
    if (!strcmp(s, "bf16"))
        return dfcclBfloat16;
    if (!strcmp(s, "float32") || !strcmp(s, "fp32"))
        return dfcclFloat32;
    if (!strcmp(s, "float64") || !strcmp(s, "fp64"))
        return dfcclFloat64;
    if (!strcmp(s, "int"))
        return dfcclInt32;
    if (!strcmp(s, "char"))
        return dfcclInt8;
    return -1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N dfccl-bench [options]   (nccl-tests' flags where they exist)\n"
            "  -b, --minbytes SIZE     smallest size in bytes (default 8; K, M, G: powers of 1024)\n"
            "  -e, --maxbytes SIZE     largest size in bytes (default 64M)\n"
            "  -f, --stepfactor N      multiply the size by N between steps (default 2)\n"
            "  -i, --stepbytes SIZE    add SIZE between steps instead (not with -f)\n"
            "  -k COLL      allreduce (default), reduce_scatter, allgather, bcast, reduce, alltoall\n"
            "  -d, --datatype TYPE     float (default), half|float16, bfloat16, double, int8, uint8,\n"
            "               int32, uint32, int64, uint64, or all (each in turn)\n"
            "  -o, --op OP  sum (default), prod, max, min, band, bor, bxor (bitwise: integer types),\n"
            "               or all (each that the type takes, in turn)\n"
            "  -r, --root ROOT         root of bcast and reduce (default 0), or all (each rank in turn)\n"
            "  -w, --warmup_iters N    untimed iterations per size (default 5)\n"
            "  -n, --iters N           timed iterations per size (default 20; scaled down from 16 MiB)\n"
            "  -m, --agg_iters N       collectives per timed iteration, back to back, each waited for;\n"
            "               the time is the iteration's divided by N (default 1)\n"
            "  -a, --average 0|1|2|3   an iteration's time over the ranks: 0 rank 0's, 1 the mean,\n"
            "               2 the fastest rank's, 3 the slowest rank's (default 3; nccl-tests: 1)\n"
            "  -c, --check N           0: no check; otherwise check every timed iteration (default 1)\n"
            "  -t, --nthreads 1        -g, --ngpus 1: nccl-tests' threads and GPUs per process; one\n"
            "               rank per process here (start more with mpirun -np), so only 1\n"
            "  -p, --parallel_init 0|1 accepted for nccl-tests' command lines: with one rank per\n"
            "               process the ranks create their communicator in parallel already\n"
            "  -I 0|1       also time the in-place form (default 1)\n"
            "  -F FORMAT    text (default: nccl-tests' columns), csv (a header row, then one row a\n"
            "               size) or json (one object a size, one a line)\n"
            "  -P, --stats  print dfccl statistics summed over ranks at the end\n"
            "  -s SYNC      before each timed call: mpi (default: MPI_Barrier), dfccl\n"
            "               (dfcclBarrier on the benchmark's communicator; not with -A mpi) or none\n"
            "               (calls back to back): where MPI's barrier spins, it sets the time on\n"
            "               busy cores\n"
            "  -B, --buffers MEMORY    host (default: malloc, the CPU daemon) or device (cudaMalloc on\n"
            "               the GPU of local rank modulo devices, the GPU daemon; filled and checked\n"
            "               through cudaMemcpy outside the timed region)\n"
            "               (this build: %s)\n"
            "  -A, --api API           dfccl (default: dfcclAllReduce, ... on a dfccl communicator of\n"
            "               all ranks) or mpi (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather,\n"
            "               MPI_Bcast, MPI_Reduce, MPI_Alltoall on a duplicate of MPI_COMM_WORLD;\n"
            "               MPI_IN_PLACE in the in-place columns, alltoall's too; MPI_Bcast has one\n"
            "               buffer: out of place the root sends from its send buffer). Open MPI\n"
            "               picks the component that runs them: with mca_coll_dfccl installed (or\n"
            "               its directory in --mca mca_base_component_path) dfccl takes device\n"
            "               buffers, and host buffers with --mca coll_dfccl_host_buffers 1; with\n"
            "               --mca coll ^dfccl, or no component, it times plain Open MPI. No half or\n"
            "               bfloat16 (MPI has no such type), no -s dfccl, no -P; device buffers\n"
            "               need the component or a CUDA-aware MPI\n"
            "  -h, --help   this help\n"
            "Sizes are bytes; times are microseconds (us), bandwidths GB/s (1e9 bytes/s).\n"
            "Columns: out of place, time is the median over iterations of the per-iteration\n"
            "time over ranks (-a), min(us) the minimum, p99(us) and max(us) the 99th percentile\n"
            "and the slowest; then in place, time, algbw, busbw and #wrong. #wrong counts wrong\n"
            "elements over ranks and iterations; the exit status is 1 when any is wrong, 2 on a\n"
            "bad option or an error.\n",
#ifdef DFCCL_BENCH_CUDA
            "with CUDA"
#else
            "no CUDA, so -B device fails"
#endif
    );
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    o->minbytes = 8;
    o->maxbytes = 64u << 20;
    o->factor = 2;
    o->stepbytes = 0;
    o->all_types = o->all_ops = o->all_roots = 0;
    o->agg = 1;
    o->average = AVG_MAX;
    o->coll = C_ALLREDUCE;
    o->type = dfcclFloat32;
    o->op = dfcclSum;
    o->root = 0;
    o->warmup = 5;
    o->iters = 20;
    o->check = 1;
    o->inplace = 1;
    o->format = FMT_TEXT;
    o->stats = 0;
    o->sync = SYNC_MPI;
    o->mem = MEM_HOST;
    o->api = API_DFCCL;

    static const struct option longopts[] = {
        {"minbytes", required_argument, 0, 'b'},
        {"maxbytes", required_argument, 0, 'e'},
        {"stepfactor", required_argument, 0, 'f'},
        {"stepbytes", required_argument, 0, 'i'},
        {"datatype", required_argument, 0, 'd'},
        {"op", required_argument, 0, 'o'},
        {"root", required_argument, 0, 'r'},
        {"warmup_iters", required_argument, 0, 'w'},
        {"iters", required_argument, 0, 'n'},
        {"agg_iters", required_argument, 0, 'm'},
        {"average", required_argument, 0, 'a'},
        {"check", required_argument, 0, 'c'},
        {"nthreads", required_argument, 0, 't'},
        {"ngpus", required_argument, 0, 'g'},
        {"parallel_init", required_argument, 0, 'p'},
        {"stats", no_argument, 0, 'P'},
        {"buffers", required_argument, 0, 'B'},
        {"api", required_argument, 0, 'A'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c, v, step_f = 0, step_i = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:e:f:i:k:d:o:r:w:n:m:a:c:t:g:p:I:F:Ps:B:A:h", longopts, NULL)) !=
           -1) {
        switch (c) {
        case 'b':
            if (parse_size(optarg, &o->minbytes))
                goto bad;
            break;
        case 'e':
            if (parse_size(optarg, &o->maxbytes))
                goto bad;
            break;
        case 'f':
            if (parse_int(optarg, 2, 1 << 20, &v))
                goto bad;
            o->factor = (size_t)v;
            step_f = 1;
            break;
        case 'i':
            if (parse_size(optarg, &o->stepbytes) || o->stepbytes == 0)
                goto bad;
            step_i = 1;
            break;
        case 'k':
            if ((v = lookup(optarg, coll_names, C_NUM)) < 0) {
                if (!strcmp(optarg, "broadcast"))
                    v = C_BCAST;
                else if (!strcmp(optarg, "reducescatter"))
                    v = C_REDUCE_SCATTER;
                else if (!strcmp(optarg, "all_reduce"))
                    v = C_ALLREDUCE;
                else if (!strcmp(optarg, "all_gather"))
                    v = C_ALLGATHER;
                else
                    goto bad;
            }
            o->coll = (enum coll)v;
            break;
        case 'd':
            if ((o->all_types = !strcmp(optarg, "all")))
                break;
            if ((v = parse_type(optarg)) < 0)
                goto bad;
            o->type = (dfcclDataType_t)v;
            break;
        case 'o':
            if ((o->all_ops = !strcmp(optarg, "all")))
                break;
            if ((v = lookup(optarg, op_names, dfcclNumOps)) < 0)
                goto bad;
            o->op = (dfcclRedOp_t)v;
            break;
        case 'r':
            if ((o->all_roots = !strcmp(optarg, "all")))
                break;
            if (parse_int(optarg, 0, INT_MAX, &o->root))
                goto bad;
            break;
        case 'm': /* before nccl-tests' meaning, -m chose the memory: say where that went */
            if (!strcmp(optarg, "host") || !strcmp(optarg, "device")) {
                if (g_rank == 0)
                    fprintf(stderr, "dfccl-bench: -m is nccl-tests' --agg_iters; buffers: -B %s\n", optarg);
                return -1;
            }
            if (parse_int(optarg, 1, 1000000, &o->agg))
                goto bad;
            break;
        case 'a': /* before nccl-tests' meaning, -a chose the API */
            if (!strcmp(optarg, "dfccl") || !strcmp(optarg, "mpi")) {
                if (g_rank == 0)
                    fprintf(stderr, "dfccl-bench: -a is nccl-tests' --average; the API: -A %s\n", optarg);
                return -1;
            }
            if (parse_int(optarg, AVG_RANK0, AVG_MAX, &o->average))
                goto bad;
            break;
        case 't':
        case 'g':
            if (parse_int(optarg, 1, 1, &v)) {
                if (g_rank == 0)
                    fprintf(stderr,
                            "dfccl-bench: -%c %s: one rank per process (one thread, one GPU); start more "
                            "ranks with mpirun -np\n",
                            c, optarg);
                return -1;
            }
            break;
        case 'p':
            if (parse_int(optarg, 0, 1, &v))
                goto bad;
            break;
        case 'w':
            if (parse_int(optarg, 0, 1000000, &o->warmup))
                goto bad;
            break;
        case 'n':
            if (parse_int(optarg, 1, 1000000, &o->iters))
                goto bad;
            break;
        case 'c':
            if (parse_int(optarg, 0, INT_MAX, &v))
                goto bad;
            o->check = v > 0;
            break;
        case 'I':
            if (parse_int(optarg, 0, 1, &o->inplace))
                goto bad;
            break;
        case 'F':
            if (!strcmp(optarg, "text"))
                o->format = FMT_TEXT;
            else if (!strcmp(optarg, "csv"))
                o->format = FMT_CSV;
            else if (!strcmp(optarg, "json"))
                o->format = FMT_JSON;
            else
                goto bad;
            break;
        case 'P': o->stats = 1; break;
        case 's':
            if (!strcmp(optarg, "mpi"))
                o->sync = SYNC_MPI;
            else if (!strcmp(optarg, "dfccl"))
                o->sync = SYNC_DFCCL;
            else if (!strcmp(optarg, "none"))
                o->sync = SYNC_NONE;
            else
                die("-s %s: expected mpi, dfccl or none", optarg);
            break;
        case 'B':
            if ((v = lookup(optarg, mem_names, 2)) < 0)
                goto bad;
            o->mem = v;
            break;
        case 'A':
            if ((v = lookup(optarg, api_names, 2)) < 0)
                goto bad;
            o->api = v;
            break;
        case 'h':
            if (g_rank == 0)
                usage(stdout);
            return 1;
        case ':':
            if (g_rank == 0)
                fprintf(stderr, "dfccl-bench: option %s needs an argument\n", argv[optind - 1]);
            return -1;
        default:
            if (g_rank == 0)
                fprintf(stderr, "dfccl-bench: unknown option %s\n", argv[optind - 1]);
            return -1;
        bad:
            if (g_rank == 0)
                fprintf(stderr, "dfccl-bench: bad value '%s' for -%c\n", optarg, c);
            return -1;
        }
    }
    if (optind < argc) {
        if (g_rank == 0)
            fprintf(stderr, "dfccl-bench: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (step_f && step_i) {
        if (g_rank == 0)
            fprintf(stderr, "dfccl-bench: -f and -i both given: one way of stepping, please\n");
        return -1;
    }
    if (step_i)
        o->factor = 0;
    if (o->minbytes == 0)
        o->minbytes = o->all_types ? 8 : dfcclTypeSize(o->type);
    if (o->maxbytes < o->minbytes) {
        if (g_rank == 0)
            fprintf(stderr, "dfccl-bench: -e %zu is smaller than -b %zu\n", o->maxbytes, o->minbytes);
        return -1;
    }
    if (!o->all_ops && !o->all_types && o->op >= dfcclBand && is_float_type(o->type)) {
        if (g_rank == 0)
            fprintf(stderr, "dfccl-bench: -o %s needs an integer type\n", op_names[o->op]);
        return -1;
    }
#ifndef DFCCL_BENCH_CUDA
    if (o->mem == MEM_DEVICE) {
        if (g_rank == 0)
            fprintf(stderr,
                    "dfccl-bench: -B device: this dfccl-bench was built without CUDA (configure found "
                    "no nvcc); only -B host works\n");
        return -1;
    }
#endif
    if (o->api == API_MPI) {
        char why[160] = "";
        if (!o->all_types && mpi_type(o->type) == MPI_DATATYPE_NULL)
            snprintf(why, sizeof why, "-d %s: MPI has no such type (use -A dfccl or another -d)",
                     type_names[o->type]);
        else if (o->sync == SYNC_DFCCL)
            snprintf(why, sizeof why, "-s dfccl needs a dfccl communicator, which -A mpi does not create");
        else if (o->stats)
            snprintf(why, sizeof why, "-P reports the dfccl communicator, which -A mpi does not create");
        else if (geometry(o->coll, o->maxbytes, o->all_types ? 1 : dfcclTypeSize(o->type)).count > INT_MAX)
            snprintf(why, sizeof why, "-e %zu: a count over INT_MAX, MPI's limit", o->maxbytes);
        if (why[0]) {
            if (g_rank == 0)
                fprintf(stderr, "dfccl-bench: -A mpi: %s\n", why);
            return -1;
        }
    }
    if (!o->all_roots && o->root >= g_nranks) {
        if (g_rank == 0)
            fprintf(stderr, "dfccl-bench: -r %d but only %d ranks\n", o->root, g_nranks);
        return -1;
    }
    return 0;
}

/* Iterations for one size: full count below 16 MiB, then proportionally fewer
 * (8 MiB worth of iterations' data), never fewer than 3 (a median needs some). */
static void scaled_iters(const struct opts *o, size_t bytes, int *warm, int *iters)
{
    const size_t big = 16u << 20;
    *warm = o->warmup;
    *iters = o->iters;
    if (bytes >= big) {
        double scale = (double)(8u << 20) / (double)bytes;
        int it = (int)ceil(o->iters * scale);
        int w = (int)ceil(o->warmup * scale);
        *iters = it < 3 ? (o->iters < 3 ? o->iters : 3) : it;
        *warm = w < 1 ? (o->warmup < 1 ? o->warmup : 1) : w;
    }
}

/* One pass's buffers: out of place the two buffers; in place where dfccl.h puts the
 * input inside the output, or for -A mpi where MPI_IN_PLACE has it. 0: the
 * collective has no in-place form. */
static int pass_bufs(const struct opts *o, const struct geom *g, int inplace, char *sendbuf, char *recvbuf,
                     char **s, char **r)
{
    const size_t blk = g->count * dfcclTypeSize(o->type) * (size_t)g_rank;
    const int mpi = o->api == API_MPI;
    *s = sendbuf;
    *r = recvbuf;
    if (!inplace) {
        if (mpi && o->coll == C_BCAST && g_rank == o->root)
            *r = sendbuf; /* MPI_Bcast's one buffer: the root's result is its input */
        return 1;
    }
    switch (o->coll) {
    case C_ALLREDUCE:
    case C_BCAST:
    case C_REDUCE: *s = recvbuf; return 1;
    case C_REDUCE_SCATTER: /* MPI: the whole input, the result at its start */
        *r = mpi ? sendbuf : sendbuf + blk;
        return 1;
    case C_ALLGATHER: *s = recvbuf + blk; return 1;
    default: /* alltoall: MPI's in-place form exchanges the blocks of one buffer */
        if (!mpi)
            return 0;
        *s = recvbuf;
        return 1;
    }
}

struct pass {
    double med, min, p99, max; /* seconds, slowest rank per iteration */
    uint64_t wrong;            /* summed over ranks and iterations */
    int ran;                   /* 0: no in-place form */
};

/* What the timed calls run on: a dfccl communicator or (-A mpi) an MPI one. */
struct target {
    dfcclComm_t comm;
    MPI_Comm mc;
};

/* One collective to completion. */
static void run_coll(const struct opts *o, const struct target *t, const char *s, char *r, size_t count,
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

/* Host scratch of one run: the send buffer's image (device memory only) and the
 * receive buffer read back (device memory only), the reference, the times. */
struct scratch {
    void *send_img, *recv_img, *expected;
    double *times, *maxtimes;
};

/* The send data into s: host memory written in place, device memory copied from
 * its image (computed once per pass). */
static void load_send(const struct opts *o, const struct geom *g, char *s, const struct scratch *h)
{
    if (o->mem == MEM_HOST)
        fill_send(o, s, g);
    else
        buf_put(o->mem, s, h->send_img, g->send_elems * dfcclTypeSize(o->type));
}

/* Wrong elements of the receive buffer r against the reference. */
static uint64_t check_result(const struct opts *o, const struct geom *g, char *r, const struct scratch *h)
{
    const size_t tsize = dfcclTypeSize(o->type);
    const void *got = r;
    if (o->mem == MEM_DEVICE) {
        buf_get(o->mem, h->recv_img, r, g->recv_elems * tsize);
        got = h->recv_img;
    }
    return count_wrong(got, h->expected, g->recv_elems, tsize);
}

/* Warm-up and timed iterations of one size, out of place or in place. */
static struct pass measure(const struct opts *o, const struct target *t, const struct geom *g, int inplace,
                           char *sendbuf, char *recvbuf, int have_ref, const struct scratch *h)
{
    struct pass res = {0};
    char *s, *r;
    if (!(res.ran = pass_bufs(o, g, inplace, sendbuf, recvbuf, &s, &r)))
        return res;
    const size_t tsize = dfcclTypeSize(o->type);
    const int aliased = inplace || s == r; /* the poison overwrites the input */
    int warm, iters;
    scaled_iters(o, g->size_bytes, &warm, &iters);
    if (o->mem == MEM_DEVICE)
        fill_send(o, h->send_img, g);
    load_send(o, g, s, h);
    buf_settle(o->mem);
    for (int w = 0; w < warm; w++)
        run_coll(o, t, s, r, g->count, inplace);
    /* -m N in place: each call reduces the previous one's result, so the timed iterations
     * go unchecked and one more call, untimed, is checked afterwards */
    const int check_each = have_ref && (o->agg == 1 || !aliased);
    uint64_t wrong = 0;
    for (int it = 0; it < iters; it++) {
        if (check_each) { /* poison the output; in place, the input goes back over it */
            buf_set(o->mem, r, 0xA5, g->recv_elems * tsize);
            if (aliased)
                load_send(o, g, s, h);
            buf_settle(o->mem);
        }
        if (o->sync == SYNC_MPI) {
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (o->sync == SYNC_DFCCL) {
            dfcclRequest_t req = NULL;
            if (dfcclBarrier(t->comm, &req) != dfcclSuccess || dfcclWait(&req) != dfcclSuccess)
                die("dfcclBarrier: %s", dfcclGetLastError());
        }
        double t0 = MPI_Wtime();
        for (int a = 0; a < o->agg; a++)
            run_coll(o, t, s, r, g->count, inplace);
        h->times[it] = (MPI_Wtime() - t0) / o->agg;
        if (check_each)
            wrong += check_result(o, g, r, h);
    }
    if (have_ref && !check_each) {
        buf_set(o->mem, r, 0xA5, g->recv_elems * tsize);
        load_send(o, g, s, h);
        buf_settle(o->mem);
        MPI_Barrier(MPI_COMM_WORLD);
        run_coll(o, t, s, r, g->count, inplace);
        wrong += check_result(o, g, r, h);
    }
    /* an iteration's time over the ranks (-a) */
    double *maxtimes = h->maxtimes;
    if (o->average == AVG_RANK0) {
        memcpy(maxtimes, h->times, sizeof(double) * (size_t)iters);
        MPI_Bcast(maxtimes, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(h->times, maxtimes, iters, MPI_DOUBLE,
                      o->average == AVG_MIN   ? MPI_MIN
                      : o->average == AVG_MAX ? MPI_MAX
                                              : MPI_SUM,
                      MPI_COMM_WORLD);
        if (o->average == AVG_MEAN)
            for (int it = 0; it < iters; it++)
                maxtimes[it] /= g_nranks;
    }
    MPI_Allreduce(&wrong, &res.wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    res.min = maxtimes[0];
    for (int it = 1; it < iters; it++)
        if (maxtimes[it] < res.min)
            res.min = maxtimes[it];
    res.med = median(maxtimes, iters); /* sorts maxtimes */
    res.p99 = maxtimes[(iters * 99 + 99) / 100 - 1];
    res.max = maxtimes[iters - 1];
    return res;
}

/* One size's line (rank 0), in the format asked for. */
static void print_row(const struct opts *o, const struct geom *g, const char *redop, int root,
                      const struct pass *op, const struct pass *ip)
{
    const double ob = (double)g->size_bytes / 1e9 / op->med, obus = ob * bus_factor(o->coll, g_nranks);
    const double ib = ip->ran ? (double)g->size_bytes / 1e9 / ip->med : 0,
                 ibus = ib * bus_factor(o->coll, g_nranks);
    char ow[32], iw[32];
    snprintf(ow, sizeof ow, o->check ? "%" PRIu64 : "N/A", op->wrong);
    snprintf(iw, sizeof iw, o->check && ip->ran ? "%" PRIu64 : "N/A", ip->wrong);
    if (o->format == FMT_CSV) {
        printf("%zu,%zu,%s,%s,%d,%.3f,%.4f,%.4f,%s,%.3f,%.3f,%.3f,", g->size_bytes, g->count,
               type_names[o->type], redop, root, op->med * 1e6, ob, obus, ow, op->min * 1e6, op->p99 * 1e6,
               op->max * 1e6);
        if (ip->ran)
            printf("%.3f,%.4f,%.4f,%s,", ip->med * 1e6, ib, ibus, iw);
        else
            printf(",,,N/A,");
        printf("%s,%s,%s,%d,%s\n", mem_names[o->mem], api_names[o->api], coll_names[o->coll], g_nranks,
               g_engine);
    } else if (o->format == FMT_JSON) {
        printf(
            "{\"collective\": \"%s\", \"size_bytes\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": "
            "\"%s\", \"root\": %d, \"ranks\": %d, \"memory\": \"%s\", \"api\": \"%s\", \"engine\": \"%s\", "
            "\"out_of_place\": "
            "{\"time_us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, \"wrong\": %s, \"min_us\": %.3f, "
            "\"p99_us\": %.3f, \"max_us\": %.3f}, \"in_place\": ",
            coll_names[o->coll], g->size_bytes, g->count, type_names[o->type], redop, root, g_nranks,
            mem_names[o->mem], api_names[o->api], g_engine, op->med * 1e6, ob, obus, o->check ? ow : "null",
            op->min * 1e6, op->p99 * 1e6, op->max * 1e6);
        if (ip->ran)
            printf("{\"time_us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, \"wrong\": %s}}\n",
                   ip->med * 1e6, ib, ibus, o->check ? iw : "null");
        else
            printf("null}\n");
    } else {
        char ts[32], ms[32], ps[32], xs[32], its[32];
        fmt_time(ts, sizeof ts, op->med * 1e6);
        fmt_time(ms, sizeof ms, op->min * 1e6);
        fmt_time(ps, sizeof ps, op->p99 * 1e6);
        fmt_time(xs, sizeof xs, op->max * 1e6);
        printf("  %10zu %12zu %8s %6s %6d %s %8.2f %8.2f %7s %s %s %s", g->size_bytes, g->count,
               type_names[o->type], redop, root, ts, ob, obus, ow, ms, ps, xs);
        if (ip->ran) {
            fmt_time(its, sizeof its, ip->med * 1e6);
            printf(" %s %8.2f %8.2f %7s\n", its, ib, ibus, iw);
        } else {
            printf(" %8s %8s %8s %7s\n", "N/A", "N/A", "N/A", "N/A");
        }
    }
    fflush(stdout);
}

/* Whether Open MPI's dfccl coll component is mapped into this process: loaded is not
 * selected (priority, coll_dfccl_host_buffers), but without it -A mpi is plain Open MPI. */
static int dfccl_component_loaded(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    if (!f)
        return -1;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "mca_coll_dfccl") != NULL;
    fclose(f);
    return found;
}

/* A yes of Open MPI's boolean parameter words, as the component reads them. */
static int mca_true(const char *v)
{
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"));
}

/* -A mpi: whether dfccl's component takes the calls. Loaded, enabled, and given device
 * buffers, or host buffers with coll_dfccl_host_buffers (mpirun --mca X passes
 * OMPI_MCA_X to the processes). Otherwise Open MPI's own components run them. */
static const char *mpi_engine(const struct opts *o)
{
    const char *en = getenv("OMPI_MCA_coll_dfccl_enable");
    if (dfccl_component_loaded() <= 0 || (en && !mca_true(en)))
        return "openmpi";
    if (o->mem == MEM_DEVICE || mca_true(getenv("OMPI_MCA_coll_dfccl_host_buffers")))
        return "dfccl";
    return "openmpi";
}

/* Whether MPI itself takes device pointers (Open MPI's CUDA extension). */
static int mpi_cuda_aware(void)
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

static void print_header(const struct opts *o, const char *device)
{
    if (g_rank != 0)
        return;
    if (o->format == FMT_CSV) {
        printf(
            "size_bytes,count,type,redop,root,time_us,algbw_gbs,busbw_gbs,wrong,min_us,p99_us,max_us,"
            "inplace_time_us,inplace_algbw_gbs,inplace_busbw_gbs,inplace_wrong,memory,api,collective,ranks,"
            "engine\n");
        return;
    }
    if (o->format == FMT_JSON)
        return;
    int version = 0;
    dfcclGetVersion(&version);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    printf("# dfccl-bench: dfccl %d.%d.%d, %d ranks, host %s\n", version / 10000, version / 100 % 100,
           version % 100, g_nranks, host);
    char rootw[16];
    snprintf(rootw, sizeof rootw, "%d", o->root);
    printf("# collective %s, type %s, op %s, root %s\n", coll_names[o->coll],
           o->all_types ? "all" : type_names[o->type], o->all_ops ? "all" : op_names[o->op],
           o->all_roots ? "all" : rootw);
    if (o->mem == MEM_DEVICE)
        printf("# memory device (cudaMalloc; rank 0: %s), api %s\n", device, api_names[o->api]);
    else
        printf("# memory host (malloc), api %s\n", api_names[o->api]);
    if (o->api == API_MPI) {
        int loaded = dfccl_component_loaded();
        printf("# api mpi: %s on a duplicate of MPI_COMM_WORLD; Open MPI coll component dfccl %s\n",
               mpi_names[o->coll],
               loaded > 0    ? "loaded (host buffers reach the engine only with coll_dfccl_host_buffers 1)"
               : loaded == 0 ? "not loaded: plain Open MPI"
                             : "(unknown)");
    }
    printf("# engine %s\n", strcmp(g_engine, "dfccl") ? "openmpi (plain Open MPI runs the calls)"
                            : o->api == API_MPI       ? "dfccl (through its Open MPI component)"
                                                      : "dfccl (native API)");
    if (o->factor)
        printf("# minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d agg iters: %d "
               "(scaled down from 16 MiB) check: %d\n",
               o->minbytes, o->maxbytes, o->factor, o->warmup, o->iters, o->agg, o->check);
    else
        printf("# minBytes %zu maxBytes %zu step: %zu(bytes) warmup iters: %d iters: %d agg iters: %d "
               "(scaled down from 16 MiB) check: %d\n",
               o->minbytes, o->maxbytes, o->stepbytes, o->warmup, o->iters, o->agg, o->check);
    const char *pre = getenv("DFCCL_PREEMPT");
    printf("# env DFCCL_PREEMPT=%s\n", pre ? pre : "(unset: default 1)");
    const char *cs = getenv("DFCCL_CHUNK_SIZE");
    printf("# env DFCCL_CHUNK_SIZE=%s\n", cs ? cs : "(unset: default)");
    const char *os = getenv("DFCCL_ONESHOT_MAX");
    printf("# env DFCCL_ONESHOT_MAX=%s\n", os ? os : "(unset: default)");
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "DFCCL_", 6) && strncmp(*e, "DFCCL_PREEMPT=", 14) &&
            strncmp(*e, "DFCCL_CHUNK_SIZE=", 17) && strncmp(*e, "DFCCL_ONESHOT_MAX=", 18))
            printf("# env %s\n", *e);
    for (char **e = environ; o->api == API_MPI && *e; e++) /* what selects and sets the component */
        if (!strncmp(*e, "OMPI_MCA_coll", 13) || !strncmp(*e, "OMPI_MCA_mca_base_component_path=", 33))
            printf("# env %s\n", *e);
    printf("# sync before each timed call: %s\n", o->sync == SYNC_MPI     ? "MPI_Barrier"
                                                  : o->sync == SYNC_DFCCL ? "dfcclBarrier"
                                                                          : "none (back to back)");
    printf("# time: median over iterations of %s (-a %d);"
           " min(us): fastest iteration; p99(us), max(us): the same order statistics\n",
           average_names[o->average], o->average);
    printf("# #wrong: wrong elements, summed over ranks and checked iterations\n");
    printf("#\n");
    printf("# %10s %12s %8s %6s %6s %44s   %32s\n", "", "", "", "", "", "out-of-place", "in-place");
    printf("# %10s %12s %8s %6s %6s %8s %8s %8s %7s %8s %8s %8s %8s %8s %8s %7s\n", "size", "count", "type",
           "redop", "root", "time", "algbw", "busbw", "#wrong", "min", "p99", "max", "time", "algbw", "busbw",
           "#wrong");
    printf("# %10s %12s %8s %6s %6s %8s %8s %8s %7s %8s %8s %8s %8s %8s %8s %7s\n", "(B)", "(elements)", "",
           "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
}

/* Every size of one type, op and root. */
static void run_sizes(const struct opts *o, const struct target *tgt, char *sendbuf, char *recvbuf,
                      const struct scratch *h, uint64_t *total_wrong, double *bw_sum, int *bw_n)
{
    const size_t tsize = dfcclTypeSize(o->type);
    const char *redop = (o->coll == C_ALLREDUCE || o->coll == C_REDUCE_SCATTER || o->coll == C_REDUCE)
                            ? op_names[o->op]
                            : "none";
    const int root = (o->coll == C_BCAST || o->coll == C_REDUCE) ? o->root : -1;
    for (size_t bytes = o->minbytes; bytes <= o->maxbytes;) {
        struct geom g = geometry(o->coll, bytes, tsize);
        if (g.count == 0) {
            if (g_rank == 0) /* a comment line in text; CSV and JSON rows stay alone on stdout */
                fprintf(o->format == FMT_TEXT ? stdout : stderr,
                        "# %zu B: fewer than one %s per rank, skipped\n", bytes, type_names[o->type]);
        } else {
            int have_ref = o->check ? fill_expected(o, h->expected, &g) : 0;
            struct pass op = measure(o, tgt, &g, 0, sendbuf, recvbuf, have_ref, h);
            struct pass ip = {0};
            if (o->inplace)
                ip = measure(o, tgt, &g, 1, sendbuf, recvbuf, have_ref, h);
            *total_wrong += op.wrong + ip.wrong;
            *bw_sum += (double)g.size_bytes / 1e9 / op.med * bus_factor(o->coll, g_nranks);
            ++*bw_n;
            if (g_rank == 0)
                print_row(o, &g, redop, root, &op, &ip);
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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);

    struct opts o;
    int pr = parse_opts(argc, argv, &o);
    if (pr != 0) {
        if (pr < 0 && g_rank == 0)
            usage(stderr);
        MPI_Finalize();
        return pr < 0 ? 2 : 0;
    }

    /* what -d all, -o all and -r all run, one after the other */
    dfcclDataType_t types[dfcclNumTypes];
    int ntypes = 0;
    for (int t = 0; t < dfcclNumTypes; t++)
        if (o.all_types ? o.api != API_MPI || mpi_type((dfcclDataType_t)t) != MPI_DATATYPE_NULL
                        : t == (int)o.type)
            types[ntypes++] = (dfcclDataType_t)t;
    const int reducing = o.coll == C_ALLREDUCE || o.coll == C_REDUCE_SCATTER || o.coll == C_REDUCE;
    const int rooted = o.coll == C_BCAST || o.coll == C_REDUCE;
    size_t tsize = 0; /* the largest type's size: the buffers fit every type */
    for (int i = 0; i < ntypes; i++)
        if (dfcclTypeSize(types[i]) > tsize)
            tsize = dfcclTypeSize(types[i]);
    if (tsize == 0)
        die("dfcclTypeSize(%s) returned 0", type_names[o.type]);

    /* -B device -A mpi with nothing in MPI that takes device pointers: refused rather
     * than crashing in Open MPI's host code. */
    if (o.mem == MEM_DEVICE && o.api == API_MPI) {
        int unable = dfccl_component_loaded() == 0 && !mpi_cuda_aware(), any;
        MPI_Allreduce(&unable, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            if (g_rank == 0)
                fprintf(stderr,
                        "dfccl-bench: -B device -A mpi: Open MPI's coll component dfccl is not loaded and "
                        "this MPI is not CUDA-aware (it would read device buffers as host memory)\n");
            MPI_Finalize();
            return 2;
        }
    }

    /* -B device without a usable GPU: one message (the lowest failing rank's) and
     * exit status 2 on every rank, as for a bad option. */
    char device[256] = "";
    if (o.mem == MEM_DEVICE) {
        char err[256] = "";
        int bad = device_init(err, sizeof err, device, sizeof device) ? g_rank : g_nranks, first;
        MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (first < g_nranks) {
            if (g_rank == first)
                fprintf(stderr, "dfccl-bench: rank %d: %s\n", g_rank, err);
            MPI_Finalize();
            return 2;
        }
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
        g_engine = mpi_engine(&o);
    print_header(&o, device);

    /* Buffers sized for the largest step. */
    size_t alloc_send = tsize, alloc_recv = tsize;
    for (int i = 0; i < ntypes; i++) {
        const size_t ts = dfcclTypeSize(types[i]);
        const struct geom gmax = geometry(o.coll, o.maxbytes, ts);
        if (gmax.send_elems * ts > alloc_send)
            alloc_send = gmax.send_elems * ts;
        if (gmax.recv_elems * ts > alloc_recv)
            alloc_recv = gmax.recv_elems * ts;
    }
    const int dev = o.mem == MEM_DEVICE;
    void *sendbuf = buf_alloc(o.mem, alloc_send);
    void *recvbuf = buf_alloc(o.mem, alloc_recv);
    struct scratch h = {
        .send_img = dev ? malloc(alloc_send) : NULL,
        .recv_img = dev && o.check ? malloc(alloc_recv) : NULL,
        .expected = o.check ? malloc(alloc_recv) : NULL,
        .times = malloc(sizeof(double) * (size_t)(o.iters > 0 ? o.iters : 1)),
        .maxtimes = malloc(sizeof(double) * (size_t)(o.iters > 0 ? o.iters : 1)),
    };
    if (!sendbuf || !recvbuf || (dev && !h.send_img) || (dev && o.check && !h.recv_img) ||
        (o.check && !h.expected) || !h.times || !h.maxtimes)
        die("out of memory allocating %zu + %zu bytes of %s memory", alloc_send, alloc_recv,
            mem_names[o.mem]);
    buf_set(o.mem, recvbuf, 0, alloc_recv);

    uint64_t total_wrong = 0;
    double bw_sum = 0;
    int bw_n = 0;

    for (int ti = 0; ti < ntypes; ti++)
        for (int op = 0; op < dfcclNumOps; op++)
            for (int root = 0; root < g_nranks; root++) {
                if (o.all_ops && reducing ? op >= dfcclBand && is_float_type(types[ti]) : op != (int)o.op)
                    continue;
                if (o.all_roots && rooted ? 0 : root != o.root)
                    continue;
                struct opts oo = o;
                oo.type = types[ti];
                oo.op = (dfcclRedOp_t)op;
                oo.root = root;
                run_sizes(&oo, &tgt, sendbuf, recvbuf, &h, &total_wrong, &bw_sum, &bw_n);
            }

    if (g_rank == 0 && o.format == FMT_TEXT) {
        if (o.check)
            printf("# Out of bounds values : %" PRIu64 " %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        else
            printf("# Out of bounds values : not checked (-c 0)\n");
        printf("# Avg bus bandwidth    : %g\n", bw_n ? bw_sum / bw_n : 0.0);
    }

    if (o.stats) {
        dfcclStats_t st;
        DFCHECK(dfcclCommGetStats(tgt.comm, &st));
        uint64_t mine[6] = {st.submitted, st.completed, st.preemptions, st.stalls, st.stall_ns, st.shm_bytes};
        uint64_t sum[6] = {0};
        MPI_Reduce(mine, sum, 6, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        if (g_rank == 0)
            printf("# dfccl stats (summed over %d ranks): submitted %" PRIu64 " completed %" PRIu64
                   " preemptions %" PRIu64 " (with nothing moved %" PRIu64
                   ") waited_ms %.3f shm_bytes %" PRIu64 "\n",
                   g_nranks, sum[0], sum[1], sum[2], sum[3], (double)sum[4] / 1e6, sum[5]);
    }
    if (g_rank == 0)
        fflush(stdout);

    if (tgt.comm)
        DFCHECK(dfcclCommDestroy(tgt.comm));
    if (tgt.mc != MPI_COMM_NULL)
        MPI_Comm_free(&tgt.mc);
    buf_free(o.mem, sendbuf);
    buf_free(o.mem, recvbuf);
    free(h.send_img);
    free(h.recv_img);
    free(h.expected);
    free(h.times);
    free(h.maxtimes);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
