/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the net transport's receiving side without UCX (net_landing.h) and the
 * locality decision (engine/locality.c) over a table of test transports. */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_engine.h"
#include "eng_log.h"
#include "eng_sig.h"
#include "../../ucx_transport/net_landing.h"
#include "transport.h"

/* Net receiver: steps that land out of order are published in order, each with its
 * size; a duplicate or a step beyond the credited window is refused and changes
 * nothing. */
START_TEST(net_landing_in_order)
{
    eng_conn_ctrl_t c;
    memset(&c, 0, sizeof(c));
    net_landing_t l = {0, 0};
    const uint32_t depth = 4;
    ck_assert_int_eq(net_land(&l, &c, depth, 2, 200), 0); /* waits for 0 and 1 */
    ck_assert_int_eq(net_land(&l, &c, depth, 1, 100), 0);
    ck_assert_uint_eq(c.posted, 0);
    ck_assert_int_eq(net_land(&l, &c, depth, 1, 100), -1); /* landed already */
    ck_assert_int_eq(net_land(&l, &c, depth, 4, 1), -1);   /* no credit for it yet */
    ck_assert_int_eq(net_land(&l, &c, depth, 0, 7), 1);
    ck_assert_uint_eq(c.posted, 3);
    ck_assert_uint_eq(c.bytes[0], 7);
    ck_assert_uint_eq(c.bytes[1], 100);
    ck_assert_uint_eq(c.bytes[2], 200);
    ck_assert_int_eq(net_land(&l, &c, depth, 2, 5), -1); /* published: in the past */
    /* around the ring: 3..6 reuse slots 3, 0, 1, 2, once the daemon has read 0..2; land
     * them backwards */
    c.consumed = 3;
    for (int s = 6; s >= 4; s--)
        ck_assert_int_eq(net_land(&l, &c, depth, (uint64_t)s, (uint64_t)s * 10), 0);
    ck_assert_int_eq(net_land(&l, &c, depth, 7, 1), -1);
    ck_assert_int_eq(net_land(&l, &c, depth, 3, 30), 1);
    ck_assert_uint_eq(c.posted, 7);
    ck_assert_uint_eq(l.mask, 0);
    for (int s = 3; s <= 6; s++)
        ck_assert_uint_eq(c.bytes[s % depth], (uint64_t)s * 10);
    /* the deepest FIFO: every slot of a 64-bit mask */
    memset(&c, 0, sizeof(c));
    l = (net_landing_t){0, 0};
    for (int s = ENG_MAX_FIFO_DEPTH - 1; s >= 1; s--)
        ck_assert_int_eq(net_land(&l, &c, ENG_MAX_FIFO_DEPTH, (uint64_t)s, 1), 0);
    ck_assert_int_eq(net_land(&l, &c, ENG_MAX_FIFO_DEPTH, 0, 1), 1);
    ck_assert_uint_eq(c.posted, ENG_MAX_FIFO_DEPTH);
}
END_TEST

/* Net receiver, credits: a step lands only in a slot the daemon has read (consumed), not
 * merely one published to it; the sender's credits stop at consumed + depth, so a step
 * there is a protocol error even though the slot's previous step was published. */
START_TEST(net_landing_credit_window)
{
    eng_conn_ctrl_t c;
    memset(&c, 0, sizeof(c));
    net_landing_t l = {0, 0};
    const uint32_t depth = 4;
    uint64_t got[4] = {0, 0, 0, 0};
    for (uint64_t s = 0; s < depth; s++)
        ck_assert_int_eq(net_land(&l, &c, depth, s, 10 + s), 1);
    ck_assert_uint_eq(c.posted, 4);
    /* published 4, consumed none: step 4 would overwrite step 0, unread */
    ck_assert(!net_in_window(&l, &c, depth, 4));
    ck_assert_int_eq(net_land(&l, &c, depth, 4, 99), -1);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 4, 1, 2, 0), -1);
    ck_assert_uint_eq(c.bytes[0], 10);
    ck_assert_uint_eq(got[0], 0);
    ck_assert_uint_eq(l.mask, 0);
    /* the daemon read step 0: step 4 (consumed + depth - 1) is the edge, 5 beyond it */
    c.consumed = 1;
    ck_assert(net_in_window(&l, &c, depth, 4));
    ck_assert(!net_in_window(&l, &c, depth, 5));
    ck_assert_int_eq(net_land(&l, &c, depth, 5, 1), -1);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 4, 1, 2, 0), 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 4, 1, 2, 0), 1);
    ck_assert_uint_eq(c.posted, 5);
    ck_assert_uint_eq(c.bytes[0], 2);
    ck_assert_uint_eq(c.bytes[1], 11); /* step 1, unread, untouched */
}
END_TEST

/* Net sender, credits: a credit moves the sender's count forward, an older one is
 * ignored, and one for steps never sent is a protocol error. */
START_TEST(net_credit_checks)
{
    ck_assert_int_eq(net_credit(2, 5, 3), 1);
    ck_assert_int_eq(net_credit(2, 5, 5), 1); /* every step sent, consumed */
    ck_assert_int_eq(net_credit(2, 5, 6), -1);
    ck_assert_int_eq(net_credit(2, 5, UINT64_MAX), -1);
    ck_assert_int_eq(net_credit(2, 5, 2), 0); /* no newer */
    ck_assert_int_eq(net_credit(2, 5, 1), 0); /* an old one, late */
    ck_assert_int_eq(net_credit(0, 0, 1), -1);
    ck_assert_int_eq(net_credit(0, 0, 0), 0);
}
END_TEST

/* Net receiver, addressing: a message reaches a communicator only with its random key,
 * not by its guessable table id alone. */
START_TEST(net_addressed_by_key)
{
    const uint32_t id = 7;
    const uint64_t key = 0x9e3779b97f4a7c15ull;
    ck_assert(net_addressed(id, key, 7, key));
    ck_assert(!net_addressed(id, key, 7, 0));
    ck_assert(!net_addressed(id, key, 7, key ^ 1));
    ck_assert(!net_addressed(id, key, 7, key ^ (1ull << 63)));
    ck_assert(!net_addressed(id, key, 8, key));
}
END_TEST

/* Net receiver, eager pieces: a step lands with its last byte, whatever order its pieces
 * and its neighbours' come in; a piece that overfills its step, or one for a step
 * outside the window, is refused; a zero-byte step lands at once. */
START_TEST(net_landing_pieces)
{
    eng_conn_ctrl_t c;
    memset(&c, 0, sizeof(c));
    net_landing_t l = {0, 0};
    const uint32_t depth = 4;
    uint64_t got[4] = {0, 0, 0, 0};
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 300, 700, 0), 0); /* step 1: 300 of 700 */
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 0, 500, 1000, 0), 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 400, 700, 0), 0); /* 1 whole, waits for 0 */
    ck_assert_uint_eq(c.posted, 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 0, 501, 1000, 0), -1); /* overfills */
    ck_assert_uint_eq(got[0], 500);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 4, 1, 1, 0), -1);   /* no credit yet */
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 1, 700, 0), -1); /* landed already */
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 0, 500, 1000, 0), 1);
    ck_assert_uint_eq(c.posted, 2);
    ck_assert_uint_eq(c.bytes[0], 1000);
    ck_assert_uint_eq(c.bytes[1], 700);
    ck_assert_uint_eq(got[0], 0);
    ck_assert_uint_eq(got[1], 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 2, 0, 0, 0), 1); /* an empty step */
    ck_assert_uint_eq(c.posted, 3);
    ck_assert_uint_eq(c.bytes[2], 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 10, 10, 0), -1); /* in the past */
    ck_assert_uint_eq(l.mask, 0);
}
END_TEST

/* Net receiver, signatures: a step lands with the tag of its sender's signature in its
 * size word (eng_step_word), in one message or in pieces, so the receiving daemon takes it
 * only when its own collective's signature is the same; before, the proxy dropped the tag
 * and every landed step passed. */
START_TEST(net_landing_carries_tag)
{
    eng_conn_ctrl_t c;
    memset(&c, 0, sizeof(c));
    net_landing_t l = {0, 0};
    const uint32_t depth = 4, sig = 0x1234567u, other = 0x7654321u;
    uint64_t got[4] = {0, 0, 0, 0};
    const uint64_t w0 = eng_step_word(4096, sig, 0), w1 = eng_step_word(700, sig, 1);
    ck_assert_int_eq(net_land(&l, &c, depth, 0, w0), 1);
    ck_assert_uint_eq(c.bytes[0], w0);
    ck_assert_uint_eq(eng_step_bytes(c.bytes[0]), 4096);
    ck_assert(eng_step_sig_ok(c.bytes[0], sig, 0));
    ck_assert(!eng_step_sig_ok(c.bytes[0], other, 0));
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 300, 700, (uint32_t)(w1 >> 32)), 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 400, 700, (uint32_t)(w1 >> 32)), 1);
    ck_assert_uint_eq(c.bytes[1], w1);
    ck_assert(eng_step_sig_ok(c.bytes[1], sig, 1));
    ck_assert(!eng_step_sig_ok(c.bytes[1], sig, 0)); /* another step's word */
    ck_assert(!eng_step_sig_ok(c.bytes[1], other, 1));
}
END_TEST

/* ---- the locality decision (engine/locality.c) over a table of test transports ---- */

/* locality.c's message, as dfcclGetLastError gives it (engine/log.c); cleared before
 * each call that must fail, so a stale one never passes */
#define tp_err dfcclGetLastError()
static void tp_err_clear(void)
{
    eng_set_error(dfcclSuccess, "test", "%s", "");
}

/* the reaches of shm.c and ucx_transport/ucx_conn.c, as they decide */
static int tp_same_host(const eng_tp_card_t *a, const eng_tp_card_t *b)
{
    return !a->net_only && !b->net_only && strncmp(a->host, b->host, sizeof(a->host)) == 0;
}

static int tp_anywhere(const eng_tp_card_t *a, const eng_tp_card_t *b)
{
    (void)a, (void)b;
    return 1;
}

static const eng_transport_t tp_shm = {.id = ENG_TP_SHM, .name = "shm", .reaches = tp_same_host};
static const eng_transport_t tp_ucx = {.id = ENG_TP_UCX, .name = "ucx", .reaches = tp_anywhere};
static const eng_transport_t *const table_both[ENG_TP_NUM] = {&tp_shm, &tp_ucx};
static const eng_transport_t *const table_shm[ENG_TP_NUM] = {&tp_shm, NULL};

/* a card in a larger record, as comm.c gathers it */
typedef struct {
    uint64_t pad;
    eng_tp_card_t card;
    uint32_t more;
} tp_boot_t;

static void tp_cards(tp_boot_t *b, int n, const char *const *hosts, uint32_t built, int net_only_rank)
{
    memset(b, 0, sizeof(*b) * (size_t)n);
    for (int r = 0; r < n; r++) {
        snprintf(b[r].card.host, sizeof b[r].card.host, "%s", hosts[r]);
        b[r].card.built = built;
        b[r].card.net_only = r == net_only_rank;
    }
}

/* What a step's message may be, by the communicator's kind: each rule bites alone. */
START_TEST(net_step_fits_rules)
{
    const uint64_t chunk = 65536;
    /* active messages: a whole step, a piece, a rendezvous step */
    ck_assert_int_eq(net_step_fits(chunk, 0, chunk, chunk, 0, 0, 0), 1);
    ck_assert_int_eq(net_step_fits(chunk, 8128, 8128, chunk, 0, 0, 0), 1);
    ck_assert_int_eq(net_step_fits(chunk, 0, chunk, chunk, 1, 0, 0), 1);
    ck_assert_int_eq(net_step_fits(0, 0, 0, chunk, 0, 0, 0), 1);
    ck_assert_int_eq(net_step_fits(chunk + 1, 0, 1, chunk, 0, 0, 0), 0);     /* over the FIFO's step */
    ck_assert_int_eq(net_step_fits(100, 101, 0, chunk, 0, 0, 0), 0);         /* piece past the step */
    ck_assert_int_eq(net_step_fits(100, 60, 41, chunk, 0, 0, 0), 0);         /* piece overflows it */
    ck_assert_int_eq(net_step_fits(chunk, 0, chunk - 1, chunk, 1, 0, 0), 0); /* rendezvous: whole */
    /* steps by put: the header alone, whole */
    ck_assert_int_eq(net_step_fits(chunk, 0, 0, chunk, 0, 1, 1), 1);
    ck_assert_int_eq(net_step_fits(0, 0, 0, chunk, 0, 1, 1), 1);
    ck_assert_int_eq(net_step_fits(chunk + 64, 0, 0, chunk, 0, 1, 1), 0); /* over the FIFO's step */
    ck_assert_int_eq(net_step_fits(chunk, 0, 8, chunk, 0, 1, 1), 0);      /* a payload */
    ck_assert_int_eq(net_step_fits(chunk, 64, 0, chunk, 0, 1, 1), 0);     /* an offset */
    ck_assert_int_eq(net_step_fits(chunk, 0, chunk, chunk, 1, 1, 1), 0);  /* rendezvous */
    /* the communicator's kind decides */
    ck_assert_int_eq(net_step_fits(chunk, 0, 0, chunk, 0, 1, 0), 0);     /* a put's header, messages here */
    ck_assert_int_eq(net_step_fits(chunk, 0, chunk, chunk, 0, 0, 1), 0); /* a message, puts here */
}
END_TEST

START_TEST(locality_decisions)
{
    const uint32_t both = 1u << ENG_TP_SHM | 1u << ENG_TP_UCX, shm = 1u << ENG_TP_SHM;
    tp_boot_t b[4];
    uint8_t tp[4];
    uint32_t used;
    /* one host: shm between every pair, whatever the table has */
    const char *one[4] = {"a", "a", "a", "a"};
    tp_cards(b, 4, one, both, -1);
    for (int me = 0; me < 4; me++) {
        ck_assert_int_eq(eng_tp_pick(table_both, &b[0].card, sizeof b[0], 4, me, tp, &used), dfcclSuccess);
        for (int q = 0; q < 4; q++)
            ck_assert_int_eq(tp[q], ENG_TP_SHM);
        ck_assert_uint_eq(used, shm);
    }
    /* two hosts by parity: shm within, ucx across; ranks agree pair by pair */
    const char *two[4] = {"a", "b", "a", "b"};
    tp_cards(b, 4, two, both, -1);
    uint8_t all[4][4];
    for (int me = 0; me < 4; me++) {
        ck_assert_int_eq(eng_tp_pick(table_both, &b[0].card, sizeof b[0], 4, me, all[me], &used),
                         dfcclSuccess);
        ck_assert_uint_eq(used, both);
        for (int q = 0; q < 4; q++)
            ck_assert_int_eq(all[me][q], me % 2 == q % 2 ? ENG_TP_SHM : ENG_TP_UCX);
    }
    for (int p = 0; p < 4; p++)
        for (int q = 0; q < 4; q++)
            ck_assert_int_eq(all[p][q], all[q][p]);
    /* DFCCL_NET=ucx on rank 2 alone: every pair with rank 2 goes over ucx, the rest shm */
    tp_cards(b, 4, one, both, 2);
    for (int me = 0; me < 4; me++) {
        ck_assert_int_eq(eng_tp_pick(table_both, &b[0].card, sizeof b[0], 4, me, tp, &used), dfcclSuccess);
        for (int q = 0; q < 4; q++)
            ck_assert_int_eq(tp[q], q != me && (me == 2 || q == 2) ? ENG_TP_UCX : ENG_TP_SHM);
    }
    /* rank 3 built without UCX, on another host: every rank fails alike, naming rank 3 */
    const char *apart[4] = {"a", "a", "a", "b"};
    tp_cards(b, 4, apart, both, -1);
    b[3].card.built = shm;
    for (int me = 0; me < 4; me++) {
        tp_err_clear();
        ck_assert_int_eq(eng_tp_pick(table_both, &b[0].card, sizeof b[0], 4, me, tp, &used),
                         dfcclUnsupported);
        ck_assert_msg(strstr(tp_err, "rank 3 (host 'b')") && strstr(tp_err, "no UCX transport"), "%s",
                      tp_err);
    }
    /* hosts a, b, a with rank 2 built without UCX: ranks 0 and 1 reach each other over
     * ucx, rank 2 reaches rank 0 over shm and rank 1 not at all; every rank, rank 2 with
     * its own table (no ucx entry), fails alike and names rank 2 */
    const char *aba[3] = {"a", "b", "a"};
    tp_cards(b, 3, aba, both, -1);
    b[2].card.built = shm;
    for (int me = 0; me < 3; me++) {
        tp_err_clear();
        ck_assert_int_eq(
            eng_tp_pick(me == 2 ? table_shm : table_both, &b[0].card, sizeof b[0], 3, me, tp, &used),
            dfcclUnsupported);
        ck_assert_msg(strstr(tp_err, "rank 2 (host 'a')"), "rank %d: %s", me, tp_err);
    }
    /* the same in a build without UCX (no ucx entry), with every card saying so */
    tp_cards(b, 4, apart, shm, -1);
    tp_err_clear();
    ck_assert_int_eq(eng_tp_pick(table_shm, &b[0].card, sizeof b[0], 4, 0, tp, &used), dfcclUnsupported);
    ck_assert_msg(strstr(tp_err, "must be reached over the net"), "%s", tp_err);
    /* one rank: itself, over shm */
    ck_assert_int_eq(eng_tp_pick(table_shm, &b[0].card, sizeof b[0], 1, 0, tp, &used), dfcclSuccess);
    ck_assert_int_eq(tp[0], ENG_TP_SHM);
    ck_assert_uint_eq(used, shm);
}
END_TEST

Suite *check_net_suite(void)
{
    Suite *s = suite_create("net");
    TCase *t;
    t = tcase_create("net");
    tcase_add_test(t, net_landing_in_order);
    tcase_add_test(t, net_landing_pieces);
    tcase_add_test(t, net_landing_carries_tag);
    tcase_add_test(t, net_landing_credit_window);
    tcase_add_test(t, net_credit_checks);
    tcase_add_test(t, net_addressed_by_key);
    tcase_add_test(t, net_step_fits_rules);
    tcase_add_test(t, locality_decisions);
    suite_add_tcase(s, t);
    return s;
}
