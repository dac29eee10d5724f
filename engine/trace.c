/* SPDX-License-Identifier: BSD-3-Clause */
/* The daemons' timeline (eng_trace.h). Events go into one growing array under a lock
 * (the cost is paid only with DFCCL_TRACE set) and are written as Chrome trace events:
 * "pid" is the process's MPI rank where the launcher says it (else its pid), a "tid" per
 * communicator and daemon thread (GPU: block), timestamps in µs of CLOCK_REALTIME so that
 * the files of several hosts line up as well as their clocks do. The GPU daemon's
 * stretches arrive in %globaltimer ns and are placed on the host's clock when written,
 * by the smallest gap seen, near that time, between a device time and the host seeing it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "eng_comm.h"
#include "eng_log.h"
#include "eng_trace.h"

int eng_trace_on;

typedef struct {
    uint64_t t0, t1; /* eng_now_ns; t1 == t0 for an instant */
    uint64_t uid, seq;
    uint64_t late; /* stalled: bit r set for rank r (< 64) that had not submitted seq */
    int32_t rank, nranks, coll, worker;
    int32_t kind;    /* REC_SUBMIT, REC_RUN or REC_COMPLETE */
    int32_t outcome; /* run: ENG_TR_*; complete: the result */
    int32_t gpu;     /* the GPU daemon's collective (worker: its block); run: t0, t1 in device ns */
    int32_t algo;
} rec_t;

enum { REC_SUBMIT, REC_RUN, REC_COMPLETE };

static pthread_mutex_t tr_lock = PTHREAD_MUTEX_INITIALIZER;
static rec_t *recs;
static size_t nrecs, cap;
static char prefix[512];
static int64_t mono_to_real_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at set-up */
static int proc_id;             /* the "pid" of the events */
static void (*gpu_drain)(void);

/* The GPU clock's offset, sampled (eng_trace_gpu_clock): the smallest host ns - device ns
 * gap seen in each stretch of 2^GAP_SHIFT device ns (~17 ms), sorted by bucket. A
 * stretch is placed by the smallest gap of its bucket and the two beside it (else the
 * nearest bucket's), so that a drift between %globaltimer and CLOCK_MONOTONIC over a long
 * run does not move early stretches before their submission. Under tr_lock. */
#define GAP_SHIFT 24
typedef struct {
    uint64_t bucket;
    int64_t gap;
} gap_t;
static gap_t *gaps;
static size_t ngaps, gaps_cap;

/* The offset for device time t from a sorted copy of the samples (n > 0). */
static int64_t gap_at(const gap_t *g, size_t n, uint64_t t)
{
    const uint64_t b = t >> GAP_SHIFT;
    size_t lo = 0, hi = n; /* the first bucket >= b */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (g[mid].bucket < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t best = INT64_MAX;
    for (size_t i = lo > 0 ? lo - 1 : 0; i < n && i <= lo + 1; i++)
        if (g[i].bucket + 1 >= b && g[i].bucket <= b + 1 && g[i].gap < best)
            best = g[i].gap;
    if (best != INT64_MAX)
        return best;
    /* no sample near: the nearest bucket's */
    if (lo == n)
        return g[n - 1].gap;
    if (lo == 0)
        return g[0].gap;
    return b - g[lo - 1].bucket <= g[lo].bucket - b ? g[lo - 1].gap : g[lo].gap;
}

/* file_closed: the exit handler has ended the JSON array ("\n]\n" at the end of the file);
 * exit_seen: the exit handler ran (a later flush ends the array again). */
static int file_closed, exit_seen;

static void trace_close_file(void);

static void flush_at_exit(void)
{
    eng_trace_flush();
    trace_close_file();
}

static void trace_init(void)
{
    const char *p = getenv("DFCCL_TRACE");
    if (!p || !*p)
        return;
    snprintf(prefix, sizeof prefix, "%s", p);
    struct timespec r, m;
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m);
    mono_to_real_ns = ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000000ll + (r.tv_nsec - m.tv_nsec);
    const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    proc_id = (int)getpid();
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++)
        if (getenv(rank_vars[i])) {
            proc_id = atoi(getenv(rank_vars[i]));
            break;
        }
    atexit(flush_at_exit);
    eng_trace_on = 1;
    dfccl_info("DFCCL_TRACE: this process's timeline goes to %s.%d.json", prefix, (int)getpid());
}

void eng_trace_setup(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, trace_init);
}

static void add(const rec_t *r)
{
    pthread_mutex_lock(&tr_lock);
    if (nrecs == cap) {
        const size_t ncap = cap ? 2 * cap : 4096;
        rec_t *n = realloc(recs, ncap * sizeof(*n));
        if (!n) {
            pthread_mutex_unlock(&tr_lock);
            return; /* a trace with a hole rather than a failed collective */
        }
        recs = n;
        cap = ncap;
    }
    recs[nrecs++] = *r;
    pthread_mutex_unlock(&tr_lock);
}

/* A record of collective k from t0 to t1 (eng_now_ns, or device ns for a GPU run). */
static rec_t rec_of(const eng_trace_key_t *k, int kind, uint64_t t0, uint64_t t1)
{
    return (rec_t){.t0 = t0,
                   .t1 = t1,
                   .uid = k->uid,
                   .seq = k->seq,
                   .rank = k->rank,
                   .nranks = k->nranks,
                   .coll = k->coll,
                   .kind = kind,
                   .gpu = k->gpu,
                   .algo = k->algo};
}

void eng_trace_submit(const eng_trace_key_t *k, uint64_t ns)
{
    rec_t r = rec_of(k, REC_SUBMIT, ns, ns);
    add(&r);
}

/* The ranks that had not submitted seq yet (shared-memory peers; net peers unknown). */
static uint64_t late_ranks(const struct dfccl_comm *c, uint64_t seq)
{
    uint64_t late = 0;
    for (int p = 0; p < c->nranks && p < 64; p++)
        if (p != c->rank && c->segs && c->segs[p] && dfccl_load_acquire64(&eng_seg_hdr(c, p)->arrived) <= seq)
            late |= 1ull << p;
    return late;
}

void eng_trace_stretch(const eng_trace_key_t *k, uint32_t w, uint64_t t0, uint64_t t1, int outcome,
                       uint64_t late)
{
    rec_t r = rec_of(k, REC_RUN, t0, t1);
    r.worker = (int32_t)w;
    r.outcome = outcome;
    r.late = late;
    add(&r);
}

void eng_trace_run(const struct eng_task *t, uint32_t w, uint64_t t0_ns, uint64_t t1_ns, int outcome)
{
    const eng_trace_key_t k = eng_trace_key(t->comm, t->seq, &t->args, 0);
    eng_trace_stretch(&k, w, t0_ns, t1_ns, outcome,
                      outcome == ENG_TR_STALLED ? late_ranks(t->comm, t->seq) : 0);
}

void eng_trace_gpu_clock(uint64_t host_ns, uint64_t dev_ns)
{
    const int64_t gap = (int64_t)(host_ns - dev_ns);
    const uint64_t b = dev_ns >> GAP_SHIFT;
    pthread_mutex_lock(&tr_lock);
    size_t i = ngaps; /* samples mostly come in order: from the end */
    while (i > 0 && gaps[i - 1].bucket > b)
        i--;
    if (i > 0 && gaps[i - 1].bucket == b) {
        if (gap < gaps[i - 1].gap)
            gaps[i - 1].gap = gap;
    } else {
        if (ngaps == gaps_cap) {
            const size_t ncap = gaps_cap ? 2 * gaps_cap : 256;
            gap_t *n = realloc(gaps, ncap * sizeof(*n));
            if (!n) {
                pthread_mutex_unlock(&tr_lock);
                return; /* the other samples place it */
            }
            gaps = n;
            gaps_cap = ncap;
        }
        memmove(&gaps[i + 1], &gaps[i], (ngaps - i) * sizeof(*gaps));
        gaps[i] = (gap_t){.bucket = b, .gap = gap};
        ngaps++;
    }
    pthread_mutex_unlock(&tr_lock);
}

void eng_trace_set_gpu_drain(void (*drain)(void))
{
    pthread_mutex_lock(&tr_lock);
    gpu_drain = drain;
    pthread_mutex_unlock(&tr_lock);
}

void eng_trace_complete(const eng_trace_key_t *k, int result)
{
    const uint64_t now = eng_now_ns();
    rec_t r = rec_of(k, REC_COMPLETE, now, now);
    r.outcome = result;
    add(&r);
    /* a failure is often followed by MPI_Abort, which runs no exit handler: what led to
     * it is written now */
    if (result != 0)
        eng_trace_flush();
}

static double us(uint64_t mono_ns)
{
    return (double)((int64_t)mono_ns + mono_to_real_ns) / 1e3;
}

/* Serializes the writers of the file (flushes stay in order), apart from tr_lock, which
 * the daemon's threads take for every event: the write happens outside it. */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;

void eng_trace_flush(void)
{
    if (!eng_trace_on)
        return;
    pthread_mutex_lock(&file_lock);
    pthread_mutex_lock(&tr_lock);
    void (*drain)(void) = gpu_drain;
    pthread_mutex_unlock(&tr_lock);
    if (drain)
        drain(); /* the GPU daemon's stretches recorded so far, with a clock sample */
    pthread_mutex_lock(&tr_lock);
    rec_t *recs_out = recs;
    const size_t n_out = nrecs;
    recs = NULL;
    nrecs = cap = 0;
    const size_t ng = ngaps;
    gap_t *g = ng ? malloc(ng * sizeof(*g)) : NULL;
    if (g)
        memcpy(g, gaps, ng * sizeof(*g));
    pthread_mutex_unlock(&tr_lock);
    if (!n_out) {
        free(g);
        pthread_mutex_unlock(&file_lock);
        return;
    }
    char path[600];
    snprintf(path, sizeof path, "%s.%d.json", prefix, (int)getpid());
    /* appended to across flushes: the file is a JSON array of events, which the Chrome
     * format accepts without its closing bracket; the exit handler closes it, and events
     * flushed after that (a thread still completing during exit) reopen it */
    if (file_closed) {
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size >= 3 && truncate(path, st.st_size - 3) == 0)
            file_closed = 0;
    }
    char why[700];
    FILE *f = eng_open_private(path, why, sizeof why);
    if (!f) {
        dfccl_warn("DFCCL_TRACE: %s; %zu events lost", why, n_out);
        free(recs_out);
        free(g);
        pthread_mutex_unlock(&file_lock);
        return;
    }
    if (ftell(f) == 0)
        fprintf(
            f,
            "[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"rank %d (pid "
            "%d)\"}}",
            proc_id, proc_id, (int)getpid());
    static const char *const outcomes[] = {"finished", "preempted", "stalled", "failed"};
    for (size_t i = 0; i < n_out; i++) {
        const rec_t *r = &recs_out[i];
        /* one row per communicator and daemon thread (GPU: block, from 64 on): the low
         * bits of its uid */
        const unsigned lane = r->gpu ? 64u + ((unsigned)r->worker & 63) : (unsigned)r->worker & 63;
        const unsigned tid = (unsigned)(r->uid & 0xffffff) * 128u + lane;
        char name[64];
        snprintf(name, sizeof name, "%s%s #%llu", eng_coll_names[r->coll], r->gpu ? " (GPU)" : "",
                 (unsigned long long)r->seq);
        /* the GPU daemon's collectives are numbered apart: a communicator of their own
         * to the tools ("<uid>/gpu") */
        const char *common = "\"comm\": \"%016llx%s\", \"rank\": %d, \"nranks\": %d, \"seq\": %llu, "
                             "\"coll\": \"%s\", \"algo\": \"%s\", \"daemon\": \"%s\"";
        char args[320];
        snprintf(args, sizeof args, common, (unsigned long long)r->uid, r->gpu ? "/gpu" : "", r->rank,
                 r->nranks, (unsigned long long)r->seq, eng_coll_names[r->coll],
                 r->algo >= 0 && r->algo < ENG_ALGO_COUNT ? eng_algo_names[r->algo] : "?",
                 r->gpu ? "gpu" : "cpu");
        /* a GPU stretch in device ns, placed on the host's clock (a drain always gives a
         * sample before its stretches: none is placed without one) */
        const int dev = r->gpu && r->kind == REC_RUN;
        if (dev && !g)
            continue;
        const uint64_t t0 = dev ? r->t0 + (uint64_t)gap_at(g, ng, r->t0) : r->t0;
        if (r->kind == REC_RUN) {
            char late[400] = "";
            size_t len = 0;
            for (int p = 0; p < 64; p++)
                if (r->late >> p & 1)
                    len += (size_t)snprintf(late + len, sizeof late - len, "%s%d", len ? ", " : "", p);
            fprintf(f,
                    ",\n{\"name\": \"%s\", \"cat\": \"run\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, "
                    "\"pid\": %d, "
                    "\"tid\": %u, \"args\": {%s, \"outcome\": \"%s\", \"worker\": %d, \"late_ranks\": [%s]}}",
                    name, us(t0), (double)(r->t1 - r->t0) / 1e3, proc_id, tid, args, outcomes[r->outcome],
                    (int)lane, late);
        } else {
            const char *what = r->kind == REC_SUBMIT ? "submit" : "complete";
            char result[32] = "";
            if (r->kind == REC_COMPLETE)
                snprintf(result, sizeof result, ", \"result\": %d", r->outcome);
            fprintf(f,
                    ",\n{\"name\": \"%s %s\", \"cat\": \"%s\", \"ph\": \"i\", \"s\": \"t\", \"ts\": %.3f, "
                    "\"pid\": %d, "
                    "\"tid\": %u, \"args\": {%s%s}}",
                    what, name, what, us(r->t0), proc_id, tid, args, result);
        }
    }
    fclose(f);
    free(recs_out);
    free(g);
    pthread_mutex_unlock(&file_lock);
    if (exit_seen)
        trace_close_file();
}

/* Ends the array at normal exit, so that json.load and jq read the file as it is. */
static void trace_close_file(void)
{
    pthread_mutex_lock(&file_lock);
    exit_seen = 1;
    char path[600];
    snprintf(path, sizeof path, "%s.%d.json", prefix, (int)getpid());
    struct stat st;
    if (!file_closed && stat(path, &st) == 0 && st.st_size > 0) {
        char why[700];
        FILE *f = eng_open_private(path, why, sizeof why);
        if (f) {
            fputs("\n]\n", f);
            file_closed = fclose(f) == 0;
        }
    }
    pthread_mutex_unlock(&file_lock);
}
