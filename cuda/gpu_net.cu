/* SPDX-License-Identifier: BSD-3-Clause */
/* FIFOs for peers on the net: CUDA IPC cannot reach another host, so my receive FIFOs
 * from net peers and my sending FIFOs to them (my shadows of the peers) live in host-pinned
 * memory the device maps (host-staged), or, with steps by put where UCX carries device
 * memory, their data in device memory (their control words stay host-pinned). The net transport's
 * proxy moves steps between them; the daemon reads and writes them with system-scope
 * flags, so to the algorithms a net peer is a connection like any other. */
#include <stdlib.h>

#include "gpu_backend.h"

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
static int32_t net_seg_create(eng_gpu_comm_t *gc, const gpu_boot_t *all, const uint8_t *tp)
{
    (void)all, (void)tp;
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

/* On each proxy thread: UCX's cuda_copy and cuda_ipc work in the current context. */
static void net_proxy_device(void)
{
    cudaSetDevice(G.device);
}

/* Before the proxy publishes a step that a put wrote into my device FIFO: a network
 * adapter's writes into GPU memory (GPUDirect RDMA) need not be visible to the daemon's
 * loads when the step's header arrives; this makes them so (a no-op where the device
 * orders them itself). */
static void net_put_landed(void)
{
    const int was = gpu_device_enter(); /* a teardown's thread: the application's device */
    cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                                       cudaFlushGPUDirectRDMAWritesToOwner);
    gpu_device_leave(was);
}

/* How a put step's data becomes visible to the daemon: 1 by itself (the device orders
 * GPUDirect RDMA writes for its own consumers), 2 after net_put_landed's flush, 0 not
 * at all (the FIFOs then stay host-staged). */
static int net_dev_ordering(void)
{
    int order = 0, opts = 0;
    if (cudaDeviceGetAttribute(&order, cudaDevAttrGPUDirectRDMAWritesOrdering, G.device) == cudaSuccess &&
        order >= cudaGPUDirectRDMAWritesOrderingOwner)
        return 1;
    if (cudaDeviceGetAttribute(&opts, cudaDevAttrGPUDirectRDMAFlushWritesOptions, G.device) == cudaSuccess &&
        (opts & cudaFlushGPUDirectRDMAWritesOptionHost))
        return 2;
    cudaGetLastError();
    return 0;
}

/* Steps by put into device FIFOs (collective): every rank asks (DFCCL_NET_PUT on, or
 * auto) and its UCX carries device memory. The FIFOs' data then lives in device memory, in hseg's
 * and the shadows' layouts, and the proxy puts each step from my device shadow straight
 * into the peer's device FIFO (GPUDirect RDMA, or cuda_ipc on one host): no step crosses
 * PCIe to host memory. A rank that cannot allocate them makes every rank fall back to
 * host staging. Returns 1 when the FIFOs are on the device. */
static int net_dev_place(eng_gpu_comm_t *gc, uint64_t chunk, dfcclAllgatherFn_t ag, void *ctx, int *opened_p)
{
    const int N = gc->nranks;
    int cuda = 0;
    /* auto: not where no step could reach put_min (the device FIFOs would carry none) */
    const int want = eng_config.net_put == ENG_NET_PUT_ON ||
                     (eng_config.net_put == ENG_NET_PUT_AUTO && chunk >= eng_config.net_put_min);
    /* a reference (*opened_p: the caller lets it go once eng_net_setup holds its own) */
    *opened_p = want && eng_net_open(&cuda) == dfcclSuccess;
    const int order = *opened_p && cuda ? net_dev_ordering() : 0;
    if (*opened_p && cuda && !order) /* a warning where the user asked for puts */
        DFCCL_LOG(
            eng_config.net_put == ENG_NET_PUT_ON ? DFCCL_LOG_WARN : DFCCL_LOG_INFO,
            "rank %d: this GPU neither orders GPUDirect RDMA writes nor flushes them: the net FIFOs stay "
            "host-staged",
            gc->rank);
    gc->dshadow = (char **)calloc((size_t)N, sizeof(char *));
    int32_t mine = *opened_p && cuda && order && gc->dshadow;
    gc->net_flush = order == 2;
    const int32_t *all = (const int32_t *)eng_boot_ag(gc->boot_x, GPU_BOOT_REC, &mine, sizeof(mine), ag, ctx);
    int dev = all != NULL;
    for (int p = 0; p < N && dev; p++)
        dev = all[p] == 1;
    if (dev) { /* the regions, then whether every rank has them */
        eng_net_thread_hook(net_proxy_device);
        mine = cudaMalloc((void **)&gc->dseg, gc->hseg_bytes) == cudaSuccess;
        for (int p = 0; p < N && mine; p++)
            if (gc->shadow_size[p] && cudaMalloc((void **)&gc->dshadow[p], gc->shadow_size[p]) != cudaSuccess)
                mine = 0;
        if (!mine)
            cudaGetLastError();
        dev = (all = (const int32_t *)eng_boot_ag(gc->boot_x, GPU_BOOT_REC, &mine, sizeof(mine), ag, ctx)) !=
              NULL;
        for (int p = 0; p < N && dev; p++)
            dev = all[p] == 1;
        if (!dev) {
            dfccl_warn("rank %d: no device memory for the net FIFOs on some rank: they stay host-staged",
                       gc->rank);
            cudaFree(gc->dseg);
            gc->dseg = NULL;
            for (int p = 0; p < N; p++) {
                cudaFree(gc->dshadow[p]);
                gc->dshadow[p] = NULL;
            }
        }
    }
    gc->net_dev = dev;
    return dev;
}

/* The connections with net peers (collective over the communicator): my receive
 * segment is a header page and then the device FIFOs' layout, host-pinned; my shadow of
 * peer p holds my connections to p, one per (slot, channel) group. The proxy moves steps
 * between them; the daemon reads and writes them through their device mappings with
 * system-scope flags. */
static dfcclResult_t net_create(eng_gpu_comm_t *gc, const uint8_t *tp, uint64_t uid, const gpu_geom_t *geo,
                                dfcclAllgatherFn_t ag, void *ctx)
{
    const int N = gc->nranks, me = gc->rank;
    const size_t ctrl = ENG_GPU_CTRL_BYTES, depth = eng_config.fifo_depth;
    const size_t groups = (size_t)geo->slots * geo->channels, big_conn = geo->big_conn,
                 small_conn = geo->small_conn;
    const uint64_t chunk = geo->chunk, small = geo->small;
    size_t nconn = 0;
    for (int p = 0; p < N; p++)
        nconn += p != me && tp[p] == ENG_TP_UCX ? groups : 0;
    eng_net_conn_desc_t *d = (eng_net_conn_desc_t *)calloc(nconn ? nconn : 1, sizeof(*d)), *k = d;
    /* (the shadows' tables: step 3 agreed that every rank has them) without d the
     * set-up still runs its all-gathers, saying so */
    const dfcclResult_t status =
        d ? dfcclSuccess : eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
    for (int p = 0; p < N && d; p++) {
        if (p == me || tp[p] != ENG_TP_UCX)
            continue;
        const uint64_t schunk = eng_gpu_step(me, p, N, chunk, small);
        gc->shadow_size[p] = net_shadow_off(groups, depth, schunk);
        for (size_t g = 0; g < groups; g++, k++) {
            k->peer = p;
            k->shadow_off = net_shadow_off(g, depth, schunk);
            k->recv_off = net_recv_off(g, p, me, N, big_conn, small_conn);
            k->peer_off = net_recv_off(g, me, p, N, big_conn, small_conn); /* where p receives it */
            k->schunk = schunk;
            k->rchunk = eng_gpu_step(p, me, N, chunk, small);
            k->lane = (uint32_t)g;
        }
    }
    int opened = 0;
    const int dev = net_dev_place(gc, chunk, ag, ctx, &opened);
    eng_net_layout_t L;
    memset(&L, 0, sizeof(L));
    L.uid = uid;
    L.rank = me;
    L.nranks = N;
    L.seg = gc->hseg;
    L.seg_bytes = gc->hseg_bytes;
    /* host-pinned FIFOs take puts as any host memory, where asked for (auto: device FIFOs only) */
    L.put = eng_config.net_put == ENG_NET_PUT_ON || (dev && eng_config.net_put == ENG_NET_PUT_AUTO);
    L.put_min = eng_config.net_put_min;
    if (dev) {
        L.put_seg = gc->dseg;
        L.put_shadow = gc->dshadow;
        L.put_cuda = 1;
        if (gc->net_flush) /* the device does not order GPUDirect RDMA writes by itself */
            L.put_landed = net_put_landed;
    }
    L.shadow_size = gc->shadow_size;
    L.ctrl_bytes = ctrl;
    L.depth = (uint32_t)depth;
    L.conns = d;
    L.nconns = nconn;
    L.abort_words[0] = gc->abort_code;
    L.boot = gc->boot_x;
    L.boot_rec = GPU_BOOT_REC;
    L.status = status;
    dfcclResult_t res = eng_net_setup(&L, ag, ctx, &gc->net);
    if (opened)
        eng_net_close();
    free(d);
    if (res != dfcclSuccess)
        return res;
    char what[160];
    const int cuda = eng_net_describe(what, sizeof what);
    if (dev)
        dfccl_info(
            "communicator %016llx rank %d: the GPU daemon's net peers: device FIFOs, steps by put from "
            "device memory to device memory (DFCCL_NET_PUT %s), those under %llu bytes host-staged; a put's "
            "bytes %s (%s)",
            (unsigned long long)uid, me, eng_config.net_put == ENG_NET_PUT_ON ? "on" : "auto",
            (unsigned long long)eng_config.net_put_min,
            gc->net_flush ? "flushed to the GPU before each step is published" : "ordered by the GPU", what);
    else
        dfccl_info("communicator %016llx rank %d: the GPU daemon's net peers go through host-staged FIFOs, "
                   "steps %s (%s: %s)",
                   (unsigned long long)uid, me, eng_net_puts(gc->net, -1) ? "by put" : "as active messages",
                   what,
                   cuda ? "it carries device memory, but every step is staged through host memory here: "
                          "DFCCL_NET_PUT=off on some rank, or some rank's UCX, GPU or memory cannot take "
                          "device FIFOs (its info and warning lines say which)"
                        : "no device memory");
    /* the shadows, mapped into the device; every rank agrees before the first step */
    gpu_boot_t mine, *all = (gpu_boot_t *)gc->boot_x;
    memset(&mine, 0, sizeof(mine));
    for (int p = 0; p < N; p++)
        if (gc->shadow_size[p] &&
            !(gc->shadow_dev[p] = host_map(eng_net_shadow(gc->net, p), gc->shadow_size[p]))) {
            mine.status = eng_set_error(dfcclSystemError, "dfcclCommInit",
                                        "cudaHostRegister of the net FIFOs' shadow of rank %d failed", p);
            break;
        }
    return gather_status(&mine, all, N, ag, ctx);
}

/* Connection group g with net peer p: host-staged, system scope. */
static void net_conn_set(const eng_gpu_comm_t *gc, const gpu_geom_t *geo, size_t g, int p,
                         const gpu_boot_t *all, eng_conn_t *cn)
{
    (void)all;
    const size_t ctrl = ENG_GPU_CTRL_BYTES;
    cn->recv_ctrl = (eng_conn_ctrl_t *)(gc->hseg_dev + net_recv_off(g, p, gc->rank, gc->nranks, geo->big_conn,
                                                                    geo->small_conn));
    cn->recv_data = (char *)cn->recv_ctrl + ctrl;
    cn->send_ctrl = (eng_conn_ctrl_t *)(gc->shadow_dev[p] + net_shadow_off(g, geo->depth, cn->schunk));
    cn->send_data = (char *)cn->send_ctrl + ctrl;
    if (gc->net_dev && eng_net_puts(gc->net, p)) { /* the data in device memory, the control words where
                                                    they were */
        cn->recv_data =
            gc->dseg + net_recv_off(g, p, gc->rank, gc->nranks, geo->big_conn, geo->small_conn) + ctrl;
        cn->send_data = gc->dshadow[p] + net_shadow_off(g, geo->depth, cn->schunk) + ctrl;
        cn->sys = ENG_CONN_SYS | ENG_CONN_STAGED; /* small steps stay where they were */
        return;
    }
    cn->sys = ENG_CONN_SYS;
}

/* Stop the net transport and free the host-staged FIFOs. */
static void net_close(eng_gpu_comm_t *gc)
{
    if (gc->net) {
        /* unpinned first: the net transport frees the shadows */
        for (int p = 0; p < gc->nranks; p++)
            if (gc->shadow_dev[p])
                cudaHostUnregister(eng_net_shadow(gc->net, p));
        /* puts from and into device memory may still run here: UCX's CUDA transports work
         * in the current context, which is the application's */
        const int was = gc->net_dev ? gpu_device_enter() : -1;
        const int leaked = eng_net_teardown(gc->net);
        gpu_device_leave(was);
        if (leaked) { /* receives or puts that never finished still use them: leaked */
            gc->hseg = NULL;
            gc->dseg = NULL;
            gc->dshadow = NULL;
        }
    }
    cudaFree(gc->dseg);
    for (int p = 0; gc->dshadow && p < gc->nranks; p++)
        cudaFree(gc->dshadow[p]);
    free(gc->dshadow);
    if (gc->hseg) {
        if (gc->hseg_dev)
            cudaHostUnregister(gc->hseg);
        free(gc->hseg);
    }
    free(gc->shadow_size);
    free(gc->shadow_dev);
}

const gpu_transport_t gpu_tp_staged = {"ucx (host-staged)", net_seg_create, net_create, net_conn_set,
                                       net_close};
