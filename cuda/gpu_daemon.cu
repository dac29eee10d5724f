/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU daemon: a persistent kernel of C blocks; block c runs channel c of every
 * collective through the same scheduler decisions (eng_sched.h) and the same algorithm
 * state machines (engine/algo_*.h) as the CPU daemon, over the device primitives of
 * cuda_prims.cuh. Thread 0 of each block takes the control decisions (which entry, which
 * task, preempt or not) and broadcasts them, so the block never diverges around a
 * barrier. A block exits after idle_quit with nothing to do, or after stall_quit with
 * every task stalled, so the SMs are free and an application's cudaDeviceSynchronize
 * returns; its tasks and their saved contexts stay in device memory for the next launch. */
#include "cuda_prims.cuh"
#include "../engine/algo.h"
#include "gpu_daemon.h"

enum { DEC_CONTINUE = 0, DEC_PREEMPT = 1, DEC_ABORT = 2 };

/* Words the host writes while the daemon runs (ring entries, the communicator table) are
 * read with volatile loads: a line (or sector) this SM's L1 kept from the entry's previous
 * use must never stand in for the new contents. */
__device__ static void load_entry(gpu_sq_entry_t *dst, const gpu_sq_entry_t *src)
{
    static_assert(sizeof(gpu_sq_entry_t) % 8 == 0, "entry is copied in 8-byte words");
    uint64_t *d = (uint64_t *)dst;
    const uint64_t *s = (const uint64_t *)src;
    for (unsigned i = 0; i < sizeof(gpu_sq_entry_t) / 8; i++)
        d[i] = ld_volatile_u64(&s[i]);
}

__device__ static const gpu_comm_dev_t *load_comm(const gpu_daemon_params_t &p, uint32_t id)
{
    return (const gpu_comm_dev_t *)ld_volatile_u64((const uint64_t *)&p.comms[id]);
}

/* Thread 0: one channel of request req is finished with result res; the last channel
 * to finish publishes the completion word to the host. */
__device__ static void channel_done(const gpu_daemon_params_t &p, uint32_t req, int32_t res,
                                    unsigned long long *completed)
{
    if (res < 0)
        atomicMin(&p.req_err[req], res);
    __threadfence(); /* this block's results before the count (the barrier came first) */
    if (atomicAdd(&p.req_chan[req], 1u) == (uint32_t)p.channels - 1) {
        __threadfence();
        int32_t worst = atomicExch(&p.req_err[req], 0);
        atomicExch(&p.req_chan[req], 0u);
        p.result[req] = worst;
        if (completed)
            atomicAdd(completed, 1ull);
        fence_sc_sys(); /* every channel's results before the word the host polls */
        st_release_sys_u32(&p.done[req], 1);
    }
}

/* Thread 0: drop task i from the block's list, keeping submission order. */
__device__ static void task_remove(gpu_task_t *tasks, uint32_t *n, uint32_t i)
{
    for (uint32_t j = i + 1; j < *n; j++)
        tasks[j - 1] = tasks[j];
    (*n)--;
}

/* Thread 0: the block's last words before it exits; 0 when a submission arrived in
 * between (the host's fence after publishing pairs with this one). */
__device__ static int try_quit(const gpu_daemon_params_t &p, int b, uint64_t head, uint32_t ntasks)
{
    p.ntasks[b] = ntasks;
    st_volatile_u32(&p.block_exited[b], 1);
    fence_sc_sys();
    const gpu_sq_entry_t *e = &p.ring[head & p.ring_mask];
    if (ld_acquire_sys_u64(&e->stamp) == head + 1) {
        st_volatile_u32(&p.block_exited[b], 0);
        return 0;
    }
    return 1;
}

__global__ void __launch_bounds__(GPU_MAX_THREADS, 1) dfccl_gpu_daemon(gpu_daemon_params_t p)
{
    const int b = blockIdx.x, C = p.channels;
    const bool t0 = threadIdx.x == 0;
    gpu_task_t *tasks = p.tasks + (size_t)b * GPU_MAX_TASKS;
    __shared__ uint64_t s_head;
    __shared__ uint32_t s_n;
    __shared__ int s_dec;
    __shared__ int s_progress;
    __shared__ gpu_task_t s_task;
    __shared__ gpu_comm_dev_t s_comm;
    uint64_t last_work = 0, stall_since = 0; /* thread 0 only */

    if (t0) {
        s_head = ld_volatile_u64(&p.block_head[b]);
        s_n = p.ntasks[b];
        last_work = stall_since = globaltimer_ns();
    }
    __syncthreads();

    for (;;) {
        /* ---- take new submissions into the task list (thread 0) ---- */
        if (t0) {
            uint64_t head = s_head;
            uint32_t n = s_n;
            while (n < GPU_MAX_TASKS) {
                const gpu_sq_entry_t *ring_e = &p.ring[head & p.ring_mask];
                if (ld_acquire_sys_u64(&ring_e->stamp) != head + 1)
                    break;
                gpu_sq_entry_t entry;
                load_entry(&entry, ring_e);
                const gpu_sq_entry_t *e = &entry;
                head++;
                last_work = globaltimer_ns();
                if (e->kind == GPU_SQ_DESTROY) {
                    /* fail this block's channel of every task of the communicator */
                    for (uint32_t i = 0; i < n;) {
                        if (tasks[i].comm_id == e->comm_id) {
                            channel_done(p, tasks[i].req_id, dfcclCommAborted, load_comm(p, tasks[i].comm_id)->completed);
                            task_remove(tasks, &n, i);
                        } else {
                            i++;
                        }
                    }
                    channel_done(p, e->req_id, dfcclSuccess, NULL);
                    continue;
                }
                const gpu_comm_dev_t *cm = load_comm(p, e->comm_id);
                gpu_task_t *t = &tasks[n];
                t->args = e->args;
                t->seq = e->seq;
                t->comm_id = e->comm_id;
                t->req_id = e->req_id;
                t->slot = (uint32_t)(e->seq % cm->slots);
                t->kind = e->kind;
                t->threshold_ns = sched_reset(&p.sp);
                /* a channel with nothing to do still takes its turn in the slot order */
                eng_ctx_init(&t->args, cm->nranks, b, C, &t->ctx);
                n++;
            }
            s_head = head;
            s_n = n;
            st_volatile_u64(&p.block_head[b], head); /* the host may reuse the entries */
        }
        __syncthreads();

        if (s_n == 0) {
            if (t0) {
                uint64_t now = globaltimer_ns();
                s_dec = now - last_work > p.idle_quit_ns && try_quit(p, b, s_head, 0);
            }
            __syncthreads();
            if (s_dec)
                return;
            continue;
        }

        /* ---- one pass over the task list, in submission order ---- */
        if (t0)
            s_progress = 0;
        int head_seen = 0;
        for (uint32_t i = 0; i < s_n;) {
            /* thread 0 stages the task and its communicator in shared memory: the other
             * warps never read the task table, which thread 0 rewrites */
            gpu_task_t *t = &tasks[i];
            if (t0) {
                s_task = *t;
                s_comm = *load_comm(p, s_task.comm_id);
                s_dec = ld_volatile_u64(&s_comm.slot_next[s_task.slot * C + b]) != s_task.seq;
            }
            __syncthreads();
            const gpu_comm_dev_t *cm = &s_comm;
            if (s_dec) {
                __syncthreads();
                i++; /* its slot still holds an earlier collective of the communicator */
                continue;
            }
            const int is_head = !head_seen;
            head_seen = 1;
            eng_coll_args_t args = s_task.args;
            eng_ctx_t x = s_task.ctx; /* every thread steps its own copy identically */
            eng_chan_view_t v;
            v.rank = cm->rank;
            v.nranks = cm->nranks;
            v.depth = cm->depth;
            v.chunk = cm->chunk;
            v.conns = cm->conns + ((size_t)s_task.slot * C + b) * (size_t)cm->nranks;
            uint64_t threshold = s_task.threshold_ns, wait_start = 0, budget = 0;
            int spins = 0, moved = 0;
            if (t0) {
                wait_start = globaltimer_ns();
                budget = sched_budget(&p.sp, threshold, is_head);
            }
            int finished = x.done;
            int32_t res = dfcclSuccess;
            while (!finished) {
                eng_prog_t r = eng_algo_progress(&args, &v, &x);
                if (r == ENG_DONE) {
                    finished = 1;
                    break;
                }
                if (t0) {
                    uint64_t now = globaltimer_ns();
                    int dec = DEC_CONTINUE;
                    int32_t ab = *(volatile int32_t *)cm->abort_code;
                    if (ab) {
                        dec = DEC_ABORT;
                        res = ab;
                    } else if (r == ENG_PROGRESS) {
                        if (spins)
                            threshold = sched_adapt(&p.sp, threshold, now - wait_start);
                        budget = sched_budget(&p.sp, threshold, is_head);
                        wait_start = now;
                        spins = 0;
                        moved = 1;
                        s_progress = 1;
                    } else if (now - wait_start >= budget) {
                        dec = DEC_PREEMPT;
                        uint64_t *st = cm->stats + (size_t)b * GPU_NSTATS;
                        st_volatile_u64(&st[GPU_STAT_PREEMPT], st[GPU_STAT_PREEMPT] + 1);
                        if (!moved)
                            st_volatile_u64(&st[GPU_STAT_STALLS], st[GPU_STAT_STALLS] + 1);
                        st_volatile_u64(&st[GPU_STAT_STALL_NS], st[GPU_STAT_STALL_NS] + (now - wait_start));
                    } else {
                        spins++;
                    }
                    s_dec = dec;
                }
                __syncthreads();
                const int dec = s_dec;
                __syncthreads();
                if (dec == DEC_PREEMPT) {
                    if (t0) {
                        t->ctx = x; /* save the context; data in FIFOs stays there */
                        t->threshold_ns = threshold;
                    }
                    break;
                }
                if (dec == DEC_ABORT) {
                    finished = 1;
                    break;
                }
            }
            if (finished) {
                __syncthreads(); /* every thread's writes of the last step are done */
                if (t0) {
                    cm->slot_next[s_task.slot * C + b] = s_task.seq + cm->slots;
                    channel_done(p, s_task.req_id, res, cm->completed);
                    uint32_t n = s_n;
                    task_remove(tasks, &n, i);
                    s_n = n;
                    s_progress = 1;
                }
                __syncthreads();
                continue; /* task i is now the next one */
            }
            __syncthreads();
            i++;
        }

        /* ---- stall quit: everything stalled for stall_quit ---- */
        if (t0) {
            uint64_t now = globaltimer_ns();
            if (s_progress) {
                last_work = stall_since = now;
                s_dec = 0;
            } else {
                s_dec = now - stall_since > p.stall_quit_ns && try_quit(p, b, s_head, s_n);
            }
        }
        __syncthreads();
        if (s_dec)
            return;
    }
}
