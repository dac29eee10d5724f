/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: what it prints: the header (the run's settings and
 * environment) and one row a size, in nccl-tests' text columns, CSV or JSON. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dfccl_bench_call.h"
#include "dfccl_bench_print.h"

#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif
#endif

extern char **environ;

static const char *const average_names[] = {"rank 0's time", "the mean over ranks", "the fastest rank",
                                            "the slowest rank"};

/* What runs the timed calls: "dfccl" (the native API, or MPI through dfccl's component)
 * or "openmpi" (plain Open MPI's components); in every output format, so that plots and
 * scripts can tell the two apart. */
const char *bench_engine = "dfccl";

/* nccl-tests bus bandwidth factors. */
double bench_bus_factor(enum coll c, int n)
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

static void fmt_time(char *buf, size_t len, double us)
{
    if (us >= 10000.0)
        snprintf(buf, len, "%8.0f", us);
    else if (us >= 100.0)
        snprintf(buf, len, "%8.1f", us);
    else
        snprintf(buf, len, "%8.2f", us);
}

/* One size's line (rank 0), in the format asked for. */
void bench_print_row(const struct opts *o, const struct geom *g, const char *redop, int root,
                     const struct pass *op, const struct pass *ip)
{
    const double ob = (double)g->size_bytes / 1e9 / op->med,
                 obus = ob * bench_bus_factor(o->coll, bench_nranks);
    const double ib = ip->ran ? (double)g->size_bytes / 1e9 / ip->med : 0,
                 ibus = ib * bench_bus_factor(o->coll, bench_nranks);
    char ow[32], iw[32];
    snprintf(ow, sizeof ow, o->check ? "%" PRIu64 : "N/A", op->wrong);
    snprintf(iw, sizeof iw, o->check && ip->ran ? "%" PRIu64 : "N/A", ip->wrong);
    if (o->format == FMT_CSV) {
        printf("%zu,%zu,%s,%s,%d,%.3f,%.4f,%.4f,%s,%.3f,%.3f,%.3f,", g->size_bytes, g->count,
               bench_type_names[o->type], redop, root, op->med * 1e6, ob, obus, ow, op->min * 1e6,
               op->p99 * 1e6, op->max * 1e6);
        if (ip->ran)
            printf("%.3f,%.4f,%.4f,%s,", ip->med * 1e6, ib, ibus, iw);
        else
            printf(",,,N/A,");
        printf("%s,%s,%s,%d,%s\n", bench_mem_names[o->mem], bench_api_names[o->api],
               bench_coll_names[o->coll], bench_nranks, bench_engine);
    } else if (o->format == FMT_JSON) {
        printf(
            "{\"collective\": \"%s\", \"size_bytes\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": "
            "\"%s\", \"root\": %d, \"ranks\": %d, \"memory\": \"%s\", \"api\": \"%s\", \"engine\": \"%s\", "
            "\"out_of_place\": "
            "{\"time_us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, \"wrong\": %s, \"min_us\": %.3f, "
            "\"p99_us\": %.3f, \"max_us\": %.3f}, \"in_place\": ",
            bench_coll_names[o->coll], g->size_bytes, g->count, bench_type_names[o->type], redop, root,
            bench_nranks, bench_mem_names[o->mem], bench_api_names[o->api], bench_engine, op->med * 1e6, ob,
            obus, o->check ? ow : "null", op->min * 1e6, op->p99 * 1e6, op->max * 1e6);
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
               bench_type_names[o->type], redop, root, ts, ob, obus, ow, ms, ps, xs);
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
int bench_component_loaded(void)
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
const char *bench_mpi_engine(const struct opts *o)
{
    const char *en = getenv("OMPI_MCA_coll_dfccl_enable");
    if (bench_component_loaded() <= 0 || (en && !mca_true(en)))
        return "openmpi";
    if (o->mem == MEM_DEVICE || mca_true(getenv("OMPI_MCA_coll_dfccl_host_buffers")))
        return "dfccl";
    return "openmpi";
}

/* Whether MPI itself takes device pointers (Open MPI's CUDA extension). */
int bench_mpi_cuda_aware(void)
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

void bench_print_header(const struct opts *o, const char *device)
{
    if (bench_rank != 0)
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
           version % 100, bench_nranks, host);
    char rootw[16];
    snprintf(rootw, sizeof rootw, "%d", o->root);
    printf("# collective %s, type %s, op %s, root %s\n", bench_coll_names[o->coll],
           o->all_types ? "all" : bench_type_names[o->type], o->all_ops ? "all" : bench_op_names[o->op],
           o->all_roots ? "all" : rootw);
    if (o->mem == MEM_DEVICE)
        printf("# memory device (cudaMalloc; rank 0: %s), api %s\n", device, bench_api_names[o->api]);
    else
        printf("# memory host (malloc), api %s\n", bench_api_names[o->api]);
    if (o->api == API_MPI) {
        int loaded = bench_component_loaded();
        printf("# api mpi: %s on a duplicate of MPI_COMM_WORLD; Open MPI coll component dfccl %s\n",
               bench_mpi_names[o->coll],
               loaded > 0    ? "loaded (host buffers reach the engine only with coll_dfccl_host_buffers 1)"
               : loaded == 0 ? "not loaded: plain Open MPI"
                             : "(unknown)");
    }
    printf("# engine %s\n", strcmp(bench_engine, "dfccl") ? "openmpi (plain Open MPI runs the calls)"
                            : o->api == API_MPI           ? "dfccl (through its Open MPI component)"
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
