/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU daemon's life cycle: its worker threads start with the first communicator
 * and stop with the last; the engine reaches the daemon through eng_cpu (eng_cpu.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_state.h"

/* ---- life cycle and submission --------------------------------------------------------- */

static void stop_workers(uint32_t n)
{
    dfccl_store_seq_cst(&cpu_d.stop, 1);
    for (uint32_t w = 0; w < n; w++)
        cpu_worker_wake(&cpu_d.w[w]);
    for (uint32_t w = 0; w < n; w++) {
        pthread_join(cpu_d.w[w].thread, NULL);
        pthread_mutex_destroy(&cpu_d.w[w].lock);
        pthread_mutex_destroy(&cpu_d.w[w].run);
        pthread_cond_destroy(&cpu_d.w[w].cv);
    }
}

static dfcclResult_t cpu_daemon_acquire(void)
{
    dfcclResult_t res = dfcclSuccess;
    eng_trace_setup();
    pthread_mutex_lock(&cpu_d.life_lock);
    if (cpu_d.refcount++ == 0) {
        cpu_d.sp = (sched_params_t){.preempt = eng_config.preempt,
                                    .base_ns = eng_config.threshold_base_ns,
                                    .max_ns = eng_config.threshold_max_ns,
                                    .growth = eng_config.threshold_growth,
                                    .head_factor = eng_config.head_factor};
        if (!cpu_d.ring.entries) {
            cpu_d.ring.entries = calloc(ENG_RING_ENTRIES, sizeof(eng_sq_entry_t));
            cpu_d.ring.mask = ENG_RING_ENTRIES - 1;
            cpu_d.ring.head = cpu_d.ring.tail = 0;
        }
        cpu_d.stop = 0;
        if (!cpu_d.ring.entries) {
            res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the submission ring");
            cpu_d.refcount--;
            goto out;
        }
        uint32_t n = 0;
        for (; n < eng_config.cpu_threads; n++) {
            eng_worker_t *W = &cpu_d.w[n];
            *W = (eng_worker_t){.id = n};
            pthread_mutex_init(&W->lock, NULL);
            pthread_mutex_init(&W->run, NULL);
            pthread_cond_init(&W->cv, NULL);
            int rc = pthread_create(&W->thread, NULL, cpu_worker_main, W);
            if (rc) {
                pthread_mutex_destroy(&W->lock);
                pthread_mutex_destroy(&W->run);
                pthread_cond_destroy(&W->cv);
                res = eng_set_error(dfcclSystemError, "dfcclCommInit",
                                    "pthread_create of daemon thread %u: %s", n, strerror(rc));
                break;
            }
        }
        cpu_d.nworkers = n;
        if (res != dfcclSuccess) {
            stop_workers(n);
            cpu_d.nworkers = 0;
            cpu_d.refcount--;
        }
    }
out:
    pthread_mutex_unlock(&cpu_d.life_lock);
    return res;
}

static void cpu_daemon_release(void)
{
    pthread_mutex_lock(&cpu_d.life_lock);
    if (--cpu_d.refcount == 0 && cpu_d.nworkers) {
        stop_workers(cpu_d.nworkers);
        cpu_d.nworkers = 0;
        eng_trace_flush();
    }
    pthread_mutex_unlock(&cpu_d.life_lock);
}

static uint64_t cpu_daemon_destroy(struct dfccl_comm *c)
{
    destroy_mark_t m;
    memset(&m, 0, sizeof(m));
    m.first_failed = UINT64_MAX;
    cpu_daemon_submit(ENG_SQ_DESTROY, c, NULL, &m.req);
    cpu_daemon_wait(&m.req);
    /* c's handle is gone: nothing more is submitted on it */
    return DFCCL_MIN(dfccl_load_relaxed(&m.first_failed), c->next_seq);
}

/* the engine's view of this daemon (eng_cpu.h), in its order: acquire, release, submit,
 * wait, destroy, kick */
const eng_cpu_backend_t eng_cpu_host = {cpu_daemon_acquire, cpu_daemon_release, cpu_daemon_submit,
                                        cpu_daemon_wait,    cpu_daemon_destroy, cpu_daemon_kick};
