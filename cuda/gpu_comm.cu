/* SPDX-License-Identifier: BSD-3-Clause */
/* Communicators of the GPU backend: every rank agrees on the channels (channel
 * negotiation: the fewest blocks any of its daemons has), sizes its FIFOs from them, and
 * connects to each peer through CUDA IPC (gpu_ipc.cu) or, for a peer on the net, through
 * host-staged FIFOs (gpu_net.cu). Each step that can fail on one rank ends with an
 * all-gather of every rank's status, so all ranks leave together; a rank without a GPU
 * leaves the communicator without a GPU part (host buffers only) rather than failing it. */
#include <sched.h>
#include <stdlib.h>

#include "gpu_backend.h"

dfcclResult_t gather_status(gpu_boot_t *mine, gpu_boot_t *all, int nranks, dfcclAllgatherFn_t ag, void *ctx)
{
    if (ag(mine, all, sizeof(*mine), ctx) != 0)
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    for (int i = 0; i < nranks; i++)
        if (all[i].status != 0)
            return (dfcclResult_t)(all[i].status < 0 ? all[i].status : -1);
    return dfcclSuccess;
}

/* gather_status into a table nobody reads (boot_x): whether every rank's step went well. */
static dfcclResult_t gather_agree(void *boot_x, gpu_boot_t *mine, int nranks, dfcclAllgatherFn_t ag,
                                  void *ctx)
{
    static_assert(sizeof(gpu_boot_t) <= GPU_BOOT_REC, "an all-gather of the set-up");
    return gather_status(mine, (gpu_boot_t *)boot_x, nranks, ag, ctx);
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
static dfcclResult_t comm_channels(int rank, int nranks, dfcclAllgatherFn_t ag, void *ctx, void *boot_x,
                                   int able, int *C_p)
{
    static_assert(sizeof(gpu_where_t) <= GPU_BOOT_REC, "an all-gather of the set-up");
    gpu_where_t mine, *all = (gpu_where_t *)boot_x;
    memset(&mine, 0, sizeof(mine));
    if (able && gpu_available()) {
        mine.ok = 1;
        mine.sms = G.sms;
        mine.uuid = G.uuid;
        pthread_mutex_lock(&G_lock);
        mine.fixed = (uint32_t)G.channels;
        pthread_mutex_unlock(&G_lock);
    }
    if (!eng_boot_ag(boot_x, GPU_BOOT_REC, &mine, sizeof(mine), ag, ctx))
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    if (!able)
        dfccl_warn("rank %d: no GPU part for the communicator (%s): device buffers will be refused on it",
                   rank, dfcclGetLastError());
    int C = GPU_MAX_CHANNELS, share_me = 0, want_me = 0;
    for (int i = 0; i < nranks; i++) {
        if (!all[i].ok)
            return dfcclInternalError;
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
    if (share_me * have > G.sms && !dfccl_exchange_relaxed(&warned, 1))
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

/* The GPU daemon's transports by id (transport.h): its instance of each transport the
 * locality decision may pick. A build without UCX has no host-staged entry. */
static_assert(ENG_TP_SHM == 0 && ENG_TP_UCX == 1 && ENG_TP_NUM == 2, "gpu_transports lists every id");
static const gpu_transport_t *const gpu_transports[ENG_TP_NUM] = {
    &gpu_tp_ipc,
#ifdef DFCCL_HAVE_UCX
    &gpu_tp_staged,
#else
    NULL,
#endif
};

/* The connections of every (slot, channel) group with every peer, and what the daemon
 * reads of the communicator, in device memory (gc->dev says where). all: every rank's
 * device; tp: the transport of each peer. */
static dfcclResult_t comm_dev_create(eng_gpu_comm_t *gc, const gpu_geom_t *geo, uint64_t uid,
                                     const uint8_t *tp, const gpu_boot_t *all)
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
                gpu_transports[tp[p]]->conn_set(gc, geo, g, p, all, cn);
                cn->read_cache = gpu_read_cache_dev(gc, p);
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
        /* a copy from pageable memory may return before it lands: the legacy stream (this
         * one, and the read's map copies before it, gpu_read.cu) is waited for, so the
         * daemon never sees the communicator first; the daemon's own stream is not */
        ok = cudaMemcpy(gc->conns_dev, conns, nconn * sizeof(eng_conn_t), cudaMemcpyHostToDevice) ==
                 cudaSuccess &&
             cudaStreamSynchronize(cudaStreamLegacy) == cudaSuccess;
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

/* The id back, once every block dropped the communicator's tasks (in submission order,
 * failing those still pending); DFCCL_GPU_TRACE reports then. */
static void comm_id_release(eng_gpu_comm_t *gc)
{
    pthread_mutex_lock(&G_lock);
    int id = submit_locked(GPU_SQ_DESTROY, gc, 0, NULL, 0);
    pthread_mutex_unlock(&G_lock);
    while (!dfccl_load_acquire(&G.done[id])) {
        gpu_progress();
        sched_yield();
    }
    gpu_release(id);
    gpu_timeline_comm_done(gc); /* DFCCL_TRACE: its records while the id still names it */
    pthread_mutex_lock(&G_lock);
    G.comm_used[gc->id] = 0;
    if (G.params.trace)
        trace_report();
    pthread_mutex_unlock(&G_lock);
}

dfcclResult_t gpu_comm_create(eng_gpu_comm_t **gc_p, int rank, int nranks, uint64_t uid, const uint8_t *tp,
                              uint32_t used, uint64_t *const *arrived, dfcclAllgatherFn_t ag, void *ctx,
                              void *boot)
{
    *gc_p = NULL;
    /* every rank's FIFO handles stay in the set-up's table while the later steps read
     * them; those steps' all-gathers receive after them */
    gpu_boot_t mine, *all = (gpu_boot_t *)boot;
    void *boot_x = (char *)boot + (size_t)nranks * sizeof(gpu_boot_t);
    eng_gpu_comm_t *gc = (eng_gpu_comm_t *)calloc(1, sizeof(*gc));
    gpu_geom_t geo = comm_geom((used >> ENG_TP_UCX & 1) != 0);
    dfcclResult_t res;
    memset(&mine, 0, sizeof(mine));
    mine.status = -1;
    if (gc) {
        gc->id = GPU_MAX_COMMS; /* no communicator id yet */
        gc->boot_x = boot_x;
    }
    /* without it, this rank says it has no GPU: the communicator gets no GPU part */
    int able = gc != NULL || (eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the GPU part"), 0);
    for (int t = 0; t < ENG_TP_NUM; t++)
        if ((used >> t & 1) && !gpu_transports[t]) {
            eng_set_error(dfcclUnsupported, "dfcclCommInit", "the GPU daemon has no instance of transport %s",
                          eng_transports[t] ? eng_transports[t]->name : "?");
            able = 0;
        }
    /* 1. the channels, the same on every rank */
    res = comm_channels(rank, nranks, ag, ctx, boot_x, able, &geo.channels);
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
    /* 3. the abort word (the net transport's error handler writes it), and what each
     * transport in use maps or allocates; every rank agrees before going on */
    mine.status = 0;
    if (!(gc->abort_code = mapped_alloc<int32_t>(1, NULL)))
        mine.status = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no mapped memory for the abort word");
    for (int t = 0; t < ENG_TP_NUM && mine.status == 0; t++)
        if (used >> t & 1)
            mine.status = gpu_transports[t]->prepare(gc, all, tp);
    if ((res = gather_agree(boot_x, &mine, nranks, ag, ctx)) != dfcclSuccess)
        goto fail;
    /* 4. the transports' collective steps, 5. the connections in device memory, 6. an id */
    for (int t = 0; t < ENG_TP_NUM; t++)
        if ((used >> t & 1) && gpu_transports[t]->connect &&
            (res = gpu_transports[t]->connect(gc, tp, uid, &geo, ag, ctx)) != dfcclSuccess)
            goto fail;
    gpu_read_setup(gc, arrived, tp);
    /* 7. every rank agrees that its steps since 3 went well */
    if ((res = comm_dev_create(gc, &geo, uid, tp, all)) == dfcclSuccess)
        res = comm_id_take(gc);
    mine.status = res;
    if ((res = gather_agree(boot_x, &mine, nranks, ag, ctx)) != dfcclSuccess) {
        if (gc->id < GPU_MAX_COMMS) { /* the daemon never saw it: the id back without a destroy */
            pthread_mutex_lock(&G_lock);
            G.comm_used[gc->id] = 0;
            pthread_mutex_unlock(&G_lock);
            gc->id = GPU_MAX_COMMS;
        }
        goto fail;
    }
    gc->boot_x = NULL;
    gc->arrived_me = arrived[rank];
    pthread_mutex_lock(&G_lock);
    gpu_timeline_setup_locked(); /* the first communicator: no daemon launched yet */
    pthread_mutex_unlock(&G_lock);
    gpu_timeline_comm(gc, uid, arrived);
    *gc_p = gc;
    return dfcclSuccess;
fail:
    gpu_comm_destroy(gc);
    return res;
}

void gpu_comm_abort(eng_gpu_comm_t *gc, dfcclResult_t code)
{
    if (gc && gc->abort_code)
        dfccl_store_release(gc->abort_code, (int32_t)code);
}

void gpu_comm_destroy(eng_gpu_comm_t *gc)
{
    if (!gc)
        return;
    if (gc->id < GPU_MAX_COMMS)
        comm_id_release(gc);
    gpu_read_close(gc); /* no daemon reads its mappings any more */
    for (int t = ENG_TP_NUM - 1; t >= 0; t--)
        if (gpu_transports[t])
            gpu_transports[t]->close(gc);
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

uint32_t gpu_comm_channels(const eng_gpu_comm_t *gc)
{
    return gc->dev.channels;
}

void gpu_comm_stats(eng_gpu_comm_t *gc, dfcclStats_t *s)
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
