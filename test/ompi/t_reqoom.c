/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A non-blocking call that gets no request (run_ompi_suite.sh, "no memory for a request").
 *
 * A call on a communicator whose engine set-up is still running waits in the
 * communicator's queue, in a request from the component's pool. When the pool must grow
 * and can't (no memory), the call has nothing to return: the module's spare request takes
 * its place in the queue, the call fails at once with MPI_ERR_NO_MEM, and the spare
 * refuses it to the peers (dfcclCommRefuse) at its turn. Before, it failed here alone:
 * this rank's next call paired with the peers' part of it (here: call 9's result was
 * call 8's sum), and the peers' last call waited for ever.
 *
 * The last rank posts QUEUED MPI_Iallreduce at once on a fresh communicator, while its
 * peers post theirs 1 s later (so the last rank's set-up waits for them and its calls
 * queue), and fails the first allocation Open MPI's libopen-pal makes on its thread
 * inside a post from the second call on: that of the pool's growth, once its first 8
 * requests are taken (the spare among them). This program replaces malloc, calloc,
 * realloc, posix_memalign, memalign and aligned_alloc to do it, and fails only a call
 * made from libopen-pal's code. Then:
 *   - the calls before the failed one succeed on every rank, results checked element by
 *     element;
 *   - the failed call returns MPI_ERR_NO_MEM on the last rank without waiting for the
 *     late peers (its posts take under 0.5 s), and fails through MPI_Wait on every other
 *     rank (the refusal), within the deadline;
 *   - a later call fails, or succeeds with the right result (never a wrong one);
 *   - a new communicator works (checked).
 * --twice: the post after the failed one fails too, while the spare is still queued: that
 * call waits in the post for the calls before it (the last resort; its posts take the
 * peers' second) and is refused as well.
 * If no post failed (the pool did not grow through malloc), the program fails: the case
 * was not made. A watchdog prints "HANG: ..." and exits 3 after the deadline (default 30 s).
 *
 * usage: t_reqoom [--twice] [--deadline S]
 */
#include <errno.h>
#include <link.h>

#include "ompi_test.h"

#define QUEUED 24   /* calls posted at once: more than the pool's first 8 */
#define COUNT  1000 /* int32 per call */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static uintptr_t pal_lo, pal_hi;    /* libopen-pal's mapped segments */
static __thread int armed, tripped; /* fail the next libopen-pal allocation (this thread) */

/* Whether the allocation made from ret fails: the first from libopen-pal while armed. */
static int fail_here(const void *ret)
{
    if (!armed || (uintptr_t)ret < pal_lo || (uintptr_t)ret >= pal_hi)
        return 0;
    armed = 0;
    tripped = 1;
    return 1;
}

void *malloc(size_t n)
{
    if (fail_here(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    if (fail_here(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    if (fail_here(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    if (fail_here(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    if (fail_here(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (fail_here(__builtin_return_address(0)))
        return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

/* libopen-pal's address range: the lowest and highest of its loaded segments. */
static int find_pal(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libopen-pal"))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!pal_lo || lo < pal_lo)
            pal_lo = lo;
        if (hi > pal_hi)
            pal_hi = hi;
    }
    return 1;
}

static int32_t val(int r, int call, int i)
{
    return (int32_t)(r * 7919 + call * 104729 + i * 3 + 1) % 1000003;
}

/* Call `call`'s result on this rank: the sum over the ranks, element by element. */
static void check_sum(const char *what, int call, const int32_t *got)
{
    for (int i = 0; i < COUNT; i++) {
        int32_t want = 0;
        for (int r = 0; r < ot_size; r++)
            want += val(r, call, i);
        if (got[i] != want)
            OT_FAIL("%s (call %d): element %d is %d, want %d", what, call, i, got[i], want);
    }
}

int main(int argc, char **argv)
{
    ot_init_multiple(&argc, &argv);
    const double deadline = atof(ot_opt(argc, argv, "--deadline", "30"));
    const bool twice = ot_flag(argc, argv, "--twice");
    if (ot_size < 2)
        OT_FAIL("needs at least 2 ranks");
    const int last = ot_rank == ot_size - 1;
    dl_iterate_phdr(find_pal, NULL);
    if (!pal_lo)
        OT_FAIL("libopen-pal is not loaded: nothing to fail");
    ot_watchdog_start("t_reqoom", deadline);

    static int32_t sbuf[QUEUED][COUNT], rbuf[QUEUED][COUNT];
    for (int c = 0; c < QUEUED; c++)
        for (int i = 0; i < COUNT; i++) {
            sbuf[c][i] = val(ot_rank, c, i);
            rbuf[c][i] = -1;
        }
    MPI_Comm comm;
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    OT_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    /* Open MPI 4.1's MPI_Wait reports a failed collective request to MPI_COMM_WORLD's
     * handler, not its communicator's */
    OT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* the peers late: the last rank's set-up waits for them, its calls queue */
    if (!last)
        usleep(1000000);
    MPI_Request req[QUEUED];
    int post_rc[QUEUED], failed = -1, nfailed = 0;
    const int fails = twice ? 2 : 1;
    const double t0 = ot_now();
    for (int c = 0; c < QUEUED; c++) {
        armed = last && c > 0 && nfailed < fails;
        tripped = 0;
        post_rc[c] = MPI_Iallreduce(sbuf[c], rbuf[c], COUNT, MPI_INT, MPI_SUM, comm, &req[c]);
        armed = 0;
        if (post_rc[c] != MPI_SUCCESS) {
            req[c] = MPI_REQUEST_NULL;
            if (!tripped)
                OT_FAIL("call %d: MPI_Iallreduce returned %d (%s) with no allocation failed", c, post_rc[c],
                        ot_errname(post_rc[c]));
            if (failed < 0)
                failed = c;
            nfailed++;
        }
    }
    const double t_post = ot_now() - t0;
    if (last && nfailed && nfailed != fails)
        OT_FAIL("%d post(s) failed, want %d", nfailed, fails);
    if (last && !twice && t_post > 0.5)
        OT_FAIL("the posts took %.2f s: the call without a request waited for the late peers", t_post);
    int wait_rc[QUEUED];
    for (int c = 0; c < QUEUED; c++) {
        wait_rc[c] = req[c] == MPI_REQUEST_NULL ? post_rc[c] : MPI_Wait(&req[c], MPI_STATUS_IGNORE);
        if (req[c] != MPI_REQUEST_NULL && wait_rc[c] == MPI_SUCCESS)
            OT_FAIL("call %d: MPI_Wait left the request", c);
    }
    const double dt = ot_now() - t0;

    OT_MPI(MPI_Bcast(&failed, 1, MPI_INT, ot_size - 1, MPI_COMM_WORLD));
    if (failed < 0)
        OT_FAIL("no post failed on the last rank: the request pool grew without libopen-pal's malloc (the "
                "case was not made)");
    int later_ok = 0;
    for (int c = 0; c < QUEUED; c++) {
        char what[64];
        snprintf(what, sizeof what, "rank %d", ot_rank);
        if (c < failed) {
            if (wait_rc[c] != MPI_SUCCESS)
                OT_FAIL("call %d, before the failed one (%d): returned %d (%s)", c, failed, wait_rc[c],
                        ot_errname(wait_rc[c]));
            check_sum(what, c, rbuf[c]);
        } else if (c == failed) {
            if (wait_rc[c] == MPI_SUCCESS)
                OT_FAIL("call %d, the one the last rank could not post, succeeded here", c);
        } else if (wait_rc[c] == MPI_SUCCESS) {
            check_sum(what, c, rbuf[c]);
            later_ok++;
        }
    }
    int cls = MPI_SUCCESS;
    MPI_Error_class(wait_rc[failed], &cls);
    if (last && cls != MPI_ERR_NO_MEM)
        OT_FAIL("call %d without a request returned %d (%s), want MPI_ERR_NO_MEM", failed, wait_rc[failed],
                ot_errname(wait_rc[failed]));
    printf("rank %d: call %d failed with %s (class %d) after %.2f s (posts %.2f s); %d later call(s) "
           "succeeded, checked\n",
           ot_rank, failed, ot_errname(wait_rc[failed]), cls, dt, t_post, later_ok);

    /* a new communicator works */
    OT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Comm fresh;
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &fresh));
    for (int i = 0; i < COUNT; i++)
        rbuf[0][i] = -1;
    OT_MPI(MPI_Allreduce(sbuf[0], rbuf[0], COUNT, MPI_INT, MPI_SUM, fresh));
    check_sum("a new communicator", 0, rbuf[0]);
    MPI_Comm_free(&fresh);
    MPI_Comm_free(&comm);
    OT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (ot_rank == 0)
        printf("OK t_reqoom: call %d of %d refused on every rank, %d before it checked\n", failed, QUEUED,
               failed);
    MPI_Finalize();
    return 0;
}
