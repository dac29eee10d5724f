/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The deadlock fuzzer's program: one random, valid program of collectives per seed,
 * run on every rank and checked element by element against a host reference.
 *
 * Built twice from these files (fuzz.h lists the parts): fz_native (the native API,
 * dfccl*) and, with -DFZ_MPI, fz_mpi (plain MPI, run with mca_coll_dfccl loaded and
 * coll_dfccl_host_buffers=1, so the component puts the host buffers on the engine's CPU
 * daemon).
 *
 * The program (the same on every rank: it depends on the seed and the world size only)
 *   - communicators: a duplicate of world, then creation events spread over the phases:
 *     duplicates, reordered duplicates (keys permuted), splits into 2-3 colours and
 *     random overlapping subsets; some are freed at the end of a phase (mid-program);
 *   - phases: at the start of each the main thread creates that phase's communicators
 *     (every world rank, in one order), then T host threads each run the collectives of
 *     their own communicators (communicator k belongs to thread k mod T), then the main
 *     thread frees the communicators whose last phase it was;
 *   - collectives: allreduce, reduce, bcast, allgather, reduce_scatter, alltoall,
 *     barrier, gather, scatter, gatherv, scatterv, allgatherv, alltoallv,
 *     reduce_scatterv; every type
 *     (native: float16 and bfloat16 too) and valid op; sizes from 0 over the LL round
 *     (up to 1 KiB), a few KiB, tens of KiB to 4 MiB (one-shot, direct exchange, ring)
 *     to 8 MiB; in place sometimes; v-forms with uneven counts and gaps; blocking
 *     (submit and wait) or non-blocking; some waited only in the next phase.
 *   - order: each rank issues its thread's collectives in its own interleaving, which
 *     keeps every communicator's order (so the program is valid MPI) and the global
 *     order of the blocking ones (so no rank waits on the host of a rank that waits on
 *     it). Different communicators interleave differently on every rank: what hangs
 *     run-to-completion libraries. Non-blocking ones are then waited in random groups
 *     (dfcclWait, dfcclWaitAll, a dfcclTest loop; MPI_Wait, MPI_Waitall, MPI_Test).
 *   - faults (--faults): "late": now and then a rank sleeps up to 100 ms before a
 *     collective; "kill": in the last phase one rank raises SIGKILL after a random
 *     number of its submissions, and every survivor must then end with an error (the
 *     phase ends with a blocking barrier on the world duplicate, which the victim never
 *     reaches; fz_mpi: a 1-element allreduce, and no MPI_Barrier nor 0-element call in
 *     kill programs, since the component leaves those to Open MPI's own components) and
 *     print "FZ-SURVIVOR", never hang. Run kill programs with `mpirun --enable-recovery`.
 *
 * Oracle: every input element is a hash of (seed, rank, index) (test/mpi/test_common.h:
 * not all equal, not all zero, exact in every type and op), every receive buffer starts
 * poisoned and lies between guard zones; after completion the whole receive buffer
 * (gaps and non-root buffers that must stay untouched included) is compared with a
 * reference computed on the host, inputs that are not in place must be unchanged and
 * the guards intact.
 *
 * Hangs: a watchdog thread prints "HANG: ..." with this rank's pending collectives and
 * _exit(3)s when nothing was submitted or completed for --stall seconds.
 *
 * usage: fz_native|fz_mpi --seed S [--stall SEC] [--faults none|late|kill|any] [--threads T]
 *                         [--keep-ops all|LIST] [--keep-comms all|LIST] [--print] [--count]
 *   --keep-ops / --keep-comms  run only these collectives / communicators (ids as
 *                         --print shows them; comma lists); what the shrinker passes
 *   --print               rank 0 prints the program before running it
 *   --inject-wrong OP     after collective OP completes, communicator rank 0 flips one bit
 *                         of one received element before the check: the oracle must
 *                         report it (the suite's proof that the oracle and shrinker bite)
 *   --count               rank 0 prints "ops N comms M" and "op-comms" (each collective's
 *                         communicator), then every rank exits (no run)
 * fz_native_dev (-DFZ_CUDA, built where CUDA is; run on the GPU machine) takes --device:
 * every buffer is then a cudaMalloc copy of the host one (the GPU daemon runs the
 * collectives) and, before one submission in four, the rank calls cudaDeviceSynchronize,
 * cudaFree or waits for a cudaMemsetAsync on the legacy stream while collectives are
 * pending. Without --device it is fz_native.
 * Output: rank 0 prints "OK fuzz ..." at the end; a wrong element is a MISMATCH line and
 * exit 1 (MPI_Abort); a hang a HANG line and exit 3.
 */
#include "fuzz.h"
#include "fz_gen.h"
#include "fz_thread.h"
#include "fz_watch.h"

/* ------------------------------------------------------------------ communicators */

static void fz_create(int p)
{
    if (p == 0 && prog.keep_comm[0]) {
        MPI_Comm mc;
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mc));
        fz_comm_adopt(0, mc);
    }
    for (int e = 0; e < prog.nevent; e++) {
        const fz_event_t *ev = &prog.ev[e];
        if (ev->phase != p)
            continue;
        int any = 0;
        for (int k = ev->first; k < ev->first + ev->ncolors; k++)
            any |= prog.keep_comm[k];
        if (!any)
            continue;
        int col = ev->color[tc_rank];
        if (col >= 0 && !prog.keep_comm[ev->first + col])
            col = -1;
        MPI_Comm mc;
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, col >= 0 ? col : MPI_UNDEFINED, ev->key[tc_rank], &mc));
        if (col < 0)
            continue;
        int k = ev->first + col, r = -1;
        MPI_Comm_rank(mc, &r);
        if (r != prog.comm[k].rank_of[tc_rank])
            TC_FAIL("comm %d: MPI rank %d, the generator expected %d", k, r, prog.comm[k].rank_of[tc_rank]);
        fz_comm_adopt(k, mc);
        fz_progress();
    }
}

static void fz_free(int p)
{
    for (int k = 0; k < prog.ncomm; k++) {
        const fz_comm_t *c = &prog.comm[k];
        if (c->free_phase != p || c->rank_of[tc_rank] < 0 || !prog.keep_comm[k])
            continue;
        fz_comm_release(k);
    }
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    const char *s = tc_arg_value(argc, argv, "--seed");
    uint64_t seed = s ? strtoull(s, NULL, 0) : 1;
    const char *faults = tc_arg_value(argc, argv, "--faults");
    int threads = tc_arg_value(argc, argv, "--threads") ? atoi(tc_arg_value(argc, argv, "--threads")) : 0;
    if (threads > FZ_MAXT)
        threads = FZ_MAXT;
    if (tc_arg_value(argc, argv, "--stall"))
        stall_s = atof(tc_arg_value(argc, argv, "--stall"));
    if (tc_arg_value(argc, argv, "--inject-wrong"))
        inject_op = atoi(tc_arg_value(argc, argv, "--inject-wrong"));
    int late = 0, kill = 0;
    if (faults && (!strcmp(faults, "late") || !strcmp(faults, "any")))
        late = 1;
    if (faults && (!strcmp(faults, "kill") || !strcmp(faults, "any")))
        kill = 1;
    int T = threads > 0 ? threads : fz_threads_of(seed);
    int provided = 0;
    MPI_Init_thread(&argc, &argv, T > 1 ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
    tc_init_world();
    if (tc_size > FZ_MAXP)
        TC_FAIL("at most %d ranks", FZ_MAXP);
#ifdef FZ_MPI
    const int mpi = 1;
    if (T > 1 && provided < MPI_THREAD_MULTIPLE)
        TC_FAIL("MPI_THREAD_MULTIPLE not provided (%d)", provided);
    /* errors come back to fz_failed, which names the collective (dups inherit it) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
#else
    const int mpi = 0;
#endif
    fz_generate(&prog, seed, tc_size, mpi, late, kill, T);
    fz_parse_keep(tc_arg_value(argc, argv, "--keep-ops"), prog.keep_op, FZ_MAXOPS);
    fz_parse_keep(tc_arg_value(argc, argv, "--keep-comms"), prog.keep_comm, FZ_MAXCOMM);
    if (tc_arg_flag(argc, argv, "--count")) {
        if (tc_rank == 0) {
            printf("ops %d comms %d\nop-comms", prog.nops, prog.ncomm);
            for (int i = 0; i < prog.nops; i++)
                printf(" %d", prog.op[i].comm);
            printf("\n");
        }
        MPI_Finalize();
        return 0;
    }
    if (tc_rank == 0 && tc_arg_flag(argc, argv, "--print"))
        fz_print(&prog);
#ifdef FZ_CUDA
    fz_device = tc_arg_flag(argc, argv, "--device");
    if (fz_device)
        fz_cuda_bind();
#endif
    fz_progress();
    pthread_t wd;
    if (pthread_create(&wd, NULL, fz_watchdog, NULL) != 0)
        TC_FAIL("pthread_create failed");
    double t0 = MPI_Wtime();
    for (int t = 0; t < prog.T; t++)
        fz_thr[t].thread = t;
    for (int p = 0; p < prog.nphase; p++) {
        atomic_store(&fz_phase_now, p);
        fz_create(p);
        /* kill programs: every set-up done before the victim may die */
        if (prog.kill && p + 1 == prog.nphase)
            MPI_Barrier(MPI_COMM_WORLD);
        fz_phase_arg = p;
        if (prog.T == 1) {
            fz_thread_phase(&fz_thr[0]);
        } else {
            pthread_t th[FZ_MAXT];
            for (int t = 0; t < prog.T; t++)
                if (pthread_create(&th[t], NULL, fz_thread_phase, &fz_thr[t]) != 0)
                    TC_FAIL("pthread_create failed");
            for (int t = 0; t < prog.T; t++)
                pthread_join(th[t], NULL);
        }
        fz_progress();
        if (!prog.kill || p + 1 < prog.nphase)
            fz_free(p);
    }
    size_t ran = 0, failed = 0, bad = 0;
    for (int t = 0; t < prog.T; t++) {
        ran += fz_thr[t].ran;
        failed += fz_thr[t].failed;
        bad += fz_thr[t].bad;
    }
    if (prog.kill) {
        /* the survivors: every one must have seen an error (the closing barrier at least) */
        const char *first = "";
        for (int t = 0; t < prog.T; t++)
            if (fz_thr[t].first_err) {
                first = fz_thr[t].first_err_msg;
                break;
            }
        printf("FZ-SURVIVOR: seed=%llu world rank %d: %zu collectives, %zu failed, %zu wrong%s%s\n",
               (unsigned long long)seed, tc_rank, ran, failed, bad, failed ? "; first error: " : "", first);
        fflush(stdout);
#ifndef FZ_MPI
        fz_free(prog.nphase); /* dfcclCommDestroy is local; MPI_Comm_free is left alone */
#endif
        _exit(failed && !bad ? 0 : 1);
    }
    fz_free(prog.nphase);
    double dt = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned long long all = 0, mine = ran;
    MPI_Reduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (tc_rank == 0)
        printf("OK fuzz seed=%llu np=%d threads=%d phases=%d comms=%d ops=%d: %llu collectives run, %.2f s\n",
               (unsigned long long)seed, tc_size, prog.T, prog.nphase, prog.ncomm, prog.nops, all, dt);
    MPI_Finalize();
    return 0;
}
