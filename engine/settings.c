/* SPDX-License-Identifier: BSD-3-Clause */
/* The table of settings: one row per DFCCL_* variable, with its dfcclConfig_t field and
 * Open MPI parameter (coll_dfccl_<mca>) where it has them, default, unit, help and
 * parser (dfccl_setting.h). README.md and docs/usage.md say more of each. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dfccl.h"
#include "eng_config.h"
#include "eng_log.h"
#include "eng_settings.h"

/* an integer in [min, max]: decimal or 0x hex, nothing after it */
static int parse_count(const dfccl_setting_t *s, const char *text, uint64_t *out)
{
    errno = 0;
    char *end;
    const unsigned long long v = strtoull(text, &end, 0);
    if (errno || end == text || *end || text[0] == '-' || v < s->min || v > s->max)
        return -1;
    *out = v;
    return 0;
}

/* one of the words, in any case: its index */
static int parse_word(const dfccl_setting_t *s, const char *text, uint64_t *out)
{
    for (int w = 0; s->words[w]; w++)
        if (!strcasecmp(text, s->words[w])) {
            *out = (uint64_t)w;
            return 0;
        }
    return -1;
}

/* "auto" (ENG_AUTO: the engine picks per daemon), or an integer in [min, 2^40] */
static int parse_auto_count(const dfccl_setting_t *s, const char *text, uint64_t *out)
{
    if (!strcasecmp(text, "auto")) {
        *out = ENG_AUTO;
        return 0;
    }
    errno = 0;
    char *end;
    const unsigned long long v = strtoull(text, &end, 0);
    if (errno || end == text || *end || text[0] == '-' || v < s->min || v > (1ull << 40))
        return -1;
    *out = v;
    return 0;
}

static const char *const net_words[] = {"auto", "ucx", NULL};
static const char *const put_words[] = {"auto", "off", "on", NULL};
static const char *const level_words[] = {"error", "warn", "info", "debug", "trace", NULL};

#define FIELD32(_f)     .field = #_f, .off = offsetof(dfcclConfig_t, _f), .wide = 0
#define FIELD64(_f)     .field = #_f, .off = offsetof(dfcclConfig_t, _f), .wide = 1
#define COUNT(_lo, _hi) .min = (_lo), .max = (_hi), .parse = parse_count
#define AUTO_COUNT(_lo)                                                                                      \
    .def = "auto", .min = (_lo), .max = ENG_AUTO, .parse = parse_auto_count, .unit = "bytes, or auto"
#define WORDS(_w) .words = (_w), .max = sizeof(_w) / sizeof((_w)[0]) - 2, .parse = parse_word
#define MB64      (64ull << 20)

const dfccl_setting_t eng_settings[K_ALL] = {
    [K_PREEMPT] = {.env = "DFCCL_PREEMPT",
                   .mca = "preempt",
                   FIELD32(preempt),
                   .def = "1",
                   COUNT(0, 1),
                   .unit = "0/1",
                   .help =
                       "1: preempt a collective stalled on its peers; 0: run each to completion (deadlocks)",
                   .more = "Preempted, it lets another collective run (deadlock-free); run to completion, it "
                           "deadlocks like NCCL (for tests and comparisons)."},
    [K_BASE_NS] = {.env = "DFCCL_THRESHOLD_BASE_NS",
                   .mca = "threshold_base_ns",
                   FIELD64(thresholdBaseNs),
                   .def = "20000",
                   COUNT(100, 60000000000ull),
                   .unit = "ns",
                   .help = "how long a fresh collective may wait at a peer before it is preempted"},
    [K_MAX_NS] = {.env = "DFCCL_THRESHOLD_MAX_NS",
                  .mca = "threshold_max_ns",
                  FIELD64(thresholdMaxNs),
                  .def = "5000000",
                  COUNT(100, 600000000000ull),
                  .unit = "ns",
                  .help = "cap of the adaptive preemption threshold"},
    [K_GROWTH] = {.env = "DFCCL_THRESHOLD_GROWTH",
                  .mca = "threshold_growth",
                  FIELD32(thresholdGrowth),
                  .def = "4",
                  COUNT(1, 1024),
                  .unit = "factor",
                  .help = "a satisfied wait of w ns raises the threshold toward this x w"},
    [K_HEAD] = {.env = "DFCCL_HEAD_FACTOR",
                .mca = "head_factor",
                FIELD32(headFactor),
                .def = "4",
                COUNT(1, 1024),
                .unit = "factor",
                .help = "the oldest runnable collective waits this many times longer before it yields"},
    [K_SLOTS] = {.env = "DFCCL_SLOTS",
                 .mca = "slots",
                 FIELD32(slots),
                 .def = "2",
                 COUNT(1, 64),
                 .unit = "slots",
                 .help = "collectives of one communicator in flight at once"},
    [K_CHANNELS] = {.env = "DFCCL_CHANNELS",
                    .mca = "channels",
                    FIELD32(channels),
                    .def = "1",
                    COUNT(1, 32),
                    .unit = "channels",
                    .help = "parts a collective is split into, scheduled independently (CPU daemon)"},
    [K_CHUNK] = {.env = "DFCCL_CHUNK_SIZE",
                 .mca = "chunk_size",
                 FIELD64(chunkSize),
                 .def = "65536",
                 COUNT(1024, MB64),
                 .unit = "bytes",
                 .help = "bytes per FIFO step of the CPU daemon (rounded down to 64)"},
    [K_DEPTH] = {.env = "DFCCL_FIFO_DEPTH",
                 .mca = "fifo_depth",
                 FIELD32(fifoDepth),
                 .def = "4",
                 COUNT(2, 64),
                 .unit = "steps",
                 .help = "FIFO steps per connection"},
    [K_ONESHOT] = {.env = "DFCCL_ONESHOT_MAX",
                   .mca = "oneshot_max",
                   FIELD64(oneshotMax),
                   .def = "32768",
                   COUNT(0, MB64),
                   .unit = "bytes",
                   .help =
                       "allreduces up to this size use one-shot, larger ones the direct exchange or the ring",
                   .more = "At most FIFO depth x the smallest FIFO step; on the GPU daemon with the direct "
                           "exchange (direct_ranks ranks or more) at most this x 2 / ranks."},
    [K_STALL] = {.env = "DFCCL_STALL_REPORT",
                 .mca = "stall_report",
                 FIELD64(stallReportMs),
                 .def = "10000",
                 COUNT(0, 86400000ull),
                 .unit = "ms",
                 .help = "a collective stalled this long logs which ranks have not arrived (0: never)",
                 .more =
                     "Said once per collective; through Open MPI also once per engine communicator set-up "
                     "that waits this long for a peer."},
    [K_TIMEOUT] = {.env = "DFCCL_TIMEOUT",
                   .mca = "timeout",
                   FIELD64(timeoutMs),
                   .def = "0",
                   COUNT(0, 86400000ull),
                   .unit = "ms",
                   .help = "fail a collective stalled this long and abort its communicator (0: never)",
                   .more =
                       "The MPI call returns an error; 0 waits forever. Through Open MPI it also ends an "
                       "engine communicator set-up that waits this long for a peer (one on another host: a "
                       "same-host peer that died is found without it)."},
    [K_IDLE] = {.env = "DFCCL_IDLE_US",
                .def = "2000",
                COUNT(0, 10000000ull),
                .unit = "us",
                .help = "the CPU daemon polls this long after its last work, then sleeps"},
    [K_GPU_CHANNELS] = {.env = "DFCCL_GPU_CHANNELS",
                        .mca = "gpu_channels",
                        FIELD32(gpuChannels),
                        .def = "0",
                        COUNT(0, 64),
                        .unit = "blocks",
                        .help =
                            "blocks of the GPU daemon kernel (0: as many as the ranks sharing the GPU leave)",
                        .more =
                            "Block c runs channel c of every collective on device buffers. 0: set by the "
                            "first communicator, so that the processes sharing a GPU together take about "
                            "its SMs (64 each with 2, 32 with 4, 16 with 8; 32 for a process alone on its "
                            "GPU)."},
    [K_GPU_THREADS] = {.env = "DFCCL_GPU_THREADS",
                       .mca = "gpu_threads",
                       FIELD32(gpuThreads),
                       .def = "256",
                       COUNT(64, 256),
                       .unit = "threads",
                       .help = "threads per GPU daemon block (whole warps)"},
    [K_GPU_IDLE] = {.env = "DFCCL_GPU_IDLE_QUIT",
                    .mca = "gpu_idle_quit",
                    FIELD64(gpuIdleQuitUs),
                    .def = "1000",
                    COUNT(10, 60000000ull),
                    .unit = "us",
                    .help = "the GPU daemon exits after this long with nothing to do",
                    .more = "cudaFree and cudaDeviceSynchronize wait for it; the next collective relaunches "
                            "it."},
    [K_GPU_STALL] = {.env = "DFCCL_GPU_STALL_QUIT",
                     .mca = "gpu_stall_quit",
                     FIELD64(gpuStallQuitUs),
                     .def = "2000",
                     COUNT(10, 60000000ull),
                     .unit = "us",
                     .help = "the GPU daemon exits after every collective it holds stalled this long",
                     .more = "So that the application's cudaDeviceSynchronize returns; progress relaunches "
                             "it."},
    [K_GPU] = {.env = "DFCCL_GPU",
               .def = "1",
               COUNT(0, 1),
               .unit = "0/1",
               .help = "0 keeps the GPU backend off (no CUDA initialization; device buffers refused)"},
    [K_GPU_CHUNK] = {.env = "DFCCL_GPU_CHUNK_SIZE",
                     .mca = "gpu_chunk_size",
                     FIELD64(gpuChunkSize),
                     .def = "131072",
                     COUNT(1024, MB64),
                     .unit = "bytes",
                     .help = "bytes per FIFO step of the GPU daemon",
                     .more = "In the ring's direction, rounded down to a multiple of 64."},
    [K_SYS_SCOPE] = {.env = "DFCCL_GPU_SYS_SCOPE",
                     .def = "0",
                     COUNT(0, 1),
                     .unit = "0/1",
                     .help = "1: system-scope flags even between ranks on one GPU (a diagnostic)"},
    [K_LL] = {.env = "DFCCL_LL_MAX",
              .mca = "ll_max",
              FIELD64(llMax),
              .def = "8192",
              COUNT(0, MB64),
              .unit = "bytes",
              .help = "a piece per peer up to this size (and a barrier) runs in one LL round",
              .more = "A piece is what one rank sends one peer: the buffer of an allreduce, reduce or bcast, "
                      "a rank's block of the others. LL lines carry data and flag in each 8-byte word; at "
                      "most half the smallest FIFO step; 0 turns LL off."},
    [K_TRACE] = {.env = "DFCCL_GPU_TRACE",
                 .mca = "gpu_trace",
                 FIELD32(gpuTrace),
                 .def = "0",
                 COUNT(0, 1),
                 .unit = "0/1",
                 .help = "1: the GPU daemon time-stamps each collective's stages (logged at destroy)",
                 .more = "Single-channel collectives; each engine communicator's destroy logs their medians "
                         "(a diagnostic)."},
    [K_CPU_THREADS] = {.env = "DFCCL_CPU_THREADS",
                       .mca = "cpu_threads",
                       FIELD32(cpuThreads),
                       .def = "1",
                       COUNT(1, ENG_MAX_WORKERS),
                       .unit = "threads",
                       .help = "threads of the CPU daemon; channel c runs on thread c mod this",
                       .more = "It runs host buffers; more threads than channels leave threads idle."},
    [K_NET_THREADS] = {.env = "DFCCL_NET_THREADS",
                       .mca = "net_threads",
                       FIELD32(netThreads),
                       .def = "0",
                       COUNT(0, ENG_MAX_NET_THREADS),
                       .unit = "threads",
                       .help = "proxy threads of the UCX transport (0: one per 2 cores of the rank, up to 4)",
                       .more =
                           "Each has a UCX worker of its own; the connections of channel c move on proxy c "
                           "mod this (the fewest any rank runs). The rank's cores: its binding, else the "
                           "host's cores over the local ranks."},
    /* at most this many bytes per eager message: with its header a piece fits one of
     * UCX's default shared-memory fragments (8256 bytes), which the receiver reads in
     * place; a larger message is first reassembled by UCX, one more copy of every byte */
    [K_NET_PIECE] = {.env = "DFCCL_NET_PIECE",
                     .mca = "net_piece",
                     FIELD64(netPiece),
                     .def = "8128",
                     COUNT(0, MB64),
                     .unit = "bytes",
                     .help = "eager message size of steps to same-host peers over UCX",
                     .more = "Steps to peers on the same host (over UCX when coll_dfccl_net=ucx) go as eager "
                             "messages of at most this many bytes, each fitting one UCX shared-memory "
                             "fragment; 0 sends each step as one message."},
    [K_GPU_NET_CHUNK] = {.env = "DFCCL_GPU_NET_CHUNK_SIZE",
                         .mca = "gpu_net_chunk_size",
                         FIELD64(gpuNetChunkSize),
                         .def = "65536",
                         COUNT(1024, MB64),
                         .unit = "bytes",
                         .help = "GPU FIFO step on communicators with peers over UCX",
                         .more =
                             "Host-staged steps and those of device FIFOs by put; at most gpu_chunk_size, "
                             "rounded down to a multiple of 64."},
    [K_NET] = {.env = "DFCCL_NET",
               .mca = "net",
               FIELD32(net),
               .def = "auto",
               WORDS(net_words),
               .unit = "auto/ucx",
               .help = "auto: other hosts over UCX, same host over shared memory; ucx: every peer over UCX",
               .more = "ucx is for testing. UCX's own variables (UCX_TLS, UCX_NET_DEVICES, ...) pass "
                       "through unchanged."},
    [K_LEVEL] = {.env = "DFCCL_LOG_LEVEL",
                 FIELD32(logLevel),
                 .def = "warn",
                 WORDS(level_words),
                 .unit = "error/warn/info/debug/trace",
                 .help = "log verbosity; info starts with a banner"},
    /* 1 MiB: where the direct allreduce stops paying at 4 and 8 ranks on one H200
     * (bench/RESULTS.md); the suites also run it with DFCCL_DIRECT_MAX=4194304 */
    [K_DIRECT] =
        {.env = "DFCCL_DIRECT_MAX",
         .mca = "direct_max",
         FIELD64(directMax),
         .def = "1048576",
         COUNT(0, 1ull << 40),
         .unit = "bytes",
         .help =
             "allreduce (two-shot), reduce_scatter, allgather, alltoall, bcast and reduce up to this size "
             "exchange with every peer at once, on communicators of direct_ranks or more (0: never)",
         .more = "The size is the larger buffer, a rank's input or output (an alltoall: one block, "
                 "what a rank sends one peer; bcast and reduce: up to half of it); one or two dependent "
                 "steps instead of the ring's 2N-1. On one H200: 0.41-0.58x the ring's time at 8 ranks and "
                 "0.71-0.84x at 4 for 64 KiB-1 MiB allreduces; not 0, the GPU daemon runs its kernel with "
                 "the direct exchange, 0.4-1.2 us slower on 8-byte collectives than the one without."},
    /* the zero-copy read (engine/algo_read.h): auto is where it was faster
     * (bench/RESULTS.md): 512 KiB blocks on the CPU, 2 MiB of blocks a rank on the GPU */
    [K_READ_MIN] = {.env = "DFCCL_READ_MIN",
                    AUTO_COUNT(0),
                    .help = "alltoall and allgather blocks of at least this size are read straight from "
                            "the peers' send buffers (0: never; auto: 524288 on host buffers; on device "
                            "buffers from 4 ranks, 2 MiB over the ranks, at least 262144; off with "
                            "DFCCL_DIRECT_MAX 0)",
                    .more = "A block is what one rank sends one peer. One copy per byte instead of two "
                            "through the FIFOs; on the GPU the first call on a new send buffer is staged "
                            "while the peers map it (CUDA IPC), later calls on it are not."},
    /* auto: by put where it spares a crossing of PCIe each way (device FIFOs); host
     * memory by put was slower over tcp (bench/RESULTS.md). Puts need UCP_FEATURE_RMA,
     * which every process's UCX context asks for whatever this says: two contexts that
     * differ in it cannot connect (ucx_transport/ucx_proxy.c) */
    [K_NET_PUT] = {.env = "DFCCL_NET_PUT",
                   .def = "auto",
                   WORDS(put_words),
                   .unit = "auto/off/on",
                   .help =
                       "on: steps to net peers go by RDMA put into the peer's registered FIFO, then a "
                       "header-only message; off: each step is one active message; auto: by put from device "
                       "memory to device memory for the GPU daemon where every rank's UCX carries CUDA "
                       "memory, else as off",
                   .more = "Every rank of a communicator must ask for puts, else its steps go as active "
                           "messages. Where every rank's UCX carries CUDA memory the GPU daemon's net FIFOs "
                           "move to device memory (steps under DFCCL_NET_PUT_MIN host-staged); elsewhere, "
                           "with on, they take puts as host memory."},
    /* the LL round split over the channels (ENG_ALGO_LLW): one dependent step for the
     * mid range where the one-shot, direct exchange and ring take two or more; auto is
     * where it was faster on one GPU, never on host buffers (bench/RESULTS.md) */
    [K_LL_WIDE] =
        {.env = "DFCCL_LL_WIDE_MAX",
         .mca = "ll_wide_max",
         FIELD64(llWideMax),
         AUTO_COUNT(0),
         .help = "a piece per peer above 4 KiB and up to this size runs in one LL round split over "
                 "the channels (0: never; auto: on device buffers while nranks x (nranks-1) x the "
                 "piece is at most 4 MiB, 73 KiB at 8 ranks; never on host buffers)",
         .more = "Each channel takes at least 2 KiB of the piece and at most DFCCL_LL_MAX, so the "
                 "limit is at most the communicator's channels x DFCCL_LL_MAX, and a DFCCL_LL_MAX "
                 "below 4096 turns it off; one dependent step for twice the data's traffic, instead "
                 "of the one-shot's, direct exchange's or ring's two or more. On one H100, 2-8 ranks: "
                 "0.53-0.93x the time of the algorithms it replaces at most sizes; on the CPU daemon 3-4x "
                 "slower. "
                 "dfcclConfig_t.llWideMax unset (and coll_dfccl_ll_wide_max=auto): auto unless "
                 "DFCCL_LL_WIDE_MAX says otherwise."},
    /* small steps: a put, its flush and the header after it cost more than one message
     * (and on the GPU, the host-staged way's crossings of PCIe). Over cuda_ipc a put is a
     * copy's launch, ~8 us whatever its size (bench/RESULTS.md): a 2 MiB allreduce in
     * 16 KiB steps by put took 2.7x the host-staged time (H100, 2026-12-05), whole 64 KiB
     * steps pay */
    [K_NET_PUT_MIN] = {.env = "DFCCL_NET_PUT_MIN",
                       .def = "65536",
                       COUNT(0, MB64),
                       .unit = "bytes",
                       .help = "where steps to net peers go by put, those of fewer bytes go as active "
                               "messages (0: every step by put)",
                       .more = "On the GPU daemon's device FIFOs such steps go host-staged, through the "
                               "host-pinned FIFOs beside them. Both ends pick by the step's size, so every "
                               "rank must have the same value."},
    /* one-shot: fewer hops and, at 2 ranks, less traffic */
    [K_ONESHOT_RANKS] = {.env = "DFCCL_ONESHOT_RANKS",
                         .mca = "oneshot_ranks",
                         FIELD32(oneshotRanks),
                         .def = "2",
                         COUNT(0, 32),
                         .unit = "ranks",
                         .help =
                             "communicators of up to this many ranks run those allreduces one-shot on the "
                             "GPU, larger ones two-shot (0: always two-shot)",
                         .more = "Those are the all-reduces of direct_max on device buffers; one-shot runs "
                                 "over every channel and each rank reads every rank's whole buffer: one "
                                 "dependent step, N-1 times the traffic."},
    /* at 2 ranks the ring (3 steps) beat the direct exchange at every size measured */
    [K_DIRECT_RANKS] = {.env = "DFCCL_DIRECT_RANKS",
                        .mca = "direct_ranks",
                        FIELD32(directRanks),
                        .def = "4",
                        COUNT(2, 32),
                        .unit = "ranks",
                        .help = "communicators of at least this many ranks use the direct exchange "
                                "(DFCCL_DIRECT_MAX); smaller ones the ring",
                        .more = "At 2 ranks on one H200 the direct allreduce took 1.01-1.13x the ring's "
                                "time from 64 KiB to 1 MiB."},
    /* read where they are used: the host name (comm.c), the timeline (trace.c), the log */
    [K_HOST] = {.env = "DFCCL_HOST",
                .def = "the host name",
                .unit = "string",
                .help = "the host name this rank reports for locality"},
    [K_TIMELINE] = {.env = "DFCCL_TRACE",
                    .def = "unset",
                    .unit = "path prefix",
                    .help = "write both daemons' timeline to PREFIX.<pid>.json (dfccl-trace; mode 0600, no "
                            "symlinks)"},
    [K_DEBUG] = {.env = "DFCCL_DEBUG",
                 .def = "unset",
                 .unit = "error/warn/info/debug/trace/version",
                 .help = "NCCL's spelling of DFCCL_LOG_LEVEL"},
    [K_DEBUG_SUBSYS] = {.env = "DFCCL_DEBUG_SUBSYS",
                        .def = "ALL",
                        .unit = "INIT,COLL,SHM,NET,GPU,ALL (^ excludes)",
                        .help = "subsystems whose info lines print"},
    [K_DEBUG_FILE] = {.env = "DFCCL_DEBUG_FILE",
                      .def = "unset (stderr)",
                      .unit = "path, %h host, %p pid",
                      .help = "log lines go to this file (mode 0600; a symlink or another user's file is "
                              "refused)"},
};

const dfccl_setting_t *dfccl_setting(int i)
{
    return i >= 0 && i < K_ALL ? &eng_settings[i] : NULL;
}

const char *dfccl_setting_expect(const dfccl_setting_t *s, char *buf, size_t len)
{
    buf[0] = 0;
    if (s->parse == parse_auto_count) {
        snprintf(buf, len, "auto or an integer in [%llu, %llu]", (unsigned long long)s->min, 1ull << 40);
        return buf;
    }
    if (!s->words) {
        snprintf(buf, len, "an integer in [%llu, %llu]", (unsigned long long)s->min,
                 (unsigned long long)s->max);
        return buf;
    }
    for (int w = 0; s->words[w]; w++) {
        const size_t n = strlen(buf);
        snprintf(buf + n, len - n, "%s%s", w ? (s->words[w + 1] ? ", " : " or ") : "", s->words[w]);
    }
    return buf;
}

int dfccl_name_distance(const char *a, size_t la, const char *b)
{
    const size_t lb = strlen(b);
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

dfcclResult_t dfcclGetConfigEntry(int index, dfcclConfigEntry_t *entry)
{
    if (!entry)
        return DFCCL_ARG_ERROR("entry is NULL");
    if (index < 0 || index >= K_ALL)
        return DFCCL_ARG_ERROR("index %d: the entries are 0 to %d", index, K_ALL - 1);
    const dfccl_setting_t *s = &eng_settings[index];
    *entry = (dfcclConfigEntry_t){.name = s->env,
                                  .field = s->field,
                                  .defaultValue = s->def,
                                  .value = getenv(s->env),
                                  .unit = s->unit,
                                  .help = s->help};
    return dfcclSuccess;
}
