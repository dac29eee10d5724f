/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Chaos order through MPI: one MPI_Comm_dup per collective, every rank posts its
 * MPI_Iallreduce calls in its own permutation of the communicators, then waits for
 * all of them. Legal MPI (each communicator sees one collective); with the engine's
 * preemption it completes and every result is checked; with coll_dfccl_preempt=0
 * (run to completion, like NCCL) it deadlocks. A watchdog proves the hang instead of
 * waiting forever: past --deadline seconds it prints HANG and exits with code 3.
 *
 * The engine communicator of each dup is created at its first engine call, with a
 * blocking bootstrap over the previous module; one warm-up MPI_Allreduce per dup,
 * in the same order everywhere, does that before the chaos starts. With
 * --no-warmup the very first call on each dup is in chaos order: run it with
 * coll_dfccl_eager=1 (engine communicators made at MPI_Comm_dup).
 *
 *   t_chaos [--ncomms 8] [--iters 20] [--deadline 20] [--no-warmup]
 */
#include "ompi_test.h"

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int ncomms = atoi(ot_opt(argc, argv, "--ncomms", "8"));
    const int iters = atoi(ot_opt(argc, argv, "--iters", "20"));
    const double deadline = atof(ot_opt(argc, argv, "--deadline", "20"));
    const bool warmup = !ot_flag(argc, argv, "--no-warmup");
    static const int counts[] = {1, 100, 4096, 70000};

    MPI_Comm *comms = malloc(sizeof(MPI_Comm) * (size_t)ncomms);
    MPI_Request *q = malloc(sizeof(MPI_Request) * (size_t)ncomms);
    int *order = malloc(sizeof(int) * (size_t)ncomms);
    float **in = malloc(sizeof(float *) * (size_t)ncomms), **out = malloc(sizeof(float *) * (size_t)ncomms);
    for (int c = 0; c < ncomms; c++) {
        OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]));
        int one = 1, sum = 0;
        if (warmup) {
            OT_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comms[c])); /* same order */
            if (sum != ot_size)
                OT_FAIL("warm-up allreduce on dup %d: %d", c, sum);
        }
        in[c] = malloc(sizeof(float) * 70000);
        out[c] = ot_alloc(sizeof(float) * 70000);
    }

    for (int it = 0; it < iters; it++) {
        const int count = counts[it % 4];
        /* this rank's permutation: a seeded shuffle whose first communicator is
         * (it + rank) % ncomms, so ranks start on different ones */
        for (int c = 0; c < ncomms; c++)
            order[c] = c;
        for (int c = ncomms - 1; c > 0; c--) {
            int k = (int)(ot_hash((uint64_t)it, (uint64_t)ot_rank, (uint64_t)c) % (uint64_t)(c + 1));
            int t = order[c];
            order[c] = order[k];
            order[k] = t;
        }
        for (int c = 0; c < ncomms; c++)
            if (order[c] == (it + ot_rank) % ncomms) {
                order[c] = order[0];
                order[0] = (it + ot_rank) % ncomms;
            }
        for (int k = 0; k < ncomms; k++) {
            const int c = order[k];
            for (int i = 0; i < count; i++)
                in[c][i] = (float)((ot_rank + 1) * (c + 1) + i % 7);
            q[c] = MPI_REQUEST_NULL;
            OT_MPI(MPI_Iallreduce(in[c], out[c], count, MPI_FLOAT, MPI_SUM, comms[c], &q[c]));
        }
        ot_waitall_deadline(ncomms, q, deadline);
        const int n = ot_size;
        for (int c = 0; c < ncomms; c++)
            for (int i = 0; i < count; i++) {
                float want = (float)((c + 1) * (n * (n + 1) / 2) + n * (i % 7));
                if (out[c][i] != want)
                    OT_FAIL("iter %d comm %d element %d: got %g want %g", it, c, i, out[c][i], want);
            }
    }
    for (int c = 0; c < ncomms; c++) {
        ot_check_guard("chaos", out[c], sizeof(float) * 70000);
        free(in[c]);
        free(out[c]);
        OT_MPI(MPI_Comm_free(&comms[c]));
    }
    free(comms), free(q), free(order), free(in), free(out);
    MPI_Barrier(MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf("OK t_chaos: %d iterations x %d communicators on %d ranks, every rank in its own order\n",
               iters, ncomms, ot_size);
    MPI_Finalize();
    return 0;
}
