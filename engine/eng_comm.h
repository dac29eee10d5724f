/* SPDX-License-Identifier: BSD-3-Clause */
/* Host-side engine objects: communicators, requests, tasks and the daemon. */
#ifndef DFCCL_ENG_COMM_H
#define DFCCL_ENG_COMM_H

#include <pthread.h>
#include <stdint.h>

#include "dfccl.h"
#include "eng_atomic.h"
#include "eng_config.h"
#include "eng_cpu_wait.h"
#include "eng_handle.h"
#include "eng_ring.h"
#include "eng_types.h"
#include "eng_sched.h"
#include "eng_trace.h"

#define ENG_COMM_MAGIC 0x646663636c436f6dull /* "dfcclCom" */
#define ENG_SEG_MAGIC  0x6466636c53656722ull

/* Layout of a rank's segment: a header page, then one connection per (slot, channel,
 * sending peer), each a control page and depth x chunk bytes of FIFO. */
DFCCL_INLINE size_t eng_conn_ctrl_bytes(void)
{
    return DFCCL_DIV_UP(sizeof(eng_conn_ctrl_t), ENG_PAGE) * ENG_PAGE;
}

/* One completion word per request, written by the daemon with release after the
 * results are visible; the host reads it with acquire (dfcclTest/dfcclWait). Requests
 * live in eng_requests (api.c) and the caller holds a handle (eng_handle.h): a stale
 * copy, or one request waited on twice, is rejected, never dereferenced. */
struct dfccl_request {
    eng_hslot_t h; /* first: its slot of eng_requests */
    uint32_t done; /* CPU backend's completion word */
    int32_t result;
    uint32_t *done_p; /* the word to poll: &done, or the GPU daemon's mapped word */
    int32_t *result_p;
    int gpu_id;           /* GPU request id, -1 for the CPU backend */
    eng_block_t *blocks;  /* a v-collective's table, read by the CPU daemon (freed with the
                             request; the GPU daemon reads a mapped copy) */
    dfcclComm_t comm;     /* its communicator's handle (GPU: whoever waits watches the peers) */
    uint64_t since_ns;    /* submitted at */
    uint32_t wake_due;    /* the CPU daemon was not woken for it (contended cores: the
                             caller that waits runs it): the first wait or test does */
    eng_trace_key_t tkey; /* DFCCL_TRACE, GPU requests: what the completion event names */
    uint64_t gpu_seq;     /* GPU requests: its number among the communicator's GPU collectives */
};

/* A task as one CPU daemon thread (worker) sees it: its place in that worker's list and
 * that worker's scheduling state for it (each worker schedules its channels on its own,
 * as each block of the GPU daemon does). task NULL: a communicator's destroy marker. */
typedef struct eng_wnode {
    struct eng_task *task;
    struct dfccl_comm *comm;
    struct eng_wnode *next, *prev; /* the worker's list; `next` also links its inbox */
    uint64_t threshold_ns;
    uint64_t progress_ns;   /* last time it moved (or was first run) */
    uint64_t sig_check_ns;  /* last time its stall was diagnosed (eng_sig_diagnose) */
    uint32_t channels_left; /* of this worker's channels */
} eng_wnode_t;

typedef struct eng_task {
    eng_coll_args_t args;
    struct dfccl_comm *comm;
    struct dfccl_request *req;
    uint64_t seq;
    uint32_t slot;
    uint32_t workers_left; /* workers still running a channel of it (atomic) */
    int32_t result;        /* the first failure of any worker's part (atomic) */
    uint32_t reported;     /* a stall report was logged (atomic: one per task) */
    uint32_t sig;          /* its signature (eng_sig.h), in band with its steps */
    eng_wnode_t *node;     /* [workers], after ctx[] */
    eng_ctx_t ctx[];       /* one per channel */
} eng_task_t;

struct dfccl_comm {
    uint64_t magic;
    uint64_t handle; /* what dfcclCommInit gave the caller: a handle of the registry's
                        table (eng_comm_get) */
    int rank, nranks;
    uint64_t uid;
    uint32_t slots, channels, depth;
    uint64_t chunk;
    /* shared memory: one segment per rank, mapped by everyone */
    size_t seg_size;
    char **segs;            /* [nranks] */
    eng_conn_t *conns;      /* [slots][channels][nranks] */
    struct eng_shm *shm;    /* shm.c's watch on the shared-memory peers' processes */
    uint64_t peer_check_ns; /* the latest look (atomic: the waiters share it) */
    /* host side, under the daemon's submission lock */
    uint64_t next_seq;
    uint32_t refusals[2]; /* calls refused here, by the daemon they would have gone to
                             (engine/sig.c: 0 the CPU's, 1 the GPU's) */
    uint64_t calls;       /* collectives described here, both daemons' (eng_sig_entry_t.call) */
    /* 1 + the first collective (of the CPU's, the GPU's) in which this rank was the root of
     * a bcast or scatter(v) that its peers' descriptions have not been compared with (0:
     * none): eng_sig_verify, at the next call */
    uint64_t root_unverified[2];
    /* daemon side */
    uint64_t *slot_next;   /* [slots] */
    dfcclResult_t aborted; /* 0, or why every later collective fails */
    uint32_t why_state;    /* why[]: 0 empty, 1 being written, 2 written (release) */
    char why[224];         /* the first abort's reason, for the callers' errors */
    dfcclStats_t stats;    /* written by the daemon, read by the host */
    struct dfccl_comm *live_next;
    struct eng_gpu_comm *gpu; /* device FIFOs; NULL when some rank has no GPU */
    int last_on_gpu;          /* the daemon of the latest collective submitted: a rank
                                 that moves nothing in a v-collective follows it */
    /* transports (transport.h): the one of each peer ([nranks]), those in use by any pair
     * of ranks (bits by id), and the UCX transport's state (ucx_transport/ucx_conn.c) */
    uint8_t *tp;
    uint32_t tp_used;
    struct eng_net_comm *net;
    int cma;    /* every rank may read every other's memory (process_vm_readv): the CPU
                   daemon's DFCCL_READ_MIN=auto reads only then */
    void *boot; /* during dfcclCommInit only: the first all-gather's table (eng_boot_ag) */
};

/* DFCCL_TRACE: how the timeline names collective seq of c (gpu: the GPU daemon's). */
DFCCL_INLINE eng_trace_key_t eng_trace_key(const struct dfccl_comm *c, uint64_t seq, const eng_coll_args_t *a,
                                           int gpu)
{
    return (eng_trace_key_t){.uid = c->uid,
                             .seq = seq,
                             .rank = c->rank,
                             .nranks = c->nranks,
                             .coll = a->coll,
                             .gpu = gpu,
                             .algo = a->algo};
}

DFCCL_INLINE eng_seg_hdr_t *eng_seg_hdr(const struct dfccl_comm *c, int r)
{
    return (eng_seg_hdr_t *)c->segs[r];
}

/* Byte offset, inside any rank's segment, of the connection that carries (slot,
 * channel) from rank `from` to the segment's owner: the one layout the shared-memory
 * and net transports both address. */
DFCCL_INLINE size_t eng_conn_offset(const struct dfccl_comm *c, uint32_t slot, uint32_t ch, int from)
{
    const size_t conn = eng_conn_ctrl_bytes() + (size_t)c->depth * c->chunk;
    return ENG_PAGE + (((size_t)slot * c->channels + ch) * (size_t)c->nranks + (size_t)from) * conn;
}

DFCCL_INLINE eng_conn_t *eng_comm_conns(const struct dfccl_comm *c, uint32_t slot, uint32_t ch)
{
    return c->conns + ((size_t)slot * c->channels + ch) * (size_t)c->nranks;
}

/* shm.c: remove this user's segments of dead processes of this pid namespace: once per
 * process (later calls return at once), within 50 ms. */
void eng_shm_clean_stale(void);

/* shm.c: a shared-memory peer whose process is gone (or its pid now another process's)
 * without having destroyed the communicator: its rank, else -1. Cheap (a kill(0) and a
 * /proc read per peer); callers look at most every ENG_PEER_CHECK_NS while waiting. */
int eng_shm_dead_peer(struct dfccl_comm *c, uint64_t now);
/* shm.c: a shared-memory peer that left the communicator (destroyed it, or exited)
 * before completing collective seq (gpu: seq is among the GPU daemon's collectives): its
 * rank, else -1. Such a peer will never move seq's data: whoever waits on it must fail. */
int eng_shm_left_peer(const struct dfccl_comm *c, uint64_t seq, int gpu);
/* How eng_shm_dead_peer knows rank p, for the error line: "pid N" or "pid N in another
 * pid namespace, silent for S s". */
void eng_shm_peer_desc(const struct dfccl_comm *c, int p, uint64_t now, char *buf, size_t len);

/* heartbeat.c: while a communicator has a same-host peer in another pid namespace, its
 * process bumps the beat in its own segment every ENG_BEAT_NS; a beat that stands still
 * for ENG_BEAT_DEAD_NS while a collective waits on that peer means it is gone. */
#define ENG_BEAT_NS      100000000ull
#define ENG_BEAT_DEAD_NS 800000000ull
dfcclResult_t eng_beat_start(struct dfccl_comm *c);
void eng_beat_stop(struct dfccl_comm *c);
#define ENG_PEER_CHECK_NS 200000000ull
/* The first waiter of a communicator past the last look takes the next one (1). */
int eng_peer_check_due(struct dfccl_comm *c, uint64_t now);

/* why.c: the reason c is being aborted ("peer rank 3 died; ..."), logged as an error when
 * log, and kept (the first one) for the errors its callers get. The caller then sets
 * c->aborted. */
void eng_comm_why(struct dfccl_comm *c, int log, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The reason the communicator a handle names was aborted, into buf: 1, else 0 (not
 * aborted, no reason kept, or no longer live). */
int eng_comm_why_get(dfcclComm_t handle, char *buf, size_t len);

/* sig.c: mismatched collectives (eng_sig.h). Describe collective seq (gpu: among the GPU
 * daemon's) in this rank's segment, as it is submitted. */
void eng_sig_publish(struct dfccl_comm *c, int gpu, uint64_t seq, const eng_coll_args_t *a);
/* This rank's call was refused by its argument check (msg): describe the collective it
 * would have been (the next of the CPU daemon's, or of the GPU daemon's when gpu) as
 * refused, so that peers whose same collective stalls fail with msg instead of waiting
 * for ever. The communicator stays usable here: if every rank refused it, nobody waits. */
void eng_sig_refuse(struct dfccl_comm *c, int gpu, const char *msg);
/* Why collective seq cannot complete, as the ranks' descriptions say: a peer's abort mark
 * in this rank's header, a peer that refused its call, or a peer that called another
 * collective. That peer, with the reason in buf; else -1 (nothing known: peers late,
 * or their descriptions overwritten). A few loads per shared-memory peer. */
int eng_sig_diagnose(const struct dfccl_comm *c, int gpu, uint64_t seq, char *buf, size_t len);
/* Abort c with dfcclMismatch for msg (what eng_sig_diagnose found): kept as the reason
 * (logged when log), published in this rank's header and marked in every shared-memory
 * peer's, the GPU daemon's tasks of c failed too. */
void eng_sig_abort(struct dfccl_comm *c, int log, const char *msg);
/* A peer marked c aborted (eng_sig_marked): abort it here too with the peer's reason.
 * The result every call on c now gets (dfcclSuccess: no mark). */
dfcclResult_t eng_sig_adopt_mark(struct dfccl_comm *c);
/* This rank was the root of a bcast or scatter(v) since the last look (eng_sig_unverified):
 * compare the shared-memory peers' descriptions of it, since no rank stalls when two take
 * themselves for its root. A difference aborts c as eng_sig_abort does (dfcclMismatch);
 * a peer that has not described it yet is looked at again at the next call. A few loads
 * per peer, once per such collective. */
dfcclResult_t eng_sig_verify(struct dfccl_comm *c);
DFCCL_INLINE int eng_sig_unverified(const struct dfccl_comm *c)
{
    return (c->root_unverified[0] | c->root_unverified[1]) != 0;
}
/* Is there a peer's mark? One load of a line this rank writes at every submission. */
DFCCL_INLINE int eng_sig_marked(const struct dfccl_comm *c)
{
    return c->segs && c->segs[c->rank] && dfccl_load_relaxed64(&eng_seg_hdr(c, c->rank)->abort_mark);
}
/* How long a collective waits before its stall is diagnosed, and how often again. */
#define ENG_SIG_CHECK_NS 10000000ull

/* comm.c: registry of live communicators. A handle names a slot of a handle table and
 * carries a 40-bit generation (eng_handle.h), so a destroyed handle is rejected even
 * when a new communicator got the same slot or address. The live communicator a handle
 * names, or NULL. */
struct dfccl_comm *eng_comm_get(dfcclComm_t handle);
/* For a waiter of GPU collective gpu_seq (the GPU daemon can't tell a dead peer): look,
 * at most every ENG_PEER_CHECK_NS, whether a shared-memory peer of the communicator died,
 * and whether one left it before completing gpu_seq, or the ranks' descriptions of
 * gpu_seq differ (eng_sig_diagnose); if so abort it (logged). That rank, else -1. */
int eng_comm_watch_peers(dfcclComm_t handle, uint64_t gpu_seq, uint64_t now);

#endif
