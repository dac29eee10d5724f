/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the mismatch diagnosis over the ranks' descriptions (engine/sig.c), for
 * ranks simulated in one process: each rank's segment header in plain memory, each peer
 * reached through a test transport that shows its header live, as shared memory does.
 * What needs a GPU or several processes end to end (a rank whose buffers go to the other
 * daemon, two ranks that take themselves for a bcast's root) is decided here from the
 * descriptions alone. */
#include <stdlib.h>
#include <string.h>

#include "check_engine.h"
#include "eng_comm.h"
#include "eng_gpu.h"
#include "eng_sig.h"
#include "transport.h"

/* sig.c's ties to the rest of the engine (transport.c's tables in the library) */
static const eng_seg_hdr_t *sim_published(const struct dfccl_comm *c, int p)
{
    return (const eng_seg_hdr_t *)c->segs[p];
}

static void sim_tell(struct dfccl_comm *c)
{
    for (int p = 0; p < c->nranks; p++)
        if (p != c->rank && !((eng_seg_hdr_t *)c->segs[p])->abort_mark)
            ((eng_seg_hdr_t *)c->segs[p])->abort_mark = (uint64_t)c->rank + 1;
}

static const eng_transport_t sim_tp = {
    .id = ENG_TP_SHM, .name = "sim", .published = sim_published, .tell = sim_tell};
const eng_transport_t *const eng_transports[ENG_TP_NUM] = {&sim_tp, NULL};
const eng_gpu_backend_t *const eng_gpu = NULL;

#define SIM_MAX 4

/* N ranks: each its own view of the communicator, all over the same headers */
typedef struct {
    char *segs[SIM_MAX];
    struct dfccl_comm c[SIM_MAX];
    uint64_t seq[SIM_MAX][2]; /* each rank's next collective, per daemon */
} sim_t;

static void sim_init(sim_t *w, int n)
{
    memset(w, 0, sizeof(*w));
    for (int r = 0; r < n; r++) {
        w->segs[r] = aligned_alloc(ENG_PAGE, ENG_PAGE);
        memset(w->segs[r], 0, ENG_PAGE);
    }
    for (int r = 0; r < n; r++) {
        w->c[r].rank = r;
        w->c[r].nranks = n;
        w->c[r].segs = w->segs;
        w->c[r].tp_used = 1u << ENG_TP_SHM;
    }
}

static void sim_fini(sim_t *w)
{
    for (int r = 0; r < SIM_MAX; r++)
        free(w->segs[r]);
}

/* rank r submits a collective to its CPU (gpu 0) or GPU daemon (gpu 1): described */
static uint64_t sim_call(sim_t *w, int r, int gpu, int coll, uint64_t count, int root)
{
    const eng_coll_args_t a = {.coll = (uint8_t)coll,
                               .dtype = dfcclInt32,
                               .op = dfcclSum,
                               .root = root,
                               .count = count,
                               .epoch = (uint8_t)(w->c[r].refusals[gpu] & 15u)}; /* as api.c */
    const uint64_t seq = w->seq[r][gpu]++;
    eng_sig_publish(&w->c[r], gpu, seq, &a);
    return seq;
}

static int diag(sim_t *w, int r, int gpu, uint64_t seq, char *buf)
{
    return eng_sig_diagnose(&w->c[r], gpu, seq, buf, 192);
}

/* One rank passes host memory, the other device memory: its call lands among the other
 * daemon's collectives, where the stalled one finds it by its number among the
 * communicator's calls, and names the memory kinds from both sides. Its collective of the
 * same number on the same daemon (a later host call with the same arguments) is another
 * call: no match (before the call numbers, the two paired silently). */
START_TEST(sig_memory_kinds_differ)
{
    sim_t w;
    char m[192];
    sim_init(&w, 2);
    for (int r = 0; r < 2; r++)
        sim_call(&w, r, 0, ENG_COLL_ALLREDUCE, 1, 0);                  /* an allreduce before: CPU 0 */
    const uint64_t s0 = sim_call(&w, 0, 0, ENG_COLL_ALLREDUCE, 64, 0); /* rank 0: host, CPU 1 */
    ck_assert_int_eq(diag(&w, 0, 0, s0, m), -1);                       /* rank 1 is late */
    const uint64_t s1 = sim_call(&w, 1, 1, ENG_COLL_ALLREDUCE, 64, 0); /* rank 1: device, GPU 0 */
    ck_assert_int_eq(diag(&w, 0, 0, s0, m), 1);
    ck_assert_msg(strstr(m,
                         "rank 1 called allreduce of 64 int32 (sum) on device memory (its GPU collective 0), "
                         "rank 0 on host memory: the memory kinds differ"),
                  "%s", m);
    ck_assert_int_eq(diag(&w, 1, 1, s1, m), 0);
    ck_assert_msg(
        strstr(m, "GPU collective 0: rank 0 called allreduce of 64 int32 (sum) on host memory (its CPU "
                  "collective 1), rank 1 on device memory: the memory kinds differ"),
        "%s", m);
    sim_call(&w, 1, 0, ENG_COLL_ALLREDUCE, 64, 0); /* rank 1's next call: host, CPU 1 */
    ck_assert_int_eq(diag(&w, 0, 0, s0, m), 1);
    ck_assert_msg(strstr(m, "the memory kinds differ"), "%s", m);
    sim_fini(&w);
}
END_TEST

/* Calls that go to the GPU daemon on every rank, between host ones: no mismatch, on
 * either daemon; a real one after them is still named. */
START_TEST(sig_both_daemons_agree)
{
    sim_t w;
    char m[192];
    sim_init(&w, 3);
    uint64_t s = 0, g = 0;
    for (int r = 0; r < 3; r++) {
        s = sim_call(&w, r, 0, ENG_COLL_ALLREDUCE, 8, 0);
        g = sim_call(&w, r, 1, ENG_COLL_BCAST, 4096, 1);
        sim_call(&w, r, 0, ENG_COLL_BARRIER, 0, 0);
    }
    for (int r = 0; r < 3; r++) {
        ck_assert_int_eq(diag(&w, r, 0, s, m), -1);
        ck_assert_int_eq(diag(&w, r, 1, g, m), -1);
    }
    for (int r = 0; r < 3; r++)
        g = sim_call(&w, r, 1, ENG_COLL_ALLREDUCE, r == 2 ? 9 : 8, 0);
    ck_assert_int_eq(diag(&w, 0, 1, g, m), 2);
    ck_assert_msg(strstr(m, "GPU collective 1: rank 2 called allreduce of 9 int32") &&
                      strstr(m, "the counts differ"),
                  "%s", m);
    sim_fini(&w);
}
END_TEST

/* A rank refuses a call (its reason published; a refused call takes no number, so its
 * next call has that number, in a new epoch) and makes two more; the peer stalls on the
 * later collective first: the refused one and its reason are named. Before, the reason
 * was looked up under the later collective's number: "collective 2: rank 1 refused its
 * call (its reason is no longer published)". */
START_TEST(sig_refusal_found_at_a_later_collective)
{
    sim_t w;
    char m[192];
    sim_init(&w, 2);
    for (int r = 0; r < 2; r++)
        sim_call(&w, r, 0, ENG_COLL_ALLREDUCE, 8, 0); /* collective 0 on both */
    w.c[1].next_seq = w.seq[1][0];                    /* rank 1 refuses its call at collective 1 */
    eng_sig_refuse(&w.c[1], 0, "its MPI_Iallreduce failed before the engine call: no memory for its request");
    for (int k = 0; k < 2; k++) {
        sim_call(&w, 1, 0, ENG_COLL_ALLREDUCE, 8, 0); /* its next two: collectives 1 and 2, epoch 1 */
        sim_call(&w, 0, 0, ENG_COLL_ALLREDUCE, 8, 0); /* rank 0's: collectives 1 and 2, epoch 0 */
    }
    ck_assert_int_eq(diag(&w, 0, 0, 2, m), 1);
    ck_assert_msg(strstr(m,
                         "collective 1: rank 1 refused its call (its MPI_Iallreduce failed before the engine "
                         "call: no memory for its request); collective 2 stalled behind it"),
                  "%s", m);
    ck_assert_int_eq(diag(&w, 0, 0, 1, m), 1); /* at the refused one itself: named with its reason */
    ck_assert_msg(strstr(m,
                         "collective 1: rank 1 refused its call (its MPI_Iallreduce failed before the engine "
                         "call: no memory for its request); rank 0 called allreduce of 8 int32 (sum)"),
                  "%s", m);
    sim_fini(&w);
}
END_TEST

/* Two ranks take themselves for a bcast's root: at the next call each root compares its
 * peers' descriptions (eng_sig_verify), finds the other root, aborts and marks every
 * peer; a peer not described yet is looked at again at the call after. Before, nothing
 * looked until a later collective stalled. */
START_TEST(sig_two_roots_found_at_next_call)
{
    sim_t w;
    sim_init(&w, 3);
    for (int r = 0; r < 3; r++)
        sim_call(&w, r, 0, ENG_COLL_ALLREDUCE, 1, 0);
    sim_call(&w, 0, 0, ENG_COLL_BCAST, 64, 0);
    sim_call(&w, 2, 0, ENG_COLL_BCAST, 64, 2); /* rank 2 passes itself */
    ck_assert(eng_sig_unverified(&w.c[0]) && eng_sig_unverified(&w.c[2]));
    ck_assert(!eng_sig_unverified(&w.c[1]));
    /* rank 1 has not called it yet: rank 2 finds rank 0's root, rank 0 waits for rank 1 */
    ck_assert_int_eq(eng_sig_verify(&w.c[2]), dfcclMismatch);
    ck_assert_int_eq(w.c[2].aborted, dfcclMismatch);
    ck_assert_msg(strstr(w.c[2].why, "rank 0 called bcast of 256 bytes (root 0), rank 2 bcast of 256 bytes "
                                     "(root 2): the roots differ"),
                  "%s", w.c[2].why);
    ck_assert_uint_eq(((eng_seg_hdr_t *)w.segs[0])->abort_mark, 3);
    ck_assert_uint_eq(((eng_seg_hdr_t *)w.segs[1])->abort_mark, 3);
    sim_fini(&w);

    /* the same from rank 0, whose peer 1 agrees and peer 2 is late */
    sim_init(&w, 3);
    sim_call(&w, 0, 0, ENG_COLL_BCAST, 64, 0);
    sim_call(&w, 1, 0, ENG_COLL_BCAST, 64, 0);
    ck_assert_int_eq(eng_sig_verify(&w.c[0]), dfcclSuccess);
    ck_assert(eng_sig_unverified(&w.c[0])); /* rank 2 not described yet */
    sim_call(&w, 0, 0, ENG_COLL_ALLREDUCE, 1, 0);
    ck_assert_int_eq(eng_sig_verify(&w.c[0]), dfcclSuccess);
    sim_call(&w, 2, 0, ENG_COLL_BCAST, 64, 2);
    ck_assert_int_eq(eng_sig_verify(&w.c[0]), dfcclMismatch);
    ck_assert_msg(strstr(w.c[0].why, "rank 2 called bcast of 256 bytes (root 2)"), "%s", w.c[0].why);
    sim_fini(&w);
}
END_TEST

/* Every rank agrees on the root: the roots' looks find nothing and stop; a rank that is
 * no root of the bcast never looks. */
START_TEST(sig_one_root_verified)
{
    sim_t w;
    sim_init(&w, 3);
    for (int k = 0; k < 40; k++) /* around the ring of descriptions */
        for (int r = 0; r < 3; r++)
            sim_call(&w, r, k % 2, k % 3 ? ENG_COLL_SCATTER : ENG_COLL_BCAST, 64, k % 3);
    for (int r = 0; r < 3; r++) {
        ck_assert(eng_sig_unverified(&w.c[r]));
        ck_assert_int_eq(eng_sig_verify(&w.c[r]), dfcclSuccess);
        ck_assert(!eng_sig_unverified(&w.c[r]));
        ck_assert_int_eq(w.c[r].aborted, 0);
    }
    sim_fini(&w);
}
END_TEST

Suite *check_sig_suite(void)
{
    const TTest *const tests[] = {sig_memory_kinds_differ, sig_both_daemons_agree,
                                  sig_refusal_found_at_a_later_collective, sig_two_roots_found_at_next_call,
                                  sig_one_root_verified};
    Suite *s = suite_create("sig");
    TCase *t = tcase_create("sig");
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        tcase_add_test(t, tests[i]);
    suite_add_tcase(s, t);
    return s;
}
