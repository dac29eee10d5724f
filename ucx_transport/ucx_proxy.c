/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport over UCX. One UCX context and worker per process, driven by one
 * proxy thread. For every connection to a peer on the net the daemon writes into a local
 * *shadow* of the peer's connection (same control words and FIFO); the proxy puts each
 * new step into the peer's real FIFO (data and size, then a fence, then the step
 * counter), and puts this rank's `consumed` counters into the peer's shadow of this
 * rank's connections, which is where the peer's daemon reads its credits. The algorithms
 * and the scheduler are unchanged: a wait on a remote peer is a wait on a local word.
 * Where the segments live is the caller's (eng_net_layout_t): the CPU daemon's shared
 * memory, or the GPU daemon's host-pinned, device-mapped FIFOs.
 * The proxy spins while there is traffic and sleeps on the worker's event fd when idle.
 * A peer whose endpoint fails (killed process, lost link) aborts the communicator, so
 * its pending collectives fail instead of hanging. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "eng_comm.h"
#include "eng_log.h"
#include "eng_net.h"

#define NET_VALS 64 /* stable sources of counter puts, reused after 64 more puts */

typedef struct {
    int peer;
    eng_conn_ctrl_t *shadow_ctrl; /* me -> peer: my shadow of the peer's FIFO */
    char *shadow_data;
    uint64_t remote_ctrl;        /* the same connection in the peer's segment */
    eng_conn_ctrl_t *local_ctrl; /* peer -> me: in my segment */
    uint64_t remote_shadow_ctrl; /* the same connection in the peer's shadow of me */
    uint64_t chunk;              /* bytes per step, me -> peer */
    uint64_t sent_posted, sent_consumed;
    uint64_t vals[NET_VALS];
    unsigned nval;
} net_conn_t;

struct eng_net_comm;

typedef struct {
    struct eng_net_comm *nc;
    int peer;
} net_peer_ref_t;

struct eng_net_comm {
    uint64_t uid;
    int rank, nranks;
    char *seg;                /* my receive segment */
    size_t ctrl_bytes;        /* control words ahead of each connection's data */
    int32_t *abort_words[2];  /* the communicator's abort words */
    char **shadow;            /* [nranks]: my shadow of peer p's connections (net peers only) */
    ucp_mem_h seg_mh;
    ucp_mem_h *shadow_mh;    /* [nranks] */
    ucp_ep_h *ep;            /* [nranks] */
    ucp_rkey_h *seg_rkey;    /* [nranks]: peer's segment */
    ucp_rkey_h *shadow_rkey; /* [nranks]: peer's shadow of my segment */
    uint64_t *shadow_addr;   /* [nranks]: where that shadow is in the peer's memory */
    net_peer_ref_t *refs;    /* [nranks]: error-handler arguments */
    net_conn_t *conns;
    size_t nconns;
    uint8_t *dead;       /* [nranks]: endpoint failed or closed: no more puts to it */
    uint64_t closed_val; /* stable source of the goodbye put */
    int closing;         /* this rank is tearing the communicator down */
    uint32_t depth;
    struct eng_net_comm *next;
};

static struct {
    pthread_mutex_t lock; /* every UCX call, and the list of communicators */
    int refs;
    ucp_context_h ctx;
    ucp_worker_h worker;
    int efd;
    pthread_t thread;
    int stop;
    struct eng_net_comm *comms;
} U = {.lock = PTHREAD_MUTEX_INITIALIZER};

int eng_net_built(void)
{
    return 1;
}

static dfcclResult_t ucs_error(const char *what, ucs_status_t st)
{
    return eng_set_error(dfcclSystemError, "ucx", "%s failed: %s", what, ucs_status_string(st));
}

/* ---- the proxy ----------------------------------------------------------------------- */

static void put_done(void *request, ucs_status_t status, void *user_data)
{
    (void)request, (void)status, (void)user_data; /* failures reach peer_failed */
}

static int put(ucp_ep_h ep, const void *src, size_t len, uint64_t raddr, ucp_rkey_h rkey)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    prm.cb.send = put_done;
    ucs_status_ptr_t r = ucp_put_nbx(ep, src, len, raddr, rkey, &prm);
    if (UCS_PTR_IS_ERR(r))
        return -1;
    if (r)
        ucp_request_free(r); /* it completes on its own; ordering comes from the fences */
    return 0;
}

/* Move what the daemon produced since the last visit. Returns 1 if anything moved. */
static int proxy_conn(struct eng_net_comm *nc, net_conn_t *k)
{
    ucp_ep_h ep = nc->ep[k->peer];
    int moved = 0;
    if (nc->dead[k->peer])
        return 0;
    if (dfccl_load_acquire64(&((eng_seg_hdr_t *)nc->shadow[k->peer])->closed)) {
        nc->dead[k->peer] = 1; /* it left: its memory is gone, send it nothing more */
        return 0;
    }
    /* acquire: the daemon wrote the step's data and size before releasing `posted` */
    uint64_t posted = dfccl_load_acquire64(&k->shadow_ctrl->posted);
    if (posted > k->sent_posted) {
        for (uint64_t s = k->sent_posted; s < posted; s++) {
            uint32_t slot = (uint32_t)(s % nc->depth);
            uint64_t bytes = k->shadow_ctrl->bytes[slot];
            if (bytes && put(ep, k->shadow_data + (uint64_t)slot * k->chunk, bytes,
                             k->remote_ctrl + nc->ctrl_bytes + (uint64_t)slot * k->chunk,
                             nc->seg_rkey[k->peer]))
                return -1;
            if (put(ep, &k->shadow_ctrl->bytes[slot], sizeof(uint64_t),
                    k->remote_ctrl + offsetof(eng_conn_ctrl_t, bytes) + slot * sizeof(uint64_t),
                    nc->seg_rkey[k->peer]))
                return -1;
        }
        /* data and sizes land before the step counter that announces them */
        ucp_worker_fence(U.worker);
        uint64_t *v = &k->vals[k->nval++ % NET_VALS];
        *v = posted;
        if (put(ep, v, sizeof(*v), k->remote_ctrl + offsetof(eng_conn_ctrl_t, posted), nc->seg_rkey[k->peer]))
            return -1;
        k->sent_posted = posted;
        moved = 1;
    }
    uint64_t consumed = dfccl_load_acquire64(&k->local_ctrl->consumed);
    if (consumed > k->sent_consumed) {
        uint64_t *v = &k->vals[k->nval++ % NET_VALS];
        *v = consumed;
        if (put(ep, v, sizeof(*v), k->remote_shadow_ctrl + offsetof(eng_conn_ctrl_t, consumed),
                nc->shadow_rkey[k->peer]))
            return -1;
        k->sent_consumed = consumed;
        moved = 1;
    }
    return moved;
}

static int net_aborted(const struct eng_net_comm *nc)
{
    return __atomic_load_n(nc->abort_words[0], __ATOMIC_ACQUIRE) != 0;
}

/* The daemons fail every task of the communicator once they see the word. */
static void net_abort(struct eng_net_comm *nc)
{
    for (int i = 0; i < 2; i++)
        if (nc->abort_words[i])
            __atomic_store_n(nc->abort_words[i], (int32_t)dfcclCommAborted, __ATOMIC_RELEASE);
}

static void *proxy_main(void *arg)
{
    (void)arg;
    uint64_t last_move = eng_now_ns();
    for (;;) {
        int moved = 0;
        pthread_mutex_lock(&U.lock);
        if (U.stop) {
            pthread_mutex_unlock(&U.lock);
            break;
        }
        for (struct eng_net_comm *nc = U.comms; nc; nc = nc->next) {
            if (net_aborted(nc))
                continue;
            for (size_t i = 0; i < nc->nconns; i++) {
                int r = proxy_conn(nc, &nc->conns[i]);
                if (r < 0) {
                    dfccl_error("communicator %016llx: put to peer rank %d failed; communicator aborted",
                                (unsigned long long)nc->uid, nc->conns[i].peer);
                    net_abort(nc);
                    break;
                }
                moved |= r;
            }
        }
        while (ucp_worker_progress(U.worker))
            moved = 1;
        pthread_mutex_unlock(&U.lock);

        uint64_t now = eng_now_ns();
        if (moved) {
            last_move = now;
        } else if (now - last_move < 2000000ull) {
            sched_yield(); /* traffic is recent: stay quick */
        } else {
            /* idle: sleep until the network has something, or 1 ms for local steps */
            pthread_mutex_lock(&U.lock);
            ucs_status_t st = ucp_worker_arm(U.worker);
            pthread_mutex_unlock(&U.lock);
            if (st == UCS_OK) {
                struct pollfd pfd = {.fd = U.efd, .events = POLLIN};
                poll(&pfd, 1, 1);
            }
        }
    }
    return NULL;
}

static void proxy_release_locked(void)
{
    if (--U.refs > 0)
        return;
    U.stop = 1;
    pthread_mutex_unlock(&U.lock);
    pthread_join(U.thread, NULL);
    pthread_mutex_lock(&U.lock);
    ucp_worker_destroy(U.worker);
    ucp_cleanup(U.ctx);
    U.worker = NULL;
    U.ctx = NULL;
}

/* One context, worker and proxy thread per process, shared by every communicator. */
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
    ucp_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_PARAM_FIELD_FEATURES;
    p.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
    st = ucp_init(&p, cfg, &U.ctx);
    ucp_config_release(cfg);
    if (st != UCS_OK) {
        U.refs--;
        return ucs_error("ucp_init", st);
    }
    ucp_worker_params_t wp;
    memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED; /* every call under U.lock */
    if ((st = ucp_worker_create(U.ctx, &wp, &U.worker)) != UCS_OK ||
        (st = ucp_worker_get_efd(U.worker, &U.efd)) != UCS_OK) {
        if (U.worker)
            ucp_worker_destroy(U.worker);
        ucp_cleanup(U.ctx);
        U.worker = NULL;
        U.refs--;
        return ucs_error("ucp_worker_create", st);
    }
    U.stop = 0;
    int e = pthread_create(&U.thread, NULL, proxy_main, NULL);
    if (e) {
        ucp_worker_destroy(U.worker);
        ucp_cleanup(U.ctx);
        U.worker = NULL;
        U.refs--;
        return eng_set_error(dfcclSystemError, "ucx", "pthread_create: %s", strerror(e));
    }
    return dfcclSuccess;
}

/* ---- communicators -------------------------------------------------------------------- */

static void peer_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    net_peer_ref_t *ref = arg;
    struct eng_net_comm *nc = ref->nc;
    nc->dead[ref->peer] = 1;
    if (nc->closing)
        return; /* our own endpoints, closed by our teardown */
    /* a peer that destroyed the communicator said goodbye first (teardown puts `closed`
     * into my shadow of its segment after its last step): it owes us nothing */
    if (dfccl_load_acquire64(&((eng_seg_hdr_t *)nc->shadow[ref->peer])->closed)) {
        dfccl_debug("communicator %016llx (rank %d): peer rank %d left (%s)", (unsigned long long)nc->uid,
                    nc->rank, ref->peer, ucs_status_string(status));
        return;
    }
    if (!net_aborted(nc))
        dfccl_error("communicator %016llx (rank %d): peer rank %d is unreachable over UCX (%s); its pending "
                    "collectives fail",
                    (unsigned long long)nc->uid, nc->rank, ref->peer, ucs_status_string(status));
    net_abort(nc);
}

/* Exchanged at set-up: addresses and keys; variable-size parts follow the header. */
typedef struct {
    uint64_t seg_addr;
    uint32_t addr_len, seg_rkey_len;
} net_boot_hdr_t;

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

static ucp_mem_h mem_register(void *addr, size_t len, void **rkey_p, size_t *rkey_len_p)
{
    ucp_mem_map_params_t mp;
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = addr;
    mp.length = len;
    ucp_mem_h mh;
    if (ucp_mem_map(U.ctx, &mp, &mh) != UCS_OK)
        return NULL;
    if (ucp_rkey_pack(U.ctx, mh, rkey_p, rkey_len_p) != UCS_OK) {
        ucp_mem_unmap(U.ctx, mh);
        return NULL;
    }
    return mh;
}

static void net_free_locked(struct eng_net_comm *nc)
{
    const int N = nc->nranks;
    for (int p = 0; p < N; p++) {
        if (nc->seg_rkey && nc->seg_rkey[p])
            ucp_rkey_destroy(nc->seg_rkey[p]);
        if (nc->shadow_rkey && nc->shadow_rkey[p])
            ucp_rkey_destroy(nc->shadow_rkey[p]);
        if (nc->ep && nc->ep[p]) {
            ucp_request_param_t prm;
            memset(&prm, 0, sizeof(prm));
            prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            prm.flags = UCP_EP_CLOSE_FLAG_FORCE; /* the peer may be gone */
            ucs_status_ptr_t r = ucp_ep_close_nbx(nc->ep[p], &prm);
            if (UCS_PTR_IS_PTR(r)) {
                while (ucp_request_check_status(r) == UCS_INPROGRESS)
                    ucp_worker_progress(U.worker);
                ucp_request_free(r);
            }
        }
        if (nc->shadow_mh && nc->shadow_mh[p])
            ucp_mem_unmap(U.ctx, nc->shadow_mh[p]);
        if (nc->shadow)
            free(nc->shadow[p]);
    }
    if (nc->seg_mh)
        ucp_mem_unmap(U.ctx, nc->seg_mh);
    free(nc->shadow);
    free(nc->shadow_mh);
    free(nc->ep);
    free(nc->seg_rkey);
    free(nc->shadow_rkey);
    free(nc->refs);
    free(nc->dead);
    free(nc->shadow_addr);
    free(nc->conns);
    free(nc);
}

dfcclResult_t eng_net_setup(const eng_net_layout_t *L, dfcclAllgatherFn_t ag, void *ctx, eng_net_t **net_p)
{
    const int N = L->nranks, me = L->rank;
    dfcclResult_t res = dfcclSuccess;
    char *blob = NULL, *all = NULL;
    void *addr = NULL;
    size_t addr_len = 0, stride = 0;
    void **rk = NULL;
    size_t *rk_len = NULL;
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
    nc->seg = L->seg;
    nc->ctrl_bytes = L->ctrl_bytes;
    nc->depth = L->depth;
    nc->abort_words[0] = L->abort_words[0];
    nc->abort_words[1] = L->abort_words[1];
    /* a local failure is reported through the exchange below: every rank takes part
     * in every allgather, so nobody waits for a rank that gave up */
    const int acquired = (res = proxy_acquire_locked()) == dfcclSuccess;
    if (!acquired)
        goto local_done;
    nc->shadow = calloc((size_t)N, sizeof(char *));
    nc->shadow_mh = calloc((size_t)N, sizeof(ucp_mem_h));
    nc->ep = calloc((size_t)N, sizeof(ucp_ep_h));
    nc->seg_rkey = calloc((size_t)N, sizeof(ucp_rkey_h));
    nc->shadow_rkey = calloc((size_t)N, sizeof(ucp_rkey_h));
    nc->refs = calloc((size_t)N, sizeof(net_peer_ref_t));
    nc->dead = calloc((size_t)N, 1);
    nc->shadow_addr = calloc((size_t)N, sizeof(uint64_t));
    nc->conns = calloc(L->nconns ? L->nconns : 1, sizeof(net_conn_t));
    rk = calloc((size_t)N + 1, sizeof(void *));
    rk_len = calloc((size_t)N + 1, sizeof(size_t));
    if (!nc->shadow || !nc->shadow_mh || !nc->ep || !nc->seg_rkey || !nc->shadow_rkey || !nc->refs ||
        !nc->dead || !nc->shadow_addr || !nc->conns || !rk || !rk_len) {
        res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
        goto local_done;
    }
    /* my segment receives data and steps; my shadows receive credits */
    nc->seg_mh = mem_register(L->seg, L->seg_size, &rk[N], &rk_len[N]);
    if (!nc->seg_mh) {
        res = eng_set_error(dfcclSystemError, "dfcclCommInit", "ucp_mem_map of the FIFOs (%zu B) failed",
                            L->seg_size);
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
        nc->shadow_mh[p] = mem_register(nc->shadow[p], L->shadow_size[p], &rk[p], &rk_len[p]);
        if (!nc->shadow_mh[p])
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "ucp_mem_map of a shadow failed");
    }
    if (res == dfcclSuccess && ucp_worker_get_address(U.worker, (ucp_address_t **)&addr, &addr_len) != UCS_OK)
        res = eng_set_error(dfcclSystemError, "dfcclCommInit", "ucp_worker_get_address failed");

local_done:;
    /* blob: status, header, worker address, segment key, then (address, key) of my
     * shadow of each rank */
    size_t len = sizeof(int32_t) + sizeof(net_boot_hdr_t) + addr_len + (rk_len ? rk_len[N] : 0);
    for (int p = 0; p < N && rk_len; p++)
        len += sizeof(uint64_t) + sizeof(uint32_t) + rk_len[p];
    blob = calloc(1, len);
    if (blob) {
        char *b = blob;
        int32_t st = res;
        memcpy(b, &st, sizeof(st));
        b += sizeof(st);
        net_boot_hdr_t h = {.seg_addr = (uint64_t)(uintptr_t)L->seg,
                            .addr_len = (uint32_t)addr_len,
                            .seg_rkey_len = (uint32_t)(rk_len ? rk_len[N] : 0)};
        memcpy(b, &h, sizeof(h));
        b += sizeof(h);
        if (addr_len)
            memcpy(b, addr, addr_len);
        b += addr_len;
        if (h.seg_rkey_len)
            memcpy(b, rk[N], h.seg_rkey_len);
        b += h.seg_rkey_len;
        for (int p = 0; p < N && rk_len; p++) {
            uint64_t sa = (uint64_t)(uintptr_t)(nc->shadow ? nc->shadow[p] : NULL);
            uint32_t kl = (uint32_t)rk_len[p];
            memcpy(b, &sa, sizeof(sa));
            b += sizeof(sa);
            memcpy(b, &kl, sizeof(kl));
            b += sizeof(kl);
            if (kl)
                memcpy(b, rk[p], kl);
            b += kl;
        }
    } else {
        len = 0;
    }
    pthread_mutex_unlock(&U.lock);

    /* collective: every rank exchanges, so that a local failure fails everyone */
    dfcclResult_t xres = exchange(blob, len, &all, &stride, N, ag, ctx);
    pthread_mutex_lock(&U.lock);
    if (xres != dfcclSuccess && res == dfcclSuccess)
        res = xres;
    for (int p = 0; p < N && res == dfcclSuccess && all; p++) {
        int32_t st;
        memcpy(&st, all + (size_t)p * stride, sizeof(st));
        if (st < 0)
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "rank %d could not set up UCX", p);
    }
    /* endpoints and remote keys of every net peer */
    uint64_t *seg_addr = res == dfcclSuccess ? calloc((size_t)N, sizeof(uint64_t)) : NULL;
    if (res == dfcclSuccess && !seg_addr)
        res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
    for (int p = 0; p < N && res == dfcclSuccess; p++) {
        if (p == me || !L->shadow_size[p])
            continue;
        const char *b = all + (size_t)p * stride + sizeof(int32_t);
        net_boot_hdr_t h;
        memcpy(&h, b, sizeof(h));
        b += sizeof(h);
        const char *paddr = b, *seg_key = b + h.addr_len;
        b = seg_key + h.seg_rkey_len;
        const char *shadow_key = NULL;
        uint64_t shadow_addr = 0;
        for (int q = 0; q < N; q++) { /* p's shadow of my segment */
            uint64_t sa;
            uint32_t kl;
            memcpy(&sa, b, sizeof(sa));
            memcpy(&kl, b + sizeof(sa), sizeof(kl));
            if (q == me) {
                shadow_addr = sa;
                shadow_key = b + sizeof(sa) + sizeof(kl);
            }
            b += sizeof(sa) + sizeof(kl) + kl;
        }
        seg_addr[p] = h.seg_addr;
        nc->refs[p] = (net_peer_ref_t){.nc = nc, .peer = p};
        nc->shadow_addr[p] = shadow_addr;
        ucp_ep_params_t ep;
        memset(&ep, 0, sizeof(ep));
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.address = (const ucp_address_t *)paddr;
        ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        ep.err_handler.cb = peer_failed;
        ep.err_handler.arg = &nc->refs[p];
        ucs_status_t st = ucp_ep_create(U.worker, &ep, &nc->ep[p]);
        if (st != UCS_OK) {
            nc->ep[p] = NULL;
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "ucp_ep_create(rank %d): %s", p,
                                ucs_status_string(st));
            break;
        }
        if ((st = ucp_ep_rkey_unpack(nc->ep[p], seg_key, &nc->seg_rkey[p])) != UCS_OK ||
            (st = ucp_ep_rkey_unpack(nc->ep[p], shadow_key, &nc->shadow_rkey[p])) != UCS_OK) {
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "ucp_ep_rkey_unpack(rank %d): %s", p,
                                ucs_status_string(st));
            break;
        }
    }
    /* the connections: mine to p are written into my shadow of p, p's to me are
     * credited back through p's shadow of me */
    for (size_t i = 0; i < L->nconns && res == dfcclSuccess; i++) {
        const eng_net_conn_desc_t *d = &L->conns[i];
        net_conn_t *k = &nc->conns[nc->nconns++];
        k->peer = d->peer;
        k->chunk = d->schunk;
        k->shadow_ctrl = (eng_conn_ctrl_t *)(nc->shadow[d->peer] + d->shadow_off);
        k->shadow_data = (char *)k->shadow_ctrl + L->ctrl_bytes;
        k->remote_ctrl = seg_addr[d->peer] + d->send_off;
        k->local_ctrl = (eng_conn_ctrl_t *)(L->seg + d->recv_off);
        k->remote_shadow_ctrl = nc->shadow_addr[d->peer] + d->peer_shadow_off;
    }
    free(seg_addr);
    if (addr)
        ucp_worker_release_address(U.worker, (ucp_address_t *)addr);
    for (int p = 0; rk && p <= N; p++)
        if (rk[p])
            ucp_rkey_buffer_release(rk[p]);
    free(rk);
    free(rk_len);
    free(blob);
    free(all);
    pthread_mutex_unlock(&U.lock);

    /* every rank's endpoints and keys exist before anyone puts */
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
            net_free_locked(nc);
            proxy_release_locked();
        } else {
            free(nc);
        }
        pthread_mutex_unlock(&U.lock);
        return res;
    }
    nc->next = U.comms;
    U.comms = nc;
    pthread_mutex_unlock(&U.lock);
    dfccl_info("communicator %016llx rank %d: %d peer(s) over UCX", (unsigned long long)L->uid, me, nnet);
    *net_p = nc;
    return dfcclSuccess;
}

char *eng_net_shadow(eng_net_t *nc, int p)
{
    return nc && p >= 0 && p < nc->nranks ? nc->shadow[p] : NULL;
}

/* Wait for an operation (flush, close) to finish, progressing the worker. */
static void wait_request(ucs_status_ptr_t r)
{
    if (!UCS_PTR_IS_PTR(r))
        return;
    while (ucp_request_check_status(r) == UCS_INPROGRESS)
        ucp_worker_progress(U.worker);
    ucp_request_free(r);
}

void eng_net_teardown(eng_net_t *nc)
{
    if (!nc)
        return;
    pthread_mutex_lock(&U.lock);
    /* steps the daemon posted before the last collective completed here may not have
     * gone out yet: push them (the peers may still need them), then say goodbye, so
     * that peers still running the collective see a clean departure, not a failure */
    for (int pass = 0, moved = 1; moved && pass < 1000000; pass++) {
        moved = 0;
        for (size_t i = 0; i < nc->nconns; i++)
            if (proxy_conn(nc, &nc->conns[i]) > 0)
                moved = 1;
        ucp_worker_progress(U.worker);
    }
    nc->closed_val = 1;
    nc->closing = 1;
    ucp_worker_fence(U.worker);
    for (int p = 0; p < nc->nranks; p++)
        if (nc->ep[p] && !nc->dead[p])
            put(nc->ep[p], &nc->closed_val, sizeof(nc->closed_val),
                nc->shadow_addr[p] + offsetof(eng_seg_hdr_t, closed), nc->shadow_rkey[p]);
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    wait_request(ucp_worker_flush_nbx(U.worker, &prm)); /* everything has landed */
    for (struct eng_net_comm **pp = &U.comms; *pp; pp = &(*pp)->next)
        if (*pp == nc) {
            *pp = nc->next;
            break;
        }
    net_free_locked(nc);
    proxy_release_locked();
    pthread_mutex_unlock(&U.lock);
}
