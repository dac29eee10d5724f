/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Create and free many communicators, each running collectives on the engine, and
 * check that nothing grows: resident memory, open file descriptors, /dev/shm
 * dfccl-* segments, dfccl mappings in /proc/self/maps. Every tenth communicator is
 * freed while a non-blocking collective on it is still pending (legal MPI: the
 * call completes normally), which defers the engine teardown to its completion.
 *
 * Built with -DOT_DEVICE (t_commfree_dev, GPU machines) every collective is on device
 * buffers (the GPU daemon's FIFOs, CUDA IPC between the ranks) and it also measures the
 * GPU: memory in use with one communicator live, creation (MPI_Comm_dup or split and its
 * first collective) and MPI_Comm_free times, and the drift of the device's free memory
 * over the measured cycles, which must stay within --dev-slack-mib per rank sharing it.
 *
 *   t_commfree [--n 1000] [--rss-slack-kb 4096] [--dev-slack-mib 1]
 */
#ifdef OT_DEVICE
#include <cuda_runtime.h>
#endif
#include <dirent.h>

#include "../proc_usage.h"
#include "ompi_test.h"

/* this process's segments (their names start with its pid): another job sharing
 * /dev/shm may hold segments of its own at any moment */
static int count_shm(void)
{
    int n = 0;
    char mine[32];
    snprintf(mine, sizeof(mine), "dfccl-%d-", (int)getpid());
    DIR *d = opendir("/dev/shm");
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, mine, strlen(mine)))
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

static double t_create, t_free; /* seconds, summed over the measured cycles */
#ifdef OT_DEVICE
static long dev_live_kib = -1; /* device memory in use with one communicator live */

static long dev_free_kib(void)
{
    size_t free_b = 0, total = 0;
    CU(cudaMemGetInfo(&free_b, &total));
    return (long)(free_b / 1024);
}
#endif

static void one_comm(int i, bool measure)
{
    MPI_Comm c;
    int v[64], sum[64];
    for (int k = 0; k < 64; k++)
        v[k] = i + k;
#ifdef OT_DEVICE
    static int *dv, *dsum;
    if (!dv) {
        CU(cudaMalloc((void **)&dv, sizeof(v)));
        CU(cudaMalloc((void **)&dsum, sizeof(sum)));
    }
    long before = measure ? dev_free_kib() : 0;
#endif
    MPI_Barrier(MPI_COMM_WORLD); /* every rank times the same span */
    double t0 = MPI_Wtime();
    if (i % 2)
        OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    else
        OT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, ot_size - ot_rank, &c)); /* same group, reordered */
    int n;
    MPI_Comm_size(c, &n);
#ifdef OT_DEVICE
    CU(cudaMemcpy(dv, v, sizeof(v), cudaMemcpyHostToDevice));
    OT_MPI(MPI_Allreduce(dv, dsum, 64, MPI_INT, MPI_SUM, c));
    CU(cudaMemcpy(sum, dsum, sizeof(sum), cudaMemcpyDeviceToHost));
#else
    OT_MPI(MPI_Allreduce(v, sum, 64, MPI_INT, MPI_SUM, c));
#endif
    double t1 = MPI_Wtime();
    for (int k = 0; k < 64; k++)
        if (sum[k] != n * (i + k))
            OT_FAIL("communicator %d: element %d got %d", i, k, sum[k]);
#ifdef OT_DEVICE
    if (measure && dev_live_kib < 0)
        dev_live_kib = before - dev_free_kib();
#endif
    double t2 = MPI_Wtime();
    if (i % 10 == 0) {
        /* freed with a collective in flight */
        MPI_Request q;
#ifdef OT_DEVICE
        OT_MPI(MPI_Ibcast(dv, 64, MPI_INT, 0, c, &q));
        OT_MPI(MPI_Comm_free(&c));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        CU(cudaMemcpy(v, dv, sizeof(v), cudaMemcpyDeviceToHost));
#else
        OT_MPI(MPI_Ibcast(v, 64, MPI_INT, 0, c, &q));
        OT_MPI(MPI_Comm_free(&c));
        OT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
#endif
        if (v[5] != i + 5)
            OT_FAIL("communicator %d: ibcast after free got %d", i, v[5]);
    } else {
        OT_MPI(MPI_Comm_free(&c));
    }
    if (measure) {
        t_create += t1 - t0;
        t_free += MPI_Wtime() - t2;
    }
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int n = atoi(ot_opt(argc, argv, "--n", "1000"));
    const long slack = atol(ot_opt(argc, argv, "--rss-slack-kb", "4096"));
    const double dev_slack = atof(ot_opt(argc, argv, "--dev-slack-mib", "1"));
    /* the first tenth settles what a process keeps for good (the daemon's memory, Open
     * MPI's free lists): growth is measured over the rest */
    const int warm = n / 10;

    for (int i = 0; i < warm; i++)
        one_comm(i, false);
    usage_t a = usage();
#ifdef OT_DEVICE
    CU(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
    const long dev_a = dev_free_kib();
#endif
    double t0 = MPI_Wtime();
    for (int i = warm; i < n; i++)
        one_comm(i, true);
    usage_t b = usage();
#ifdef OT_DEVICE
    CU(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
    const long dev_b = dev_free_kib();
    int local = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &local); /* every rank on the one GPU (MPS) */
    if (ot_rank == 0)
        printf("rank 0: device: %.1f MiB in use with one communicator live (all %d ranks of the GPU), "
               "creation + first collective %.2f ms, MPI_Comm_free %.2f ms (means over %d), free memory "
               "drift %+.1f MiB over them\n",
               dev_live_kib / 1024.0, local, t_create * 1e3 / (n - warm), t_free * 1e3 / (n - warm), n - warm,
               (dev_a - dev_b) / 1024.0);
    if ((dev_a - dev_b) / 1024.0 > dev_slack * local)
        OT_FAIL("device memory not returned: %.1f MiB over %d communicators (slack %.1f MiB x %d ranks)",
                (dev_a - dev_b) / 1024.0, n - warm, dev_slack, local);
#else
    (void)dev_slack;
    if (ot_rank == 0)
        printf("rank 0: creation + first collective %.2f ms, MPI_Comm_free %.2f ms (means over %d)\n",
               t_create * 1e3 / (n - warm), t_free * 1e3 / (n - warm), n - warm);
#endif

    printf("rank %d: after %d communicators: rss %ld kB, %d fds, %d /dev/shm dfccl-<pid>-*, %d dfccl maps; "
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
