/* SPDX-License-Identifier: BSD-3-Clause */
/* DFCCL_TRACE=PREFIX: the daemons' timeline of every collective, written per process as
 * PREFIX.<pid>.json in the Chrome trace / Perfetto format (engine/trace.c): when each
 * was submitted, each stretch a daemon thread (or a GPU daemon block) ran it (and
 * whether that stretch finished it, was preempted after moving data, or stalled with
 * nothing moved, with the ranks that had not submitted it yet), and when it completed.
 * The GPU daemon's stretches are stamped with %globaltimer on the device and drained by
 * the host (cuda/gpu_timeline.cu). tools/dfccl-trace merges the processes' files and
 * summarises them. Off (the default) it costs one load and branch per event site. */
#ifndef DFCCL_ENG_TRACE_H
#define DFCCL_ENG_TRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct eng_task;

extern int eng_trace_on; /* read without a lock: set once, before any daemon thread runs */

enum { ENG_TR_FINISHED, ENG_TR_PREEMPTED, ENG_TR_STALLED, ENG_TR_FAILED };

/* Which collective an event is about: the CPU daemon's and the GPU daemon's collectives
 * of one communicator are numbered apart (gpu: 1 for the GPU daemon's). */
typedef struct {
    uint64_t uid, seq;
    int32_t rank, nranks, coll, gpu;
    int32_t algo; /* ENG_ALGO_*: which algorithm the daemon runs it with */
} eng_trace_key_t;

/* Read DFCCL_TRACE (once per process). */
void eng_trace_setup(void);
/* k was submitted at ns (eng_now_ns): the GPU's is stamped before its entry reaches the
 * ring, so that no stretch of it can come before. */
void eng_trace_submit(const eng_trace_key_t *k, uint64_t ns);
/* A daemon thread (worker w) ran t from t0_ns to t1_ns (eng_now_ns) and let it go. */
void eng_trace_run(const struct eng_task *t, uint32_t w, uint64_t t0_ns, uint64_t t1_ns, int outcome);
void eng_trace_complete(const eng_trace_key_t *k, int result);
/* Daemon thread w (GPU daemon: block w) ran k from t0 to t1 (eng_now_ns; %globaltimer ns
 * for the GPU's); late: bit r for rank r that had not submitted it when the stretch ended
 * (stalled ones). eng_trace_run is this for a CPU daemon's task. */
void eng_trace_stretch(const eng_trace_key_t *k, uint32_t w, uint64_t t0, uint64_t t1, int outcome,
                       uint64_t late);
/* The host saw, at host_ns (eng_now_ns), what the device did at or before dev_ns
 * (%globaltimer): host_ns - dev_ns bounds the clocks' offset from above, and the
 * smallest such bound places the GPU's stretches on the host's clock. */
void eng_trace_gpu_clock(uint64_t host_ns, uint64_t dev_ns);
/* The GPU backend's drain of its device records, called first by every flush. */
void eng_trace_set_gpu_drain(void (*drain)(void));
/* Write what was recorded (at the daemon's release and at exit). */
void eng_trace_flush(void);

#ifdef __cplusplus
}
#endif

#endif
