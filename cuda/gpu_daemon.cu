/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU daemon: a persistent kernel of C blocks; block c runs channel c of every
 * collective through the same scheduler decisions (eng_sched.h) and the same algorithm
 * state machines (engine/algo_*.h) as the CPU daemon, over the device primitives of
 * cuda_prims.cuh. Thread 0 of each block takes the control decisions (which entry, which
 * task, preempt or not) and broadcasts them, so the block never diverges around a
 * barrier. Warp 0 of block 0 is also the fetcher: it alone reads the host's submission
 * ring (over PCIe) and hands entries to every block through a ring in device memory.
 * Block 0 also decides when the whole daemon exits: after idle_quit with nothing to do,
 * or after stall_quit with every task stalled, so the SMs are free and an application's
 * cudaDeviceSynchronize returns; tasks and their saved contexts stay in device memory for
 * the next launch. */
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

/* Thread 0: one of the nchan channels taking part in request req is finished with
 * result res; the last one publishes the completion word to the host. A failing channel
 * adds 1 << 48 besides its 1, so on the common path the last channel learns "no error"
 * from its own atomic, with no further load; it takes the counter back to 0 with a
 * reduction nobody waits for (the request id is reused only after the host saw done). */
#define CHAN_ERR (1ull << 48)
__device__ static void channel_done(const gpu_daemon_params_t &p, uint32_t req, int32_t res,
                                    unsigned long long *completed, uint32_t nchan)
{
    if (res < 0)
        atomicMin(&p.req_err[req], res);
    /* release: this block's results (the barrier came first); acquire: the other
     * channels' results, for the last one */
    const uint64_t inc = 1 + (res < 0 ? CHAN_ERR : 0);
    const uint64_t now = atom_add_acq_rel_gpu_u64(&p.req_chan[req], inc) + inc;
    if ((now & (CHAN_ERR - 1)) != nchan)
        return;
    atomicAdd((unsigned long long *)&p.req_chan[req], 0ull - now);
    const int32_t worst = now >= CHAN_ERR ? atomicExch(&p.req_err[req], 0) : 0;
    p.result[req] = worst;
    if (completed)
        atomicAdd(completed, 1ull); /* no return value used: a fire-and-forget reduction */
    /* release at system scope: every channel's results (acquired above) before the word
     * the host polls */
    st_release_sys_u32(&p.done[req], 1);
}

/* Thread 0: drop task i from the block's list (and its key), keeping submission order. */
__device__ static void task_remove(gpu_task_t *tasks, uint32_t *keys, uint32_t *n, uint32_t i)
{
    for (uint32_t j = i + 1; j < *n; j++) {
        tasks[j - 1] = tasks[j];
        keys[j - 1] = keys[j];
    }
    (*n)--;
}

/* A task's slot key: tasks with the same key share FIFOs on this channel. */
__device__ __forceinline__ uint32_t slot_key(uint32_t comm_id, uint32_t slot)
{
    return comm_id * 64u + slot;
}

/* Warp 0 of block 0: move what the host published into the device ring, as long as
 * every block has room. fpos (the next host slot) is the same in every lane. */
__device__ static void fetch(const gpu_daemon_params_t &p, uint64_t &fpos, uint64_t &min_head)
{
    const unsigned lane = threadIdx.x;
    const uint64_t mask = GPU_RING - 1;
    const uint64_t start = fpos;
    for (int k = 0; k < 16; k++) {
        if (fpos - min_head >= GPU_RING) { /* refresh the slowest block's position */
            uint64_t h = lane < (unsigned)p.channels ? ld_volatile_u64(&p.block_head[lane]) : UINT64_MAX;
            for (int o = 16; o; o >>= 1) {
                uint64_t x = __shfl_xor_sync(0xffffffffu, h, o);
                h = x < h ? x : h;
            }
            min_head = h;
            if (fpos - min_head >= GPU_RING)
                break;
        }
        /* one coalesced read of the slot: all flags current means the whole entry */
        const gpu_sq_slot_t *sl = &p.ring[fpos & mask];
        uint64_t v = lane < GPU_SQ_WORDS ? ld_volatile_u64(&sl->w[lane]) : 0;
        if (!__all_sync(0xffffffffu, lane >= GPU_SQ_WORDS || (uint32_t)(v >> 32) == (uint32_t)(fpos + 1)))
            break;
        if (lane < GPU_SQ_WORDS && lane < sizeof(gpu_sq_entry_t) / 4)
            ((uint32_t *)&p.dring[fpos & mask])[lane] = (uint32_t)v;
        fpos++;
    }
    if (fpos == start)
        return;
    __syncwarp(); /* the lanes' entry words before the tail */
    if (lane == 0) {
        st_volatile_u64(&p.dstate[0], fpos);
        st_release_gpu_u64(&p.dstate[1], fpos);
        st_volatile_u64(p.fetched, fpos); /* the host may reuse those slots */
    }
}

/* Thread 0 of block 0: every block has been still (no progress, no new task) for
 * idle_quit, or for stall_quit while some hold stalled tasks, and every fetched entry
 * has been taken: tell the host first, then (unless a submission slipped in between,
 * which the host's fence after publishing pairs with) every block. */
__device__ static int daemon_quit(const gpu_daemon_params_t &p, uint64_t now, uint64_t fpos)
{
    uint64_t latest = 0;
    int busy = 0;
    for (int c = 0; c < p.channels; c++) {
        uint64_t t = ld_volatile_u64(&p.block_active[c]);
        latest = t > latest ? t : latest;
        busy |= ld_volatile_u32(&p.ntasks[c]) != 0 || ld_volatile_u64(&p.block_head[c]) != fpos;
    }
    if (now < latest || now - latest <= (busy ? p.stall_quit_ns : p.idle_quit_ns))
        return 0;
    st_volatile_u32(p.exited, p.gen);
    fence_sc_sys();
    const uint64_t w0 = ld_volatile_u64(&p.ring[fpos & (GPU_RING - 1)].w[0]);
    if ((uint32_t)(w0 >> 32) == (uint32_t)(fpos + 1)) {
        st_volatile_u32(p.exited, 0);
        return 0;
    }
    st_volatile_u32(p.quit, p.gen);
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
    /* slot keys of the task list: a task may run only when no earlier task of the list
     * has its key (instance seq of a communicator waits for seq-K on this channel, the
     * scheduler's slot rule, checked without a memory access) */
    __shared__ uint32_t s_key[GPU_MAX_TASKS];
    uint64_t last_move = 0, last_check = 0; /* thread 0 only */
    uint64_t fpos = 0, min_head = 0;        /* warp 0 of block 0 (the fetcher) */
    const bool fetcher = b == 0 && threadIdx.x < 32;

    if (fetcher) {
        fpos = ld_volatile_u64(&p.dstate[0]);
        min_head = fpos > GPU_RING ? fpos - GPU_RING : 0; /* refreshed before it matters */
    }
    if (t0) {
        s_head = ld_volatile_u64(&p.block_head[b]);
        s_n = ld_volatile_u32(&p.ntasks[b]);
        last_move = last_check = globaltimer_ns();
        st_volatile_u64(&p.block_active[b], last_move);
    }
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < s_n; i += blockDim.x) /* tasks kept from the last launch */
        s_key[i] = slot_key(tasks[i].comm_id, tasks[i].slot);
    __syncthreads();

    for (;;) {
        if (fetcher)
            fetch(p, fpos, min_head);
        /* ---- take new entries of the device ring into the task list (thread 0) ---- */
        if (t0) {
            uint64_t head = s_head;
            uint32_t n = s_n;
            /* block 0's thread 0 is a fetcher lane: it knows the tail */
            const uint64_t tail = b == 0 ? fpos : ld_acquire_gpu_u64(&p.dstate[1]);
            while (n < GPU_MAX_TASKS && head < tail) {
                gpu_sq_entry_t entry;
                load_entry(&entry, &p.dring[head & (GPU_RING - 1)]);
                const gpu_sq_entry_t *e = &entry;
                head++;
                if (e->kind == GPU_SQ_DESTROY) {
                    /* fail this block's channel of every task of the communicator */
                    for (uint32_t i = 0; i < n;) {
                        if (tasks[i].comm_id == e->comm_id) {
                            channel_done(p, tasks[i].req_id, dfcclCommAborted, tasks[i].completed,
                                         tasks[i].nchan);
                            task_remove(tasks, s_key, &n, i);
                        } else {
                            i++;
                        }
                    }
                    channel_done(p, e->req_id, dfcclSuccess, NULL, (uint32_t)C); /* every block */
                    continue;
                }
                const gpu_comm_dev_t *cm = load_comm(p, e->comm_id);
                const int N = cm->nranks;
                eng_ctx_t x;
                eng_ctx_init(&e->args, N, b, C, &x);
                /* a channel with nothing to move takes no part (one-shots run on block 0
                 * alone); one that has still waits its turn in the slot order */
                const int k = eng_active_channels(&e->args, N, C);
                if (x.done && !(k == 0 && b == 0))
                    continue;
                gpu_task_t *t = &tasks[n];
                const uint32_t slot = (uint32_t)(e->seq % cm->slots);
                t->args = e->args;
                t->conns = cm->conns + ((size_t)slot * C + b) * (size_t)N;
                t->abort_code = cm->abort_code;
                t->stats = cm->stats + (size_t)b * GPU_NSTATS;
                t->completed = cm->completed;
                t->seq = e->seq;
                t->threshold_ns = sched_reset(&p.sp);
                t->chunk = cm->chunk;
                t->rank = cm->rank;
                t->nranks = N;
                t->depth = cm->depth;
                t->comm_id = e->comm_id;
                t->req_id = e->req_id;
                t->slot = slot;
                t->nchan = k ? (uint32_t)k : 1u;
                t->ctx = x;
                s_key[n] = slot_key(e->comm_id, slot);
                n++;
            }
            if (head != s_head) {
                st_volatile_u64(&p.block_head[b], head); /* the fetcher may reuse the entries */
                last_move = globaltimer_ns();
                st_volatile_u64(&p.block_active[b], last_move);
            }
            if (n != s_n)
                st_volatile_u32(&p.ntasks[b], n);
            s_head = head;
            s_n = n;
            s_progress = 0;
        }
        __syncthreads();

        /* ---- one pass over the task list, in submission order ---- */
        int head_seen = 0;
        for (uint32_t i = 0; i < s_n;) {
            /* thread 0 stages the task and its communicator in shared memory: the other
             * warps never read the task table, which thread 0 rewrites */
            gpu_task_t *t = &tasks[i];
            if (t0) {
                int blocked = 0;
                for (uint32_t j = 0; j < i && !blocked; j++)
                    blocked = s_key[j] == s_key[i];
                if (!blocked)
                    s_task = *t;
                s_dec = blocked;
            }
            __syncthreads();
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
            v.rank = s_task.rank;
            v.nranks = s_task.nranks;
            v.depth = s_task.depth;
            v.chunk = s_task.chunk;
            v.conns = s_task.conns;
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
                    /* the abort word is host memory: a PCIe read, so only while waiting,
                     * every 64 spins and before a preemption */
                    int32_t ab = 0;
                    if (r != ENG_PROGRESS && (spins % 64 == 63 || now - wait_start >= budget))
                        ab = *(volatile int32_t *)s_task.abort_code;
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
                        uint64_t *st = s_task.stats; /* device memory */
                        st[GPU_STAT_PREEMPT]++;
                        if (!moved)
                            st[GPU_STAT_STALLS]++;
                        st[GPU_STAT_STALL_NS] += now - wait_start;
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
                    channel_done(p, s_task.req_id, res, s_task.completed, s_task.nchan);
                    uint32_t n = s_n;
                    task_remove(tasks, s_key, &n, i);
                    s_n = n;
                    s_progress = 1;
                }
                __syncthreads();
                continue; /* task i is now the next one */
            }
            __syncthreads();
            i++;
        }

        /* ---- exit: block 0 decides for the daemon, every block follows ---- */
        if (t0) {
            uint64_t now = globaltimer_ns();
            if (s_progress) {
                last_move = now;
                st_volatile_u64(&p.block_active[b], now);
                st_volatile_u32(&p.ntasks[b], s_n);
            }
            s_dec = ld_volatile_u32(p.quit) == p.gen;
            /* block 0 looks at the others at most every 10 us, and only once it is still */
            if (b == 0 && !s_dec && now - last_move > 10000 && now - last_check > 10000) {
                last_check = now;
                s_dec = daemon_quit(p, now, fpos); /* thread 0 is a fetcher lane */
            }
        }
        __syncthreads();
        if (s_dec)
            return;
    }
}
