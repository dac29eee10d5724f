/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component instance and its MCA parameters (coll_dfccl_*).
 *
 * Each engine knob is an MCA variable whose default is the engine's. One set
 * explicitly (command line, file, OMPI_MCA_ environment) becomes a set field of the
 * dfcclConfig_t every engine communicator is created with (mca_coll_dfccl_engine_config);
 * one left at its default stays unset there, so that the engine takes its DFCCL_*
 * variable: one given with `mpirun -x` works too.
 */
#include "ompi_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

#include "coll_dfccl.h"
#include "coll_dfccl_cuda.h"

int mca_coll_dfccl_output = -1;

static int dfccl_register(void);
static int dfccl_open(void);
static int dfccl_close(void);

mca_coll_dfccl_component_t mca_coll_dfccl_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_BASE_VERSION_2_0_0,
                    .mca_component_name = "dfccl",
                    MCA_BASE_MAKE_VERSION(component, DFCCL_MAJOR, DFCCL_MINOR, DFCCL_PATCH),
                    .mca_open_component = dfccl_open,
                    .mca_close_component = dfccl_close,
                    .mca_register_component_params = dfccl_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_NONE},
            .collm_init_query = mca_coll_dfccl_init_query,
            .collm_comm_query = mca_coll_dfccl_comm_query,
        },
    .priority = 78,
    .verbose = 0,
    .enable = true,
    .host_buffers = false,
    .device_staged = false,
    .check = false,
    .fake_device = false,
    .eager = false,
    .device_sync = false,
    .knobs =
        {
            {"preempt", MCA_COLL_DFCCL_FIELD(preempt),
             "1: preempt a collective stalled on its peers and run another one (deadlock-free); "
             "0: run each collective to completion (deadlocks like NCCL; for tests and comparisons). "
             "Default 1 (0 or 1)",
             1, -1},
            {"threshold_base_ns", MCA_COLL_DFCCL_FIELD(thresholdBaseNs),
             "How long a fresh collective may wait at a peer before it is preempted. "
             "Default 20000 (nanoseconds)",
             20000, -1},
            {"threshold_growth", MCA_COLL_DFCCL_FIELD(thresholdGrowth),
             "After a wait of w ns is satisfied, the collective's threshold rises toward this times w. "
             "Default 4 (factor)",
             4, -1},
            {"threshold_max_ns", MCA_COLL_DFCCL_FIELD(thresholdMaxNs),
             "Cap of the adaptive preemption threshold. Default 5000000 (nanoseconds)", 5000000, -1},
            {"head_factor", MCA_COLL_DFCCL_FIELD(headFactor),
             "The oldest runnable collective waits this many times longer before it yields. "
             "Default 4 (factor)",
             4, -1},
            {"slots", MCA_COLL_DFCCL_FIELD(slots),
             "Collectives of one communicator in flight at once. Default 2 (slots, 1-64)", 2, -1},
            {"channels", MCA_COLL_DFCCL_FIELD(channels),
             "Parts a collective is split into, scheduled independently. Default 1 (channels, 1-32)", 1, -1},
            {"cpu_threads", MCA_COLL_DFCCL_FIELD(cpuThreads),
             "Threads of the CPU daemon (host buffers); channel c runs on thread c mod this, so more "
             "than channels leaves threads idle. Default 1 (threads, 1-32)",
             1, -1},
            {"net_threads", MCA_COLL_DFCCL_FIELD(netThreads),
             "Proxy threads of the net transport, each with its own UCX worker; the connections "
             "of channel c move on proxy c mod this (the fewest any rank runs). 0: one per 2 "
             "cores of the rank (its binding, else the host's cores over the local ranks), 1-4. "
             "Default 0 (threads, 0-8)",
             0, -1},
            {"net_piece", MCA_COLL_DFCCL_FIELD(netPiece),
             "Steps to peers on the same host (over UCX when coll_dfccl_net=ucx) go as eager "
             "messages of at most this many bytes, each fitting one UCX shared-memory fragment; "
             "0 sends each step as one message. Default 8128 (bytes)",
             8128, -1},
            {"chunk_size", MCA_COLL_DFCCL_FIELD(chunkSize),
             "Bytes per FIFO step, rounded down to a multiple of 64. Default 65536 (bytes)", 65536, -1},
            {"fifo_depth", MCA_COLL_DFCCL_FIELD(fifoDepth),
             "FIFO steps per connection. Default 4 (steps, 2-64)", 4, -1},
            {"oneshot_max", MCA_COLL_DFCCL_FIELD(oneshotMax),
             "All-reduces up to this size use the one-shot algorithm, larger ones the ring "
             "(at most FIFO depth x the smallest FIFO step). Default 32768 (bytes)",
             32768, -1},
            {"ll_max", MCA_COLL_DFCCL_FIELD(llMax),
             "Collectives whose piece (what one rank sends one peer: the buffer of an "
             "allreduce, reduce or bcast, a rank's block of the others) is up to this size, "
             "and barriers, run in one round of LL lines (data and flag in each 8-byte word), "
             "at most half the smallest FIFO step; 0 turns LL off. Default 8192 (bytes)",
             8192, -1},
            {"direct_max", MCA_COLL_DFCCL_FIELD(directMax),
             "All-reduces (two-shot), reduce-scatters, all-gathers and all-to-alls whose larger "
             "buffer (a rank's input or output) is up to this size exchange with every peer at "
             "once: one or two dependent steps instead of the ring's 2N-1; 0 turns it off. "
             "Default 0 (bytes; off until measured on a GPU, 4194304 is the intended value)",
             0, -1},
            {"oneshot_ranks", MCA_COLL_DFCCL_FIELD(oneshotRanks),
             "Communicators of up to this many ranks run the all-reduces of coll_dfccl_direct_max "
             "on device buffers one-shot over every channel (each rank reads every rank's whole "
             "buffer: one dependent step, N-1 times the traffic), larger ones two-shot; 0: always "
             "two-shot. Default 2 (ranks, 0-32)",
             2, -1},
            {"stall_report", MCA_COLL_DFCCL_FIELD(stallReportMs),
             "A collective stalled this long logs once which ranks have not arrived; 0: never. "
             "Default 10000 (milliseconds)",
             10000, -1},
            {"timeout", MCA_COLL_DFCCL_FIELD(timeoutMs),
             "Fail a collective stalled this long (the MPI call returns an error) and abort its "
             "engine communicator; 0: wait forever. Default 0 (milliseconds)",
             0, -1},
            {"gpu_channels", MCA_COLL_DFCCL_FIELD(gpuChannels),
             "Blocks of the GPU daemon kernel; block c runs channel c of every collective on device "
             "buffers. 0: set by the first communicator, so that the processes sharing a GPU together "
             "take about its SMs (64 each with 2, 32 with 4, 16 with 8; 32 for a process alone on its "
             "GPU). Default 0 (blocks, 0-64)",
             0, -1},
            {"gpu_threads", MCA_COLL_DFCCL_FIELD(gpuThreads),
             "Threads per GPU daemon block. Default 512 (threads, 64-512)", 512, -1},
            {"gpu_chunk_size", MCA_COLL_DFCCL_FIELD(gpuChunkSize),
             "Bytes per FIFO step of the GPU daemon in the ring's direction, rounded down to a "
             "multiple of 64. Default 131072 (bytes)",
             131072, -1},
            {"gpu_net_chunk_size", MCA_COLL_DFCCL_FIELD(gpuNetChunkSize),
             "The same on communicators with peers over the net transport (host-staged steps), "
             "at most gpu_chunk_size, rounded down to a multiple of 64. Default 65536 (bytes)",
             65536, -1},
            {"gpu_idle_quit", MCA_COLL_DFCCL_FIELD(gpuIdleQuitUs),
             "The GPU daemon kernel exits after this long with nothing to do (cudaFree and "
             "cudaDeviceSynchronize wait for it); the next collective relaunches it. "
             "Default 1000 (microseconds)",
             1000, -1},
            {"gpu_stall_quit", MCA_COLL_DFCCL_FIELD(gpuStallQuitUs),
             "The GPU daemon kernel exits after every collective it holds has been stalled this "
             "long, so that the application's cudaDeviceSynchronize returns; progress relaunches "
             "it. Default 2000 (microseconds)",
             2000, -1},
            {"gpu_trace", MCA_COLL_DFCCL_FIELD(gpuTrace),
             "1: the GPU daemon time-stamps the stages of every single-channel collective and each "
             "engine communicator's destroy logs their medians (a diagnostic). Default 0 (0/1)",
             0, -1},
        },
    .keyval = MPI_KEYVAL_INVALID,
};

/* Open MPI parses an int or bool MCA value loosely ("abc" is 0, "-1" an unsigned 2^64-1,
 * "banana" false): every coll_dfccl_* variable is registered as a string and parsed
 * here, strictly; a value refused is said with its name and turns the component off. */

/* a count: decimal (or 0x hex), optionally k, m or g (x1024, as Open MPI's own ints) */
static bool parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
    if (!s || !*s || *s == '-' || *s == '+' || isspace((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s)
        return false;
    unsigned long long mul = 1;
    if (*end) {
        const char c = (char)tolower((unsigned char)*end);
        mul = c == 'k' ? 1ull << 10 : c == 'm' ? 1ull << 20 : c == 'g' ? 1ull << 30 : 0;
        if (!mul || end[1])
            return false;
    }
    if (v > max / mul)
        return false;
    *out = v * mul;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on", "enabled"};
    static const char *const no[] = {"0", "false", "no", "off", "disabled"};
    for (size_t i = 0; s && i < sizeof(yes) / sizeof(yes[0]); i++)
        if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
            *out = !strcasecmp(s, yes[i]);
            return true;
        }
    return false;
}

static void refuse(const char *name, const char *value, const char *expected)
{
    mca_coll_dfccl_component.bad_params = true;
    opal_output(0,
                "[dfccl] ERROR: MCA parameter coll_dfccl_%s=%s: expected %s; the dfccl coll component is off "
                "in this process",
                name, value, expected);
}

/* edit distance of two short names (capped at 9) */
static int name_distance(const char *a, const char *b)
{
    const size_t la = strlen(a), lb = strlen(b);
    int prev[64], cur[64];
    if (la > 63 || lb > 63)
        return 9;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            const int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            const int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

#define NPARAMS 9

/* A coll_dfccl_* name given (mpirun --mca and OMPI_MCA_ reach the processes as OMPI_MCA_
 * variables) that is no parameter of ours: a typo, said with the closest name. */
static void warn_unknown_names(const char *const *names, int n)
{
    extern char **environ;
    static const char prefix[] = "OMPI_MCA_coll_dfccl_";
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, prefix, sizeof(prefix) - 1) || !eq)
            continue;
        char name[64];
        const size_t len = (size_t)(eq - *e) - (sizeof(prefix) - 1);
        snprintf(name, sizeof name, "%.*s", (int)len, *e + sizeof(prefix) - 1);
        const char *best = NULL;
        int best_d = 4; /* suggest only close names */
        bool known = false;
        for (int i = 0; i < n && !known; i++) {
            known = !strcmp(name, names[i]);
            const int d = name_distance(name, names[i]);
            if (d < best_d) {
                best_d = d;
                best = names[i];
            }
        }
        if (!known)
            opal_output(0, "[dfccl] WARNING: coll_dfccl_%s is not a dfccl MCA parameter and is ignored%s%s%s",
                        name, best ? " (did you mean coll_dfccl_" : "", best ? best : "", best ? "?)" : "");
    }
}

static int dfccl_register(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    const mca_base_component_t *c = &cm->super.collm_version;
    /* priority, verbose and the component's switches (read once) */
    const struct {
        const char *name, *help, *def;
        int level;
        mca_base_var_scope_t scope;
        int *ivar;
        bool *bvar;
    } params[NPARAMS] = {
        {"priority",
         "Priority of the dfccl coll component. Default 78 (above self's 75, so that every collective it "
         "does not take over has a previous module)",
         "78", OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY, &cm->priority, NULL},
        {"verbose",
         "Verbosity of the dfccl coll component: 1 set-up, 2 engine communicators, 3 the path of every "
         "collective call, 5 why a call could not run on the engine. Default 0 (errors only)",
         "0", OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_LOCAL, &cm->verbose, NULL},
        {"enable", "Enable the dfccl coll component. Default 1 (0 or 1)", "1", OPAL_INFO_LVL_3,
         MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->enable},
        {"host_buffers",
         "1: run collectives on host buffers on the engine's CPU backend too; 0: host buffers go to the "
         "previous coll module untouched. Default 0 (0 or 1)",
         "0", OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->host_buffers},
        {"device_staged",
         "1: device buffers are copied to host memory and the previous coll module runs the collective "
         "(what a non-CUDA-aware MPI user does by hand), instead of the engine: a baseline for "
         "measurements. Default 0 (0 or 1)",
         "0", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->device_staged},
        {"check",
         "1: before every collective, compare what each rank passed (collective, byte count, the "
         "datatype's basic types, memory kind, recvcounts, root, op) in one private exchange per call "
         "that never blocks out of order, and fail the call (or its request) with MPI_ERR_ARG on every "
         "rank instead of hanging. Default 0 (0 or 1)",
         "0", OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->check},
        {"eager",
         "1: start setting up the engine communicator when the MPI communicator is created; 0: at its "
         "first engine call. The set-up never blocks the caller either way (it runs on a thread of its "
         "own; the communicator's engine calls wait for it). Default 0 (0 or 1)",
         "0", OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->eager},
        {"device_sync",
         "1: before each call on device buffers that the GPU daemon runs, wait for the application's "
         "legacy default stream (costs 2-6 us a call with several ranks on one GPU); 0: the application "
         "synchronizes the streams that wrote the buffers, as with any CUDA-aware MPI (synchronous "
         "cudaMemcpy/cudaMemset into them are covered by the SYNC_MEMOPS attribute dfccl sets). Default 0 "
         "(0 or 1)",
         "0", OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->device_sync},
        {"fake_device",
         "Testing only: treat every buffer as device memory, so that the staging paths run on a machine "
         "without a GPU. Default 0 (0 or 1)",
         "0", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->fake_device},
    };
    static char defs[MCA_COLL_DFCCL_NUM_KNOBS][24];

    cm->bad_params = false;
    for (int i = 0; i < NPARAMS; i++) {
        cm->param_str[i] = (char *)params[i].def;
        (void)mca_base_component_var_register(c, params[i].name, params[i].help, MCA_BASE_VAR_TYPE_STRING,
                                              NULL, 0, 0, params[i].level, params[i].scope,
                                              &cm->param_str[i]);
    }
    /* a string, so not one of the knobs; passed the same way (only when set) */
    cm->net = "auto";
    cm->net_var_index = mca_base_component_var_register(
        c, "net",
        "Transport between the engine's ranks: auto (peers on the same host over shared "
        "memory, peers on other hosts over UCX), ucx (every other rank over UCX, even on "
        "the same host; for testing). As DFCCL_NET. UCX's own variables (UCX_TLS, "
        "UCX_NET_DEVICES, ...) pass through unchanged. Default auto",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &cm->net);
    for (int i = 0; i < MCA_COLL_DFCCL_NUM_KNOBS; i++) {
        mca_coll_dfccl_knob_t *k = &cm->knobs[i];
        snprintf(defs[i], sizeof defs[i], "%llu", k->value);
        k->str = defs[i];
        k->var_index =
            mca_base_component_var_register(c, k->name, k->help, MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0,
                                            OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &k->str);
    }

    /* every value as given, strictly */
    for (int i = 0; i < NPARAMS; i++) {
        const char *v = cm->param_str[i];
        unsigned long long n = 0;
        if (params[i].ivar) {
            if (parse_count(v, INT32_MAX, &n))
                *params[i].ivar = (int)n;
            else
                refuse(params[i].name, v ? v : "", "an integer in [0, 2147483647]");
        } else if (!parse_bool(v, params[i].bvar)) {
            refuse(params[i].name, v ? v : "", "0 or 1 (or true/false, yes/no, on/off)");
        }
    }
    for (int i = 0; i < MCA_COLL_DFCCL_NUM_KNOBS; i++) {
        mca_coll_dfccl_knob_t *k = &cm->knobs[i];
        const unsigned long long max = k->field_size == sizeof(int32_t) ? INT32_MAX : INT64_MAX;
        if (!parse_count(k->str, max, &k->value)) {
            char expected[96];
            snprintf(expected, sizeof expected, "a non-negative integer up to %llu (k, m, g: x1024)", max);
            refuse(k->name, k->str ? k->str : "", expected);
        }
    }
    if (!cm->net || (strcasecmp(cm->net, "auto") && strcasecmp(cm->net, "ucx")))
        refuse("net", cm->net ? cm->net : "", "auto or ucx");
    if (cm->bad_params)
        cm->enable = false;

    const char *names[NPARAMS + 1 + MCA_COLL_DFCCL_NUM_KNOBS];
    for (int i = 0; i < NPARAMS; i++)
        names[i] = params[i].name;
    names[NPARAMS] = "net";
    for (int i = 0; i < MCA_COLL_DFCCL_NUM_KNOBS; i++)
        names[NPARAMS + 1 + i] = cm->knobs[i].name;
    warn_unknown_names(names, NPARAMS + 1 + MCA_COLL_DFCCL_NUM_KNOBS);
    return OMPI_SUCCESS;
}

static int dfccl_open(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    mca_coll_dfccl_output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_dfccl_output, cm->verbose);
    OBJ_CONSTRUCT(&cm->lock, opal_mutex_t);
    cm->engine_ready = false;
    cm->active = NULL;
    cm->live = NULL;
    DFCCL_VERBOSE(1, "dfccl coll component %d.%d.%d open: enable %d, priority %d, host_buffers %d",
                  DFCCL_MAJOR, DFCCL_MINOR, DFCCL_PATCH, (int)cm->enable, cm->priority,
                  (int)cm->host_buffers);
    return OMPI_SUCCESS;
}

static int dfccl_close(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    /* before the library is unloaded: nothing of ours may stay in opal_progress, and
     * no engine daemon thread may outlive the code it runs */
    mca_coll_dfccl_engine_shutdown();
    mca_coll_dfccl_cuda_fini();
    OBJ_DESTRUCT(&cm->lock);
    DFCCL_VERBOSE(1, "dfccl coll component closed");
    opal_output_close(mca_coll_dfccl_output);
    mca_coll_dfccl_output = -1;
    return OMPI_SUCCESS;
}

/* One knob set explicitly: not at its default. */
static bool explicitly_set(int var_index)
{
    mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
    return var_index >= 0 && mca_base_var_get_value(var_index, NULL, &source, NULL) == OPAL_SUCCESS &&
           source != MCA_BASE_VAR_SOURCE_DEFAULT;
}

void mca_coll_dfccl_engine_config(dfcclConfig_t *cfg)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    *cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    for (int i = 0; i < MCA_COLL_DFCCL_NUM_KNOBS; i++) {
        const mca_coll_dfccl_knob_t *k = &cm->knobs[i];
        if (!explicitly_set(k->var_index))
            continue;
        /* fits its field (checked at registration); out of the engine's range: refused there */
        char *field = (char *)cfg + k->field_off;
        if (k->field_size == sizeof(int32_t)) {
            const int32_t v = (int32_t)k->value;
            memcpy(field, &v, sizeof(v));
        } else {
            const int64_t v = (int64_t)k->value;
            memcpy(field, &v, sizeof(v));
        }
        DFCCL_VERBOSE(1, "coll_dfccl_%s=%llu: the engine's %s", k->name, k->value, k->name);
    }
    if (cm->net && cm->net[0] && explicitly_set(cm->net_var_index)) {
        /* checked at registration: auto or ucx */
        cfg->net = !strcasecmp(cm->net, "ucx") ? dfcclNetUcx : dfcclNetAuto;
        DFCCL_VERBOSE(1, "coll_dfccl_net=%s", cm->net);
    }
    /* verbose 2 (engine communicators): let the engine say which transport each peer
     * uses, unless DFCCL_LOG_LEVEL was given */
    if (cm->verbose >= 2 && !getenv("DFCCL_LOG_LEVEL") && !getenv("DFCCL_DEBUG"))
        cfg->logLevel = dfcclLogInfo;
}
