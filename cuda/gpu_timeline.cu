/* SPDX-License-Identifier: BSD-3-Clause */
/* DFCCL_TRACE for the GPU daemon: its blocks stamp every run stretch with %globaltimer
 * into rings in device memory (gpu_daemon.h, gpu_timeline_t), and this file drains them
 * into the process's timeline (engine/trace.c): every millisecond or so from the host's
 * waits, when a communicator goes (before its id can name another one), and at each
 * flush. The device's clock is placed on the host's by the smallest gap seen (within
 * ~17-50 ms of device time, engine/trace.c) between a device time and the host seeing it: a completion word
 * (the daemon stamps the time just before it) and each drain's newest record. Each bound is late by the PCIe
 * latency at least, so the GPU's stretches show up to ~1-2 us late against the host's events. Nothing of this
 * exists, and the kernel takes no branch into it, without DFCCL_TRACE. */
#include <stdlib.h>

#include "gpu_backend.h"

#define TL_DRAIN_NS 1000000ull /* from the host's waits: at most this often */
#define TL_PAGE     4096ull

static pthread_mutex_t T_lock = PTHREAD_MUTEX_INITIALIZER; /* the drain and T */
static struct {
    int ready;
    cudaStream_t stream;             /* non-blocking: the copies never wait for the daemon's kernel */
    uint64_t *head_h;                /* pinned [2][GPU_MAX_CHANNELS]: before and after the copies */
    uint64_t *recs_h;                /* pinned: the rings' copy, as the device's */
    uint64_t *done_h;                /* host view of tl.done_ns */
    uint64_t read[GPU_MAX_CHANNELS]; /* records of each block's ring already taken */
    uint64_t lost;                   /* overwritten before a drain came */
    uint64_t last_ns;                /* the last drain (eng_now_ns) */
    struct {
        uint64_t uid;
        int rank, nranks;
    } comm[GPU_MAX_COMMS];
} T;

/* G_lock held, before the daemon's first launch (the first communicator is being made,
 * and DFCCL_TRACE was read when the CPU daemon started for it): the device's rings and
 * the host's staging. On failure the timeline stays off (a warning says so). */
void gpu_timeline_setup_locked(void)
{
    if (!eng_trace_on || T.ready || G.launched)
        return;
    gpu_timeline_t &tl = G.params.tl;
    const size_t ring = (size_t)GPU_MAX_CHANNELS * GPU_TL_RECS * GPU_TL_WORDS * sizeof(uint64_t);
    /* the host's copy is as large: a drain copies every block's new records and waits once */
    const size_t arrived = (size_t)GPU_MAX_COMMS * GPU_TL_MAX_RANKS * sizeof(uint64_t *);
    pthread_mutex_lock(&T_lock);
    CUDA_TRY(cudaStreamCreateWithFlags(&T.stream, cudaStreamNonBlocking), fail);
    CUDA_TRY(cudaMalloc((void **)&tl.recs, ring), fail);
    CUDA_TRY(cudaMalloc((void **)&tl.head, GPU_MAX_CHANNELS * sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMemset(tl.head, 0, GPU_MAX_CHANNELS * sizeof(uint64_t)), fail);
    CUDA_TRY(cudaMalloc((void **)&tl.arrived, arrived), fail);
    CUDA_TRY(cudaMemset((void *)tl.arrived, 0, arrived), fail);
    CUDA_TRY(cudaHostAlloc((void **)&T.head_h, 2 * GPU_MAX_CHANNELS * sizeof(uint64_t), cudaHostAllocDefault),
             fail);
    CUDA_TRY(cudaHostAlloc((void **)&T.recs_h, ring, cudaHostAllocDefault), fail);
    if (!(T.done_h = mapped_alloc<uint64_t>(GPU_MAX_REQS, &tl.done_ns))) {
        eng_set_error(dfcclNoMemory, "gpu", "cudaHostAlloc of the timeline's completion stamps failed");
        goto fail;
    }
    CUDA_TRY(cudaDeviceSynchronize(), fail);
    T.ready = 1;
    T.last_ns = eng_now_ns();
    pthread_mutex_unlock(&T_lock);
    eng_trace_set_gpu_drain(gpu_timeline_drain);
    dfccl_info("DFCCL_TRACE: the GPU daemon stamps its run stretches too (%.1f MiB of device memory, "
               "%.1f MiB of pinned host memory)",
               (double)(ring + arrived) / (1024.0 * 1024.0), (double)ring / (1024.0 * 1024.0));
    return;
fail:
    dfccl_warn("DFCCL_TRACE: no timeline of the GPU daemon: %s", dfcclGetLastError());
    if (tl.recs)
        cudaFree(tl.recs);
    if (tl.head)
        cudaFree(tl.head);
    if (tl.arrived)
        cudaFree((void *)tl.arrived);
    if (T.head_h)
        cudaFreeHost(T.head_h);
    if (T.recs_h)
        cudaFreeHost(T.recs_h);
    tl = gpu_timeline_t{};
    T.head_h = T.recs_h = NULL;
    cudaGetLastError();
    pthread_mutex_unlock(&T_lock);
}

/* A new communicator (its id taken, no collective submitted yet): what its records
 * name, and where the daemon reads each same-host peer's count of GPU submissions: the
 * page of the peer's shared segment that holds it, registered for the device. A peer
 * whose page cannot be registered is never named late (a warning says so). */
void gpu_timeline_comm(eng_gpu_comm_t *gc, uint64_t uid, uint64_t *const *arrived)
{
    if (!T.ready)
        return;
    const uint64_t *row[GPU_TL_MAX_RANKS] = {0};
    gc->tl_pages = (void **)calloc((size_t)gc->nranks, sizeof(void *));
    for (int q = 0; q < gc->nranks && q < GPU_TL_MAX_RANKS && gc->tl_pages; q++) {
        if (q == gc->rank || !arrived[q])
            continue;
        char *page = (char *)((uintptr_t)arrived[q] & ~(uintptr_t)(TL_PAGE - 1)), *dpage = NULL;
        if (cudaHostRegister(page, TL_PAGE, cudaHostRegisterMapped) != cudaSuccess) {
            cudaGetLastError();
            dfccl_warn(
                "DFCCL_TRACE: communicator %016llx: rank %d's submissions cannot be mapped for the GPU "
                "daemon: its stalls never name rank %d late",
                (unsigned long long)uid, gc->rank, q);
            continue;
        }
        gc->tl_pages[q] = page;
        if (cudaHostGetDevicePointer((void **)&dpage, page, 0) == cudaSuccess)
            row[q] = (const uint64_t *)(dpage + ((char *)arrived[q] - page));
        cudaGetLastError();
    }
    pthread_mutex_lock(&T_lock);
    T.comm[gc->id].uid = uid;
    T.comm[gc->id].rank = gc->rank;
    T.comm[gc->id].nranks = gc->nranks;
    if (cudaMemcpy((void *)(G.params.tl.arrived + (size_t)gc->id * GPU_TL_MAX_RANKS), row, sizeof(row),
                   cudaMemcpyHostToDevice) != cudaSuccess)
        cudaGetLastError(); /* stalls on it name nobody */
    pthread_mutex_unlock(&T_lock);
}

/* Records [from, to) of block b's ring, copied into T.recs_h (stream order; at most two
 * copies: up to the ring's end, then from its start). */
static int copy_block(int b, uint64_t from, uint64_t to)
{
    const size_t off = (size_t)b * GPU_TL_RECS * GPU_TL_WORDS, rec = GPU_TL_WORDS * sizeof(uint64_t);
    for (uint64_t n = from; n < to;) {
        const uint64_t pos = n & (GPU_TL_RECS - 1), len = DFCCL_MIN(to - n, GPU_TL_RECS - pos);
        if (cudaMemcpyAsync(T.recs_h + off + pos * GPU_TL_WORDS, G.params.tl.recs + off + pos * GPU_TL_WORDS,
                            len * rec, cudaMemcpyDeviceToHost, T.stream) != cudaSuccess)
            return -1;
        n += len;
    }
    return 0;
}

/* Every block's new records into the timeline: the counts, then every new range and the
 * counts again in one go (one wait). A record the device may have been rewriting while
 * it was copied (its slot within two of the count read after) is dropped, and so is one
 * out of range; the newest record kept gives a clock sample. T_lock held. */
static void drain_locked(void)
{
    const int C = G.channels;
    uint64_t *before = T.head_h, *after = T.head_h + GPU_MAX_CHANNELS;
    if (cudaMemcpyAsync(before, G.params.tl.head, (size_t)C * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                        T.stream) != cudaSuccess ||
        cudaStreamSynchronize(T.stream) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    /* each record counted in `before` was written before the host read the count */
    const uint64_t seen_ns = eng_now_ns();
    uint64_t from[GPU_MAX_CHANNELS];
    int ok = 1;
    for (int b = 0; b < C && ok; b++) {
        from[b] = T.read[b];
        if (before[b] - from[b] > GPU_TL_RECS) { /* the ring went round since the last drain */
            T.lost += before[b] - from[b] - GPU_TL_RECS;
            from[b] = before[b] - GPU_TL_RECS;
        }
        ok = copy_block(b, from[b], before[b]) == 0;
    }
    if (!ok ||
        cudaMemcpyAsync(after, G.params.tl.head, (size_t)C * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                        T.stream) != cudaSuccess ||
        cudaStreamSynchronize(T.stream) != cudaSuccess) {
        cudaGetLastError();
        return; /* taken next time */
    }
    uint64_t newest = 0;
    for (int b = 0; b < C; b++) {
        uint64_t lo = from[b];
        const uint64_t to = before[b];
        /* the device writes record n into slot n mod RECS before counting it, and may be
         * at after[b] + 1 already: slots of records below after[b] + 2 - RECS may hold newer ones */
        if (after[b] + 2 > lo + GPU_TL_RECS) {
            const uint64_t keep = DFCCL_MIN(after[b] + 2 - GPU_TL_RECS, to);
            T.lost += keep - lo;
            lo = keep;
        }
        for (uint64_t n = lo; n < to; n++) {
            const uint64_t *r = T.recs_h + ((size_t)b * GPU_TL_RECS + (n & (GPU_TL_RECS - 1))) * GPU_TL_WORDS;
            const uint32_t id = (uint32_t)(r[GPU_TL_META] & 0xffff);
            const uint32_t coll = (uint32_t)(r[GPU_TL_META] >> 16 & 0xff),
                           out = (uint32_t)(r[GPU_TL_META] >> 24 & 0xff);
            if (id >= GPU_MAX_COMMS || !T.comm[id].uid || coll >= ENG_COLL_NUM || out > ENG_TR_FAILED ||
                r[GPU_TL_T1] < r[GPU_TL_T0])
                continue;
            const eng_trace_key_t k = {.uid = T.comm[id].uid,
                                       .seq = r[GPU_TL_SEQ],
                                       .rank = T.comm[id].rank,
                                       .nranks = T.comm[id].nranks,
                                       .coll = (int32_t)coll,
                                       .gpu = 1,
                                       .algo = (int32_t)(r[GPU_TL_META] >> 32 & 0xff)};
            eng_trace_stretch(&k, (uint32_t)b, r[GPU_TL_T0], r[GPU_TL_T1], (int)out, r[GPU_TL_LATE]);
            newest = r[GPU_TL_T1] > newest ? r[GPU_TL_T1] : newest;
        }
        T.read[b] = to;
    }
    if (newest)
        eng_trace_gpu_clock(seen_ns, newest);
    T.last_ns = eng_now_ns();
}

void gpu_timeline_drain(void)
{
    pthread_mutex_lock(&T_lock);
    if (T.ready) {
        /* the calling thread may never have chosen the daemon's device, or chosen another
         * (the application's): it gets its own back */
        const int dev = gpu_device_enter();
        const uint64_t lost = T.lost;
        drain_locked();
        gpu_device_leave(dev);
        cudaGetLastError();
        if (T.lost > lost)
            dfccl_warn("DFCCL_TRACE: %llu GPU run stretches overwritten before the host drained them "
                       "(%d per block fit between drains)",
                       (unsigned long long)(T.lost - lost), GPU_TL_RECS);
    }
    pthread_mutex_unlock(&T_lock);
}

/* From the host's waits: a drain when the last one is a millisecond old. */
void gpu_timeline_poll(void)
{
    if (T.ready && eng_now_ns() - DFCCL_READ_ONCE(T.last_ns) >= TL_DRAIN_NS)
        gpu_timeline_drain();
}

/* Request id's completion was seen by the host (before its release): a clock sample. */
void gpu_timeline_sample(int id)
{
    if (!T.ready)
        return;
    const uint64_t dev = DFCCL_READ_ONCE(T.done_h[id]);
    if (dev)
        eng_trace_gpu_clock(eng_now_ns(), dev);
    T.done_h[id] = 0;
}

/* The communicator's collectives are all gone from the daemon (its destroy entry is
 * done) and its id is about to be free: its records are taken while the id still names
 * it, then its peers' pages let go. */
void gpu_timeline_comm_done(eng_gpu_comm_t *gc)
{
    if (!T.ready)
        return;
    gpu_timeline_drain();
    pthread_mutex_lock(&T_lock);
    if (gc->id < GPU_MAX_COMMS) {
        T.comm[gc->id].uid = 0;
        if (cudaMemset((void *)(G.params.tl.arrived + (size_t)gc->id * GPU_TL_MAX_RANKS), 0,
                       GPU_TL_MAX_RANKS * sizeof(uint64_t *)) != cudaSuccess)
            cudaGetLastError();
    }
    pthread_mutex_unlock(&T_lock);
    for (int q = 0; gc->tl_pages && q < gc->nranks; q++)
        if (gc->tl_pages[q])
            cudaHostUnregister(gc->tl_pages[q]);
    cudaGetLastError();
    free(gc->tl_pages);
    gc->tl_pages = NULL;
}
