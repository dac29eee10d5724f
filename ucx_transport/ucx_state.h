/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport over UCX: what its parts share. One UCX context per process and
 * DFCCL_NET_THREADS proxy threads, each driving a worker of its own: the connections of
 * lane l (the channel) belong to proxy l mod threads at both ends, so channels move in
 * parallel, each proxy under its own lock. For every connection to a peer on the net the
 * daemon writes into a local *shadow* of the connection (same control words and FIFO as
 * the peer transport); the proxy sends each new step to the peer as one active message
 * (a header naming the connection and the step, the step's bytes as payload), and the
 * peer's proxy lands it in its receive FIFO and publishes the step counter. The
 * receiver's `consumed` counter travels back as a header-only message into the sender's
 * shadow, which is where the sender's daemon reads its credits. The algorithms and the
 * scheduler are unchanged: a wait on a remote peer is a wait on a local word. Where the
 * segments live is the caller's (eng_net_layout_t): the CPU daemon's shared memory
 * (ucx_conn.c), or the GPU daemon's host-pinned, device-mapped FIFOs (cuda/gpu_net.cu).
 *
 * The room, from the bottom up (each file calls only the ones above it in this list):
 *
 *   ucx_state.c  the process's UCX state (net_ucx) and how a failure spreads
 *   net_wire.h   what the proxies send each other: ids, headers, descriptions
 *   ucx_am.c     receiving: the active-message handlers (run inside UCX's progress)
 *   ucx_ep.c     the endpoint cache: one endpoint per (worker, peer worker address)
 *   ucx_proxy.c  sending, and the proxy threads with their context and workers
 *   ucx_comm.c   communicators: eng_net.h's set-up, shadows, teardown
 *   ucx_conn.c   the CPU daemon's connections: transport.h's ucx entry
 *
 * Active messages rather than puts: one message per step (no fence, no separate counter
 * put), the data copied once on arrival or fetched zero-copy (rendezvous) by UCX, and a
 * message for a communicator this rank has already destroyed is dropped by our handler
 * instead of landing in freed memory. The handlers check what a correct peer never sends
 * (comm_by_id: the communicator's random key; net_in_window: the sender's credits;
 * net_credit: steps sent): a message without the key is dropped, a violation by a peer
 * that has it aborts the communicator.
 *
 * Steps by put (DFCCL_NET_PUT=on, when every rank of the communicator asks): each rank
 * registers its receive segment once (ucp_mem_map) and the ranks exchange its address
 * and rkey at set-up. The proxy puts a step straight from the shadow into the peer's
 * slot, flushes the endpoint (the put has completed at the peer) and only then sends the
 * step's header alone (NET_STEP_PUT), which the peer's handler checks and lands as any
 * step: no copy on arrival, no reassembly, and the data never passes through the
 * peer's proxy. What the handler guarded for active messages, a put into a segment
 * already freed, the goodbye now guards: a leaving rank waits for each live peer's
 * AM_BYEACK, sent after a flush of every put to it, before its segment goes (else it
 * stays mapped: leaked, as with receives still in flight). A step of fewer than the
 * layout's put_min bytes goes as active messages even then (net_step_am: a put, its
 * flush and the header cost more), one connection mixing both kinds; with device FIFOs
 * it leaves and lands in the host-staged twins beside them.
 *
 * Endpoints belong to the process, not to a communicator: one per (worker, peer worker
 * address), found in the worker's cache and counted by the communicators that use it
 * (messages name their communicator, so they share it freely). An endpoint with no user
 * left stays cached until the worker goes (the process's last net communicator), the
 * peer's process exits or shows a new worker: closing it earlier would race a peer that
 * still uses (or has just reused) the pair, and leaves UCX state behind at the peer.
 *
 * Mismatched collectives (engine/sig.c): a step carries its collective's signature tag
 * in its header and lands with it, so the receiving daemon refuses a step of another
 * collective as it does a shared-memory peer's. What a shared-memory peer's mapped header
 * shows live (the descriptions of its collectives, its reason for an abort) a net peer
 * sends on request: a stalled collective's diagnosis asks (transport.h's ask: AM_ASK to
 * every net peer, at most every NET_ASK_NS), each peer's proxy answers with its header's
 * descriptions (AM_DESC), and mine copies them into the header of my shadow of it, where
 * the next diagnosis reads them. A rank that aborts on a mismatch sends its descriptions
 * with the news (tell), and each receiver marks itself, as the shared-memory mark does.
 * All of it goes through proxy 0's endpoints, only while something has stalled.
 *
 * A peer whose endpoint fails (killed process, lost link) aborts every communicator
 * using that endpoint, so their pending collectives fail instead of hanging; the
 * endpoint leaves the cache. The proxy spins while there is traffic and sleeps on the
 * worker's event fd when idle. */
#ifndef DFCCL_UCX_STATE_H
#define DFCCL_UCX_STATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

#include "eng_atomic.h"
#include "eng_config.h"
#include "eng_net.h"
#include "eng_types.h"
#include "net_landing.h"
#include "net_wire.h"

#define NET_VALS        64           /* stable headers of credit messages, reused after 64 more */
#define NET_MAX_COMMS   4096         /* live net communicators per process (ids index a table) */
#define NET_WATCH_NS    100000000ull /* how often same-host peers' processes are checked */
#define NET_TCP_SEG_MAX (1ull << 20) /* largest tcp segment set for a step (see tcp_segments) */

#define NET_ASK_NS 5000000ull /* asks for the peers' descriptions at most this often */

/* How long a teardown waits for its peers, its phases together (steps pushed, puts
 * flushed, goodbyes answered, receives landed): room for a slow peer on a busy machine,
 * whose late answer would cost a leak, yet short enough that a stuck peer stalls this
 * process's other net communicators (their proxies are held meanwhile) for seconds, not
 * minutes. A peer silent for this long is stuck, and what it could still write into
 * stays mapped (leaked, with a warning) */
#define NET_BYE_NS 10000000000ull

#define NET_MAX_PIECES 64 /* eager messages per step at most (DFCCL_NET_PIECE is raised to fit) */

struct eng_net_comm;
typedef struct net_conn net_conn_t;

/* A step arriving by rendezvous: what its completion publishes. */
typedef struct {
    struct eng_net_comm *nc;
    net_conn_t *k;
    uint64_t step;
    uint32_t tag;
} net_pend_t;

/* A flush (steps by put): of connection k's endpoint, after its puts of the steps below
 * `upto`, whose headers then go; or (k NULL) of proxy px's endpoint to `peer`, which
 * left: the goodbye's answer then goes. Busy from the flush to its completion. */
typedef struct {
    struct eng_net_comm *nc;
    net_conn_t *k;
    uint64_t upto;
    int peer;
    uint32_t px;
    int busy;
} net_flush_t;

struct net_conn {
    int peer;
    uint32_t idx;
    uint32_t px;                  /* the proxy (and worker) that moves it */
    uint64_t schunk, rchunk;      /* bytes per step, me -> peer and peer -> me */
    eng_conn_ctrl_t *shadow_ctrl; /* me -> peer: written by my daemon, credited by the peer */
    char *shadow_data;
    eng_conn_ctrl_t *local_ctrl; /* peer -> me: in my receive segment */
    char *local_data;
    char *stage_shadow, *stage_local; /* the data beside the control words (the shadow's and
                                         the segment's), host memory: where every step as
                                         active messages leaves and lands (with device
                                         FIFOs: the host-staged twins, net_step_am) */
    uint64_t sent_posted, sent_consumed;
    net_landing_t in;  /* receiver: steps published, slots landed beyond them */
    uint64_t *got;     /* [depth]: receiver: bytes of each slot's step landed so far */
    uint64_t piece;    /* sender: bytes per eager message (0: the whole step in one) */
    uint32_t npiece;   /* headers per slot: the most messages a step is sent in */
    net_am_hdr_t *hdr; /* [depth][npiece]: the step messages' headers */
    net_pend_t *pend;  /* [depth] */
    int put;           /* steps by put on this connection (its peer's put_peer) */
    uint64_t remote;   /* steps by put: the peer's address of this connection's data */
    uint64_t notified; /* steps by put: done, their headers sent or (active messages) passed
                          over (the steps below sent_posted have gone) */
    net_flush_t *fl;   /* [depth]: steps by put: the flushes after its puts, a ring */
    uint64_t *put_of;  /* [depth]: steps by put: 1 + the step that last went from the slot by
                          put (0: as active messages, host-staged) */
    uint64_t nfl;      /* flushes started: the next goes into fl[nfl % depth] once free */
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
    uint64_t inflight; /* rendezvous receives and flushes not yet completed (atomic: every proxy's) */
    /* steps by put */
    int put;                  /* the communicator's steps go by put */
    int put_cuda;             /* their FIFOs are device memory (the layout's put_seg, put_shadow) */
    uint8_t *put_peer;        /* [nranks]: steps to and from this peer go by put (put_to) */
    void (*put_landed)(void); /* the layout's: before a step a put wrote is published */
    uint64_t put_min;         /* steps of fewer bytes go as active messages (net_step_am) */
    ucp_mem_h memh;           /* my receive segment, registered */
    ucp_rkey_h *rkey;         /* [npx][nranks]: each net peer's segment, unpacked on proxy i's endpoint */
    uint64_t *peer_base;      /* [nranks]: the peer's address of its segment */
    uint32_t *acks;           /* [nranks]: the peer's answers to my goodbye (one per proxy) */
    uint8_t *owe_ack;         /* [npx][nranks]: the peer left: flush proxy i's puts to it, then answer */
    uint32_t owe_any;         /* bit i: some owe_ack of proxy i is set (atomic) */
    net_flush_t *ack_fl;      /* [npx][nranks]: those flushes */
    int closing;              /* this rank is tearing the communicator down */
    eng_bell_t *bell;         /* my doorbell (my segment's header), rung after a step or credit lands */
    /* descriptions (engine/sig.c, transport.h's published, ask and tell): my header,
     * whose descriptions go to peers that ask and whose abort_mark a peer's news sets; the
     * peers' copies live in the headers of my shadows of them */
    eng_seg_hdr_t *me;
    uint64_t ask_ns;   /* the latest ask (atomic: eng_net_ask) */
    uint32_t asking;   /* ask every peer at the next pass of proxy 0 (atomic) */
    uint32_t telling;  /* tell every peer this rank aborted, at the next pass (atomic) */
    uint32_t owed_any; /* some peer asked (atomic) */
    uint8_t *owed;     /* [nranks]: the peer asked for my descriptions (atomic) */
    struct eng_net_comm *next;
};

typedef struct {
    uint32_t idx;
    pthread_mutex_t lock; /* every call on this worker; held by the proxy through a pass */
    ucp_worker_h worker;
    int efd;
    pthread_t thread;
    net_ep_t *eps;     /* the endpoints on this worker, retired ones until unused */
    uint32_t hook_gen; /* the thread hook it last ran (net_ucx.hook_gen) */
} net_proxy_t;

/* The process's UCX state (ucx_state.c). Locks: net_ucx.lock (set-up, teardown, refs),
 * then px[0..n-1].lock. The list and the table of communicators change only under all of
 * them, so a proxy (holding its own) reads them safely, and its handlers too. */
typedef struct {
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
    void (*hook)(void); /* eng_net_thread_hook's, under lock and every proxy lock */
    uint32_t hook_gen;  /* bumped with each setting */
} net_ucx_t;

extern net_ucx_t net_ucx;

/* On a connection by put, a step of len bytes goes as active messages instead: below the
 * layout's put_min, where a put, its flush and the header after it cost more. With
 * device FIFOs it leaves and lands in their host-staged twins (stage_shadow,
 * stage_local), which the GPU daemon picks by the same rule (cuda/cuda_prims.cuh,
 * prim_step_data); both ends know the step's size. */
static inline int net_step_am(const struct eng_net_comm *nc, uint64_t len)
{
    return len < nc->put_min;
}

/* Proxy i's endpoint to peer p's worker i. */
static inline net_ep_t **ep_of(const struct eng_net_comm *nc, uint32_t i, int p)
{
    return &nc->ep[(size_t)i * (size_t)nc->nranks + (size_t)p];
}

static inline void lock_proxies(void)
{
    for (uint32_t i = 0; i < net_ucx.nproxies; i++)
        pthread_mutex_lock(&net_ucx.px[i].lock);
}

static inline void unlock_proxies(void)
{
    for (uint32_t i = net_ucx.nproxies; i-- > 0;)
        pthread_mutex_unlock(&net_ucx.px[i].lock);
}

static inline int net_aborted(const struct eng_net_comm *nc)
{
    return dfccl_load_acquire(nc->abort_words[0]) != 0;
}

static inline int peer_closed(const struct eng_net_comm *nc, int p)
{
    return dfccl_load_acquire64(&((eng_seg_hdr_t *)nc->shadow[p])->closed) != 0;
}

/* ---- ucx_state.c: failures ------------------------------------------------------------ */

/* The daemons fail every task of the communicator once they see the word. */
void net_abort(struct eng_net_comm *nc);

/* Peer p is gone (endpoint error, or its process exited): unless it said goodbye first
 * (it then owes us nothing), the communicator's pending collectives fail. */
void net_peer_lost(struct eng_net_comm *nc, int p, const char *why);

/* ---- ucx_am.c: receiving --------------------------------------------------------------- */

/* Registers the handlers on P's worker: dfccl's ids (net_wire.h), and a dropping one for every
 * other id a peer can send. */
ucs_status_t net_set_handlers(net_proxy_t *P);

/* ---- ucx_ep.c: the endpoint cache ------------------------------------------------------- */

/* "Same host", as a string two ranks compare (see where_am_i in ucx_ep.c). */
void net_where_am_i(char *buf, size_t len);

/* Wait for an operation (flush, close) to finish, progressing the worker; gives up after
 * `ns` (a peer that stopped answering). Returns 0 when it finished. */
int net_wait_request(ucp_worker_h worker, ucs_status_ptr_t r, uint64_t ns);

/* A reference to P's endpoint to the worker at `addr` of the process `pid` on `host`
 * (pid 0: another host), made if the cache has none. Called with P's lock held; NULL and
 * *st_p on failure. */
net_ep_t *net_ep_get(net_proxy_t *P, const void *addr, size_t addr_len, const char *host, int32_t pid,
                     int peer_mode, int peer, ucs_status_t *st_p);

/* A communicator lets go of endpoint e. Called with e's proxy lock held, outside UCX's
 * progress. */
void net_ep_put(net_ep_t *e);

/* Closes P's retired endpoints that no communicator uses any more; `all`: every unused
 * one (the worker is going). Called with P's lock held, outside UCX's progress. */
void net_ep_reap(net_proxy_t *P, int all);

/* Same-host peers' endpoints carry no error handling: a peer whose process is gone is
 * found here. Called with P's lock held. */
void net_watch_peers(net_proxy_t *P);

/* ---- ucx_proxy.c: sending and the proxy threads ----------------------------------------- */

/* Sends one active message; the header and payload stay untouched until the peer has it.
 * Returns -1 when the send failed at once. */
int net_am_send(ucp_ep_h ep, int eager, unsigned id, const net_am_hdr_t *h, const void *buf, size_t len);

/* Move what the daemon produced, and the credits it gave, since the last visit.
 * Returns 1 if anything moved, -1 on a failed send. */
int net_proxy_conn(struct eng_net_comm *nc, net_conn_t *k);

/* Steps by put: the goodbyes owed an answer (AM_BYEACK after a flush of every put to
 * the leaving peer), proxy P's. Called with P's lock held. Returns 1 if any was started. */
int net_proxy_acks(struct eng_net_comm *nc, const net_proxy_t *P);

/* Descriptions: my asks, the answers owed to peers that asked, the news that this rank
 * aborted, all through proxy 0's endpoints. Called with proxy 0's lock held. Returns 1
 * if anything was sent. */
int net_proxy_descs(struct eng_net_comm *nc);

/* One context per process, DFCCL_NET_THREADS workers and proxy threads, shared by every
 * communicator: a reference, started by the first. Called with net_ucx.lock held. */
dfcclResult_t net_proxy_acquire_locked(void);

/* Lets go of the reference; the last stops the proxies. Called with net_ucx.lock held and
 * no proxy lock. */
void net_proxy_release_locked(void);

#endif
