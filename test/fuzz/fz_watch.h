/* SPDX-License-Identifier: BSD-3-Clause */
/* The deadlock fuzzer's watchdog (fuzz.h): a thread that prints "HANG: ..." with this
 * rank's pending collectives and _exit(3)s when nothing was submitted or completed for
 * --stall seconds. */
#ifndef DFCCL_FZ_WATCH_H
#define DFCCL_FZ_WATCH_H

#include "fuzz.h"

static double stall_s = 20;
static _Atomic long long fz_last_ns;
static _Atomic unsigned char fz_pending[FZ_MAXOPS];
static _Atomic int fz_phase_now;

static long long fz_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void fz_progress(void)
{
    atomic_store(&fz_last_ns, fz_now_ns());
}

static void *fz_watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        tc_sleep_us(100000);
        double idle = (double)(fz_now_ns() - atomic_load(&fz_last_ns)) / 1e9;
        if (idle < stall_s)
            continue;
        char line[1024];
        int l = snprintf(line, sizeof line,
                         "HANG: seed=%llu rank %d: nothing completed for %.1f s in phase %d; pending ops:",
                         (unsigned long long)prog.seed, tc_rank, idle, atomic_load(&fz_phase_now));
        for (int i = 0; i < prog.nops && l < (int)sizeof line - 16; i++)
            if (atomic_load(&fz_pending[i]))
                l += snprintf(line + l, sizeof line - (size_t)l, " %d(%s,comm %d)", i,
                              fz_coll_names[prog.op[i].coll], prog.op[i].comm);
        printf("%s\n", line);
        fflush(stdout);
        _exit(3);
    }
    return NULL;
}

#endif /* DFCCL_FZ_WATCH_H */
