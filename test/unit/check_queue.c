/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the submission ring and the scheduler's decisions (eng_ring.h,
 * eng_sched.h). */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_engine.h"
#include "eng_ring.h"
#include "eng_sched.h"

/* ---- submission ring ------------------------------------------------------------------ */

START_TEST(ring_order_full_and_wrap)
{
    enum { SZ = 8 };
    eng_sq_entry_t ents[SZ];
    memset(ents, 0, sizeof(ents));
    eng_ring_t r = {.entries = ents, .mask = SZ - 1};
    ck_assert_ptr_null(eng_ring_peek(&r));
    uint64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 50; round++) {
        int put = 1 + round % SZ;
        for (int i = 0; i < put; i++) {
            eng_sq_entry_t *e = eng_ring_get_entry(&r);
            ck_assert_ptr_nonnull(e);
            e->seq = next_in++;
            eng_ring_commit(&r, e);
        }
        if (put == SZ)
            ck_assert_ptr_null(eng_ring_get_entry(&r)); /* full: never blocks */
        ck_assert_uint_eq(eng_ring_space_left(&r), (uint64_t)(SZ - put));
        for (int i = 0; i < put; i++) {
            eng_sq_entry_t *e = eng_ring_peek(&r);
            ck_assert_ptr_nonnull(e);
            ck_assert_uint_eq(e->seq, next_out++);
            eng_ring_advance(&r);
        }
        ck_assert_ptr_null(eng_ring_peek(&r));
    }
}
END_TEST

START_TEST(ring_unstamped_entry_invisible)
{
    eng_sq_entry_t ents[4];
    memset(ents, 0, sizeof(ents));
    eng_ring_t r = {.entries = ents, .mask = 3};
    eng_sq_entry_t *e = eng_ring_get_entry(&r);
    e->seq = 42; /* filled but not committed: the consumer must not see it */
    ck_assert_ptr_null(eng_ring_peek(&r));
    eng_ring_commit(&r, e);
    ck_assert_ptr_eq(eng_ring_peek(&r), e);
}
END_TEST

/* ---- scheduler decisions -------------------------------------------------------------- */

static const sched_params_t sp_on = {
    .preempt = 1, .base_ns = 1000, .max_ns = 100000, .growth = 4, .head_factor = 8};

START_TEST(sched_budget_rules)
{
    sched_params_t off = sp_on;
    off.preempt = 0;
    ck_assert_uint_eq(sched_budget(&off, 1000, 0), SCHED_FOREVER);
    ck_assert_uint_eq(sched_budget(&off, 1000, 1), SCHED_FOREVER);
    ck_assert_uint_eq(sched_budget(&sp_on, 1000, 0), 1000);
    ck_assert_uint_eq(sched_budget(&sp_on, 1000, 1), 8000); /* the head gets extra attempts */
    ck_assert_uint_eq(sched_budget(&sp_on, UINT64_MAX / 2, 1), SCHED_FOREVER); /* no overflow */
}
END_TEST

START_TEST(sched_threshold_adaptation)
{
    uint64_t t = sched_reset(&sp_on);
    ck_assert_uint_eq(t, 1000);
    t = sched_adapt(&sp_on, t, 100); /* quick wait: 4*100 < 1000, keep */
    ck_assert_uint_eq(t, 1000);
    t = sched_adapt(&sp_on, t, 2000); /* peers answer after 2 us: stick longer */
    ck_assert_uint_eq(t, 8000);
    t = sched_adapt(&sp_on, t, 10); /* never lowered while the task lives */
    ck_assert_uint_eq(t, 8000);
    t = sched_adapt(&sp_on, t, 1000000); /* capped */
    ck_assert_uint_eq(t, 100000);
    ck_assert_uint_eq(sched_reset(&sp_on), 1000); /* the next task starts over */
}
END_TEST

START_TEST(sched_slot_gating)
{
    /* K = 2: seq 0 and 1 may start; seq 2 only after seq 0 freed slot 0 */
    uint64_t slot_next[2] = {0, 1};
    ck_assert(sched_slot_free(slot_next[0], 0));
    ck_assert(sched_slot_free(slot_next[1], 1));
    ck_assert(!sched_slot_free(slot_next[0], 2));
    slot_next[0] = 0 + 2; /* seq 0 finished */
    ck_assert(sched_slot_free(slot_next[0], 2));
    ck_assert(!sched_slot_free(slot_next[0], 4));
}
END_TEST

Suite *check_queue_suite(void)
{
    Suite *s = suite_create("queue");
    TCase *t;
    t = tcase_create("ring");
    tcase_add_test(t, ring_order_full_and_wrap);
    tcase_add_test(t, ring_unstamped_entry_invisible);
    suite_add_tcase(s, t);
    t = tcase_create("sched");
    tcase_add_test(t, sched_budget_rules);
    tcase_add_test(t, sched_threshold_adaptation);
    tcase_add_test(t, sched_slot_gating);
    suite_add_tcase(s, t);
    return s;
}
