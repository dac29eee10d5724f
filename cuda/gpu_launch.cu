/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU daemon's host side: probe the device and set up the daemon's memory once
 * (submission ring, completion words, task lists), publish submissions into the ring,
 * hand out request ids, and launch / relaunch the daemon kernel on its own non-blocking
 * stream. A daemon exits when idle or stalled so that the application's device
 * synchronizations return; the next submission or progress call brings it back, and a
 * context the kernel lost fails what waits on it instead of hanging (context_check). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_backend.h"

gpu_state_t G;
pthread_mutex_t G_lock = PTHREAD_MUTEX_INITIALIZER;

/* Probe the device and set up the daemon's memory once per process. */
static int gpu_init_locked(void)
{
    if (G.state)
        return G.state > 0;
    G.state = -1;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        dfccl_info("no CUDA device: the GPU backend is off");
        return 0;
    }
    gpu_daemon_params_t &p = G.params;
    /* 0 (auto): the first communicator fixes it (comm_channels) */
    G.channels = (int)DFCCL_MIN(eng_config.gpu_channels, (uint32_t)GPU_MAX_CHANNELS);
    G.threads = (int)eng_config.gpu_threads;
    CUDA_TRY(cudaGetDevice(&G.device), fail);
    CUDA_TRY(cudaStreamCreateWithFlags(&G.stream, cudaStreamNonBlocking), fail);
    G.ring = mapped_alloc<gpu_sq_slot_t>(GPU_RING, &p.ring);
    G.fetched = mapped_alloc<uint64_t>(1, &p.fetched);
    G.exited = mapped_alloc<uint32_t>(1, &p.exited);
    G.done = mapped_alloc<uint32_t>(GPU_MAX_REQS, &p.done);
    G.result = mapped_alloc<int32_t>(GPU_MAX_REQS, &p.result);
    if (!G.ring || !G.fetched || !G.exited || !G.done || !G.result) {
        eng_set_error(dfcclNoMemory, "gpu", "cudaHostAlloc of the daemon's mapped memory failed");
        goto fail;
    }
    CUDA_TRY(cudaMalloc((void **)&p.dring, GPU_RING * sizeof(gpu_sq_slot_t)), fail);
    CUDA_TRY(cudaMemset(p.dring, 0, GPU_RING * sizeof(gpu_sq_slot_t)), fail); /* no flag is current */
    CUDA_TRY(cudaMalloc((void **)&p.dstate, sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMalloc((void **)&p.block_head, GPU_MAX_CHANNELS * sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMalloc((void **)&p.block_active, GPU_MAX_CHANNELS * sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMalloc((void **)&p.quit, sizeof(uint32_t)), fail);
    CUDA_TRY(cudaMemset(p.dstate, 0, sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMemset(p.block_head, 0, GPU_MAX_CHANNELS * sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMemset(p.block_active, 0, GPU_MAX_CHANNELS * sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMemset(p.quit, 0, sizeof(uint32_t)), fail);
    CUDA_TRY(cudaMalloc((void **)&p.req_chan, GPU_MAX_REQS * sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMalloc((void **)&p.req_err, GPU_MAX_REQS * sizeof(int32_t)), fail);
    CUDA_TRY(cudaMalloc((void **)&p.tasks, (size_t)GPU_MAX_CHANNELS * GPU_MAX_TASKS * sizeof(gpu_task_t)),
             fail);
    CUDA_TRY(cudaMalloc((void **)&p.ntasks, GPU_MAX_CHANNELS * sizeof(uint32_t)), fail);
    CUDA_TRY(cudaMemset(p.req_chan, 0, GPU_MAX_REQS * sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMemset(p.req_err, 0, GPU_MAX_REQS * sizeof(int32_t)), fail);
    CUDA_TRY(cudaMemset(p.ntasks, 0, GPU_MAX_CHANNELS * sizeof(uint32_t)), fail);
    if (eng_config.gpu_trace) {
        CUDA_TRY(cudaMalloc((void **)&p.trace, GPU_TRACE_TOTAL * sizeof(uint64_t)), fail);
        CUDA_TRY(cudaMemset(p.trace, 0, GPU_TRACE_TOTAL * sizeof(uint64_t)), fail);
    }
    CUDA_TRY(cudaDeviceSynchronize(), fail);
    p.channels = G.channels;
    p.sp.preempt = eng_config.preempt;
    p.sp.base_ns = eng_config.threshold_base_ns;
    p.sp.max_ns = eng_config.threshold_max_ns;
    p.sp.growth = eng_config.threshold_growth;
    p.sp.head_factor = eng_config.head_factor;
    p.idle_quit_ns = eng_config.gpu_idle_quit_us * 1000ull;
    p.stall_quit_ns = eng_config.gpu_stall_quit_us * 1000ull;
    p.put_min = eng_config.net_put_min;
    for (int i = 0; i < GPU_MAX_REQS; i++)
        G.free_ids[i] = GPU_MAX_REQS - 1 - i;
    G.nfree = GPU_MAX_REQS;
    G.state = 1;
    CUDA_TRY(cudaDeviceGetAttribute(&G.sms, cudaDevAttrMultiProcessorCount, G.device), fail);
    {
        cudaDeviceProp prop;
        CUDA_TRY(cudaGetDeviceProperties(&prop, G.device), fail);
        G.uuid = prop.uuid;
    }
    if (G.channels)
        dfccl_info("GPU backend on device %d: %d channels x %d threads", G.device, G.channels, G.threads);
    else
        dfccl_info("GPU backend on device %d (%d SMs): channels set by the first communicator, %d threads",
                   G.device, G.sms, G.threads);
    return 1;
fail:
    dfccl_warn("GPU backend unavailable: %s", dfcclGetLastError());
    return 0;
}

int gpu_describe(char *buf, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(buf, len, "no CUDA device: %s", cudaGetErrorString(e));
        cudaGetLastError();
        return -1;
    }
    size_t off = 0;
    buf[0] = 0;
    for (int d = 0; d < n && off < len; d++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess)
            continue;
        off += (size_t)snprintf(buf + off, len - off, "%sdevice %d: %s, %d SMs, compute %d.%d, %.1f GiB",
                                off ? "\n" : "", d, p.name, p.multiProcessorCount, p.major, p.minor,
                                (double)p.totalGlobalMem / (1024.0 * 1024 * 1024));
    }
    return n;
}

int gpu_available(void)
{
    pthread_mutex_lock(&G_lock);
    int ok = gpu_init_locked();
    pthread_mutex_unlock(&G_lock);
    return ok;
}

/* A request id's completion, written by the host: the daemon will never write it. */
static void fail_request_locked(int id, dfcclResult_t res)
{
    G.result[id] = (int32_t)res;
    dfccl_store_release(&G.done[id], 1u);
}

/* A daemon whose kernel ended in an error (a sticky context error) completes nothing
 * any more, and a relaunch fails too: without this look its requests would wait
 * forever. It happens under MPS when a client process is killed while its kernels
 * run: the server may put every client sharing the GPU into that error (seen with a
 * peer killed in the middle of a host-staged allreduce). Every pending request then
 * fails, and so does every later one. Looked at from the host's waits, at most every
 * 10 ms (a stream query is a driver call). Returns 1 once the context is lost. */
static int context_check_locked(void)
{
    if (G.lost)
        return 1;
    const uint64_t now = eng_now_ns();
    if (!G.launched || now - G.last_check_ns < 10000000ull)
        return 0;
    G.last_check_ns = now;
    const cudaError_t e = cudaStreamQuery(G.stream);
    if (e == cudaSuccess || e == cudaErrorNotReady)
        return 0;
    G.lost = e;
    char in_use[GPU_MAX_REQS];
    memset(in_use, 1, sizeof(in_use));
    for (int i = 0; i < G.nfree; i++)
        in_use[G.free_ids[i]] = 0;
    int failed = 0;
    for (int id = 0; id < GPU_MAX_REQS; id++)
        if (in_use[id] && !dfccl_load_acquire(&G.done[id])) {
            fail_request_locked(id, dfcclSystemError);
            failed++;
        }
    dfccl_error(
        "the GPU daemon's CUDA context failed (%s): %d pending collective(s) on device buffers fail, and "
        "so does every later one in this process. Under MPS a peer process killed while its kernels "
        "ran can take every client of the GPU with it",
        cudaGetErrorString(e), failed);
    return 1;
}

/* Launch the daemon unless the latest launch is still running (or queued). Kernels on
 * one stream never overlap, so a launch racing with the daemon's decision to stay only
 * queues a daemon that finds nothing and exits. */
static void kick_locked(int from_progress)
{
    if (G.lost)
        return;
    if (G.launched) {
        if (dfccl_load_acquire(G.exited) != G.gen)
            return;
        /* relaunching a daemon that quit on stalled work: back off a little */
        if (from_progress && eng_now_ns() - G.last_launch_ns < 20000)
            return;
    }
    G.params.gen = ++G.gen;
    /* the zero-copy read is compiled into the direct exchange's kernel (auto reads on
     * large communicators only: ask for the largest) */
    gpu_daemon_launch(eng_config.direct_max != 0 || eng_read_min(1, ENG_DX_MAX_RANKS) != 0, G.channels,
                      G.threads, G.stream, G.params);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        /* no kernel of this generation runs, so none will say it exited: take the number
         * back, or `exited` would never match again and no later kick would relaunch */
        G.params.gen = --G.gen;
        G.last_launch_ns = eng_now_ns(); /* the progress calls' back-off paces the retries */
        if (e != G.launch_error)         /* the first failure, and each change of error */
            dfccl_error("daemon launch failed: %s (retried at the next submission or progress call)",
                        cudaGetErrorString(e));
        G.launch_error = e;
        return;
    }
    G.launched = 1;
    G.launches++;
    G.last_launch_ns = eng_now_ns();
}

void gpu_progress(void)
{
    if (G.state <= 0)
        return;
    gpu_timeline_poll();
    gpu_read_progress();
    pthread_mutex_lock(&G_lock);
    if (G.pending && !context_check_locked())
        kick_locked(1);
    pthread_mutex_unlock(&G_lock);
}

void gpu_release(int id)
{
    gpu_timeline_sample(id);
    pthread_mutex_lock(&G_lock);
    G.free_ids[G.nfree++] = id;
    G.pending--;
    pthread_mutex_unlock(&G_lock);
}

/* A collective's table of n blocks for request id (lock held): written into the id's
 * host-mapped buffer after its header, which names the id's device buffer, where the
 * fetcher copies it (ntab in the entry). Returns the mapped address of entry 0, or NULL
 * when pinned or device memory for it ran out. */
static const eng_block_t *tab_copy_locked(int id, const eng_block_t *b, size_t n)
{
    if (G.tab[id].cap < n) {
        size_t cap = 64;
        while (cap < n)
            cap *= 2;
        eng_block_t *d = NULL, *dev = NULL, *h = mapped_alloc<eng_block_t>(cap + 1, &d);
        if (!h || cudaMalloc((void **)&dev, cap * sizeof(*dev)) != cudaSuccess) {
            cudaGetLastError();
            cudaFreeHost(h);
            return NULL;
        }
        /* the id's old buffers, if any, stay allocated (gpu_backend.h says why) */
        h[0] = (eng_block_t){(uint64_t)(uintptr_t)dev, 0, 0, 0}; /* the header */
        G.tab[id] = {h, d, dev, cap};
    }
    memcpy(G.tab[id].h + 1, b, n * sizeof(*b));
    return G.tab[id].d + 1;
}

/* Publish one entry (lock held); waits for ring space and a request id. A table of
 * blocks in *a goes to the daemon as its mapped copy; -1: no pinned memory for it. */
int submit_locked(uint32_t kind, const eng_gpu_comm_t *gc, uint64_t seq, const eng_coll_args_t *a,
                  size_t nblocks)
{
    for (;;) {
        if (G.nfree > 0 && (G.lost || G.tail - dfccl_load_acquire(G.fetched) < GPU_RING))
            break;
        /* full: the daemon drains it; make sure one runs, then let it (a lost context
         * never drains it: then only an id is waited for, freed by a reaped request) */
        if (!context_check_locked())
            kick_locked(0);
        pthread_mutex_unlock(&G_lock);
        sched_yield();
        pthread_mutex_lock(&G_lock);
    }
    int id = G.free_ids[--G.nfree];
    G.id_uses[id]++;
    const eng_block_t *tab = NULL;
    if (a && a->blocks && !(tab = tab_copy_locked(id, a->blocks, nblocks))) {
        G.free_ids[G.nfree++] = id;
        return -1;
    }
    G.done[id] = 0;
    G.result[id] = dfcclSuccess; /* the daemon writes it only on failure: one PCIe write less */
    if (G.lost) {                /* no daemon will run it (context_check_locked) */
        fail_request_locked(id, dfcclSystemError);
        G.pending++;
        return id;
    }
    union {
        gpu_sq_entry_t e;
        uint32_t w[GPU_SQ_WORDS];
    } u;
    static_assert(sizeof(gpu_sq_entry_t) <= sizeof(u.w), "an entry fits one ring slot");
    memset(&u, 0, sizeof(u));
    u.e.kind = kind;
    u.e.comm_id = gc->id;
    u.e.comm = gc->dev;
    u.e.req_id = (uint32_t)id;
    u.e.ntab = tab ? (uint32_t)nblocks : 0; /* a rank count */
    u.e.seq = seq;
    if (a) {
        u.e.args = *a;
        u.e.args.blocks = tab;
    }
    /* every 8-byte word carries its own flag: no ordering among the stores is needed, but
     * the block table (tab_copy_locked's memcpy) goes before them: the fetcher copies it
     * to device memory as soon as it sees the flags (fetch_table) */
    dfccl_fence_release();
    gpu_sq_slot_t *sl = &G.ring[G.tail & (GPU_RING - 1)];
    const uint64_t flag = (uint64_t)(uint32_t)(G.tail + 1) << 32;
    for (int i = 0; i < GPU_SQ_WORDS; i++)
        dfccl_store_relaxed(&sl->w[i], flag | u.w[i]);
    G.tail++;
    dfccl_fence_seq_cst(); /* the slot before reading `exited` */
    G.pending++;
    kick_locked(0);
    return id;
}

dfcclResult_t gpu_submit(eng_gpu_comm_t *gc, const eng_coll_args_t *a, size_t nblocks, uint32_t **done_p,
                         int32_t **result_p, int *id_p, uint64_t *seq_p, uint64_t *ns_p)
{
    pthread_mutex_lock(&G_lock);
    const uint64_t seq = gc->next_seq;
    /* counted before the entry can reach the daemon, and under the lock (in order of the
     * numbers): a peer's DFCCL_TRACE that reads it below seq+1 looked before this
     * submission, and the stamp comes after the count */
    if (gc->arrived_me)
        dfccl_store_release64(gc->arrived_me, seq + 1);
    *ns_p = eng_trace_on ? eng_now_ns() : 0;
    int id = submit_locked(GPU_SQ_COLL, gc, seq, a, nblocks);
    if (id >= 0) {
        gc->next_seq++;
        if (a->algo == ENG_ALGO_READ && a->blocks)
            gpu_read_mark_locked(gc, a->blocks, id); /* its export slot is in use until id completes */
    } else if (gc->arrived_me) {
        dfccl_store_release64(gc->arrived_me, seq); /* not submitted after all */
    }
    pthread_mutex_unlock(&G_lock);
    *seq_p = seq;
    if (id < 0)
        return eng_set_error(dfcclNoMemory, "gpu",
                             "no pinned host or device memory for a %zu-rank block table", nblocks);
    *done_p = &G.done[id];
    *result_p = &G.result[id];
    *id_p = id;
    return dfcclSuccess;
}

/* The backend as the engine calls it (eng_gpu, engine/transport.c). */
extern "C" const eng_gpu_backend_t eng_gpu_cuda = {
    gpu_available,     gpu_describe, gpu_comm_create, gpu_comm_destroy, gpu_comm_abort, gpu_comm_stats,
    gpu_comm_channels, gpu_submit,   gpu_read_export, gpu_progress,     gpu_release,
};
