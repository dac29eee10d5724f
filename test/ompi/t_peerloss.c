/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer lost before the engine communicator exists (run_ompi_suite.sh, "peer loss").
 *
 * The engine communicator behind an MPI communicator is set up at its first engine call,
 * through the component's own exchanges. Open MPI 4.1 fails no message to a dead process,
 * so a rank killed before that set-up (under mpirun --enable-recovery, which leaves the
 * survivors running) used to leave every survivor waiting in its first collective forever.
 *
 *   t_peerloss --mode kill [--deadline S]   the last rank dies before its first collective
 *       on two duplicates of MPI_COMM_WORLD; every survivor's MPI_Allreduce and
 *       MPI_Iallreduce there must fail (MPI_ERRORS_RETURN) within S seconds, and the
 *       survivor prints "SURVIVOR rank R: ..." and leaves with _exit (MPI_Finalize would
 *       wait for the dead rank in Open MPI's own fence).
 *   t_peerloss --mode late --late-ms N       the last rank reaches its first collective N ms
 *       after the others: a peer that is only late is no failure; results are checked.
 *   t_peerloss --mode timeout --late-ms N    the same under coll_dfccl_timeout < N: every
 *       rank's set-up gives up and its calls fail (the knob that ends a wait on peers
 *       that can't be watched, on other hosts); prints "TIMED-OUT rank R".
 *
 * A watchdog prints "HANG: ..." and exits 3 after the deadline (default 30 s).
 */
#include <signal.h>

#include "ompi_test.h"

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const char *mode = ot_opt(argc, argv, "--mode", "kill");
    const double deadline = atof(ot_opt(argc, argv, "--deadline", "30"));
    const int late_ms = atoi(ot_opt(argc, argv, "--late-ms", "3000"));
    const int victim = ot_size - 1;
    const bool kill_mode = !strcmp(mode, "kill"), timeout_mode = !strcmp(mode, "timeout");
    if (!kill_mode && !timeout_mode && strcmp(mode, "late"))
        OT_FAIL("--mode kill|late|timeout, not %s", mode);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm a, b; /* Open MPI's own collectives: before anyone is lost */
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &b));
    OT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    char what[64];
    snprintf(what, sizeof what, "t_peerloss --mode %s", mode);
    ot_watchdog_start(what, deadline);

    if (ot_rank == victim) {
        if (kill_mode) {
            printf("VICTIM rank %d pid %d dies before its first collective\n", ot_rank, (int)getpid());
            fflush(stdout);
            raise(SIGKILL);
        }
        usleep((useconds_t)late_ms * 1000);
    }
    const double t0 = ot_now();
    int in = ot_rank + 1, out = -1, nin = 2 * (ot_rank + 1), nout = -1;
    const int rc1 = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, a);
    MPI_Request req = MPI_REQUEST_NULL;
    int rc2 = MPI_Iallreduce(&nin, &nout, 1, MPI_INT, MPI_SUM, b, &req);
    if (rc2 == MPI_SUCCESS)
        rc2 = MPI_Wait(&req, MPI_STATUS_IGNORE);
    const double dt = ot_now() - t0;
    char rc1s[64];
    snprintf(rc1s, sizeof rc1s, "%s", ot_errname(rc1));

    if (kill_mode || timeout_mode) {
        /* every call must fail, on every rank the set-up waited on (the late rank too) */
        const bool ok = rc1 != MPI_SUCCESS && rc2 != MPI_SUCCESS;
        printf("%s rank %d: MPI_Allreduce %s, MPI_Iallreduce %s, after %.2f s\n",
               kill_mode ? "SURVIVOR" : "TIMED-OUT", ot_rank, rc1s, ot_errname(rc2), dt);
        fflush(stdout);
        if (kill_mode || !ok)
            _exit(ok ? 0 : 1);
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
        MPI_Finalize();
        return 0;
    }
    const int sum = ot_size * (ot_size + 1) / 2;
    if (rc1 != MPI_SUCCESS || rc2 != MPI_SUCCESS)
        OT_FAIL("a late peer failed the calls: MPI_Allreduce %s, MPI_Iallreduce %s after %.2f s", rc1s,
                ot_errname(rc2), dt);
    if (out != sum || nout != 2 * sum)
        OT_FAIL("wrong results %d %d (expected %d %d)", out, nout, sum, 2 * sum);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    if (ot_rank == 0)
        printf("OK t_peerloss --mode late: rank %d %d ms late, the others waited %.2f s, results right\n",
               victim, late_ms, dt);
    MPI_Finalize();
    return 0;
}
