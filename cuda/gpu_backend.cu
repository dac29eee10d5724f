/* SPDX-License-Identifier: BSD-3-Clause */
/* Host side of the GPU backend: the daemon's memory (submission ring, completion words,
 * task lists), communicators' device FIFOs shared with CUDA IPC (host-staged ones,
 * moved by the net transport's proxy, for peers on the net), submission, and the
 * launch / relaunch of the daemon kernel on its own non-blocking stream. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "../engine/eng_config.h"
#include "../engine/eng_gpu.h"
#include "../engine/eng_gpu_layout.h"
#include "../engine/eng_log.h"
#include "../engine/eng_net.h"
}
#include <stdio.h>

#include "gpu_daemon.h"

/* host-staged segments start with a page for the header (eng_seg_hdr_t) */
#define GPU_NET_HDR 4096

/* Where connection group g (slot x channel) lives on the host-staged side, stated once
 * for the net transport's descriptors and the daemon's connections: my receive FIFO
 * from peer p in my segment (the device FIFOs' layout after the header), and my sending
 * FIFO to p in my shadow of p (one FIFO of my steps to p per group after the header). */
static size_t net_recv_off(size_t g, int p, int me, int N, size_t big_conn, size_t small_conn)
{
    return GPU_NET_HDR + eng_gpu_fifo_off(g, p, me, N, big_conn, small_conn);
}

static size_t net_shadow_off(size_t g, size_t depth, uint64_t schunk)
{
    return GPU_NET_HDR + g * (ENG_GPU_CTRL_BYTES + depth * schunk);
}

struct eng_gpu_comm {
    uint32_t id;
    int rank, nranks;
    uint64_t next_seq;
    char *fifo;       /* my FIFOs (peers write into them) */
    char **peer_fifo; /* [nranks] IPC-mapped (mine at [rank]) */
    size_t fifo_bytes;
    /* net peers: host-pinned, device-mapped FIFOs; the proxy lands incoming steps in
     * hseg and sends my steps from my shadows (eng_net_shadow) of the peers */
    char *hseg, *hseg_dev;
    size_t hseg_bytes;
    eng_net_t *net;
    size_t *shadow_size; /* [nranks]: 0 for local peers */
    char **shadow_dev;   /* [nranks]: device mappings of my shadows */
    eng_conn_t *conns_dev;
    gpu_comm_dev_t dev; /* what every submission carries to the daemon (device pointers) */
    unsigned long long *completed_dev;
    int32_t *abort_code; /* host-mapped */
    uint64_t *stats_dev; /* device [channels][GPU_NSTATS] */
};

static struct {
    int state; /* 0: not probed, 1: usable, -1: no GPU */
    int device;
    int channels, threads; /* channels: the daemon's blocks (0 until the first communicator) */
    int sms;
    cudaUUID_t uuid; /* of `device`: which ranks share it (read once: the query is slow) */
    cudaStream_t stream;
    int launched;
    uint64_t last_launch_ns;
    gpu_daemon_params_t params;
    gpu_sq_slot_t *ring; /* host view of the mapped ring */
    uint64_t tail;
    uint64_t *fetched; /* host views of mapped words */
    uint32_t *exited;
    uint32_t gen; /* generation of the latest launch */
    uint32_t *done;
    int32_t *result;
    int free_ids[GPU_MAX_REQS];
    int nfree;
    uint32_t comm_used[GPU_MAX_COMMS];
    uint64_t pending;
    uint64_t launches;
    cudaError_t lost;       /* the daemon's context failed (context_check_locked) */
    uint64_t last_check_ns; /* of the context */
    /* each request id's table of blocks (v-collectives), host-mapped and kept for the
     * id's next table; a grown one's old buffer waits in `retired` until no daemon runs
     * (freeing pinned memory under a running kernel may wait for it) */
    struct {
        eng_block_t *h, *d;
        size_t cap;
    } tab[GPU_MAX_REQS];
    eng_block_t *retired[64];
    int nretired;
} G;
static pthread_mutex_t G_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CUDA_TRY(_call, _label)                                                                              \
    do {                                                                                                     \
        cudaError_t _e = (_call);                                                                            \
        if (_e != cudaSuccess) {                                                                             \
            eng_set_error(dfcclSystemError, "gpu", "%s failed: %s", #_call, cudaGetErrorString(_e));         \
            goto _label;                                                                                     \
        }                                                                                                    \
    } while (0)

template <typename T> static T *mapped_alloc(size_t n, T **dev_p)
{
    T *h = NULL;
    if (cudaHostAlloc((void **)&h, n * sizeof(T), cudaHostAllocMapped) != cudaSuccess)
        return NULL;
    memset((void *)h, 0, n * sizeof(T));
    if (dev_p && cudaHostGetDevicePointer((void **)dev_p, h, 0) != cudaSuccess)
        return NULL;
    return h;
}

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

extern "C" int eng_gpu_available(void)
{
    pthread_mutex_lock(&G_lock);
    int ok = gpu_init_locked();
    pthread_mutex_unlock(&G_lock);
    return ok;
}

extern "C" int eng_gpu_is_device_ptr(const void *ptr)
{
    if (G.state <= 0 || !ptr)
        return 0;
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* Launch the daemon unless the latest launch is still running (or queued). Kernels on
 * one stream never overlap, so a launch racing with the daemon's decision to stay only
 * queues a daemon that finds nothing and exits. */
/* A request id's completion, written by the host: the daemon will never write it. */
static void fail_request_locked(int id, dfcclResult_t res)
{
    G.result[id] = (int32_t)res;
    __atomic_store_n(&G.done[id], 1u, __ATOMIC_RELEASE);
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
    const uint64_t now = now_ns();
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
        if (in_use[id] && !__atomic_load_n(&G.done[id], __ATOMIC_ACQUIRE)) {
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

static void kick_locked(int from_progress)
{
    if (G.lost)
        return;
    if (G.launched) {
        if (__atomic_load_n(G.exited, __ATOMIC_ACQUIRE) != G.gen)
            return;
        /* relaunching a daemon that quit on stalled work: back off a little */
        if (from_progress && now_ns() - G.last_launch_ns < 20000)
            return;
    }
    G.params.gen = ++G.gen;
    dfccl_gpu_daemon<<<G.channels, G.threads, 0, G.stream>>>(G.params);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        dfccl_error("daemon launch failed: %s", cudaGetErrorString(e));
        return;
    }
    G.launched = 1;
    G.launches++;
    G.last_launch_ns = now_ns();
}

extern "C" void eng_gpu_comm_abort(eng_gpu_comm_t *gc, dfcclResult_t code)
{
    if (gc && gc->abort_code)
        __atomic_store_n(gc->abort_code, (int32_t)code, __ATOMIC_RELEASE);
}

extern "C" void eng_gpu_progress(void)
{
    if (G.state <= 0)
        return;
    pthread_mutex_lock(&G_lock);
    if (G.pending && !context_check_locked())
        kick_locked(1);
    pthread_mutex_unlock(&G_lock);
}

extern "C" void eng_gpu_release(int id)
{
    pthread_mutex_lock(&G_lock);
    G.free_ids[G.nfree++] = id;
    G.pending--;
    pthread_mutex_unlock(&G_lock);
}

/* The daemon's copy of a collective's table, in request id's buffer (lock held): its
 * device address, or NULL when pinned memory ran out. */
static const eng_block_t *tab_copy_locked(int id, const eng_block_t *b, size_t n)
{
    if (G.nretired && !G.launched) {
        for (int i = 0; i < G.nretired; i++)
            cudaFreeHost(G.retired[i]);
        G.nretired = 0;
    }
    if (G.tab[id].cap < n) {
        size_t cap = 64;
        while (cap < n)
            cap *= 2;
        eng_block_t *d = NULL, *h = mapped_alloc<eng_block_t>(cap, &d);
        if (!h) {
            cudaGetLastError();
            return NULL;
        }
        if (G.tab[id].h) {
            if (G.nretired == (int)(sizeof(G.retired) / sizeof(G.retired[0]))) {
                cudaFreeHost(h);
                return NULL; /* freed once the daemon is idle; rare: 64 grown tables */
            }
            G.retired[G.nretired++] = G.tab[id].h;
        }
        G.tab[id] = {h, d, cap};
    }
    memcpy(G.tab[id].h, b, n * sizeof(*b));
    return G.tab[id].d;
}

/* Publish one entry (lock held); waits for ring space and a request id. A table of
 * blocks in *a goes to the daemon as its mapped copy; -1: no pinned memory for it. */
static int submit_locked(uint32_t kind, const eng_gpu_comm_t *gc, uint64_t seq, const eng_coll_args_t *a,
                         size_t nblocks)
{
    for (;;) {
        if (G.nfree > 0 && (G.lost || G.tail - __atomic_load_n(G.fetched, __ATOMIC_ACQUIRE) < GPU_RING))
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
    u.e.seq = seq;
    if (a) {
        u.e.args = *a;
        u.e.args.blocks = tab;
    }
    /* every 8-byte word carries its own flag: no ordering among the stores is needed */
    gpu_sq_slot_t *sl = &G.ring[G.tail & (GPU_RING - 1)];
    const uint64_t flag = (uint64_t)(uint32_t)(G.tail + 1) << 32;
    for (int i = 0; i < GPU_SQ_WORDS; i++)
        __atomic_store_n(&sl->w[i], flag | u.w[i], __ATOMIC_RELAXED);
    G.tail++;
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the slot before reading `exited` */
    G.pending++;
    kick_locked(0);
    return id;
}

extern "C" dfcclResult_t eng_gpu_submit(eng_gpu_comm_t *gc, const eng_coll_args_t *a, size_t nblocks,
                                        uint32_t **done_p, int32_t **result_p, int *id_p)
{
    pthread_mutex_lock(&G_lock);
    int id = submit_locked(GPU_SQ_COLL, gc, gc->next_seq, a, nblocks);
    if (id >= 0)
        gc->next_seq++;
    pthread_mutex_unlock(&G_lock);
    if (id < 0)
        return eng_set_error(dfcclNoMemory, "gpu", "no pinned host memory for a %zu-rank block table",
                             nblocks);
    *done_p = &G.done[id];
    *result_p = &G.result[id];
    *id_p = id;
    return dfcclSuccess;
}

/* The size of a communicator's FIFOs, the same on every rank (eng_gpu_layout.h): slots x
 * channels groups of one connection per source rank, with steps of `chunk` bytes in the
 * ring's direction and `small` ones off it. */
typedef struct {
    uint32_t slots, depth;
    int channels;
    uint64_t chunk, small;
    size_t big_conn, small_conn; /* whole connections (control + depth steps) */
} gpu_geom_t;

/* What every rank tells the others while a communicator is built: whether its step went
 * well, and its device's FIFOs. */
typedef struct {
    int32_t status;
    int32_t device;
    cudaUUID_t uuid; /* peers on the same device need only device-scope flags */
    cudaIpcMemHandle_t handle;
} gpu_boot_t;

static dfcclResult_t gather_status(gpu_boot_t *mine, gpu_boot_t *all, int nranks, dfcclAllgatherFn_t ag,
                                   void *ctx)
{
    if (ag(mine, all, sizeof(*mine), ctx) != 0)
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    for (int i = 0; i < nranks; i++)
        if (all[i].status != 0)
            return (dfcclResult_t)(all[i].status < 0 ? all[i].status : -1);
    return dfcclSuccess;
}

/* gather_status into a table nobody reads: whether every rank's step went well. */
static dfcclResult_t gather_agree(gpu_boot_t *mine, int nranks, dfcclAllgatherFn_t ag, void *ctx)
{
    gpu_boot_t *all = (gpu_boot_t *)calloc((size_t)nranks, sizeof(gpu_boot_t));
    dfcclResult_t res = all ? gather_status(mine, all, nranks, ag, ctx) : dfcclNoMemory;
    free(all);
    return res;
}

/* Pin and map host memory for the device (the net transport's FIFOs). */
static char *host_map(void *h, size_t bytes)
{
    char *d = NULL;
    if (cudaHostRegister(h, bytes, cudaHostRegisterMapped) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    if (cudaHostGetDevicePointer((void **)&d, h, 0) != cudaSuccess) {
        cudaGetLastError();
        cudaHostUnregister(h);
        return NULL;
    }
    return d;
}

/* My receive segment for the net peers (its header page, then the device FIFOs' layout),
 * host-pinned and mapped into the device, and the tables of my shadows: 0, or the
 * error (recorded) when there is no memory for them. */
static int32_t net_seg_create(eng_gpu_comm_t *gc)
{
    int32_t status = 0;
    gc->hseg_bytes = GPU_NET_HDR + gc->fifo_bytes;
    gc->shadow_size = (size_t *)calloc((size_t)gc->nranks, sizeof(size_t));
    gc->shadow_dev = (char **)calloc((size_t)gc->nranks, sizeof(char *));
    if (posix_memalign((void **)&gc->hseg, GPU_NET_HDR, gc->hseg_bytes) != 0)
        gc->hseg = NULL;
    if (gc->hseg)
        memset(gc->hseg, 0, gc->hseg_bytes);
    if (!gc->hseg || !gc->shadow_size || !gc->shadow_dev ||
        !(gc->hseg_dev = host_map(gc->hseg, gc->hseg_bytes))) {
        status = eng_set_error(dfcclNoMemory, "dfcclCommInit",
                               "no pinned host memory for the net FIFOs (%zu B)", gc->hseg_bytes);
        free(gc->hseg);
        gc->hseg = NULL;
    }
    return status;
}

/* The connections with net peers (collective over the communicator): my receive
 * segment is a header page and then the device FIFOs' layout, host-pinned; my shadow of
 * peer p holds my connections to p, one per (slot, channel) group. The proxy moves steps
 * between them; the daemon reads and writes them through their device mappings with
 * system-scope flags. */
static dfcclResult_t net_create(eng_gpu_comm_t *gc, const uint8_t *is_net, uint64_t uid,
                                const gpu_geom_t *geo, dfcclAllgatherFn_t ag, void *ctx)
{
    const int N = gc->nranks, me = gc->rank;
    const size_t ctrl = ENG_GPU_CTRL_BYTES, depth = eng_config.fifo_depth;
    const size_t groups = (size_t)geo->slots * geo->channels, big_conn = geo->big_conn,
                 small_conn = geo->small_conn;
    const uint64_t chunk = geo->chunk, small = geo->small;
    size_t nconn = 0;
    for (int p = 0; p < N; p++)
        nconn += p != me && is_net[p] ? groups : 0;
    eng_net_conn_desc_t *d = (eng_net_conn_desc_t *)calloc(nconn ? nconn : 1, sizeof(*d)), *k = d;
    if (!d || !gc->shadow_size || !gc->shadow_dev) {
        free(d);
        return eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
    }
    for (int p = 0; p < N; p++) {
        if (p == me || !is_net[p])
            continue;
        const uint64_t schunk = eng_gpu_step(me, p, N, chunk, small);
        gc->shadow_size[p] = net_shadow_off(groups, depth, schunk);
        for (size_t g = 0; g < groups; g++, k++) {
            k->peer = p;
            k->shadow_off = net_shadow_off(g, depth, schunk);
            k->recv_off = net_recv_off(g, p, me, N, big_conn, small_conn);
            k->schunk = schunk;
            k->rchunk = eng_gpu_step(p, me, N, chunk, small);
            k->lane = (uint32_t)g;
        }
    }
    eng_net_layout_t L;
    memset(&L, 0, sizeof(L));
    L.uid = uid;
    L.rank = me;
    L.nranks = N;
    L.seg = gc->hseg;
    L.shadow_size = gc->shadow_size;
    L.ctrl_bytes = ctrl;
    L.depth = (uint32_t)depth;
    L.conns = d;
    L.nconns = nconn;
    L.abort_words[0] = gc->abort_code;
    dfcclResult_t res = eng_net_setup(&L, ag, ctx, &gc->net);
    free(d);
    if (res != dfcclSuccess)
        return res;
    /* the shadows, mapped into the device; every rank agrees before the first step */
    gpu_boot_t mine, *all = (gpu_boot_t *)calloc((size_t)N, sizeof(gpu_boot_t));
    memset(&mine, 0, sizeof(mine));
    for (int p = 0; p < N && all; p++)
        if (gc->shadow_size[p] &&
            !(gc->shadow_dev[p] = host_map(eng_net_shadow(gc->net, p), gc->shadow_size[p]))) {
            mine.status = eng_set_error(dfcclSystemError, "dfcclCommInit",
                                        "cudaHostRegister of the net FIFOs' shadow of rank %d failed", p);
            break;
        }
    res = all ? gather_status(&mine, all, N, ag, ctx) : dfcclNoMemory;
    free(all);
    return res;
}

/* Connection group g with net peer p: host-staged, system scope. */
static void net_conn_set(const eng_gpu_comm_t *gc, const gpu_geom_t *geo, size_t g, int p, eng_conn_t *cn)
{
    const size_t ctrl = ENG_GPU_CTRL_BYTES;
    cn->recv_ctrl = (eng_conn_ctrl_t *)(gc->hseg_dev + net_recv_off(g, p, gc->rank, gc->nranks, geo->big_conn,
                                                                    geo->small_conn));
    cn->recv_data = (char *)cn->recv_ctrl + ctrl;
    cn->send_ctrl = (eng_conn_ctrl_t *)(gc->shadow_dev[p] + net_shadow_off(g, geo->depth, cn->schunk));
    cn->send_data = (char *)cn->send_ctrl + ctrl;
    cn->sys = 1;
}

/* Stop the net transport and free the host-staged FIFOs. */
static void net_destroy(eng_gpu_comm_t *gc)
{
    if (gc->net) {
        /* unpinned first: the net transport frees the shadows */
        for (int p = 0; p < gc->nranks; p++)
            if (gc->shadow_dev[p])
                cudaHostUnregister(eng_net_shadow(gc->net, p));
        if (eng_net_teardown(gc->net))
            gc->hseg = NULL; /* receives that never finished still land in it: leaked */
    }
    if (gc->hseg) {
        if (gc->hseg_dev)
            cudaHostUnregister(gc->hseg);
        free(gc->hseg);
    }
    free(gc->shadow_size);
    free(gc->shadow_dev);
}

/* My receive FIFOs (every group, every source rank), zeroed, and their IPC handle in
 * *mine: mine->status stays as it was (not 0) when the device cannot hold them. */
static void ipc_fifo_create(eng_gpu_comm_t *gc, const gpu_geom_t *geo, gpu_boot_t *mine)
{
    gc->fifo_bytes = eng_gpu_fifo_off((size_t)geo->slots * geo->channels, 0, 0, gc->nranks, geo->big_conn,
                                      geo->small_conn);
    gc->peer_fifo = (char **)calloc((size_t)gc->nranks, sizeof(char *));
    if (gc->peer_fifo && cudaMalloc((void **)&gc->fifo, gc->fifo_bytes) == cudaSuccess &&
        cudaMemset(gc->fifo, 0, gc->fifo_bytes) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess &&
        cudaIpcGetMemHandle(&mine->handle, gc->fifo) == cudaSuccess) {
        mine->status = 0;
        mine->device = G.device;
        mine->uuid = G.uuid;
    } else {
        cudaGetLastError();
        dfccl_warn("rank %d: no device FIFOs for the communicator (%zu B): device buffers will be "
                   "refused on it",
                   gc->rank, gc->fifo_bytes);
    }
}

/* Map every local peer's FIFOs (all: their handles); net peers' go through host-staged
 * ones. 0, or the error (recorded). */
static int32_t ipc_map_peers(eng_gpu_comm_t *gc, const gpu_boot_t *all, const uint8_t *is_net)
{
    gc->peer_fifo[gc->rank] = gc->fifo;
    for (int p = 0; p < gc->nranks; p++) {
        if (p == gc->rank || (is_net && is_net[p]))
            continue;
        cudaError_t e =
            cudaIpcOpenMemHandle((void **)&gc->peer_fifo[p], all[p].handle, cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) {
            eng_set_error(dfcclSystemError, "dfcclCommInit", "cudaIpcOpenMemHandle(rank %d) failed: %s", p,
                          cudaGetErrorString(e));
            gc->peer_fifo[p] = NULL;
            return dfcclSystemError;
        }
    }
    return 0;
}

/* Connection group g with local peer p (mine too): I receive in my FIFOs and send into
 * p's; system scope when p is on another device (or DFCCL_GPU_SYS_SCOPE). */
static void ipc_conn_set(const eng_gpu_comm_t *gc, const gpu_geom_t *geo, size_t g, int p,
                         const gpu_boot_t *peer, const gpu_boot_t *mine, eng_conn_t *cn)
{
    const size_t ctrl = ENG_GPU_CTRL_BYTES;
    const int rank = gc->rank, nranks = gc->nranks;
    cn->recv_ctrl =
        (eng_conn_ctrl_t *)(gc->fifo + eng_gpu_fifo_off(g, p, rank, nranks, geo->big_conn, geo->small_conn));
    cn->recv_data = (char *)cn->recv_ctrl + ctrl;
    cn->send_ctrl = (eng_conn_ctrl_t *)(gc->peer_fifo[p] +
                                        eng_gpu_fifo_off(g, rank, p, nranks, geo->big_conn, geo->small_conn));
    cn->send_data = (char *)cn->send_ctrl + ctrl;
    cn->sys = eng_config.gpu_sys_scope || memcmp(&peer->uuid, &mine->uuid, sizeof(mine->uuid)) != 0;
}

/* Unmap the peers' FIFOs and free mine. */
static void ipc_destroy(eng_gpu_comm_t *gc)
{
    if (gc->peer_fifo) {
        for (int p = 0; p < gc->nranks; p++)
            if (p != gc->rank && gc->peer_fifo[p])
                cudaIpcCloseMemHandle(gc->peer_fifo[p]);
        free(gc->peer_fifo);
    }
    if (gc->fifo)
        cudaFree(gc->fifo);
}

/* What each rank tells the others before its FIFOs are sized. */
typedef struct {
    int32_t ok;     /* 1: the GPU backend is up */
    int32_t sms;    /* of its device */
    uint32_t fixed; /* its daemon's blocks, or 0 while the first communicator decides */
    uint32_t pad;
    cudaUUID_t uuid; /* its device */
} gpu_where_t;

/* Blocks for a daemon whose GPU r processes share: together about the GPU's SMs (each
 * block holds one SM while the daemon runs), a power of two, at most GPU_MAX_CHANNELS; a
 * process alone on its GPU takes 32, as NCCL's rings do, leaving the rest to the
 * application. Measured on one H200 (bench/RESULTS.md): the ring's bandwidth grows with
 * the blocks until the ranks together fill the SMs. */
static int auto_channels(int r, int sms)
{
    int c = 1;
    while (c * 2 <= GPU_MAX_CHANNELS && c * 2 * (r > 0 ? r : 1) <= sms)
        c *= 2;
    return r <= 1 && c > 32 ? 32 : c;
}

/* The communicator's channels, the same on every rank: the fewest of its ranks' daemons
 * have (a daemon with more blocks leaves the extra ones out of it). A daemon still
 * without a block count takes it from this communicator: how many of its ranks share
 * each GPU. Not dfcclSuccess (and nothing allocated) where some rank has no GPU backend. */
static dfcclResult_t comm_channels(int rank, int nranks, dfcclAllgatherFn_t ag, void *ctx, int *C_p)
{
    gpu_where_t mine, *all = (gpu_where_t *)calloc((size_t)nranks, sizeof(gpu_where_t));
    if (!all)
        return eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory");
    memset(&mine, 0, sizeof(mine));
    if (eng_gpu_available()) {
        mine.ok = 1;
        mine.sms = G.sms;
        mine.uuid = G.uuid;
        pthread_mutex_lock(&G_lock);
        mine.fixed = (uint32_t)G.channels;
        pthread_mutex_unlock(&G_lock);
    }
    if (ag(&mine, all, sizeof(mine), ctx) != 0) {
        free(all);
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    }
    int C = GPU_MAX_CHANNELS, share_me = 0, want_me = 0;
    for (int i = 0; i < nranks; i++) {
        if (!all[i].ok) {
            free(all);
            return dfcclInternalError;
        }
        int share = 0; /* ranks of the communicator on rank i's GPU */
        for (int j = 0; j < nranks; j++)
            share += memcmp(&all[j].uuid, &all[i].uuid, sizeof(cudaUUID_t)) == 0;
        const int want = all[i].fixed ? (int)all[i].fixed : auto_channels(share, all[i].sms);
        C = want < C ? want : C;
        if (i == rank) {
            share_me = share;
            want_me = want;
        }
    }
    free(all);
    pthread_mutex_lock(&G_lock);
    if (!G.channels) {
        G.channels = want_me;
        G.params.channels = want_me;
        dfccl_info("GPU daemon: %d blocks (%d ranks of the first communicator share the GPU, %d SMs)",
                   want_me, share_me, G.sms);
    }
    const int have = G.channels;
    pthread_mutex_unlock(&G_lock);
    static int warned;
    if (share_me * have > G.sms && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        dfccl_warn("%d ranks share this GPU and each daemon has %d blocks, more than the GPU's %d SMs: "
                   "collectives wait for blocks to become resident; set DFCCL_GPU_CHANNELS to at most %d",
                   share_me, have, G.sms, G.sms / share_me);
    /* a concurrent first communicator of this process fixed fewer blocks than this one assumed */
    *C_p = have < C ? 0 : C;
    return dfcclSuccess;
}

/* The FIFOs' geometry; its channels come from comm_channels. */
static gpu_geom_t comm_geom(int any_net)
{
    gpu_geom_t geo;
    geo.slots = eng_config.slots;
    geo.depth = eng_config.fifo_depth;
    geo.channels = 0;
    geo.chunk = eng_gpu_chunk(any_net);
    geo.small = eng_gpu_small_chunk(eng_config.oneshot_max, eng_config.ll_max, geo.depth, geo.chunk);
    const size_t ctrl = ENG_GPU_CTRL_BYTES; /* device FIFOs need no page alignment */
    geo.big_conn = ctrl + geo.depth * geo.chunk;
    geo.small_conn = ctrl + geo.depth * geo.small;
    return geo;
}

/* A step that some rank could not take: a bootstrap failure fails the communicator; any
 * other (some rank has no GPU) leaves it to host buffers only. */
static dfcclResult_t host_only(dfcclResult_t res)
{
    return res == dfcclBootstrapError ? res : dfcclSuccess;
}

/* The connections of every (slot, channel) group with every peer, and what the daemon
 * reads of the communicator, in device memory (gc->dev says where). all: every rank's
 * device. */
static dfcclResult_t comm_dev_create(eng_gpu_comm_t *gc, const gpu_geom_t *geo, uint64_t uid,
                                     const uint8_t *is_net, const gpu_boot_t *all, const gpu_boot_t *mine)
{
    const int rank = gc->rank, nranks = gc->nranks, C = geo->channels;
    const uint32_t S = geo->slots;
    const size_t nconn = (size_t)S * C * (size_t)nranks;
    eng_conn_t *conns = (eng_conn_t *)calloc(nconn, sizeof(eng_conn_t));
    if (!conns)
        return dfcclNoMemory;
    for (uint32_t s = 0; s < S; s++)
        for (int c = 0; c < C; c++) {
            const size_t g = (size_t)s * C + c;
            for (int p = 0; p < nranks; p++) {
                eng_conn_t *cn = &conns[g * (size_t)nranks + (size_t)p];
                cn->rchunk = eng_gpu_step(p, rank, nranks, geo->chunk, geo->small);
                cn->schunk = eng_gpu_step(rank, p, nranks, geo->chunk, geo->small);
                cn->ll_salt = eng_ll_salt(uid);
                if (is_net && is_net[p] && p != rank)
                    net_conn_set(gc, geo, g, p, cn);
                else
                    ipc_conn_set(gc, geo, g, p, &all[p], mine, cn);
            }
        }

    gpu_comm_dev_t d;
    memset(&d, 0, sizeof(d));
    d.rank = rank;
    d.nranks = nranks;
    d.slots = S;
    d.channels = (uint32_t)C;
    d.depth = geo->depth;
    d.chunk = geo->chunk;
    bool ok = gc->abort_code &&
              cudaHostGetDevicePointer((void **)&d.abort_code, gc->abort_code, 0) == cudaSuccess &&
              cudaMalloc((void **)&gc->stats_dev, (size_t)C * GPU_NSTATS * sizeof(uint64_t)) == cudaSuccess &&
              cudaMemset(gc->stats_dev, 0, (size_t)C * GPU_NSTATS * sizeof(uint64_t)) == cudaSuccess &&
              cudaMalloc((void **)&gc->conns_dev, nconn * sizeof(eng_conn_t)) == cudaSuccess &&
              cudaMalloc((void **)&gc->completed_dev, sizeof(unsigned long long)) == cudaSuccess &&
              cudaMemset(gc->completed_dev, 0, sizeof(unsigned long long)) == cudaSuccess;
    if (ok) {
        d.conns = gc->conns_dev;
        d.stats = gc->stats_dev;
        d.completed = gc->completed_dev;
        ok = cudaMemcpy(gc->conns_dev, conns, nconn * sizeof(eng_conn_t), cudaMemcpyHostToDevice) ==
             cudaSuccess;
        gc->dev = d;
    }
    free(conns);
    if (!ok) {
        cudaGetLastError();
        return eng_set_error(dfcclNoMemory, "dfcclCommInit", "device memory for the communicator");
    }
    return dfcclSuccess;
}

/* A communicator id: the daemon's slot keys and the destroy entry name it. */
static dfcclResult_t comm_id_take(eng_gpu_comm_t *gc)
{
    pthread_mutex_lock(&G_lock);
    gc->id = GPU_MAX_COMMS;
    for (uint32_t i = 0; i < GPU_MAX_COMMS; i++)
        if (!G.comm_used[i]) {
            G.comm_used[i] = 1;
            gc->id = i;
            break;
        }
    pthread_mutex_unlock(&G_lock);
    if (gc->id == GPU_MAX_COMMS)
        return eng_set_error(dfcclNoMemory, "dfcclCommInit", "more than %d GPU communicators", GPU_MAX_COMMS);
    return dfcclSuccess;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* DFCCL_GPU_TRACE: log the medians of every stage recorded since the last report (the
 * single-channel collectives block 0 ran), then clear the records. */
static void trace_report(void)
{
    /* consecutive stamps of a record, then the fetcher's poll period and the tries */
    struct stage {
        int from, to;
        const char *name;
    };
    static const stage st[] = {{GPU_TR_FETCHED, GPU_TR_TASK, "fetched -> taken by block 0"},
                               {GPU_TR_TASK, GPU_TR_BUILT, "taken -> task built"},
                               {GPU_TR_BUILT, GPU_TR_PASS, "built -> pass reaches it"},
                               {GPU_TR_PASS, GPU_TR_RUN, "pass -> running"},
                               {GPU_TR_RUN, GPU_TR_MOVED, "running -> first data moved"},
                               {GPU_TR_MOVED, GPU_TR_FINISHED, "moved -> finished"},
                               {GPU_TR_FINISHED, GPU_TR_POSTED, "finished -> completion posted"}};
    enum { NSTAMP = 7, NST = NSTAMP + 2 };
    static_assert(sizeof(st) / sizeof(st[0]) == NSTAMP, "one name per stage");
    uint64_t *tr = (uint64_t *)malloc(GPU_TRACE_TOTAL * sizeof(uint64_t)), *d[NST];
    int ok = tr != NULL;
    for (int k = 0; k < NST; k++)
        ok &= (d[k] = (uint64_t *)malloc(GPU_TRACE_RECS * sizeof(uint64_t))) != NULL;
    if (ok && cudaMemcpy(tr, G.params.trace, GPU_TRACE_TOTAL * sizeof(uint64_t), cudaMemcpyDeviceToHost) ==
                  cudaSuccess) {
        size_t m = 0, mp = 0;
        for (size_t i = 0; i < GPU_TRACE_RECS; i++) {
            const uint64_t *r = tr + i * GPU_TRACE_WORDS;
            int whole = r[GPU_TR_FETCHED] != 0;
            for (int k = 0; k < NSTAMP && whole; k++)
                whole = r[st[k].to] >= r[st[k].from];
            if (!whole) /* not a fresh task's first pass, or not finished */
                continue;
            for (int k = 0; k < NSTAMP; k++)
                d[k][m] = r[st[k].to] - r[st[k].from];
            d[NST - 1][m] = r[GPU_TR_TRIES];
            m++;
            if (r[GPU_TR_POLLS] > 1) /* the fetcher was polling an empty ring before it */
                d[NSTAMP][mp++] = r[GPU_TR_POLL_NS];
        }
        for (int k = 0; k < NST; k++)
            qsort(d[k], k == NSTAMP ? mp : m, sizeof(uint64_t), cmp_u64);
        if (m) {
            char line[1024];
            int len = snprintf(line, sizeof(line), "GPU trace (%zu collectives, medians in ns):", m);
            for (int k = 0; k < NSTAMP && len < (int)sizeof(line); k++)
                len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %llu;", st[k].name,
                                (unsigned long long)d[k][m / 2]);
            if (len < (int)sizeof(line))
                snprintf(line + len, sizeof(line) - (size_t)len,
                         " fetcher's poll period before it %llu; tries %llu",
                         (unsigned long long)(mp ? d[NSTAMP][mp / 2] : 0),
                         (unsigned long long)d[NST - 1][m / 2]);
            dfccl_warn("%s", line);
        }
        cudaMemset(G.params.trace, 0, GPU_TRACE_RECS * GPU_TRACE_WORDS * sizeof(uint64_t));
    }
    cudaGetLastError();
    free(tr);
    for (int k = 0; k < NST; k++)
        free(d[k]);
}

/* The id back, once every block dropped the communicator's tasks (in submission order,
 * failing those still pending); DFCCL_GPU_TRACE reports then. */
static void comm_id_release(eng_gpu_comm_t *gc)
{
    pthread_mutex_lock(&G_lock);
    int id = submit_locked(GPU_SQ_DESTROY, gc, 0, NULL, 0);
    pthread_mutex_unlock(&G_lock);
    while (!__atomic_load_n(&G.done[id], __ATOMIC_ACQUIRE)) {
        eng_gpu_progress();
        sched_yield();
    }
    eng_gpu_release(id);
    pthread_mutex_lock(&G_lock);
    G.comm_used[gc->id] = 0;
    if (G.params.trace)
        trace_report();
    pthread_mutex_unlock(&G_lock);
}

extern "C" dfcclResult_t eng_gpu_comm_create(eng_gpu_comm_t **gc_p, int rank, int nranks, uint64_t uid,
                                             const uint8_t *is_net, dfcclAllgatherFn_t ag, void *ctx)
{
    *gc_p = NULL;
    gpu_boot_t mine, *all = (gpu_boot_t *)calloc((size_t)nranks, sizeof(gpu_boot_t));
    eng_gpu_comm_t *gc = (eng_gpu_comm_t *)calloc(1, sizeof(*gc));
    gpu_geom_t geo = comm_geom(is_net != NULL);
    dfcclResult_t res;
    memset(&mine, 0, sizeof(mine));
    mine.status = -1;
    if (gc)
        gc->id = GPU_MAX_COMMS; /* no communicator id yet */
    if (!all || !gc) {
        free(all);
        free(gc);
        return eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory");
    }
    /* 1. the channels, the same on every rank */
    res = comm_channels(rank, nranks, ag, ctx, &geo.channels);
    if (res != dfcclSuccess) {
        res = host_only(res);
        goto fail;
    }
    /* 2. my device FIFOs; every rank learns every other's (their IPC handles) */
    if (!geo.channels) {
        dfccl_warn("rank %d: a communicator created at the same time fixed fewer GPU daemon blocks than "
                   "this one's ranks agreed on: device buffers will be refused on it",
                   rank);
    } else {
        gc->rank = rank;
        gc->nranks = nranks;
        ipc_fifo_create(gc, &geo, &mine);
    }
    res = gather_status(&mine, all, nranks, ag, ctx);
    if (res != dfcclSuccess) {
        res = host_only(res);
        goto fail;
    }
    /* 3. the abort word (the net transport's error handler writes it), the host-staged
     * FIFOs, and the local peers' FIFOs mapped; every rank agrees before going on */
    mine.status = 0;
    if (!(gc->abort_code = mapped_alloc<int32_t>(1, NULL)))
        mine.status = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no mapped memory for the abort word");
    if (is_net && mine.status == 0)
        mine.status = net_seg_create(gc);
    if (mine.status == 0)
        mine.status = ipc_map_peers(gc, all, is_net);
    if ((res = gather_agree(&mine, nranks, ag, ctx)) != dfcclSuccess)
        goto fail;
    /* 4. the net transport, 5. the connections in device memory, 6. an id */
    if (is_net && (res = net_create(gc, is_net, uid, &geo, ag, ctx)) != dfcclSuccess)
        goto fail;
    if ((res = comm_dev_create(gc, &geo, uid, is_net, all, &mine)) != dfcclSuccess)
        goto fail;
    if ((res = comm_id_take(gc)) != dfcclSuccess)
        goto fail;
    free(all);
    *gc_p = gc;
    return dfcclSuccess;
fail:
    free(all);
    eng_gpu_comm_destroy(gc);
    return res;
}

extern "C" void eng_gpu_comm_destroy(eng_gpu_comm_t *gc)
{
    if (!gc)
        return;
    if (gc->id < GPU_MAX_COMMS)
        comm_id_release(gc);
    net_destroy(gc);
    ipc_destroy(gc);
    if (gc->conns_dev)
        cudaFree(gc->conns_dev);
    if (gc->completed_dev)
        cudaFree(gc->completed_dev);
    if (gc->abort_code)
        cudaFreeHost(gc->abort_code);
    if (gc->stats_dev)
        cudaFree(gc->stats_dev);
    cudaGetLastError();
    free(gc);
}

extern "C" void eng_gpu_comm_stats(eng_gpu_comm_t *gc, dfcclStats_t *s)
{
    memset(s, 0, sizeof(*s));
    if (!gc)
        return;
    /* the daemon's stream is non-blocking: these copies do not wait for it */
    uint64_t st[GPU_MAX_CHANNELS * GPU_NSTATS];
    unsigned long long done = 0;
    if (cudaMemcpy(st, gc->stats_dev, (size_t)gc->dev.channels * GPU_NSTATS * sizeof(uint64_t),
                   cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(&done, gc->completed_dev, sizeof(done), cudaMemcpyDeviceToHost) != cudaSuccess) {
        cudaGetLastError();
        memset(st, 0, sizeof(st));
    }
    for (int c = 0; c < (int)gc->dev.channels; c++) {
        s->preemptions += st[c * GPU_NSTATS + GPU_STAT_PREEMPT];
        s->stalls += st[c * GPU_NSTATS + GPU_STAT_STALLS];
        s->stall_ns += st[c * GPU_NSTATS + GPU_STAT_STALL_NS];
    }
    s->completed = done;
    s->shm_bytes = gc->fifo_bytes; /* device memory held for the communicator */
    s->daemon_launches = G.launches;
}
