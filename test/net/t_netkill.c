/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_netkill: a peer reached over the net transport (UCX) dies by SIGKILL during a
 * collective; the other ranks' pending collective must complete with an error
 * (dfcclCommAborted expected) within a bounded time instead of hanging.
 *
 * Sets DFCCL_NET=ucx unless DFCCL_NET is already set, so every peer is on UCX.
 * Run it with `mpirun --enable-recovery` so that Open MPI leaves the survivors
 * running after the victim dies (test/net/run_net_suite.sh does).
 *
 * usage: t_netkill [--probe] [--victim R] [--count N] [--mid] [--deadline SEC]
 *                  [--survivor-comm] [--comms K]
 *                  [--teardown N [--keep | --keep-sub] [--cross] [--destroy-late-ms MS]]
 *   --probe          no kill: create a communicator, run one checked allreduce,
 *                    destroy, finalize; rank 0 prints "OK". If dfcclCommInit says
 *                    dfcclUnsupported (library built without UCX), rank 0 prints
 *                    "SKIP: ..." and every rank exits 0 (also without --probe).
 *   --victim R       the rank that dies (default 1)
 *   --count N        float32 elements of the allreduce in flight at the kill
 *                    (default 1024: one-shot; large counts use the ring)
 *   --mid            the victim posts the allreduce too and dies while it is in
 *                    flight (default: it dies without posting, the others wait on it);
 *                    should the victim's daemon finish it before the kill (a fast
 *                    machine), the survivors post a second one that must fail
 *   --late-ms MS     rank 1 enters the first allreduce MS ms after the others, which
 *                    wait on it: a live peer (in another pid namespace, its heartbeat)
 *                    must not be taken for dead however long it is late
 *   --kill-after-us U  the victim dies U µs after the barrier that follows the set-up
 *                    (default 20000 with --mid, 300000 without); the GPU moves a
 *                    --mid allreduce so fast that it dies at once there
 *   --deadline SEC   the survivors' pending allreduce must complete (with an error)
 *                    within SEC seconds of the kill (default 20); past it, or if any
 *                    later step hangs that long, print "HANG: ..." and _exit(3)
 *   --survivor-comm  also keep a communicator of the survivors only, created before
 *                    the kill, and check that an allreduce on it still succeeds
 *                    after the failure was reported
 *   --comms K        K communicators over every rank, all open at the kill (they
 *                    share the net endpoints to each peer): every survivor posts an
 *                    allreduce on each, and each one must fail, as must a barrier
 *                    posted on each after the failure; all K are then destroyed
 *   --teardown N     no kill: N rounds of {create a communicator, one checked
 *                    allreduce of --count elements, destroy it, MPI_Barrier}; ranks
 *                    leave each collective and destroy at slightly different times,
 *                    which must not make a peer's collective fail. Teardown must
 *                    release everything: between round 10 and the last, the process
 *                    may gain no file descriptor and no thread (the proxy exits with
 *                    the last net communicator), nor more than 8 MiB of resident
 *                    memory; rank 0 prints "OK"
 *   --keep           with --teardown: the first communicator stays open through the
 *                    rounds (checked with an allreduce at the end), so the UCX
 *                    context and workers live on and every round's communicator
 *                    reuses the endpoints to the same peers; the limits above hold
 *   --cross          with --teardown: each round makes two communicators, one checked
 *                    allreduce on each, and even ranks destroy them in the order made,
 *                    odd ranks in the other order (with steps by put a leaving rank
 *                    waits for its peers' answers to its goodbye: each rank must answer
 *                    while it waits for its own)
 *   --destroy-late-ms MS  with --teardown: rank 0 destroys each round's communicator MS
 *                    ms after the others (its proxy answers their goodbyes meanwhile)
 *   --keep-sub       like --keep, but the kept communicator leaves out the last rank
 *                    (3 ranks or more): its UCX workers go and come back every round,
 *                    and the others must let go of the endpoints to its old ones
 *
 * Built with -DTK_DEVICE (test/gpu/t_netkill_dev): the allreduces in flight at the kill
 * are on device buffers, so the GPU daemon's side of the watch is what reports the dead
 * peer (its same-host peers over CUDA IPC with DFCCL_NET=auto, host-staged UCX
 * connections with DFCCL_NET=ucx). The other collectives stay on host buffers.
 *
 * Output of each survivor: "OK: peer failure reported on rank R after T s: result N
 * (name): last error" after its pending allreduce failed, a posted-after-failure
 * barrier failed too and dfcclCommDestroy returned; "FAIL ..." (exit 1) when the
 * allreduce succeeded although a peer was dead. Survivors _exit(0) without
 * MPI_Finalize (the job has lost a process). The victim prints "t_netkill: victim
 * rank R pid P" just before it dies.
 */
#include "../mpi/test_common.h"
#include "../proc_usage.h"
#ifdef TK_DEVICE
#include <cuda_runtime.h>
#endif

#include <malloc.h>
#include <signal.h>

/* kB in use from malloc (small blocks and mmapped ones) */
static long heap_kb(void)
{
    const struct mallinfo2 m = mallinfo2();
    return (long)((m.uordblks + m.hblkhd) / 1024);
}
static volatile sig_atomic_t phase_id;
static const char *const phase_names[] = {
    "waiting for the pending allreduce to fail", "waiting for the barrier posted after the failure",
    "destroying the communicator with the dead peer", "allreduce on the survivors' communicator"};

/* SIGALRM: a phase took longer than the deadline */
static void on_alarm(int sig)
{
    (void)sig;
    char buf[200];
    int n = snprintf(buf, sizeof buf, "HANG: rank %d still %s after the deadline\n", tc_rank,
                     phase_names[phase_id]);
    if (n > 0)
        (void)!write(1, buf, (size_t)n);
    _exit(3);
}

static void arm(int phase, double deadline)
{
    phase_id = phase;
    alarm((unsigned)(deadline + 0.999));
}

static const char *result_name(dfcclResult_t r)
{
    switch (r) {
    case dfcclSuccess: return "dfcclSuccess";
    case dfcclInProgress: return "dfcclInProgress";
    case dfcclInvalidArgument: return "dfcclInvalidArgument";
    case dfcclInvalidUsage: return "dfcclInvalidUsage";
    case dfcclSystemError: return "dfcclSystemError";
    case dfcclNoMemory: return "dfcclNoMemory";
    case dfcclTimeout: return "dfcclTimeout";
    case dfcclCommAborted: return "dfcclCommAborted";
    case dfcclUnsupported: return "dfcclUnsupported";
    case dfcclInternalError: return "dfcclInternalError";
    case dfcclBootstrapError: return "dfcclBootstrapError";
    default: return "unknown";
    }
}

/* Poll @p req until it completes; returns its result. */
static dfcclResult_t wait_polling(dfcclRequest_t *req)
{
    long spins = 0;
    for (;;) {
        int done = 0;
        dfcclResult_t r = dfcclTest(req, &done);
        if (done || r != dfcclSuccess)
            return r;
        if (++spins > 64)
            tc_sleep_us(100);
        else
            sched_yield();
    }
}

/* One round's communicator with one checked allreduce on it. */
static dfcclComm_t round_comm(int round, size_t count)
{
    dfcclComm_t comm;
    CHECK(dfcclCommInitMPI(&comm, MPI_COMM_WORLD));
    char what[40];
    snprintf(what, sizeof what, "round %d: allreduce", round);
    tc_checked_allreduce_n(comm, tc_size, tc_rank, count, 1000 + (uint64_t)round, what);
    return comm;
}

/* --teardown: rounds of create, one checked allreduce, destroy; then nothing may have
 * leaked (file descriptors, threads, resident memory). Finalizes MPI; returns the exit
 * status. */
static int run_teardown(dfcclComm_t comm, int teardown, size_t count, int keep, int keep_sub, int cross,
                        long destroy_late_ms)
{
    dfcclComm_t kept = keep ? comm : NULL;
    if (!keep)
        CHECK(dfcclCommDestroy(comm));
    MPI_Comm sub = MPI_COMM_NULL;
    if (keep_sub) {
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, tc_rank == tc_size - 1 ? MPI_UNDEFINED : 0, tc_rank, &sub));
        if (sub != MPI_COMM_NULL)
            CHECK(dfcclCommInitMPI(&kept, sub));
    }
    int fds0 = -1, tasks0 = -1;
    /* bytes in use from malloc (kB) at round 10 and at the quarters from there to the
     * last round: a leak shows in each, where resident memory moves in the allocator's
     * steps (a real 100 kB a communicator grew it by 1668, 104 and 1536 kB a quarter) */
    long rss0 = -1, heap0 = -1, heapq[3] = {-1, -1, -1};
    for (int round = 0; round < teardown; round++) {
        comm = round_comm(round, count);
        dfcclComm_t second = cross ? round_comm(round, count) : NULL;
        if (tc_rank == 0 && destroy_late_ms > 0)
            tc_sleep_us(1000L * destroy_late_ms);
        if (second && tc_rank % 2) { /* the other order */
            CHECK(dfcclCommDestroy(second));
            second = NULL;
        }
        CHECK(dfcclCommDestroy(comm));
        if (second)
            CHECK(dfcclCommDestroy(second));
        MPI_Barrier(MPI_COMM_WORLD);
        if (round == 10 || (round == teardown - 1 && fds0 < 0)) {
            fds0 = proc_entries("/proc/self/fd");
            tasks0 = proc_entries("/proc/self/task");
            rss0 = proc_rss_kb();
            heap0 = heap_kb();
        }
        for (int q = 0; q < 3; q++)
            if (round > 10 && round == 10 + (q + 1) * (teardown - 11) / 4)
                heapq[q] = heap_kb();
    }
    /* a socket or thread of the last round may still be closing (a loaded machine): a
     * leak stays, a close in flight goes within a second */
    int fds1 = proc_entries("/proc/self/fd"), tasks1 = proc_entries("/proc/self/task");
    for (int i = 0; i < 20 && (fds1 > fds0 || tasks1 > tasks0); i++) {
        tc_sleep_us(50000);
        fds1 = proc_entries("/proc/self/fd");
        tasks1 = proc_entries("/proc/self/task");
    }
    const long rss1 = proc_rss_kb(), heap1 = heap_kb();
    if (kept) {
        tc_checked_allreduce_on(kept, sub != MPI_COMM_NULL ? tc_size - 1 : tc_size, tc_rank,
                                "allreduce on the kept communicator");
        CHECK(dfcclCommDestroy(kept));
    }
    if (sub != MPI_COMM_NULL)
        MPI_Comm_free(&sub);
    printf("rank %d: after round 10: %d fds, %d threads, rss %ld kB; after %d: %d fds, %d threads, rss %ld "
           "kB\n",
           tc_rank, fds0, tasks0, rss0, teardown, fds1, tasks1, rss1);
    if (fds1 > fds0)
        TC_FAIL("file descriptors grew from %d to %d over %d communicators", fds0, fds1, teardown - 11);
    if (tasks1 > tasks0)
        TC_FAIL("threads grew from %d to %d over %d communicators", tasks0, tasks1, teardown - 11);
    /* a leak grows with every communicator, so in every quarter of the run (64 kB a
     * quarter: ~7 kB a communicator at 50 rounds); a pool's one-off chunk (UCX's, 1-8 MiB)
     * lands in one quarter. Resident memory only bounds the whole: two 1 MiB allocator
     * steps in one run were once taken for a leak when its halves were compared. */
    long grow[4], prev = heap0;
    int leaking = heapq[2] >= 0;
    for (int q = 0; q < 4; q++) {
        const long at = q < 3 ? heapq[q] : heap1;
        grow[q] = at - prev;
        leaking = leaking && grow[q] > 64;
        prev = at;
    }
    if (leaking)
        TC_FAIL("memory in use grew by %ld, %ld, %ld and %ld kB in the quarters of %d communicators", grow[0],
                grow[1], grow[2], grow[3], teardown - 11);
    if (rss1 - rss0 > 32768)
        TC_FAIL("resident memory grew by %ld kB over %d communicators", rss1 - rss0, teardown - 11);
    if (tc_rank == 0)
        printf("OK\n");
    MPI_Finalize();
    return 0;
}

#ifdef TK_DEVICE
/* the allreduces' buffers to device memory: copies of the host ones, which are freed */
static void to_device(float **send_p, float **recv_p, size_t count, int ncomms)
{
    float *dsend, *drecv;
    if (cudaMalloc((void **)&dsend, count * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&drecv, (size_t)ncomms * count * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(dsend, *send_p, count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(drecv, *recv_p, (size_t)ncomms * count * sizeof(float), cudaMemcpyHostToDevice) !=
            cudaSuccess ||
        cudaStreamSynchronize(0) != cudaSuccess)
        TC_FAIL("device buffers of %zu floats could not be set up", count);
    free(*send_p);
    free(*recv_p);
    *send_p = dsend;
    *recv_p = drecv;
}
#endif

/* The victim: with --mid it posts the allreduce too; then it dies by SIGKILL. */
static void die_as_victim(dfcclComm_t comm, float *send, float *recv, size_t count, int mid,
                          long kill_after_us)
{
    dfcclRequest_t q = NULL;
    if (mid)
        CHECK(dfcclAllReduce(send, recv, count, dfcclFloat32, dfcclSum, comm, &q));
    /* let the others post theirs and, with --mid, let chunks flow */
    tc_sleep_us(kill_after_us >= 0 ? kill_after_us : mid ? 20000 : 300000);
    printf("t_netkill: victim rank %d pid %ld\n", tc_rank, (long)getpid());
    fflush(stdout);
    fflush(stderr);
    raise(SIGKILL);
}

/* --survivor-comm: the survivors' communicator does not include the dead rank: it must
 * work */
static void check_survivors(MPI_Comm smc, dfcclComm_t scomm, size_t count, int victim, double deadline)
{
    int me, P;
    MPI_Comm_rank(smc, &me);
    MPI_Comm_size(smc, &P);
    tc_case_t s;
    memset(&s, 0, sizeof s);
    s.coll = TC_ALLREDUCE;
    s.t = dfcclFloat32;
    s.op = dfcclSum;
    s.count = count;
    s.seed = 43;
    s.comm = scomm;
    s.P = P;
    s.me = me;
    tc_case_setup(&s);
    tc_case_submit(&s);
    arm(3, deadline);
    dfcclResult_t rs = wait_polling(&s.req);
    alarm(0);
    if (rs != dfcclSuccess)
        TC_FAIL("allreduce on the survivors' communicator failed after rank %d died: %d (%s): %s", victim,
                (int)rs, dfcclGetErrorString(rs), dfcclGetLastError());
    if (tc_case_check(&s))
        TC_FAIL("allreduce on the survivors' communicator gave wrong results after rank %d died", victim);
    tc_case_free(&s);
    /* every survivor done before any destroys (the teardown race has its own case) */
    MPI_CHECK(MPI_Barrier(smc));
    CHECK(dfcclCommDestroy(scomm));
    printf("OK: survivors' communicator still works on rank %d\n", tc_rank);
}

/* after the failure: a barrier posted on each communicator must not hang either, and each
 * one is destroyed */
static void check_after_failure(dfcclComm_t *comms, int ncomms, int victim, double deadline)
{
    for (int i = 0; i < ncomms; i++) {
        arm(1, deadline);
        dfcclRequest_t b = NULL;
        dfcclResult_t rb = dfcclBarrier(comms[i], &b);
        if (rb == dfcclSuccess)
            rb = wait_polling(&b);
        alarm(0);
        if (rb == dfcclSuccess)
            TC_FAIL(
                "a barrier posted after the failure on communicator %d of %d completed successfully although "
                "rank %d is dead",
                i + 1, ncomms, victim);
    }

    for (int i = 0; i < ncomms; i++) {
        arm(2, deadline);
        dfcclResult_t rd = dfcclCommDestroy(comms[i]);
        alarm(0);
        if (rd != dfcclSuccess)
            TC_FAIL("dfcclCommDestroy after the failure returned %d (%s): %s", (int)rd,
                    dfcclGetErrorString(rd), dfcclGetLastError());
    }
}

int main(int argc, char **argv)
{
    setenv("DFCCL_NET", "ucx", 0);
    MPI_Init(&argc, &argv);
    tc_init_world();

    int probe = tc_arg_flag(argc, argv, "--probe");
    int mid = tc_arg_flag(argc, argv, "--mid");
    const long kill_after_us =
        tc_arg_value(argc, argv, "--kill-after-us") ? atol(tc_arg_value(argc, argv, "--kill-after-us")) : -1;
    int survivor_comm = tc_arg_flag(argc, argv, "--survivor-comm");
    int victim = tc_arg_value(argc, argv, "--victim") ? atoi(tc_arg_value(argc, argv, "--victim")) : 1;
    size_t count =
        tc_arg_value(argc, argv, "--count") ? strtoull(tc_arg_value(argc, argv, "--count"), NULL, 0) : 1024;
    double deadline =
        tc_arg_value(argc, argv, "--deadline") ? atof(tc_arg_value(argc, argv, "--deadline")) : 20;
    if (!probe && (tc_size < 2 || victim < 0 || victim >= tc_size))
        TC_FAIL("need at least 2 ranks and a victim in [0, %d), got victim %d", tc_size, victim);
    if (count < 1)
        count = 1;

    int teardown = tc_arg_value(argc, argv, "--teardown") ? atoi(tc_arg_value(argc, argv, "--teardown")) : 0;
    int keep = tc_arg_flag(argc, argv, "--keep");
    int keep_sub = tc_arg_flag(argc, argv, "--keep-sub");
    if (keep_sub && tc_size < 3)
        TC_FAIL("--keep-sub needs at least 3 ranks, got %d", tc_size);
    int ncomms = tc_arg_value(argc, argv, "--comms") ? atoi(tc_arg_value(argc, argv, "--comms")) : 1;
    if (ncomms < 1 || ncomms > 64)
        TC_FAIL("--comms takes 1 to 64, got %d", ncomms);

    dfcclComm_t comm;
    dfcclResult_t r = dfcclCommInitMPI(&comm, MPI_COMM_WORLD);
    if (r == dfcclUnsupported) {
        /* every rank sees the same bootstrap table, so every rank gets here */
        if (tc_rank == 0)
            printf("SKIP: dfcclCommInit with DFCCL_NET=%s: %s: %s\n", getenv("DFCCL_NET"), result_name(r),
                   dfcclGetLastError());
        MPI_Finalize();
        return 0;
    }
    CHECK(r);

    /* one checked allreduce while everybody is alive */
    if (tc_rank == 1 && tc_arg_value(argc, argv, "--late-ms"))
        tc_sleep_us(1000L * atol(tc_arg_value(argc, argv, "--late-ms")));
    tc_checked_allreduce(comm, "allreduce before the kill");

    if (teardown > 0)
        return run_teardown(comm, teardown, count, keep, keep_sub, tc_arg_flag(argc, argv, "--cross"),
                            tc_arg_value(argc, argv, "--destroy-late-ms")
                                ? atol(tc_arg_value(argc, argv, "--destroy-late-ms"))
                                : 0);

    if (probe) {
        CHECK(dfcclCommDestroy(comm));
        MPI_Barrier(MPI_COMM_WORLD);
        if (tc_rank == 0)
            printf("OK\n");
        MPI_Finalize();
        return 0;
    }

    /* the survivors' own communicator, made while every rank can take part */
    MPI_Comm smc = MPI_COMM_NULL;
    dfcclComm_t scomm = NULL;
    if (survivor_comm) {
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, tc_rank == victim ? MPI_UNDEFINED : 0, tc_rank, &smc));
        if (tc_rank != victim)
            CHECK(dfcclCommInitMPI(&scomm, smc));
    }

    /* comms[0] is the one of the messages; the others share its endpoints */
    dfcclComm_t comms[64];
    comms[0] = comm;
    for (int i = 1; i < ncomms; i++)
        CHECK(dfcclCommInitMPI(&comms[i], MPI_COMM_WORLD));

    float *send = tc_malloc(count * sizeof(float)), *recv = tc_malloc((size_t)ncomms * count * sizeof(float));
    tc_fill(send, dfcclFloat32, dfcclSum, 7, tc_rank, 0, count);
    tc_poison(recv, (size_t)ncomms * count * sizeof(float));
#ifdef TK_DEVICE
    to_device(&send, &recv, count, ncomms);
#endif
    MPI_Barrier(MPI_COMM_WORLD);

    if (tc_rank == victim) {
        die_as_victim(comm, send, recv, count, mid, kill_after_us);
        return 99; /* not reached */
    }

    signal(SIGALRM, on_alarm);
    dfcclRequest_t reqs[64];
    for (int i = 0; i < ncomms; i++)
        CHECK(dfcclAllReduce(send, recv + (size_t)i * count, count, dfcclFloat32, dfcclSum, comms[i],
                             &reqs[i]));
    double t0 = MPI_Wtime();
    /* the kill comes ~0.3 s after the barrier: allow for that on top of the deadline */
    arm(0, deadline + 1);
    r = wait_polling(&reqs[0]);
    double dt = MPI_Wtime() - t0;
    alarm(0);
    if (r == dfcclSuccess && mid) {
        /* the victim posted it, and its daemon keeps moving chunks while its main
         * thread sleeps towards the kill (the GPU's kernel even outlives the process
         * for a moment): on a fast machine the whole allreduce can be done before the
         * victim dies, and the result is then right. The next one, which the victim
         * never posts, must fail. */
        printf("t_netkill: rank %d: the allreduce the victim posted completed before the kill; posting "
               "another\n",
               tc_rank);
        fflush(stdout);
        CHECK(dfcclAllReduce(send, recv, count, dfcclFloat32, dfcclSum, comms[0], &reqs[0]));
        arm(0, deadline + 1);
        r = wait_polling(&reqs[0]);
        dt = MPI_Wtime() - t0;
        alarm(0);
    }
    if (r == dfcclSuccess)
        TC_FAIL("the allreduce completed successfully although rank %d was killed", victim);
    char first_err[300];
    snprintf(first_err, sizeof first_err, "%s", dfcclGetLastError());
    for (int i = 1; i < ncomms; i++) {
        arm(0, deadline);
        dfcclResult_t ri = wait_polling(&reqs[i]);
        alarm(0);
        if (ri == dfcclSuccess)
            TC_FAIL(
                "the allreduce on communicator %d of %d completed successfully although rank %d was killed",
                i + 1, ncomms, victim);
    }

    check_after_failure(comms, ncomms, victim, deadline);

    printf("OK: peer failure reported on rank %d after %.2f s: result %d (%s)%s: %s\n", tc_rank, dt, (int)r,
           result_name(r), r == dfcclCommAborted ? "" : " [expected dfcclCommAborted]", first_err);
    fflush(stdout);

    if (survivor_comm)
        check_survivors(smc, scomm, count, victim, deadline);

#ifdef TK_DEVICE
    cudaFree(send);
    cudaFree(recv);
#else
    free(send);
    free(recv);
#endif
    fflush(stdout);
    fflush(stderr);
    _exit(0); /* no MPI_Finalize: the job has lost a process */
}
