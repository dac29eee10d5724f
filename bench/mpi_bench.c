/* SPDX-License-Identifier: BSD-3-Clause */
/* OSU-style latency loop: MPI_Allreduce and MPI_Iallreduce+MPI_Wait through whatever coll
 * component the run selects, and the same allreduce through dfccl's native API, in one
 * run, so the MPI path's overhead over the native call is a difference of medians.
 *   mpi_bench [-b MIN] [-e MAX] [-n ITERS] [-r REPEATS] [-D (device buffers)]
 * Each figure: REPEATS timed loops of ITERS calls after a warm-up loop, average per call
 * within a loop, median over the loops, slowest rank. Results are checked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dfccl_mpi.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef enum { MODE_MPI, MODE_IMPI, MODE_NATIVE } mode_t_;

static double loop_us(mode_t_ mode, float *in, float *out, int n, int iters, dfcclComm_t dc)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (mode == MODE_MPI) {
            MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        } else if (mode == MODE_IMPI) {
            MPI_Request r;
            MPI_Iallreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else {
            dfcclRequest_t r;
            if (dfcclAllReduce(in, out, (size_t)n, dfcclFloat32, dfcclSum, dc, &r) != dfcclSuccess ||
                dfcclWait(&r) != dfcclSuccess) {
                fprintf(stderr, "dfccl allreduce failed: %s\n", dfcclGetLastError());
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
    }
    double us = (MPI_Wtime() - t0) / iters * 1e6, mx;
    MPI_Allreduce(&us, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mx;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, P, opt;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    setvbuf(stdout, NULL, _IOLBF, 0);
    size_t minb = 8, maxb = 1 << 20;
    int iters = 200, reps = 7;
    while ((opt = getopt(argc, argv, "b:e:n:r:")) != -1) {
        switch (opt) {
        case 'b': minb = strtoull(optarg, NULL, 0); break;
        case 'e': maxb = strtoull(optarg, NULL, 0); break;
        case 'n': iters = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        default:
            if (me == 0)
                fprintf(stderr, "usage: mpi_bench [-b MIN] [-e MAX] [-n ITERS] [-r REPEATS]\n");
            MPI_Finalize();
            return 2;
        }
    }
    dfcclComm_t dc;
    if (dfcclCommInitMPI(&dc, MPI_COMM_WORLD) != dfcclSuccess) {
        fprintf(stderr, "dfcclCommInitMPI: %s\n", dfcclGetLastError());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    size_t maxn = maxb / 4 ? maxb / 4 : 1;
    float *in = malloc(maxn * 4), *out = malloc(maxn * 4);
    double *t = malloc(sizeof(double) * (size_t)reps);
    long bad = 0;
    if (me == 0)
        printf("# mpi_bench: allreduce float sum, %d ranks, us per call (median of %d loops of %d)\n"
               "# %10s %12s %12s %12s %12s\n",
               P, reps, iters, "bytes", "MPI_Allreduce", "Iallreduce", "native", "MPI-native");
    for (size_t bytes = minb; bytes <= maxb; bytes *= 8) {
        int n = (int)(bytes / 4 ? bytes / 4 : 1);
        for (int i = 0; i < n; i++)
            in[i] = (float)((me + i) % 7);
        double res[3];
        for (int m = 0; m < 3; m++) {
            int it = bytes >= (256u << 10) ? iters / 10 + 1 : iters;
            loop_us((mode_t_)m, in, out, n, it / 4 + 1, dc); /* warm-up */
            for (int r = 0; r < reps; r++)
                t[r] = loop_us((mode_t_)m, in, out, n, it, dc);
            qsort(t, (size_t)reps, sizeof(double), cmp_double);
            res[m] = t[reps / 2];
            for (int i = 0; i < n; i++) {
                float want = 0;
                for (int q = 0; q < P; q++)
                    want += (float)((q + i) % 7);
                bad += out[i] != want;
            }
        }
        if (me == 0)
            printf("  %10zu %12.2f %12.2f %12.2f %12.2f\n", (size_t)n * 4, res[0], res[1], res[2],
                   res[0] - res[2]);
    }
    long gbad;
    MPI_Allreduce(&bad, &gbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("# wrong elements: %ld\n", gbad);
    dfcclCommDestroy(dc);
    free(in);
    free(out);
    free(t);
    MPI_Finalize();
    return gbad ? 1 : 0;
}
