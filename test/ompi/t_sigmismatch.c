/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * With the DEFAULT settings (coll_dfccl_check 0): ranks whose calls of one collective
 * differ (count, reduce root, allreduce against bcast, op, datatype, bcast root) get an
 * MPI error on every rank, from that call (MPI_ERR_ARG: the engine's dfcclMismatch, or
 * MPI_ERR_OTHER where the peers had aborted the communicator before this rank called) or,
 * on a rank whose part needed nothing from a mismatched peer, from its next call on the
 * communicator; nothing hangs, and the communicator then refuses every call, while
 * others (MPI_COMM_WORLD) stay usable. The in-band signatures find these
 * (docs/usage.md, "Mismatched collectives"); before them, three hung and three returned
 * wrong data. Each case runs on a communicator of its own (the mismatch aborts it).
 * "two roots": the last rank passes itself as a bcast's root, the others rank 0; both
 * roots only send, every rank completes the bcast, and the roots find it at their next
 * call (before, nothing did until a later collective stalled).
 *
 * Built with -DOT_DEVICE (t_sigmismatch_dev, GPU machines, coll_dfccl_host_buffers 1) the
 * mismatched calls take device buffers (the GPU daemon), and one more case, "memory
 * kinds", has the last rank pass host buffers (the CPU daemon) where the others pass
 * device ones: the message names both kinds.
 *
 *   t_sigmismatch [COUNT]   COUNT: elements of each call (default 10)
 */
#ifdef OT_DEVICE
#include <cuda_runtime.h>
#endif
#include "ompi_test.h"

static int error_class(int rc)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int n = argc > 1 ? atoi(argv[1]) : 10;
    const int odd = ot_rank == ot_size - 1; /* the last rank calls something else */
    int *hbuf = calloc((size_t)n + 1, sizeof(int)), *hout = calloc((size_t)n + 1, sizeof(int));
    int *buf = hbuf, *out = hout;
    float *fbuf = calloc((size_t)n + 1, sizeof(float));
    static const char *const cases[] = {"count",    "reduce root", "allreduce vs bcast", "op",
                                        "datatype", "bcast root",  "two roots",          "memory kinds"};
#ifdef OT_DEVICE
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    CU(cudaMalloc((void **)&buf, sizeof(int) * ((size_t)n + 1)));
    CU(cudaMalloc((void **)&out, sizeof(int) * ((size_t)n + 1)));
    CU(cudaMemset(buf, 0, sizeof(int) * ((size_t)n + 1)));
    float *hfbuf = fbuf;
    CU(cudaMalloc((void **)&fbuf, sizeof(float) * ((size_t)n + 1)));
    CU(cudaMemset(fbuf, 0, sizeof(float) * ((size_t)n + 1)));
#else
    const int ncases = (int)(sizeof cases / sizeof cases[0]) - 1; /* memory kinds: device buffers only */
#endif
    int at_call = 0, at_next = 0;
    for (int k = 0; k < ncases; k++) {
        MPI_Comm c;
        OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        int v = 1, sum = 0;
        OT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
        if (sum != ot_size)
            OT_FAIL("%s: the allreduce before the mismatch gave %d", cases[k], sum);
        const double t0 = MPI_Wtime();
        int rc;
        switch (k) {
        case 0: rc = MPI_Allreduce(buf, out, odd ? n + 1 : n, MPI_INT, MPI_SUM, c); break;
        case 1: rc = MPI_Reduce(buf, out, n, MPI_INT, MPI_SUM, odd ? 1 : 0, c); break;
        case 2:
            rc = odd ? MPI_Bcast(buf, n, MPI_INT, 0, c) : MPI_Allreduce(buf, out, n, MPI_INT, MPI_SUM, c);
            break;
        case 3: rc = MPI_Allreduce(buf, out, n, MPI_INT, odd ? MPI_MAX : MPI_SUM, c); break;
        case 4:
            rc = MPI_Allreduce(odd ? (void *)fbuf : (void *)buf, out, n, odd ? MPI_FLOAT : MPI_INT, MPI_SUM,
                               c);
            break;
        case 5: rc = MPI_Bcast(buf, n, MPI_INT, odd ? 1 : 0, c); break;
        case 6: rc = MPI_Bcast(buf, n, MPI_INT, odd ? ot_rank : 0, c); break;
        default: rc = MPI_Allreduce(odd ? hbuf : buf, odd ? hout : out, n, MPI_INT, MPI_SUM, c); break;
        }
        const double dt = MPI_Wtime() - t0;
        /* MPI_ERR_ARG (dfcclMismatch) from a wait that found it; MPI_ERR_OTHER (the
         * communicator aborted) where the peers found it before this rank called */
        if (rc != MPI_SUCCESS && error_class(rc) != MPI_ERR_ARG && error_class(rc) != MPI_ERR_OTHER)
            OT_FAIL("%s: the call failed with error class %d, want MPI_ERR_ARG or MPI_ERR_OTHER", cases[k],
                    error_class(rc));
        if (rc != MPI_SUCCESS && dt > 5.0)
            OT_FAIL("%s: the error took %.1f s", cases[k], dt);
        OT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* every rank is back from it */
        /* the next call: refused where the mismatched one completed, and everywhere else */
        const int rc2 = MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
        if (rc2 == MPI_SUCCESS)
            OT_FAIL("%s: the call after the mismatch succeeded (the first one returned %d)", cases[k], rc);
        at_call += rc != MPI_SUCCESS;
        at_next += rc == MPI_SUCCESS;
        if (ot_rank == 0)
            printf("case %s: rank 0 %s after %.3f s\n", cases[k],
                   rc != MPI_SUCCESS ? "got MPI_ERR_ARG from the call" : "completed it, its next call failed",
                   dt);
        OT_MPI(MPI_Comm_free(&c));
    }
    /* other communicators are untouched */
    int v = 1, sum = 0;
    OT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (sum != ot_size)
        OT_FAIL("MPI_COMM_WORLD's allreduce after the mismatches gave %d", sum);
    int tot[2] = {0, 0}, mine[2] = {at_call, at_next};
    OT_MPI(MPI_Reduce(mine, tot, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
#ifdef OT_DEVICE
    CU(cudaFree(buf));
    CU(cudaFree(out));
    CU(cudaFree(fbuf));
    fbuf = hfbuf;
#endif
    free(hbuf);
    free(hout);
    free(fbuf);
    if (ot_rank == 0)
        printf(
            "OK t_sigmismatch: %d mismatches, every rank got an error (%d at the call, %d at the next call) "
            "on %d ranks with the default settings\n",
            ncases, tot[0], tot[1], ot_size);
    MPI_Finalize();
    return 0;
}
