/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging, last-error text and result strings. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "eng_log.h"

int eng_log_level = DFCCL_LOG_WARN;

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
    fprintf(stderr, "[dfccl %d] %s %s:%d %s() %s\n", (int)getpid(), eng_level_names[level],
            base ? base + 1 : file, line, func, msg);
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
