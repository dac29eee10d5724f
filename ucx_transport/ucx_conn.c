/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU daemon's connections over the UCX transport (transport.h's ucx entry; built
 * with UCX only). My shadow of each net peer is a whole segment of my segment's layout:
 * my steps to the peer go into it, the proxy thread (ucx_proxy.c) sends them, and the
 * peer's proxy lands them in its real segment. */
#include <stdio.h>
#include <stdlib.h>

#include "eng_comm.h"
#include "eng_config.h"
#include "eng_log.h"
#include "eng_net.h"
#include "transport.h"

/* UCX reaches any other rank; the table's order prefers shm on one host. */
static int ucx_reaches(const eng_tp_card_t *a, const eng_tp_card_t *b)
{
    (void)a, (void)b;
    return 1;
}

static dfcclResult_t ucx_connect(struct dfccl_comm *c, const uint8_t *peers, dfcclAllgatherFn_t ag, void *ctx)
{
    _Static_assert(sizeof(dfcclResult_t) == sizeof(int32_t), "the abort word is an int32_t");
    const int N = c->nranks, me = c->rank;
    size_t nconn = 0;
    for (int p = 0; p < N; p++)
        nconn += peers[p] ? (size_t)c->slots * c->channels : 0;
    size_t *shadow_size = calloc((size_t)N, sizeof(size_t));
    eng_net_conn_desc_t *d = calloc(nconn ? nconn : 1, sizeof(*d)), *k = d;
    /* without them, the set-up still runs (its all-gathers), saying so */
    const dfcclResult_t status =
        shadow_size && d ? dfcclSuccess
                         : eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the net transport");
    for (int p = 0; p < N && status == dfcclSuccess; p++) {
        if (!peers[p])
            continue;
        shadow_size[p] = c->seg_size;
        for (uint32_t s = 0; s < c->slots; s++)
            for (uint32_t ch = 0; ch < c->channels; ch++, k++) {
                k->peer = p;
                k->shadow_off = eng_conn_offset(c, s, ch, me);
                k->recv_off = eng_conn_offset(c, s, ch, p);
                k->peer_off = k->shadow_off; /* my shadow of p has p's segment's layout */
                k->schunk = k->rchunk = c->chunk;
                k->lane = ch;
            }
    }
    const eng_net_layout_t L = {.uid = c->uid,
                                .rank = me,
                                .nranks = N,
                                .seg = c->segs[me],
                                .seg_bytes = c->seg_size,
                                .shadow_size = shadow_size,
                                .ctrl_bytes = eng_conn_ctrl_bytes(),
                                .depth = c->depth,
                                .conns = d,
                                .nconns = nconn,
                                .abort_words = {(int32_t *)&c->aborted, NULL},
                                .put = eng_config.net_put == ENG_NET_PUT_ON,
                                .put_min = eng_config.net_put_min,
                                .boot = c->boot,
                                .boot_rec = ENG_BOOT_REC,
                                .status = status};
    dfcclResult_t res = eng_net_setup(&L, ag, ctx, &c->net);
    free(shadow_size);
    if (res == dfcclSuccess) {
        char what[160];
        eng_net_describe(what, sizeof what);
        dfccl_info("communicator %016llx rank %d: net transport: %s", (unsigned long long)c->uid, me, what);
    }
    /* my sends to net peers go into the shadows, where the descriptors (in the same
     * order) placed them */
    k = d;
    for (int p = 0; p < N && res == dfcclSuccess; p++) {
        if (!peers[p])
            continue;
        char *shadow = eng_net_shadow(c->net, p);
        for (uint32_t s = 0; s < c->slots; s++)
            for (uint32_t ch = 0; ch < c->channels; ch++, k++) {
                eng_conn_t *cn = &eng_comm_conns(c, s, ch)[p];
                cn->send_ctrl = (eng_conn_ctrl_t *)(shadow + k->shadow_off);
                cn->send_data = (char *)cn->send_ctrl + eng_conn_ctrl_bytes();
                cn->bell = NULL; /* the proxy rings the peer's */
            }
    }
    free(d);
    return res;
}

/* Before shm closes: receives from the net that never finished still land in my
 * segment, which then stays mapped (leaked) rather than take their writes unmapped, or
 * reused. */
static void ucx_close(struct dfccl_comm *c)
{
    if (eng_net_teardown(c->net) && c->segs)
        c->segs[c->rank] = NULL;
    c->net = NULL;
}

static void ucx_describe(const struct dfccl_comm *c, int p, char *buf, size_t len)
{
    (void)c;
    snprintf(buf, len, "ucx (my shadow of rank %d's segment, sent by the proxy thread)", p);
}

/* A net peer's descriptions are a copy, asked for (by the CPU daemon's connections'
 * transport: both daemons' descriptions live in the same header). */
static const eng_seg_hdr_t *ucx_published(const struct dfccl_comm *c, int p)
{
    return eng_net_published(c->net, p);
}

static void ucx_ask(const struct dfccl_comm *c)
{
    eng_net_ask(c->net);
}

static void ucx_tell(struct dfccl_comm *c)
{
    eng_net_tell(c->net);
}

const eng_transport_t eng_tp_ucx = {.id = ENG_TP_UCX,
                                    .name = "ucx",
                                    .gpu_name = "ucx (host-staged)",
                                    .reaches = ucx_reaches,
                                    .connect = ucx_connect,
                                    .close = ucx_close,
                                    .describe = ucx_describe,
                                    .published = ucx_published,
                                    .ask = ucx_ask,
                                    .tell = ucx_tell};
