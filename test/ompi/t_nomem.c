/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One rank out of memory for a call's temporary (run_ompi_suite.sh, "out of memory").
 *
 * Some calls need a temporary of the component's own before they reach the engine: the
 * copy of the receive blocks that an in-place MPI_Alltoallv sends from, the packed form
 * of a strided datatype, the device copy an in-place MPI_Alltoall sends from. A rank
 * whose temporary can't be allocated returns MPI_ERR_NO_MEM. Its peers used to wait for
 * its part of the call for ever (the default coll_dfccl_timeout is 0: no limit); now the
 * component refuses the call to them (dfcclCommRefuse) and their part fails within
 * seconds, naming the rank and the reason.
 *
 * Every rank first makes the call once on small blocks (results checked element by
 * element). Then the last rank lowers its address-space limit (RLIMIT_AS) to what it
 * maps now plus a margin smaller than the temporary, and every rank makes the call again:
 *   - the last rank's call must fail with MPI_ERR_NO_MEM;
 *   - every other rank's must fail, with MPI_ERR_ARG (the engine's mismatch: it found the
 *     refusal) or MPI_ERR_OTHER (the communicator was aborted by a peer that found it
 *     first), within 5 s;
 *   - after a barrier, the next call on that communicator must fail on every rank (it was
 *     aborted), while MPI_COMM_WORLD and a new communicator work (checked) once the limit
 *     is restored.
 * A watchdog prints "HANG: ..." and exits 3 after the deadline (default 40 s: the whole
 * program, with 96 MiB per rank filled and checked on a busy machine).
 *
 * usage: t_nomem CASE [--nb] [--deadline S]
 *   CASE: alltoallv-inplace (host buffers, coll_dfccl_host_buffers 1), alltoallv-vector
 *         (MPI_Alltoallv sending a strided datatype: packed into a temporary; host
 *         buffers), alltoall-inplace (with coll_dfccl_fake_device 2: the device
 *         temporary, here a host one)
 *   --nb: the non-blocking form (MPI_Ialltoallv, ...): the last rank's call fails at once,
 *         the others' through MPI_Wait
 */
#include <sys/resource.h>

#include "ompi_test.h"

#define MiB    (1024 * 1024)
#define MARGIN (8 * MiB) /* what the last rank may still map: less than any temporary below */

static const char *mode = "";

/* Bytes of address space this process maps now. */
static size_t mapped_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %zu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    if (!kb)
        OT_FAIL("no VmSize in /proc/self/status");
    return kb * 1024;
}

/* Element i of the block rank r sends to rank p (in int32 units). */
static int32_t val(int r, int p, size_t i)
{
    return (int32_t)(r * 1000003 + p * 7919 + (int)(i % 100003) * 3 + 1);
}

/* One call of the case on comm c with n int32 per block. Returns its MPI result. */
static int call_case(MPI_Comm c, bool nb, size_t n, int32_t *buf, int32_t *sbuf, MPI_Datatype vec)
{
    const int N = ot_size;
    MPI_Request q = MPI_REQUEST_NULL;
    int rc;
    /* the v-calls' tables: n int32 from every rank, in rank order; the strided send type
     * (alltoallv-vector) one element of vec per rank, each vec's extent apart */
    int cnt[64], dis[64], one[64], sdis[64];
    for (int p = 0; p < N; p++) {
        cnt[p] = (int)n;
        dis[p] = (int)(n * (size_t)p);
        one[p] = 1;
        sdis[p] = p;
    }
    if (!strcmp(mode, "alltoallv-inplace"))
        rc = nb ? MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_INT, buf, cnt, dis, MPI_INT, c, &q)
                : MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_INT, buf, cnt, dis, MPI_INT, c);
    else if (!strcmp(mode, "alltoall-inplace"))
        rc = nb ? MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_INT, buf, (int)n, MPI_INT, c, &q)
                : MPI_Alltoall(MPI_IN_PLACE, 0, MPI_INT, buf, (int)n, MPI_INT, c);
    else /* alltoallv-vector: to each rank n int32 every other one; received as n int32 */
        rc = nb ? MPI_Ialltoallv(sbuf, one, sdis, vec, buf, cnt, dis, MPI_INT, c, &q)
                : MPI_Alltoallv(sbuf, one, sdis, vec, buf, cnt, dis, MPI_INT, c);
    if (rc == MPI_SUCCESS && nb)
        rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    return rc;
}

/* Fill this rank's buffers for the case; with check, verify the result instead. */
static void data(bool check, size_t n, int32_t *buf, int32_t *sbuf)
{
    const int N = ot_size, me = ot_rank;
    for (int p = 0; p < N; p++)
        for (size_t i = 0; i < n; i++) {
            if (sbuf && !check) {
                /* strided: element i of the block to p at 2 * (p * n + i), gaps not sent */
                sbuf[2 * ((size_t)p * n + i)] = val(me, p, i);
                sbuf[2 * ((size_t)p * n + i) + 1] = -9;
                buf[(size_t)p * n + i] = -5;
            } else if (!check) {
                buf[(size_t)p * n + i] = val(me, p, i); /* what this rank sends to p */
            } else if (buf[(size_t)p * n + i] != val(p, me, i)) {
                OT_FAIL("%s: from rank %d element %zu is %d, want %d", mode, p, i, buf[(size_t)p * n + i],
                        val(p, me, i));
            }
        }
}

int main(int argc, char **argv)
{
    ot_init_multiple(&argc, &argv);
    mode = argc > 1 ? argv[1] : "";
    const bool nb = ot_flag(argc, argv, "--nb");
    const double deadline = atof(ot_opt(argc, argv, "--deadline", "40"));
    if (strcmp(mode, "alltoallv-inplace") && strcmp(mode, "alltoall-inplace") &&
        strcmp(mode, "alltoallv-vector"))
        OT_FAIL("usage: t_nomem alltoallv-inplace|alltoallv-vector|alltoall-inplace [--nb] [--deadline S]");
    if (ot_size < 2 || ot_size > 64)
        OT_FAIL("needs 2 to 64 ranks");
    const int me = ot_rank, last = ot_rank == ot_size - 1;
    const bool strided = !strcmp(mode, "alltoallv-vector");

    /* each rank's temporary on the engine path, every block sent (in place: a copy; strided:
     * packed): 96 MiB, whatever the rank count. Over 64 MiB, so that no
     * thread's malloc arena (64 MiB of address space reserved each, already counted) can
     * hold it when the mapping of its own fails */
    const size_t n = 12 * MARGIN / sizeof(int32_t) / (size_t)ot_size + 1;
    const size_t total = n * (size_t)ot_size;
    int32_t *buf = malloc(total * sizeof(int32_t)),
            *sbuf = strided ? malloc(2 * total * sizeof(int32_t)) : NULL;
    if (!buf || (strided && !sbuf))
        OT_FAIL("no memory for the buffers");
    MPI_Datatype vec = MPI_DATATYPE_NULL, one = MPI_DATATYPE_NULL, one0 = MPI_DATATYPE_NULL;
    if (strided) { /* n int32, every other one; extent 2n int32 so that blocks follow each other */
        OT_MPI(MPI_Type_vector((int)n, 1, 2, MPI_INT, &one));
        OT_MPI(MPI_Type_create_resized(one, 0, (MPI_Aint)(2 * n * sizeof(int32_t)), &vec));
        OT_MPI(MPI_Type_commit(&vec));
    }

    char what[64];
    snprintf(what, sizeof what, "t_nomem %s", mode);
    ot_watchdog_start(what, deadline);

    MPI_Comm c;
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OT_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    /* Open MPI 4.1's MPI_Wait reports a failed collective request to MPI_COMM_WORLD's
     * handler, not its communicator's (its own non-blocking collectives' too) */
    OT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* the call with memory enough, checked, on small blocks: a temporary freed here stays
     * in the heap (glibc raises its mmap threshold after a large free), where the short
     * call's would find it */
    const size_t n0 = 1000;
    MPI_Datatype vec0 = vec;
    if (strided) {
        OT_MPI(MPI_Type_vector((int)n0, 1, 2, MPI_INT, &one0));
        OT_MPI(MPI_Type_create_resized(one0, 0, (MPI_Aint)(2 * n0 * sizeof(int32_t)), &vec0));
        OT_MPI(MPI_Type_commit(&vec0));
    }
    data(false, n0, buf, sbuf);
    OT_MPI(call_case(c, nb, n0, buf, sbuf, vec0));
    data(true, n0, buf, sbuf);

    /* the last rank may now map only MARGIN more: its temporary can't be allocated */
    struct rlimit old;
    if (getrlimit(RLIMIT_AS, &old))
        OT_FAIL("getrlimit");
    OT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (last) {
        struct rlimit lim = old;
        lim.rlim_cur = mapped_bytes() + MARGIN;
        if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lim.rlim_cur)
            lim.rlim_cur = old.rlim_cur;
        if (setrlimit(RLIMIT_AS, &lim))
            OT_FAIL("setrlimit(RLIMIT_AS)");
    }
    data(false, n, buf, sbuf);
    const double t0 = ot_now();
    const int rc = call_case(c, nb, n, buf, sbuf, vec);
    const double dt = ot_now() - t0;
    if (last && setrlimit(RLIMIT_AS, &old))
        OT_FAIL("setrlimit(RLIMIT_AS) back");
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (last && cls != MPI_ERR_NO_MEM)
        OT_FAIL("%s: the call short of memory returned %d (%s), want MPI_ERR_NO_MEM", mode, rc,
                ot_errname(rc));
    if (!last && rc == MPI_SUCCESS)
        OT_FAIL("%s: the call succeeded although the last rank's failed", mode);
    if (!last && cls != MPI_ERR_ARG && cls != MPI_ERR_OTHER)
        OT_FAIL("%s: the call failed with %d (%s), want MPI_ERR_ARG or MPI_ERR_OTHER", mode, rc,
                ot_errname(rc));
    if (dt > 5.0)
        OT_FAIL("%s: the call took %.1f s to fail", mode, dt);
    printf("rank %d: the call failed after %.3f s: %s\n", me, dt, ot_errname(rc));

    /* everyone is back; the communicator is refused from now on */
    OT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int v = me + 1, sum = 0;
    const int rc2 = MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
    if (rc2 == MPI_SUCCESS)
        OT_FAIL("%s: the call after the refused one succeeded", mode);
    OT_MPI(MPI_Comm_free(&c));

    /* nothing else is lost: the world and a new communicator work, checked */
    OT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (sum != ot_size * (ot_size + 1) / 2)
        OT_FAIL("MPI_COMM_WORLD's allreduce gave %d", sum);
    OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    data(false, n0, buf, sbuf);
    OT_MPI(call_case(c, nb, n0, buf, sbuf, vec0));
    data(true, n0, buf, sbuf);
    OT_MPI(MPI_Comm_free(&c));

    double worst = 0;
    MPI_Reduce((void *)&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (strided) {
        MPI_Type_free(&vec);
        MPI_Type_free(&one);
        MPI_Type_free(&vec0);
        MPI_Type_free(&one0);
    }
    free(buf);
    free(sbuf);
    if (me == 0)
        printf("OK t_nomem %s%s: %d ranks, the last one short of memory; every call failed within %.3f s\n",
               mode, nb ? " --nb" : "", ot_size, worst);
    MPI_Finalize();
    return 0;
}
