/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_large: collectives of more than 2^31 bytes (64-bit counts and offsets).
 *   1. allreduce of 2^31 + 4096 uint8 with bxor (or --op max), out of place
 *   2. allgather of (2^31 + 4096) / nranks uint8 per rank (> 2^31 bytes received)
 *   Every element is compared against the reference (which also yields a checksum
 *   that must agree across ranks); positions around 2^31 are reported explicitly.
 *   Skipped (prints "SKIP", exits 0) with less than 12 GiB MemAvailable (or
 *   5 GiB per rank with more than 2 ranks).
 *
 * usage: t_large [--op bxor|max] [--bytes N]
 */
#include "test_common.h"

static double t_begin;
static void phase(const char *what)
{
    if (tc_rank == 0)
        printf("t_large: [%7.2f s] %s\n", MPI_Wtime() - t_begin, what);
}

static size_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

/* rank r's byte at index i: cheap, index- and rank-dependent, all bits vary */
static inline uint8_t val(int r, size_t i)
{
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)(r + 1) * 0xD1B54A32D192ED03ull;
    return (uint8_t)((x >> 56) ^ (x >> 29));
}

static void fill(uint8_t *b, int r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = val(r, i);
}

static size_t report(const char *what, const char *op, size_t n, size_t i, uint8_t e, uint8_t g, size_t bad)
{
    if (bad < 5)
        fprintf(stderr,
                "[rank %d] MISMATCH coll=%s type=uint8 op=%s count=%zu rank=%d index=%zu "
                "expected=%u got=%u\n",
                tc_rank, what, op, n, tc_rank, i, (unsigned)e, (unsigned)g);
    return bad + 1;
}

/* allreduce result: every element against the reference; returns the number of
 * bad elements and a position-weighted checksum */
static size_t verify_reduce(const uint8_t *got, size_t n, int P, int op_max, uint64_t *sum_p)
{
    size_t bad = 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t e = val(0, i);
        for (int r = 1; r < P; r++) {
            uint8_t v = val(r, i);
            e = op_max ? (v > e ? v : e) : (uint8_t)(e ^ v);
        }
        sum += (uint64_t)got[i] * ((i & 0xffff) + 1);
        if (got[i] != e)
            bad = report("allreduce", op_max ? "max" : "bxor", n, i, e, got[i], bad);
    }
    *sum_p = sum;
    return bad;
}

/* allgather result: block r holds rank r's input */
static size_t verify_gather(const uint8_t *got, size_t per, int P, uint64_t *sum_p)
{
    size_t bad = 0;
    uint64_t sum = 0;
    for (int r = 0; r < P; r++) {
        const uint8_t *b = got + (size_t)r * per;
        for (size_t j = 0; j < per; j++) {
            size_t i = (size_t)r * per + j;
            uint8_t e = val(r, j);
            sum += (uint64_t)b[j] * ((i & 0xffff) + 1);
            if (b[j] != e)
                bad = report("allgather", "-", per * (size_t)P, i, e, b[j], bad);
        }
    }
    *sum_p = sum;
    return bad;
}

static void sample_report(const char *what, const uint8_t *got, size_t n)
{
    if (tc_rank != 0)
        return;
    size_t pos[] = {0, 1, (1ull << 31) - 1, 1ull << 31, (1ull << 31) + 1, n - 1};
    printf("t_large: %s samples:", what);
    for (int i = 0; i < 6; i++)
        if (pos[i] < n)
            printf(" [%zu]=%u", pos[i], (unsigned)got[pos[i]]);
    printf("\n");
}

static void same_checksum(const char *what, uint64_t sum)
{
    unsigned long long mn, mx, s = sum;
    MPI_Allreduce(&s, &mn, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&s, &mx, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (mn != mx)
        TC_FAIL("%s: checksums differ across ranks (min %llu max %llu, mine %llu)", what, mn, mx, s);
    if (tc_rank == 0)
        printf("t_large: %s checksum %llu identical on all ranks\n", what, s);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    int P = tc_size;
    const char *ops = tc_arg_value(argc, argv, "--op");
    int op_max = ops && !strcmp(ops, "max");
    size_t n = (1ull << 31) + 4096;
    if (tc_arg_value(argc, argv, "--bytes"))
        n = strtoull(tc_arg_value(argc, argv, "--bytes"), NULL, 0);

    /* memory: 2 x n per rank for the allreduce */
    size_t need = (size_t)12 << 30;
    if ((size_t)P * (5ull << 30) > need)
        need = (size_t)P * (5ull << 30);
    int skip = 0;
    if (tc_rank == 0) {
        size_t avail = mem_available();
        if (avail < need) {
            printf("SKIP: t_large needs %zu GiB MemAvailable, have %.1f GiB\n", need >> 30,
                   (double)avail / (1 << 30));
            skip = 1;
        }
    }
    MPI_Bcast(&skip, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (skip) {
        MPI_Finalize();
        return 0;
    }

    dfcclComm_t comm;
    double t0 = t_begin = MPI_Wtime();
    CHECK(dfcclCommInitMPI(&comm, MPI_COMM_WORLD));
    phase("communicator created");

    /* ---- 1. allreduce of n bytes ---- */
    {
        uint8_t *s = tc_malloc(n), *r = tc_malloc(n);
        fill(s, tc_rank, n);
        memset(r, 0xA5, n);
        phase("allreduce buffers ready");
        dfcclRequest_t q;
        double t1 = MPI_Wtime();
        CHECK(dfcclAllReduce(s, r, n, dfcclUint8, op_max ? dfcclMax : dfcclBxor, comm, &q));
        CHECK(dfcclWait(&q));
        double dt = MPI_Wtime() - t1;
        uint64_t sum;
        phase("allreduce done");
        size_t bad = verify_reduce(r, n, P, op_max, &sum);
        phase("allreduce verified");
        if (bad)
            TC_FAIL("allreduce of %zu uint8 (%s): %zu bytes wrong", n, op_max ? "max" : "bxor", bad);
        /* the input must be intact too */
        for (size_t i = 0; i < n; i += 4093)
            if (s[i] != val(tc_rank, i))
                TC_FAIL("allreduce modified sendbuf at index %zu", i);
        sample_report("allreduce", r, n);
        same_checksum("allreduce", sum);
        if (tc_rank == 0)
            printf("t_large: allreduce %s of %zu bytes ok (%.2f s, %.2f GB/s)\n", op_max ? "max" : "bxor", n,
                   dt, (double)n / dt / 1e9);
        free(s);
        free(r);
    }

    /* ---- 2. allgather of more than 2^31 bytes in total ---- */
    {
        size_t per = (n + (size_t)P - 1) / (size_t)P;
        size_t total = per * (size_t)P;
        uint8_t *s = tc_malloc(per), *r = tc_malloc(total);
        fill(s, tc_rank, per);
        memset(r, 0xA5, total);
        phase("allgather buffers ready");
        dfcclRequest_t q;
        double t1 = MPI_Wtime();
        CHECK(dfcclAllGather(s, r, per, dfcclUint8, comm, &q));
        CHECK(dfcclWait(&q));
        double dt = MPI_Wtime() - t1;
        uint64_t sum;
        phase("allgather done");
        size_t bad = verify_gather(r, per, P, &sum);
        phase("allgather verified");
        if (bad)
            TC_FAIL("allgather of %zu uint8 per rank: %zu bytes wrong", per, bad);
        sample_report("allgather", r, total);
        same_checksum("allgather", sum);
        if (tc_rank == 0)
            printf("t_large: allgather of %zu bytes per rank (%zu total) ok (%.2f s)\n", per, total, dt);
        free(s);
        free(r);
    }

    CHECK(dfcclCommDestroy(comm));
    MPI_Barrier(MPI_COMM_WORLD);
    if (tc_rank == 0) {
        printf("t_large: %.2f s, np=%d\n", MPI_Wtime() - t0, P);
        printf("OK\n");
    }
    MPI_Finalize();
    return 0;
}
