/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CUDA device buffers through plain MPI calls (needs a GPU; exits 77 without one).
 * The installed Open MPI is not CUDA-aware: without the component these calls
 * crash. With it, mapped types/ops run on the engine (staged through host memory
 * for now), the rest (user op, MAXLOC, strided types) is staged to the previous
 * module; managed memory counts as host memory. Results are copied back and checked
 * like the host tests; a chaos round (per-rank orders of MPI_Iallreduce on dups)
 * must complete.
 *
 *   t_device [--count N]
 */
#include <cuda_runtime.h>

#include "ompi_test.h"  /* CU() with the CUDA runtime */
#include "../tc_cuda.h" /* tc_cuda_pick */

static long g_checks;

static void *dev_from(const void *host, size_t bytes)
{
    void *d = NULL;
    CU(cudaMalloc(&d, bytes ? bytes : 1));
    if (bytes)
        CU(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

static void to_host(void *host, const void *dev, size_t bytes)
{
    CU(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

static void reductions(MPI_Comm comm, size_t count)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    static const struct {
        MPI_Datatype dt;
        MPI_Op op;
    } cases[] = {{MPI_FLOAT, MPI_SUM},
                 {MPI_INT, MPI_MAX},
                 {MPI_DOUBLE, MPI_PROD},
                 {MPI_UINT8_T, MPI_BXOR},
                 {MPI_INT64_T, MPI_MIN}};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        for (int v = 0; v < 4; v++) {
            const ot_type_t *t = ot_type_by_dt(cases[k].dt);
            const bool in_place = v & 1, nb = v & 2;
            const size_t all = count * (size_t)n, bytes = all * t->size;
            uint64_t seed = 100 * k + (uint64_t)v;
            void *h = ot_alloc(bytes), *want = ot_alloc(bytes), *got = ot_alloc(bytes);
            ot_fill(t, cases[k].op, seed, r, h, all);
            ot_reference(t, cases[k].op, seed, n, want, all);
            void *ds = dev_from(h, bytes), *dr = dev_from(h, bytes);
            MPI_Request q = MPI_REQUEST_NULL;
            /* allreduce over all elements */
            if (nb)
                OT_MPI(
                    MPI_Iallreduce(in_place ? MPI_IN_PLACE : ds, dr, (int)all, t->dt, cases[k].op, comm, &q));
            else
                OT_MPI(MPI_Allreduce(in_place ? MPI_IN_PLACE : ds, dr, (int)all, t->dt, cases[k].op, comm));
            OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
            to_host(got, dr, bytes);
            ot_compare("device allreduce", t, got, want, all);
            /* reduce to the last rank */
            CU(cudaMemcpy(dr, h, bytes, cudaMemcpyHostToDevice));
            const bool root_ip = in_place && r == n - 1;
            OT_MPI(MPI_Reduce(root_ip ? MPI_IN_PLACE : ds, dr, (int)all, t->dt, cases[k].op, n - 1, comm));
            if (r == n - 1) {
                to_host(got, dr, bytes);
                ot_compare("device reduce", t, got, want, all);
            }
            /* reduce_scatter_block: block r, in place leaves it at the start */
            CU(cudaMemcpy(dr, h, bytes, cudaMemcpyHostToDevice));
            if (nb)
                OT_MPI(MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : ds, dr, (int)count, t->dt,
                                                 cases[k].op, comm, &q));
            else
                OT_MPI(MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : ds, dr, (int)count, t->dt,
                                                cases[k].op, comm));
            OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
            to_host(got, dr, count * t->size);
            ot_compare("device reduce_scatter_block", t, got, (char *)want + (size_t)r * count * t->size,
                       count);
            /* reduce_scatter with unequal counts (engine all-reduce + keep a part) */
            int *counts = malloc(sizeof(int) * (size_t)n), total = 0, disp = 0;
            for (int i = 0; i < n; i++) {
                counts[i] = i % 2 ? (int)count : (int)count / 2; /* unequal, total <= n * count */
                if (i == r)
                    disp = total;
                total += counts[i];
            }
            CU(cudaMemcpy(dr, h, bytes, cudaMemcpyHostToDevice));
            OT_MPI(MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : ds, dr, counts, t->dt, cases[k].op, comm));
            /* the reference of the first `total` elements is the same fold */
            to_host(got, dr, (size_t)counts[r] * t->size);
            ot_compare("device reduce_scatter", t, got, (char *)want + (size_t)disp * t->size,
                       (size_t)counts[r]);
            free(counts);
            CU(cudaFree(ds));
            CU(cudaFree(dr));
            free(h), free(want), free(got);
            g_checks += 4;
        }
}

static void movement(MPI_Comm comm, size_t bytes)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    const size_t all = bytes * (size_t)n;
    void *h = ot_alloc(all), *want = ot_alloc(all), *got = ot_alloc(all);
    for (int v = 0; v < 2; v++) {
        const bool in_place = v;
        MPI_Request q = MPI_REQUEST_NULL;
        /* bcast from the last rank */
        ot_fill_bytes(7 + v, n - 1, 0, want, bytes);
        void *d = dev_from(want, bytes);
        if (r != n - 1)
            CU(cudaMemset(d, 0, bytes));
        OT_MPI(MPI_Ibcast(d, (int)bytes, MPI_BYTE, n - 1, comm, &q));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        to_host(got, d, bytes);
        ot_compare_bytes("device ibcast", got, want, bytes);
        CU(cudaFree(d));
        /* allgather */
        for (int i = 0; i < n; i++)
            ot_fill_bytes(9 + v, i, 0, (char *)want + (size_t)i * bytes, bytes);
        void *ds = dev_from((char *)want + (size_t)r * bytes, bytes), *dr = dev_from(want, all);
        if (!in_place)
            CU(cudaMemset(dr, 0, all));
        OT_MPI(MPI_Allgather(in_place ? MPI_IN_PLACE : ds, (int)bytes, MPI_BYTE, dr, (int)bytes, MPI_BYTE,
                             comm));
        to_host(got, dr, all);
        ot_compare_bytes("device allgather", got, want, all);
        CU(cudaFree(ds));
        CU(cudaFree(dr));
        /* alltoall */
        for (int j = 0; j < n; j++) {
            ot_fill_bytes(11 + v, r, j, (char *)h + (size_t)j * bytes, bytes);
            ot_fill_bytes(11 + v, j, r, (char *)want + (size_t)j * bytes, bytes);
        }
        ds = dev_from(h, all);
        dr = dev_from(h, all);
        OT_MPI(
            MPI_Alltoall(in_place ? MPI_IN_PLACE : ds, (int)bytes, MPI_BYTE, dr, (int)bytes, MPI_BYTE, comm));
        to_host(got, dr, all);
        ot_compare_bytes("device alltoall", got, want, all);
        CU(cudaFree(ds));
        CU(cudaFree(dr));
        g_checks += 3;
    }
    free(h), free(want), free(got);
}

/* No synchronization between the application's synchronous copies and the call: a
 * cudaMemcpy from pageable memory and a cudaMemset may return before they land, and the
 * GPU daemon reads the buffer at once. 16 MiB, so that a copy still in flight would be
 * seen; the same buffers three times (the SYNC_MEMOPS attribute is set at the first). */
static void sync_memops(MPI_Comm comm)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    const size_t count = 4u << 20;
    int *h = malloc(sizeof(int) * count), *got = malloc(sizeof(int) * count), *d = NULL, *b = NULL;
    CU(cudaMalloc((void **)&d, sizeof(int) * count));
    CU(cudaMalloc((void **)&b, sizeof(int) * count));
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < count; i++)
            h[i] = (int)((uint64_t)(r + 1) * (i % 1009) + (uint64_t)round);
        CU(cudaMemcpy(d, h, sizeof(int) * count, cudaMemcpyHostToDevice)); /* pageable source */
        OT_MPI(MPI_Allreduce(MPI_IN_PLACE, d, (int)count, MPI_INT, MPI_SUM, comm));
        to_host(got, d, sizeof(int) * count);
        for (size_t i = 0; i < count; i++) {
            const int want = (int)((uint64_t)n * (uint64_t)(n + 1) / 2 * (i % 1009) + (uint64_t)n * round);
            if (got[i] != want)
                OT_FAIL("allreduce right after cudaMemcpy, round %d: element %zu got %d want %d", round, i,
                        got[i], want);
        }
        /* the root's data arrives over a buffer the others cleared just before */
        if (r == 0)
            CU(cudaMemcpy(b, h, sizeof(int) * count, cudaMemcpyHostToDevice));
        else
            CU(cudaMemset(b, 0x5a, sizeof(int) * count));
        OT_MPI(MPI_Bcast(b, (int)count, MPI_INT, 0, comm));
        to_host(got, b, sizeof(int) * count);
        for (size_t i = 0; i < count; i++) {
            const int want = (int)((i % 1009) + (uint64_t)round); /* rank 0's h */
            if (got[i] != want)
                OT_FAIL("bcast right after cudaMemset, round %d: element %zu got %d want %d", round, i,
                        got[i], want);
        }
        g_checks += 2;
    }
    CU(cudaFree(d));
    CU(cudaFree(b));
    free(h), free(got);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* calls the engine can't take: staged through host memory, then the previous module */
static void fallbacks(MPI_Comm comm, int count)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    MPI_Op sum;
    OT_MPI(MPI_Op_create(user_sum, 1, &sum));
    int *h = malloc(sizeof(int) * 2 * (size_t)count), *got = malloc(sizeof(int) * 2 * (size_t)count);
    for (int i = 0; i < count; i++)
        h[i] = r + i;
    int *d = dev_from(h, sizeof(int) * (size_t)count);
    MPI_Request q;
    OT_MPI(MPI_Iallreduce(MPI_IN_PLACE, d, count, MPI_INT, sum, comm, &q));
    OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    to_host(got, d, sizeof(int) * (size_t)count);
    for (int i = 0; i < count; i++)
        if (got[i] != n * i + n * (n - 1) / 2)
            OT_FAIL("device user op: element %d got %d", i, got[i]);
    CU(cudaFree(d));
    /* MAXLOC on (value, rank) pairs */
    for (int i = 0; i < count; i++) {
        h[2 * i] = (int)(ot_hash(3, (uint64_t)r, (uint64_t)i) % 4);
        h[2 * i + 1] = r;
    }
    d = dev_from(h, sizeof(int) * 2 * (size_t)count);
    OT_MPI(MPI_Allreduce(MPI_IN_PLACE, d, count, MPI_2INT, MPI_MAXLOC, comm));
    to_host(got, d, sizeof(int) * 2 * (size_t)count);
    for (int i = 0; i < count; i++) {
        int bv = -1, bi = -1;
        for (int j = 0; j < n; j++) {
            int v = (int)(ot_hash(3, (uint64_t)j, (uint64_t)i) % 4);
            if (v > bv)
                bv = v, bi = j;
        }
        if (got[2 * i] != bv || got[2 * i + 1] != bi)
            OT_FAIL("device MAXLOC element %d: got (%d,%d) want (%d,%d)", i, got[2 * i], got[2 * i + 1], bv,
                    bi);
    }
    CU(cudaFree(d));
    /* strided vector bcast: the gaps must survive */
    MPI_Datatype vec;
    OT_MPI(MPI_Type_vector(count, 1, 2, MPI_INT, &vec));
    OT_MPI(MPI_Type_commit(&vec));
    for (int i = 0; i < 2 * count; i++)
        h[i] = i % 2 ? -7 : (r == 0 ? 4000 + i : -1);
    d = dev_from(h, sizeof(int) * 2 * (size_t)count);
    OT_MPI(MPI_Bcast(d, 1, vec, 0, comm));
    to_host(got, d, sizeof(int) * 2 * (size_t)count);
    for (int i = 0; i < 2 * count; i++)
        if (got[i] != (i % 2 ? -7 : 4000 + i))
            OT_FAIL("device strided bcast: slot %d got %d", i, got[i]);
    CU(cudaFree(d));
    MPI_Type_free(&vec);
    MPI_Op_free(&sum);
    free(h), free(got);
    g_checks += 3;
}

/* managed memory is host-reachable: it goes where host buffers go */
static void managed(MPI_Comm comm, int count)
{
    int n, *m = NULL;
    MPI_Comm_size(comm, &n);
    CU(cudaMallocManaged((void **)&m, sizeof(int) * (size_t)count, cudaMemAttachGlobal));
    for (int i = 0; i < count; i++)
        m[i] = i;
    OT_MPI(MPI_Allreduce(MPI_IN_PLACE, m, count, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < count; i++)
        if (m[i] != n * i)
            OT_FAIL("managed allreduce: element %d got %d", i, m[i]);
    CU(cudaFree(m));
    g_checks++;
}

static void chaos(int ncomms, int count)
{
    MPI_Comm *c = malloc(sizeof(MPI_Comm) * (size_t)ncomms);
    MPI_Request *q = malloc(sizeof(MPI_Request) * (size_t)ncomms);
    float **d = malloc(sizeof(float *) * (size_t)ncomms);
    float *h = malloc(sizeof(float) * (size_t)count);
    for (int k = 0; k < ncomms; k++) {
        OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[k]));
        /* the engine communicator comes with the first device-buffer call (host buffers
         * pass through): make that call in the same order on every rank, since the
         * bootstrap is a blocking all-gather (coll_dfccl_eager=1 lifts this) */
        int one = 1, *done = dev_from(&one, sizeof(int));
        OT_MPI(MPI_Allreduce(MPI_IN_PLACE, done, 1, MPI_INT, MPI_SUM, c[k]));
        CU(cudaFree(done));
        for (int i = 0; i < count; i++)
            h[i] = (float)(k + 1);
        d[k] = dev_from(h, sizeof(float) * (size_t)count);
    }
    for (int j = 0; j < ncomms; j++) {
        const int k = ot_rank & 1 ? ncomms - 1 - j : (j + ot_rank) % ncomms;
        OT_MPI(MPI_Iallreduce(MPI_IN_PLACE, d[k], count, MPI_FLOAT, MPI_SUM, c[k], &q[k]));
    }
    ot_waitall_deadline(ncomms, q, 60);
    for (int k = 0; k < ncomms; k++) {
        to_host(h, d[k], sizeof(float) * (size_t)count);
        for (int i = 0; i < count; i++)
            if (h[i] != (float)((k + 1) * ot_size))
                OT_FAIL("device chaos comm %d element %d: got %g", k, i, h[i]);
        CU(cudaFree(d[k]));
        OT_MPI(MPI_Comm_free(&c[k]));
    }
    free(c), free(q), free(d), free(h);
    g_checks++;
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int ndev = tc_cuda_pick(ot_rank, "SKIP t_device: no CUDA device", 77, NULL);
    const size_t count = (size_t)atol(ot_opt(argc, argv, "--count", "100003"));

    MPI_Comm dup;
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    for (int c = 0; c < 2; c++) {
        MPI_Comm comm = c ? dup : MPI_COMM_WORLD;
        reductions(comm, 1);
        reductions(comm, count);
        movement(comm, 7);
        movement(comm, count * 4);
        fallbacks(comm, 1001);
        managed(comm, 1001);
    }
    sync_memops(MPI_COMM_WORLD);
    chaos(8, 70000);
    OT_MPI(MPI_Comm_free(&dup));
    long total = 0;
    MPI_Reduce(&g_checks, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf("OK t_device: %ld checks on device buffers, %d ranks, %d GPU(s)\n", total, ot_size, ndev);
    MPI_Finalize();
    return 0;
}
