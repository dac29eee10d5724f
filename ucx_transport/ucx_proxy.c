/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport over UCX. One UCX context per process and DFCCL_NET_THREADS proxy
 * threads, each driving a worker of its own: the connections of lane l (the channel)
 * belong to proxy l mod threads at both ends, so channels move in parallel, each proxy
 * under its own lock. For every connection to a peer on the net the daemon writes into a local
 * *shadow* of the connection (same control words and FIFO as the peer transport); the
 * proxy sends each new step to the peer as one active message (a header naming the
 * connection and the step, the step's bytes as payload), and the peer's proxy lands it in
 * its receive FIFO and publishes the step counter. The receiver's `consumed` counter
 * travels back as a header-only message into the sender's shadow, which is where the
 * sender's daemon reads its credits. The algorithms and the scheduler are unchanged: a
 * wait on a remote peer is a wait on a local word. Where the segments live is the
 * caller's (eng_net_layout_t): the CPU daemon's shared memory, or the GPU daemon's
 * host-pinned, device-mapped FIFOs.
 *
 * Active messages rather than puts: one message per step (no fence, no separate counter
 * put), the data copied once on arrival or fetched zero-copy (rendezvous) by UCX, and a
 * message for a communicator this rank has already destroyed is dropped by our handler
 * instead of landing in freed memory. The handlers check what a correct peer never sends
 * (comm_by_id: the communicator's random key; net_in_window: the sender's credits;
 * net_credit: steps sent): a message without the key is dropped, a violation by a peer
 * that has it aborts the communicator.
 *
 * Endpoints belong to the process, not to a communicator: one per (worker, peer worker
 * address), found in the worker's cache and counted by the communicators that use it
 * (messages name their communicator, so they share it freely). An endpoint with no user
 * left stays cached until the worker goes (the process's last net communicator), the
 * peer's process exits or shows a new worker: closing it earlier would race a peer that
 * still uses (or has just reused) the pair, and leaves UCX state behind at the peer.
 *
 * A peer whose endpoint fails (killed process, lost link) aborts every communicator
 * using that endpoint, so their pending collectives fail instead of hanging; the
 * endpoint leaves the cache. The proxy spins while there is traffic and sleeps on the
 * worker's event fd when idle. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "eng_bell.h"
#include "eng_cpu_wait.h"
#include "eng_types.h"
#include "eng_config.h"
#include "eng_log.h"
#include "eng_net.h"
#include "net_boot.h"
#include "net_landing.h"

#define NET_VALS        64           /* stable headers of credit messages, reused after 64 more */
#define NET_MAX_COMMS   4096         /* live net communicators per process (ids index a table) */
#define NET_WATCH_NS    100000000ull /* how often same-host peers' processes are checked */
#define NET_TCP_SEG_MAX (1ull << 20) /* largest tcp segment set for a step (see tcp_segments) */

enum { AM_STEP = 11, AM_CREDIT = 12, AM_BYE = 13 };

#define NET_MAX_PIECES 64 /* eager messages per step at most (DFCCL_NET_PIECE is raised to fit) */

/* Every message's header. */
typedef struct {
    uint32_t dst;   /* the receiving rank's communicator id */
    int32_t src;    /* the sending rank */
    uint32_t idx;   /* the connection, among those between the two ranks */
    uint32_t off;   /* AM_STEP: where this piece of the step goes */
    uint64_t key;   /* the receiving rank's random key of the communicator (see comm_by_id) */
    uint64_t step;  /* AM_STEP: the step; AM_CREDIT: steps consumed */
    uint64_t total; /* AM_STEP: the step's bytes, over all its pieces */
} net_am_hdr_t;

struct eng_net_comm;
typedef struct net_conn net_conn_t;

/* A step arriving by rendezvous: what its completion publishes. */
typedef struct {
    struct eng_net_comm *nc;
    net_conn_t *k;
    uint64_t step;
} net_pend_t;

struct net_conn {
    int peer;
    uint32_t idx;
    uint32_t px;                  /* the proxy (and worker) that moves it */
    uint64_t schunk, rchunk;      /* bytes per step, me -> peer and peer -> me */
    eng_conn_ctrl_t *shadow_ctrl; /* me -> peer: written by my daemon, credited by the peer */
    char *shadow_data;
    eng_conn_ctrl_t *local_ctrl; /* peer -> me: in my receive segment */
    char *local_data;
    uint64_t sent_posted, sent_consumed;
    net_landing_t in;  /* receiver: steps published, slots landed beyond them */
    uint64_t *got;     /* [depth]: receiver: bytes of each slot's step landed so far */
    uint64_t piece;    /* sender: bytes per eager message (0: the whole step in one) */
    uint32_t npiece;   /* headers per slot: the most messages a step is sent in */
    net_am_hdr_t *hdr; /* [depth][npiece]: the step messages' headers */
    net_pend_t *pend;  /* [depth] */
    net_am_hdr_t cred[NET_VALS];
    unsigned ncred;
};

/* An endpoint to one worker of a peer process, shared by the communicators that reach
 * that peer through this worker. Under its proxy's lock. */
typedef struct net_ep {
    ucp_ep_h ep;
    uint32_t px;    /* the worker (proxy) it is on */
    int peer_mode;  /* UCP_ERR_HANDLING_MODE_PEER (another host), else NONE (see ep_create) */
    int32_t pid;    /* same host: the peer's process, watched by the proxy; else 0 */
    uint32_t refs;  /* communicators using it */
    int retired;    /* failed, or its peer has a new worker: out of the cache, closed when unused */
    int failed;     /* endpoint error, or the peer's process exited */
    char host[128]; /* the peer's where_am_i: with pid, which process it reaches */
    struct net_ep *next;
    size_t addr_len;
    unsigned char addr[]; /* the peer worker's address: the cache key */
} net_ep_t;

struct eng_net_comm {
    uint32_t id;  /* index of the handlers' table: a guessable number */
    uint64_t key; /* random (getrandom): a message must carry it to reach this communicator */
    uint64_t uid;
    int rank, nranks;
    uint32_t depth;
    int32_t *abort_words[2]; /* the communicator's abort words */
    uint32_t npx;            /* proxies it uses: the fewest any of its ranks runs */
    char **shadow;           /* [nranks]: my shadow of peer p's connections (net peers only) */
    net_ep_t **ep;           /* [npx][nranks]: proxy i's endpoint to the peer's worker i */
    uint32_t *peer_id;       /* [nranks]: the peer's id of this communicator */
    uint64_t *peer_key;      /* [nranks]: and its key */
    int32_t *watch_pid;      /* [nranks]: same-host peer's process (its steps go eager) */
    size_t *peer_first;      /* [nranks]: the peer's first connection in conns */
    uint32_t *peer_count;    /* [nranks] */
    net_conn_t *conns;
    size_t nconns;
    uint8_t *dead;     /* [nranks]: endpoint failed or peer left: send it nothing more */
    net_am_hdr_t *bye; /* [nranks]: stable headers of the goodbye messages */
    uint64_t inflight; /* rendezvous receives not yet completed (atomic: every proxy's) */
    int closing;       /* this rank is tearing the communicator down */
    eng_bell_t *bell;  /* my doorbell (my segment's header), rung after a step or credit lands */
    struct eng_net_comm *next;
};

typedef struct {
    uint32_t idx;
    pthread_mutex_t lock; /* every call on this worker; held by the proxy through a pass */
    ucp_worker_h worker;
    int efd;
    pthread_t thread;
    net_ep_t *eps; /* the endpoints on this worker, retired ones until unused */
} net_proxy_t;

/* Locks: U.lock (set-up, teardown, refs), then px[0..n-1].lock. The list and the table
 * of communicators change only under all of them, so a proxy (holding its own) reads
 * them safely, and its handlers too. */
static struct {
    pthread_mutex_t lock;
    int refs;
    ucp_context_h ctx;
    uint32_t nproxies;
    net_proxy_t px[ENG_MAX_NET_THREADS];
    int stop;
    struct eng_net_comm *comms;
    struct eng_net_comm *by_id[NET_MAX_COMMS];
    uint32_t next_id;
    uint64_t dropped;   /* messages for no live communicator here (atomic: every proxy's) */
    uint64_t mem_types; /* what the context carries (ucp_context_query), by ucs_memory_type_t */
} U = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Proxy i's endpoint to peer p's worker i. */
static net_ep_t **ep_of(const struct eng_net_comm *nc, uint32_t i, int p)
{
    return &nc->ep[(size_t)i * (size_t)nc->nranks + (size_t)p];
}

static void lock_proxies(void)
{
    for (uint32_t i = 0; i < U.nproxies; i++)
        pthread_mutex_lock(&U.px[i].lock);
}

static void unlock_proxies(void)
{
    for (uint32_t i = U.nproxies; i-- > 0;)
        pthread_mutex_unlock(&U.px[i].lock);
}

static dfcclResult_t ucs_error(const char *what, ucs_status_t st)
{
    return eng_set_error(dfcclSystemError, "ucx", "%s failed: %s", what, ucs_status_string(st));
}

static int net_aborted(const struct eng_net_comm *nc)
{
    return dfccl_load_acquire(nc->abort_words[0]) != 0;
}

/* The daemons fail every task of the communicator once they see the word. */
static void net_abort(struct eng_net_comm *nc)
{
    for (int i = 0; i < 2; i++)
        if (nc->abort_words[i])
            dfccl_store_release(nc->abort_words[i], (int32_t)dfcclCommAborted);
}

static int peer_closed(const struct eng_net_comm *nc, int p)
{
    return dfccl_load_acquire64(&((eng_seg_hdr_t *)nc->shadow[p])->closed) != 0;
}

/* Peer p is gone (endpoint error, or its process exited): unless it said goodbye first
 * (it then owes us nothing), the communicator's pending collectives fail. */
static void peer_lost(struct eng_net_comm *nc, int p, const char *why)
{
    DFCCL_WRITE_ONCE(nc->dead[p], 1); /* read by every proxy */
    if (nc->closing)
        return; /* our own endpoints, closed by our teardown */
    if (peer_closed(nc, p)) {
        dfccl_debug("communicator %016llx (rank %d): peer rank %d left (%s)", (unsigned long long)nc->uid,
                    nc->rank, p, why);
        return;
    }
    if (!net_aborted(nc))
        dfccl_error("communicator %016llx (rank %d): peer rank %d is unreachable over UCX (%s); its pending "
                    "collectives fail",
                    (unsigned long long)nc->uid, nc->rank, p, why);
    net_abort(nc);
}

/* Endpoint e failed or its peer's process exited: every live communicator using it loses
 * that peer, and no later one gets it. Called with e's proxy lock held (the list of
 * communicators changes only under every proxy lock); a communicator still in set-up
 * checks its endpoints when it joins the list. The endpoint itself is closed outside
 * UCX's progress, once unused (ep_reap). */
static void ep_failed(net_ep_t *e, const char *why)
{
    e->retired = e->failed = 1;
    for (struct eng_net_comm *nc = U.comms; nc; nc = nc->next)
        if (e->px < nc->npx)
            for (int p = 0; p < nc->nranks; p++)
                if (*ep_of(nc, e->px, p) == e)
                    peer_lost(nc, p, why);
}

static void peer_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    ep_failed(arg, ucs_status_string(status));
}

/* ---- receiving: the active-message handlers (run by the proxy inside progress) ------- */

/* The communicator a message names: the id indexes the table, the key must match too.
 * Ids are few and sequential, so a late message for a destroyed communicator (or a stray
 * or forged one) could name a live one by its id alone; it cannot guess the key. Such a
 * message is dropped, counted, and logged at debug level. */
static struct eng_net_comm *comm_by_id(const net_am_hdr_t *h, const char *what)
{
    struct eng_net_comm *nc = U.by_id[h->dst % NET_MAX_COMMS];
    if (nc && net_addressed(nc->id, nc->key, h->dst, h->key) && !nc->closing)
        return nc;
    const uint64_t n = dfccl_add_fetch_relaxed(&U.dropped, 1);
    dfccl_debug("dropped a %s message from rank %d for communicator id %u: %s (%llu dropped so far)", what,
                (int)h->src, h->dst,
                !nc || nc->id != h->dst ? "no such communicator here"
                : nc->key != h->key     ? "wrong key"
                                        : "communicator closing",
                (unsigned long long)n);
    return NULL;
}

static net_conn_t *conn_of(const net_am_hdr_t *h, struct eng_net_comm **nc_p, const char *what)
{
    struct eng_net_comm *nc = comm_by_id(h, what);
    if (!nc)
        return NULL; /* a communicator already destroyed here, or not ours */
    if (h->src < 0 || h->src >= nc->nranks || h->idx >= nc->peer_count[h->src]) {
        dfccl_error("communicator %016llx (rank %d): a %s message with its key names rank %d, connection "
                    "%u, which it does not have (a protocol error); communicator aborted",
                    (unsigned long long)nc->uid, nc->rank, what, (int)h->src, h->idx);
        net_abort(nc);
        return NULL;
    }
    *nc_p = nc;
    return &nc->conns[nc->peer_first[h->src] + h->idx];
}

/* `len` of step `step`'s `total` bytes are in its slot (a whole step, or one eager piece
 * of it): publish what can be. A step the sender had no credit for, one that landed
 * already, or one overfilled is a protocol error (a bug, or a corrupted header): the
 * communicator fails. */
static void step_landed(struct eng_net_comm *nc, net_conn_t *k, uint64_t step, uint64_t len, uint64_t total)
{
    const int landed = net_land_piece(&k->in, k->got, k->local_ctrl, nc->depth, step, len, total);
    if (landed > 0)
        eng_bell_ring(nc->bell); /* a daemon thread here may sleep on it */
    if (landed < 0) {
        dfccl_error("communicator %016llx (rank %d): step %llu from rank %d is outside its window (%llu "
                    "published, %llu consumed, depth %u), landed already or overfills its %llu bytes (a "
                    "protocol error); communicator aborted",
                    (unsigned long long)nc->uid, nc->rank, (unsigned long long)step, k->peer,
                    (unsigned long long)k->in.posted,
                    (unsigned long long)dfccl_load_acquire64(&k->local_ctrl->consumed), nc->depth,
                    (unsigned long long)total);
        net_abort(nc);
    }
}

static void rndv_done(void *request, ucs_status_t status, size_t length, void *user_data)
{
    net_pend_t *pd = user_data;
    dfccl_fetch_sub_relaxed(&pd->nc->inflight, 1);
    if (status == UCS_OK)
        step_landed(pd->nc, pd->k, pd->step, length, length);
    else
        peer_lost(pd->nc, pd->k->peer, ucs_status_string(status));
    ucp_request_free(request);
}

static ucs_status_t am_step(void *arg, const void *header, size_t header_length, void *data, size_t length,
                            const ucp_am_recv_param_t *param)
{
    ucp_worker_h worker = ((net_proxy_t *)arg)->worker;
    const int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    struct eng_net_comm *nc = NULL;
    net_am_hdr_t h;
    net_conn_t *k = NULL;
    if (header_length == sizeof(h)) {
        memcpy(&h, header, sizeof(h));
        k = conn_of(&h, &nc, "step");
    }
    /* the window before the copy: a step beyond the sender's credits would overwrite a
     * slot the daemon has not read */
    if (k && (h.total > k->rchunk || h.off > h.total || length > h.total - h.off ||
              (rndv && length != h.total) || !net_in_window(&k->in, k->local_ctrl, nc->depth, h.step))) {
        dfccl_error("communicator %016llx (rank %d): a %zu-byte piece at %u of %llu-byte step %llu from "
                    "rank %d does not fit its %llu-byte FIFO step, or the step is outside its window (%llu "
                    "published, %llu consumed, depth %u: a protocol error); communicator aborted",
                    (unsigned long long)nc->uid, nc->rank, length, h.off, (unsigned long long)h.total,
                    (unsigned long long)h.step, k->peer, (unsigned long long)k->rchunk,
                    (unsigned long long)k->in.posted,
                    (unsigned long long)dfccl_load_acquire64(&k->local_ctrl->consumed), nc->depth);
        net_abort(nc);
        k = NULL;
    }
    if (!k)
        return UCS_OK; /* dropped: UCX declines a rendezvous one to its sender (releasing it
                          here as well released it twice, and UCX's pool lost a buffer) */
    const uint32_t slot = (uint32_t)(h.step % nc->depth);
    char *dst = k->local_data + (uint64_t)slot * k->rchunk;
    if (!rndv) { /* a whole step or one piece of it, read in place from UCX's buffer */
        memcpy(dst + h.off, data, length);
        step_landed(nc, k, h.step, length, h.total);
        return UCS_OK;
    }
    net_pend_t *pd = &k->pend[slot];
    *pd = (net_pend_t){.nc = nc, .k = k, .step = h.step};
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    prm.cb.recv_am = rndv_done;
    prm.user_data = pd;
    ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker, data, dst, length, &prm);
    if (UCS_PTR_IS_ERR(r))
        peer_lost(nc, k->peer, ucs_status_string(UCS_PTR_STATUS(r)));
    else if (r == NULL)
        step_landed(nc, k, h.step, length, length);
    else
        dfccl_fetch_add_relaxed(&nc->inflight, 1);
    return UCS_OK;
}

static ucs_status_t am_credit(void *arg, const void *header, size_t header_length, void *data, size_t length,
                              const ucp_am_recv_param_t *param)
{
    (void)arg, (void)data, (void)length, (void)param;
    struct eng_net_comm *nc;
    net_am_hdr_t h;
    net_conn_t *k;
    if (header_length == sizeof(h)) {
        memcpy(&h, header, sizeof(h));
        if (!(k = conn_of(&h, &nc, "credit")))
            return UCS_OK;
        /* the peer consumed only steps it received: this proxy (the connection's, under
         * its lock) sent sent_posted of them */
        const uint64_t consumed = dfccl_load_acquire64(&k->shadow_ctrl->consumed);
        const int r = net_credit(consumed, k->sent_posted, h.step);
        if (r > 0) {
            dfccl_store_release64(&k->shadow_ctrl->consumed, h.step);
            eng_bell_ring(nc->bell);
        } else if (r < 0) {
            dfccl_error("communicator %016llx (rank %d): rank %d credits %llu steps on connection %u, but "
                        "only %llu were sent to it (a protocol error); communicator aborted",
                        (unsigned long long)nc->uid, nc->rank, k->peer, (unsigned long long)h.step, k->idx,
                        (unsigned long long)k->sent_posted);
            net_abort(nc);
        }
    }
    return UCS_OK;
}

static ucs_status_t am_bye(void *arg, const void *header, size_t header_length, void *data, size_t length,
                           const ucp_am_recv_param_t *param)
{
    (void)arg, (void)data, (void)length, (void)param;
    net_am_hdr_t h;
    if (header_length == sizeof(h)) {
        memcpy(&h, header, sizeof(h));
        struct eng_net_comm *nc = comm_by_id(&h, "goodbye");
        if (nc && h.src >= 0 && h.src < nc->nranks && nc->shadow[h.src])
            dfccl_store_release64(&((eng_seg_hdr_t *)nc->shadow[h.src])->closed, 1);
    }
    return UCS_OK;
}

/* Any other id: a stray or hostile peer's message (another program's UCX worker, a
 * scan), dropped and counted. Registered for every id a peer can name (UCX's are 16-bit):
 * libucp up to 1.16 leaves the table entries below and beyond a registered id
 * uninitialized and calls whatever is there, and reads past the table for a larger id
 * before checking it, so a message under any unregistered id could crash the rank. */
static ucs_status_t am_stray(void *arg, const void *header, size_t header_length, void *data, size_t length,
                             const ucp_am_recv_param_t *param)
{
    (void)arg, (void)header, (void)data, (void)param;
    const uint64_t n = dfccl_add_fetch_relaxed(&U.dropped, 1);
    dfccl_debug(
        "dropped an active message of %zu + %zu bytes under an id dfccl does not use (%llu dropped so "
        "far)",
        header_length, length, (unsigned long long)n);
    return UCS_OK; /* a rendezvous one is declined: UCX tells its sender */
}

/* ---- sending: the proxy ------------------------------------------------------------- */

static void send_done(void *request, ucs_status_t status, void *user_data)
{
    (void)request, (void)status, (void)user_data; /* failures reach the error handler */
}

/* The header and the payload stay untouched until the peer has the message: a step's
 * slot (and header) is reused only after the peer's credit for it. */
static int am_send(ucp_ep_h ep, int eager, unsigned id, const net_am_hdr_t *h, const void *buf, size_t len)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    prm.cb.send = send_done;
    if (eager) { /* see ep_create */
        prm.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags = UCP_AM_SEND_FLAG_EAGER;
    }
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, h, sizeof(*h), buf, len, &prm);
    if (UCS_PTR_IS_ERR(r))
        return -1;
    if (r)
        ucp_request_free(r); /* it completes on its own */
    return 0;
}

/* Move what the daemon produced, and the credits it gave, since the last visit.
 * Returns 1 if anything moved, -1 on a failed send. */
static int proxy_conn(struct eng_net_comm *nc, net_conn_t *k)
{
    const int p = k->peer;
    ucp_ep_h ep = (*ep_of(nc, k->px, p))->ep;
    int moved = 0;
    if (DFCCL_READ_ONCE(nc->dead[p]))
        return 0;
    if (peer_closed(nc, p)) {
        DFCCL_WRITE_ONCE(nc->dead[p], 1); /* it left: send it nothing more */
        return 0;
    }
    /* acquire: the daemon wrote the step's data and size before releasing `posted` */
    const uint64_t posted = dfccl_load_acquire64(&k->shadow_ctrl->posted);
    const int eager = nc->watch_pid[p] != 0;
    for (uint64_t s = k->sent_posted; s < posted; s++) {
        const uint32_t slot = (uint32_t)(s % nc->depth);
        const uint64_t len = k->shadow_ctrl->bytes[slot];
        const char *data = k->shadow_data + (uint64_t)slot * k->schunk;
        /* eager steps go in pieces that UCX need not reassemble; rendezvous ones whole */
        const uint64_t piece = eager && k->piece ? k->piece : len;
        net_am_hdr_t *h = &k->hdr[(size_t)slot * k->npiece];
        if (len > k->schunk)
            return -1; /* the daemon never writes more than a step */
        uint64_t off = 0;
        do {
            const uint64_t n = len - off < piece ? len - off : piece;
            *h = (net_am_hdr_t){.dst = nc->peer_id[p],
                                .src = nc->rank,
                                .key = nc->peer_key[p],
                                .idx = k->idx,
                                .off = (uint32_t)off,
                                .step = s,
                                .total = len};
            if (am_send(ep, eager, AM_STEP, h++, data + off, n))
                return -1;
            off += n;
        } while (off < len);
        k->sent_posted = s + 1;
        moved = 1;
    }
    const uint64_t consumed = dfccl_load_acquire64(&k->local_ctrl->consumed);
    if (consumed > k->sent_consumed) {
        net_am_hdr_t *h = &k->cred[k->ncred++ % NET_VALS];
        *h = (net_am_hdr_t){
            .dst = nc->peer_id[p], .src = nc->rank, .idx = k->idx, .key = nc->peer_key[p], .step = consumed};
        if (am_send(ep, 0, AM_CREDIT, h, NULL, 0))
            return -1;
        k->sent_consumed = consumed;
        moved = 1;
    }
    return moved;
}

/* Same-host peers' endpoints carry no error handling (see ep_create): a peer whose
 * process is gone is found here. Called with P's lock held. */
static void watch_peers(net_proxy_t *P)
{
    for (net_ep_t *e = P->eps; e; e = e->next)
        if (e->pid && !e->failed && kill(e->pid, 0) != 0 && errno == ESRCH)
            ep_failed(e, "its process exited");
}

/* Wait for an operation (flush, close) to finish, progressing the worker; gives up
 * after `ns` (a peer that stopped answering). Returns 0 when it finished. */
static int wait_request(ucp_worker_h worker, ucs_status_ptr_t r, uint64_t ns)
{
    if (!UCS_PTR_IS_PTR(r))
        return 0;
    const uint64_t t0 = eng_now_ns();
    while (ucp_request_check_status(r) == UCS_INPROGRESS && eng_now_ns() - t0 < ns)
        ucp_worker_progress(worker);
    const int done = ucp_request_check_status(r) != UCS_INPROGRESS;
    if (!done)
        ucp_request_cancel(worker, r);
    ucp_request_free(r);
    return done ? 0 : -1;
}

/* Closes and frees an endpoint no communicator uses, taken off its list. FORCE is valid
 * only where both ends handle errors (another host's peer: it takes our leaving for a
 * failure of a communicator it has already said goodbye to); a same-host endpoint,
 * created without error handling, is flushed and closed. Called with its proxy's lock
 * held, not from within UCX's progress (it progresses the worker). */
static void ep_close(net_proxy_t *P, net_ep_t *e)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    if (e->peer_mode) {
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
    }
    wait_request(P->worker, ucp_ep_close_nbx(e->ep, &prm), 1000000000ull);
    free(e);
}

/* Closes P's retired endpoints that no communicator uses any more; `all`: every unused
 * one (the worker is going). Called with P's lock held, outside UCX's progress. */
static void ep_reap(net_proxy_t *P, int all)
{
    for (net_ep_t **pp = &P->eps; *pp;) {
        net_ep_t *e = *pp;
        if (e->refs == 0 && (e->retired || all)) {
            *pp = e->next;
            ep_close(P, e);
        } else {
            pp = &e->next;
        }
    }
}

static void *proxy_main(void *arg)
{
    net_proxy_t *P = arg;
    uint64_t last_move = eng_now_ns(), last_watch = last_move;
    for (;;) {
        int moved = 0;
        pthread_mutex_lock(&P->lock);
        if (dfccl_load_acquire(&U.stop)) {
            pthread_mutex_unlock(&P->lock);
            break;
        }
        const uint64_t t = eng_now_ns();
        if (t - last_watch > NET_WATCH_NS) {
            last_watch = t;
            watch_peers(P);
        }
        for (struct eng_net_comm *nc = U.comms; nc; nc = nc->next) {
            if (net_aborted(nc))
                continue;
            for (size_t i = 0; i < nc->nconns; i++) {
                if (nc->conns[i].px != P->idx)
                    continue;
                int r = proxy_conn(nc, &nc->conns[i]);
                if (r < 0) {
                    dfccl_error("communicator %016llx: send to peer rank %d failed; communicator aborted",
                                (unsigned long long)nc->uid, nc->conns[i].peer);
                    net_abort(nc);
                    break;
                }
                moved |= r;
            }
        }
        while (ucp_worker_progress(P->worker))
            moved = 1;
        ep_reap(P, 0); /* endpoints that failed in there, if unused */
        pthread_mutex_unlock(&P->lock);

        uint64_t now = eng_now_ns();
        if (moved) {
            last_move = now;
        } else if (now - last_move < 2000000ull) {
            sched_yield(); /* traffic is recent: stay quick */
        } else {
            /* idle: sleep until the network has something, or 1 ms for local steps */
            pthread_mutex_lock(&P->lock);
            ucs_status_t st = ucp_worker_arm(P->worker);
            pthread_mutex_unlock(&P->lock);
            if (st == UCS_OK) {
                struct pollfd pfd = {.fd = P->efd, .events = POLLIN};
                poll(&pfd, 1, 1);
            }
        }
    }
    return NULL;
}

/* Stops and destroys proxies [0, n) and the context. Called with U.lock held and no
 * proxy lock. */
static void proxies_stop(uint32_t n, uint32_t running)
{
    dfccl_store_release(&U.stop, 1);
    for (uint32_t i = 0; i < running; i++)
        pthread_join(U.px[i].thread, NULL);
    for (uint32_t i = 0; i < n; i++) {
        if (U.px[i].worker) {
            pthread_mutex_lock(&U.px[i].lock);
            ep_reap(&U.px[i], 1); /* no communicator is left to use them */
            pthread_mutex_unlock(&U.px[i].lock);
            ucp_worker_destroy(U.px[i].worker);
        }
        U.px[i].worker = NULL;
        pthread_mutex_destroy(&U.px[i].lock);
    }
    if (U.ctx)
        ucp_cleanup(U.ctx);
    U.ctx = NULL;
    U.nproxies = 0;
}

/* Called with U.lock held and no proxy lock. */
static void proxy_release_locked(void)
{
    if (--U.refs > 0)
        return;
    proxies_stop(U.nproxies, U.nproxies);
}

static ucs_status_t set_handler(net_proxy_t *P, unsigned id, ucp_am_recv_callback_t cb)
{
    ucp_am_handler_param_t hp;
    memset(&hp, 0, sizeof(hp));
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_FLAGS | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id = id;
    hp.cb = cb;
    hp.arg = P;
    hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    return ucp_worker_set_am_recv_handler(P->worker, &hp);
}

/* dfccl's three ids, and the dropping one for every other id a peer can send (am_stray):
 * 64 Ki entries of libucp's table, about 1.5 MiB a worker, set in a few ms */
static ucs_status_t set_handlers(net_proxy_t *P)
{
    ucs_status_t st = UCS_OK;
    for (uint32_t id = 0; id <= UINT16_MAX && st == UCS_OK; id++)
        st = set_handler(P, id,
                         id == AM_STEP     ? am_step
                         : id == AM_CREDIT ? am_credit
                         : id == AM_BYE    ? am_bye
                                           : am_stray);
    return st;
}

/* UCX's tcp moves a message in segments of UCX_TCP_TX_SEG_SIZE / RX_SEG_SIZE, 8 KiB by
 * default: a 64 KiB step then takes 8 sends and receives, and tcp between ranks moved
 * 2.5 GB/s against ucx_perftest's 3.7-4.1; with segments that hold a whole step, 4.4
 * (bench/RESULTS.md, "What the defaults rest on"). So this context's segments hold the largest step and its
 * header, unless the user set them. Every rank computes the same size from the same
 * step knobs. */
static void tcp_segments(ucp_config_t *cfg)
{
    uint64_t step =
        eng_config.chunk_size > eng_config.gpu_net_chunk ? eng_config.chunk_size : eng_config.gpu_net_chunk;
    step = step > NET_TCP_SEG_MAX ? NET_TCP_SEG_MAX : step;
    char v[32];
    snprintf(v, sizeof(v), "%llu", (unsigned long long)(step + 1024));
    /* ucp_config_modify takes a transport's field without its prefix (TCP_): only tcp
     * has these two */
    static const char *const names[] = {"TX_SEG_SIZE", "RX_SEG_SIZE"};
    if (getenv("UCX_TCP_TX_SEG_SIZE") || getenv("UCX_TCP_RX_SEG_SIZE"))
        return; /* the user's: one of them alone must not be paired with ours */
    for (int i = 0; i < 2; i++) {
        ucs_status_t st = ucp_config_modify(cfg, names[i], v);
        if (st == UCS_OK)
            dfccl_debug("UCX_TCP_%s=%s for the net transport's context", names[i], v);
        else
            dfccl_debug("UCX_TCP_%s=%s not applied: %s", names[i], v, ucs_status_string(st));
    }
}

/* One context per process, DFCCL_NET_THREADS workers and proxy threads, shared by every
 * communicator. Called with U.lock held. */
static dfcclResult_t proxy_acquire_locked(void)
{
    if (U.refs++ > 0)
        return dfcclSuccess;
    ucp_config_t *cfg;
    ucs_status_t st = ucp_config_read(NULL, NULL, &cfg); /* UCX_* variables pass through */
    if (st != UCS_OK) {
        U.refs--;
        return ucs_error("ucp_config_read", st);
    }
    tcp_segments(cfg);
    const uint32_t n = eng_config.net_threads; /* >= 1: config resolves 0 (auto) */
    ucp_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    p.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    p.mt_workers_shared = n > 1; /* the proxies' workers share the context from their threads */
    st = ucp_init(&p, cfg, &U.ctx);
    ucp_config_release(cfg);
    if (st != UCS_OK) {
        U.ctx = NULL;
        U.refs--;
        return ucs_error("ucp_init", st);
    }
    /* the memory types this UCX carries: CUDA ones only where it was built with CUDA and
     * its cuda transports loaded (eng_net_describe says so) */
    ucp_context_attr_t ca;
    memset(&ca, 0, sizeof(ca));
    ca.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    U.mem_types = ucp_context_query(U.ctx, &ca) == UCS_OK ? ca.memory_types : UCS_BIT(UCS_MEMORY_TYPE_HOST);
    U.stop = 0;
    uint32_t made = 0, running = 0;
    dfcclResult_t res = dfcclSuccess;
    for (; made < n; made++) {
        net_proxy_t *P = &U.px[made];
        *P = (net_proxy_t){.idx = made};
        pthread_mutex_init(&P->lock, NULL);
        ucp_worker_params_t wp;
        memset(&wp, 0, sizeof(wp));
        wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wp.thread_mode = UCS_THREAD_MODE_SERIALIZED; /* every call under P->lock */
        if ((st = ucp_worker_create(U.ctx, &wp, &P->worker)) != UCS_OK ||
            (st = ucp_worker_get_efd(P->worker, &P->efd)) != UCS_OK || (st = set_handlers(P)) != UCS_OK) {
            res = ucs_error("ucp_worker_create", st);
            made++;
            break;
        }
    }
    U.nproxies = made;
    for (; res == dfcclSuccess && running < made; running++) {
        int e = pthread_create(&U.px[running].thread, NULL, proxy_main, &U.px[running]);
        if (e) {
            res = eng_set_error(dfcclSystemError, "ucx", "pthread_create of proxy %u: %s", running,
                                strerror(e));
            break;
        }
    }
    if (res != dfcclSuccess) {
        proxies_stop(made, running);
        U.refs--;
    }
    return res;
}

/* ---- communicators -------------------------------------------------------------------- */

/* Exchanged at set-up (net_boot_hdr_t); the worker addresses follow the header. */

static dfcclResult_t exchange(const void *mine, size_t len, char **all_p, size_t *stride_p, int nranks,
                              dfcclAllgatherFn_t ag, void *ctx)
{
    uint64_t l = len, *lens = calloc((size_t)nranks, sizeof(uint64_t));
    if (!lens)
        return dfcclNoMemory;
    if (ag(&l, lens, sizeof(l), ctx)) {
        free(lens);
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    }
    uint64_t mx = 0;
    for (int i = 0; i < nranks; i++)
        mx = lens[i] > mx ? lens[i] : mx;
    free(lens);
    char *pad = calloc(1, mx), *all = calloc((size_t)nranks, mx);
    if (!pad || !all) {
        free(pad);
        free(all);
        return dfcclNoMemory;
    }
    memcpy(pad, mine, len);
    int r = ag(pad, all, mx, ctx);
    free(pad);
    if (r) {
        free(all);
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    }
    *all_p = all;
    *stride_p = mx;
    return dfcclSuccess;
}

/* "Same host" for the endpoint's error mode and the process watch: the host name the
 * rank reports (DFCCL_HOST, else gethostname: ranks that claim different hosts are
 * treated as such), the kernel's boot id (two machines may report one name) and the pid
 * namespace (processes in different containers cannot see each other's pids). */
static void where_am_i(char *buf, size_t len)
{
    char boot[40] = {0};
    const char *name = eng_config.host;
    struct stat ns;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof(boot), f))
            boot[0] = 0;
        fclose(f);
    }
    boot[strcspn(boot, "\n")] = 0;
    if (stat("/proc/self/ns/pid", &ns) != 0)
        ns.st_ino = 0;
    memset(buf, 0, len);
    snprintf(buf, len, "%s/%s/%llu", name, boot, (unsigned long long)ns.st_ino);
}

/* An endpoint to a peer's worker. UCX admits only transports that can report a peer's
 * failure to an endpoint in UCP_ERR_HANDLING_MODE_PEER; on one host that excludes shared
 * memory and cma, and the traffic then crawls over tcp. So a peer on the same host
 * (reached over UCX when forced for testing) gets an endpoint without error handling,
 * and the proxy watches its process instead (watch_peers); a peer on another host gets
 * PEER mode (rc, dc, ud and tcp all support it). Without error handling a transport
 * error is fatal to the process, and a rendezvous (cma) from a peer that just died is
 * one: steps to same-host peers travel eager, through shared-memory buffers only. */
static ucs_status_t ep_create(ucp_worker_h worker, const void *addr, int peer_mode, net_ep_t *e)
{
    ucp_ep_params_t ep;
    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = (const ucp_address_t *)addr;
    ep.err_mode = peer_mode ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    if (peer_mode) {
        ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.err_handler.cb = peer_failed;
        ep.err_handler.arg = e;
    }
    return ucp_ep_create(worker, &ep, &e->ep);
}

/* At DFCCL_LOG_LEVEL=debug: the UCX transports (lanes) and protocol ranges UCX chose for
 * the endpoint, from ucp_ep_print_info. */
static void ep_describe(ucp_ep_h ep, int peer, uint32_t worker)
{
    if (eng_log_level < DFCCL_LOG_DEBUG)
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    ucp_ep_print_info(ep, f);
    fclose(f);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line += strspn(line, "# ");
        if (!strncmp(line, "lane[", 5) || !strncmp(line, "am_send", 7))
            dfccl_debug("peer rank %d, worker %u: %s", peer, worker, line);
    }
    free(text);
}

/* A reference to P's endpoint to the worker at `addr` of the process `pid` on `host`
 * (pid 0: another host), made if the cache has none. An unretired endpoint to another
 * worker of that process is retired: the process made a new worker, so the old one is
 * gone. Called with P's lock held; NULL and *st_p on failure. */
static net_ep_t *ep_get(net_proxy_t *P, const void *addr, size_t addr_len, const char *host, int32_t pid,
                        int peer_mode, int peer, ucs_status_t *st_p)
{
    for (net_ep_t *e = P->eps; e; e = e->next) {
        if (e->retired)
            continue;
        if (e->addr_len == addr_len && !memcmp(e->addr, addr, addr_len) && e->peer_mode == peer_mode) {
            e->refs++;
            return e;
        }
        if (pid && e->pid == pid && !strncmp(e->host, host, sizeof(e->host)))
            e->retired = 1; /* closed by ep_reap once unused */
    }
    net_ep_t *e = calloc(1, sizeof(*e) + addr_len);
    if (!e) {
        *st_p = UCS_ERR_NO_MEMORY;
        return NULL;
    }
    *e = (net_ep_t){.px = P->idx, .peer_mode = peer_mode, .pid = pid, .refs = 1, .addr_len = addr_len};
    snprintf(e->host, sizeof(e->host), "%s", host);
    memcpy(e->addr, addr, addr_len);
    if ((*st_p = ep_create(P->worker, addr, peer_mode, e)) != UCS_OK) {
        free(e);
        return NULL;
    }
    ep_describe(e->ep, peer, P->idx);
    e->next = P->eps;
    P->eps = e;
    return e;
}

/* A communicator lets go of endpoint e; a retired one is closed when unused. Called with
 * e's proxy lock held, outside UCX's progress. */
static void ep_put(net_ep_t *e)
{
    if (--e->refs == 0 && e->retired)
        ep_reap(&U.px[e->px], 0);
}

/* Called with U.lock and every proxy lock held. */
static void net_free_locked(struct eng_net_comm *nc)
{
    const int N = nc->nranks;
    if (U.by_id[nc->id % NET_MAX_COMMS] == nc)
        U.by_id[nc->id % NET_MAX_COMMS] = NULL;
    for (uint32_t i = 0; nc->ep && i < nc->npx; i++)
        for (int p = 0; p < N; p++)
            if (*ep_of(nc, i, p))
                ep_put(*ep_of(nc, i, p)); /* shared: it stays for the peer's later communicators */
    for (int p = 0; nc->shadow && p < N; p++)
        free(nc->shadow[p]);
    for (size_t i = 0; nc->conns && i < nc->nconns; i++) {
        free(nc->conns[i].hdr);
        free(nc->conns[i].got);
        free(nc->conns[i].pend);
    }
    free(nc->shadow);
    free(nc->ep);
    free(nc->peer_id);
    free(nc->peer_key);
    free(nc->watch_pid);
    free(nc->peer_first);
    free(nc->peer_count);
    free(nc->dead);
    free(nc->bye);
    free(nc->conns);
    free(nc);
}

/* A free id: ids index the handlers' table, and one a peer still sends to (a late
 * message) must not name a new communicator soon. */
static int take_id_locked(struct eng_net_comm *nc)
{
    for (uint32_t tries = 0; tries < NET_MAX_COMMS; tries++) {
        const uint32_t id = ++U.next_id;
        if (id && !U.by_id[id % NET_MAX_COMMS]) {
            nc->id = id;
            U.by_id[id % NET_MAX_COMMS] = nc;
            return 0;
        }
    }
    return -1;
}

/* A communicator's key, drawn from the kernel's random pool (a few bytes: getrandom returns
 * them whole, unless a signal interrupts it before). */
static int draw_key(uint64_t *key)
{
    for (;;) {
        const ssize_t n = getrandom(key, sizeof(*key), 0);
        if (n == (ssize_t)sizeof(*key))
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

dfcclResult_t eng_net_setup(const eng_net_layout_t *L, dfcclAllgatherFn_t ag, void *ctx, eng_net_t **net_p)
{
    const int N = L->nranks, me = L->rank;
    dfcclResult_t res = dfcclSuccess;
    char *blob = NULL, *all = NULL;
    void *addr[ENG_MAX_NET_THREADS] = {0};
    size_t addr_len[ENG_MAX_NET_THREADS] = {0}, addr_sum = 0, stride = 0;
    int nnet = 0;
    *net_p = NULL;
    for (int p = 0; p < N; p++)
        nnet += p != me && L->shadow_size[p] > 0;

    pthread_mutex_lock(&U.lock);
    struct eng_net_comm *nc = calloc(1, sizeof(*nc));
    if (!nc) {
        pthread_mutex_unlock(&U.lock);
        return eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
    }
    nc->uid = L->uid;
    nc->rank = me;
    nc->nranks = N;
    nc->depth = L->depth;
    nc->bell = L->seg ? &((eng_seg_hdr_t *)L->seg)->bell : NULL;
    nc->abort_words[0] = L->abort_words[0];
    nc->abort_words[1] = L->abort_words[1];
    /* a local failure is reported through the exchange below: every rank takes part
     * in every allgather, so nobody waits for a rank that gave up */
    const int acquired = (res = proxy_acquire_locked()) == dfcclSuccess;
    if (!acquired)
        goto local_done;
    const uint32_t mypx = U.nproxies;
    nc->shadow = calloc((size_t)N, sizeof(char *));
    nc->ep = calloc((size_t)N * mypx, sizeof(net_ep_t *));
    nc->peer_id = calloc((size_t)N, sizeof(uint32_t));
    nc->peer_key = calloc((size_t)N, sizeof(uint64_t));
    nc->watch_pid = calloc((size_t)N, sizeof(int32_t));
    nc->peer_first = calloc((size_t)N, sizeof(size_t));
    nc->peer_count = calloc((size_t)N, sizeof(uint32_t));
    nc->dead = calloc((size_t)N, 1);
    nc->bye = calloc((size_t)N, sizeof(net_am_hdr_t));
    nc->conns = calloc(L->nconns ? L->nconns : 1, sizeof(net_conn_t));
    if (!nc->shadow || !nc->ep || !nc->peer_id || !nc->peer_key || !nc->watch_pid || !nc->peer_first ||
        !nc->peer_count || !nc->dead || !nc->bye || !nc->conns) {
        res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
        goto local_done;
    }
    if (draw_key(&nc->key)) { /* before the table shows nc to the handlers */
        res = eng_set_error(dfcclSystemError, "dfcclCommInit", "getrandom for a communicator key: %s",
                            strerror(errno));
        goto local_done;
    }
    lock_proxies(); /* the handlers read the table */
    int no_id = take_id_locked(nc);
    unlock_proxies();
    if (no_id) {
        res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "more than %d communicators with net peers",
                            NET_MAX_COMMS);
        goto local_done;
    }
    for (int p = 0; p < N && res == dfcclSuccess; p++) {
        if (p == me || !L->shadow_size[p])
            continue;
        if (posix_memalign((void **)&nc->shadow[p], ENG_PAGE, L->shadow_size[p])) {
            nc->shadow[p] = NULL;
            res =
                eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for a shadow of rank %d's FIFOs", p);
            break;
        }
        memset(nc->shadow[p], 0, L->shadow_size[p]);
    }
    /* the connections, grouped by peer in the layout's order (the peer lists its
     * connections with me in the same order: that is how a message names one) */
    for (size_t i = 0; i < L->nconns && res == dfcclSuccess; i++) {
        const eng_net_conn_desc_t *d = &L->conns[i];
        net_conn_t *k = &nc->conns[nc->nconns++];
        if (nc->peer_count[d->peer] == 0)
            nc->peer_first[d->peer] = i;
        else if (nc->peer_first[d->peer] + nc->peer_count[d->peer] != i)
            res = eng_set_error(dfcclInternalError, "dfcclCommInit", "net connections not grouped by peer");
        k->peer = d->peer;
        k->idx = nc->peer_count[d->peer]++;
        k->schunk = d->schunk;
        k->rchunk = d->rchunk;
        k->shadow_ctrl = (eng_conn_ctrl_t *)(nc->shadow[d->peer] + d->shadow_off);
        k->shadow_data = (char *)k->shadow_ctrl + L->ctrl_bytes;
        k->local_ctrl = (eng_conn_ctrl_t *)(L->seg + d->recv_off);
        k->local_data = (char *)k->local_ctrl + L->ctrl_bytes;
        if (eng_config.net_piece && eng_config.net_piece < k->schunk) {
            uint64_t n = (k->schunk + eng_config.net_piece - 1) / eng_config.net_piece;
            n = n > NET_MAX_PIECES ? NET_MAX_PIECES : n;
            k->npiece = (uint32_t)n;
            k->piece = (k->schunk + n - 1) / n; /* n pieces of this size cover a step */
        } else {
            k->npiece = 1;
            k->piece = 0;
        }
        k->hdr = calloc((size_t)L->depth * k->npiece, sizeof(net_am_hdr_t));
        k->got = calloc(L->depth, sizeof(uint64_t));
        k->pend = calloc(L->depth, sizeof(net_pend_t));
        if (!k->hdr || !k->got || !k->pend)
            res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
    }
    for (uint32_t i = 0; i < mypx && res == dfcclSuccess; i++) {
        pthread_mutex_lock(&U.px[i].lock);
        if (ucp_worker_get_address(U.px[i].worker, (ucp_address_t **)&addr[i], &addr_len[i]) != UCS_OK) {
            addr[i] = NULL;
            addr_len[i] = 0;
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "ucp_worker_get_address failed");
        }
        pthread_mutex_unlock(&U.px[i].lock);
        addr_sum += addr_len[i];
    }

local_done:;
    /* blob: status, header, the workers' addresses */
    size_t len = sizeof(int32_t) + sizeof(net_boot_hdr_t) + addr_sum;
    blob = calloc(1, len);
    if (blob) {
        int32_t st = res;
        memcpy(blob, &st, sizeof(st));
        net_boot_hdr_t h;
        memset(&h, 0, sizeof(h));
        h.id = nc->id;
        h.key = nc->key;
        h.pid = (int32_t)getpid();
        h.npx = res == dfcclSuccess ? U.nproxies : 0;
        char *at = blob + sizeof(st) + sizeof(h);
        for (uint32_t i = 0; i < h.npx; i++) {
            h.addr_len[i] = (uint32_t)addr_len[i];
            memcpy(at, addr[i], addr_len[i]);
            at += addr_len[i];
        }
        where_am_i(h.host, sizeof(h.host));
        memcpy(blob + sizeof(st), &h, sizeof(h));
    } else {
        len = 0;
    }
    for (uint32_t i = 0; i < ENG_MAX_NET_THREADS; i++)
        if (addr[i]) {
            pthread_mutex_lock(&U.px[i].lock);
            ucp_worker_release_address(U.px[i].worker, (ucp_address_t *)addr[i]);
            pthread_mutex_unlock(&U.px[i].lock);
        }
    pthread_mutex_unlock(&U.lock);

    /* collective: every rank exchanges, so that a local failure fails everyone */
    dfcclResult_t xres = exchange(blob, len, &all, &stride, N, ag, ctx);
    pthread_mutex_lock(&U.lock);
    if (xres != dfcclSuccess && res == dfcclSuccess)
        res = xres;
    nc->npx = U.nproxies;
    for (int p = 0; p < N && res == dfcclSuccess && all; p++) {
        int32_t st;
        net_boot_hdr_t h;
        memcpy(&st, all + (size_t)p * stride, sizeof(st));
        memcpy(&h, all + (size_t)p * stride + sizeof(int32_t), sizeof(h));
        if (st < 0)
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "rank %d could not set up UCX", p);
        else if (h.npx < nc->npx)
            nc->npx = h.npx; /* the fewest proxies any rank runs: lanes map alike everywhere */
    }
    for (size_t i = 0; i < nc->nconns && res == dfcclSuccess; i++)
        nc->conns[i].px = L->conns[i].lane % nc->npx;
    /* an endpoint from each of my first npx workers to the peer's worker of the same index,
     * from the worker's cache when another communicator has one already */
    char myhost[128];
    where_am_i(myhost, sizeof(myhost));
    for (int p = 0; p < N && res == dfcclSuccess; p++) {
        if (p == me || !L->shadow_size[p])
            continue;
        net_boot_hdr_t h;
        memcpy(&h, all + (size_t)p * stride + sizeof(int32_t), sizeof(h));
        const char *paddr = all + (size_t)p * stride + sizeof(int32_t) + sizeof(h);
        const int same_host = !strncmp(h.host, myhost, sizeof(h.host));
        nc->peer_id[p] = h.id;
        nc->peer_key[p] = h.key;
        nc->watch_pid[p] = same_host ? h.pid : 0;
        for (uint32_t i = 0; i < nc->npx && res == dfcclSuccess; paddr += h.addr_len[i], i++) {
            ucs_status_t st = UCS_OK;
            pthread_mutex_lock(&U.px[i].lock);
            *ep_of(nc, i, p) =
                ep_get(&U.px[i], paddr, h.addr_len[i], h.host, nc->watch_pid[p], !same_host, p, &st);
            pthread_mutex_unlock(&U.px[i].lock);
            if (st != UCS_OK)
                res = eng_set_error(dfcclSystemError, "dfcclCommInit",
                                    "ucp_ep_create(rank %d, worker %u): %s", p, i, ucs_status_string(st));
        }
    }
    free(blob);
    free(all);
    pthread_mutex_unlock(&U.lock);

    /* every rank's endpoints exist before anyone sends */
    int32_t st = res, *sts = calloc((size_t)N, sizeof(int32_t));
    if (!sts || ag(&st, sts, sizeof(st), ctx)) {
        if (res == dfcclSuccess)
            res = eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    } else {
        for (int p = 0; p < N; p++)
            if (sts[p] < 0 && res == dfcclSuccess)
                res = eng_set_error(dfcclSystemError, "dfcclCommInit", "rank %d failed to set up UCX", p);
    }
    free(sts);

    pthread_mutex_lock(&U.lock);
    if (res != dfcclSuccess) {
        if (acquired) {
            lock_proxies();
            nc->closing = 1;
            net_free_locked(nc);
            unlock_proxies();
            proxy_release_locked();
        } else {
            free(nc);
        }
        pthread_mutex_unlock(&U.lock);
        return res;
    }
    lock_proxies();
    nc->next = U.comms;
    U.comms = nc;
    /* an endpoint that failed since this rank took it had no way to tell us */
    for (uint32_t i = 0; i < nc->npx; i++)
        for (int p = 0; p < N; p++)
            if (*ep_of(nc, i, p) && (*ep_of(nc, i, p))->failed && !nc->dead[p])
                peer_lost(nc, p, "its endpoint failed during set-up");
    unlock_proxies();
    pthread_mutex_unlock(&U.lock);
    int watched = 0;
    for (int p = 0; p < N; p++)
        watched += nc->watch_pid[p] != 0;
    char pieces[48] = "whole";
    if (eng_config.net_piece)
        snprintf(pieces, sizeof(pieces), "in pieces of at most %llu bytes",
                 (unsigned long long)eng_config.net_piece);
    dfccl_info("communicator %016llx rank %d: %d peer(s) over UCX: %d on other hosts (error-reporting "
               "endpoints), %d on this host (process watched, eager steps %s); %u proxy thread(s)%s",
               (unsigned long long)L->uid, me, nnet, nnet - watched, watched, pieces, nc->npx,
               eng_config.net_threads_auto ? " (DFCCL_NET_THREADS auto: one per 2 cores of the rank, up to 4)"
                                           : "");
    *net_p = nc;
    return dfcclSuccess;
}

int eng_net_describe(char *buf, size_t len)
{
    static const struct {
        ucs_memory_type_t t;
        const char *name;
    } kinds[] = {{UCS_MEMORY_TYPE_HOST, "host"},
                 {UCS_MEMORY_TYPE_CUDA, "cuda"},
                 {UCS_MEMORY_TYPE_CUDA_MANAGED, "cuda-managed"},
                 {UCS_MEMORY_TYPE_ROCM, "rocm"}};
    pthread_mutex_lock(&U.lock);
    const uint64_t types = U.mem_types;
    pthread_mutex_unlock(&U.lock);
    size_t off = (size_t)snprintf(buf, len, "UCX %s, memory types:", ucp_get_version_string());
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && off < len; i++)
        if (types & UCS_BIT(kinds[i].t))
            off += (size_t)snprintf(buf + off, len - off, " %s", kinds[i].name);
    return (types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

char *eng_net_shadow(eng_net_t *nc, int p)
{
    return nc && p >= 0 && p < nc->nranks ? nc->shadow[p] : NULL;
}

int eng_net_teardown(eng_net_t *nc)
{
    if (!nc)
        return 0;
    pthread_mutex_lock(&U.lock);
    lock_proxies();
    /* steps the daemon posted before the last collective completed here may not have
     * gone out yet: push them (the peers may still need them), then say goodbye, so
     * that peers still running the collective see a clean departure, not a failure */
    for (int pass = 0, moved = 1; moved && pass < 1000000; pass++) {
        moved = 0;
        for (size_t i = 0; i < nc->nconns; i++)
            if (proxy_conn(nc, &nc->conns[i]) > 0)
                moved = 1;
        for (uint32_t i = 0; i < nc->npx; i++)
            ucp_worker_progress(U.px[i].worker);
    }
    /* a goodbye to each peer on every worker: the peer's proxy that sees one of our
     * endpoints close must already know we left, not take it for a failure */
    for (int p = 0; p < nc->nranks; p++) {
        if (nc->dead[p])
            continue;
        nc->bye[p] = (net_am_hdr_t){.dst = nc->peer_id[p], .src = nc->rank, .key = nc->peer_key[p]};
        for (uint32_t i = 0; i < nc->npx; i++)
            if (*ep_of(nc, i, p))
                am_send((*ep_of(nc, i, p))->ep, 0, AM_BYE, &nc->bye[p], NULL, 0);
    }
    /* from here on, messages for this communicator are dropped by the handlers */
    nc->closing = 1;
    for (uint32_t i = 0; i < nc->npx; i++) {
        ucp_request_param_t prm;
        memset(&prm, 0, sizeof(prm));
        wait_request(U.px[i].worker, ucp_worker_flush_nbx(U.px[i].worker, &prm),
                     2000000000ull); /* everything has landed */
    }
    /* rendezvous receives still writing into the caller's segment finish first: UCX
     * cannot cancel one (ucp_request_cancel acts on tag receives only), and a peer that
     * failed completes it with an error (its endpoint handles errors: rendezvous runs
     * to other hosts only) */
    const uint64_t t0 = eng_now_ns();
    while (dfccl_load_relaxed(&nc->inflight) && eng_now_ns() - t0 < 2000000000ull)
        for (uint32_t i = 0; i < nc->npx; i++)
            ucp_worker_progress(U.px[i].worker);
    const uint64_t left = dfccl_load_relaxed(&nc->inflight);
    if (left)
        dfccl_warn("communicator %016llx: %llu receive(s) from the net still in flight 2 s into teardown; "
                   "the memory they land in stays mapped (leaked)",
                   (unsigned long long)nc->uid, (unsigned long long)left);
    for (struct eng_net_comm **pp = &U.comms; *pp; pp = &(*pp)->next)
        if (*pp == nc) {
            *pp = nc->next;
            break;
        }
    if (left) {
        /* their completions still name nc and write into the caller's segment: keep nc
         * (and the proxies), and tell the caller to keep the segment mapped */
        if (U.by_id[nc->id % NET_MAX_COMMS] == nc)
            U.by_id[nc->id % NET_MAX_COMMS] = NULL;
        unlock_proxies();
        pthread_mutex_unlock(&U.lock);
        return 1;
    }
    net_free_locked(nc);
    unlock_proxies();
    proxy_release_locked();
    pthread_mutex_unlock(&U.lock);
    return 0;
}
