/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging, last-error text and result strings. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eng_log.h"
#include "eng_types.h"

int eng_log_level = DFCCL_LOG_WARN;

/* Subsystems, named by the file a line comes from (NCCL_DEBUG_SUBSYS's idea). */
enum { SUB_INIT, SUB_COLL, SUB_SHM, SUB_NET, SUB_GPU, SUB_NUM };
static const char *const sub_names[SUB_NUM] = {"INIT", "COLL", "SHM", "NET", "GPU"};
static unsigned sub_mask = (1u << SUB_NUM) - 1; /* info and below pass for these */
static FILE *log_file;                          /* DFCCL_DEBUG_FILE, else stderr */

static int subsystem(const char *base)
{
    if (!strncmp(base, "ucx_", 4) || !strncmp(base, "net_", 4))
        return SUB_NET;
    if (!strncmp(base, "gpu_", 4) || strstr(base, ".cu"))
        return SUB_GPU;
    if (!strcmp(base, "shm.c") || !strcmp(base, "heartbeat.c"))
        return SUB_SHM;
    if (!strcmp(base, "comm.c") || !strcmp(base, "config.c") || !strcmp(base, "log.c"))
        return SUB_INIT;
    return SUB_COLL; /* the daemon, the API, the timeline */
}

/* "INIT,NET" takes those, "^SHM" all but those, "ALL" all (case ignored). */
static void parse_subsys(const char *s)
{
    const int invert = *s == '^';
    unsigned m = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s + invert);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = !strcasecmp(t, "ALL");
        if (found)
            m = (1u << SUB_NUM) - 1;
        for (int i = 0; i < SUB_NUM && !found; i++)
            if (!strcasecmp(t, sub_names[i])) {
                m |= 1u << i;
                found = 1;
            }
        if (!found)
            fprintf(stderr,
                    "[dfccl %d] WARN DFCCL_DEBUG_SUBSYS: no subsystem %s (INIT, COLL, SHM, NET, GPU, ALL): "
                    "ignored\n",
                    (int)getpid(), t);
    }
    sub_mask = invert ? ~m & ((1u << SUB_NUM) - 1) : m;
}

FILE *eng_open_private(const char *path, char *why, size_t why_len)
{
    int fd;
    do
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        if (errno == ELOOP)
            snprintf(why, why_len, "%s is a symbolic link (refused: it could point anywhere)", path);
        else
            snprintf(why, why_len, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    FILE *f = NULL;
    if (fstat(fd, &st) != 0)
        snprintf(why, why_len, "cannot stat %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, why_len, "%s is not a regular file (refused)", path);
    else if (st.st_uid != geteuid())
        snprintf(why, why_len, "%s belongs to uid %u, not to this process's user (uid %u): refused", path,
                 (unsigned)st.st_uid, (unsigned)geteuid());
    /* O_NONBLOCK only so that a FIFO put there can't block the open */
    else if (fcntl(fd, F_SETFL, O_WRONLY | O_APPEND) < 0 || lseek(fd, 0, SEEK_END) < 0 ||
             !(f = fdopen(fd, "a")))
        snprintf(why, why_len, "cannot open %s: %s", path, strerror(errno));
    if (!f)
        close(fd);
    return f; /* at its end: ftell says how much it holds */
}

/* DFCCL_DEBUG_FILE=path, %h the host name and %p the pid (NCCL_DEBUG_FILE's). */
static void open_file(const char *pattern)
{
    char path[512], host[128] = "host";
    size_t n = 0;
    gethostname(host, sizeof host - 1);
    for (const char *p = pattern; *p && n < sizeof path - 1; p++) {
        if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p')) {
            if (p[1] == 'h')
                n += (size_t)snprintf(path + n, sizeof path - n, "%s", host);
            else
                n += (size_t)snprintf(path + n, sizeof path - n, "%d", (int)getpid());
            if (n >= sizeof path)
                n = sizeof path - 1;
            p++;
        } else {
            path[n++] = *p;
        }
    }
    path[n < sizeof path ? n : sizeof path - 1] = 0;
    char why[600];
    FILE *f = eng_open_private(path, why, sizeof why);
    if (!f) {
        fprintf(stderr, "[dfccl %d] WARN DFCCL_DEBUG_FILE=%s: %s; logging to stderr\n", (int)getpid(),
                pattern, why);
        return;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    log_file = f;
}

const char *const eng_coll_names[ENG_COLL_NUM] = {
    "allreduce", "reduce",    "bcast",   "allgather", "reduce_scatter", "alltoall",
    "barrier",   "gather",    "scatter", "gatherv",   "scatterv",       "allgatherv",
    "alltoallv", "alltoallw", "scan",    "exscan",    "reduce_scatterv"};

const char *const eng_algo_names[ENG_ALGO_COUNT] = {"self", "ring",   "oneshot", "chain", "pairwise", "ll",
                                                    "scan", "direct", "direct1", "read",  "llw"};

void eng_log_setup(void)
{
    const char *s = getenv("DFCCL_DEBUG_SUBSYS");
    if (s && *s)
        parse_subsys(s);
    const char *f = getenv("DFCCL_DEBUG_FILE");
    if (f && *f && !log_file)
        open_file(f);
}

static _Thread_local char eng_last_error[512] = "no error";

static const char *const eng_level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

void eng_log(int level, const char *file, int line, const char *func, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (level >= DFCCL_LOG_INFO && !(sub_mask >> subsystem(base) & 1))
        return;
    fprintf(log_file ? log_file : stderr, "[dfccl %d] %s %s:%d %s() %s\n", (int)getpid(),
            eng_level_names[level], base, line, func, msg);
}

dfcclResult_t eng_set_error(dfcclResult_t res, const char *func, const char *fmt, ...)
{
    char msg[448];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(eng_last_error, sizeof(eng_last_error), "%s: %s", func, msg);
    if (DFCCL_LOG_INFO <= eng_log_level)
        eng_log(DFCCL_LOG_INFO, "api", 0, func, "%s (%s)", msg, dfcclGetErrorString(res));
    return res;
}

const char *dfcclGetLastError(void)
{
    return eng_last_error;
}

const char *dfcclGetErrorString(dfcclResult_t result)
{
    switch (result) {
    case dfcclSuccess: return "success";
    case dfcclInProgress: return "in progress";
    case dfcclInvalidArgument: return "invalid argument";
    case dfcclInvalidUsage: return "invalid usage";
    case dfcclSystemError: return "system error";
    case dfcclNoMemory: return "out of memory";
    case dfcclTimeout: return "collective timed out";
    case dfcclCommAborted: return "communicator destroyed or aborted";
    case dfcclUnsupported: return "unsupported";
    case dfcclInternalError: return "internal error";
    case dfcclBootstrapError: return "bootstrap all-gather failed";
    case dfcclMismatch: return "ranks called one collective with different arguments";
    }
    return "unknown result code";
}

dfcclResult_t dfcclGetVersion(int *version_p)
{
    if (!version_p)
        return DFCCL_ARG_ERROR("version_p is NULL");
    *version_p = DFCCL_VERSION_CODE;
    return dfcclSuccess;
}

/* The names messages give datatypes and ops (the public enums' order). */
static const char *const type_names[dfcclNumTypes] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                                      "uint64", "float16", "bfloat16", "float32", "float64"};
static const char *const op_names[dfcclNumOps] = {"sum", "prod", "max", "min", "band", "bor", "bxor"};

const char *eng_type_name(dfcclDataType_t t)
{
    return type_names[t];
}

const char *eng_op_name(dfcclRedOp_t op)
{
    return op_names[op];
}
