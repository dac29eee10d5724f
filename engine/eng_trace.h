/* SPDX-License-Identifier: BSD-3-Clause */
/* DFCCL_TRACE=PREFIX: the CPU daemon's timeline of every collective, written per process
 * as PREFIX.<pid>.json in the Chrome trace / Perfetto format (engine/trace.c): when each
 * was submitted, each stretch a daemon thread ran it (and whether that stretch finished
 * it, was preempted after moving data, or stalled with nothing moved, with the ranks
 * that had not submitted it yet), and when it completed. tools/dfccl-trace merges the
 * processes' files and summarises them. Off (the default) it costs one load and branch
 * per event site. */
#ifndef DFCCL_ENG_TRACE_H
#define DFCCL_ENG_TRACE_H

#include <stdint.h>

struct dfccl_comm;
struct eng_task;

extern int eng_trace_on; /* read without a lock: set once, before any daemon thread runs */

enum { ENG_TR_FINISHED, ENG_TR_PREEMPTED, ENG_TR_STALLED, ENG_TR_FAILED };

/* Read DFCCL_TRACE (once per process). */
void eng_trace_setup(void);
void eng_trace_submit(const struct dfccl_comm *c, int coll, uint64_t seq);
/* A daemon thread (worker w) ran t from t0_ns to t1_ns (eng_now_ns) and let it go. */
void eng_trace_run(const struct eng_task *t, uint32_t w, uint64_t t0_ns, uint64_t t1_ns, int outcome);
void eng_trace_complete(const struct eng_task *t, int result);
/* Write what was recorded (at the daemon's release and at exit). */
void eng_trace_flush(void);

#endif
