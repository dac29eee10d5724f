/* SPDX-License-Identifier: BSD-3-Clause */
/* Sending, and the proxy threads that do it: one UCX context per process and
 * DFCCL_NET_THREADS workers, each driven by a proxy thread of its own that moves the
 * steps and credits its daemon left in the shadows, progresses its worker (the handlers
 * of ucx_am.c run in there), watches same-host peers and sleeps on the worker's event fd
 * when idle. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_clock.h"
#include "eng_log.h"
#include "eng_sig.h"
#include "eng_sig_desc.h"
#include "ucx_state.h"

static dfcclResult_t ucs_error(const char *what, ucs_status_t st)
{
    return eng_set_error(dfcclSystemError, "ucx", "%s failed: %s", what, ucs_status_string(st));
}

static void send_done(void *request, ucs_status_t status, void *user_data)
{
    (void)request, (void)status, (void)user_data; /* failures reach the error handler */
}

/* The header and the payload stay untouched until the peer has the message: a step's
 * slot (and header) is reused only after the peer's credit for it. Every message's
 * payload is host memory (steps leave from host-staged FIFOs): said, so that UCX does
 * not look up each buffer's memory type, which with a CUDA context current on the
 * proxy (device FIFOs) may ask the driver. */
int net_am_send(ucp_ep_h ep, int eager, unsigned id, const net_am_hdr_t *h, const void *buf, size_t len)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    prm.memory_type = UCS_MEMORY_TYPE_HOST;
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

static void copy_sent(void *request, ucs_status_t status, void *user_data)
{
    (void)request, (void)status;
    free(user_data);
}

/* One eager message from a copy of its header and payload, freed once sent: for the
 * descriptions, sent rarely, whose next one must not overwrite one still in flight.
 * Returns -1 when the send failed at once. */
static int am_send_copy(ucp_ep_h ep, unsigned id, const net_am_hdr_t *h, const void *buf, size_t len)
{
    char *m = malloc(sizeof(*h) + len);
    if (!m)
        return -1;
    memcpy(m, h, sizeof(*h));
    if (len)
        memcpy(m + sizeof(*h), buf, len);
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS |
                       UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    prm.memory_type = UCS_MEMORY_TYPE_HOST;
    prm.cb.send = copy_sent;
    prm.user_data = m;
    prm.flags = UCP_AM_SEND_FLAG_EAGER; /* the handler takes whole messages only */
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, m, sizeof(*h), m + sizeof(*h), len, &prm);
    if (UCS_PTR_IS_ERR(r) || !r) {
        free(m); /* failed, or done in place (no callback then) */
        return UCS_PTR_IS_ERR(r) ? -1 : 0;
    }
    ucp_request_free(r); /* its callback frees the copy */
    return 0;
}

/* My header's descriptions as they are now, each read as its seqlock says
 * (eng_sig_desc.h): one being written goes with seq1 0. */
static void desc_snapshot(const eng_seg_hdr_t *me, net_desc_t *d)
{
    d->why_seq1 = eng_sig_why_load(me, d->why);
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < ENG_SIG_RING; i++)
            eng_sig_entry_load(&me->sigs[g][i], &d->sigs[g][i]);
}

int net_proxy_descs(struct eng_net_comm *nc)
{
    if (!(dfccl_load_relaxed(&nc->asking) | dfccl_load_relaxed(&nc->telling) |
          dfccl_load_relaxed(&nc->owed_any)))
        return 0;
    const uint32_t ask = dfccl_exchange_relaxed(&nc->asking, 0),
                   tell = dfccl_exchange_relaxed(&nc->telling, 0);
    dfccl_store_relaxed(&nc->owed_any, 0);
    net_desc_t d;
    int sent = 0, have = 0;
    for (int p = 0; p < nc->nranks; p++) {
        net_ep_t *e = nc->shadow[p] && nc->me ? *ep_of(nc, 0, p) : NULL;
        const uint8_t owed = dfccl_exchange_relaxed(&nc->owed[p], 0);
        if (!e || DFCCL_READ_ONCE(nc->dead[p]))
            continue;
        net_am_hdr_t h = {.dst = nc->peer_id[p], .src = nc->rank, .key = nc->peer_key[p]};
        if (ask)
            sent |= !am_send_copy(e->ep, AM_ASK, &h, NULL, 0);
        if (!owed && !tell)
            continue;
        if (!have++)
            desc_snapshot(nc->me, &d);
        h.step = tell ? NET_DESC_TOLD : 0;
        sent |= !am_send_copy(e->ep, AM_DESC, &h, &d, sizeof d);
    }
    return sent;
}

/* Step s of connection k as active messages, its data at `data`'s slot (the shadow, or
 * with device FIFOs its host-staged twin): eager steps go in pieces that UCX need not
 * reassemble, rendezvous ones whole. Returns -1 when a send failed. */
static int am_step_send(struct eng_net_comm *nc, net_conn_t *k, ucp_ep_h ep, uint64_t s, int eager,
                        const char *data)
{
    const int p = k->peer;
    const uint32_t slot = (uint32_t)(s % nc->depth);
    /* the size's word also carries the signature's tag (eng_sig.h): it travels in the
     * header, and lands with the step in the peer's word, checked there as a shared-
     * memory peer's is */
    const uint64_t word = k->shadow_ctrl->bytes[slot], len = eng_step_bytes(word);
    const uint64_t piece = eager && k->piece ? k->piece : len;
    net_am_hdr_t *h = &k->hdr[(size_t)slot * k->npiece];
    if (len > k->schunk)
        return -1; /* the daemon never writes more than a step */
    data += (uint64_t)slot * k->schunk;
    uint64_t off = 0;
    do {
        const uint64_t n = len - off < piece ? len - off : piece;
        *h = (net_am_hdr_t){.dst = nc->peer_id[p],
                            .src = nc->rank,
                            .key = nc->peer_key[p],
                            .idx = k->idx,
                            .off = (uint32_t)off,
                            .step = s,
                            .total = len,
                            .tag = (uint32_t)(word >> 32)};
        if (net_am_send(ep, eager, AM_STEP, h++, data + off, n))
            return -1;
        off += n;
    } while (off < len);
    return 0;
}

/* A step's header alone, once its put has completed at the peer (NET_STEP_PUT). */
static int put_notify(struct eng_net_comm *nc, net_conn_t *k, uint64_t s)
{
    const int p = k->peer;
    const uint32_t slot = (uint32_t)(s % nc->depth);
    const uint64_t word = k->shadow_ctrl->bytes[slot];
    net_am_hdr_t *h = &k->hdr[(size_t)slot * k->npiece];
    *h = (net_am_hdr_t){.dst = nc->peer_id[p],
                        .src = nc->rank,
                        .key = nc->peer_key[p],
                        .idx = k->idx,
                        .step = s,
                        .total = eng_step_bytes(word),
                        .tag = (uint32_t)(word >> 32),
                        .flags = NET_STEP_PUT};
    return net_am_send((*ep_of(nc, k->px, p))->ep, 1, AM_STEP, h, NULL, 0);
}

/* Past the host-staged steps that follow the last notified one: they went as active
 * messages, nothing to notify (a put step stops it: its flush's completion notifies it).
 * put_of[slot] names the step by put that last used the slot, so a slot since reused
 * by a later step does not pass for this one. */
static void notify_past_staged(const struct eng_net_comm *nc, net_conn_t *k)
{
    while (k->notified < k->sent_posted && k->put_of[k->notified % nc->depth] != k->notified + 1)
        k->notified++;
}

/* The flush after a connection's puts (the steps below f->upto are in the peer's slots)
 * or after a goodbye (every put to the leaving peer is done). Runs inside UCX's progress,
 * with the proxy's lock held. */
static void flushed(void *request, ucs_status_t status, void *user_data)
{
    net_flush_t *f = user_data;
    struct eng_net_comm *nc = f->nc;
    f->busy = 0;
    if (request)
        ucp_request_free(request);
    dfccl_fetch_sub_relaxed(&nc->inflight, 1);
    if (status != UCS_OK) {
        net_peer_lost(nc, f->peer, ucs_status_string(status));
        return;
    }
    if (!f->k) { /* a goodbye's answer: nothing of mine lands in the peer's segment any more */
        net_am_hdr_t *h = &nc->bye[f->peer];
        *h = (net_am_hdr_t){.dst = nc->peer_id[f->peer], .src = nc->rank, .key = nc->peer_key[f->peer]};
        net_am_send((*ep_of(nc, f->px, f->peer))->ep, 1, AM_BYEACK, h, NULL, 0);
        return;
    }
    net_conn_t *k = f->k;
    for (; k->notified < f->upto && !DFCCL_READ_ONCE(nc->dead[k->peer]); k->notified++)
        if (k->put_of[k->notified % nc->depth] == k->notified + 1 && put_notify(nc, k, k->notified)) {
            net_peer_lost(nc, k->peer, "sending a step's header failed");
            return;
        }
    notify_past_staged(nc, k);
}

/* Flush proxy px's endpoint to peer p; f says what follows. Returns -1 when it failed at
 * once. */
static int flush_ep(struct eng_net_comm *nc, uint32_t px, int p, net_flush_t *f)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    prm.cb.send = flushed;
    prm.user_data = f;
    dfccl_fetch_add_relaxed(&nc->inflight, 1);
    ucs_status_ptr_t r = ucp_ep_flush_nbx((*ep_of(nc, px, p))->ep, &prm);
    if (UCS_PTR_IS_ERR(r)) {
        dfccl_fetch_sub_relaxed(&nc->inflight, 1);
        f->busy = 0;
        net_peer_lost(nc, p, ucs_status_string(UCS_PTR_STATUS(r))); /* nothing more to it */
        return -1;
    }
    if (!r)
        flushed(NULL, UCS_OK, f); /* done in place: no callback comes */
    return 0;
}

/* Steps by put: the new steps of connection k straight into the peer's slots, then one
 * flush, whose completion sends their headers (flushed). A step of fewer than put_min
 * bytes goes as active messages instead (net_step_am: from the host-staged twin of a
 * device FIFO), which need no flush. Each step counts as sent once it went, so a failure
 * halfway sends none twice; after one nothing more goes to the peer (net_peer_lost).
 * Returns 1 if any went, -1 on a failed put or send. */
static int put_steps(struct eng_net_comm *nc, net_conn_t *k, uint64_t posted, int eager)
{
    const int p = k->peer;
    /* flushes on one endpoint complete in order, so the ring's next record is free when
     * fewer than depth are in flight; a busy one waits for a later pass */
    net_flush_t *f = &k->fl[k->nfl % nc->depth];
    if (k->sent_posted >= posted || f->busy)
        return 0;
    ucp_ep_h ep = (*ep_of(nc, k->px, p))->ep;
    ucp_rkey_h rkey = nc->rkey[(size_t)k->px * (size_t)nc->nranks + (size_t)p];
    int puts = 0;
    for (uint64_t s = k->sent_posted; s < posted; s++) {
        const uint32_t slot = (uint32_t)(s % nc->depth);
        const uint64_t len = eng_step_bytes(k->shadow_ctrl->bytes[slot]);
        if (len > k->schunk)
            return -1; /* the daemon never writes more than a step */
        if (net_step_am(nc, len)) {
            k->put_of[slot] = 0;
            if (am_step_send(nc, k, ep, s, eager, k->stage_shadow)) {
                net_peer_lost(nc, p, "sending a step failed"); /* the puts before it may still land */
                return -1;
            }
            k->sent_posted = s + 1;
            continue;
        }
        k->put_of[slot] = s + 1;
        puts = 1;
        if (len) {
            ucp_request_param_t prm;
            memset(&prm, 0, sizeof(prm));
            /* spares UCX the lookup of every step's memory */
            prm.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
            prm.memory_type = nc->put_cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
            ucs_status_ptr_t r =
                ucp_put_nbx(ep, k->shadow_data + (uint64_t)slot * k->schunk, len,
                            k->remote + (uint64_t)slot * k->schunk, rkey, &prm); /* the peer's
                                                                                    rchunk */
            if (UCS_PTR_IS_ERR(r)) { /* the puts before it may still land: nothing more to p */
                net_peer_lost(nc, p, ucs_status_string(UCS_PTR_STATUS(r)));
                return -1;
            }
            if (r)
                ucp_request_free(r); /* the flush below waits for it */
        }
        k->sent_posted = s + 1;
    }
    if (!puts) { /* active messages only: nothing to flush */
        notify_past_staged(nc, k);
        return 1;
    }
    k->nfl++;
    *f = (net_flush_t){.nc = nc, .k = k, .upto = posted, .peer = p, .px = k->px, .busy = 1};
    return flush_ep(nc, k->px, p, f) ? -1 : 1;
}

int net_proxy_acks(struct eng_net_comm *nc, const net_proxy_t *P)
{
    const uint32_t bit = 1u << P->idx;
    /* closing: my goodbye went out after every put of mine, which answers them all; a
     * flush started now could outlive the communicator */
    if (!nc->put || nc->closing || !(dfccl_load_relaxed(&nc->owe_any) & bit))
        return 0;
    __atomic_fetch_and(&nc->owe_any, ~bit, __ATOMIC_RELAXED);
    int started = 0;
    for (int p = 0; p < nc->nranks; p++) {
        const size_t i = (size_t)P->idx * (size_t)nc->nranks + (size_t)p;
        /* a peer that left is dead here too (send it nothing more), but waits for this */
        if (!nc->owe_ack[i] || !*ep_of(nc, P->idx, p) || (*ep_of(nc, P->idx, p))->failed)
            continue;
        if (nc->ack_fl[i].busy) { /* the previous answer's flush: this one after it */
            __atomic_fetch_or(&nc->owe_any, bit, __ATOMIC_RELAXED);
            continue;
        }
        nc->owe_ack[i] = 0;
        nc->ack_fl[i] = (net_flush_t){.nc = nc, .peer = p, .px = P->idx, .busy = 1};
        flush_ep(nc, P->idx, p, &nc->ack_fl[i]); /* a failure marks the peer lost */
        started = 1;
    }
    return started;
}

/* Move what the daemon produced, and the credits it gave, since the last visit.
 * Returns 1 if anything moved, -1 on a failed send. */
int net_proxy_conn(struct eng_net_comm *nc, net_conn_t *k)
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
    if (k->put && (moved = put_steps(nc, k, posted, eager)) < 0)
        return -1;
    for (uint64_t s = k->sent_posted; s < posted && !k->put; s++) { /* put_steps sent those by put */
        if (am_step_send(nc, k, ep, s, eager, k->stage_shadow))
            return -1;
        k->sent_posted = s + 1;
        moved = 1;
    }
    const uint64_t consumed = dfccl_load_acquire64(&k->local_ctrl->consumed);
    if (consumed > k->sent_consumed) {
        net_am_hdr_t *h = &k->cred[k->ncred++ % NET_VALS];
        *h = (net_am_hdr_t){
            .dst = nc->peer_id[p], .src = nc->rank, .idx = k->idx, .key = nc->peer_key[p], .step = consumed};
        if (net_am_send(ep, 0, AM_CREDIT, h, NULL, 0))
            return -1;
        k->sent_consumed = consumed;
        moved = 1;
    }
    return moved;
}

static void *proxy_main(void *arg)
{
    net_proxy_t *P = arg;
    uint64_t last_move = eng_now_ns(), last_watch = last_move;
    for (;;) {
        int moved = 0;
        pthread_mutex_lock(&P->lock);
        if (dfccl_load_acquire(&net_ucx.stop)) {
            pthread_mutex_unlock(&P->lock);
            break;
        }
        if (P->hook_gen != net_ucx.hook_gen) { /* the GPU's device, for UCX's CUDA transports */
            P->hook_gen = net_ucx.hook_gen;
            if (net_ucx.hook)
                net_ucx.hook();
        }
        const uint64_t t = eng_now_ns();
        if (t - last_watch > NET_WATCH_NS) {
            last_watch = t;
            net_watch_peers(P);
        }
        for (struct eng_net_comm *nc = net_ucx.comms; nc; nc = nc->next) {
            if (P->idx == 0) /* an aborted one too: its news goes out */
                moved |= net_proxy_descs(nc);
            moved |= net_proxy_acks(nc, P); /* an aborted one too: a leaving peer waits */
            if (net_aborted(nc))
                continue;
            for (size_t i = 0; i < nc->nconns; i++) {
                if (nc->conns[i].px != P->idx)
                    continue;
                int r = net_proxy_conn(nc, &nc->conns[i]);
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
        net_ep_reap(P, 0); /* endpoints that failed in there, if unused */
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

/* Stops and destroys proxies [0, n) and the context. Called with net_ucx.lock held and no
 * proxy lock. */
static void proxies_stop(uint32_t n, uint32_t running)
{
    dfccl_store_release(&net_ucx.stop, 1);
    for (uint32_t i = 0; i < running; i++)
        pthread_join(net_ucx.px[i].thread, NULL);
    for (uint32_t i = 0; i < n; i++) {
        if (net_ucx.px[i].worker) {
            pthread_mutex_lock(&net_ucx.px[i].lock);
            net_ep_reap(&net_ucx.px[i], 1); /* no communicator is left to use them */
            pthread_mutex_unlock(&net_ucx.px[i].lock);
            ucp_worker_destroy(net_ucx.px[i].worker);
        }
        net_ucx.px[i].worker = NULL;
        pthread_mutex_destroy(&net_ucx.px[i].lock);
    }
    if (net_ucx.ctx)
        ucp_cleanup(net_ucx.ctx);
    net_ucx.ctx = NULL;
    net_ucx.nproxies = 0;
}

/* Called with net_ucx.lock held and no proxy lock. */
void net_proxy_release_locked(void)
{
    if (--net_ucx.refs > 0)
        return;
    proxies_stop(net_ucx.nproxies, net_ucx.nproxies);
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
 * communicator. Called with net_ucx.lock held. */
dfcclResult_t net_proxy_acquire_locked(void)
{
    if (net_ucx.refs++ > 0)
        return dfcclSuccess;
    ucp_config_t *cfg;
    ucs_status_t st = ucp_config_read(NULL, NULL, &cfg); /* UCX_* variables pass through */
    if (st != UCS_OK) {
        net_ucx.refs--;
        return ucs_error("ucp_config_read", st);
    }
    tcp_segments(cfg);
    const uint32_t n = eng_config.net_threads; /* >= 1: config resolves 0 (auto) */
    ucp_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    /* RMA whether or not this rank asks for puts: two workers whose contexts differ in it
     * cannot connect (UCX 1.13 aborts the process: "endpoint reconfiguration not
     * supported"), and DFCCL_NET_PUT may differ between ranks */
    p.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | UCP_FEATURE_RMA;
    p.mt_workers_shared = n > 1; /* the proxies' workers share the context from their threads */
    st = ucp_init(&p, cfg, &net_ucx.ctx);
    ucp_config_release(cfg);
    if (st != UCS_OK) {
        net_ucx.ctx = NULL;
        net_ucx.refs--;
        return ucs_error("ucp_init", st);
    }
    /* the memory types this UCX carries: CUDA ones only where it was built with CUDA and
     * its cuda transports loaded (eng_net_describe says so) */
    ucp_context_attr_t ca;
    memset(&ca, 0, sizeof(ca));
    ca.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    net_ucx.mem_types =
        ucp_context_query(net_ucx.ctx, &ca) == UCS_OK ? ca.memory_types : UCS_BIT(UCS_MEMORY_TYPE_HOST);
    net_ucx.stop = 0;
    uint32_t made = 0, running = 0;
    dfcclResult_t res = dfcclSuccess;
    for (; made < n; made++) {
        net_proxy_t *P = &net_ucx.px[made];
        *P = (net_proxy_t){.idx = made};
        pthread_mutex_init(&P->lock, NULL);
        ucp_worker_params_t wp;
        memset(&wp, 0, sizeof(wp));
        wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wp.thread_mode = UCS_THREAD_MODE_SERIALIZED; /* every call under P->lock */
        if ((st = ucp_worker_create(net_ucx.ctx, &wp, &P->worker)) != UCS_OK ||
            (st = ucp_worker_get_efd(P->worker, &P->efd)) != UCS_OK || (st = net_set_handlers(P)) != UCS_OK) {
            res = ucs_error("ucp_worker_create", st);
            made++;
            break;
        }
    }
    net_ucx.nproxies = made;
    for (; res == dfcclSuccess && running < made; running++) {
        int e = pthread_create(&net_ucx.px[running].thread, NULL, proxy_main, &net_ucx.px[running]);
        if (e) {
            res = eng_set_error(dfcclSystemError, "ucx", "pthread_create of proxy %u: %s", running,
                                strerror(e));
            break;
        }
    }
    if (res != dfcclSuccess) {
        proxies_stop(made, running);
        net_ucx.refs--;
    }
    return res;
}
