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

#include <stdint.h>
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
             "Default 4194304 (bytes)",
             4194304, -1},
            {"oneshot_ranks", MCA_COLL_DFCCL_FIELD(oneshotRanks),
             "Communicators of up to this many ranks run the all-reduces of coll_dfccl_direct_max on "
             "device buffers one-shot over every channel (each rank reads every rank's whole buffer: one "
             "dependent "
             "step, N-1 times the traffic), larger ones two-shot; 0: always two-shot. Default 2 "
             "(ranks, 0-32)",
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

static int dfccl_register(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    const mca_base_component_t *c = &cm->super.collm_version;

    (void)mca_base_component_var_register(c, "priority",
                                          "Priority of the dfccl coll component. Default 78 "
                                          "(above self's 75, so that every collective it does not "
                                          "take over has a previous module)",
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3,
                                          MCA_BASE_VAR_SCOPE_READONLY, &cm->priority);
    (void)mca_base_component_var_register(c, "verbose",
                                          "Verbosity of the dfccl coll component: 1 set-up, 2 "
                                          "engine communicators, 3 the path of every collective "
                                          "call, 5 why a call could not run on the engine. "
                                          "Default 0 (errors only)",
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3,
                                          MCA_BASE_VAR_SCOPE_LOCAL, &cm->verbose);
    /* the component's switches (bool, read once) */
    const struct {
        const char *name, *help;
        int level;
        bool *var;
    } flags[] = {
        {"enable", "Enable the dfccl coll component. Default 1 (0 or 1)", OPAL_INFO_LVL_3, &cm->enable},
        {"host_buffers",
         "1: run collectives on host buffers on the engine's CPU backend too; 0: host buffers go to the "
         "previous coll module untouched. Default 0 (0 or 1)",
         OPAL_INFO_LVL_3, &cm->host_buffers},
        {"device_staged",
         "1: device buffers are copied to host memory and the previous coll module runs the collective "
         "(what a non-CUDA-aware MPI user does by hand), instead of the engine: a baseline for "
         "measurements. Default 0 (0 or 1)",
         OPAL_INFO_LVL_5, &cm->device_staged},
        {"check",
         "1: before every collective, compare what each rank passed (collective, byte count, the "
         "datatype's basic types, memory kind, recvcounts, root, op) in one private exchange per call "
         "that never blocks out of order, and fail the call (or its request) with MPI_ERR_ARG on every "
         "rank instead of hanging. Default 0 (0 or 1)",
         OPAL_INFO_LVL_4, &cm->check},
        {"eager",
         "1: start setting up the engine communicator when the MPI communicator is created; 0: at its "
         "first engine call. The set-up never blocks the caller either way (it runs on a thread of its "
         "own; the communicator's engine calls wait for it). Default 0 (0 or 1)",
         OPAL_INFO_LVL_4, &cm->eager},
        {"device_sync",
         "1: before each call on device buffers that the GPU daemon runs, wait for the application's "
         "legacy default stream (costs 2-6 us a call with several ranks on one GPU); 0: the application "
         "synchronizes the streams that wrote the buffers, as with any CUDA-aware MPI (synchronous "
         "cudaMemcpy/cudaMemset into them are covered by the SYNC_MEMOPS attribute dfccl sets). Default 0 "
         "(0 or 1)",
         OPAL_INFO_LVL_4, &cm->device_sync},
        {"fake_device",
         "Testing only: treat every buffer as device memory, so that the staging paths run on a machine "
         "without a GPU. Default 0 (0 or 1)",
         OPAL_INFO_LVL_9, &cm->fake_device},
    };
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        (void)mca_base_component_var_register(c, flags[i].name, flags[i].help, MCA_BASE_VAR_TYPE_BOOL, NULL,
                                              0, 0, flags[i].level, MCA_BASE_VAR_SCOPE_READONLY,
                                              flags[i].var);
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
        k->var_index =
            mca_base_component_var_register(c, k->name, k->help, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                            0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &k->value);
    }
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
        /* a value past the field's range stays out of the engine's range too: refused there */
        char *field = (char *)cfg + k->field_off;
        if (k->field_size == sizeof(int32_t)) {
            const int32_t v = k->value > INT32_MAX ? INT32_MAX : (int32_t)k->value;
            memcpy(field, &v, sizeof(v));
        } else {
            const int64_t v = k->value > INT64_MAX ? INT64_MAX : (int64_t)k->value;
            memcpy(field, &v, sizeof(v));
        }
        DFCCL_VERBOSE(1, "coll_dfccl_%s=%llu: the engine's %s", k->name, k->value, k->name);
    }
    if (cm->net && cm->net[0] && explicitly_set(cm->net_var_index)) {
        /* anything else is refused by the engine, whose message names the field */
        cfg->net = !strcasecmp(cm->net, "auto")  ? dfcclNetAuto
                   : !strcasecmp(cm->net, "ucx") ? dfcclNetUcx
                                                 : (dfcclNet_t)INT32_MAX;
        if (cfg->net == (dfcclNet_t)INT32_MAX)
            DFCCL_ERROR("coll_dfccl_net=%s: expected auto or ucx", cm->net);
        DFCCL_VERBOSE(1, "coll_dfccl_net=%s", cm->net);
    }
    /* verbose 2 (engine communicators): let the engine say which transport each peer
     * uses, unless DFCCL_LOG_LEVEL was given */
    if (cm->verbose >= 2 && !getenv("DFCCL_LOG_LEVEL") && !getenv("DFCCL_DEBUG"))
        cfg->logLevel = dfcclLogInfo;
}
