/* SPDX-License-Identifier: BSD-3-Clause */
/* Leveled logging that costs nothing when off: the level is checked before any
 * formatting (UCX log_def.h). DFCCL_LOG_LEVEL=error|warn|info|debug|trace, or NCCL's
 * spelling DFCCL_DEBUG; DFCCL_DEBUG_SUBSYS narrows info and below to some subsystems,
 * DFCCL_DEBUG_FILE sends the lines to a file (log.c). */
#ifndef DFCCL_ENG_LOG_H
#define DFCCL_ENG_LOG_H

#include <stdio.h>

#include "dfccl.h"

enum { DFCCL_LOG_ERROR = 0, DFCCL_LOG_WARN, DFCCL_LOG_INFO, DFCCL_LOG_DEBUG, DFCCL_LOG_TRACE };

extern int eng_log_level;

/* DFCCL_DEBUG_FILE and DFCCL_DEBUG_SUBSYS, read once with the other variables. */
void eng_log_setup(void);

void eng_log(int level, const char *file, int line, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A log or trace file, for appending: opened without following a symbolic link in its
 * last component, created with mode 0600, and refused unless it is a regular file of
 * this process's user (another local user could otherwise point it at a file of ours,
 * or read what we write). NULL with *why (a sentence, why_len bytes) when refused or on
 * an error. */
FILE *eng_open_private(const char *path, char *why, size_t why_len);

/* The collectives (eng_coll_t) and algorithms (ENG_ALGO_*) as log lines and the
 * timeline name them. */
extern const char *const eng_coll_names[];
extern const char *const eng_algo_names[];

/* Record the message for dfcclGetLastError (per thread) and log it at warn level. */
dfcclResult_t eng_set_error(dfcclResult_t res, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define DFCCL_LOG(_lvl, ...)                                                                                 \
    do {                                                                                                     \
        if ((_lvl) <= eng_log_level)                                                                         \
            eng_log((_lvl), __FILE__, __LINE__, __func__, __VA_ARGS__);                                      \
    } while (0)
#define dfccl_error(...) DFCCL_LOG(DFCCL_LOG_ERROR, __VA_ARGS__)
#define dfccl_warn(...)  DFCCL_LOG(DFCCL_LOG_WARN, __VA_ARGS__)
#define dfccl_info(...)  DFCCL_LOG(DFCCL_LOG_INFO, __VA_ARGS__)
#define dfccl_debug(...) DFCCL_LOG(DFCCL_LOG_DEBUG, __VA_ARGS__)
#define dfccl_trace(...) DFCCL_LOG(DFCCL_LOG_TRACE, __VA_ARGS__)

/* Argument errors: an error code and a message naming the argument. */
#define DFCCL_ARG_ERROR(_fmt, ...) eng_set_error(dfcclInvalidArgument, __func__, _fmt, ##__VA_ARGS__)

/* Propagate an error with a breadcrumb (NCCL checks.h). */
#define DFCCL_CHECK(_call)                                                                                   \
    do {                                                                                                     \
        dfcclResult_t _r = (_call);                                                                          \
        if (_r < 0) {                                                                                        \
            dfccl_debug("%s -> %d", #_call, (int)_r);                                                        \
            return _r;                                                                                       \
        }                                                                                                    \
    } while (0)

#define DFCCL_CHECK_GOTO(_call, _res, _label)                                                                \
    do {                                                                                                     \
        (_res) = (_call);                                                                                    \
        if ((_res) < 0) {                                                                                    \
            dfccl_debug("%s -> %d", #_call, (int)(_res));                                                    \
            goto _label;                                                                                     \
        }                                                                                                    \
    } while (0)

/* System calls returning -1/errno: retry EINTR, log errno, jump to _label. */
#define DFCCL_SYS_CHECK_GOTO(_call, _name, _res, _label)                                                     \
    do {                                                                                                     \
        int _s;                                                                                              \
        do {                                                                                                 \
            _s = (int)(_call);                                                                               \
        } while (_s == -1 && errno == EINTR);                                                                \
        if (_s == -1) {                                                                                      \
            (_res) = eng_set_error(dfcclSystemError, __func__, "%s failed: %s", (_name), strerror(errno));   \
            goto _label;                                                                                     \
        }                                                                                                    \
    } while (0)

/* log.c: the names messages give a datatype and an op ("float32", "sum"); valid values only. */
const char *eng_type_name(dfcclDataType_t t);
const char *eng_op_name(dfcclRedOp_t op);

#endif
