/* SPDX-License-Identifier: BSD-3-Clause */
/* DFCCL_* environment variables; defaults and units are in README.md. */
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include <unistd.h>

#include "eng_config.h"
#include "eng_log.h"

eng_config_t eng_config;

static pthread_once_t eng_config_once = PTHREAD_ONCE_INIT;
static int eng_config_status;

/* Every variable dfccl reads. Names under DFCCL_DEMO_ and DFCCL_BENCH_ belong to the
 * example and benchmark programs; any other DFCCL_ name is a typo or a habit from
 * another library (DFCCL_DEBUG for NCCL_DEBUG), said once at the first dfcclCommInit:
 * a warning, since a misspelled knob must not stop a job. */
static const char *const known_vars[] = {"DFCCL_PREEMPT",
                                         "DFCCL_THRESHOLD_BASE_NS",
                                         "DFCCL_THRESHOLD_MAX_NS",
                                         "DFCCL_THRESHOLD_GROWTH",
                                         "DFCCL_HEAD_FACTOR",
                                         "DFCCL_SLOTS",
                                         "DFCCL_CHANNELS",
                                         "DFCCL_CHUNK_SIZE",
                                         "DFCCL_FIFO_DEPTH",
                                         "DFCCL_ONESHOT_MAX",
                                         "DFCCL_STALL_REPORT",
                                         "DFCCL_TIMEOUT",
                                         "DFCCL_IDLE_US",
                                         "DFCCL_GPU_CHANNELS",
                                         "DFCCL_GPU_THREADS",
                                         "DFCCL_GPU_IDLE_QUIT",
                                         "DFCCL_GPU_STALL_QUIT",
                                         "DFCCL_GPU",
                                         "DFCCL_GPU_CHUNK_SIZE",
                                         "DFCCL_GPU_SYS_SCOPE",
                                         "DFCCL_LL_MAX",
                                         "DFCCL_GPU_TRACE",
                                         "DFCCL_TRACE",
                                         "DFCCL_CPU_THREADS",
                                         "DFCCL_NET_THREADS",
                                         "DFCCL_NET_PIECE",
                                         "DFCCL_GPU_NET_CHUNK_SIZE",
                                         "DFCCL_LOG_LEVEL",
                                         "DFCCL_NET",
                                         "DFCCL_HOST"};

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
        for (size_t i = 0; i < sizeof(known_vars) / sizeof(known_vars[0]) && !known; i++) {
            known = strlen(known_vars[i]) == len && !strncmp(*e, known_vars[i], len);
            const int d = name_distance(*e, len, known_vars[i]);
            if (d < best_d) {
                best_d = d;
                best = known_vars[i];
            }
        }
        if (known)
            continue;
        if (len == 11 && !strncmp(*e, "DFCCL_DEBUG", 11))
            best = "DFCCL_LOG_LEVEL";
        dfccl_warn("%.*s is not a dfccl variable and is ignored%s%s%s", (int)len, *e,
                   best ? " (did you mean " : "", best ? best : "", best ? "?)" : "");
    }
}

static int env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *s = getenv(name);
    *out = def;
    if (!s || !*s)
        return 0;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || s[0] == '-' || v < min || v > max) {
        eng_set_error(dfcclInvalidArgument, "config", "%s=%s: expected an integer in [%llu, %llu]", name, s,
                      (unsigned long long)min, (unsigned long long)max);
        dfccl_error("%s", dfcclGetLastError());
        return -1;
    }
    *out = v;
    return 0;
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

static void eng_config_parse(void)
{
    int rc = 0;
    const char *lvl = getenv("DFCCL_LOG_LEVEL");
    if (lvl && *lvl) {
        static const char *const names[] = {"error", "warn", "info", "debug", "trace"};
        int found = -1;
        for (int i = 0; i < 5; i++)
            if (!strcasecmp(lvl, names[i]))
                found = i;
        if (found >= 0) {
            eng_log_level = found;
        } else { /* a bad word is refused like a bad number, not taken as the default */
            eng_set_error(dfcclInvalidArgument, "config",
                          "DFCCL_LOG_LEVEL=%s: expected error, warn, info, debug or trace", lvl);
            dfccl_error("%s", dfcclGetLastError());
            rc = -1;
        }
    }
    uint64_t v[26];
    rc |= env_u64("DFCCL_PREEMPT", 1, 0, 1, &v[0]);
    rc |= env_u64("DFCCL_THRESHOLD_BASE_NS", 20000, 100, 60000000000ull, &v[1]);
    rc |= env_u64("DFCCL_THRESHOLD_MAX_NS", 5000000, 100, 600000000000ull, &v[2]);
    rc |= env_u64("DFCCL_THRESHOLD_GROWTH", 4, 1, 1024, &v[3]);
    rc |= env_u64("DFCCL_HEAD_FACTOR", 4, 1, 1024, &v[4]);
    rc |= env_u64("DFCCL_SLOTS", 2, 1, 64, &v[5]);
    rc |= env_u64("DFCCL_CHANNELS", 1, 1, 32, &v[6]);
    rc |= env_u64("DFCCL_CHUNK_SIZE", 65536, 1024, 64ull << 20, &v[7]);
    rc |= env_u64("DFCCL_FIFO_DEPTH", 4, 2, 64, &v[8]);
    rc |= env_u64("DFCCL_ONESHOT_MAX", 32768, 0, 64ull << 20, &v[9]);
    rc |= env_u64("DFCCL_STALL_REPORT", 10000, 0, 86400000ull, &v[10]);
    rc |= env_u64("DFCCL_TIMEOUT", 0, 0, 86400000ull, &v[11]);
    rc |= env_u64("DFCCL_IDLE_US", 2000, 0, 10000000ull, &v[12]);
    rc |= env_u64("DFCCL_GPU_CHANNELS", 0, 0, 64, &v[13]);
    rc |= env_u64("DFCCL_GPU_THREADS", 512, 64, 512, &v[14]);
    rc |= env_u64("DFCCL_GPU_IDLE_QUIT", 1000, 10, 60000000ull, &v[15]);
    rc |= env_u64("DFCCL_GPU_STALL_QUIT", 2000, 10, 60000000ull, &v[16]);
    rc |= env_u64("DFCCL_GPU", 1, 0, 1, &v[17]);
    rc |= env_u64("DFCCL_GPU_CHUNK_SIZE", 131072, 1024, 64ull << 20, &v[18]);
    rc |= env_u64("DFCCL_GPU_SYS_SCOPE", 0, 0, 1, &v[19]);
    rc |= env_u64("DFCCL_LL_MAX", 8192, 0, 64ull << 20, &v[20]);
    rc |= env_u64("DFCCL_GPU_TRACE", 0, 0, 1, &v[21]);
    rc |= env_u64("DFCCL_CPU_THREADS", 1, 1, ENG_MAX_WORKERS, &v[22]);
    rc |= env_u64("DFCCL_NET_THREADS", 0, 0, ENG_MAX_NET_THREADS, &v[23]);
    rc |= env_u64("DFCCL_NET_PIECE", ENG_NET_PIECE_DEFAULT, 0, 64ull << 20, &v[24]);
    rc |= env_u64("DFCCL_GPU_NET_CHUNK_SIZE", 65536, 1024, 64ull << 20, &v[25]);
    eng_config.preempt = (int)v[0];
    eng_config.threshold_base_ns = v[1];
    eng_config.threshold_max_ns = v[2] < v[1] ? v[1] : v[2];
    eng_config.threshold_growth = (uint32_t)v[3];
    eng_config.head_factor = (uint32_t)v[4];
    eng_config.slots = (uint32_t)v[5];
    eng_config.channels = (uint32_t)v[6];
    eng_config.cpu_threads = (uint32_t)v[22];
    /* chunks stay 64-byte multiples so every element type stays aligned inside a step */
    eng_config.chunk_size = v[7] & ~(uint64_t)63;
    eng_config.fifo_depth = (uint32_t)v[8];
    eng_config.oneshot_max = v[9]; /* each submission caps it at FIFO depth x smallest step */
    eng_config.stall_report_ms = v[10];
    eng_config.timeout_ms = v[11];
    eng_config.idle_sleep_us = v[12];
    eng_config.gpu = (int)v[17];
    const char *net = getenv("DFCCL_NET");
    if (net && *net && strcasecmp(net, "auto") && strcasecmp(net, "ucx")) {
        eng_set_error(dfcclInvalidArgument, "config", "DFCCL_NET=%s: expected auto or ucx", net);
        dfccl_error("%s", dfcclGetLastError());
        rc = -1;
    }
    eng_config.net_force = net && !strcasecmp(net, "ucx");
    eng_config.net_threads = (uint32_t)v[23];
    eng_config.net_threads_auto = v[23] == 0;
    if (eng_config.net_threads_auto) {
        /* a proxy per two of the rank's cores, up to 4 (4 reach UCX's loopback rate:
         * bench/RESULTS.md, "What the defaults rest on");
         * the other cores are for the daemon threads and the application */
        const uint32_t n = cores_per_rank() / 2;
        eng_config.net_threads = n < 1 ? 1 : n > 4 ? 4 : n;
    }
    eng_config.net_piece = v[24];
    const char *host = getenv("DFCCL_HOST");
    if (host && *host)
        snprintf(eng_config.host, sizeof(eng_config.host), "%s", host);
    else if (gethostname(eng_config.host, sizeof(eng_config.host) - 1) != 0)
        snprintf(eng_config.host, sizeof(eng_config.host), "unknown");
    eng_config.gpu_channels = (uint32_t)v[13];
    eng_config.gpu_threads = (uint32_t)(v[14] & ~(uint64_t)31); /* whole warps */
    eng_config.gpu_idle_quit_us = v[15];
    eng_config.gpu_stall_quit_us = v[16];
    eng_config.gpu_chunk_size = v[18] & ~(uint64_t)63;
    eng_config.gpu_net_chunk = v[25] & ~(uint64_t)63;
    eng_config.gpu_sys_scope = (int)v[19];
    eng_config.ll_max = v[20];
    eng_config.gpu_trace = (int)v[21];
    warn_unknown_vars();
    eng_config_status = rc ? -1 : 0;
}

int eng_config_init(void)
{
    pthread_once(&eng_config_once, eng_config_parse);
    return eng_config_status;
}
