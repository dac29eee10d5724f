/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's configuration: DFCCL_* environment variables and dfcclConfig_t fields.
 * Defaults and units are in README.md. */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include <unistd.h>

#include "eng_config.h"
#include "eng_log.h"

eng_config_t eng_config;

/* One knob: its variable, its dfcclConfig_t field (NULL: environment only), default and
 * range. Word knobs (DFCCL_NET, DFCCL_LOG_LEVEL) take one of `words`; their value is
 * the word's index, which is also the field's enum value. */
typedef struct {
    const char *env, *field;
    size_t off; /* offsetof(dfcclConfig_t, field) */
    int wide;   /* an int64_t field, else int32_t */
    uint64_t def, min, max;
    const char *const *words;
} knob_t;

static const char *const net_words[] = {"auto", "ucx", NULL};
static const char *const level_words[] = {"error", "warn", "info", "debug", "trace", NULL};

#define F32(_f)  #_f, offsetof(dfcclConfig_t, _f), 0
#define F64(_f)  #_f, offsetof(dfcclConfig_t, _f), 1
#define ENV_ONLY NULL, 0, 0

enum {
    K_PREEMPT,
    K_BASE_NS,
    K_MAX_NS,
    K_GROWTH,
    K_HEAD,
    K_SLOTS,
    K_CHANNELS,
    K_CHUNK,
    K_DEPTH,
    K_ONESHOT,
    K_STALL,
    K_TIMEOUT,
    K_IDLE,
    K_GPU_CHANNELS,
    K_GPU_THREADS,
    K_GPU_IDLE,
    K_GPU_STALL,
    K_GPU,
    K_GPU_CHUNK,
    K_SYS_SCOPE,
    K_LL,
    K_TRACE,
    K_CPU_THREADS,
    K_NET_THREADS,
    K_NET_PIECE,
    K_GPU_NET_CHUNK,
    K_NET,
    K_LEVEL,
    K_DIRECT,
    K_ONESHOT_RANKS,
    K_COUNT
};

static const knob_t knobs[K_COUNT] = {
    [K_PREEMPT] = {"DFCCL_PREEMPT", F32(preempt), 1, 0, 1, NULL},
    [K_BASE_NS] = {"DFCCL_THRESHOLD_BASE_NS", F64(thresholdBaseNs), 20000, 100, 60000000000ull, NULL},
    [K_MAX_NS] = {"DFCCL_THRESHOLD_MAX_NS", F64(thresholdMaxNs), 5000000, 100, 600000000000ull, NULL},
    [K_GROWTH] = {"DFCCL_THRESHOLD_GROWTH", F32(thresholdGrowth), 4, 1, 1024, NULL},
    [K_HEAD] = {"DFCCL_HEAD_FACTOR", F32(headFactor), 4, 1, 1024, NULL},
    [K_SLOTS] = {"DFCCL_SLOTS", F32(slots), 2, 1, 64, NULL},
    [K_CHANNELS] = {"DFCCL_CHANNELS", F32(channels), 1, 1, 32, NULL},
    [K_CHUNK] = {"DFCCL_CHUNK_SIZE", F64(chunkSize), 65536, 1024, 64ull << 20, NULL},
    [K_DEPTH] = {"DFCCL_FIFO_DEPTH", F32(fifoDepth), 4, 2, 64, NULL},
    [K_ONESHOT] = {"DFCCL_ONESHOT_MAX", F64(oneshotMax), 32768, 0, 64ull << 20, NULL},
    [K_STALL] = {"DFCCL_STALL_REPORT", F64(stallReportMs), 10000, 0, 86400000ull, NULL},
    [K_TIMEOUT] = {"DFCCL_TIMEOUT", F64(timeoutMs), 0, 0, 86400000ull, NULL},
    [K_IDLE] = {"DFCCL_IDLE_US", ENV_ONLY, 2000, 0, 10000000ull, NULL},
    [K_GPU_CHANNELS] = {"DFCCL_GPU_CHANNELS", F32(gpuChannels), 0, 0, 64, NULL},
    [K_GPU_THREADS] = {"DFCCL_GPU_THREADS", F32(gpuThreads), 512, 64, 512, NULL},
    [K_GPU_IDLE] = {"DFCCL_GPU_IDLE_QUIT", F64(gpuIdleQuitUs), 1000, 10, 60000000ull, NULL},
    [K_GPU_STALL] = {"DFCCL_GPU_STALL_QUIT", F64(gpuStallQuitUs), 2000, 10, 60000000ull, NULL},
    [K_GPU] = {"DFCCL_GPU", ENV_ONLY, 1, 0, 1, NULL},
    [K_GPU_CHUNK] = {"DFCCL_GPU_CHUNK_SIZE", F64(gpuChunkSize), 131072, 1024, 64ull << 20, NULL},
    [K_SYS_SCOPE] = {"DFCCL_GPU_SYS_SCOPE", ENV_ONLY, 0, 0, 1, NULL},
    [K_LL] = {"DFCCL_LL_MAX", F64(llMax), 8192, 0, 64ull << 20, NULL},
    [K_TRACE] = {"DFCCL_GPU_TRACE", F32(gpuTrace), 0, 0, 1, NULL},
    [K_CPU_THREADS] = {"DFCCL_CPU_THREADS", F32(cpuThreads), 1, 1, ENG_MAX_WORKERS, NULL},
    [K_NET_THREADS] = {"DFCCL_NET_THREADS", F32(netThreads), 0, 0, ENG_MAX_NET_THREADS, NULL},
    [K_NET_PIECE] = {"DFCCL_NET_PIECE", F64(netPiece), ENG_NET_PIECE_DEFAULT, 0, 64ull << 20, NULL},
    [K_GPU_NET_CHUNK] = {"DFCCL_GPU_NET_CHUNK_SIZE", F64(gpuNetChunkSize), 65536, 1024, 64ull << 20, NULL},
    [K_NET] = {"DFCCL_NET", F32(net), 0, 0, 1, net_words},
    [K_LEVEL] = {"DFCCL_LOG_LEVEL", F32(logLevel), DFCCL_LOG_WARN, 0, 4, level_words},
    [K_DIRECT] = {"DFCCL_DIRECT_MAX", F64(directMax), ENG_DIRECT_MAX_DEFAULT, 0, 1ull << 40, NULL},
    [K_ONESHOT_RANKS] = {"DFCCL_ONESHOT_RANKS", F32(oneshotRanks), ENG_ONESHOT_RANKS_DEFAULT, 0, 32, NULL},
};

/* What dfcclGetConfigEntry says of each variable: unit and one line (the README's
 * table says more). */
typedef struct {
    const char *unit, *help;
} knob_doc_t;

static const knob_doc_t knob_docs[K_COUNT] = {
    [K_PREEMPT] = {"0/1",
                   "1: preempt a collective stalled on its peers; 0: run each to completion (deadlocks)"},
    [K_BASE_NS] = {"ns", "how long a fresh collective may wait at a peer before it is preempted"},
    [K_MAX_NS] = {"ns", "cap of the adaptive preemption threshold"},
    [K_GROWTH] = {"factor", "a satisfied wait of w ns raises the threshold toward this x w"},
    [K_HEAD] = {"factor", "the oldest runnable collective waits this many times longer before it yields"},
    [K_SLOTS] = {"slots", "collectives of one communicator in flight at once"},
    [K_CHANNELS] = {"channels", "parts a collective is split into, scheduled independently (CPU daemon)"},
    [K_CHUNK] = {"bytes", "bytes per FIFO step of the CPU daemon (rounded down to 64)"},
    [K_DEPTH] = {"steps", "FIFO steps per connection"},
    [K_ONESHOT] = {"bytes", "allreduces up to this size use one-shot, larger ones the ring"},
    [K_STALL] = {"ms", "a collective stalled this long logs which ranks have not arrived (0: never)"},
    [K_TIMEOUT] = {"ms", "fail a collective stalled this long and abort its communicator (0: never)"},
    [K_IDLE] = {"us", "the CPU daemon polls this long after its last work, then sleeps"},
    [K_GPU_CHANNELS] = {"blocks",
                        "blocks of the GPU daemon kernel (0: as many as the ranks sharing the GPU leave)"},
    [K_GPU_THREADS] = {"threads", "threads per GPU daemon block (whole warps)"},
    [K_GPU_IDLE] = {"us", "the GPU daemon exits after this long with nothing to do"},
    [K_GPU_STALL] = {"us", "the GPU daemon exits after every collective it holds stalled this long"},
    [K_GPU] = {"0/1", "0 keeps the GPU backend off (no CUDA initialization; device buffers refused)"},
    [K_GPU_CHUNK] = {"bytes", "bytes per FIFO step of the GPU daemon"},
    [K_SYS_SCOPE] = {"0/1", "1: system-scope flags even between ranks on one GPU (a diagnostic)"},
    [K_LL] = {"bytes", "a piece per peer up to this size (and a barrier) runs in one LL round"},
    [K_TRACE] = {"0/1", "1: the GPU daemon time-stamps each collective's stages (logged at destroy)"},
    [K_CPU_THREADS] = {"threads", "threads of the CPU daemon; channel c runs on thread c mod this"},
    [K_NET_THREADS] = {"threads",
                       "proxy threads of the UCX transport (0: one per 2 cores of the rank, up to 4)"},
    [K_NET_PIECE] = {"bytes", "eager message size of steps to same-host peers over UCX"},
    [K_GPU_NET_CHUNK] = {"bytes", "GPU FIFO step on communicators with peers over UCX"},
    [K_NET] = {"auto/ucx",
               "auto: other hosts over UCX, same host over shared memory; ucx: every peer over UCX"},
    [K_LEVEL] = {"error/warn/info/debug/trace", "log verbosity; info starts with a banner"},
    [K_DIRECT] = {"bytes", "allreduce (two-shot), reduce_scatter, allgather and alltoall up to this size "
                           "exchange with every peer at once (0: never)"},
    [K_ONESHOT_RANKS] = {"ranks",
                         "communicators of up to this many ranks run those allreduces one-shot on the GPU, "
                         "larger ones two-shot (0: always two-shot)"},
};

/* read where they are used: the host name (comm.c), the timeline (trace.c), the log */
static const struct {
    const char *name, *def, *unit, *help;
} other_docs[] = {
    {"DFCCL_HOST", "the host name", "string", "the host name this rank reports for locality"},
    {"DFCCL_TRACE", "unset", "path prefix",
     "write both daemons' timeline to PREFIX.<pid>.json (dfccl-trace; mode 0600, no symlinks)"},
    {"DFCCL_DEBUG", "unset", "error/warn/info/debug/trace/version", "NCCL's spelling of DFCCL_LOG_LEVEL"},
    {"DFCCL_DEBUG_SUBSYS", "ALL", "INIT,COLL,SHM,NET,GPU,ALL (^ excludes)",
     "subsystems whose info lines print"},
    {"DFCCL_DEBUG_FILE", "unset (stderr)", "path, %h host, %p pid",
     "log lines go to this file (mode 0600; a symlink or another user's file is refused)"},
};
#define NOTHER ((int)(sizeof(other_docs) / sizeof(other_docs[0])))

dfcclResult_t dfcclGetConfigEntry(int index, dfcclConfigEntry_t *entry)
{
    static char def[24];
    if (!entry)
        return DFCCL_ARG_ERROR("entry is NULL");
    if (index < 0 || index >= K_COUNT + NOTHER)
        return DFCCL_ARG_ERROR("index %d: the entries are 0 to %d", index, K_COUNT + NOTHER - 1);
    if (index < K_COUNT) {
        const knob_t *k = &knobs[index];
        if (k->words)
            snprintf(def, sizeof def, "%s", k->words[k->def]);
        else
            snprintf(def, sizeof def, "%llu", (unsigned long long)k->def);
        *entry = (dfcclConfigEntry_t){.name = k->env,
                                      .field = k->field,
                                      .defaultValue = def,
                                      .value = getenv(k->env),
                                      .unit = knob_docs[index].unit,
                                      .help = knob_docs[index].help};
    } else {
        const int o = index - K_COUNT;
        *entry = (dfcclConfigEntry_t){.name = other_docs[o].name,
                                      .defaultValue = other_docs[o].def,
                                      .value = getenv(other_docs[o].name),
                                      .unit = other_docs[o].unit,
                                      .help = other_docs[o].help};
    }
    return dfcclSuccess;
}

/* edit distance of two short names (capped at 9) */
static int name_distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
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

/* Every variable dfccl reads is a knob or one of other_docs. Names under DFCCL_DEMO_ and
 * DFCCL_BENCH_ belong to the example and benchmark programs; any other DFCCL_ name is a
 * typo or a habit from another library (DFCCL_DEBUG for NCCL_DEBUG), said once at the
 * first dfcclCommInit: a warning, since a misspelled knob must not stop a job. */
static void warn_unknown_vars(void)
{
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "DFCCL_", 6) || !eq || !strncmp(*e, "DFCCL_DEMO_", 11) ||
            !strncmp(*e, "DFCCL_BENCH_", 12))
            continue;
        const size_t len = (size_t)(eq - *e);
        const char *best = NULL;
        int best_d = 4; /* suggest only close names */
        int known = 0;
        for (int i = 0; i < K_COUNT + NOTHER && !known; i++) {
            const char *name = i < K_COUNT ? knobs[i].env : other_docs[i - K_COUNT].name;
            known = strlen(name) == len && !strncmp(*e, name, len);
            const int d = name_distance(*e, len, name);
            if (d < best_d) {
                best_d = d;
                best = name;
            }
        }
        if (known)
            continue;
        dfccl_warn("%.*s is not a dfccl variable and is ignored%s%s%s", (int)len, *e,
                   best ? " (did you mean " : "", best ? best : "", best ? "?)" : "");
    }
}

/* A bad value: the message names the variable or field and what it expects. */
static dfcclResult_t bad_value(const knob_t *k, const char *name, const char *value)
{
    if (k->words) {
        char expect[96] = "";
        for (int w = 0; k->words[w]; w++)
            snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect), "%s%s",
                     w ? (k->words[w + 1] ? ", " : " or ") : "", k->words[w]);
        return eng_set_error(dfcclInvalidArgument, "config", "%s=%s: expected %s", name, value, expect);
    }
    return eng_set_error(dfcclInvalidArgument, "config", "%s=%s: expected an integer in [%llu, %llu]", name,
                         value, (unsigned long long)k->min, (unsigned long long)k->max);
}

/* The variable of knob k into *out (its default when unset). */
static int banner; /* DFCCL_DEBUG=VERSION: the banner even below info */

static int env_value(const knob_t *k, uint64_t *out)
{
    const char *s = getenv(k->env);
    const char *name = k->env;
    *out = k->def;
    if ((!s || !*s) && k == &knobs[K_LEVEL]) {
        /* NCCL's spelling of the same knob (DFCCL_LOG_LEVEL wins when both are set);
         * its VERSION prints the banner and keeps warnings */
        s = getenv("DFCCL_DEBUG");
        name = "DFCCL_DEBUG";
        if (s && !strcasecmp(s, "version")) {
            banner = 1;
            return 0;
        }
    }
    if (!s || !*s)
        return 0;
    if (k->words) {
        for (int w = 0; k->words[w]; w++)
            if (!strcasecmp(s, k->words[w])) {
                *out = (uint64_t)w;
                return 0;
            }
        /* a bad word is refused like a bad number, not taken as the default */
    } else {
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 0);
        if (!errno && !*end && s[0] != '-' && v >= k->min && v <= k->max) {
            *out = v;
            return 0;
        }
    }
    bad_value(k, name, s);
    dfccl_error("%s", dfcclGetLastError());
    return -1;
}

/* At info (or DFCCL_DEBUG=VERSION): the version, the process and every DFCCL_* variable
 * set, once, like NCCL's banner. */
static void print_banner(void)
{
    extern char **environ;
    char vars[768] = "";
    size_t n = 0;
    for (char **e = environ; e && *e && n < sizeof vars - 1; e++)
        if (!strncmp(*e, "DFCCL_", 6))
            n += (size_t)snprintf(vars + n, sizeof vars - n, "%s%s", n ? " " : "", *e);
    if (n >= sizeof vars)
        n = sizeof vars - 1;
    char host[128] = "";
    gethostname(host, sizeof host - 1);
    const int lvl = eng_log_level;
    if (lvl < DFCCL_LOG_INFO)
        eng_log_level = DFCCL_LOG_INFO;
    dfccl_info("dfccl %d.%d.%d, pid %d on %s; settings from the environment: %s", DFCCL_VERSION_CODE / 10000,
               DFCCL_VERSION_CODE / 100 % 100, DFCCL_VERSION_CODE % 100, (int)getpid(), host,
               n ? vars : "none (defaults; dfcclConfig_t fields still apply)");
    eng_log_level = lvl;
}

/* The field of knob k in cfg: 0 unset, 1 set (*out), -1 a bad value (error set). Fields
 * past cfg->size belong to a newer header than the caller's: unset. */
static int field_value(const knob_t *k, const dfcclConfig_t *cfg, uint64_t *out)
{
    const size_t width = k->wide ? sizeof(int64_t) : sizeof(int32_t);
    if (!cfg || !k->field || k->off + width > cfg->size)
        return 0;
    const char *p = (const char *)cfg + k->off;
    int64_t v;
    if (k->wide) {
        memcpy(&v, p, sizeof(v));
    } else {
        int32_t v32;
        memcpy(&v32, p, sizeof(v32));
        v = v32;
    }
    if (v == DFCCL_CONFIG_UNSET)
        return 0;
    if (v < 0 || (uint64_t)v < k->min || (uint64_t)v > k->max) {
        char name[48], value[24];
        snprintf(name, sizeof(name), "config.%s", k->field);
        snprintf(value, sizeof(value), "%lld", (long long)v);
        bad_value(k, name, value);
        return -1;
    }
    *out = (uint64_t)v;
    return 1;
}

/* Cores for this rank's own threads: its affinity mask when the launcher bound it,
 * else the host's cores shared by the ranks the launcher says run on this host. */
static uint32_t cores_per_rank(void)
{
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    long cores = online > 0 ? online : 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < cores)
        return (uint32_t)CPU_COUNT(&set); /* bound: these cores are this rank's */
    static const char *const local_size[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                             "SLURM_NTASKS_PER_NODE", "PMI_LOCAL_SIZE"};
    for (size_t i = 0; i < sizeof(local_size) / sizeof(local_size[0]); i++) {
        const char *v = getenv(local_size[i]);
        const long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 0) {
            cores /= n;
            break;
        }
    }
    return cores > 0 ? (uint32_t)cores : 1;
}

/* A knob's value as the user writes it (buf: 24 bytes). */
static const char *knob_text(const knob_t *k, uint64_t v, char *buf)
{
    if (k->words)
        return k->words[v];
    snprintf(buf, 24, "%llu", (unsigned long long)v);
    return buf;
}

/* The process-wide values from the knobs' values v[]. */
static void config_apply(const uint64_t v[K_COUNT])
{
    eng_log_level = (int)v[K_LEVEL];
    eng_config.preempt = (int)v[K_PREEMPT];
    eng_config.threshold_base_ns = v[K_BASE_NS];
    eng_config.threshold_max_ns = v[K_MAX_NS] < v[K_BASE_NS] ? v[K_BASE_NS] : v[K_MAX_NS];
    eng_config.threshold_growth = (uint32_t)v[K_GROWTH];
    eng_config.head_factor = (uint32_t)v[K_HEAD];
    eng_config.slots = (uint32_t)v[K_SLOTS];
    eng_config.channels = (uint32_t)v[K_CHANNELS];
    eng_config.cpu_threads = (uint32_t)v[K_CPU_THREADS];
    /* chunks stay 64-byte multiples so every element type stays aligned inside a step */
    eng_config.chunk_size = v[K_CHUNK] & ~(uint64_t)63;
    eng_config.fifo_depth = (uint32_t)v[K_DEPTH];
    eng_config.oneshot_max = v[K_ONESHOT]; /* each submission caps it at FIFO depth x smallest step */
    eng_config.stall_report_ms = v[K_STALL];
    eng_config.timeout_ms = v[K_TIMEOUT];
    eng_config.idle_sleep_us = v[K_IDLE];
    eng_config.gpu = (int)v[K_GPU];
    eng_config.net_force = v[K_NET] == dfcclNetUcx;
    eng_config.net_threads = (uint32_t)v[K_NET_THREADS];
    eng_config.net_threads_auto = v[K_NET_THREADS] == 0;
    if (eng_config.net_threads_auto) {
        /* a proxy per two of the rank's cores, up to 4 (4 reach UCX's loopback rate:
         * bench/RESULTS.md, "What the defaults rest on");
         * the other cores are for the daemon threads and the application */
        const uint32_t n = cores_per_rank() / 2;
        eng_config.net_threads = n < 1 ? 1 : n > 4 ? 4 : n;
    }
    eng_config.net_piece = v[K_NET_PIECE];
    const char *host = getenv("DFCCL_HOST");
    if (host && *host)
        snprintf(eng_config.host, sizeof(eng_config.host), "%s", host);
    else if (gethostname(eng_config.host, sizeof(eng_config.host) - 1) != 0)
        snprintf(eng_config.host, sizeof(eng_config.host), "unknown");
    eng_config.gpu_channels = (uint32_t)v[K_GPU_CHANNELS];
    eng_config.gpu_threads = (uint32_t)(v[K_GPU_THREADS] & ~(uint64_t)31); /* whole warps */
    eng_config.gpu_idle_quit_us = v[K_GPU_IDLE];
    eng_config.gpu_stall_quit_us = v[K_GPU_STALL];
    eng_config.gpu_chunk_size = v[K_GPU_CHUNK] & ~(uint64_t)63;
    eng_config.gpu_net_chunk = v[K_GPU_NET_CHUNK] & ~(uint64_t)63;
    eng_config.gpu_sys_scope = (int)v[K_SYS_SCOPE];
    eng_config.ll_max = v[K_LL];
    eng_config.direct_max = v[K_DIRECT];
    eng_config.oneshot_ranks = (uint32_t)v[K_ONESHOT_RANKS];
    eng_config.gpu_trace = (int)v[K_TRACE];
}

/* Guarded by lock: the environment as read, and the values the first communicator
 * fixed. Until a communicator has been created with them (committed), nothing is for
 * good: after a failed first dfcclCommInit the next one reads the environment again
 * (a bad variable may have been fixed) and fixes its own values. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int env_read, env_status, fixed, committed, pending;
static char env_error[512];
static uint64_t env_v[K_COUNT], fixed_v[K_COUNT];

static void read_env(void)
{
    env_status = 0;
    for (int i = 0; i < K_COUNT; i++)
        env_status |= env_value(&knobs[i], &env_v[i]);
    if (env_status)
        snprintf(env_error, sizeof(env_error), "%s", dfcclGetLastError());
    /* the level applies from here on: the warnings below and the rest of the set-up */
    if (!env_status)
        eng_log_level = (int)env_v[K_LEVEL];
    eng_log_setup();
    if (banner || eng_log_level >= DFCCL_LOG_INFO)
        print_banner();
    warn_unknown_vars();
    env_read = 1;
}

dfcclResult_t eng_config_init(const dfcclConfig_t *cfg)
{
    dfcclResult_t res = dfcclSuccess;
    uint64_t v[K_COUNT];
    int set[K_COUNT];

    if (cfg && (cfg->magic != DFCCL_CONFIG_MAGIC || cfg->size < offsetof(dfcclConfig_t, preempt)))
        return eng_set_error(dfcclInvalidArgument, "config",
                             "config was not made from DFCCL_CONFIG_INITIALIZER (size %zu, magic %#x)",
                             cfg->size, cfg->magic);
    pthread_mutex_lock(&lock);
    if (!env_read || (!committed && !pending))
        read_env();
    if (env_status) {
        const char *why = strncmp(env_error, "config: ", 8) ? env_error : env_error + 8;
        res = eng_set_error(dfcclInvalidArgument, "config", "bad DFCCL_* environment variable: %s", why);
        goto out;
    }
    for (int i = 0; i < K_COUNT; i++) {
        v[i] = fixed ? fixed_v[i] : env_v[i];
        set[i] = field_value(&knobs[i], cfg, &v[i]);
        if (set[i] < 0) {
            res = dfcclInvalidArgument;
            goto out;
        }
    }
    if (!fixed) { /* the first communicator: its fields over the environment, for good
                     once it is created (eng_config_done) */
        config_apply(v);
        memcpy(fixed_v, v, sizeof(v));
        fixed = 1;
        pending++;
        goto out;
    }
    for (int i = 0; i < K_COUNT; i++)
        if (set[i] && v[i] != fixed_v[i]) {
            char want[24], have[24];
            res = eng_set_error(dfcclInvalidUsage, "config",
                                "config.%s=%s differs from %s, the value the first communicator of this "
                                "process fixed (from %s or its config): the configuration is process-wide",
                                knobs[i].field, knob_text(&knobs[i], v[i], want),
                                knob_text(&knobs[i], fixed_v[i], have), knobs[i].env);
            break;
        }
    if (res == dfcclSuccess)
        pending++;
out:
    pthread_mutex_unlock(&lock);
    return res;
}

void eng_config_done(int created)
{
    pthread_mutex_lock(&lock);
    pending--;
    if (created)
        committed = 1;
    else if (!committed && !pending)
        fixed = 0; /* no communicator ever had these values: the next init fixes its own */
    pthread_mutex_unlock(&lock);
}
