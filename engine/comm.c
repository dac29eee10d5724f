/* SPDX-License-Identifier: BSD-3-Clause */
/* Communicators: creation over the caller's bootstrap all-gather, the registry of live
 * handles (so a destroyed one is reported, not dereferenced), destroy, queries. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "eng_comm.h"
#include "eng_cpu.h"
#include "eng_gpu.h"
#include "eng_log.h"
#include "eng_proc.h"
#include "transport.h"

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dfccl_comm *live_head;

/* the handle table: a slot per live communicator, naming it */
typedef struct {
    eng_hslot_t h;
    struct dfccl_comm *comm;
} comm_slot_t;
static eng_htab_t comm_handles = ENG_HTAB_INITIALIZER(comm_slot_t);

static struct dfccl_comm *lookup_locked(dfcclComm_t handle)
{
    const uint64_t h = (uintptr_t)handle;
    comm_slot_t *s = eng_handle_get(&comm_handles, h);
    struct dfccl_comm *p = s ? dfccl_load_acquire(&s->comm) : NULL;
    /* the slot still had the handle's generation after its communicator was read */
    if (!p || !eng_handle_get(&comm_handles, h))
        return NULL;
    return p->handle == h && p->magic == ENG_COMM_MAGIC ? p : NULL;
}

/* Lock-free: every collective call looks its communicator up. */
struct dfccl_comm *eng_comm_get(dfcclComm_t handle)
{
    return lookup_locked(handle);
}

int eng_comm_why_get(dfcclComm_t handle, char *buf, size_t len)
{
    int got = 0;
    pthread_mutex_lock(&live_lock);
    struct dfccl_comm *c = lookup_locked(handle);
    if (c && dfccl_load_acquire32(&c->why_state) == 2) {
        snprintf(buf, len, "%s", c->why);
        got = 1;
    }
    pthread_mutex_unlock(&live_lock);
    return got;
}

int eng_comm_watch_peers(dfcclComm_t handle, uint64_t gpu_seq, uint64_t now)
{
    int gone = -1;
    /* under the registry's lock: a dfcclCommDestroy on another thread takes the
     * communicator out of it before tearing it down, so it can't vanish under the look */
    pthread_mutex_lock(&live_lock);
    struct dfccl_comm *c = lookup_locked(handle);
    if (c && !c->aborted && eng_peer_check_due(c, now) && (gone = eng_shm_dead_peer(c, now)) >= 0) {
        char who[128];
        eng_shm_peer_desc(c, gone, now, who, sizeof who);
        eng_comm_why(c, 1,
                     "peer rank %d (%s) died; its pending collectives on the GPU and every later one fail",
                     gone, who);
    } else if (c && !c->aborted && (gone = eng_shm_left_peer(c, gpu_seq, 1)) >= 0) {
        /* a few loads: every waiter looks, not only the one whose turn the dead check is */
        eng_comm_why(
            c, 1,
            "peer rank %d left the communicator (dfcclCommDestroy or exit) before completing its GPU "
            "collective %llu; that one and every later one fail",
            gone, (unsigned long long)gpu_seq);
    }
    if (gone >= 0) {
        dfccl_store_release(&c->aborted, dfcclCommAborted);
        if (c->gpu)
            eng_gpu->comm_abort(c->gpu, dfcclCommAborted);
    } else if (c && !c->aborted) {
        /* the ranks' descriptions of the collective (sig.c): a peer that called another
         * one, refused its call, or aborted on such a finding */
        char msg[sizeof c->why - 32];
        if ((gone = eng_sig_diagnose(c, 1, gpu_seq, msg, sizeof msg)) >= 0)
            eng_sig_abort(c, 1, msg);
    }
    pthread_mutex_unlock(&live_lock);
    return gone;
}

/* c's rank leaves: every collective from cpu_left on (its numbers; the GPU daemon's from
 * gpu_left on) will never be completed here, and peers that wait on one of them fail
 * (eng_shm_left_peer) rather than wait for ever. */
static void mark_left(struct dfccl_comm *c, uint64_t cpu_left, uint64_t gpu_left)
{
    if (!c->segs || !c->segs[c->rank])
        return;
    eng_seg_hdr_t *h = eng_seg_hdr(c, c->rank);
    dfccl_store_release64(&h->gpu_closed, gpu_left + 1);
    dfccl_store_release64(&h->closed, cpu_left + 1);
}

/* A process that exits without destroying its communicators has left them: it marks its
 * segments closed, so that peers still waiting do not take the exit for a death (a kill
 * runs no handler and is found). Run at exit, or when the library is unloaded. */
static void mark_closed_at_exit(void)
{
    if (pthread_mutex_trylock(&live_lock) != 0)
        return; /* another thread is in the registry as the process exits: leave it */
    /* which collectives are still pending is not known here without the daemons (which
     * may be gone at exit): the CPU ones count if every one submitted has completed, else
     * none does; the GPU ones all count, pending or not (the GPU daemon's completed count
     * is not read at exit) */
    for (struct dfccl_comm *p = live_head; p; p = p->live_next) {
        const uint64_t cpu = DFCCL_READ_ONCE(p->stats.completed) == p->next_seq ? p->next_seq : 0;
        mark_left(p, cpu,
                  p->segs && p->segs[p->rank] ? DFCCL_READ_ONCE(eng_seg_hdr(p, p->rank)->gpu_arrived) : 0);
    }
    pthread_mutex_unlock(&live_lock);
}

static void register_exit_mark(void)
{
    atexit(mark_closed_at_exit);
}

/* c's handle, taken before the set-up's first all-gather (whose status says when the
 * table is out of memory: taken after the last, a failure would be this rank's alone);
 * 0 when the table is out of memory. Nobody finds c by it before live_add. */
static int live_reserve(struct dfccl_comm *c)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_exit_mark);
    pthread_mutex_lock(&live_lock);
    comm_slot_t *s = eng_handle_alloc(&comm_handles, &c->handle);
    if (s)
        dfccl_store_release(&s->comm, (struct dfccl_comm *)NULL);
    pthread_mutex_unlock(&live_lock);
    return s != NULL;
}

/* A failed set-up's handle back. */
static void live_unreserve(struct dfccl_comm *c)
{
    pthread_mutex_lock(&live_lock);
    comm_slot_t *s = eng_handle_get(&comm_handles, c->handle);
    if (s)
        eng_handle_free(&comm_handles, s);
    pthread_mutex_unlock(&live_lock);
}

/* Register c under its handle. */
static void live_add(struct dfccl_comm *c)
{
    pthread_mutex_lock(&live_lock);
    comm_slot_t *s = eng_handle_get(&comm_handles, c->handle);
    dfccl_store_release(&s->comm, c);
    c->live_next = live_head;
    live_head = c;
    pthread_mutex_unlock(&live_lock);
}

/* Under the registry's lock, so that a look under it (eng_comm_watch_peers) finds a
 * communicator either live or gone. */
static int live_remove(struct dfccl_comm *c)
{
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (struct dfccl_comm **pp = &live_head; *pp; pp = &(*pp)->live_next)
        if (*pp == c) {
            *pp = c->live_next;
            found = 1;
            break;
        }
    comm_slot_t *s = found ? eng_handle_get(&comm_handles, c->handle) : NULL;
    if (s)
        eng_handle_free(&comm_handles, s);
    pthread_mutex_unlock(&live_lock);
    return found;
}

/* Connect every transport some pair of ranks uses, in the table's order (every rank
 * alike: each connect is collective); on a failure, close those connected. */
static dfcclResult_t tp_connect(struct dfccl_comm *c, uint8_t *peers /* [nranks], scratch */,
                                dfcclAllgatherFn_t ag, void *ctx)
{
    dfcclResult_t res = dfcclSuccess;
    int t;
    for (t = 0; t < ENG_TP_NUM && res == dfcclSuccess; t++) {
        if (!(c->tp_used >> t & 1))
            continue;
        for (int p = 0; p < c->nranks; p++)
            peers[p] = p != c->rank && c->tp[p] == t;
        res = eng_transports[t]->connect(c, peers, ag, ctx);
    }
    /* the failed one cleaned up after itself */
    for (t -= 2; res != dfcclSuccess && t >= 0; t--)
        if (c->tp_used >> t & 1)
            eng_transports[t]->close(c);
    return res;
}

/* Local, backwards: a transport may keep memory of an earlier one (ucx: receives still
 * landing in shm's segment). */
static void tp_close(struct dfccl_comm *c)
{
    for (int t = ENG_TP_NUM - 1; t >= 0; t--)
        if (c->tp_used >> t & 1)
            eng_transports[t]->close(c);
}

/* The knobs that shape a communicator's FIFOs and pick its algorithms: a rank whose value
 * differs would lay out or read its peers' memory differently, or run another algorithm
 * for the same call (corrupt results or a hang), so every rank must have the same. */
#define ENG_SHAPE_KNOBS 14
static const char *const shape_names[ENG_SHAPE_KNOBS] = {
    "DFCCL_SLOTS",       "DFCCL_CHANNELS",      "DFCCL_FIFO_DEPTH",     "DFCCL_CHUNK_SIZE",
    "DFCCL_ONESHOT_MAX", "DFCCL_LL_MAX",        "DFCCL_GPU_CHUNK_SIZE", "DFCCL_GPU_NET_CHUNK_SIZE",
    "DFCCL_DIRECT_MAX",  "DFCCL_ONESHOT_RANKS", "DFCCL_DIRECT_RANKS",   "DFCCL_READ_MIN",
    "DFCCL_LL_WIDE_MAX", "DFCCL_NET_PUT_MIN"};

static void shape_of(uint64_t v[ENG_SHAPE_KNOBS])
{
    v[0] = eng_config.slots;
    v[1] = eng_config.channels;
    v[2] = eng_config.fifo_depth;
    v[3] = eng_config.chunk_size;
    v[4] = eng_config.oneshot_max;
    v[5] = eng_config.ll_max;
    v[6] = eng_config.gpu_chunk_size;
    v[7] = eng_config.gpu_net_chunk;
    v[8] = eng_config.direct_max;
    v[9] = eng_config.oneshot_ranks;
    v[10] = eng_config.direct_ranks;
    v[11] = eng_config.read_min;
    v[12] = eng_config.ll_wide_max;
    v[13] = eng_config.net_put_min;
}

#define ENG_BOOT_MAGIC 0x6466636c426f6f74ull /* "dfclBoot" */

/* Why a rank has no GPU part (eng_boot_info_t.no_gpu). */
enum { BOOT_GPU = 0, BOOT_NO_GPU_BUILD = 1, BOOT_GPU_OFF = 2 };

typedef struct {
    uint64_t magic; /* ENG_BOOT_MAGIC: the block was filled (by a rank of this call) */
    int32_t rank, nranks;
    int32_t status;     /* dfcclSuccess, or why this rank cannot take part (err says more) */
    int32_t no_gpu;     /* BOOT_*: will it create the GPU part (whose set-up has all-gathers)? */
    char err[320];      /* status's message (dfcclGetLastError) */
    eng_tp_card_t card; /* for the locality decision */
    uint64_t uid;
    uint64_t shape[ENG_SHAPE_KNOBS]; /* shape_of() */
    /* the zero-copy read on host buffers (prims_cpu_read.h): whether peers of the same
     * user in the same pid namespace may read this process's memory (no Yama ptrace
     * restriction), its user and pid namespace */
    uint64_t pidns;
    uint32_t uid_proc;
    uint32_t cma;
} eng_boot_info_t;

/* This process lets a peer process of its user read its memory (process_vm_readv):
 * Yama's ptrace_scope is absent or 0 (1 allows only descendants, 2 and 3 less). */
static uint32_t cma_allowed(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (!f)
        return 1;
    int scope = 1;
    if (fscanf(f, "%d", &scope) != 1)
        scope = 1;
    fclose(f);
    return scope == 0;
}

/* The first all-gather's verdict, the same on every rank: a rank that could not take part
 * (a bad DFCCL_* value, its daemon, memory), a knob that differs, or a GPU part on some
 * ranks only (a CPU-only build or DFCCL_GPU=0 beside a GPU one: those ranks would not
 * join the GPU set-up's all-gathers). */
static dfcclResult_t check_boot_agree(eng_boot_info_t *all, int nranks)
{
    for (int p = 0; p < nranks; p++)
        if (all[p].status != dfcclSuccess) {
            all[p].err[sizeof(all[p].err) - 1] = 0;
            const dfcclResult_t r =
                all[p].status < 0 && all[p].status > -100 ? (dfcclResult_t)all[p].status : dfcclInvalidUsage;
            return eng_set_error(r, "dfcclCommInit", "rank %d of %d cannot create the communicator: %s", p,
                                 nranks, all[p].err);
        }
    for (int p = 1; p < nranks; p++)
        for (int k = 0; k < ENG_SHAPE_KNOBS; k++)
            if (all[p].shape[k] != all[0].shape[k]) {
                char v0[24], vp[24];
                return eng_set_error(dfcclInvalidArgument, "dfcclCommInit",
                                     "%s differs between ranks: %s on rank 0, %s on rank %d; every rank "
                                     "of a communicator must use the same value",
                                     shape_names[k], eng_count_text(all[0].shape[k], v0),
                                     eng_count_text(all[p].shape[k], vp), p);
            }
    static const char *const gpu_says[] = {"has the GPU backend (DFCCL_GPU=1)",
                                           "runs a dfccl built without the GPU backend (no CUDA)",
                                           "has the GPU backend off (DFCCL_GPU=0)"};
    for (int p = 1; p < nranks; p++)
        if ((all[p].no_gpu == BOOT_GPU) != (all[0].no_gpu == BOOT_GPU)) {
            const int a = all[0].no_gpu >= 0 && all[0].no_gpu <= 2 ? all[0].no_gpu : 1;
            const int b = all[p].no_gpu >= 0 && all[p].no_gpu <= 2 ? all[p].no_gpu : 1;
            return eng_set_error(
                dfcclInvalidUsage, "dfcclCommInit",
                "the GPU backend differs between ranks: rank 0 of %d %s, rank %d of %d %s; every rank "
                "of a communicator must run a dfccl with the same backends and the same DFCCL_GPU",
                nranks, gpu_says[a], p, nranks, gpu_says[b]);
        }
    return dfcclSuccess;
}

/* Does the first all-gather's table hold one block from each rank 0..nranks-1, all with
 * this nranks? A wrong nranks or rank shows here first, and would otherwise be read as
 * some other mismatch. Every rank judges the same table alike. */
static dfcclResult_t check_boot_table(const eng_boot_info_t *all, int nranks, int rank)
{
    for (int p = 0; p < nranks; p++) {
        if (all[p].magic != ENG_BOOT_MAGIC)
            return eng_set_error(
                dfcclInvalidArgument, "dfcclCommInit",
                "the bootstrap all-gather left rank %d's block empty: nranks is %d here (rank %d), but the "
                "all-gather spans fewer processes, or does not gather every rank's block in rank order",
                p, nranks, rank);
        if (all[p].nranks != nranks)
            return eng_set_error(dfcclInvalidArgument, "dfcclCommInit",
                                 "nranks differs between ranks: %d on rank %d, %d on the rank whose block is "
                                 "%d; every rank must pass the same nranks",
                                 nranks, rank, (int)all[p].nranks, p);
        if (all[p].rank != p)
            return eng_set_error(
                dfcclInvalidArgument, "dfcclCommInit",
                "the bootstrap all-gather's block %d comes from a process that passed rank %d: "
                "two processes passed the same rank, or the all-gather does not order the "
                "blocks by rank",
                p, (int)all[p].rank);
    }
    return dfcclSuccess;
}

static uint64_t fresh_uid(void)
{
    uint64_t u = 0;
    if (getrandom(&u, sizeof(u), 0) != (ssize_t)sizeof(u))
        u = eng_now_ns() ^ ((uint64_t)getpid() << 32);
    return u;
}

dfcclResult_t dfcclCommInit(dfcclComm_t *comm_p, int nranks, int rank, dfcclAllgatherFn_t allgather,
                            void *ctx)
{
    return dfcclCommInitConfig(comm_p, nranks, rank, allgather, ctx, NULL);
}

dfcclResult_t dfcclCommInitConfig(dfcclComm_t *comm_p, int nranks, int rank, dfcclAllgatherFn_t allgather,
                                  void *ctx, const dfcclConfig_t *config)
{
    dfcclResult_t res;
    eng_boot_info_t me, *all = NULL;

    if (!comm_p)
        return DFCCL_ARG_ERROR("comm_p is NULL");
    *comm_p = NULL;
    if (nranks < 1)
        return DFCCL_ARG_ERROR("nranks %d must be >= 1", nranks);
    if (rank < 0 || rank >= nranks)
        return DFCCL_ARG_ERROR("rank %d out of range [0, %d)", rank, nranks);
    if (!allgather)
        return DFCCL_ARG_ERROR("allgather is NULL");
    /* From here on, whatever fails on this rank goes into the first all-gather, which
     * every rank reaches: a rank that returned before it would leave the others waiting
     * in it (a bad DFCCL_* value on one rank hung the rest). */
    /* The one allocation whose failure the peers cannot be told of: the table that
     * would tell them. It comes first; every later all-gather of the set-up receives into
     * it (eng_boot_ag). */
    all = calloc((size_t)nranks, sizeof(*all));
    if (!all)
        return eng_set_error(dfcclNoMemory, __func__, "no memory for the set-up of %d ranks", nranks);
    const int cfg_ok = (res = eng_config_init(config)) == dfcclSuccess;
    int daemon_held = 0, reserved = 0;
    struct dfccl_comm *c = calloc(1, sizeof(*c));
    /* what the later steps need, allocated before the first all-gather reports it */
    uint8_t *peers = calloc((size_t)nranks, 1);
    uint64_t **arrived = calloc((size_t)nranks, sizeof(uint64_t *));
    memset(&me, 0, sizeof(me));
    me.magic = ENG_BOOT_MAGIC;
    me.rank = rank;
    me.nranks = nranks;
    if (res == dfcclSuccess && !c)
        res = eng_set_error(dfcclNoMemory, __func__, "no memory for a communicator of %d ranks", nranks);
    if (res == dfcclSuccess) {
        c->rank = rank;
        c->nranks = nranks;
        c->slots = eng_config.slots;
        c->channels = eng_config.channels;
        c->depth = eng_config.fifo_depth;
        c->chunk = eng_config.chunk_size;
        c->tp = calloc((size_t)nranks, 1);
        c->slot_next = calloc(c->slots, sizeof(uint64_t));
        if (!c->tp || !c->slot_next || !peers || !arrived)
            res = eng_set_error(dfcclNoMemory, __func__, "no memory for a communicator");
        else if (!(reserved = live_reserve(c)))
            res = eng_set_error(dfcclNoMemory, __func__, "no memory for a communicator's handle");
    }
    if (res == dfcclSuccess) {
        eng_shm_clean_stale();
        daemon_held = (res = eng_cpu->acquire()) == dfcclSuccess;
    }
    if (res == dfcclSuccess) {
        me.uid = fresh_uid();
        eng_tp_card(&me.card);
        shape_of(me.shape);
        me.no_gpu = !eng_gpu ? BOOT_NO_GPU_BUILD : !eng_config.gpu ? BOOT_GPU_OFF : BOOT_GPU;
        me.pidns = eng_pid_ns();
        me.uid_proc = (uint32_t)getuid();
        me.cma = cma_allowed() && me.pidns != 0;
    }
    me.status = res;
    if (res != dfcclSuccess)
        snprintf(me.err, sizeof(me.err), "%s", dfcclGetLastError());
    if (allgather(&me, all, sizeof(me), ctx) != 0) {
        res = eng_set_error(dfcclBootstrapError, __func__, "allgather callback failed");
        goto err_daemon;
    }
    /* every rank sees the same table, so every rank fails alike: nobody waits for the others */
    if ((res = check_boot_table(all, nranks, rank)) != dfcclSuccess ||
        (res = check_boot_agree(all, nranks)) != dfcclSuccess)
        goto err_daemon;
    c->uid = all[0].uid; /* rank 0 names the communicator */
    /* DFCCL_READ_MIN=auto reads host buffers only where every rank may read every other:
     * where the kernel refuses, every block would be pushed after two handshakes, up to
     * 1.9x the FIFOs' time (bench/RESULTS.md). The same table, the same verdict on every
     * rank. */
    c->cma = 1;
    for (int p = 0; p < nranks; p++)
        c->cma &= all[p].cma && all[p].pidns == all[0].pidns && all[p].uid_proc == all[0].uid_proc;
    /* locality: every rank decides the same from the same cards */
    if ((res = eng_tp_pick(eng_transports, &all[0].card, sizeof(*all), nranks, rank, c->tp, &c->tp_used)) !=
        dfcclSuccess)
        goto err_daemon;
    for (int p = 0; p < nranks; p++)
        if (p != rank)
            dfccl_info("communicator %016llx rank %d: peer %d: transport %s (GPU daemon: %s)",
                       (unsigned long long)c->uid, rank, p, eng_transports[c->tp[p]]->name,
                       eng_transports[c->tp[p]]->gpu_name);

    for (uint32_t s = 0; s < c->slots; s++)
        c->slot_next[s] = s;

    _Static_assert(sizeof(eng_boot_info_t) >= ENG_BOOT_REC,
                   "the later all-gathers receive into the boot table");
    c->boot = all;
    DFCCL_CHECK_GOTO(tp_connect(c, peers, allgather, ctx), res, err_daemon);
    /* the GPU daemon's connections: its instance of each peer's transport (every rank
     * has a GPU part, or none: check_boot_agree) */
    if (me.no_gpu == BOOT_GPU) {
        for (int p = 0; p < nranks && c->segs; p++)
            arrived[p] = c->segs[p] ? &eng_seg_hdr(c, p)->gpu_arrived : NULL;
        res = eng_gpu->comm_create(&c->gpu, rank, nranks, c->uid, c->tp, c->tp_used, arrived, allgather, ctx,
                                   all);
        if (res < 0) {
            tp_close(c);
            goto err_daemon;
        }
    }
    c->boot = NULL;
    free(all);
    all = NULL;
    free(peers);
    peers = NULL;
    free(arrived);
    arrived = NULL;
    c->magic = ENG_COMM_MAGIC;
    live_add(c);
    dfccl_info("communicator %016llx: rank %d of %d, %u slots x %u channels, %llu B chunks x %u, %zu B "
               "shared memory",
               (unsigned long long)c->uid, rank, nranks, c->slots, c->channels, (unsigned long long)c->chunk,
               c->depth, c->seg_size);
    *comm_p = (dfcclComm_t)c->handle;
    eng_config_done(1);
    return dfcclSuccess;

err_daemon:
    if (daemon_held)
        eng_cpu->release();
    if (reserved)
        live_unreserve(c);
    if (c) {
        free(c->slot_next);
        free(c->tp);
    }
    free(c);
    free(all);
    free(peers);
    free(arrived);
    if (cfg_ok)
        eng_config_done(0);
    return res;
}

dfcclResult_t dfcclCommDestroy(dfcclComm_t handle)
{
    struct dfccl_comm *comm = eng_comm_get(handle);
    if (!comm || !live_remove(comm))
        return DFCCL_ARG_ERROR("comm is not a live communicator (NULL or already destroyed)");
    /* the daemon fails whatever is still pending on comm, in submission order */
    const uint64_t cpu_left = eng_cpu->destroy(comm);
    /* the GPU collectives before the first not completed (a count: with all completed, the
     * exact point; with some pending, which a correct program does not destroy with, a
     * lower bound) */
    uint64_t gpu_left = 0;
    if (comm->gpu) {
        dfcclStats_t g;
        eng_gpu->comm_stats(comm->gpu, &g);
        gpu_left = g.completed;
    }
    /* a bcast or scatter this rank was the root of and made no call after: compared with
     * the peers' descriptions now (sig.c), so that a mismatch is said at least here */
    if (eng_sig_unverified(comm))
        (void)eng_sig_verify(comm);
    /* peers that still wait on this communicator must not take this exit for a death,
     * and fail a collective this rank left before completing */
    mark_left(comm, cpu_left, gpu_left);
    comm->magic = 0;
    if (comm->gpu)
        eng_gpu->comm_destroy(comm->gpu);
    tp_close(comm);
    free(comm->slot_next);
    free(comm->tp);
    free(comm);
    eng_cpu->release();
    return dfcclSuccess;
}

dfcclResult_t dfcclCommRank(dfcclComm_t handle, int *rank_p)
{
    struct dfccl_comm *comm = eng_comm_get(handle);
    if (!comm)
        return DFCCL_ARG_ERROR("comm is not a live communicator (NULL or destroyed)");
    if (!rank_p)
        return DFCCL_ARG_ERROR("rank_p is NULL");
    *rank_p = comm->rank;
    return dfcclSuccess;
}

dfcclResult_t dfcclCommSize(dfcclComm_t handle, int *size_p)
{
    struct dfccl_comm *comm = eng_comm_get(handle);
    if (!comm)
        return DFCCL_ARG_ERROR("comm is not a live communicator (NULL or destroyed)");
    if (!size_p)
        return DFCCL_ARG_ERROR("size_p is NULL");
    *size_p = comm->nranks;
    return dfcclSuccess;
}

dfcclResult_t dfcclCommDeviceBuffers(dfcclComm_t handle, int *supported_p)
{
    struct dfccl_comm *comm = eng_comm_get(handle);
    if (!comm)
        return DFCCL_ARG_ERROR("comm is not a live communicator (NULL or destroyed)");
    if (!supported_p)
        return DFCCL_ARG_ERROR("supported_p is NULL");
    *supported_p = comm->gpu != NULL;
    return dfcclSuccess;
}

dfcclResult_t dfcclCommGetStats(dfcclComm_t handle, dfcclStats_t *stats_p)
{
    struct dfccl_comm *comm = eng_comm_get(handle);
    if (!comm)
        return DFCCL_ARG_ERROR("comm is not a live communicator (NULL or destroyed)");
    if (!stats_p)
        return DFCCL_ARG_ERROR("stats_p is NULL");
    /* the daemons write these words alone; a slightly stale copy is fine */
    dfcclStats_t g;
    memset(&g, 0, sizeof(g));
    if (comm->gpu)
        eng_gpu->comm_stats(comm->gpu, &g);
    stats_p->submitted = DFCCL_READ_ONCE(comm->stats.submitted);
    stats_p->completed = DFCCL_READ_ONCE(comm->stats.completed) + g.completed;
    stats_p->preemptions = DFCCL_READ_ONCE(comm->stats.preemptions) + g.preemptions;
    stats_p->stalls = DFCCL_READ_ONCE(comm->stats.stalls) + g.stalls;
    stats_p->stall_ns = DFCCL_READ_ONCE(comm->stats.stall_ns) + g.stall_ns;
    stats_p->shm_bytes = comm->stats.shm_bytes;
    stats_p->device_bytes = g.shm_bytes;
    stats_p->daemon_launches = g.daemon_launches;
    return dfcclSuccess;
}
