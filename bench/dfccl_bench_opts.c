/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: the command line, nccl-tests' flags where they exist, and
 * the help. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dfccl_bench_call.h"
#include "dfccl_bench_data.h"
#include "dfccl_bench_opts.h"

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
    int t = lookup(s, bench_type_names, dfcclNumTypes);
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

void bench_usage(FILE *f)
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

static void set_defaults(struct opts *o)
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
}

/* What one option's parse found: taken, not one of this function's options, a bad
 * value (the caller says so), or refused with a message of its own. */
enum { OPT_TAKEN, OPT_OTHER, OPT_BAD, OPT_REFUSED };

/* The options that choose what is measured: sizes and steps (-f, -i seen: *step_f,
 * *step_i), the collective, type, op and root. */
static int parse_what(int c, const char *arg, struct opts *o, int *step_f, int *step_i)
{
    int v;
    switch (c) {
    case 'b': return parse_size(arg, &o->minbytes) ? OPT_BAD : OPT_TAKEN;
    case 'e': return parse_size(arg, &o->maxbytes) ? OPT_BAD : OPT_TAKEN;
    case 'f':
        if (parse_int(arg, 2, 1 << 20, &v))
            return OPT_BAD;
        o->factor = (size_t)v;
        *step_f = 1;
        return OPT_TAKEN;
    case 'i':
        if (parse_size(arg, &o->stepbytes) || o->stepbytes == 0)
            return OPT_BAD;
        *step_i = 1;
        return OPT_TAKEN;
    case 'k':
        if ((v = lookup(arg, bench_coll_names, C_NUM)) < 0) {
            if (!strcmp(arg, "broadcast"))
                v = C_BCAST;
            else if (!strcmp(arg, "reducescatter"))
                v = C_REDUCE_SCATTER;
            else if (!strcmp(arg, "all_reduce"))
                v = C_ALLREDUCE;
            else if (!strcmp(arg, "all_gather"))
                v = C_ALLGATHER;
            else
                return OPT_BAD;
        }
        o->coll = (enum coll)v;
        return OPT_TAKEN;
    case 'd':
        if ((o->all_types = !strcmp(arg, "all")))
            return OPT_TAKEN;
        if ((v = parse_type(arg)) < 0)
            return OPT_BAD;
        o->type = (dfcclDataType_t)v;
        return OPT_TAKEN;
    case 'o':
        if ((o->all_ops = !strcmp(arg, "all")))
            return OPT_TAKEN;
        if ((v = lookup(arg, bench_op_names, dfcclNumOps)) < 0)
            return OPT_BAD;
        o->op = (dfcclRedOp_t)v;
        return OPT_TAKEN;
    case 'r':
        if ((o->all_roots = !strcmp(arg, "all")))
            return OPT_TAKEN;
        return parse_int(arg, 0, INT_MAX, &o->root) ? OPT_BAD : OPT_TAKEN;
    default: return OPT_OTHER;
    }
}

/* The options that choose how the iterations run and what is printed; also nccl-tests'
 * threads, GPUs and parallel init, which one rank per process fixes. */
static int parse_how(int c, const char *arg, struct opts *o)
{
    int v;
    switch (c) {
    case 'm': /* before nccl-tests' meaning, -m chose the memory: say where that went */
        if (!strcmp(arg, "host") || !strcmp(arg, "device")) {
            if (bench_rank == 0)
                fprintf(stderr, "dfccl-bench: -m is nccl-tests' --agg_iters; buffers: -B %s\n", arg);
            return OPT_REFUSED;
        }
        return parse_int(arg, 1, 1000000, &o->agg) ? OPT_BAD : OPT_TAKEN;
    case 'a': /* before nccl-tests' meaning, -a chose the API */
        if (!strcmp(arg, "dfccl") || !strcmp(arg, "mpi")) {
            if (bench_rank == 0)
                fprintf(stderr, "dfccl-bench: -a is nccl-tests' --average; the API: -A %s\n", arg);
            return OPT_REFUSED;
        }
        return parse_int(arg, AVG_RANK0, AVG_MAX, &o->average) ? OPT_BAD : OPT_TAKEN;
    case 't':
    case 'g':
        if (parse_int(arg, 1, 1, &v)) {
            if (bench_rank == 0)
                fprintf(stderr,
                        "dfccl-bench: -%c %s: one rank per process (one thread, one GPU); start more "
                        "ranks with mpirun -np\n",
                        c, arg);
            return OPT_REFUSED;
        }
        return OPT_TAKEN;
    case 'p': return parse_int(arg, 0, 1, &v) ? OPT_BAD : OPT_TAKEN;
    case 'w': return parse_int(arg, 0, 1000000, &o->warmup) ? OPT_BAD : OPT_TAKEN;
    case 'n': return parse_int(arg, 1, 1000000, &o->iters) ? OPT_BAD : OPT_TAKEN;
    case 'c':
        if (parse_int(arg, 0, INT_MAX, &v))
            return OPT_BAD;
        o->check = v > 0;
        return OPT_TAKEN;
    case 'I': return parse_int(arg, 0, 1, &o->inplace) ? OPT_BAD : OPT_TAKEN;
    case 'F':
        if (!strcmp(arg, "text"))
            o->format = FMT_TEXT;
        else if (!strcmp(arg, "csv"))
            o->format = FMT_CSV;
        else if (!strcmp(arg, "json"))
            o->format = FMT_JSON;
        else
            return OPT_BAD;
        return OPT_TAKEN;
    case 'P': o->stats = 1; return OPT_TAKEN;
    case 's':
        if (!strcmp(arg, "mpi"))
            o->sync = SYNC_MPI;
        else if (!strcmp(arg, "dfccl"))
            o->sync = SYNC_DFCCL;
        else if (!strcmp(arg, "none"))
            o->sync = SYNC_NONE;
        else
            bench_die("-s %s: expected mpi, dfccl or none", arg);
        return OPT_TAKEN;
    case 'B':
        if ((v = lookup(arg, bench_mem_names, 2)) < 0)
            return OPT_BAD;
        o->mem = v;
        return OPT_TAKEN;
    case 'A':
        if ((v = lookup(arg, bench_api_names, 2)) < 0)
            return OPT_BAD;
        o->api = v;
        return OPT_TAKEN;
    default: return OPT_OTHER;
    }
}

/* The options together: 0 when they make a run, else -1 (rank 0 says why). */
static int check_opts(struct opts *o, int step_f, int step_i)
{
    if (step_f && step_i) {
        if (bench_rank == 0)
            fprintf(stderr, "dfccl-bench: -f and -i both given: one way of stepping, please\n");
        return -1;
    }
    if (step_i)
        o->factor = 0;
    if (o->minbytes == 0)
        o->minbytes = o->all_types ? 8 : dfcclTypeSize(o->type);
    if (o->maxbytes < o->minbytes) {
        if (bench_rank == 0)
            fprintf(stderr, "dfccl-bench: -e %zu is smaller than -b %zu\n", o->maxbytes, o->minbytes);
        return -1;
    }
    if (!o->all_ops && !o->all_types && o->op >= dfcclBand && bench_is_float_type(o->type)) {
        if (bench_rank == 0)
            fprintf(stderr, "dfccl-bench: -o %s needs an integer type\n", bench_op_names[o->op]);
        return -1;
    }
#ifndef DFCCL_BENCH_CUDA
    if (o->mem == MEM_DEVICE) {
        if (bench_rank == 0)
            fprintf(stderr,
                    "dfccl-bench: -B device: this dfccl-bench was built without CUDA (configure found "
                    "no nvcc); only -B host works\n");
        return -1;
    }
#endif
    if (o->api == API_MPI) {
        char why[160] = "";
        if (!o->all_types && dfcclMpiDatatype(o->type) == MPI_DATATYPE_NULL)
            snprintf(why, sizeof why, "-d %s: MPI has no such type (use -A dfccl or another -d)",
                     bench_type_names[o->type]);
        else if (o->sync == SYNC_DFCCL)
            snprintf(why, sizeof why, "-s dfccl needs a dfccl communicator, which -A mpi does not create");
        else if (o->stats)
            snprintf(why, sizeof why, "-P reports the dfccl communicator, which -A mpi does not create");
        else if (bench_geometry(o->coll, o->maxbytes, o->all_types ? 1 : dfcclTypeSize(o->type)).count >
                 INT_MAX)
            snprintf(why, sizeof why, "-e %zu: a count over INT_MAX, MPI's limit", o->maxbytes);
        if (why[0]) {
            if (bench_rank == 0)
                fprintf(stderr, "dfccl-bench: -A mpi: %s\n", why);
            return -1;
        }
    }
    if (!o->all_roots && o->root >= bench_nranks) {
        if (bench_rank == 0)
            fprintf(stderr, "dfccl-bench: -r %d but only %d ranks\n", o->root, bench_nranks);
        return -1;
    }
    return 0;
}

int bench_parse_opts(int argc, char **argv, struct opts *o)
{
    set_defaults(o);
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
    int c, step_f = 0, step_i = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:e:f:i:k:d:o:r:w:n:m:a:c:t:g:p:I:F:Ps:B:A:h", longopts, NULL)) !=
           -1) {
        int r = parse_what(c, optarg, o, &step_f, &step_i);
        if (r == OPT_OTHER)
            r = parse_how(c, optarg, o);
        if (r == OPT_TAKEN)
            continue;
        if (r == OPT_REFUSED)
            return -1;
        if (r == OPT_BAD) {
            if (bench_rank == 0)
                fprintf(stderr, "dfccl-bench: bad value '%s' for -%c\n", optarg, c);
            return -1;
        }
        if (c == 'h') {
            if (bench_rank == 0)
                bench_usage(stdout);
            return 1;
        }
        if (bench_rank == 0) {
            if (c == ':')
                fprintf(stderr, "dfccl-bench: option %s needs an argument\n", argv[optind - 1]);
            else
                fprintf(stderr, "dfccl-bench: unknown option %s\n", argv[optind - 1]);
        }
        return -1;
    }
    if (optind < argc) {
        if (bench_rank == 0)
            fprintf(stderr, "dfccl-bench: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return check_opts(o, step_f, step_i);
}
