/* SPDX-License-Identifier: BSD-3-Clause */
/* DFCCL_GPU_TRACE's report: the daemon stamps each collective block 0 takes part in (all
 * of them) with %globaltimer at every stage (gpu_daemon.h, GPU_TR_*), and the host turns the
 * records into medians per stage when a communicator goes, to show where a small
 * collective's latency goes without a profiler. */
#include <stdio.h>
#include <stdlib.h>

#include "gpu_backend.h"

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* DFCCL_GPU_TRACE: log the medians of every stage recorded since the last report (every
 * collective block 0 ran), then clear the records. */
void trace_report(void)
{
    /* consecutive stamps of a record, then the fetcher's poll period and the tries */
    struct stage {
        int from, to;
        const char *name;
    };
    static const stage st[] = {{GPU_TR_FETCHED, GPU_TR_TASK, "fetched -> taken by block 0"},
                               {GPU_TR_TASK, GPU_TR_BUILT, "taken -> task built"},
                               {GPU_TR_BUILT, GPU_TR_PASS, "built -> pass reaches it"},
                               {GPU_TR_PASS, GPU_TR_RUN, "pass -> running"},
                               {GPU_TR_RUN, GPU_TR_MOVED, "running -> first data moved"},
                               {GPU_TR_MOVED, GPU_TR_FINISHED, "moved -> finished"},
                               {GPU_TR_FINISHED, GPU_TR_POSTED, "finished -> completion posted"}};
    enum { NSTAMP = 7, NST = NSTAMP + 2 };
    static_assert(sizeof(st) / sizeof(st[0]) == NSTAMP, "one name per stage");
    uint64_t *tr = (uint64_t *)malloc(GPU_TRACE_TOTAL * sizeof(uint64_t)), *d[NST];
    int ok = tr != NULL;
    for (int k = 0; k < NST; k++)
        ok &= (d[k] = (uint64_t *)malloc(GPU_TRACE_RECS * sizeof(uint64_t))) != NULL;
    if (ok && cudaMemcpy(tr, G.params.trace, GPU_TRACE_TOTAL * sizeof(uint64_t), cudaMemcpyDeviceToHost) ==
                  cudaSuccess) {
        size_t m = 0, mp = 0;
        for (size_t i = 0; i < GPU_TRACE_RECS; i++) {
            const uint64_t *r = tr + i * GPU_TRACE_WORDS;
            int whole = r[GPU_TR_FETCHED] != 0;
            for (int k = 0; k < NSTAMP && whole; k++)
                whole = r[st[k].to] >= r[st[k].from];
            if (!whole) /* not a fresh task's first pass, or not finished */
                continue;
            for (int k = 0; k < NSTAMP; k++)
                d[k][m] = r[st[k].to] - r[st[k].from];
            d[NST - 1][m] = r[GPU_TR_TRIES];
            m++;
            if (r[GPU_TR_POLLS] > 1) /* the fetcher was polling an empty ring before it */
                d[NSTAMP][mp++] = r[GPU_TR_POLL_NS];
        }
        for (int k = 0; k < NST; k++)
            qsort(d[k], k == NSTAMP ? mp : m, sizeof(uint64_t), cmp_u64);
        if (m) {
            char line[1024];
            int len = snprintf(line, sizeof(line), "GPU trace (%zu collectives, medians in ns):", m);
            for (int k = 0; k < NSTAMP && len < (int)sizeof(line); k++)
                len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %llu;", st[k].name,
                                (unsigned long long)d[k][m / 2]);
            if (len < (int)sizeof(line))
                snprintf(line + len, sizeof(line) - (size_t)len,
                         " fetcher's poll period before it %llu; tries %llu",
                         (unsigned long long)(mp ? d[NSTAMP][mp / 2] : 0),
                         (unsigned long long)d[NST - 1][m / 2]);
            dfccl_warn("%s", line);
        }
        cudaMemset(G.params.trace, 0, GPU_TRACE_RECS * GPU_TRACE_WORDS * sizeof(uint64_t));
    }
    cudaGetLastError();
    free(tr);
    for (int k = 0; k < NST; k++)
        free(d[k]);
}
