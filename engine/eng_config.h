/* SPDX-License-Identifier: BSD-3-Clause */
/* Engine configuration, process-wide: every knob is a DFCCL_* environment variable,
 * most also a dfcclConfig_t field (the Open MPI component passes its coll_dfccl_* MCA
 * parameters that way). The first communicator of the process fixes the values: its
 * set fields, else the environment, else the defaults (README.md). */
#ifndef DFCCL_ENG_CONFIG_H
#define DFCCL_ENG_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "dfccl.h"

/* A knob's "auto" (DFCCL_READ_MIN): the engine picks per daemon. */
#define ENG_AUTO UINT64_MAX

/* DFCCL_READ_MIN=auto: the CPU daemon reads blocks of 512 KiB and up zero-copy, where it
 * took 0.42-0.81x the FIFOs' time at 4 ranks and was 1.04-1.71x slower below
 * (bench/RESULTS.md, "Zero-copy read on the CPU daemon"). The GPU daemon reads from 4
 * ranks where a rank's blocks together make 2 MiB or more, and blocks are 256 KiB or
 * more: on one H200 at 4 and 8 ranks it took 0.56-1.04x the FIFOs' time there and
 * 1.01-1.22x below, its two handshakes paid back by the bytes the FIFOs copy twice; at 2
 * ranks, where one exchange with one peer is all the FIFOs do, 1.14-1.47x at 512 KiB-4
 * MiB (the same file, "... on the GPU daemon"). */
#define ENG_READ_MIN_GPU_RANKS 4
#define ENG_READ_MIN_GPU_TOTAL (2u << 20)
#define ENG_READ_MIN_GPU_BLOCK (256u << 10)
#define ENG_READ_MIN_CPU       524288u

#define ENG_MAX_WORKERS     32 /* most CPU daemon threads (DFCCL_CPU_THREADS) */
#define ENG_MAX_NET_THREADS 8  /* most proxy threads (DFCCL_NET_THREADS) */

typedef struct {
    int preempt;                /* DFCCL_PREEMPT: 1 = preempt stalled collectives */
    uint64_t threshold_base_ns; /* DFCCL_THRESHOLD_BASE_NS: first spin budget at a wait */
    uint64_t threshold_max_ns;  /* DFCCL_THRESHOLD_MAX_NS: cap of the adaptive budget */
    uint32_t threshold_growth;  /* DFCCL_THRESHOLD_GROWTH: k in "raise toward k*w" */
    uint32_t head_factor;       /* DFCCL_HEAD_FACTOR: budget multiplier of the list head */
    uint32_t slots;             /* DFCCL_SLOTS: K, instances in flight per communicator */
    uint32_t channels;          /* DFCCL_CHANNELS: C, parallel parts of one collective */
    uint32_t cpu_threads;       /* DFCCL_CPU_THREADS: CPU daemon threads; channel c runs on c mod it */
    uint64_t chunk_size;        /* DFCCL_CHUNK_SIZE: bytes per FIFO step */
    uint32_t fifo_depth;        /* DFCCL_FIFO_DEPTH: FIFO steps per connection */
    uint64_t oneshot_max;       /* DFCCL_ONESHOT_MAX: allreduce bytes run one-shot */
    uint64_t ll_max;            /* DFCCL_LL_MAX: piece bytes run in one LL round (0: never) */
    uint64_t ll_wide_max;       /* DFCCL_LL_WIDE_MAX: piece bytes run in one LL round split over the
                                   channels (0: never; ENG_AUTO: eng_ll_wide_max's per-daemon default) */
    uint64_t direct_max;        /* DFCCL_DIRECT_MAX: bytes run in a direct exchange (0: never) */
    uint32_t oneshot_ranks;     /* DFCCL_ONESHOT_RANKS: direct allreduce one-shot up to these ranks */
    uint32_t direct_ranks;      /* DFCCL_DIRECT_RANKS: the direct exchange from this many ranks up */
    uint64_t read_min;          /* DFCCL_READ_MIN: alltoall/allgather blocks read zero-copy from this
                                   size (0: never; ENG_AUTO: eng_read_min's per-daemon default) */
    uint64_t stall_report_ms;   /* DFCCL_STALL_REPORT: report a stalled collective after */
    uint64_t timeout_ms;        /* DFCCL_TIMEOUT: fail a stalled collective after (0=off) */
    uint64_t idle_sleep_us;     /* DFCCL_IDLE_US: daemon sleeps after this long idle */
    int gpu;                    /* DFCCL_GPU: 0 keeps the GPU backend off */
    int net_force;              /* DFCCL_NET=ucx: every other rank over the net transport */
    uint32_t net_threads;       /* DFCCL_NET_THREADS: proxy threads (UCX workers); 0 given: auto */
    int net_threads_auto;       /* net_threads was chosen from the cores (DFCCL_NET_THREADS=0) */
    uint64_t net_piece;         /* DFCCL_NET_PIECE: bytes per eager message of a step (0: whole) */
    int net_put;                /* DFCCL_NET_PUT: ENG_NET_PUT_AUTO, _OFF or _ON */
    uint64_t net_put_min;       /* DFCCL_NET_PUT_MIN: steps by put from this size, smaller ones as
                                   active messages (host-staged on the GPU) */
    char host[64];              /* DFCCL_HOST: host name used for locality (default: gethostname) */
    uint32_t gpu_channels;      /* DFCCL_GPU_CHANNELS: daemon blocks (channels) on the GPU, 0: auto */
    uint32_t gpu_threads;       /* DFCCL_GPU_THREADS: threads per daemon block */
    uint64_t gpu_idle_quit_us;  /* DFCCL_GPU_IDLE_QUIT: daemon kernel exits after idle */
    uint64_t gpu_stall_quit_us; /* DFCCL_GPU_STALL_QUIT: exits when all tasks stalled */
    uint64_t gpu_chunk_size;    /* DFCCL_GPU_CHUNK_SIZE: bytes per FIFO step on the GPU */
    uint64_t gpu_net_chunk;     /* DFCCL_GPU_NET_CHUNK_SIZE: the same, communicators with net peers */
    int gpu_sys_scope;          /* DFCCL_GPU_SYS_SCOPE: system-scope flags for every peer */
    int gpu_trace;              /* DFCCL_GPU_TRACE: time each collective's stages */
} eng_config_t;

/* DFCCL_NET_PUT's words, in the settings table's order */
enum { ENG_NET_PUT_AUTO, ENG_NET_PUT_OFF, ENG_NET_PUT_ON };

extern eng_config_t eng_config;

/* DFCCL_READ_MIN (read_min) for one daemon (on_gpu: the GPU's) on a communicator of
 * nranks, auto resolved (the same on every rank: it depends on nothing else). */
static inline uint64_t eng_read_min_of(uint64_t read_min, uint64_t direct_max, int on_gpu, int nranks)
{
    if (read_min != ENG_AUTO)
        return read_min;
    if (!on_gpu)
        return ENG_READ_MIN_CPU;
    /* DFCCL_DIRECT_MAX=0 asks for the lighter kernel, which has no read either */
    if (nranks < ENG_READ_MIN_GPU_RANKS || direct_max == 0)
        return 0;
    const uint64_t per = ENG_READ_MIN_GPU_TOTAL / (uint64_t)nranks;
    return per > ENG_READ_MIN_GPU_BLOCK ? per : ENG_READ_MIN_GPU_BLOCK;
}

/* DFCCL_LL_WIDE_MAX for one daemon on a communicator of nranks, auto resolved: on the
 * GPU daemon the pieces whose round moves at most ENG_LL_WIDE_TRAFFIC between all the
 * pairs of ranks (nranks x (nranks-1) x the piece; the lines double it). On one H100
 * (bench/RESULTS.md, 2026-12-05) the split round beat the one-shot, direct exchange and
 * ring up to 64 KiB at 8 ranks (3.5 MiB) and lost at 128 KiB (7 MiB), and won up to
 * 256 KiB at 4 ranks (3 MiB) and 2. On host buffers never: 3-4x slower there. */
#define ENG_LL_WIDE_TRAFFIC (4ull << 20)
static inline uint64_t eng_ll_wide_max(uint64_t wide_max, int on_gpu, int nranks)
{
    if (wide_max != ENG_AUTO)
        return wide_max;
    return on_gpu && nranks > 1 ? ENG_LL_WIDE_TRAFFIC / ((uint64_t)nranks * (uint64_t)(nranks - 1)) : 0;
}

/* A count setting's value as the user writes it: "auto" for ENG_AUTO (buf: 24 bytes). */
static inline const char *eng_count_text(uint64_t v, char *buf)
{
    if (v == ENG_AUTO)
        return "auto";
    snprintf(buf, 24, "%llu", (unsigned long long)v);
    return buf;
}

/* The same from this process's settings. */
static inline uint64_t eng_read_min(int on_gpu, int nranks)
{
    return eng_read_min_of(eng_config.read_min, eng_config.direct_max, on_gpu, nranks);
}

/* The GPU daemon's step on a communicator with (any_net) or without net peers: host-staged
 * steps cross PCIe twice and two proxies' copies, so smaller steps keep more of them in
 * flight per channel (bench/RESULTS.md, "What the defaults rest on"). */
static inline uint64_t eng_gpu_chunk(int any_net)
{
    return any_net && eng_config.gpu_net_chunk < eng_config.gpu_chunk_size ? eng_config.gpu_net_chunk
                                                                           : eng_config.gpu_chunk_size;
}

/* At every communicator's creation (thread-safe). The first whose arguments are valid
 * fixes eng_config from @p cfg's set fields (NULL: none) over the environment, for good
 * once a communicator is created with them (eng_config_done); a later
 * one must agree with it on every field it sets. dfcclSuccess, dfcclInvalidArgument (a
 * bad value, in the environment or a field: the message names it) or dfcclInvalidUsage
 * (a set field that differs from the fixed value: the message names both). */
dfcclResult_t eng_config_init(const dfcclConfig_t *cfg);
/* After a successful eng_config_init, once the communicator is created (1) or has
 * failed (0): a process whose communicators all failed keeps nothing fixed. */
void eng_config_done(int created);

#endif
