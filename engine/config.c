/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's configuration: DFCCL_* environment variables and dfcclConfig_t fields,
 * read and checked by the rows of the settings table (settings.c). */
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
#include "eng_settings.h"

eng_config_t eng_config;

/* Every variable dfccl reads is a row of the settings table. Names under DFCCL_DEMO_ and
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
        for (int i = 0; i < K_ALL && !known; i++) {
            const char *name = eng_settings[i].env;
            known = strlen(name) == len && !strncmp(*e, name, len);
            const int d = dfccl_name_distance(*e, len, name);
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
static dfcclResult_t bad_value(const dfccl_setting_t *k, const char *name, const char *value)
{
    char expect[96];
    return eng_set_error(dfcclInvalidArgument, "config", "%s=%s: expected %s", name, value,
                         dfccl_setting_expect(k, expect, sizeof expect));
}

/* A row's default (a table the unit tests check parses). */
static uint64_t default_value(const dfccl_setting_t *k)
{
    uint64_t v = 0;
    (void)k->parse(k, k->def, &v);
    return v;
}

static int banner; /* DFCCL_DEBUG=VERSION: the banner even below info */

/* The variable of knob k into *out (its default when unset). */
static int env_value(const dfccl_setting_t *k, uint64_t *out)
{
    const char *s = getenv(k->env);
    const char *name = k->env;
    *out = default_value(k);
    if ((!s || !*s) && k == &eng_settings[K_LEVEL]) {
        /* NCCL's spelling of the same knob (DFCCL_LOG_LEVEL wins when both are set);
         * its VERSION prints the banner and keeps warnings */
        s = getenv("DFCCL_DEBUG");
        name = "DFCCL_DEBUG";
        if (s && !strcasecmp(s, "version")) {
            banner = 1;
            return 0;
        }
    }
    /* a bad word is refused like a bad number, not taken as the default */
    if (!s || !*s || k->parse(k, s, out) == 0)
        return 0;
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
static int field_value(const dfccl_setting_t *k, const dfcclConfig_t *cfg, uint64_t *out)
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
    /* a knob that takes auto takes it unset (a count at most 2^40 otherwise, as its variable) */
    const uint64_t max = k->max == ENG_AUTO ? 1ull << 40 : k->max;
    if (v < 0 || (uint64_t)v < k->min || (uint64_t)v > max) {
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
static const char *knob_text(const dfccl_setting_t *k, uint64_t v, char *buf)
{
    return k->words ? k->words[v] : eng_count_text(v, buf);
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
    eng_config.net_put = (int)v[K_NET_PUT];
    eng_config.net_put_min = v[K_NET_PUT_MIN];
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
    eng_config.ll_wide_max = v[K_LL_WIDE];
    eng_config.direct_max = v[K_DIRECT];
    eng_config.oneshot_ranks = (uint32_t)v[K_ONESHOT_RANKS];
    eng_config.direct_ranks = (uint32_t)v[K_DIRECT_RANKS];
    eng_config.read_min = v[K_READ_MIN];
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
        env_status |= env_value(&eng_settings[i], &env_v[i]);
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
        set[i] = field_value(&eng_settings[i], cfg, &v[i]);
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
                                eng_settings[i].field, knob_text(&eng_settings[i], v[i], want),
                                knob_text(&eng_settings[i], fixed_v[i], have), eng_settings[i].env);
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
