/* SPDX-License-Identifier: BSD-3-Clause */
/* Data shared by the scheduler, the algorithms and the primitives: plain structs,
 * compiled by gcc for the CPU daemon and meant for nvcc too (no libc types inside). */
#ifndef DFCCL_ENG_TYPES_H
#define DFCCL_ENG_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "dfccl.h"
#include "eng_inline.h"

#define ENG_MAX_FIFO_DEPTH 64
#define ENG_PAGE           4096u /* segments and the net shadows start on a page */

typedef enum {
    ENG_COLL_ALLREDUCE = 0,
    ENG_COLL_REDUCE,
    ENG_COLL_BCAST,
    ENG_COLL_ALLGATHER,
    ENG_COLL_REDUCE_SCATTER,
    ENG_COLL_ALLTOALL,
    ENG_COLL_BARRIER,
    ENG_COLL_GATHER,
    ENG_COLL_SCATTER,
    ENG_COLL_GATHERV,
    ENG_COLL_SCATTERV,
    ENG_COLL_ALLGATHERV,
    ENG_COLL_ALLTOALLV,
    ENG_COLL_ALLTOALLW,
    ENG_COLL_SCAN,
    ENG_COLL_EXSCAN,
    ENG_COLL_REDUCE_SCATTERV, /* counts per rank, the same on every rank (a table) */
    ENG_COLL_NUM
} eng_coll_t;

typedef enum {
    ENG_ALGO_SELF = 0, /* one rank: a local copy */
    ENG_ALGO_RING,     /* allreduce, reduce_scatter, allgather */
    ENG_ALGO_ONESHOT,  /* small allreduce, barrier */
    ENG_ALGO_CHAIN,    /* bcast, reduce */
    ENG_ALGO_PAIRWISE, /* alltoall(v/w), gather(v), scatter(v), allgatherv */
    ENG_ALGO_LL,       /* the smallest of every uniform collective, barrier: one round of LL lines */
    ENG_ALGO_SCAN,     /* scan, exscan: a chain from rank 0 up */
    ENG_ALGO_DIRECT,   /* mid-range allreduce (two-shot), reduce_scatter, allgather, alltoall,
                          bcast, reduce: every peer at once */
    ENG_ALGO_DIRECT1,  /* mid-range allreduce of few ranks: one shot over every channel */
    ENG_ALGO_READ,     /* large alltoall, allgather: each rank reads its peers' blocks where they are
                          (algo_read.h) */
    ENG_ALGO_LLW,      /* the next sizes of every uniform collective: one round of LL lines, the
                          piece's lines split over the channels (algo_ll.h) */
    ENG_ALGO_COUNT     /* eng_coll_args_t.algo has 4 bits */
} eng_algo_t;

/* LL lines (NCCL's low-latency protocol): 16 bytes carry 8 bytes of payload as two
 * {4 bytes of data, 4-byte flag} words; the flag names the connection's step
 * (eng_ll_flag), so a reader that sees the current flag next to the data has the data:
 * no step counter to publish behind a fence and no acquire before the read. One LL step
 * holds rchunk / 16 lines. Peers above ENG_LL_MAX_RANKS use the one-shot. */
#define ENG_LL_LINE      16
#define ENG_LL_MAX_RANKS 32
/* An LL round split over the channels (ENG_ALGO_LLW) gives each channel at least this
 * many bytes of the piece: below it another block's intake and completion cost more
 * than the lines it would take. */
#define ENG_LL_CHAN_BYTES 2048u

/* The flag of the connection's step k (its step count + 1). LL steps share the FIFO
 * steps with Simple ones, so a step about to carry LL lines may still hold the user's
 * bytes of an earlier Simple step: with the bare step number as flag, data holding
 * small integers at the flag positions would pass for lines not yet written (the unit
 * test ll_stale_simple_data_never_passes builds that case). The flag is therefore salted
 * per communicator and spread by a multiply with an odd constant (a bijection): never 0
 * (fresh FIFOs hold zeros), different for steps less than 2^31 apart (older LL lines
 * left in the step never pass), and stale data passes only if both flag words of a line
 * hold this communicator's pseudo-random 32-bit value for exactly this step.
 * (Deterministic would be a separate LL buffer per connection, as NCCL has; not done.) */
DFCCL_INLINE uint32_t eng_ll_flag(uint32_t salt, uint64_t k)
{
    return ((salt + (uint32_t)k * 0x9E3779B1u) << 1) | 1u;
}

/* The salt of a communicator, from the id every rank shares. */
DFCCL_INLINE uint32_t eng_ll_salt(uint64_t uid)
{
    return (uint32_t)((uid * 0xD6E8FEB86659FD93ull) >> 32);
}

DFCCL_INLINE uint64_t eng_ll_lines(uint64_t bytes)
{
    return bytes ? DFCCL_DIV_UP(bytes, 8) : 1; /* a barrier sends one line of nothing */
}

/* Control words of one connection (one direction, one slot, one channel). They live in
 * the receiver's shared segment, ahead of the FIFO data. Counters are free-running and
 * never reset, so a stale value can never be mistaken for a new one. */
typedef struct {
    uint64_t posted; /* sender: steps posted (release) */
    char pad0[DFCCL_CACHELINE - sizeof(uint64_t)];
    uint64_t consumed; /* receiver: steps consumed (release) */
    char pad1[DFCCL_CACHELINE - sizeof(uint64_t)];
    uint64_t bytes[ENG_MAX_FIFO_DEPTH]; /* size of each posted step */
} eng_conn_ctrl_t;

/* A rank's doorbell (CPU daemon; engine/eng_bell.h): a futex word its peers bump after
 * they post a step to it or give it credit, while one of its daemon threads sleeps. */
typedef struct {
    uint32_t seq;      /* bumped by each ring that finds a sleeper */
    uint32_t sleepers; /* daemon threads of the owner blocked on seq */
} eng_bell_t;

/* A rank's description of one of its collectives (engine/sig.c): written into its own
 * segment as it submits it, read by a peer whose same collective stalls, which compares
 * it with its own to name a mismatch. seq1 is written last (release) and reread after the
 * fields, so a reader never takes half of one entry for another (eng_sig_desc.h). */
typedef struct {
    uint64_t seq1;  /* 1 + the collective's number (0: being written) */
    uint64_t count; /* eng_sig_fields_t's */
    /* the collectives this rank submitted on the communicator before this one, both
     * daemons' together: the same number on every rank for one call (MPI's order), so a
     * call whose ranks picked different daemons (memory kinds) is found in the other ring */
    uint64_t call;
    int32_t root;
    uint8_t coll, dtype, op;
    uint8_t refused; /* its call was refused here (an argument error): why[] says why */
    uint32_t sig;
    /* the calls this rank refused before this one (of the same daemon's): a peer whose own
     * count at this collective is higher refused the same call, and is no mismatch */
    uint32_t refusals;
} eng_sig_entry_t;

#define ENG_SIG_RING 32 /* the latest collectives each rank describes, per daemon */

/* The GPU's zero-copy read (cuda/gpu_read.cu): a rank exports the allocations of its
 * send buffers through a few slots of its segment's header, which same-host peers'
 * hosts read to map them (CUDA IPC). A seqlock: the owner writes gen 0, the rest, then
 * the new gen (release); a reader that reads the same nonzero gen before and after the
 * rest has one export whole. */
#define ENG_READ_SLOTS 8
typedef struct {
    uint64_t gen;       /* the export's generation (never reused by the owner), 0: none */
    uint64_t size;      /* the allocation's bytes */
    uint8_t handle[64]; /* cudaIpcMemHandle_t of the allocation's base */
} eng_read_export_t;

/* A reader's map of one export slot of one peer (host-mapped; the daemon reads it, the
 * reader's host fills it from its progress calls). The daemon finds it through its copy
 * of the entry (eng_read_cache_t). */
typedef struct eng_read_map {
    uint64_t gen;  /* the generation mapped at base (0: none); written last, with release */
    uint64_t base; /* device address of the mapping of the allocation */
    uint64_t size; /* its bytes */
    uint64_t want; /* the daemon: a descriptor named this generation and missed */
} eng_read_map_t;

/* The reader daemon's copy of one map entry (device memory: once it holds a generation,
 * later lookups of it cross no bus): gen, base and size as the daemon last found them in
 * the entry, and where the entry is (host-mapped), set at creation. The daemon finds the
 * copies of peer p through its connections' read_cache. */
typedef struct eng_read_cache {
    uint64_t gen, base, size;
    eng_read_map_t *map;
} eng_read_cache_t;

/* Header at the start of each rank's segment (its first page). */
typedef struct {
    uint64_t magic;
    uint64_t arrived; /* collectives this rank has submitted on the communicator */
    /* the rank left the communicator (dfcclCommDestroy, or exit): 1 + the number of its
     * collectives its peers can count on, those before the first it did not complete (a
     * peer waiting on a later one waits for nothing: eng_shm_left_peer). Net transport: 1,
     * written in my shadow of the peer when it says it left. */
    uint64_t closed;
    uint64_t beat;        /* bumped every ENG_BEAT_NS while a peer is in another pid namespace */
    uint64_t gpu_arrived; /* collectives this rank has submitted to the GPU daemon (their own
                             numbers): what DFCCL_TRACE's GPU stretches name late ranks by */
    uint64_t gpu_closed;  /* as closed, for its GPU collectives (their own numbers) */
    /* 1 + the rank that aborted the communicator on a mismatch (engine/sig.c), written by
     * that rank into every shared-memory peer's header: in the line the owner writes at
     * each submission, so the look at every call costs nothing */
    uint64_t abort_mark;
    char pad[DFCCL_CACHELINE - 7 * sizeof(uint64_t)];
    eng_bell_t bell; /* its own line: rung by every peer */
    char pad2[DFCCL_CACHELINE - sizeof(eng_bell_t)];
    /* what the owner found or refused (a mismatch, an argument error), for its peers'
     * errors: why_seq1 (1 + the collective, release) after the text */
    uint64_t why_seq1;
    char why[248];
    eng_sig_entry_t sigs[2][ENG_SIG_RING];   /* [0]: the CPU daemon's collectives, [1]: the GPU's */
    eng_read_export_t reads[ENG_READ_SLOTS]; /* the GPU's exported send buffers */
} eng_seg_hdr_t;

/* eng_conn_t.sys's bits (GPU). ENG_CONN_STAGED: a net peer whose FIFOs' data is device
 * memory, where UCX puts steps straight from device to device; a step of fewer than the
 * view's put_min bytes goes through the host-staged FIFO instead, whose data follows the
 * control words (cuda/gpu_net.cu), as an active message: for a small step a put, its
 * flush and a header cost more than crossing PCIe. Both ends choose by the step's size,
 * the same at both. */
#define ENG_CONN_SYS    1u
#define ENG_CONN_STAGED 2u

/* This rank's view of the two directions of a connection with one peer. */
typedef struct {
    eng_conn_ctrl_t *recv_ctrl; /* in my segment: peer -> me */
    char *recv_data;
    eng_conn_ctrl_t *send_ctrl; /* in the peer's segment: me -> peer */
    char *send_data;
    uint64_t sent;    /* steps I have posted to the peer (mirror of send_ctrl->posted) */
    uint64_t recvd;   /* steps I have consumed from the peer */
    uint64_t rchunk;  /* bytes per step, peer -> me and me -> peer (each the same at both */
    uint64_t schunk;  /* ends); the GPU sizes FIFOs by role: the ring's direction
                         (r-1 -> r -> r+1) gets large steps, every other one one-shot's */
    uint32_t sys;     /* GPU, ENG_CONN_* bits: ENG_CONN_SYS, the peer is another device, so
                         flags need system scope (else device scope: processes sharing one
                         GPU under MPS); ENG_CONN_STAGED, small steps host-staged */
    uint32_t ll_salt; /* the communicator's LL flag salt (eng_ll_flag), the same at both ends */
    uint64_t credit;  /* GPU LL: the peer's `consumed` as last read here (a lower bound),
                        so the credit is reread only when the FIFO looks full */
    eng_bell_t *bell; /* CPU, shared-memory peer: its doorbell, rung after each post and
                         consume (NULL: net peers, whose proxy rings; the GPU) */
    /* GPU: the daemon's copies of this rank's map of the peer's exported buffers (device
       memory, [ENG_READ_SLOTS], cuda/cuda_read.cuh; one pointer, so that the connection
       keeps its 96 bytes); NULL for net peers and on the CPU, where the zero-copy read is
       a system call (prims_cpu_read.h) */
    struct eng_read_cache *read_cache;
} eng_conn_t;

/* Everything an algorithm needs about the communicator and the buffers. */
typedef struct {
    int rank, nranks;
    uint32_t depth;    /* FIFO steps per connection */
    uint32_t sig;      /* the collective's signature (eng_sig.h), in band with every step;
                          0: none (the unit tests' bare views) */
    uint64_t chunk;    /* bytes per step */
    eng_conn_t *conns; /* [nranks] for this slot and channel */
    uint64_t put_min;  /* GPU: steps of fewer bytes on ENG_CONN_STAGED connections go
                          host-staged (DFCCL_NET_PUT_MIN) */
} eng_chan_view_t;

/* What one rank sends to and receives from one peer in a collective moved block by
 * block (the v- and w-collectives): byte offsets into sendbuf / recvbuf and byte
 * counts. The block a rank sends to p and the one p receives from it have the same
 * size (MPI's matching rule), so both ends cut it into the same steps. */
typedef struct {
    uint64_t soff, sbytes;
    uint64_t roff, rbytes;
} eng_block_t;

/* The collective as the user described it. */
typedef struct {
    uint8_t coll, dtype, op;
    uint8_t algo : 4;  /* ENG_ALGO_*: 10 of them (ENG_ALGO_COUNT <= 16) */
    uint8_t epoch : 4; /* the calls this rank's daemon had refused before it (mod 16), so
                          that a rank that refused a call never takes its peers' steps of
                          that call for its next one (eng_sig.h); the submission entry
                          of the GPU daemon has no byte to spare */
    int32_t root;
    size_t count; /* allreduce/reduce/bcast/scan: total; allgather/gather: per rank;
                     reduce_scatter/scatter: per rank; alltoall: per peer; 0 with blocks */
    const void *sendbuf;
    void *recvbuf;
    const eng_block_t *blocks; /* [nranks] for the v- and w-collectives, else NULL;
                                  ENG_ALGO_READ: [1], the rank's export descriptor of
                                  sendbuf, attached after the algorithm was picked
                                  (algo_read.h). The GPU daemon's blocks read the
                                  fetcher's device copy of either */
} eng_coll_args_t;

/* One chunk of a direct exchange (algo_direct.h) as the primitives see it: peer p's
 * piece is elements [off, off + e) of block p, the blocks being S elements apart and
 * ending at element `total` (an allreduce's last blocks are short or empty). */
typedef struct {
    uint64_t S, total, off, e;
    uint32_t ts; /* element size */
} eng_dx_chunk_t;

/* Elements of peer p's piece of a chunk. */
DFCCL_INLINE uint64_t eng_dx_elems(const eng_dx_chunk_t *d, int p)
{
    const uint64_t start = (uint64_t)p * d->S + d->off;
    return start >= d->total ? 0 : DFCCL_MIN(d->e, d->total - start);
}

/* The zero-copy read's reply (algo_read.h), as a step's size: the reader could not read
 * the owner's buffer, so the owner sends its block through the FIFOs (DONE is a step of
 * 0 bytes). */
#define ENG_READ_PUSH 1u

/* Ranks of a communicator the direct exchange serves (its peer sets are 32-bit masks). */
#define ENG_DX_MAX_RANKS 32

/* Saved context of one channel of one collective: everything needed to resume at the
 * exact step where it was preempted. Between waits a step runs to completion, so this
 * is a handful of integers; data already in a FIFO stays there. */
typedef struct {
    uint64_t lo, hi; /* element range of this channel (within a block) */
    uint64_t off;    /* current chunk's offset in [lo, hi); pairwise: its receive step */
    uint32_t step;   /* algorithm step inside the current chunk; pairwise: its send step */
    uint32_t sub;    /* sub-step: peers posted (one-shot), chunks sent (pairwise) */
    uint32_t sub2;   /* chunks received (pairwise) */
    uint64_t span;   /* the range [lo, hi) is part of: [0, span) (pairwise cuts every
                        peer's block in the same proportions) */
    uint32_t chans;  /* the communicator's channels */
    uint8_t done;
} eng_ctx_t;

/* Result of running a state machine until it would wait. */
typedef enum { ENG_WAIT = 0, ENG_PROGRESS = 1, ENG_DONE = 2 } eng_prog_t;

#endif
