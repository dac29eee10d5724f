/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU daemon: a persistent kernel of C blocks; block c runs channel c of every
 * collective through the same scheduler decisions (eng_sched.h) and the same algorithm
 * state machines (engine/algo_*.h) as the CPU daemon, over the device primitives of
 * cuda_prims.cuh. Thread 0 of each block takes the control decisions (which entry, which
 * task, preempt or not) and broadcasts them, so the block never diverges around a
 * barrier. Warp 0 of block 0 is also the fetcher: it alone reads the host's submission
 * ring (over PCIe) and hands entries to every block through a ring in device memory,
 * copying the host's flagged words as they are, so a block validates an entry by its
 * flags (no tail counter, no fence on the fetcher's path but for an entry with a table,
 * which the fetcher copies to device memory first: fetch_table) and
 * block 0 takes them from shared memory.
 * Block 0 also decides when the whole daemon exits: after idle_quit with nothing to do,
 * or after stall_quit with every task stalled, so the SMs are free and an application's
 * cudaDeviceSynchronize returns; tasks and their saved contexts stay in device memory for
 * the next launch. */
#include "cuda_prims.cuh"
#include "../engine/algo.h"
#include "../engine/eng_trace.h"
#include "gpu_daemon.h"

enum { DEC_CONTINUE = 0, DEC_PREEMPT = 1, DEC_ABORT = 2 };

#define GPU_SQ_USED ((unsigned)(sizeof(gpu_sq_entry_t) / 4)) /* flagged words an entry fills */

/* Thread 0: entry `pos` of the device ring, if every word of it carries its flag (pos+1).
 * The words are read with volatile loads, all in flight at once: a line this SM's L1
 * kept from the slot's previous use must never stand in for the new contents. */
__device__ static __noinline__ bool take_entry(const gpu_sq_slot_t *ring, uint64_t pos, gpu_sq_entry_t *e)
{
    static_assert(sizeof(gpu_sq_entry_t) % 8 == 0 && GPU_SQ_USED <= GPU_SQ_WORDS, "an entry fits a slot");
    const gpu_sq_slot_t *sl = &ring[pos & (GPU_RING - 1)];
    const uint32_t flag = (uint32_t)(pos + 1);
    if ((uint32_t)(ld_volatile_u64(&sl->w[0]) >> 32) != flag) /* the idle poll: one load */
        return false;
    uint64_t w[GPU_SQ_USED];
    bool ok = true;
#pragma unroll
    for (unsigned i = 0; i < GPU_SQ_USED; i++)
        w[i] = ld_volatile_u64(&sl->w[i]);
#pragma unroll
    for (unsigned i = 0; i < GPU_SQ_USED; i++) {
        ok &= (uint32_t)(w[i] >> 32) == flag;
        ((uint32_t *)e)[i] = (uint32_t)w[i];
    }
    return ok; /* some words still on their way: the next pass takes it */
}

/* DFCCL_GPU_TRACE: request req's record, or NULL: trace off, or block 0 took no part
 * (a collective with fewer pieces than channels may leave channel 0 empty; take_input
 * then marks the index out of range). */
__device__ __forceinline__ uint64_t *trace_rec(const gpu_daemon_params_t &p, uint32_t req)
{
    if (!p.trace)
        return NULL;
    const uint64_t i = p.trace[GPU_TRACE_IDX_OFF + req];
    return i < GPU_TRACE_RECS ? p.trace + i * GPU_TRACE_WORDS : NULL;
}

/* Thread 0: one of the nchan channels taking part in request req is finished with
 * result res; the last one publishes the completion word to the host. tr: block 0's
 * DFCCL_GPU_TRACE record of it, or NULL (trace off, or another block: looked up here,
 * off block 0's path). A failing channel
 * adds 1 << 48 besides its 1, so on the common path the last channel learns "no error"
 * from its own atomic, with no further load; it takes the counter back to 0 with a
 * reduction nobody waits for (the request id is reused only after the host saw done). */
#define CHAN_ERR (1ull << 48)
__device__ static void channel_done(const gpu_daemon_params_t &p, uint32_t req, int32_t res,
                                    unsigned long long *completed, uint32_t nchan, uint64_t *tr)
{
    if (nchan == 1) { /* the only channel (one-shots, small rings): nothing to count */
        if (tr)
            tr[GPU_TR_FINISHED] = globaltimer_ns();
        if (res < 0) /* the host preset success: a completion costs one PCIe write */
            p.result[req] = res;
        if (completed)
            atomicAdd(completed, 1ull);
        if (p.tl.done_ns) /* DFCCL_TRACE: the host's sample of the device clock */
            p.tl.done_ns[req] = globaltimer_ns();
        /* release at system scope: the block's results (the barrier came first) and the
         * result word before the word the host polls */
        st_release_sys_u32(&p.done[req], 1);
        if (tr)
            tr[GPU_TR_POSTED] = globaltimer_ns();
        return;
    }
    if (res < 0)
        atomicMin(&p.req_err[req], res);
    /* release: this block's results (the barrier came first); acquire: the other
     * channels' results, for the last one */
    const uint64_t inc = 1 + (res < 0 ? CHAN_ERR : 0);
    const uint64_t now = atom_add_acq_rel_gpu_u64(&p.req_chan[req], inc) + inc;
    if ((now & (CHAN_ERR - 1)) != nchan)
        return;
    atomicAdd((unsigned long long *)&p.req_chan[req], 0ull - now);
    if (now >= CHAN_ERR)
        p.result[req] = atomicExch(&p.req_err[req], 0);
    if (completed)
        atomicAdd(completed, 1ull); /* no return value used: a fire-and-forget reduction */
    if (p.trace && !tr)             /* another block than 0 is the last: the record by its index */
        tr = trace_rec(p, req);
    if (tr) /* DFCCL_GPU_TRACE: the last channel's finish */
        tr[GPU_TR_FINISHED] = globaltimer_ns();
    if (p.tl.done_ns)
        p.tl.done_ns[req] = globaltimer_ns();
    /* release at system scope: every channel's results (acquired above) before the word
     * the host polls */
    st_release_sys_u32(&p.done[req], 1);
    if (tr)
        tr[GPU_TR_POSTED] = globaltimer_ns();
}

/* Thread 0, DFCCL_TRACE: block b ran task t from t0 until now with this outcome
 * (ENG_TR_*); one record into the block's ring, then its count for the host. A stalled
 * stretch names the ranks whose count of GPU submissions had not passed t's number
 * (PCIe reads of their shared segments: only here, with the timeline on). Out of line:
 * the kernel's body stays as it is with the timeline off. */
__device__ static __noinline__ void timeline_run(gpu_timeline_t tl, int b, const gpu_task_t *t, uint64_t t0,
                                                 int outcome, uint64_t *head)
{
    const uint64_t t1 = globaltimer_ns();
    uint64_t late = 0;
    if (outcome == ENG_TR_STALLED && tl.arrived) {
        /* the row is rewritten (cudaMemcpy) when the id names another communicator: read
         * past L1. The peers' counts: 8 PCIe reads in flight at a time */
        const uint64_t *row = (const uint64_t *)(tl.arrived + (size_t)t->comm_id * GPU_TL_MAX_RANKS);
        const int n = t->nranks < GPU_TL_MAX_RANKS ? t->nranks : GPU_TL_MAX_RANKS;
        for (int q0 = 0; q0 < n; q0 += 8) {
            uint64_t v[8];
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const uint64_t *w =
                    q0 + j < n && q0 + j != t->rank ? (const uint64_t *)ld_volatile_u64(&row[q0 + j]) : NULL;
                v[j] = w ? ld_volatile_u64(w) : ~0ull;
            }
#pragma unroll
            for (int j = 0; j < 8; j++)
                late |= (uint64_t)(v[j] <= t->seq) << (q0 + j);
        }
    }
    const uint64_t n = *head;
    uint64_t *r = tl.recs + ((size_t)b * GPU_TL_RECS + (n & (GPU_TL_RECS - 1))) * GPU_TL_WORDS;
    r[GPU_TL_T0] = t0;
    r[GPU_TL_T1] = t1;
    r[GPU_TL_SEQ] = t->seq;
    r[GPU_TL_META] = (uint64_t)t->comm_id | (uint64_t)t->args.coll << 16 | (uint64_t)outcome << 24 |
                     (uint64_t)t->args.algo << 32;
    r[GPU_TL_LATE] = late;
    *head = n + 1;
    __threadfence(); /* the record before the count the host reads */
    st_volatile_u64(&tl.head[b], n + 1);
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

#define FETCH_IDLE_SPIN_NS 10000 /* block 0 idle: polls in a row before a turn of the loop */

/* The fetcher's state (warp 0 of block 0, the same in every lane). */
typedef struct {
    uint64_t fpos;     /* next host slot */
    uint64_t min_head; /* the slowest block's device ring position, as last read */
    uint64_t pub;      /* position last published to the host in `fetched` */
    uint64_t polls;    /* DFCCL_GPU_TRACE: polls since the last entry found */
    uint64_t last_ns;  /* and when the latest poll started */
} fetcher_t;

/* Warp 0 of block 0, entry word `v` of lane `lane`, the entry whole in the warp, whose
 * table (args.blocks, n entries: a v-collective's blocks, a zero-copy read's export
 * descriptor) is host-mapped: copy it to the device buffer its header names (the entry
 * before it) and make the entry point there. Every block of the collective loads from
 * it, and host-mapped loads from every block at once cost ~0.25 us each on one H200
 * under MPS, as if serialized (bench/RESULTS.md, "Zero-copy read on the GPU daemon"):
 * this way the PCIe reads are the fetcher's, 64 entries a round trip. Out of line: the
 * fetcher's path for every other entry is one shuffle and a compare. */
__device__ static __noinline__ uint64_t fetch_table(unsigned lane, uint64_t v, uint32_t n)
{
    constexpr unsigned LB = (offsetof(gpu_sq_entry_t, args) + offsetof(eng_coll_args_t, blocks)) / 4;
    static_assert(offsetof(gpu_sq_entry_t, args) % 8 == 0 && offsetof(eng_coll_args_t, blocks) % 8 == 0 &&
                      LB + 1 < GPU_SQ_USED && sizeof(eng_block_t) == 32,
                  "the fields the fetcher looks at");
    constexpr unsigned K = 8; /* loads in flight per lane */
    const uint64_t tab = (uint64_t)__shfl_sync(0xffffffffu, (uint32_t)v, LB) |
                         (uint64_t)__shfl_sync(0xffffffffu, (uint32_t)v, LB + 1) << 32;
    const uint64_t *src = (const uint64_t *)(uintptr_t)tab - 4; /* the header, then the entries */
    const uint64_t words = 4 * ((uint64_t)n + 1);
    uint64_t *dst = NULL;
    fence_acq_rel_sys(); /* the table's loads after the flags (the host's release, submit_locked) */
    for (uint64_t base = 0; base < words; base += 32 * K) {
        uint64_t w[K];
#pragma unroll
        for (unsigned k = 0; k < K; k++) {
            const uint64_t i = base + 32 * k + lane;
            w[k] = i < words ? ld_volatile_u64(src + i) : 0;
        }
        if (base == 0) /* header word 0, lane 0's first load: the device buffer */
            dst = (uint64_t *)(uintptr_t)__shfl_sync(0xffffffffu, w[0], 0);
#pragma unroll
        for (unsigned k = 0; k < K; k++) {
            const uint64_t i = base + 32 * k + lane;
            if (i >= 4 && i < words)
                st_volatile_u64(dst + (i - 4), w[k]);
        }
    }
    __syncwarp();
    __threadfence(); /* the copy before the entry that points at it (take_input's fence) */
    const uint64_t dp = (uint64_t)(uintptr_t)dst;
    if (lane == LB || lane == LB + 1)
        v = (v & 0xffffffff00000000ull) | (uint32_t)(lane == LB ? dp : dp >> 32);
    return v;
}

/* Warp 0 of block 0: move what the host published into the device ring, as long as
 * every block has room. Each lane reads word `lane` of the next two slots with two loads
 * in flight at once: one PCIe round trip fetches up to two entries, and no read waits
 * for a slot behind the last one found. The words go to the device ring as they are
 * (flag included), so the fetcher publishes nothing behind a fence, and to block 0's
 * shared staging (s_stage[pos & 1]). The host learns which slots it may reuse
 * (`fetched`, a PCIe write) only every quarter ring or once the ring is empty, so that
 * no completion's system-scope release waits behind that write. Returns the first
 * position fetched by this call. */
__device__ static uint64_t fetch(const gpu_daemon_params_t &p, fetcher_t &f, gpu_sq_entry_t *s_stage,
                                 uint64_t (*s_fst)[3], bool idle)
{
    const unsigned lane = threadIdx.x;
    const uint64_t mask = GPU_RING - 1;
    const uint64_t start = f.fpos;
    /* the same in every lane: the inner loop's exit is uniform */
    const uint64_t first_ns = idle || p.trace ? __shfl_sync(0xffffffffu, globaltimer_ns(), 0) : 0;
    uint64_t call_ns = first_ns;
again:
    f.polls++;
    bool room = true;
    if (f.fpos + 2 - f.min_head > GPU_RING) { /* refresh the slowest block's position */
        uint64_t h = UINT64_MAX;
        for (int c = (int)lane; c < p.channels; c += 32) { /* up to two blocks a lane */
            const uint64_t x = ld_volatile_u64(&p.block_head[c]);
            h = x < h ? x : h;
        }
        for (int o = 16; o; o >>= 1) {
            uint64_t x = __shfl_xor_sync(0xffffffffu, h, o);
            h = x < h ? x : h;
        }
        f.min_head = h;
        room = f.fpos + 2 - f.min_head <= GPU_RING;
    }
    if (room) {
        const bool used = lane < GPU_SQ_USED;
        const uint64_t v0 = used ? ld_volatile_u64(&p.ring[f.fpos & mask].w[lane]) : 0;
        const uint64_t v1 = used ? ld_volatile_u64(&p.ring[(f.fpos + 1) & mask].w[lane]) : 0;
        const uint64_t vs[2] = {v0, v1};
#pragma unroll
        for (int k = 0; k < 2; k++) {
            if (!__all_sync(0xffffffffu, !used || (uint32_t)(vs[k] >> 32) == (uint32_t)(f.fpos + 1)))
                break;
            constexpr unsigned LN = offsetof(gpu_sq_entry_t, ntab) / 4;
            const uint32_t ntab = __shfl_sync(0xffffffffu, (uint32_t)vs[k], LN);
            const uint64_t v = ntab ? fetch_table(lane, vs[k], ntab) : vs[k];
            if (used) {
                st_volatile_u64(&p.dring[f.fpos & mask].w[lane], v);
                ((uint32_t *)&s_stage[f.fpos & 1])[lane] = (uint32_t)v;
            }
            if (p.trace && lane == 0) {
                /* block 0's intake takes them from shared memory with the entry; the device
                 * copy serves an entry taken in a later pass */
                uint64_t *ft = p.trace + GPU_TRACE_FETCH_OFF + (f.fpos & mask) * 4, *sf = s_fst[f.fpos & 1];
                sf[0] = ft[0] = globaltimer_ns();
                sf[1] = ft[1] = k == 0 ? f.polls : 0;
                sf[2] = ft[2] = k == 0 ? call_ns - f.last_ns : 0; /* the poll period before this one */
            }
            f.fpos++;
        }
    }
    f.last_ns = call_ns;
    /* Block 0 with no task of its own polls again at once, up to FETCH_IDLE_SPIN_NS, instead
     * of going round the daemon's loop first (~0.7 us a turn): a submission is then seen
     * within one PCIe read of landing, not up to a read plus a turn. No read is left in
     * flight when a task starts (a fence in its steps would wait for it). */
    if (idle && f.fpos == start && room) {
        call_ns = __shfl_sync(0xffffffffu, globaltimer_ns(), 0);
        if (call_ns - first_ns < FETCH_IDLE_SPIN_NS)
            goto again;
    }
    if (f.fpos == start) {
        if (f.pub != f.fpos && lane == 0)
            st_volatile_u64(p.fetched, f.fpos);
        f.pub = f.fpos;
        return start;
    }
    f.polls = 0;
    __syncwarp();                                        /* the staged words before thread 0 reads them */
    const bool publish = f.fpos - f.pub >= GPU_RING / 4; /* the same in every lane */
    if (lane == 0) {
        st_volatile_u64(p.dstate, f.fpos); /* where the next launch's fetcher starts */
        if (publish)
            st_volatile_u64(p.fetched, f.fpos); /* the host may reuse those slots */
    }
    if (publish)
        f.pub = f.fpos;
    return start;
}

/* Warp 0 of block 0 (lane c reads block c's words, all in flight at once): every block
 * has been still (no progress, no new task) for idle_quit, or for stall_quit while some
 * hold stalled tasks, and every fetched entry has been taken: tell the host first, then
 * (unless a submission slipped in between, which the host's fence after publishing
 * pairs with) every block. fpos is the fetcher's, the same in every lane. */
__device__ static int daemon_quit(const gpu_daemon_params_t &p, uint64_t now, uint64_t fpos)
{
    const unsigned lane = threadIdx.x;
    uint64_t latest = 0;
    int busy = 0;
    for (int c = (int)lane; c < p.channels; c += 32) {
        const uint64_t t = ld_volatile_u64(&p.block_active[c]);
        const uint32_t n = ld_volatile_u32(&p.ntasks[c]);
        const uint64_t h = ld_volatile_u64(&p.block_head[c]);
        latest = t > latest ? t : latest;
        busy |= n != 0 || h != fpos;
    }
    for (int o = 16; o; o >>= 1) {
        const uint64_t x = __shfl_xor_sync(0xffffffffu, latest, o);
        latest = x > latest ? x : latest;
    }
    busy = __any_sync(0xffffffffu, busy);
    if (now < latest || now - latest <= (busy ? p.stall_quit_ns : p.idle_quit_ns))
        return 0;
    int quit = 0;
    if (lane == 0) {
        st_volatile_u64(p.fetched, fpos);
        st_volatile_u32(p.exited, p.gen);
        fence_sc_sys();
        const uint64_t w0 = ld_volatile_u64(&p.ring[fpos & (GPU_RING - 1)].w[0]);
        if ((uint32_t)(w0 >> 32) == (uint32_t)(fpos + 1)) {
            st_volatile_u32(p.exited, 0);
        } else {
            st_volatile_u32(p.quit, p.gen);
            quit = 1;
        }
    }
    return __shfl_sync(0xffffffffu, quit, 0);
}

/* A block's shared state: the intake's and the pass's variables thread 0 writes and
 * every warp reads, one struct so that take_input takes it by one reference. */
struct gpu_block_state_t {
    gpu_task_t task;      /* the task the pass runs, staged by thread 0 */
    eng_chan_view_t view; /* and its view of the communicator, the same for every thread */
    uint64_t head;        /* the block's next device-ring entry */
    uint32_t n;           /* tasks in the list */
    int dec, progress;
    int fresh; /* task is task 0, just built by the intake */
    int copy;  /* and not yet in the list: the block copies it, a word a thread */
    /* slot keys of the task list: a task may run only when no earlier task of the list
     * has its key (instance seq of a communicator waits for seq-K on this channel, the
     * scheduler's slot rule, checked without a memory access) */
    uint32_t key[GPU_MAX_TASKS];
    /* DFCCL_GPU_TRACE, thread 0 of block 0: the fresh task's record, the running task's
     * record, its tries and first move */
    uint64_t *fresh_rec, *trec;
    int tfirst; /* trec's first run */
    uint32_t tries;
    uint64_t moved_ns;
    uint64_t tl_head, run_t0; /* DFCCL_TRACE, thread 0: records written, stretch start */
    /* [0], [1]: block 0's entries the fetcher just took; [2]: an entry take_entry reads
     * from the device ring. The intake reads an entry where it lies: a copy in local
     * memory cost every field a local load */
    gpu_sq_entry_t stage[3];
    uint64_t fst[2][3]; /* DFCCL_GPU_TRACE: the fetcher's stamps of stage[0], stage[1] */
};

/* Thread 0: take new entries of the device ring into the block's task list (block 0 from
 * what the fetcher just staged); a destroy entry fails the communicator's tasks. */
template <bool kDirect>
static __device__ __forceinline__ void take_input(const gpu_daemon_params_t &p, int b, gpu_task_t *tasks,
                                                  uint64_t fpos, uint64_t fstart, gpu_block_state_t &s,
                                                  uint32_t &trace_n, uint64_t &last_move)
{
    uint64_t head = s.head;
    uint32_t n = s.n;
    s.fresh = s.copy = 0;
    /* block 0's thread 0 is a fetcher lane: what this iteration fetched is staged */
    while (n < GPU_MAX_TASKS && (b == 0 ? head < fpos : take_entry(p.dring, head, &s.stage[2]))) {
        const gpu_sq_entry_t *e = &s.stage[2];
        if (b == 0 && head >= fstart)
            e = &s.stage[head & 1];
        else if (b == 0 && !take_entry(p.dring, head, &s.stage[2]))
            break; /* cannot be: the fetcher wrote it before this pass */
        const uint64_t taken_ns = p.trace && b == 0 ? globaltimer_ns() : 0;
        head++;
        if (b != 0 && e->ntab)
            __threadfence(); /* the fetcher's copy of the table, seen after its entry */
        if (e->kind == GPU_SQ_DESTROY) {
            /* fail this block's channel of every task of the communicator */
            if (s.copy) /* a task built by this intake: the scan below reads the list */
                tasks[0] = s.task;
            s.fresh = s.copy = 0; /* task 0 may be among them */
            for (uint32_t i = 0; i < n;) {
                if (tasks[i].comm_id == e->comm_id) {
                    channel_done(p, tasks[i].req_id, dfcclCommAborted, tasks[i].completed, tasks[i].nchan,
                                 b == 0 ? trace_rec(p, tasks[i].req_id) : NULL);
                    task_remove(tasks, s.key, &n, i);
                } else {
                    i++;
                }
            }
            channel_done(p, e->req_id, dfcclSuccess, NULL, (uint32_t)p.channels, NULL); /* every block */
            continue;
        }
        const gpu_comm_dev_t *cm = &e->comm;
        /* the communicator's channels (its ranks agreed on them): blocks beyond
         * them find nothing to move and take no part */
        const int N = cm->nranks, C = (int)cm->channels;
        eng_ctx_t x;
        /* a channel with nothing to move takes no part (one-shots run on block 0
         * alone); one that has still waits its turn in the slot order */
        const int k = eng_ctx_init_in(&e->args, N, b, C, &x, kDirect);
        if (x.done && !(k == 0 && b == 0)) {
            if (taken_ns) /* DFCCL_GPU_TRACE: no record of this request (trace_rec) */
                p.trace[GPU_TRACE_IDX_OFF + e->req_id] = GPU_TRACE_RECS;
            continue;
        }
        /* the first task is built in shared memory, where the pass starts with
         * it (no reload from device memory), and copied to the list */
        gpu_task_t *t = n == 0 ? &s.task : &tasks[n];
        const uint32_t slot = (uint32_t)eng_mod(e->seq, cm->slots);
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
        if (n == 0) /* copied to the list by the whole block after the intake */
            s.fresh = s.copy = 1;
        /* stamped before the record's own loads below, which are no part of the intake */
        const uint64_t built_ns = taken_ns ? globaltimer_ns() : 0;
        if (taken_ns) { /* DFCCL_GPU_TRACE: every collective block 0 takes part in */
            const uint32_t r = trace_n++ & (GPU_TRACE_RECS - 1);
            uint64_t *rec = p.trace + (size_t)r * GPU_TRACE_WORDS;
            const uint64_t *ft = e != &s.stage[2]
                                     ? s.fst[(head - 1) & 1]
                                     : p.trace + GPU_TRACE_FETCH_OFF + ((head - 1) & (GPU_RING - 1)) * 4;
            rec[GPU_TR_FETCHED] = ft[0];
            rec[GPU_TR_POLLS] = ft[1];
            rec[GPU_TR_POLL_NS] = ft[2];
            rec[GPU_TR_TASK] = taken_ns;
            rec[GPU_TR_PASS] = rec[GPU_TR_RUN] = rec[GPU_TR_MOVED] = 0;
            rec[GPU_TR_FINISHED] = rec[GPU_TR_POSTED] = rec[GPU_TR_TRIES] = 0;
            p.trace[GPU_TRACE_IDX_OFF + e->req_id] = r;
            if (n == 0)
                s.fresh_rec = rec; /* the pass after this intake starts with it */
            rec[GPU_TR_BUILT] = built_ns;
        }
        s.key[n] = slot_key(e->comm_id, slot);
        n++;
    }
    if (head != s.head) {
        st_volatile_u64(&p.block_head[b], head); /* the fetcher may reuse the entries */
        last_move = globaltimer_ns();
        st_volatile_u64(&p.block_active[b], last_move);
    }
    if (n != s.n)
        st_volatile_u32(&p.ntasks[b], n);
    s.head = head;
    s.n = n;
    s.progress = 0;
}

/* The daemon: take_input (the CPU daemon's take_input), then one pass over the task list
 * running each runnable task until it finishes or is preempted (its run_task and
 * part_finish), then the exit decision (its idle check). The pass and the exit stay in
 * the kernel's body: as __forceinline__ functions of their own (run_task, task_finish,
 * should_exit) the same code was 1-2.5% slower for 8 B-4 KiB allreduce at 4 and 8
 * ranks on one H200 (A/B in one call, 6 rounds, OSU-style medians 12.94 -> 13.30 us at
 * 4 ranks, 15.37 -> 15.84 us at 8; 2026-12-02), with the same registers and spills. */
template <bool kDirect>
__global__ void __launch_bounds__(GPU_MAX_THREADS, 1) dfccl_gpu_daemon(gpu_daemon_params_t p)
{
    const int b = blockIdx.x;
    const bool t0 = threadIdx.x == 0;
    gpu_task_t *tasks = p.tasks + (size_t)b * GPU_MAX_TASKS;
    __shared__ gpu_block_state_t s;         /* thread 0 writes it, every warp reads it */
    uint64_t last_move = 0, last_check = 0; /* thread 0 (last_check: warp 0 of block 0) */
    uint32_t trace_n = 0; /* thread 0 of block 0: trace records written (DFCCL_GPU_TRACE; every launch) */
    fetcher_t f = {0, 0, 0, 0, 0}; /* warp 0 of block 0 (the fetcher) */
    const bool fetcher = b == 0 && threadIdx.x < 32;

    if (fetcher) {
        f.fpos = f.pub = ld_volatile_u64(p.dstate);
        f.min_head = f.fpos > GPU_RING ? f.fpos - GPU_RING : 0; /* refreshed before it matters */
        f.last_ns = globaltimer_ns();
    }
    if (t0) {
        ll_block()->recv_valid = 0; /* shared memory starts undefined */
        if (kDirect)
            dx_bulk_init();
        s.fresh_rec = s.trec = NULL;
        s.head = ld_volatile_u64(&p.block_head[b]);
        s.n = ld_volatile_u32(&p.ntasks[b]);
        last_move = last_check = globaltimer_ns();
        st_volatile_u64(&p.block_active[b], last_move);
        if (p.tl.recs)
            s.tl_head = ld_volatile_u64(&p.tl.head[b]);
        if (p.trace && b == 0)
            trace_n = (uint32_t)p.trace[GPU_TRACE_COUNT_OFF];
    }
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < s.n; i += blockDim.x) /* tasks kept from the last launch */
        s.key[i] = slot_key(tasks[i].comm_id, tasks[i].slot);
    __syncthreads();

    for (;;) {
        uint64_t fstart = f.fpos;
        if (fetcher)
            fstart = fetch(p, f, s.stage, s.fst, s.n == 0);
        if (t0) /* ---- take new entries of the device ring into the task list ---- */
            take_input<kDirect>(p, b, tasks, f.fpos, fstart, s, trace_n, last_move);
        __syncthreads();
        if (s.copy) { /* the fresh task into the list; read only after the pass's next barrier */
            static_assert(sizeof(gpu_task_t) % 4 == 0, "whole words");
            for (unsigned w = threadIdx.x; w < sizeof(gpu_task_t) / 4; w += blockDim.x)
                ((uint32_t *)tasks)[w] = ((const uint32_t *)&s.task)[w];
        }

        /* ---- one pass over the task list, in submission order ---- */
        int head_seen = 0;
        for (uint32_t i = 0; i < s.n;) {
            /* thread 0 stages the task and its communicator in shared memory: the other
             * warps never read the task table, which thread 0 rewrites */
            gpu_task_t *t = &tasks[i];
            if (t0) {
                if (p.trace && i == 0) { /* DFCCL_GPU_TRACE */
                    if (s.fresh_rec && s.fresh)
                        s.fresh_rec[GPU_TR_PASS] = globaltimer_ns();
                    else
                        s.fresh_rec = NULL;
                }
                int blocked = 0;
                for (uint32_t j = 0; j < i && !blocked; j++)
                    blocked = s.key[j] == s.key[i];
                if (!blocked && !(i == 0 && s.fresh))
                    s.task = *t;
                if (!blocked) {
                    eng_chan_view_t *w = &s.view;
                    w->rank = s.task.rank;
                    w->nranks = s.task.nranks;
                    w->depth = s.task.depth;
                    w->chunk = s.task.chunk;
                    w->conns = s.task.conns;
                    w->put_min = p.put_min;
                    w->sig = eng_coll_sig(&s.task.args); /* in band with every step (engine/eng_sig.h) */
                }
                prim_block_cache_reset();
                s.fresh = 0;
                s.dec = blocked;
            }
            __syncthreads();
            if (s.dec) {
                __syncthreads();
                i++; /* its slot still holds an earlier collective of the communicator */
                continue;
            }
            const int is_head = !head_seen;
            head_seen = 1;
            /* the arguments and the view stay in shared memory, where thread 0 staged them
             * (the algorithms only read them): per-thread copies went to local memory, their
             * address being taken, and cost every visit 256 threads' local stores */
            const eng_coll_args_t *args = &s.task.args;
            eng_chan_view_t *v = &s.view;
            eng_ctx_t x = s.task.ctx; /* every thread steps its own copy identically */
            uint64_t threshold = s.task.threshold_ns, wait_start = 0, budget = 0;
            int spins = 0, moved = 0;
            if (t0) {
                wait_start = globaltimer_ns();
                if (p.tl.recs)
                    s.run_t0 = wait_start;
                budget = sched_budget(&p.sp, threshold, is_head);
                if (p.trace) { /* DFCCL_GPU_TRACE: the fresh task's record is at hand */
                    uint64_t *rec = NULL;
                    /* the fresh record's first run: its words are known zero, so no load
                     * of them lies on the path it measures */
                    s.tfirst = b == 0 && s.fresh_rec && i == 0;
                    if (s.tfirst) {
                        rec = s.fresh_rec;
                        rec[GPU_TR_RUN] = wait_start;
                    } else if (b == 0) {
                        rec = trace_rec(p, s.task.req_id);
                        if (rec && !rec[GPU_TR_RUN])
                            rec[GPU_TR_RUN] = wait_start;
                    }
                    s.trec = rec;
                    s.fresh_rec = NULL;
                    s.tries = 0;
                    s.moved_ns = 0;
                }
            }
            int finished = x.done;
            int32_t res = dfcclSuccess;
            if (!kDirect && (args->algo == ENG_ALGO_DIRECT || args->algo == ENG_ALGO_DIRECT1 ||
                             args->algo == ENG_ALGO_READ)) {
                finished = 1; /* the host launches the kernel with it whenever it picks it */
                res = dfcclInternalError;
            }
            while (!finished) {
                eng_prog_t r = eng_algo_progress_in(args, v, &x, kDirect);
                if (p.trace && t0 && s.trec) {
                    s.tries++;
                    if (r != ENG_WAIT && !s.moved_ns)
                        s.moved_ns = globaltimer_ns();
                }
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
                        ab = *(volatile int32_t *)s.task.abort_code;
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
                        s.progress = 1;
                    } else if (now - wait_start >= budget) {
                        dec = DEC_PREEMPT;
                        uint64_t *st = s.task.stats; /* device memory */
                        st[GPU_STAT_PREEMPT]++;
                        if (!moved)
                            st[GPU_STAT_STALLS]++;
                        st[GPU_STAT_STALL_NS] += now - wait_start;
                    } else {
                        spins++;
                    }
                    s.dec = dec;
                }
                __syncthreads();
                const int dec = s.dec;
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
            if (p.tl.recs && t0) /* DFCCL_TRACE: this stretch */
                timeline_run(p.tl, b, &s.task, s.run_t0,
                             finished ? (res < 0 ? ENG_TR_FAILED : ENG_TR_FINISHED)
                             : moved  ? ENG_TR_PREEMPTED
                                      : ENG_TR_STALLED,
                             &s.tl_head);
            if (p.trace && t0 && s.trec) { /* DFCCL_GPU_TRACE: this run's share (finished or preempted) */
                if (s.tfirst) {
                    s.trec[GPU_TR_TRIES] = s.tries;
                    s.trec[GPU_TR_MOVED] = s.moved_ns;
                } else {
                    s.trec[GPU_TR_TRIES] += s.tries;
                    if (s.moved_ns && !s.trec[GPU_TR_MOVED])
                        s.trec[GPU_TR_MOVED] = s.moved_ns;
                }
            }
            if (finished) {
                __syncthreads(); /* every thread's writes of the last step are done */
                if (t0) {
                    channel_done(p, s.task.req_id, res, s.task.completed, s.task.nchan,
                                 p.trace && b == 0 ? s.trec : NULL);
                    uint32_t n = s.n;
                    task_remove(tasks, s.key, &n, i);
                    s.n = n;
                    s.progress = 1;
                }
                __syncthreads();
                continue; /* task i is now the next one */
            }
            __syncthreads();
            i++;
        }

        /* ---- exit: block 0 decides for the daemon, every block follows ---- */
        if (t0) {
            const uint64_t now = globaltimer_ns();
            if (s.progress) {
                last_move = now;
                st_volatile_u64(&p.block_active[b], now);
                st_volatile_u32(&p.ntasks[b], s.n);
            }
            /* block 0 looks at the others at most every 20 us, and only once it is still */
            s.dec = b == 0 ? (now - last_move > 20000 && now - last_check > 20000 ? 2 : 0)
                           : ld_volatile_u32(p.quit) == p.gen;
            if (s.dec == 2)
                last_check = now;
        }
        if (fetcher) {
            __syncwarp();
            if (s.dec == 2) { /* the same in every lane */
                const int q = daemon_quit(p, __shfl_sync(0xffffffffu, globaltimer_ns(), 0), f.fpos);
                __syncwarp();
                if (threadIdx.x == 0)
                    s.dec = q;
            }
        }
        __syncthreads();
        if (s.dec) {
            if (p.trace && b == 0 && t0) /* DFCCL_GPU_TRACE: the next launch counts on */
                p.trace[GPU_TRACE_COUNT_OFF] = trace_n;
            return;
        }
    }
}

void gpu_daemon_launch(bool direct, int blocks, int threads, cudaStream_t stream,
                       const gpu_daemon_params_t &p)
{
    if (direct) {
        /* the bulk moves' tiles (cuda_bulk.cuh); the blocks are one per SM anyway. A
         * refusal is the caller's launch error (cudaGetLastError), this call's error */
        if (cudaFuncSetAttribute(dfccl_gpu_daemon<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 DX_BULK_SMEM) != cudaSuccess)
            return;
        dfccl_gpu_daemon<true><<<blocks, threads, DX_BULK_SMEM, stream>>>(p);
    } else
        dfccl_gpu_daemon<false><<<blocks, threads, 0, stream>>>(p);
}
