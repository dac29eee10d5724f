/* SPDX-License-Identifier: BSD-3-Clause */
/* Peer transport of the CPU backend: one POSIX shared-memory segment per rank and
 * communicator, holding the FIFOs that peers write into (the receiver owns the memory).
 * Every rank maps every segment, then each rank unlinks its own: from then on nothing
 * is left in /dev/shm even if a rank is killed.
 *
 * Names: /dfccl-<pid>-<start time>-<pid namespace>-<128 random bits>, created with
 * O_EXCL (a name taken by anyone else is retried under a fresh one) and handed to the
 * peers in the exchange that follows, so nobody can predict one. Peers check the owner,
 * the size and the header before use. Segments of a process killed in the short window
 * before the unlink are removed at the next start (eng_shm_clean_stale: once per process,
 * this user's names only, within 50 ms), but only when provably dead: same pid
 * namespace, and that pid gone or now another process (its start time differs). Other
 * namespaces' segments (containers sharing /dev/shm) are left alone.
 * Space is reserved when the segment is created (posix_fallocate), so a full /dev/shm is
 * an error at set-up, not a SIGBUS inside a collective. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "eng_comm.h"
#include "eng_log.h"
#include "eng_proc.h"
#include "transport.h"

/* The shared-memory peers' processes (from their segments' names), so that one that dies
 * without leaving is found while a collective waits on it: pid 0 for peers on another
 * transport; start time 0 when unknown. A peer in another pid namespace (its pid means
 * nothing here) is watched through its segment's heartbeat instead (heartbeat.c). */
struct eng_shm_peer {
    int pid;
    unsigned long long start;
    uint8_t other_ns; /* 1: another pid namespace */
    uint64_t beat;    /* its heartbeat as last seen, */
    uint64_t beat_ns; /* and when it was seen to change (0: not yet) */
};

struct eng_shm {
    int beating; /* the communicator is on the heartbeat list */
    struct eng_shm_peer peer[];
};

#define SEG_NAME_MAX 112

/* A process's start time (clock ticks after boot, /proc/<pid>/stat field 22), 0 if
 * unknown: with the pid it names a process for good (pids are reused). *state_p (if not
 * NULL): its state letter (field 3), 0 if unknown; 'Z' for one that died unreaped. */
static unsigned long long proc_stat(int pid, char *state_p)
{
    char path[64], buf[1024];
    if (state_p)
        *state_p = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    unsigned long long start = 0;
    char state = 0;
    /* after ") ": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
     * utime stime cutime cstime priority nice threads itrealvalue starttime(22) */
    if (!p || sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     &state, &start) != 2)
        return 0;
    if (state_p)
        *state_p = state;
    return start;
}

static unsigned long long proc_start(int pid)
{
    return proc_stat(pid, NULL);
}

static void seg_name(char *buf, size_t len)
{
    uint64_t r[2] = {0, 0};
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        r[0] ^= eng_now_ns();
        r[1] ^= (uint64_t)(uintptr_t)buf * 0x9E3779B97F4A7C15ull;
    }
    const int pid = (int)getpid();
    snprintf(buf, len, "/dfccl-%d-%llu-%llu-%016llx%016llx", pid, proc_start(pid),
             (unsigned long long)eng_pid_ns(), (unsigned long long)r[0], (unsigned long long)r[1]);
}

/* The sweep's budget: /dev/shm may hold tens of thousands of other users' files. */
#define ENG_SWEEP_NS 50000000ull

/* Once per process (its first communicator), and only this user's dfccl segments of this
 * pid namespace: another user's are not ours to judge (nor to remove), and each name
 * judged costs a look at /proc. Bounded by ENG_SWEEP_NS; what it skipped or did not reach
 * is left for the next process. */
static void sweep_stale(void)
{
    const uint64_t t0 = eng_now_ns();
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    const int dfd = dirfd(d);
    const uid_t uid = geteuid();
    /* processes of other pid namespaces: their segments are never judged from here */
    const unsigned long long my_ns = eng_pid_ns();
    unsigned seen = 0, ours = 0, removed = 0, stopped = 0;
    struct dirent *de;
    while (my_ns && (de = readdir(d))) {
        if (++seen % 64 == 0 && eng_now_ns() - t0 > ENG_SWEEP_NS) {
            stopped = 1;
            break;
        }
        int pid;
        unsigned long long start, ns;
        struct stat st;
        if (strncmp(de->d_name, "dfccl-", 6) ||
            sscanf(de->d_name, "dfccl-%d-%llu-%llu-", &pid, &start, &ns) != 3 || pid <= 0 || ns != my_ns)
            continue; /* not ours to judge: another namespace, or not a dfccl name */
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != uid)
            continue; /* another user's */
        ours++;
        const int gone = kill(pid, 0) == -1 && errno == ESRCH;
        const unsigned long long now = gone ? 0 : proc_start(pid);
        if (gone || (start && now && now != start)) {
            char name[300];
            snprintf(name, sizeof(name), "/%s", de->d_name);
            if (shm_unlink(name) == 0) {
                removed++;
                dfccl_info("removed stale segment %s of dead process %d", name, pid);
            }
        }
    }
    closedir(d);
    dfccl_info(
        "stale-segment sweep of /dev/shm: %u entries looked at, %u dfccl segments of this user and pid "
        "namespace, %u removed, %.1f ms%s",
        seen, ours, removed, (double)(eng_now_ns() - t0) / 1e6,
        stopped ? " (stopped at its time limit; the rest is left for the next process)" : "");
}

void eng_shm_clean_stale(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sweep_stale);
}

/* Created segments carry their name to the peers in the exchange after creation. */
typedef struct {
    int32_t status;
    char name[SEG_NAME_MAX];
} seg_card_t;

/* All-gather one status word; the result is the worst (lowest) of all ranks. */
static dfcclResult_t bootstrap_status(const struct dfccl_comm *c, dfcclAllgatherFn_t ag, void *ctx,
                                      dfcclResult_t mine)
{
    int32_t st = mine, worst = mine;
    const int32_t *all = (const int32_t *)eng_boot_ag(c->boot, ENG_BOOT_REC, &st, sizeof(st), ag, ctx);
    if (!all)
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    for (int i = 0; i < c->nranks; i++)
        if (all[i] < worst)
            worst = all[i];
    if (worst < 0 && mine >= 0)
        eng_set_error((dfcclResult_t)worst, "dfcclCommInit", "a peer failed to set up shared memory");
    return (dfcclResult_t)worst;
}

static void *map_segment(const char *name, size_t size, int create, dfcclResult_t *res)
{
    int fd = shm_open(name, create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
    if (fd < 0) {
        const int err = errno; /* the caller retries a taken name (EEXIST) */
        *res =
            eng_set_error(dfcclSystemError, "dfcclCommInit", "shm_open(%s) failed: %s", name, strerror(err));
        errno = err;
        return NULL;
    }
    if (create && ftruncate(fd, (off_t)size) != 0) {
        *res = eng_set_error(errno == ENOSPC ? dfcclNoMemory : dfcclSystemError, "dfcclCommInit",
                             "ftruncate(%s, %zu) failed: %s", name, size, strerror(errno));
        close(fd);
        shm_unlink(name);
        return NULL;
    }
    /* a peer's segment: its owner sized it before the exchange that named it; one
     * shorter than the layout (or not ours) would give SIGBUS or a stranger's pages */
    struct stat st;
    memset(&st, 0, sizeof(st));
    if (!create && (fstat(fd, &st) != 0 || (size_t)st.st_size < size || st.st_uid != geteuid())) {
        *res =
            eng_set_error(dfcclSystemError, "dfcclCommInit",
                          "segment %s is not a peer's: %lld bytes owned by uid %u, want %zu bytes of uid %u",
                          name, (long long)st.st_size, (unsigned)st.st_uid, size, (unsigned)geteuid());
        close(fd);
        return NULL;
    }
    /* ftruncate only sizes the file: on a full /dev/shm (64 MiB in a default Docker
     * container) the first touch of a page would kill the process with SIGBUS inside a
     * collective. Reserving every page now turns that into an error here. */
    int e = create ? posix_fallocate(fd, 0, (off_t)size) : 0;
    if (e == ENOSPC || e == ENOMEM) {
        struct statvfs vfs;
        const double free_mib =
            statvfs("/dev/shm", &vfs) == 0 ? (double)vfs.f_bavail * (double)vfs.f_frsize / 1048576.0 : -1.0;
        *res = eng_set_error(
            dfcclNoMemory, "dfcclCommInit",
            "no room in /dev/shm for a %.1f MiB segment (%.1f MiB free): enlarge it (docker run "
            "--shm-size=1g, or mount -o remount,size=... /dev/shm), or free communicators",
            (double)size / 1048576.0, free_mib);
        close(fd);
        shm_unlink(name);
        return NULL;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        *res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "mmap(%s, %zu) failed: %s", name, size,
                             strerror(errno));
        if (create)
            shm_unlink(name);
        return NULL;
    }
    return p;
}

/* Create this rank's segment under a fresh name (another one if the name is taken). */
static void *create_segment(char *name, size_t len, size_t size, dfcclResult_t *res)
{
    for (int tries = 0; tries < 8; tries++) {
        seg_name(name, len);
        void *p = map_segment(name, size, 1, res);
        if (p || errno != EEXIST)
            return p;
        dfccl_warn("segment name %s is taken by someone else: trying another", name);
    }
    return NULL;
}

static void shm_close(struct dfccl_comm *c);

/* Connect (transport.h): my segment, and those of peers[p] mapped. */
static dfcclResult_t shm_connect(struct dfccl_comm *c, const uint8_t *peers, dfcclAllgatherFn_t ag, void *ctx)
{
    const int N = c->nranks;
    const size_t ctrl = eng_conn_ctrl_bytes();
    const size_t conn = ctrl + (size_t)c->depth * c->chunk;
    const size_t nconn = (size_t)c->slots * c->channels * (size_t)N;
    dfcclResult_t res = dfcclSuccess, all;
    char name[SEG_NAME_MAX] = "";
    seg_card_t mine, *cards = NULL;

    c->seg_size = ENG_PAGE + nconn * conn;
    c->segs = calloc((size_t)N, sizeof(char *));
    c->conns = calloc(nconn, sizeof(eng_conn_t));
    if (!c->segs || !c->conns) {
        res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for %d peers", N);
    } else {
        c->segs[c->rank] = create_segment(name, sizeof(name), c->seg_size, &res);
        if (c->segs[c->rank]) {
            eng_seg_hdr_t *h = eng_seg_hdr(c, c->rank);
            h->magic = ENG_SEG_MAGIC;
            h->arrived = 0;
        }
    }
    /* everyone created its own segment (or someone failed and all give up), and says
     * under which name */
    memset(&mine, 0, sizeof(mine));
    mine.status = res;
    snprintf(mine.name, sizeof(mine.name), "%s", name);
    _Static_assert(sizeof(mine) <= ENG_BOOT_REC, "an all-gather of the set-up");
    if (!(cards = (seg_card_t *)eng_boot_ag(c->boot, ENG_BOOT_REC, &mine, sizeof(mine), ag, ctx))) {
        all = eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
        goto err_unlink;
    }
    all = res;
    for (int p = 0; p < N; p++)
        if (cards[p].status < all)
            all = cards[p].status;
    if (all < 0) {
        if (res >= 0)
            eng_set_error(all, "dfcclCommInit", "a peer failed to set up shared memory");
        goto err_unlink;
    }
    for (int p = 0; p < N && res == dfcclSuccess; p++) {
        if (p == c->rank || !peers[p])
            continue; /* another transport points their connections elsewhere */
        char pname[SEG_NAME_MAX];
        snprintf(pname, sizeof(pname), "%.*s", (int)sizeof(pname) - 1, cards[p].name);
        if (strncmp(pname, "/dfccl-", 7) != 0 || strchr(pname + 1, '/')) {
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "rank %d named no dfccl segment", p);
            break;
        }
        c->segs[p] = map_segment(pname, c->seg_size, 0, &res);
        if (c->segs[p] && eng_seg_hdr(c, p)->magic != ENG_SEG_MAGIC) {
            res = eng_set_error(dfcclSystemError, "dfcclCommInit", "segment %s has no dfccl header", pname);
            munmap(c->segs[p], c->seg_size);
            c->segs[p] = NULL;
        }
    }
    /* the peers' processes, named by their segments; those of another pid namespace
     * (or that name none) are watched through their heartbeat */
    c->shm = calloc(1, sizeof(struct eng_shm) + (size_t)N * sizeof(struct eng_shm_peer));
    if (res == dfcclSuccess && !c->shm)
        res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for %d peers", N);
    int other_ns = 0;
    for (int p = 0; p < N && res == dfcclSuccess; p++) {
        int pid;
        unsigned long long start, ns;
        if (p == c->rank || !c->segs[p])
            continue;
        if (sscanf(cards[p].name, "/dfccl-%d-%llu-%llu-", &pid, &start, &ns) == 3 && pid > 0 && ns &&
            ns == eng_pid_ns()) {
            c->shm->peer[p].pid = pid;
            c->shm->peer[p].start = start;
        } else {
            c->shm->peer[p].pid = sscanf(cards[p].name, "/dfccl-%d-", &pid) == 1 ? pid : 0; /* for messages */
            c->shm->peer[p].other_ns = 1;
            other_ns = 1;
        }
    }
    if (res == dfcclSuccess && other_ns && (res = eng_beat_start(c)) == dfcclSuccess)
        c->shm->beating = 1;
    /* everyone mapped every segment: the names can go */
    cards = NULL; /* the boot table: the next all-gather reuses it */
    all = bootstrap_status(c, ag, ctx, res);
    shm_unlink(name);
    if (all < 0)
        goto err_unmap;

    for (uint32_t s = 0; s < c->slots; s++)
        for (uint32_t ch = 0; ch < c->channels; ch++)
            for (int p = 0; p < N; p++) {
                eng_conn_t *cn = &eng_comm_conns(c, s, ch)[p];
                cn->recv_ctrl = (eng_conn_ctrl_t *)(c->segs[c->rank] + eng_conn_offset(c, s, ch, p));
                cn->recv_data = (char *)cn->recv_ctrl + ctrl;
                cn->send_ctrl =
                    c->segs[p] ? (eng_conn_ctrl_t *)(c->segs[p] + eng_conn_offset(c, s, ch, c->rank)) : NULL;
                cn->send_data = cn->send_ctrl ? (char *)cn->send_ctrl + ctrl : NULL;
                cn->sent = cn->recvd = 0;
                cn->rchunk = cn->schunk = c->chunk;
                cn->ll_salt = eng_ll_salt(c->uid);
                cn->bell = c->segs[p] ? &eng_seg_hdr(c, p)->bell : NULL;
            }
    c->stats.shm_bytes = c->seg_size;
    return dfcclSuccess;

err_unlink:
    if (c->segs && c->segs[c->rank])
        shm_unlink(name);
err_unmap:
    shm_close(c);
    return all < 0 ? all : res;
}

/* A peer in another pid namespace is gone when its heartbeat stood still for
 * ENG_BEAT_DEAD_NS (the looks of several waiters are serialized by eng_peer_check_due). */
static int beat_stopped(struct dfccl_comm *c, int p, uint64_t now)
{
    const uint64_t b = dfccl_load_acquire64(&eng_seg_hdr(c, p)->beat);
    struct eng_shm_peer *q = &c->shm->peer[p];
    if (!q->beat_ns || b != q->beat) {
        q->beat = b;
        q->beat_ns = now;
        return 0;
    }
    return now - q->beat_ns > ENG_BEAT_DEAD_NS;
}

int eng_shm_dead_peer(struct dfccl_comm *c, uint64_t now)
{
    if (!c->shm)
        return -1;
    for (int p = 0; p < c->nranks; p++) {
        const int pid = c->shm->peer[p].pid;
        if (p == c->rank || !c->segs[p])
            continue;
        /* a peer that destroyed the communicator said so in its segment: it owes nothing */
        if (dfccl_load_acquire64(&eng_seg_hdr(c, p)->closed))
            continue;
        if (c->shm->peer[p].other_ns) {
            if (beat_stopped(c, p, now))
                return p;
            continue;
        }
        if (!pid)
            continue;
        if (kill(pid, 0) == -1 && errno == ESRCH)
            return p;
        /* a zombie (dead, not reaped yet), or the pid now another process's */
        char state;
        const unsigned long long start = proc_stat(pid, &state);
        if (state == 'Z' || state == 'X' ||
            (c->shm->peer[p].start && start && start != c->shm->peer[p].start))
            return p;
    }
    return -1;
}

int eng_shm_left_peer(const struct dfccl_comm *c, uint64_t seq, int gpu)
{
    if (!c->shm)
        return -1;
    for (int p = 0; p < c->nranks; p++) {
        /* a net peer's mark is written when its message says it left, which tells nothing
         * of what it completed: only shared-memory peers (their own segment) count */
        if (p == c->rank || !c->segs[p] || (c->tp && c->tp[p] != ENG_TP_SHM))
            continue;
        const eng_seg_hdr_t *h = eng_seg_hdr(c, p);
        const uint64_t v = dfccl_load_acquire64(gpu ? &h->gpu_closed : &h->closed);
        if (v && seq + 1 >= v)
            return p;
    }
    return -1;
}

int eng_peer_check_due(struct dfccl_comm *c, uint64_t now)
{
    uint64_t last = dfccl_load_relaxed(&c->peer_check_ns);
    return now - last > ENG_PEER_CHECK_NS && dfccl_cas_relaxed(&c->peer_check_ns, &last, now);
}

void eng_shm_peer_desc(const struct dfccl_comm *c, int p, uint64_t now, char *buf, size_t len)
{
    const struct eng_shm_peer *q = c->shm ? &c->shm->peer[p] : NULL;
    if (q && q->other_ns)
        snprintf(buf, len, "pid %d in another pid namespace, no heartbeat for %.1f s", q->pid,
                 q->beat_ns ? (double)(now - q->beat_ns) / 1e9 : 0.0);
    else
        snprintf(buf, len, "pid %d", q ? q->pid : 0);
}

static void shm_close(struct dfccl_comm *c)
{
    if (c->shm && c->shm->beating) /* before the segment goes: the thread writes into it */
        eng_beat_stop(c);
    free(c->shm);
    c->shm = NULL;
    if (c->segs) {
        for (int p = 0; p < c->nranks; p++)
            if (c->segs[p])
                munmap(c->segs[p], c->seg_size);
        free(c->segs);
        c->segs = NULL;
    }
    free(c->conns);
    c->conns = NULL;
}

/* Ranks on one host reach each other through shared memory, unless one of them asked for
 * the net (DFCCL_NET=ucx). */
static int shm_reaches(const eng_tp_card_t *a, const eng_tp_card_t *b)
{
    return !a->net_only && !b->net_only && strncmp(a->host, b->host, sizeof(a->host)) == 0;
}

static void shm_describe(const struct dfccl_comm *c, int p, char *buf, size_t len)
{
    snprintf(buf, len, "shm (segment of pid %d mapped)", c->shm ? c->shm->peer[p].pid : 0);
}

/* A shared-memory peer's header is its own, mapped here: live, nothing to ask. */
static const eng_seg_hdr_t *shm_published(const struct dfccl_comm *c, int p)
{
    return c->segs && c->segs[p] ? eng_seg_hdr(c, p) : NULL;
}

/* The mark goes straight into each peer's header (the first mark stays): in the line its
 * owner reads at every call. */
static void shm_tell(struct dfccl_comm *c)
{
    for (int p = 0; p < c->nranks; p++) {
        if (p == c->rank || !c->segs || !c->segs[p] || (c->tp && c->tp[p] != ENG_TP_SHM))
            continue;
        uint64_t none = 0;
        __atomic_compare_exchange_n(&eng_seg_hdr(c, p)->abort_mark, &none, (uint64_t)c->rank + 1, 0,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
}

const eng_transport_t eng_tp_shm = {.id = ENG_TP_SHM,
                                    .name = "shm",
                                    .gpu_name = "cuda-ipc",
                                    .reaches = shm_reaches,
                                    .connect = shm_connect,
                                    .close = shm_close,
                                    .describe = shm_describe,
                                    .published = shm_published,
                                    .tell = shm_tell};
