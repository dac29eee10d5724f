/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Create and free many communicators, each running collectives on the engine, and
 * check that nothing grows: resident memory, open file descriptors, /dev/shm
 * dfccl-* segments, dfccl mappings in /proc/self/maps. Every tenth communicator is
 * freed while a non-blocking collective on it is still pending (legal MPI: the
 * call completes normally), which defers the engine teardown to its completion.
 *
 *   t_commfree [--n 1000] [--rss-slack-kb 4096]
 */
#include <dirent.h>

#include "../proc_usage.h"
#include "ompi_test.h"

static int count_shm(void)
{
    int n = 0;
    DIR *d = opendir("/dev/shm");
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, "dfccl-", 6))
            n++;
    closedir(d);
    return n;
}

static int count_maps(void)
{
    int n = 0;
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "/dfccl-"))
            n++;
    fclose(f);
    return n;
}

typedef struct {
    long rss_kb;
    int fds, shm, maps;
} usage_t;

static usage_t usage(void)
{
    usage_t u = {proc_rss_kb(), proc_entries("/proc/self/fd"), count_shm(), count_maps()};
    return u;
}

static void one_comm(int i)
{
    MPI_Comm c;
    if (i % 2)
        OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    else
        OT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, ot_size - ot_rank, &c)); /* same group, reordered */
    int n;
    MPI_Comm_size(c, &n);
    int v[64], sum[64];
    for (int k = 0; k < 64; k++)
        v[k] = i + k;
    OT_MPI(MPI_Allreduce(v, sum, 64, MPI_INT, MPI_SUM, c));
    for (int k = 0; k < 64; k++)
        if (sum[k] != n * (i + k))
            OT_FAIL("communicator %d: element %d got %d", i, k, sum[k]);
    if (i % 10 == 0) {
        /* freed with a collective in flight */
        MPI_Request q;
        OT_MPI(MPI_Ibcast(v, 64, MPI_INT, 0, c, &q));
        OT_MPI(MPI_Comm_free(&c));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        if (v[5] != i + 5)
            OT_FAIL("communicator %d: ibcast after free got %d", i, v[5]);
    } else {
        OT_MPI(MPI_Comm_free(&c));
    }
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int n = atoi(ot_opt(argc, argv, "--n", "1000"));
    const long slack = atol(ot_opt(argc, argv, "--rss-slack-kb", "4096"));
    const int warm = n / 10;

    for (int i = 0; i < warm; i++)
        one_comm(i);
    usage_t a = usage();
    double t0 = MPI_Wtime();
    for (int i = warm; i < n; i++)
        one_comm(i);
    usage_t b = usage();

    printf("rank %d: after %d communicators: rss %ld kB, %d fds, %d /dev/shm dfccl-*, %d dfccl maps; "
           "after %d: rss %ld kB, %d fds, %d shm, %d maps\n",
           ot_rank, warm, a.rss_kb, a.fds, a.shm, a.maps, n, b.rss_kb, b.fds, b.shm, b.maps);
    if (b.fds > a.fds)
        OT_FAIL("file descriptors grew from %d to %d", a.fds, b.fds);
    if (b.maps > a.maps)
        OT_FAIL("dfccl mappings grew from %d to %d", a.maps, b.maps);
    if (b.shm > a.shm)
        OT_FAIL("/dev/shm dfccl-* segments grew from %d to %d", a.shm, b.shm);
    if (b.rss_kb - a.rss_kb > slack)
        OT_FAIL("resident memory grew by %ld kB over %d communicators (slack %ld kB)", b.rss_kb - a.rss_kb,
                n - warm, slack);
    MPI_Barrier(MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf("OK t_commfree: %d communicators created, used and freed on %d ranks in %.1f s, no growth\n",
               n, ot_size, MPI_Wtime() - t0);
    MPI_Finalize();
    return 0;
}
