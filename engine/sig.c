/* SPDX-License-Identifier: BSD-3-Clause */
/* Mismatched collectives (docs/usage.md, "Mismatched collectives"): ranks that pass one
 * collective different kinds, counts, datatypes, ops, roots or memory kinds, or whose call
 * one rank refused. In band (eng_sig.h), a step of another signature is never taken, so
 * such a collective stalls instead of completing with wrong data or hanging for ever with
 * no reason; here, each rank describes every collective it submits in its own segment (a
 * few stores to a line of its own: no message, no wait), and the stall's diagnosis
 * compares the descriptions of the stalled collective, names the difference, aborts the
 * communicator and marks every peer, so every rank fails: the ones stalled on it at once,
 * the others at their next call or wait. The peers' descriptions and the marks reach each
 * rank through its transports (transport.h: published, ask, tell): a shared-memory peer's
 * header is mapped here, a net peer's is copied here on request. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "eng_atomic.h"
#include "eng_comm.h"
#include "eng_gpu.h"
#include "eng_log.h"
#include "eng_sig.h"
#include "eng_sig_desc.h"
#include "transport.h"

_Static_assert(sizeof(eng_seg_hdr_t) <= ENG_PAGE, "a segment's header fits its first page");

/* why_seq1 of a text that is the reason for an abort, not for one refused call */
#define WHY_ABORT UINT64_MAX

static eng_seg_hdr_t *my_hdr(const struct dfccl_comm *c)
{
    return c->segs && c->segs[c->rank] ? eng_seg_hdr(c, c->rank) : NULL;
}

static const eng_transport_t *tp_of(const struct dfccl_comm *c, int p)
{
    const unsigned t = c->tp ? c->tp[p] : ENG_TP_SHM;
    return t < ENG_TP_NUM ? eng_transports[t] : NULL;
}

/* What peer p published, as this rank sees it (NULL: nothing yet). */
static const eng_seg_hdr_t *peer_hdr(const struct dfccl_comm *c, int p)
{
    const eng_transport_t *t = tp_of(c, p);
    return p != c->rank && t && t->published ? t->published(c, p) : NULL;
}

/* Is what p published here its live header (shared memory), not a copy asked for? */
static int peer_live(const struct dfccl_comm *c, int p)
{
    const eng_transport_t *t = tp_of(c, p);
    return t && !t->ask;
}

static void entry_write(eng_sig_entry_t *e, uint64_t seq, const eng_sig_fields_t *f, uint32_t sig,
                        int refused, uint32_t refusals, uint64_t call)
{
    const eng_sig_entry_t v = {.seq1 = seq + 1,
                               .count = f->count,
                               .call = call,
                               .root = f->root,
                               .coll = f->coll,
                               .dtype = f->dtype,
                               .op = f->op,
                               .refused = (uint8_t)refused,
                               .sig = sig,
                               .refusals = refusals};
    eng_sig_entry_store(e, &v);
}

/* h's description of its collective seq (of daemon gpu's): 1, else 0 (not submitted yet,
 * or already overwritten by a later one). */
static int entry_read(const eng_seg_hdr_t *h, int gpu, uint64_t seq, eng_sig_entry_t *out)
{
    return eng_sig_entry_load(&h->sigs[gpu][seq % ENG_SIG_RING], out) == seq + 1;
}

/* A collective in which the root only sends (bcast, scatter, scatterv): a second rank
 * that takes itself for the root sends too and waits for nothing, so neither stalls, and
 * no step of another signature is ever refused (eng_sig_verify looks instead). */
static int root_only_sends(int coll)
{
    return coll == ENG_COLL_BCAST || coll == ENG_COLL_SCATTER || coll == ENG_COLL_SCATTERV;
}

void eng_sig_publish(struct dfccl_comm *c, int gpu, uint64_t seq, const eng_coll_args_t *a)
{
    eng_seg_hdr_t *h = my_hdr(c);
    if (!h)
        return;
    const eng_sig_fields_t f = eng_sig_fields(a);
    const uint64_t call = __atomic_fetch_add(&c->calls, 1, __ATOMIC_RELAXED);
    entry_write(&h->sigs[gpu][seq % ENG_SIG_RING], seq, &f, eng_sig_hash(&f), 0, c->refusals[gpu], call);
    if (root_only_sends(a->coll) && a->root == c->rank && !c->root_unverified[gpu])
        c->root_unverified[gpu] = seq + 1;
}

/* p's published text if it is the one for seq1, into buf (else a placeholder). */
static void why_read(const eng_seg_hdr_t *h, uint64_t seq1, char *buf, size_t len)
{
    char tmp[ENG_SIG_WHY_LEN];
    if (eng_sig_why_load(h, tmp) == seq1)
        snprintf(buf, len, "%s", tmp);
    else
        snprintf(buf, len, "its reason is no longer published");
}

/* The refusal rh published last, when it is of a call of daemon gpu at or before
 * collective seq: its text into buf and its collective into *rseq (a rank that refused
 * a call and has made later ones is found at a later collective than the one it
 * refused, whose number would name the wrong call); else a placeholder into buf. */
static void refusal_read(const eng_seg_hdr_t *rh, int gpu, uint64_t seq, uint64_t *rseq, char *buf,
                         size_t len)
{
    char tmp[ENG_SIG_WHY_LEN];
    const uint64_t s1 = rh ? eng_sig_why_load(rh, tmp) : 0;
    if (s1 && s1 != WHY_ABORT && (int)(s1 & 1) == gpu && (s1 >> 1) >= 1 && (s1 >> 1) - 1 <= seq) {
        *rseq = (s1 >> 1) - 1;
        snprintf(buf, len, "%s", tmp);
        return;
    }
    snprintf(buf, len, "its reason is no longer published");
}

void eng_sig_refuse(struct dfccl_comm *c, int gpu, const char *msg)
{
    eng_seg_hdr_t *h = my_hdr(c);
    if (!h || c->nranks < 2 || c->aborted)
        return;
    const uint64_t seq = gpu ? dfccl_load_relaxed64(&h->gpu_arrived) : DFCCL_READ_ONCE(c->next_seq);
    const eng_sig_fields_t none = {0};
    eng_sig_why_store(h, (seq + 1) << 1 | (uint64_t)gpu, msg);
    /* the number its call would have had: the peers' description of the same call has it */
    entry_write(&h->sigs[gpu][seq % ENG_SIG_RING], seq, &none, 0, 1, c->refusals[gpu]++,
                dfccl_load_relaxed(&c->calls));
}

/* "allreduce of 100 int32 (sum)", "bcast of 64 bytes from root 1", "barrier" */
static void describe(const eng_sig_entry_t *e, char *buf, size_t len)
{
    const char *name = eng_coll_names[e->coll];
    char root[32] = "";
    if (eng_coll_rooted(e->coll))
        snprintf(root, sizeof root, ", root %d", (int)e->root);
    if (e->coll == ENG_COLL_REDUCE_SCATTERV && e->dtype < dfcclNumTypes && e->op < dfcclNumOps)
        snprintf(buf, len, "%s of %s (%s)", name, eng_type_name((dfcclDataType_t)e->dtype),
                 eng_op_name((dfcclRedOp_t)e->op)); /* its counts: a hash, said apart */
    else if (eng_coll_reduces(e->coll) && e->dtype < dfcclNumTypes && e->op < dfcclNumOps)
        snprintf(buf, len, "%s of %" PRIu64 " %s (%s%s)", name, e->count,
                 eng_type_name((dfcclDataType_t)e->dtype), eng_op_name((dfcclRedOp_t)e->op), root);
    else if (e->coll == ENG_COLL_BARRIER)
        snprintf(buf, len, "%s", name);
    else if (eng_coll_tabled(e->coll))
        snprintf(buf, len, "%s%s%s%s", name, *root ? " (" : "", *root ? root + 2 : "", *root ? ")" : "");
    else
        snprintf(buf, len, "%s of %" PRIu64 " bytes%s%s%s", name, e->count, *root ? " (" : "",
                 *root ? root + 2 : "", *root ? ")" : "");
}

/* What differs first, in the order a reader checks a call. */
static const char *difference(const eng_sig_entry_t *a, const eng_sig_entry_t *b)
{
    if (a->coll != b->coll)
        return "the collectives differ";
    if (a->root != b->root) /* reduce_scatterv's: the hash of its counts */
        return a->coll == ENG_COLL_REDUCE_SCATTERV ? "the counts differ" : "the roots differ";
    if (a->count != b->count)
        return eng_coll_reduces(a->coll) ? "the counts differ" : "the sizes in bytes differ";
    if (a->dtype != b->dtype)
        return "the datatypes differ";
    if (a->op != b->op)
        return "the ops differ";
    return "their signatures differ";
}

/* The peer whose mark is in this rank's header, its reason into buf; else -1. */
static int marked_by(const struct dfccl_comm *c, const eng_seg_hdr_t *me, char *buf, size_t len)
{
    const uint64_t mark = dfccl_load_acquire64(&me->abort_mark);
    if (!mark || (int)(mark - 1) == c->rank || (int)(mark - 1) >= c->nranks)
        return -1;
    const int p = (int)(mark - 1);
    const eng_seg_hdr_t *h = peer_hdr(c, p);
    char why[ENG_SIG_WHY_LEN];
    if (h)
        why_read(h, WHY_ABORT, why, sizeof why);
    else
        snprintf(why, sizeof why, "its reason is not visible from here");
    snprintf(buf, len, "rank %d aborted the communicator: %s", p, why);
    return p;
}

/* Where a peer described one call of this rank's: its daemon (ring) and its number there. */
typedef struct {
    eng_sig_entry_t e;
    int ring;
    uint64_t seq;
} peer_call_t;

/* h's description of this rank's call `mine` (its collective seq among daemon gpu's):
 * h's collective of the same number when it is the same call, else the same call among
 * h's other daemon's collectives (its ranks passed different memory kinds), else h's
 * collective of the same number (calls are numbered alike only when every rank described
 * each: numbers alone paired them before). 1 when there is one. */
static int peer_call(const eng_seg_hdr_t *h, int gpu, uint64_t seq, const eng_sig_entry_t *mine,
                     peer_call_t *out)
{
    const int same = entry_read(h, gpu, seq, &out->e);
    out->ring = gpu;
    out->seq = seq;
    if (same && out->e.call == mine->call)
        return 1;
    for (int i = 0; i < ENG_SIG_RING; i++) {
        eng_sig_entry_t e;
        if (eng_sig_entry_load(&h->sigs[!gpu][i], &e) && e.call == mine->call) {
            *out = (peer_call_t){.e = e, .ring = !gpu, .seq = e.seq1 - 1};
            return 1;
        }
    }
    return same;
}

static const char *const mem_names[2] = {"host", "device"};

/* Peer p's description (pc, published at h) of this rank's call `mine`, collective seq of
 * daemon gpu: 1 and the reason into buf when they differ (or p refused the call). */
static int differs(const struct dfccl_comm *c, const eng_seg_hdr_t *h, int p, int gpu, uint64_t seq,
                   const eng_sig_entry_t *mine, const peer_call_t *pc, char *buf, size_t len)
{
    const eng_sig_entry_t *theirs = &pc->e;
    const char *daemon = gpu ? "GPU " : "";
    if (theirs->refused && pc->ring == gpu && mine->refusals > theirs->refusals)
        return 0; /* this rank refused that call too, and p has not made its next one yet */
    if (!theirs->refused && pc->ring == gpu && theirs->sig == mine->sig && theirs->coll == mine->coll &&
        theirs->count == mine->count && theirs->root == mine->root && theirs->dtype == mine->dtype &&
        theirs->op == mine->op)
        return 0; /* the same (the common case: no text made) */
    char d0[96], d1[96];
    describe(mine, d0, sizeof d0);
    if (theirs->refused) {
        char why[ENG_SIG_WHY_LEN];
        why_read(h, (pc->seq + 1) << 1 | (uint64_t)pc->ring, why, sizeof why);
        snprintf(buf, len, "%scollective %" PRIu64 ": rank %d refused its call (%s); rank %d called %s",
                 daemon, seq, p, why, c->rank, d0);
        return 1;
    }
    describe(theirs, d1, sizeof d1);
    if (pc->ring == gpu && theirs->refusals != mine->refusals) {
        /* one of the two refused this call and has made its next one since, which its
         * epoch kept from taking the other's steps (eng_sig.h) */
        const int p_refused = theirs->refusals > mine->refusals;
        char why[ENG_SIG_WHY_LEN];
        uint64_t rseq = seq;
        refusal_read(p_refused ? h : my_hdr(c), gpu, seq, &rseq, why, sizeof why);
        if (rseq != seq)
            snprintf(buf, len,
                     "%scollective %" PRIu64 ": rank %d refused its call (%s); collective %" PRIu64
                     " stalled behind it",
                     daemon, rseq, p_refused ? p : c->rank, why, seq);
        else
            snprintf(buf, len, "%scollective %" PRIu64 ": rank %d refused its call (%s); rank %d called %s",
                     daemon, seq, p_refused ? p : c->rank, why, p_refused ? c->rank : p, p_refused ? d0 : d1);
        return 1;
    }
    if (pc->ring != gpu) {
        snprintf(buf, len,
                 "%scollective %" PRIu64 ": rank %d called %s on %s memory (its %s collective %" PRIu64
                 "), rank %d on %s memory: the memory kinds differ",
                 daemon, seq, p, d1, mem_names[pc->ring], pc->ring ? "GPU" : "CPU", pc->seq, c->rank,
                 mem_names[gpu]);
        return 1;
    }
    snprintf(buf, len, "%scollective %" PRIu64 ": rank %d called %s, rank %d %s: %s", daemon, seq, p, d1,
             c->rank, d0, difference(theirs, mine));
    return 1;
}

/* Collective seq's descriptions on this rank and every peer: the first peer whose
 * differs (or who refused its call), with the reason in buf; else -1. With unseen_p,
 * only the peers whose header is live here (a copy may be older than the call a look
 * at the next call is about), and *unseen_p counts those that have not described it yet. */
static int diagnose_one(const struct dfccl_comm *c, const eng_seg_hdr_t *me, int gpu, uint64_t seq, char *buf,
                        size_t len, int *unseen_p)
{
    eng_sig_entry_t mine;
    if (!entry_read(me, gpu, seq, &mine) || mine.refused)
        return -1;
    for (int p = 0; p < c->nranks; p++) {
        const eng_seg_hdr_t *h = unseen_p && !peer_live(c, p) ? NULL : peer_hdr(c, p);
        peer_call_t pc;
        if (!h)
            continue;
        if (!peer_call(h, gpu, seq, &mine, &pc)) {
            eng_sig_entry_t e;
            if (unseen_p && eng_sig_entry_load(&h->sigs[gpu][seq % ENG_SIG_RING], &e) < seq + 1)
                (*unseen_p)++;
            continue;
        }
        if (differs(c, h, p, gpu, seq, &mine, &pc, buf, len))
            return p;
    }
    return -1;
}

/* Transport t when some pair of c's ranks uses it. */
static const eng_transport_t *tp_in_use(const struct dfccl_comm *c, int t)
{
    return c->tp_used >> t & 1 ? eng_transports[t] : NULL;
}

int eng_sig_diagnose(const struct dfccl_comm *c, int gpu, uint64_t seq, char *buf, size_t len)
{
    const eng_seg_hdr_t *me = my_hdr(c);
    if (!me)
        return -1;
    for (int t = 0; t < ENG_TP_NUM; t++) /* fresh copies of the net peers', for the next look */
        if (tp_in_use(c, t) && tp_in_use(c, t)->ask)
            tp_in_use(c, t)->ask(c);
    const int marker = marked_by(c, me, buf, len);
    if (marker >= 0)
        return marker;
    /* the stalled collective, then the ones before it: a mismatch that every rank
     * completed (two ranks that both took themselves for a bcast's root) left a step in
     * a FIFO, which a later collective finds of another signature and stalls on */
    for (uint64_t d = 0; d < ENG_SIG_RING && d <= seq; d++) {
        const int p = diagnose_one(c, me, gpu, seq - d, buf, len, NULL);
        if (p >= 0)
            return p;
    }
    return -1;
}

void eng_sig_abort(struct dfccl_comm *c, int log, const char *msg)
{
    eng_comm_why(c, log, "%s", msg);
    eng_seg_hdr_t *h = my_hdr(c);
    if (h) {
        eng_sig_why_store(h, WHY_ABORT, msg);
        for (int t = 0; t < ENG_TP_NUM; t++) /* every peer that waits, or calls next, finds it */
            if (tp_in_use(c, t) && tp_in_use(c, t)->tell)
                tp_in_use(c, t)->tell(c);
    }
    dfccl_store_release(&c->aborted, dfcclMismatch);
    if (c->gpu)
        eng_gpu->comm_abort(c->gpu, dfcclMismatch);
}

/* This rank's collectives of daemon gpu from root_unverified on, compared with its peers'
 * where it was the root of one that only sends: a mismatch is aborted on (1); else
 * root_unverified moves to the first one a shared-memory peer has not described yet (0:
 * none left). */
static int verify_ring(struct dfccl_comm *c, const eng_seg_hdr_t *me, int gpu)
{
    uint64_t s = c->root_unverified[gpu] - 1, next = 0;
    for (int n = 0; n < 2 * ENG_SIG_RING; n++, s++) {
        eng_sig_entry_t mine;
        const uint64_t got = eng_sig_entry_load(&me->sigs[gpu][s % ENG_SIG_RING], &mine);
        next = s + 1;
        if (got > s + 1)
            continue; /* overwritten: too old to compare */
        if (got != s + 1) {
            next = 0; /* not submitted: none left */
            break;
        }
        if (!root_only_sends(mine.coll) || mine.root != c->rank || mine.refused)
            continue;
        char msg[sizeof c->why - 32];
        int unseen = 0;
        if (diagnose_one(c, me, gpu, s, msg, sizeof msg, &unseen) >= 0) {
            eng_sig_abort(c, 1, msg);
            return 1;
        }
        if (unseen)
            break; /* looked at again at the next call */
    }
    c->root_unverified[gpu] = next;
    return 0;
}

dfcclResult_t eng_sig_verify(struct dfccl_comm *c)
{
    const eng_seg_hdr_t *me = my_hdr(c);
    if (!me || c->aborted)
        return c->aborted;
    for (int gpu = 0; gpu < 2; gpu++)
        if (c->root_unverified[gpu] && verify_ring(c, me, gpu))
            return dfcclMismatch;
    return dfcclSuccess;
}

dfcclResult_t eng_sig_adopt_mark(struct dfccl_comm *c)
{
    char msg[sizeof c->why];
    const eng_seg_hdr_t *me = my_hdr(c);
    if (c->aborted)
        return c->aborted;
    if (!me || marked_by(c, me, msg, sizeof msg) < 0)
        return dfcclSuccess;
    eng_comm_why(c, 1, "%s", msg);
    dfccl_store_release(&c->aborted, dfcclMismatch);
    if (c->gpu)
        eng_gpu->comm_abort(c->gpu, dfcclMismatch);
    return dfcclMismatch;
}
