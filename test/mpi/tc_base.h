/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers (test_common.h): the process (rank, size), the checking macros that
 * abort every rank on a failure, a seeded random generator, and small utilities (sleep,
 * dfccl segments in /dev/shm, the last error, arguments, waiting with a deadline). */
#ifndef DFCCL_TC_BASE_H
#define DFCCL_TC_BASE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "dfccl.h"
#include "dfccl_mpi.h"

/* ---------------------------------------------------------------- process state */

static int tc_rank = -1; /* rank in MPI_COMM_WORLD, for messages */
static int tc_size = 0;

static inline void tc_init_world(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &tc_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tc_size);
    setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline void tc_abort(void)
{
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

#define TC_FAIL(...)                                                                                         \
    do {                                                                                                     \
        fprintf(stderr, "[rank %d] FAIL %s:%d: ", tc_rank, __FILE__, __LINE__);                              \
        fprintf(stderr, __VA_ARGS__);                                                                        \
        fprintf(stderr, "\n");                                                                               \
        tc_abort();                                                                                          \
    } while (0)

/* Any dfccl call that must succeed. */
#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        dfcclResult_t tc_r_ = (call);                                                                        \
        if (tc_r_ != dfcclSuccess) {                                                                         \
            fprintf(stderr, "[rank %d] FAIL %s:%d: %s returned %d (%s): %s\n", tc_rank, __FILE__, __LINE__,  \
                    #call, (int)tc_r_, dfcclGetErrorString(tc_r_), dfcclGetLastError());                     \
            tc_abort();                                                                                      \
        }                                                                                                    \
    } while (0)

/* Any MPI call that must succeed. */
#define MPI_CHECK(call)                                                                                      \
    do {                                                                                                     \
        int tc_m_ = (call);                                                                                  \
        if (tc_m_ != MPI_SUCCESS) {                                                                          \
            fprintf(stderr, "[rank %d] FAIL %s:%d: %s returned MPI error %d\n", tc_rank, __FILE__, __LINE__, \
                    #call, tc_m_);                                                                           \
            tc_abort();                                                                                      \
        }                                                                                                    \
    } while (0)

static inline void *tc_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        TC_FAIL("out of memory allocating %zu bytes", bytes);
    return p;
}

/* ------------------------------------------------------------------ randomness */

static inline uint64_t tc_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct {
    uint64_t s;
} tc_rng_t;

static inline void tc_rng_seed(tc_rng_t *g, uint64_t seed)
{
    g->s = tc_mix(seed ^ 0x5eed5eedull);
}
static inline uint64_t tc_rng_next(tc_rng_t *g)
{
    g->s += 0x9e3779b97f4a7c15ull;
    uint64_t z = g->s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* uniform in [0, n) (n > 0) */
static inline uint64_t tc_rng_below(tc_rng_t *g, uint64_t n)
{
    return tc_rng_next(g) % n;
}

static inline void tc_shuffle_int(tc_rng_t *g, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)tc_rng_below(g, (uint64_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ------------------------------------------------------------ misc utilities */

static inline void tc_sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Number of /dev/shm entries named dfccl-<pid>-* (pid >= 0) or dfccl-* (pid < 0);
 * the names are printed when @p print is set. */
static inline int tc_shm_count(long pid, int print)
{
    char prefix[64];
    if (pid >= 0)
        snprintf(prefix, sizeof prefix, "dfccl-%ld-", pid);
    else
        snprintf(prefix, sizeof prefix, "dfccl-");
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            if (print)
                fprintf(stderr, "[rank %d] /dev/shm/%s\n", tc_rank, e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Does the last-error text contain @p needle? */
static inline int tc_lasterr_has(const char *needle)
{
    const char *m = dfcclGetLastError();
    return m && strstr(m, needle) != NULL;
}

/* Parse "--name VALUE" (returns the value or NULL) and "--name" (flag) options. */
static inline const char *tc_arg_value(int argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return NULL;
}

static inline int tc_arg_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name))
            return 1;
    return 0;
}

/* Wait for n requests, polling with dfcclTest; if deadline_s > 0 and they are not all
 * complete after deadline_s seconds, print which are not and _exit(3).
 * names[i] (may be NULL) describes request i. Returns the first error met. */
static inline dfcclResult_t tc_wait_deadline(int n, dfcclRequest_t *reqs, double deadline_s,
                                             const char *const *names)
{
    if (deadline_s <= 0)
        return dfcclWaitAll(n, reqs);
    dfcclResult_t first = dfcclSuccess;
    double t0 = MPI_Wtime();
    int left = 0;
    for (int i = 0; i < n; i++)
        left += reqs[i] != NULL;
    long spins = 0;
    while (left > 0) {
        for (int i = 0; i < n; i++) {
            if (!reqs[i])
                continue;
            int done = 0;
            dfcclResult_t r = dfcclTest(&reqs[i], &done);
            if (r != dfcclSuccess && first == dfcclSuccess)
                first = r;
            if (done) {
                left--;
                reqs[i] = NULL;
            }
        }
        if (left == 0)
            break;
        if (MPI_Wtime() - t0 > deadline_s) {
            printf("HANG: not complete after %g s (rank %d, %d of %d requests incomplete)\n", deadline_s,
                   tc_rank, left, n);
            for (int i = 0; i < n; i++)
                if (reqs[i])
                    printf("HANG: rank %d incomplete request %d: %s\n", tc_rank, i,
                           names && names[i] ? names[i] : "?");
            fflush(stdout);
            fflush(stderr);
            _exit(3);
        }
        if (++spins > 64)
            tc_sleep_us(50); /* leave the cores to the daemons */
        else
            sched_yield();
    }
    return first;
}

#endif /* DFCCL_TC_BASE_H */
