/* SPDX-License-Identifier: BSD-3-Clause */
/* Receiving: the active-message handlers, run by a proxy inside UCX's progress with its
 * lock held. A step lands in the receive FIFO (net_landing.h publishes it in order), a
 * credit moves the sender's shadow, a goodbye marks a peer's clean departure, an ask is
 * owed an answer, descriptions land in my copy of the sender's header; anything else, or
 * a message without the communicator's key, is dropped and counted. */
#include <string.h>

#include "eng_bell.h"
#include "eng_log.h"
#include "eng_sig_desc.h"
#include "ucx_state.h"

/* The communicator a message names: the id indexes the table, the key must match too.
 * Ids are few and sequential, so a late message for a destroyed communicator (or a stray
 * or forged one) could name a live one by its id alone; it cannot guess the key. Such a
 * message is dropped, counted, and logged at debug level. A communicator this rank is
 * tearing down takes only what its teardown waits for (closing_too: goodbyes and their
 * answers). */
static struct eng_net_comm *comm_by_id(const net_am_hdr_t *h, const char *what, int closing_too)
{
    struct eng_net_comm *nc = net_ucx.by_id[h->dst % NET_MAX_COMMS];
    if (nc && net_addressed(nc->id, nc->key, h->dst, h->key) && (!nc->closing || closing_too))
        return nc;
    const uint64_t n = dfccl_add_fetch_relaxed(&net_ucx.dropped, 1);
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
    struct eng_net_comm *nc = comm_by_id(h, what, 0);
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
static void step_landed(struct eng_net_comm *nc, net_conn_t *k, uint64_t step, uint64_t len, uint64_t total,
                        uint32_t tag)
{
    const int landed = net_land_piece(&k->in, k->got, k->local_ctrl, nc->depth, step, len, total, tag);
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
        step_landed(pd->nc, pd->k, pd->step, length, length, pd->tag);
    else
        net_peer_lost(pd->nc, pd->k->peer, ucs_status_string(status));
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
    const int put = k && (h.flags & NET_STEP_PUT) != 0;
    /* on a connection by put a small step comes as messages (net_step_am), the rest by put */
    const int by_put = k && k->put && !net_step_am(nc, h.total);
    if (k && (!net_step_fits(h.total, h.off, length, k->rchunk, rndv, put, by_put) ||
              !net_in_window(&k->in, k->local_ctrl, nc->depth, h.step))) {
        dfccl_error("communicator %016llx (rank %d): a %zu-byte piece at %u of %llu-byte step %llu from "
                    "rank %d does not fit its %llu-byte FIFO step, the step is outside its window (%llu "
                    "published, %llu consumed, depth %u), or it came as a message where steps go by put "
                    "(or the reverse): a protocol error; communicator aborted",
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
    if (put) {         /* its bytes are in the slot: the sender flushed its put before this header */
        if (nc->put_landed)
            nc->put_landed(); /* and visible to the daemon (GPUDirect RDMA into device memory) */
        step_landed(nc, k, h.step, h.total, h.total, h.tag);
        return UCS_OK;
    }
    const uint32_t slot = (uint32_t)(h.step % nc->depth);
    /* host memory: the FIFO itself, or beside device FIFOs its host-staged twin */
    char *dst = k->stage_local + (uint64_t)slot * k->rchunk;
    if (!rndv) { /* a whole step or one piece of it, read in place from UCX's buffer */
        memcpy(dst + h.off, data, length);
        step_landed(nc, k, h.step, length, h.total, h.tag);
        return UCS_OK;
    }
    net_pend_t *pd = &k->pend[slot];
    *pd = (net_pend_t){.nc = nc, .k = k, .step = h.step, .tag = h.tag};
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    prm.memory_type = UCS_MEMORY_TYPE_HOST; /* a host-staged FIFO: no lookup (net_am_send) */
    prm.cb.recv_am = rndv_done;
    prm.user_data = pd;
    ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker, data, dst, length, &prm);
    if (UCS_PTR_IS_ERR(r))
        net_peer_lost(nc, k->peer, ucs_status_string(UCS_PTR_STATUS(r)));
    else if (r == NULL)
        step_landed(nc, k, h.step, length, length, h.tag);
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

/* A peer left. With steps by put it waits for my answer on this worker, after a flush
 * of my puts to it on this worker (net_proxy_acks, at this proxy's next pass). */
static ucs_status_t am_bye(void *arg, const void *header, size_t header_length, void *data, size_t length,
                           const ucp_am_recv_param_t *param)
{
    (void)data, (void)length, (void)param;
    const net_proxy_t *P = arg;
    net_am_hdr_t h;
    if (header_length == sizeof(h)) {
        memcpy(&h, header, sizeof(h));
        struct eng_net_comm *nc = comm_by_id(&h, "goodbye", 1);
        if (!nc || h.src < 0 || h.src >= nc->nranks || !nc->shadow[h.src])
            return UCS_OK;
        dfccl_store_release64(&((eng_seg_hdr_t *)nc->shadow[h.src])->closed, 1);
        if (nc->put_peer[h.src] && P->idx < nc->npx && !nc->closing) {
            nc->owe_ack[(size_t)P->idx * (size_t)nc->nranks + (size_t)h.src] = 1;
            __atomic_fetch_or(&nc->owe_any, 1u << P->idx, __ATOMIC_RELAXED);
        }
    }
    return UCS_OK;
}

/* A peer's answer to my goodbye: it puts nothing more into my segment from that worker. */
static ucs_status_t am_byeack(void *arg, const void *header, size_t header_length, void *data, size_t length,
                              const ucp_am_recv_param_t *param)
{
    (void)arg, (void)data, (void)length, (void)param;
    net_am_hdr_t h;
    if (header_length == sizeof(h)) {
        memcpy(&h, header, sizeof(h));
        struct eng_net_comm *nc = comm_by_id(&h, "goodbye's answer", 1);
        if (nc && h.src >= 0 && h.src < nc->nranks && nc->put_peer[h.src])
            dfccl_fetch_add_relaxed(&nc->acks[h.src], 1);
    }
    return UCS_OK;
}

/* An ask or descriptions: a message of the right header size, for a communicator here
 * (comm_by_id), from a rank it reaches over the net (a copy of its header lives in my
 * shadow of it). A keyed message from any other rank is a protocol error. */
static struct eng_net_comm *desc_comm(const void *header, size_t header_length, net_am_hdr_t *h,
                                      const char *what)
{
    if (header_length != sizeof(*h))
        return NULL;
    memcpy(h, header, sizeof(*h));
    struct eng_net_comm *nc = comm_by_id(h, what, 0);
    if (nc && (h->src < 0 || h->src >= nc->nranks || !nc->shadow[h->src] || !nc->me)) {
        dfccl_error("communicator %016llx (rank %d): %s from rank %d, which it does not reach over the net "
                    "(a protocol error); communicator aborted",
                    (unsigned long long)nc->uid, nc->rank, what, (int)h->src);
        net_abort(nc);
        return NULL;
    }
    return nc;
}

/* A peer asks for my descriptions: proxy 0 (this thread) sends them at its next pass. */
static ucs_status_t am_ask(void *arg, const void *header, size_t header_length, void *data, size_t length,
                           const ucp_am_recv_param_t *param)
{
    (void)arg, (void)data, (void)length, (void)param;
    net_am_hdr_t h;
    struct eng_net_comm *nc = desc_comm(header, header_length, &h, "an ask for descriptions");
    if (nc) {
        dfccl_store_relaxed(&nc->owed[h.src], 1);
        dfccl_store_relaxed(&nc->owed_any, 1);
    }
    return UCS_OK;
}

/* A peer's descriptions: into my copy of its header (each entry under its seqlock, only
 * at its own place in the ring); with NET_DESC_TOLD it aborted the communicator, and its
 * mark goes into my header as a shared-memory peer's would (after the text it names). */
static ucs_status_t am_desc(void *arg, const void *header, size_t header_length, void *data, size_t length,
                            const ucp_am_recv_param_t *param)
{
    (void)arg;
    net_am_hdr_t h;
    struct eng_net_comm *nc = desc_comm(header, header_length, &h, "descriptions");
    if (!nc)
        return UCS_OK;
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || length != sizeof(net_desc_t)) {
        dfccl_error(
            "communicator %016llx (rank %d): descriptions from rank %d of %zu bytes, not %zu (a protocol "
            "error); communicator aborted",
            (unsigned long long)nc->uid, nc->rank, (int)h.src, length, sizeof(net_desc_t));
        net_abort(nc);
        return UCS_OK;
    }
    net_desc_t d;
    memcpy(&d, data, sizeof d);
    eng_seg_hdr_t *copy = (eng_seg_hdr_t *)nc->shadow[h.src];
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < ENG_SIG_RING; i++)
            if (d.sigs[g][i].seq1 && (d.sigs[g][i].seq1 - 1) % ENG_SIG_RING == (uint64_t)i)
                eng_sig_entry_store(&copy->sigs[g][i], &d.sigs[g][i]);
    if (d.why_seq1) {
        d.why[sizeof d.why - 1] = 0;
        eng_sig_why_store(copy, d.why_seq1, d.why);
    }
    if (h.step & NET_DESC_TOLD) {
        uint64_t none = 0;
        __atomic_compare_exchange_n(&nc->me->abort_mark, &none, (uint64_t)h.src + 1, 0, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED);
    }
    eng_bell_ring(nc->bell); /* a daemon thread asleep on a stalled collective looks again */
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
    const uint64_t n = dfccl_add_fetch_relaxed(&net_ucx.dropped, 1);
    dfccl_debug(
        "dropped an active message of %zu + %zu bytes under an id dfccl does not use (%llu dropped so "
        "far)",
        header_length, length, (unsigned long long)n);
    return UCS_OK; /* a rendezvous one is declined: UCX tells its sender */
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

/* dfccl's ids (net_wire.h), and the dropping one for every other id a peer can send
 * (am_stray): 64 Ki entries of libucp's table, about 1.5 MiB a worker, set in a few ms */
ucs_status_t net_set_handlers(net_proxy_t *P)
{
    static const ucp_am_recv_callback_t own[AM_LAST - AM_FIRST + 1] = {
        [AM_STEP - AM_FIRST] = am_step, [AM_CREDIT - AM_FIRST] = am_credit,
        [AM_BYE - AM_FIRST] = am_bye,   [AM_ASK - AM_FIRST] = am_ask,
        [AM_DESC - AM_FIRST] = am_desc, [AM_BYEACK - AM_FIRST] = am_byeack,
    };
    ucs_status_t st = UCS_OK;
    for (uint32_t id = 0; id <= UINT16_MAX && st == UCS_OK; id++)
        st = set_handler(P, id, id >= AM_FIRST && id <= AM_LAST ? own[id - AM_FIRST] : am_stray);
    return st;
}
