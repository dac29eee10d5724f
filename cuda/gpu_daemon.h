/* SPDX-License-Identifier: BSD-3-Clause */
/* Structures shared by the GPU daemon kernel and its host side (both nvcc). */
#ifndef DFCCL_GPU_DAEMON_H
#define DFCCL_GPU_DAEMON_H

#include <stdint.h>

#include "../engine/eng_sched.h"
#include "../engine/eng_types.h"

#define GPU_MAX_COMMS 1024
#define GPU_MAX_REQS 4096
#define GPU_RING 1024
#define GPU_MAX_TASKS 256 /* per block */
#define GPU_MAX_CHANNELS 32
#define GPU_MAX_THREADS 512 /* launch bound: keeps the state machines in registers */

enum { GPU_SQ_COLL = 1, GPU_SQ_DESTROY = 2 };
enum { GPU_STAT_PREEMPT = 0, GPU_STAT_STALLS, GPU_STAT_STALL_NS, GPU_NSTATS };

/* One submission, in host-mapped memory; complete once stamp == position + 1. */
typedef struct {
    uint64_t stamp;
    uint32_t kind;
    uint32_t comm_id;
    uint32_t req_id;
    uint32_t pad;
    uint64_t seq;
    eng_coll_args_t args;
} gpu_sq_entry_t;

/* A communicator as the daemon sees it (device memory). */
typedef struct {
    int rank, nranks;
    uint32_t slots, depth;
    uint64_t chunk;
    eng_conn_t *conns;    /* [slots][channels][nranks], device memory */
    uint64_t *slot_next;  /* [slots][channels]: sequence number each slot admits next */
    int32_t *abort_code;  /* host-mapped: nonzero fails every task with that result */
    uint64_t *stats;      /* host-mapped [channels][GPU_NSTATS], one writer per channel */
    unsigned long long *completed; /* device: collectives completed (last channel counts) */
} gpu_comm_dev_t;

/* A task in one block's list (device memory); ctx is the saved context. */
typedef struct {
    eng_coll_args_t args;
    uint64_t seq;
    uint64_t threshold_ns;
    uint32_t comm_id, req_id, slot, kind;
    eng_ctx_t ctx;
} gpu_task_t;

typedef struct {
    gpu_sq_entry_t *ring;     /* host-mapped (device alias) */
    uint64_t ring_mask;
    uint64_t *block_head;     /* host-mapped [channels]: entries consumed per block */
    uint32_t *block_exited;   /* host-mapped [channels] */
    uint32_t *done;           /* host-mapped [GPU_MAX_REQS] completion words */
    int32_t *result;          /* host-mapped [GPU_MAX_REQS] */
    uint32_t *req_chan;       /* device [GPU_MAX_REQS]: channels finished */
    int32_t *req_err;         /* device [GPU_MAX_REQS]: worst channel result */
    gpu_comm_dev_t **comms;   /* device [GPU_MAX_COMMS] */
    gpu_task_t *tasks;        /* device [channels][GPU_MAX_TASKS] */
    uint32_t *ntasks;         /* device [channels] */
    int channels;
    sched_params_t sp;
    uint64_t idle_quit_ns, stall_quit_ns;
} gpu_daemon_params_t;

#ifdef __CUDACC__
__global__ void dfccl_gpu_daemon(gpu_daemon_params_t p);
#endif

#endif
