/* SPDX-License-Identifier: BSD-3-Clause */
/* What the host side of the GPU backend shares between its files (nvcc only, internal to
 * cuda/): the communicator, the process-wide state and its lock, and the steps one file
 * calls in another. gpu_launch.cu owns the daemon (probe, memory, launch, submission),
 * gpu_comm.cu the communicators, which it builds from the transports in gpu_ipc.cu (CUDA
 * IPC peers) and gpu_net.cu (host-staged FIFOs for net peers); gpu_trace.cu reports
 * DFCCL_GPU_TRACE. The engine sees none of this: its interface is engine/eng_gpu.h. */
#ifndef DFCCL_GPU_BACKEND_H
#define DFCCL_GPU_BACKEND_H

#include <cuda_runtime.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "../engine/eng_atomic.h"
#include "../engine/eng_clock.h"
#include "../engine/eng_config.h"
#include "../engine/eng_gpu.h"
#include "../engine/eng_gpu_layout.h"
#include "../engine/eng_log.h"
#include "../engine/eng_net.h"
#include "../engine/eng_trace.h"
#include "../engine/transport.h"
}

#include "gpu_daemon.h"

typedef struct gpu_read gpu_read_t; /* gpu_read.cu */

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
    /* steps by put into device FIFOs (gpu_net.cu): the FIFOs' data in device memory, in
     * hseg's and the shadows' layouts (their control words stay in hseg and the shadows) */
    char *dseg;
    char **dshadow; /* [nranks] */
    int net_dev;
    int net_flush; /* a put step's data needs cudaDeviceFlushGPUDirectRDMAWrites before the daemon reads it */
    eng_conn_t *conns_dev;
    gpu_comm_dev_t dev; /* what every submission carries to the daemon (device pointers) */
    unsigned long long *completed_dev;
    int32_t *abort_code;  /* host-mapped */
    uint64_t *stats_dev;  /* device [channels][GPU_NSTATS] */
    uint64_t *arrived_me; /* my count of GPU submissions, in my shared segment (or NULL) */
    void **tl_pages;      /* DFCCL_TRACE: [nranks] peers' pages registered for the daemon */
    gpu_read_t *read;     /* the zero-copy read's exports and maps (gpu_read.cu) */
    void *boot_x; /* during gpu_comm_create only: where its other all-gathers receive (GPU_BOOT_REC) */
};

/* The process's GPU backend: one daemon, one device (gpu_launch.cu). */
typedef struct gpu_state {
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
    /* each request id's table of blocks (v-collectives, a read's descriptor), kept for
     * the id's next table: the host-mapped copy the host writes (h, its device alias d;
     * entry 0 is a header naming dev) and the device copy the fetcher makes of it (dev).
     * A grown id's old buffers are left allocated for the process's life: cudaFree and
     * cudaFreeHost wait for every kernel on the device, the application's too, and the
     * lock is held there. Tables grow by doubling from 64 entries, so what is left is at
     * most as much again as the ids' current tables */
    struct {
        eng_block_t *h, *d, *dev;
        size_t cap;
    } tab[GPU_MAX_REQS];
    cudaError_t launch_error;       /* kick_locked: the latest failed launch's, logged once */
    uint32_t id_uses[GPU_MAX_REQS]; /* submissions each request id carried (gpu_read.cu) */
} gpu_state_t;
extern gpu_state_t G;

/* The daemon's device made current on a thread that may have none or another (the
 * application's); gpu_device_leave gives that one back. */
static inline int gpu_device_enter(void)
{
    int was = -1;
    if (cudaGetDevice(&was) != cudaSuccess || was != G.device)
        cudaSetDevice(G.device);
    return was;
}

static inline void gpu_device_leave(int was)
{
    if (was >= 0 && was != G.device)
        cudaSetDevice(was);
}
extern pthread_mutex_t G_lock;

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
 * well, and its device's FIFOs (gpu_ipc.cu). */
typedef struct {
    int32_t status;
    int32_t device;
    cudaUUID_t uuid; /* peers on the same device need only device-scope flags */
    cudaIpcMemHandle_t handle;
} gpu_boot_t;

/* Check a CUDA call: on failure, record which call and why (dfcclSystemError) and jump
 * to _label. */
#define CUDA_TRY(_call, _label)                                                                              \
    do {                                                                                                     \
        cudaError_t _e = (_call);                                                                            \
        if (_e != cudaSuccess) {                                                                             \
            eng_set_error(dfcclSystemError, "gpu", "%s failed: %s", #_call, cudaGetErrorString(_e));         \
            goto _label;                                                                                     \
        }                                                                                                    \
    } while (0)

/* n zeroed elements of host memory the device maps (its address in *dev_p). */
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

/* gpu_launch.cu, with G_lock held: submit one entry (its request id, or -1 when no pinned
 * or device memory holds its table of blocks). */
int submit_locked(uint32_t kind, const eng_gpu_comm_t *gc, uint64_t seq, const eng_coll_args_t *a,
                  size_t nblocks);

/* gpu_comm.cu: an all-gather of every rank's gpu_boot_t; not dfcclSuccess when the
 * callback or some rank's step failed. */
dfcclResult_t gather_status(gpu_boot_t *mine, gpu_boot_t *all, int nranks, dfcclAllgatherFn_t ag, void *ctx);

/* gpu_comm_create keeps every rank's gpu_boot_t in the first records of the set-up's
 * table (engine/transport.h, eng_boot_ag) and its other all-gathers receive after them
 * (boot_x): room for records of GPU_BOOT_REC bytes. */
#define GPU_BOOT_REC (ENG_BOOT_REC - sizeof(gpu_boot_t))

/* The GPU daemon's instance of a transport (engine/transport.h), for the peers the
 * locality decision gave to it (tp[p] == its id). gpu_comm.cu's table lists them by id. */
typedef struct gpu_transport {
    const char *name;
    /* Local, before the ranks agree (an all-gather of every rank's status follows): map
     * or allocate what its peers need. 0, or the error (recorded). */
    int32_t (*prepare)(eng_gpu_comm_t *gc, const gpu_boot_t *all, const uint8_t *tp);
    /* Collective (NULL: nothing to do): every rank calls it when any rank uses it. */
    dfcclResult_t (*connect)(eng_gpu_comm_t *gc, const uint8_t *tp, uint64_t uid, const gpu_geom_t *geo,
                             dfcclAllgatherFn_t ag, void *ctx);
    /* Connection group g (slot x channel) with peer p. */
    void (*conn_set)(const eng_gpu_comm_t *gc, const gpu_geom_t *geo, size_t g, int p, const gpu_boot_t *all,
                     eng_conn_t *cn);
    /* Local; safe on a communicator it never prepared. */
    void (*close)(eng_gpu_comm_t *gc);
} gpu_transport_t;

/* gpu_ipc.cu: CUDA IPC between processes on one host (shm's peers). Every rank's receive
 * FIFOs live in its own device memory, made before any transport prepares (their IPC
 * handle travels in the first all-gather). */
extern const gpu_transport_t gpu_tp_ipc;
void ipc_fifo_create(eng_gpu_comm_t *gc, const gpu_geom_t *geo, gpu_boot_t *mine);

/* gpu_net.cu: host-staged FIFOs for peers on the net, moved by the UCX transport. */
extern const gpu_transport_t gpu_tp_staged;

/* gpu_timeline.cu: DFCCL_TRACE's GPU side (each a no-op with the timeline off). */
void gpu_timeline_setup_locked(void);
void gpu_timeline_comm(eng_gpu_comm_t *gc, uint64_t uid, uint64_t *const *arrived);
void gpu_timeline_comm_done(eng_gpu_comm_t *gc);
void gpu_timeline_drain(void);
void gpu_timeline_poll(void);
void gpu_timeline_sample(int id);

/* gpu_read.cu: the zero-copy read. setup (at creation, before the connections are
 * made: arrived as gpu_comm_create's) and close (after the daemon dropped the
 * communicator); the device map of peer p's slots for its connections (NULL: never
 * read); a READ submission's descriptor naming request id (G_lock held); progress
 * maps what the daemons asked for (from gpu_progress). */
void gpu_read_setup(eng_gpu_comm_t *gc, uint64_t *const *arrived, const uint8_t *tp);
void gpu_read_close(eng_gpu_comm_t *gc);
eng_read_cache_t *gpu_read_cache_dev(const eng_gpu_comm_t *gc, int p);
void gpu_read_export(eng_gpu_comm_t *gc, const void *buf, uint64_t bytes, eng_block_t *desc);
void gpu_read_mark_locked(eng_gpu_comm_t *gc, const eng_block_t *desc, int id);
void gpu_read_progress(void);

/* The backend's calls (eng_gpu_backend_t): gpu_launch.cu and gpu_comm.cu. */
int gpu_available(void);
int gpu_describe(char *buf, size_t len);
dfcclResult_t gpu_comm_create(eng_gpu_comm_t **gc_p, int rank, int nranks, uint64_t uid, const uint8_t *tp,
                              uint32_t used, uint64_t *const *arrived, dfcclAllgatherFn_t ag, void *ctx,
                              void *boot);
void gpu_comm_destroy(eng_gpu_comm_t *gc);
void gpu_comm_abort(eng_gpu_comm_t *gc, dfcclResult_t code);
void gpu_comm_stats(eng_gpu_comm_t *gc, dfcclStats_t *s);
uint32_t gpu_comm_channels(const eng_gpu_comm_t *gc);
dfcclResult_t gpu_submit(eng_gpu_comm_t *gc, const eng_coll_args_t *a, size_t nblocks, uint32_t **done_p,
                         int32_t **result_p, int *id_p, uint64_t *seq_p, uint64_t *ns_p);
void gpu_progress(void);
void gpu_release(int id);

/* gpu_trace.cu, with G_lock held: log DFCCL_GPU_TRACE's medians and clear the records. */
void trace_report(void);

#endif
