/* SPDX-License-Identifier: BSD-3-Clause */
/* Communicators on the net transport (eng_net.h): set-up, collective over the ranks (a
 * reference on the proxies, shadows and connections, one exchange of worker addresses,
 * endpoints from the cache, an agreement), the shadows the daemons write into, and a
 * teardown that pushes what is left, says goodbye and waits for receives in flight. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "eng_clock.h"
#include "eng_log.h"
#include "net_boot.h"
#include "transport.h"
#include "ucx_state.h"

/* Exchanged at set-up (net_boot_hdr_t; the worker addresses follow the header): every
 * rank's blob, padded to the longest, stride bytes apart in *all_p (NULL on every rank
 * when some rank has no memory for it: all agree first, through L's set-up table). */
static dfcclResult_t exchange(const eng_net_layout_t *L, const void *mine, size_t len, char **all_p,
                              size_t *stride_p, dfcclAllgatherFn_t ag, void *ctx)
{
    const int nranks = L->nranks;
    *all_p = NULL;
    uint64_t l = len;
    const uint64_t *lens = (const uint64_t *)eng_boot_ag(L->boot, L->boot_rec, &l, sizeof(l), ag, ctx);
    if (!lens)
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    uint64_t mx = 0;
    for (int i = 0; i < nranks; i++)
        mx = lens[i] > mx ? lens[i] : mx;
    char *pad = calloc(1, mx), *all = calloc((size_t)(unsigned)nranks, mx);
    const int32_t room = pad && all;
    const int32_t *rooms = (const int32_t *)eng_boot_ag(L->boot, L->boot_rec, &room, sizeof(room), ag, ctx);
    for (int i = 0; rooms && i < nranks; i++)
        if (!rooms[i]) {
            free(pad);
            free(all);
            return eng_set_error(dfcclNoMemory, "dfcclCommInit",
                                 "rank %d has no memory for the net transport's set-up (%d x %llu B)", i,
                                 nranks, (unsigned long long)mx);
        }
    if (!rooms) {
        free(pad);
        free(all);
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
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

/* Called with net_ucx.lock and every proxy lock held. */
static void net_free_locked(struct eng_net_comm *nc)
{
    const int N = nc->nranks;
    if (net_ucx.by_id[nc->id % NET_MAX_COMMS] == nc)
        net_ucx.by_id[nc->id % NET_MAX_COMMS] = NULL;
    for (size_t i = 0; nc->rkey && i < (size_t)net_ucx.nproxies * (size_t)N; i++)
        if (nc->rkey[i])
            ucp_rkey_destroy(nc->rkey[i]); /* before its endpoint can close */
    if (nc->memh)
        ucp_mem_unmap(net_ucx.ctx, nc->memh);
    for (uint32_t i = 0; nc->ep && i < nc->npx; i++)
        for (int p = 0; p < N; p++)
            if (*ep_of(nc, i, p))
                net_ep_put(*ep_of(nc, i, p)); /* shared: it stays for the peer's later communicators */
    for (int p = 0; nc->shadow && p < N; p++)
        free(nc->shadow[p]);
    for (size_t i = 0; nc->conns && i < nc->nconns; i++) {
        free(nc->conns[i].hdr);
        free(nc->conns[i].got);
        free(nc->conns[i].pend);
        free(nc->conns[i].fl);
        free(nc->conns[i].put_of);
    }
    free(nc->rkey);
    free(nc->peer_base);
    free(nc->acks);
    free(nc->owe_ack);
    free(nc->ack_fl);
    free(nc->put_peer);
    free(nc->shadow);
    free(nc->ep);
    free(nc->peer_id);
    free(nc->peer_key);
    free(nc->watch_pid);
    free(nc->peer_first);
    free(nc->peer_count);
    free(nc->dead);
    free(nc->owed);
    free(nc->bye);
    free(nc->conns);
    free(nc);
}

/* A free id: ids index the handlers' table, and one a peer still sends to (a late
 * message) must not name a new communicator soon. */
static int take_id_locked(struct eng_net_comm *nc)
{
    for (uint32_t tries = 0; tries < NET_MAX_COMMS; tries++) {
        const uint32_t id = ++net_ucx.next_id;
        if (id && !net_ucx.by_id[id % NET_MAX_COMMS]) {
            nc->id = id;
            net_ucx.by_id[id % NET_MAX_COMMS] = nc;
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

/* The communicator's arrays, its key and its id (in the handlers' table), and its shadows
 * of the net peers. Called with net_ucx.lock held and the proxies acquired. */
static dfcclResult_t comm_alloc_locked(struct eng_net_comm *nc, const eng_net_layout_t *L)
{
    const int N = L->nranks;
    const uint32_t mypx = net_ucx.nproxies;
    nc->shadow = calloc((size_t)N, sizeof(char *));
    nc->ep = calloc((size_t)N * mypx, sizeof(net_ep_t *));
    nc->peer_id = calloc((size_t)N, sizeof(uint32_t));
    nc->peer_key = calloc((size_t)N, sizeof(uint64_t));
    nc->watch_pid = calloc((size_t)N, sizeof(int32_t));
    nc->peer_first = calloc((size_t)N, sizeof(size_t));
    nc->peer_count = calloc((size_t)N, sizeof(uint32_t));
    nc->dead = calloc((size_t)N, 1);
    nc->owed = calloc((size_t)N, 1);
    nc->bye = calloc((size_t)N, sizeof(net_am_hdr_t));
    nc->conns = calloc(L->nconns ? L->nconns : 1, sizeof(net_conn_t));
    nc->rkey = calloc((size_t)N * mypx, sizeof(ucp_rkey_h));
    nc->peer_base = calloc((size_t)N, sizeof(uint64_t));
    nc->acks = calloc((size_t)N, sizeof(uint32_t));
    nc->owe_ack = calloc((size_t)N * mypx, 1);
    nc->ack_fl = calloc((size_t)N * mypx, sizeof(net_flush_t));
    nc->put_peer = calloc((size_t)N, 1);
    if (!nc->shadow || !nc->ep || !nc->peer_id || !nc->peer_key || !nc->watch_pid || !nc->peer_first ||
        !nc->peer_count || !nc->dead || !nc->owed || !nc->bye || !nc->conns || !nc->rkey || !nc->peer_base ||
        !nc->acks || !nc->owe_ack || !nc->ack_fl || !nc->put_peer)
        return eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
    if (draw_key(&nc->key)) /* before the table shows nc to the handlers */
        return eng_set_error(dfcclSystemError, "dfcclCommInit", "getrandom for a communicator key: %s",
                             strerror(errno));
    lock_proxies(); /* the handlers read the table */
    int no_id = take_id_locked(nc);
    unlock_proxies();
    if (no_id)
        return eng_set_error(dfcclNoMemory, "dfcclCommInit", "more than %d communicators with net peers",
                             NET_MAX_COMMS);
    for (int p = 0; p < N; p++) {
        if (p == L->rank || !L->shadow_size[p])
            continue;
        if (posix_memalign((void **)&nc->shadow[p], ENG_PAGE, L->shadow_size[p])) {
            nc->shadow[p] = NULL;
            return eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for a shadow of rank %d's FIFOs",
                                 p);
        }
        memset(nc->shadow[p], 0, L->shadow_size[p]);
    }
    return dfcclSuccess;
}

/* Connection i of the layout, the next of nc's: where its two directions live and how
 * its steps are sent. The connections come grouped by peer in the layout's order (the
 * peer lists its connections with me in the same order: that is how a message names
 * one). */
static dfcclResult_t conn_init(struct eng_net_comm *nc, const eng_net_layout_t *L, size_t i)
{
    dfcclResult_t res = dfcclSuccess;
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
    k->shadow_data = (char *)k->shadow_ctrl + L->ctrl_bytes; /* steps by put: put_connect_locked */
    k->local_ctrl = (eng_conn_ctrl_t *)(L->seg + d->recv_off);
    k->local_data = (char *)k->local_ctrl + L->ctrl_bytes;
    k->stage_shadow = k->shadow_data;
    k->stage_local = k->local_data;
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
    k->fl = calloc(L->depth, sizeof(net_flush_t));
    k->put_of = calloc(L->depth, sizeof(uint64_t));
    if (!k->hdr || !k->got || !k->pend || !k->fl || !k->put_of)
        res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
    return res;
}

/* My workers' addresses, for the peers (release_addresses lets them go). Called with
 * net_ucx.lock held. */
static dfcclResult_t get_addresses(void *addr[], size_t addr_len[], size_t *sum_p)
{
    dfcclResult_t res = dfcclSuccess;
    for (uint32_t i = 0; i < net_ucx.nproxies && res == dfcclSuccess; i++) {
        pthread_mutex_lock(&net_ucx.px[i].lock);
        if (ucp_worker_get_address(net_ucx.px[i].worker, (ucp_address_t **)&addr[i], &addr_len[i]) !=
            UCS_OK) {
            addr[i] = NULL;
            addr_len[i] = 0;
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "ucp_worker_get_address failed");
        }
        pthread_mutex_unlock(&net_ucx.px[i].lock);
        *sum_p += addr_len[i];
    }
    return res;
}

/* Called with net_ucx.lock held. */
static void release_addresses(void *addr[])
{
    for (uint32_t i = 0; i < ENG_MAX_NET_THREADS; i++)
        if (addr[i]) {
            pthread_mutex_lock(&net_ucx.px[i].lock);
            ucp_worker_release_address(net_ucx.px[i].worker, (ucp_address_t *)addr[i]);
            pthread_mutex_unlock(&net_ucx.px[i].lock);
        }
}

/* This rank's part of the set-up, before the exchange: a reference on the proxies
 * (*acquired_p), the communicator's memory, key, id and connections, and my workers'
 * addresses. Called with net_ucx.lock held. */
static dfcclResult_t setup_local_locked(struct eng_net_comm *nc, const eng_net_layout_t *L, int *acquired_p,
                                        void *addr[], size_t addr_len[], size_t *addr_sum_p)
{
    dfcclResult_t res = net_proxy_acquire_locked();
    *acquired_p = res == dfcclSuccess;
    if (res == dfcclSuccess)
        res = comm_alloc_locked(nc, L);
    for (size_t i = 0; i < L->nconns && res == dfcclSuccess; i++)
        res = conn_init(nc, L, i);
    if (res == dfcclSuccess)
        res = get_addresses(addr, addr_len, addr_sum_p);
    return res;
}

/* What this rank gives the exchange (net_boot.h): its status, the header, then its
 * workers' addresses. NULL and *len_p 0 without memory. Called with net_ucx.lock held. */
static char *boot_blob(const struct eng_net_comm *nc, dfcclResult_t res, int put, void *const addr[],
                       const size_t addr_len[], size_t addr_sum, size_t *len_p)
{
    const size_t len = sizeof(int32_t) + sizeof(net_boot_hdr_t) + addr_sum;
    char *blob = calloc(1, len);
    *len_p = blob ? len : 0;
    if (!blob)
        return NULL;
    int32_t st = res;
    memcpy(blob, &st, sizeof(st));
    net_boot_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.id = nc->id;
    h.key = nc->key;
    h.pid = (int32_t)getpid();
    h.npx = res == dfcclSuccess ? net_ucx.nproxies : 0;
    h.put = (uint32_t)put;
    char *at = blob + sizeof(st) + sizeof(h);
    for (uint32_t i = 0; i < h.npx; i++) {
        h.addr_len[i] = (uint32_t)addr_len[i];
        memcpy(at, addr[i], addr_len[i]);
        at += addr_len[i];
    }
    net_where_am_i(h.host, sizeof(h.host));
    memcpy(blob + sizeof(st), &h, sizeof(h));
    return blob;
}

/* Rank p's header in the exchange's result. */
static net_boot_hdr_t boot_hdr(const char *all, size_t stride, int p)
{
    net_boot_hdr_t h;
    memcpy(&h, all + (size_t)p * stride + sizeof(int32_t), sizeof(h));
    return h;
}

/* After the exchange: every rank's status, the proxies the communicator uses (the
 * fewest any rank runs: lanes map alike everywhere), and whether steps go by put (every
 * rank asked: each decides alike from the same headers). Called with net_ucx.lock held. */
static dfcclResult_t peers_agree_locked(struct eng_net_comm *nc, const eng_net_layout_t *L, const char *all,
                                        size_t stride, dfcclResult_t res)
{
    nc->npx = net_ucx.nproxies;
    /* a rank that could not set up may have sent its status alone (setup_refused): no
     * headers then, and every rank decides alike from the stride */
    const int hdrs = all && stride >= sizeof(int32_t) + sizeof(net_boot_hdr_t);
    for (int p = 0; p < nc->nranks && res == dfcclSuccess && all; p++) {
        int32_t st;
        memcpy(&st, all + (size_t)p * stride, sizeof(st));
        if (st < 0 || !hdrs)
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "rank %d could not set up UCX", p);
        else if (boot_hdr(all, stride, p).npx < nc->npx)
            nc->npx = boot_hdr(all, stride, p).npx;
    }
    nc->put = hdrs;
    for (int p = 0; p < nc->nranks && hdrs; p++)
        nc->put &= boot_hdr(all, stride, p).put != 0;
    if (!nc->put && L->put_cuda && res == dfcclSuccess) /* the caller agreed with every rank first */
        res = eng_set_error(dfcclInternalError, "dfcclCommInit",
                            "device FIFOs for the net peers, but some rank does not take steps by put");
    for (size_t i = 0; i < nc->nconns && res == dfcclSuccess; i++)
        nc->conns[i].px = L->conns[i].lane % nc->npx;
    return res;
}

/* An endpoint from each of my first npx workers to the peer's worker of the same index,
 * from the worker's cache when another communicator has one already. Called with
 * net_ucx.lock held. */
static dfcclResult_t peers_connect_locked(struct eng_net_comm *nc, const eng_net_layout_t *L, const char *all,
                                          size_t stride, dfcclResult_t res)
{
    char myhost[128];
    net_where_am_i(myhost, sizeof(myhost));
    for (int p = 0; p < nc->nranks && res == dfcclSuccess; p++) {
        if (p == nc->rank || !L->shadow_size[p])
            continue;
        const net_boot_hdr_t h = boot_hdr(all, stride, p);
        const char *paddr = all + (size_t)p * stride + sizeof(int32_t) + sizeof(h);
        const int same_host = !strncmp(h.host, myhost, sizeof(h.host));
        nc->peer_id[p] = h.id;
        nc->peer_key[p] = h.key;
        nc->watch_pid[p] = same_host ? h.pid : 0;
        for (uint32_t i = 0; i < nc->npx && res == dfcclSuccess; paddr += h.addr_len[i], i++) {
            ucs_status_t st = UCS_OK;
            pthread_mutex_lock(&net_ucx.px[i].lock);
            *ep_of(nc, i, p) = net_ep_get(&net_ucx.px[i], paddr, h.addr_len[i], h.host, nc->watch_pid[p],
                                          !same_host, p, &st);
            pthread_mutex_unlock(&net_ucx.px[i].lock);
            if (st != UCS_OK)
                res = eng_set_error(dfcclSystemError, "dfcclCommInit",
                                    "ucp_ep_create(rank %d, worker %u): %s", p, i, ucs_status_string(st));
        }
    }
    return res;
}

/* Steps by put: my receive segment registered (*memh_p) and what the peers need to put
 * into it, [int32 status][uint64 address][packed rkey], into *blob_p (freed by the
 * caller). A local failure goes into the status. Called with net_ucx.lock held. */
static dfcclResult_t put_blob_locked(struct eng_net_comm *nc, const eng_net_layout_t *L, dfcclResult_t res,
                                     char **blob_p, size_t *len_p)
{
    void *rk = NULL;
    size_t rk_len = 0;
    ucs_status_t st = UCS_OK;
    char *const region = L->put_seg ? L->put_seg : L->seg; /* where puts land */
    if (res == dfcclSuccess) {
        ucp_mem_map_params_t mp;
        memset(&mp, 0, sizeof(mp));
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
        mp.address = region;
        mp.length = L->seg_bytes;
        mp.memory_type = L->put_cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
        if ((st = ucp_mem_map(net_ucx.ctx, &mp, &nc->memh)) != UCS_OK)
            nc->memh = NULL;
        else
            st = ucp_rkey_pack(net_ucx.ctx, nc->memh, &rk, &rk_len);
        if (st != UCS_OK)
            res = eng_set_error(dfcclSystemError, "dfcclCommInit",
                                "registering the receive segment (%zu B) "
                                "with UCX for puts: %s",
                                L->seg_bytes, ucs_status_string(st));
    }
    const size_t len = sizeof(int32_t) + sizeof(uint64_t) + (res == dfcclSuccess ? rk_len : 0);
    char *blob = calloc(1, len);
    if (blob) {
        const int32_t s32 = res;
        const uint64_t base = (uint64_t)(uintptr_t)region;
        memcpy(blob, &s32, sizeof(s32));
        memcpy(blob + sizeof(s32), &base, sizeof(base));
        if (res == dfcclSuccess)
            memcpy(blob + sizeof(s32) + sizeof(base), rk, rk_len);
    }
    if (rk)
        ucp_rkey_buffer_release(rk);
    *blob_p = blob;
    *len_p = blob ? len : 0;
    return blob || res != dfcclSuccess ? res : dfcclNoMemory;
}

/* Which net peers take steps by put: those on other hosts, whose endpoints report
 * errors; and every one when the FIFOs are device memory. A same-host endpoint has no
 * error handling, and UCX puts host memory there with cma, whose failure against a
 * peer that died is fatal to the process (ucx_ep.c): those steps stay active messages.
 * Device memory goes by cuda_ipc there. Both ends decide alike ("same host" is). */
static int put_to(const struct eng_net_comm *nc, int p)
{
    return nc->put && (nc->watch_pid[p] == 0 || nc->put_cuda);
}

/* Steps by put: every put peer's segment, its rkey unpacked on each of my endpoints to it,
 * and my connections to it placed and addressed. Called with net_ucx.lock held. */
static dfcclResult_t put_connect_locked(struct eng_net_comm *nc, const eng_net_layout_t *L, const char *all,
                                        size_t stride, dfcclResult_t res)
{
    for (int p = 0; p < nc->nranks && res == dfcclSuccess; p++) {
        const char *b = all + (size_t)p * stride;
        int32_t st;
        memcpy(&st, b, sizeof(st));
        if (st < 0) {
            res = eng_set_error(dfcclSystemError, "dfcclCommInit",
                                "rank %d could not register its receive segment for puts", p);
            break;
        }
        if (p == nc->rank || !L->shadow_size[p] || !put_to(nc, p))
            continue;
        nc->put_peer[p] = 1;
        memcpy(&nc->peer_base[p], b + sizeof(st), sizeof(uint64_t));
        for (uint32_t i = 0; i < nc->npx && res == dfcclSuccess; i++) {
            pthread_mutex_lock(&net_ucx.px[i].lock);
            ucp_rkey_h *rk = &nc->rkey[(size_t)i * (size_t)nc->nranks + (size_t)p];
            const ucs_status_t us =
                ucp_ep_rkey_unpack((*ep_of(nc, i, p))->ep, b + sizeof(st) + sizeof(uint64_t), rk);
            pthread_mutex_unlock(&net_ucx.px[i].lock);
            if (us != UCS_OK) {
                *rk = NULL;
                res =
                    eng_set_error(dfcclSystemError, "dfcclCommInit",
                                  "ucp_ep_rkey_unpack(rank %d, worker %u): %s", p, i, ucs_status_string(us));
            }
        }
    }
    for (size_t i = 0; i < nc->nconns && res == dfcclSuccess; i++) { /* conns[i] is L->conns[i]'s */
        net_conn_t *k = &nc->conns[i];
        const eng_net_conn_desc_t *d = &L->conns[i];
        if (!(k->put = nc->put_peer[k->peer]))
            continue;
        k->remote = nc->peer_base[k->peer] + d->peer_off + L->ctrl_bytes;
        if (L->put_seg) /* the data where the caller placed it for puts (device memory) */
            k->local_data = L->put_seg + d->recv_off + L->ctrl_bytes;
        if (L->put_shadow && L->put_shadow[k->peer])
            k->shadow_data = L->put_shadow[k->peer] + d->shadow_off + L->ctrl_bytes;
    }
    return res;
}

/* Steps by put (every rank asked: nc->put is the same everywhere): registration and the
 * exchange of segments, collective. Called without net_ucx.lock. */
static dfcclResult_t put_setup(struct eng_net_comm *nc, const eng_net_layout_t *L, dfcclResult_t res,
                               dfcclAllgatherFn_t ag, void *ctx)
{
    char *blob = NULL, *all = NULL;
    size_t len = 0, stride = 0;
    pthread_mutex_lock(&net_ucx.lock);
    res = put_blob_locked(nc, L, res, &blob, &len);
    pthread_mutex_unlock(&net_ucx.lock);
    int32_t none = dfcclNoMemory;
    const dfcclResult_t xres = blob ? exchange(L, blob, len, &all, &stride, ag, ctx)
                                    : exchange(L, &none, sizeof(none), &all, &stride, ag, ctx);
    free(blob);
    if (xres != dfcclSuccess && res == dfcclSuccess)
        res = xres;
    pthread_mutex_lock(&net_ucx.lock);
    if (all)
        res = put_connect_locked(nc, L, all, stride, res);
    pthread_mutex_unlock(&net_ucx.lock);
    free(all);
    return res;
}

/* Every rank's endpoints exist before anyone sends: the ranks agree on success. */
static dfcclResult_t agree(const eng_net_layout_t *L, dfcclResult_t res, dfcclAllgatherFn_t ag, void *ctx)
{
    const int N = L->nranks;
    const int32_t st = res;
    const int32_t *sts = (const int32_t *)eng_boot_ag(L->boot, L->boot_rec, &st, sizeof(st), ag, ctx);
    if (!sts) {
        if (res == dfcclSuccess)
            res = eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    } else {
        for (int p = 0; p < N; p++)
            if (sts[p] < 0 && res == dfcclSuccess)
                res = eng_set_error(dfcclSystemError, "dfcclCommInit", "rank %d failed to set up UCX", p);
    }
    return res;
}

/* A rank that cannot set up (res) still takes part in the set-up's all-gathers, its
 * blob a status alone (a zero header: no rank then takes steps by put, so nobody
 * exchanges for them), and returns res: every rank fails alike. */
static dfcclResult_t setup_refused(const eng_net_layout_t *L, dfcclAllgatherFn_t ag, void *ctx,
                                   dfcclResult_t res)
{
    const int32_t st = res;
    char *all = NULL;
    size_t stride = 0;
    exchange(L, &st, sizeof(st), &all, &stride, ag, ctx);
    free(all);
    agree(L, res, ag, ctx);
    return res;
}

/* The communicator joins the proxies' list. Called with net_ucx.lock held. */
static void comm_publish_locked(struct eng_net_comm *nc)
{
    lock_proxies();
    nc->next = net_ucx.comms;
    net_ucx.comms = nc;
    /* an endpoint that failed since this rank took it had no way to tell us */
    for (uint32_t i = 0; i < nc->npx; i++)
        for (int p = 0; p < nc->nranks; p++)
            if (*ep_of(nc, i, p) && (*ep_of(nc, i, p))->failed && !nc->dead[p])
                net_peer_lost(nc, p, "its endpoint failed during set-up");
    unlock_proxies();
}

/* A set-up that failed. Called with net_ucx.lock held. */
static void comm_drop_locked(struct eng_net_comm *nc, int acquired)
{
    if (!acquired) {
        free(nc);
        return;
    }
    lock_proxies();
    nc->closing = 1;
    net_free_locked(nc);
    unlock_proxies();
    net_proxy_release_locked();
}

static void log_setup(const struct eng_net_comm *nc, const eng_net_layout_t *L)
{
    int nnet = 0, watched = 0, nput = 0;
    for (int p = 0; p < L->nranks; p++) {
        nnet += p != L->rank && L->shadow_size[p] > 0;
        watched += nc->watch_pid[p] != 0;
        nput += nc->put_peer[p];
    }
    char pieces[48] = "whole", steps[192] = "as active messages";
    if (eng_config.net_piece)
        snprintf(pieces, sizeof(pieces), "in pieces of at most %llu bytes",
                 (unsigned long long)eng_config.net_piece);
    if (nput)
        snprintf(steps, sizeof(steps),
                 "by RDMA put into the peer's registered FIFO, then a header-only message, those under %llu "
                 "bytes as active messages (%d peer(s)%s)",
                 (unsigned long long)nc->put_min, nput,
                 nput < nnet ? "; to the others as active messages" : "");
    else if (nc->put)
        snprintf(steps, sizeof(steps),
                 "as active messages (puts asked for, but the peers are on this host: "
                 "a cma put to one that died would abort this process)");
    dfccl_info(
        "communicator %016llx rank %d: %d peer(s) over UCX: %d on other hosts (error-reporting "
        "endpoints), %d on this host (process watched, eager steps %s); steps %s; %u proxy thread(s)%s",
        (unsigned long long)L->uid, L->rank, nnet, nnet - watched, watched, pieces, steps, nc->npx,
        eng_config.net_threads_auto ? " (DFCCL_NET_THREADS auto: one per 2 cores of the rank, up to 4)" : "");
}

dfcclResult_t eng_net_setup(const eng_net_layout_t *L, dfcclAllgatherFn_t ag, void *ctx, eng_net_t **net_p)
{
    void *addr[ENG_MAX_NET_THREADS] = {0};
    size_t addr_len[ENG_MAX_NET_THREADS] = {0}, addr_sum = 0, len = 0, stride = 0;
    char *all = NULL;
    int acquired = 0;
    *net_p = NULL;

    if (L->status != dfcclSuccess)
        return setup_refused(L, ag, ctx, L->status);
    pthread_mutex_lock(&net_ucx.lock);
    struct eng_net_comm *nc = calloc(1, sizeof(*nc));
    if (!nc) {
        pthread_mutex_unlock(&net_ucx.lock);
        return setup_refused(
            L, ag, ctx, eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport"));
    }
    nc->uid = L->uid;
    nc->rank = L->rank;
    nc->nranks = L->nranks;
    nc->depth = L->depth;
    nc->bell = L->seg ? &((eng_seg_hdr_t *)L->seg)->bell : NULL;
    nc->me = (eng_seg_hdr_t *)L->seg;
    nc->abort_words[0] = L->abort_words[0];
    nc->abort_words[1] = L->abort_words[1];
    nc->put_cuda = L->put_cuda;
    nc->put_landed = L->put_landed;
    nc->put_min = L->put_min;
    /* a local failure is reported through the exchange below: every rank takes part
     * in every allgather, so nobody waits for a rank that gave up */
    dfcclResult_t res = setup_local_locked(nc, L, &acquired, addr, addr_len, &addr_sum);
    char *blob = boot_blob(nc, res, L->put && L->seg && L->seg_bytes, addr, addr_len, addr_sum, &len);
    release_addresses(addr);
    pthread_mutex_unlock(&net_ucx.lock);

    /* collective: every rank exchanges, so that a local failure fails everyone (without
     * memory for the blob, a status that says so) */
    const int32_t none = dfcclNoMemory;
    if (!blob && res == dfcclSuccess)
        res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
    dfcclResult_t xres = blob ? exchange(L, blob, len, &all, &stride, ag, ctx)
                              : exchange(L, &none, sizeof(none), &all, &stride, ag, ctx);
    pthread_mutex_lock(&net_ucx.lock);
    if (xres != dfcclSuccess && res == dfcclSuccess)
        res = xres;
    res = peers_agree_locked(nc, L, all, stride, res);
    res = peers_connect_locked(nc, L, all, stride, res);
    free(blob);
    free(all);
    pthread_mutex_unlock(&net_ucx.lock);
    if (nc->put)
        res = put_setup(nc, L, res, ag, ctx);

    res = agree(L, res, ag, ctx);

    pthread_mutex_lock(&net_ucx.lock);
    if (res != dfcclSuccess) {
        comm_drop_locked(nc, acquired);
        pthread_mutex_unlock(&net_ucx.lock);
        return res;
    }
    comm_publish_locked(nc);
    pthread_mutex_unlock(&net_ucx.lock);
    log_setup(nc, L);
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
    pthread_mutex_lock(&net_ucx.lock);
    const uint64_t types = net_ucx.mem_types;
    pthread_mutex_unlock(&net_ucx.lock);
    size_t off = (size_t)snprintf(buf, len, "UCX %s, memory types:", ucp_get_version_string());
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && off < len; i++)
        if (types & UCS_BIT(kinds[i].t))
            off += (size_t)snprintf(buf + off, len - off, " %s", kinds[i].name);
    return (types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

dfcclResult_t eng_net_open(int *cuda_p)
{
    pthread_mutex_lock(&net_ucx.lock);
    const dfcclResult_t res = net_proxy_acquire_locked();
    *cuda_p = res == dfcclSuccess && (net_ucx.mem_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    pthread_mutex_unlock(&net_ucx.lock);
    return res;
}

void eng_net_close(void)
{
    pthread_mutex_lock(&net_ucx.lock);
    net_proxy_release_locked();
    pthread_mutex_unlock(&net_ucx.lock);
}

void eng_net_thread_hook(void (*fn)(void))
{
    pthread_mutex_lock(&net_ucx.lock);
    lock_proxies();
    if (net_ucx.hook != fn) {
        net_ucx.hook = fn;
        net_ucx.hook_gen++;
    }
    unlock_proxies();
    pthread_mutex_unlock(&net_ucx.lock);
}

int eng_net_puts(const eng_net_t *nc, int p)
{
    if (!nc)
        return 0;
    if (p >= 0)
        return p < nc->nranks && nc->put_peer[p];
    for (int q = 0; q < nc->nranks; q++)
        if (nc->put_peer[q])
            return 1;
    return 0;
}

char *eng_net_shadow(eng_net_t *nc, int p)
{
    return nc && p >= 0 && p < nc->nranks ? nc->shadow[p] : NULL;
}

const eng_seg_hdr_t *eng_net_published(const eng_net_t *nc, int p)
{
    return nc && p >= 0 && p < nc->nranks ? (const eng_seg_hdr_t *)nc->shadow[p] : NULL;
}

void eng_net_ask(eng_net_t *nc)
{
    if (!nc)
        return;
    const uint64_t now = eng_now_ns();
    uint64_t last = dfccl_load_relaxed(&nc->ask_ns);
    if (now - last >= NET_ASK_NS && dfccl_cas_relaxed(&nc->ask_ns, &last, now))
        dfccl_store_relaxed(&nc->asking, 1); /* proxy 0 sends the asks */
}

void eng_net_tell(eng_net_t *nc)
{
    if (nc)
        dfccl_store_relaxed(&nc->telling, 1);
}

/* While a teardown holds every proxy lock: progress the workers, and answer the
 * goodbyes of every communicator's peers (a peer destroying another communicator may
 * wait for an answer from this process meanwhile: two ranks destroying two
 * communicators in opposite orders would otherwise each wait out the other). */
static void progress_all_locked(void)
{
    static uint64_t watched; /* same-host peers' processes, as often as the proxies look */
    const uint64_t now = eng_now_ns();
    for (struct eng_net_comm *c = net_ucx.comms; c; c = c->next)
        for (uint32_t i = 0; i < net_ucx.nproxies; i++)
            net_proxy_acks(c, &net_ucx.px[i]);
    for (uint32_t i = 0; i < net_ucx.nproxies; i++) {
        if (now - watched > NET_WATCH_NS)
            net_watch_peers(&net_ucx.px[i]);
        ucp_worker_progress(net_ucx.px[i].worker);
    }
    if (now - watched > NET_WATCH_NS)
        watched = now;
}

/* Steps by put to live peer p not yet done: a flush in flight (its puts, or the answer
 * to p's goodbye), steps whose headers have not gone, steps the daemon posted that have
 * not been put (unless the communicator aborted: nobody waits for those). */
static int peer_unflushed(const struct eng_net_comm *nc, int p)
{
    if (!nc->put_peer[p] || DFCCL_READ_ONCE(nc->dead[p]))
        return 0;
    for (uint32_t i = 0; i < nc->npx; i++)
        if (nc->ack_fl[(size_t)i * (size_t)nc->nranks + (size_t)p].busy)
            return 1;
    const int aborted = net_aborted(nc);
    for (size_t i = nc->peer_first[p]; i < nc->peer_first[p] + nc->peer_count[p]; i++) {
        const net_conn_t *k = &nc->conns[i];
        for (uint32_t r = 0; r < nc->depth; r++)
            if (k->fl[r].busy)
                return 1;
        if (!aborted &&
            (k->notified < k->sent_posted || dfccl_load_acquire64(&k->shadow_ctrl->posted) > k->sent_posted))
            return 1;
    }
    return 0;
}

/* Steps by put not yet done to some live peer (peer_unflushed). */
static int put_pending(const struct eng_net_comm *nc)
{
    for (int p = 0; nc->put && p < nc->nranks; p++)
        if (peer_unflushed(nc, p))
            return 1;
    return 0;
}

/* Steps by put: after my goodbye, every live peer's answers (one a worker: it flushed its
 * puts into my segment and puts nothing more), or its own goodbye (sent after its last
 * put), or its failure. Returns nonzero when some peer gave none by the teardown's
 * deadline. Called with net_ucx.lock and every proxy lock held. */
static int wait_answers(struct eng_net_comm *nc, uint64_t deadline)
{
    for (;;) {
        int waiting = 0;
        for (int p = 0; p < nc->nranks && !waiting; p++)
            waiting = nc->put_peer[p] && !DFCCL_READ_ONCE(nc->dead[p]) && !peer_closed(nc, p) &&
                      dfccl_load_relaxed(&nc->acks[p]) < nc->npx;
        if (!waiting)
            return 0;
        if (eng_now_ns() > deadline)
            return 1;
        progress_all_locked();
    }
}

/* Flush workers [0, npx), all at once, until the deadline, progressing every worker
 * (progress_all_locked): a peer in its own teardown holds its proxies' locks, so only
 * that teardown progresses its workers, and it may be waiting on another of my workers
 * than the one I wait on. Flushing and progressing one worker after the other, two
 * ranks each waited out the other (2 proxies, ranks on other hosts). Returns nonzero
 * when some flush did not finish (UCX frees its request when it does). Called with
 * net_ucx.lock and every proxy lock held. */
static int flush_all_locked(uint32_t npx, uint64_t deadline)
{
    ucs_status_ptr_t r[ENG_MAX_NET_THREADS];
    int pending = 0, left = 0;
    for (uint32_t i = 0; i < npx; i++) {
        ucp_request_param_t prm;
        memset(&prm, 0, sizeof(prm));
        r[i] = ucp_worker_flush_nbx(net_ucx.px[i].worker, &prm);
        pending |= UCS_PTR_IS_PTR(r[i]);
    }
    while (pending) { /* one pass at least: a deadline spent by the phases before */
        progress_all_locked();
        pending = 0;
        for (uint32_t i = 0; i < npx; i++)
            pending |= UCS_PTR_IS_PTR(r[i]) && ucp_request_check_status(r[i]) == UCS_INPROGRESS;
        if (eng_now_ns() >= deadline)
            break;
    }
    for (uint32_t i = 0; i < npx; i++) {
        if (!UCS_PTR_IS_PTR(r[i]))
            continue;
        if (ucp_request_check_status(r[i]) == UCS_INPROGRESS) {
            ucp_request_cancel(net_ucx.px[i].worker, r[i]);
            left = 1;
        }
        ucp_request_free(r[i]);
    }
    return left;
}

int eng_net_teardown(eng_net_t *nc)
{
    if (!nc)
        return 0;
    pthread_mutex_lock(&net_ucx.lock);
    lock_proxies();
    /* steps the daemon posted before the last collective completed here may not have
     * gone out yet: push them (the peers may still need them), then say goodbye, so
     * that peers still running the collective see a clean departure, not a failure.
     * Steps by put go out whole: their puts completed and their headers sent, so that
     * the goodbye follows every put of mine (a peer's teardown waits for it, or for an
     * answer to its own goodbye: see wait_answers) */
    const uint64_t deadline = eng_now_ns() + NET_BYE_NS; /* every wait below, together */
    for (int pass = 0, moved = 1;
         (moved || put_pending(nc)) && (nc->put || pass < 1000000) && eng_now_ns() < deadline; pass++) {
        moved = net_proxy_descs(nc); /* the news of an abort just found, too */
        for (size_t i = 0; i < nc->nconns; i++)
            if (net_proxy_conn(nc, &nc->conns[i]) > 0)
                moved = 1;
        progress_all_locked();
    }
    /* steps by put: every put of mine completed (the flushes) and the goodbyes owed an
     * answer answered before my goodbye, which a peer waiting for either takes as both.
     * A peer whose puts did not complete in time gets no goodbye: a late put could still
     * land in its segment, so it waits out its deadline and keeps the segment (and so do I) */
    int skipped = 0;
    uint8_t *skip = nc->put ? calloc((size_t)nc->nranks, 1) : NULL;
    if (nc->put) {
        do /* the answers owed, and their flushes */
            progress_all_locked();
        while (put_pending(nc) && eng_now_ns() < deadline);
        for (int p = 0; p < nc->nranks; p++)
            if (peer_unflushed(nc, p) && (!skip || (skip[p] = 1)))
                skipped++;
        if (skipped)
            dfccl_warn(
                "communicator %016llx: puts to %d peer(s) not completed %llu s into teardown: no goodbye to "
                "them, and this rank's segment stays mapped (leaked)",
                (unsigned long long)nc->uid, skipped, NET_BYE_NS / 1000000000ull);
    }
    /* a goodbye to each peer on every worker: the peer's proxy that sees one of our
     * endpoints close must already know we left, not take it for a failure. A put peer
     * that left already gets one too: it may wait for it (wait_answers) */
    for (int p = 0; p < nc->nranks; p++) {
        if ((nc->dead[p] && !(nc->put_peer[p] && peer_closed(nc, p))) || (skip ? skip[p] : skipped))
            continue;
        nc->bye[p] = (net_am_hdr_t){.dst = nc->peer_id[p], .src = nc->rank, .key = nc->peer_key[p]};
        for (uint32_t i = 0; i < nc->npx; i++)
            if (*ep_of(nc, i, p))
                net_am_send((*ep_of(nc, i, p))->ep, 0, AM_BYE, &nc->bye[p], NULL, 0);
    }
    free(skip);
    /* from here on, messages for this communicator are dropped by the handlers */
    nc->closing = 1;
    /* everything has landed, and my goodbyes are out (UCX reads their headers in nc) */
    const int unflushed = flush_all_locked(nc->npx, deadline);
    /* rendezvous receives still writing into the caller's segment finish first: UCX
     * cannot cancel one (ucp_request_cancel acts on tag receives only), and a peer that
     * failed completes it with an error (its endpoint handles errors: rendezvous runs
     * to other hosts only) */
    while (dfccl_load_relaxed(&nc->inflight) && eng_now_ns() < deadline)
        progress_all_locked();
    uint64_t left = dfccl_load_relaxed(&nc->inflight);
    if (!left && skipped) {
        left = 1; /* a put of mine may still run, and a peer without my goodbye may put */
    } else if (!left && !unflushed && nc->put && wait_answers(nc, deadline)) {
        left = 1; /* a peer may still put into my segment: it stays mapped */
        dfccl_warn(
            "communicator %016llx: a peer did not answer the goodbye within %llu s (its puts into this "
            "rank's segment may not have finished); the segment stays mapped (leaked)",
            (unsigned long long)nc->uid, NET_BYE_NS / 1000000000ull);
    } else if (!left && (unflushed || (nc->put && flush_all_locked(nc->npx, deadline)))) {
        /* (with puts, the headers and answers sent by flush completions in the waits
         * above) UCX reads their headers in nc until they are out */
        left = 1;
        dfccl_warn("communicator %016llx: messages to the net still going out %llu s into teardown; the "
                   "communicator's memory stays (leaked)",
                   (unsigned long long)nc->uid, NET_BYE_NS / 1000000000ull);
    } else if (left)
        dfccl_warn("communicator %016llx: %llu receive(s) from the net still in flight %llu s into teardown; "
                   "the memory they land in stays mapped (leaked)",
                   (unsigned long long)nc->uid, (unsigned long long)left, NET_BYE_NS / 1000000000ull);
    for (struct eng_net_comm **pp = &net_ucx.comms; *pp; pp = &(*pp)->next)
        if (*pp == nc) {
            *pp = nc->next;
            break;
        }
    if (left) {
        /* their completions still name nc and write into the caller's segment: keep nc
         * (and the proxies), and tell the caller to keep the segment mapped */
        if (net_ucx.by_id[nc->id % NET_MAX_COMMS] == nc)
            net_ucx.by_id[nc->id % NET_MAX_COMMS] = NULL;
        unlock_proxies();
        pthread_mutex_unlock(&net_ucx.lock);
        return 1;
    }
    net_free_locked(nc);
    unlock_proxies();
    net_proxy_release_locked();
    pthread_mutex_unlock(&net_ucx.lock);
    return 0;
}
