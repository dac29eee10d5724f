/* SPDX-License-Identifier: BSD-3-Clause */
/* Peer transport of the CPU backend: one POSIX shared-memory segment per rank and
 * communicator, holding the FIFOs that peers write into (the receiver owns the memory).
 * Every rank maps every segment, then each rank unlinks its own: from then on nothing
 * is left in /dev/shm even if a rank is killed. Segments of a process killed during
 * the short window before that are removed at the next start (eng_shm_clean_stale:
 * the creator's pid is part of the name). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "eng_comm.h"
#include "eng_log.h"

static void seg_name(char *buf, size_t len, int pid, uint64_t uid, int rank)
{
    snprintf(buf, len, "/dfccl-%d-%016llx-%d", pid, (unsigned long long)uid, rank);
}

void eng_shm_clean_stale(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        int pid;
        if (sscanf(de->d_name, "dfccl-%d-", &pid) != 1 || pid <= 0)
            continue;
        if (kill(pid, 0) == -1 && errno == ESRCH) {
            char name[300];
            snprintf(name, sizeof(name), "/%s", de->d_name);
            if (shm_unlink(name) == 0)
                dfccl_info("removed stale segment %s of dead process %d", name, pid);
        }
    }
    closedir(d);
}

/* All-gather one status word; the result is the worst (lowest) of all ranks. */
static dfcclResult_t bootstrap_status(dfcclAllgatherFn_t ag, void *ctx, int nranks, dfcclResult_t mine)
{
    int32_t *all = malloc(sizeof(int32_t) * (size_t)nranks), st = mine, worst = mine;
    if (!all)
        return dfcclNoMemory;
    if (ag(&st, all, sizeof(st), ctx) != 0) {
        free(all);
        return eng_set_error(dfcclBootstrapError, "dfcclCommInit", "allgather callback failed");
    }
    for (int i = 0; i < nranks; i++)
        if (all[i] < worst)
            worst = all[i];
    free(all);
    if (worst < 0 && mine >= 0)
        eng_set_error((dfcclResult_t)worst, "dfcclCommInit", "a peer failed to set up shared memory");
    return (dfcclResult_t)worst;
}

static void *map_segment(const char *name, size_t size, int create, dfcclResult_t *res)
{
    int fd = shm_open(name, create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
    if (fd < 0) {
        *res = eng_set_error(dfcclSystemError, "dfcclCommInit", "shm_open(%s) failed: %s", name,
                             strerror(errno));
        return NULL;
    }
    if (create && ftruncate(fd, (off_t)size) != 0) {
        *res = eng_set_error(errno == ENOSPC ? dfcclNoMemory : dfcclSystemError, "dfcclCommInit",
                             "ftruncate(%s, %zu) failed: %s", name, size, strerror(errno));
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

dfcclResult_t eng_shm_setup(struct dfccl_comm *c, const int *pids, const uint8_t *is_net,
                            dfcclAllgatherFn_t ag, void *ctx)
{
    const int N = c->nranks;
    const size_t ctrl = eng_conn_ctrl_bytes();
    const size_t conn = ctrl + (size_t)c->depth * c->chunk;
    const size_t nconn = (size_t)c->slots * c->channels * (size_t)N;
    dfcclResult_t res = dfcclSuccess, all;
    char name[128];

    c->seg_size = ENG_PAGE + nconn * conn;
    c->segs = calloc((size_t)N, sizeof(char *));
    c->conns = calloc(nconn, sizeof(eng_conn_t));
    if (!c->segs || !c->conns) {
        res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for %d peers", N);
    } else {
        seg_name(name, sizeof(name), pids[c->rank], c->uid, c->rank);
        c->segs[c->rank] = map_segment(name, c->seg_size, 1, &res);
        if (c->segs[c->rank]) {
            eng_seg_hdr_t *h = eng_seg_hdr(c, c->rank);
            h->magic = ENG_SEG_MAGIC;
            h->arrived = 0;
        }
    }
    /* everyone created its own segment (or someone failed and all give up) */
    all = bootstrap_status(ag, ctx, N, res);
    if (all < 0)
        goto err_unlink;
    for (int p = 0; p < N && res == dfcclSuccess; p++) {
        if (p == c->rank || is_net[p])
            continue; /* net peers: the net transport points their connections at shadows */
        char pname[128];
        seg_name(pname, sizeof(pname), pids[p], c->uid, p);
        c->segs[p] = map_segment(pname, c->seg_size, 0, &res);
    }
    /* everyone mapped every segment: the names can go */
    all = bootstrap_status(ag, ctx, N, res);
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
            }
    c->stats.shm_bytes = c->seg_size;
    return dfcclSuccess;

err_unlink:
    if (c->segs && c->segs[c->rank])
        shm_unlink(name);
err_unmap:
    eng_shm_teardown(c);
    return all < 0 ? all : res;
}

void eng_shm_teardown(struct dfccl_comm *c)
{
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
