/* SPDX-License-Identifier: BSD-3-Clause */
/* Structures shared by the GPU daemon kernel and its host side (both nvcc). */
#ifndef DFCCL_GPU_DAEMON_H
#define DFCCL_GPU_DAEMON_H

#include <stdint.h>

#include "../engine/eng_sched.h"
#include "../engine/eng_types.h"

#define GPU_MAX_COMMS    1024
#define GPU_MAX_REQS     4096
#define GPU_RING         1024 /* entries, both rings */
#define GPU_MAX_TASKS    256  /* per block */
#define GPU_MAX_CHANNELS 64   /* blocks; 2 ranks on one H200 fill its SMs at 64 */
#define GPU_MAX_THREADS  256  /* launch bound: 255 registers a thread, no spills in either kernel */

enum { GPU_SQ_COLL = 1, GPU_SQ_DESTROY = 2 };
enum { GPU_STAT_PREEMPT = 0, GPU_STAT_STALLS, GPU_STAT_STALL_NS, GPU_NSTATS };
/* DFCCL_GPU_TRACE: for each collective, %globaltimer at each stage as block 0 saw
 * it (finished and posted: the last channel's), and the fetcher's polls and their time since the entry
 * before. The trace buffer holds GPU_TRACE_RECS records (a ring block 0 fills), the fetcher's stamps per ring
 * position, each request's record index, and the count of records written (kept across launches: the
 * daemon quits whenever the application synchronizes the device, and a count that started again at 0 with
 * each launch left only the last launch's records whole). */
enum {
    GPU_TR_FETCHED = 0, /* the fetcher's read returned the entry */
    GPU_TR_TASK,        /* block 0 took the entry from the device ring */
    GPU_TR_BUILT,       /* its task was built (and the trace record filled) */
    GPU_TR_PASS,        /* the scheduling pass after the intake reached it */
    GPU_TR_RUN,         /* that pass started running it (or a later one) */
    GPU_TR_MOVED,       /* its first step moved data (the LL: its lines were sent) */
    GPU_TR_FINISHED,    /* the algorithm finished */
    GPU_TR_POSTED,      /* the completion word was stored */
    GPU_TR_POLLS,       /* fetcher polls since the previous entry */
    GPU_TR_POLL_NS,     /* the poll period before the one that found it */
    GPU_TR_TRIES,       /* algorithm calls until it finished */
    GPU_TRACE_WORDS = 16
};
#define GPU_TRACE_RECS      4096
#define GPU_TRACE_FETCH_OFF ((size_t)GPU_TRACE_RECS * GPU_TRACE_WORDS)   /* [GPU_RING][4] */
#define GPU_TRACE_IDX_OFF   (GPU_TRACE_FETCH_OFF + (size_t)GPU_RING * 4) /* [GPU_MAX_REQS] */
#define GPU_TRACE_COUNT_OFF (GPU_TRACE_IDX_OFF + (size_t)GPU_MAX_REQS)   /* one word */
#define GPU_TRACE_TOTAL     (GPU_TRACE_COUNT_OFF + 1)

/* DFCCL_TRACE, the timeline: thread 0 of each block appends one record per run stretch
 * (from taking a task up to finishing it or letting it go) to its block's ring in device
 * memory, and the host drains the rings (cuda/gpu_timeline.cu). A record is GPU_TL_WORDS
 * words: %globaltimer at both ends, the collective's number, META (communicator id in
 * bits 0-15, collective 16-23, ENG_TR_* outcome 24-31) and, for a stalled stretch, the
 * ranks (bit r) whose count of GPU submissions had not passed it at the stretch's end. */
#define GPU_TL_RECS 8192 /* per block; the host drains every millisecond or so */
enum { GPU_TL_T0 = 0, GPU_TL_T1, GPU_TL_SEQ, GPU_TL_META, GPU_TL_LATE, GPU_TL_WORDS };
#define GPU_TL_MAX_RANKS 64 /* ranks a stalled record can name */
typedef struct {
    uint64_t *recs;           /* device [channels][GPU_TL_RECS][GPU_TL_WORDS], NULL: off */
    uint64_t *head;           /* device [channels]: records each block wrote (never reset) */
    uint64_t *done_ns;        /* host-mapped [GPU_MAX_REQS]: %globaltimer before each completion */
    const uint64_t **arrived; /* device [GPU_MAX_COMMS][GPU_TL_MAX_RANKS]: host-mapped
                                 pointers to each rank's count of GPU submissions, or NULL */
} gpu_timeline_t;

/* A communicator as the daemon sees it. Every submission carries a copy, so taking an
 * entry costs no dependent lookup of a communicator table. */
typedef struct gpu_comm_dev {
    int rank, nranks;
    uint32_t slots, depth;
    uint32_t channels; /* of this communicator: at most the daemon's blocks */
    uint32_t pad;
    uint64_t chunk;
    eng_conn_t *conns;             /* [slots][channels][nranks], device memory */
    int32_t *abort_code;           /* host-mapped: nonzero fails every task with that result */
    uint64_t *stats;               /* device [channels][GPU_NSTATS], one writer per channel */
    unsigned long long *completed; /* device: collectives completed (last channel counts) */
} gpu_comm_dev_t;

/* One submission as the daemon uses it (the device ring's entries). */
typedef struct {
    uint32_t kind;
    uint32_t comm_id;
    uint32_t req_id;
    /* entries of args.blocks (a v-collective's table, a zero-copy read's descriptor) that
     * the fetcher copies to device memory before any block sees the entry, 0: none. The
     * host's table starts one entry earlier with a header whose first word is the
     * destination (gpu_launch.cu, tab_copy_locked) */
    uint32_t ntab;
    uint64_t seq;
    eng_coll_args_t args;
    gpu_comm_dev_t comm;
} gpu_sq_entry_t;

/* The host ring's slot of one submission, LL-style (NCCL's low-latency protocol): each
 * 8-byte word carries 4 bytes of the entry and, in its upper half, the flag
 * (position + 1, never 0). The host writes each word with one 8-byte store, so when one
 * warp's read of the slot (lane i: word i) finds every flag current it has the whole
 * entry: a pick-up costs one PCIe round trip instead of a stamp read followed by the
 * body. */
#define GPU_SQ_WORDS 32
typedef struct __attribute__((aligned(256))) {
    uint64_t w[GPU_SQ_WORDS];
} gpu_sq_slot_t;

/* A task in one block's list (device memory); ctx is the saved context. */
/* A task in one block's list (device memory): what the block needs from the
 * communicator is resolved at intake, so a scheduling pass reads only the task; ctx is
 * the saved context. */
typedef struct {
    eng_coll_args_t args;
    eng_conn_t *conns;             /* [nranks] of this task's slot and this channel */
    int32_t *abort_code;           /* the communicator's (host-mapped) */
    uint64_t *stats;               /* this channel's [GPU_NSTATS] */
    unsigned long long *completed; /* the communicator's count of completed collectives */
    uint64_t seq;
    uint64_t threshold_ns;
    uint64_t chunk;
    int rank, nranks;
    uint32_t depth;
    uint32_t comm_id, req_id, slot;
    uint32_t nchan; /* channels with work in this collective: the completion count */
    eng_ctx_t ctx;
} gpu_task_t;

typedef struct {
    /* submission: the host's ring (mapped) -> the fetcher (warp 0 of block 0) -> the device
     * ring, which every block reads at its own pace */
    gpu_sq_slot_t *ring;    /* host-mapped (device alias) [GPU_RING] */
    uint64_t *fetched;      /* host-mapped: host ring slots taken by the fetcher */
    gpu_sq_slot_t *dring;   /* device [GPU_RING]: the host's flagged words, copied as they are */
    uint64_t *dstate;       /* device: the fetcher's position (where a relaunch resumes) */
    uint64_t *block_head;   /* device [channels]: device ring entries each block took */
    uint64_t *block_active; /* device [channels]: last time the block moved (globaltimer) */
    uint32_t *ntasks;       /* device [channels]: tasks in the block's list */
    uint32_t *quit;         /* device: the launch generation told to exit */
    uint32_t *exited;       /* host-mapped: the daemon has decided to exit (host relaunches) */
    uint32_t gen;           /* this launch's generation */
    uint32_t *done;         /* host-mapped [GPU_MAX_REQS] completion words */
    int32_t *result;        /* host-mapped [GPU_MAX_REQS] */
    uint64_t *req_chan;     /* device [GPU_MAX_REQS]: channels finished (never reset) */
    int32_t *req_err;       /* device [GPU_MAX_REQS]: worst channel result */
    gpu_task_t *tasks;      /* device [GPU_MAX_CHANNELS][GPU_MAX_TASKS] */
    uint64_t *trace;        /* device [GPU_TRACE_TOTAL] or NULL (DFCCL_GPU_TRACE) */
    gpu_timeline_t tl;      /* DFCCL_TRACE (tl.recs NULL: off) */
    int channels;           /* blocks of the launch */
    sched_params_t sp;
    uint64_t idle_quit_ns, stall_quit_ns;
    uint64_t put_min; /* DFCCL_NET_PUT_MIN: the views' put_min (eng_chan_view_t) */
} gpu_daemon_params_t;

#ifdef __CUDACC__
/* Launch the daemon kernel: with the direct exchange (algo_direct.h) and the zero-copy
 * read (algo_read.h; DFCCL_DIRECT_MAX nonzero, or DFCCL_READ_MIN nonzero or auto, which
 * is off with DFCCL_DIRECT_MAX 0: the only cases where api.c picks them) or without
 * them, whose other paths run faster (the out-of-line call changes how the kernel's
 * registers are spent). */
void gpu_daemon_launch(bool direct, int blocks, int threads, cudaStream_t stream,
                       const gpu_daemon_params_t &p);
#endif

#endif
