/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_netns: dfccl ranks without MPI, for test/net/netns.sh, which starts each rank in
 * its own network namespace (so MPI's launcher, whose PMIx runs over loopback TCP,
 * cannot be used). The bootstrap all-gather goes through files in a directory both
 * namespaces see; collectives then go over UCX across the veth pair.
 *
 * usage: t_netns RANK NRANKS DIR [--iters N] [--deadline SEC]
 *   1. one communicator: all-reduces (float32 sum) of 1, 1000, 100000 and 4Mi
 *      elements, an all-gather and a broadcast from the last rank, every result checked
 *   2. chaos order: 4 communicators, one all-reduce of 262144 floats each, submitted
 *      by rank r in the order rotated by r (reversed on odd ranks), N iterations;
 *      completes only with preemption across the net transport
 * Prints "OK rank R: ..." and exits 0; "FAIL ..." and exit 1 on a wrong result or an
 * error; "HANG: ..." and exit 3 when collectives are not complete after SEC seconds
 * (default 60); exit 77 (and "SKIP: ...") when dfcclCommInit says dfcclUnsupported.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dfccl.h"

static int me = -1, P = 0;

#define FAIL(...)                                                                                            \
    do {                                                                                                     \
        fprintf(stdout, "FAIL rank %d %s:%d: ", me, __FILE__, __LINE__);                                     \
        fprintf(stdout, __VA_ARGS__);                                                                        \
        fprintf(stdout, "\n");                                                                               \
        fflush(stdout);                                                                                      \
        _exit(1);                                                                                            \
    } while (0)

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        dfcclResult_t r_ = (call);                                                                           \
        if (r_ != dfcclSuccess)                                                                              \
            FAIL("%s returned %d (%s): %s", #call, (int)r_, dfcclGetErrorString(r_), dfcclGetLastError());   \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------ file all-gather */

typedef struct {
    const char *dir;
    unsigned seq;
} fboot_t;

/* Each call: write my block to DIR/ag.SEQ.RANK (through a temporary name and rename,
 * so a reader never sees half a file), wait for every rank's, read them in order. */
static int file_allgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    fboot_t *b = ctx;
    unsigned seq = b->seq++;
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/.ag.%u.%d.tmp", b->dir, seq, me);
    snprintf(path, sizeof path, "%s/ag.%u.%d", b->dir, seq, me);
    FILE *f = fopen(tmp, "wb");
    if (!f || (bytes && fwrite(sendbuf, 1, bytes, f) != bytes) || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "rank %d: writing %s: %s\n", me, path, strerror(errno));
        return -1;
    }
    double t0 = now_s();
    for (int r = 0; r < P; r++) {
        snprintf(path, sizeof path, "%s/ag.%u.%d", b->dir, seq, r);
        for (;;) {
            f = fopen(path, "rb");
            if (f)
                break;
            if (now_s() - t0 > 60) {
                fprintf(stderr, "rank %d: bootstrap: %s did not appear within 60 s\n", me, path);
                return -1;
            }
            sleep_us(1000);
        }
        size_t got = bytes ? fread((char *)recvbuf + (size_t)r * bytes, 1, bytes, f) : 0;
        fclose(f);
        if (got != bytes) {
            fprintf(stderr, "rank %d: %s has %zu bytes, expected %zu\n", me, path, got, bytes);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------- checks */

/* element i of rank r's input: small integers, so float sums are exact */
static float val(int r, size_t i, unsigned salt)
{
    return (float)((int)((i * 7u + (size_t)r * 13u + salt) % 61u) - 30);
}

static dfcclResult_t wait_all(int n, dfcclRequest_t *req, double deadline, const char *what)
{
    dfcclResult_t first = dfcclSuccess;
    double t0 = now_s();
    int left = n;
    while (left > 0) {
        for (int i = 0; i < n; i++) {
            if (!req[i])
                continue;
            int done = 0;
            dfcclResult_t r = dfcclTest(&req[i], &done);
            if (r != dfcclSuccess && first == dfcclSuccess)
                first = r;
            if (done || r != dfcclSuccess) {
                req[i] = NULL;
                left--;
            }
        }
        if (left && now_s() - t0 > deadline) {
            printf("HANG: rank %d: %s: %d of %d requests incomplete after %g s\n", me, what, left, n,
                   deadline);
            fflush(stdout);
            _exit(3);
        }
        if (left)
            sleep_us(50);
    }
    return first;
}

static size_t check_allreduce(const float *got, size_t n, unsigned salt, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        float e = 0;
        for (int r = 0; r < P; r++)
            e += val(r, i, salt);
        if (got[i] != e)
            FAIL("%s: element %zu is %g, expected %g", what, i, (double)got[i], (double)e);
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s RANK NRANKS DIR [--iters N] [--deadline SEC]\n", argv[0]);
        return 2;
    }
    me = atoi(argv[1]);
    P = atoi(argv[2]);
    fboot_t boot = {argv[3], 0};
    int iters = 10;
    double deadline = 60;
    for (int i = 4; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--iters"))
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--deadline"))
            deadline = atof(argv[++i]);
    }
    if (P < 1 || me < 0 || me >= P)
        FAIL("bad RANK %d / NRANKS %d", me, P);
    setvbuf(stdout, NULL, _IOLBF, 0);

    dfcclComm_t comm;
    dfcclResult_t r = dfcclCommInit(&comm, P, me, file_allgather, &boot);
    if (r == dfcclUnsupported) {
        printf("SKIP: dfcclCommInit: %s\n", dfcclGetLastError());
        return 77;
    }
    CHECK(r);
    size_t checked = 0;

    /* 1. one communicator, several sizes and collectives */
    static const size_t sizes[] = {1, 1000, 100000, 4u << 20};
    size_t maxn = 4u << 20;
    float *s = malloc(maxn * sizeof(float)), *d = malloc(maxn * sizeof(float) * (size_t)P);
    if (!s || !d)
        FAIL("out of memory");
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        for (size_t i = 0; i < n; i++)
            s[i] = val(me, i, k);
        memset(d, 0xA5, n * sizeof(float));
        dfcclRequest_t q;
        CHECK(dfcclAllReduce(s, d, n, dfcclFloat32, dfcclSum, comm, &q));
        CHECK(wait_all(1, &q, deadline, "allreduce"));
        checked += check_allreduce(d, n, k, "allreduce");
    }
    {
        size_t n = 100000;
        for (size_t i = 0; i < n; i++)
            s[i] = val(me, i, 99);
        dfcclRequest_t q;
        CHECK(dfcclAllGather(s, d, n, dfcclFloat32, comm, &q));
        CHECK(wait_all(1, &q, deadline, "allgather"));
        for (int p = 0; p < P; p++)
            for (size_t i = 0; i < n; i++)
                if (d[(size_t)p * n + i] != val(p, i, 99))
                    FAIL("allgather: block %d element %zu is %g", p, i, (double)d[(size_t)p * n + i]);
        checked += n * (size_t)P;
        int root = P - 1;
        for (size_t i = 0; i < n; i++)
            d[i] = me == root ? val(root, i, 7) : -1.0f;
        CHECK(dfcclBroadcast(d, d, n, dfcclFloat32, root, comm, &q));
        CHECK(wait_all(1, &q, deadline, "broadcast"));
        for (size_t i = 0; i < n; i++)
            if (d[i] != val(root, i, 7))
                FAIL("broadcast: element %zu is %g", i, (double)d[i]);
        checked += n;
    }

    /* 2. chaos order over 4 communicators */
    enum { NC = 4 };
    const size_t cn = 262144;
    dfcclComm_t cc[NC];
    float *cs[NC], *cd[NC];
    for (int k = 0; k < NC; k++) {
        CHECK(dfcclCommInit(&cc[k], P, me, file_allgather, &boot));
        cs[k] = malloc(cn * sizeof(float));
        cd[k] = malloc(cn * sizeof(float));
        if (!cs[k] || !cd[k])
            FAIL("out of memory");
    }
    for (int it = 0; it < iters; it++) {
        dfcclRequest_t q[NC];
        for (int j = 0; j < NC; j++) {
            int k = (me % 2) ? (NC - 1 - (j + me) % NC) : (j + me) % NC;
            unsigned salt = (unsigned)(it * NC + k);
            for (size_t i = 0; i < cn; i++)
                cs[k][i] = val(me, i, salt);
            memset(cd[k], 0xA5, cn * sizeof(float));
            CHECK(dfcclAllReduce(cs[k], cd[k], cn, dfcclFloat32, dfcclSum, cc[k], &q[j]));
        }
        CHECK(wait_all(NC, q, deadline, "chaos-order allreduces"));
        for (int k = 0; k < NC; k++)
            checked += check_allreduce(cd[k], cn, (unsigned)(it * NC + k), "chaos allreduce");
    }
    dfcclStats_t st;
    unsigned long long preempt = 0;
    for (int k = 0; k < NC; k++) {
        if (dfcclCommGetStats(cc[k], &st) == dfcclSuccess)
            preempt += (unsigned long long)st.preemptions;
        CHECK(dfcclCommDestroy(cc[k]));
        free(cs[k]);
        free(cd[k]);
    }
    CHECK(dfcclCommDestroy(comm));
    /* a last all-gather so that no rank leaves while another still needs it */
    char one = 1, all[1024];
    if (P <= (int)sizeof all && file_allgather(&one, all, 1, &boot) != 0)
        FAIL("final bootstrap barrier failed");
    free(s);
    free(d);
    printf("OK rank %d: %zu elements checked, %d chaos iterations, %llu preemptions\n", me, checked, iters,
           preempt);
    return 0;
}
