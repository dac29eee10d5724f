/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Are the peers still there? The watch of the component's private exchanges.
 *
 * The engine watches a communicator's peers once it exists (their pids come with their
 * shared-memory segments). Before that, the set-up's exchanges (coll_dfccl_boot.c) and
 * coll_dfccl_check's wait on point-to-point messages, and Open MPI 4.1 (no ULFM) fails
 * none of them when the sender is dead: under mpirun --enable-recovery, or any launcher
 * that leaves the survivors running, a rank killed before the set-up left every other
 * one waiting for it forever. So each process publishes who it is (pid, start time, pid
 * namespace) in the modex at MPI_Init, and an exchange stalled for a while looks at the
 * processes of its same-host peers: one that is gone (or a zombie, or its pid now another
 * process's) ends the exchange with an error naming it. A peer that is only late is never
 * taken for dead. Peers on other hosts, or in another pid namespace, can't be seen from
 * here: there the wait ends only with coll_dfccl_timeout (DFCCL_TIMEOUT), if set.
 */
#include "ompi_config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "ompi/communicator/communicator.h"
#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/mca/pmix/pmix.h"

#include "coll_dfccl.h"

#define WATCH_KEY "dfccl.ident"

enum { PEER_UNKNOWN = 0, PEER_WATCHED, PEER_UNSEEN };

struct mca_coll_dfccl_watch_t {
    int size;
    bool loaded;
    int unseen; /**< peers this process can't watch */
    struct {
        int pid;
        unsigned long long start;
        int how;
    } peer[];
};

/* A process's start time (/proc/<pid>/stat field 22) and state; 0 when unknown. */
static unsigned long long proc_stat(int pid, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
    unsigned long long start = 0;
    char st = 0;
    if (p && sscanf(p + 2, "%c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
                    &st, &start) == 2) {
        if (state)
            *state = st;
        return start;
    }
    return 0;
}

static unsigned long long pid_ns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

void mca_coll_dfccl_watch_publish(void)
{
    /* the component is also opened by ompi_info, where there is no modex */
    if (!ompi_rte_initialized || !opal_pmix.put)
        return;
    char id[96];
    const int pid = (int)getpid();
    snprintf(id, sizeof id, "%d %llu %llu", pid, proc_stat(pid, NULL), pid_ns());
    int rc;
    /* local scope: only same-host peers can look at this process; before the modex's
     * fence (the coll framework is opened before it), so it costs no exchange */
    OPAL_MODEX_SEND_VALUE(rc, OPAL_PMIX_LOCAL, WATCH_KEY, id, OPAL_STRING);
    DFCCL_VERBOSE(rc == OPAL_SUCCESS ? 2 : 1, "process identity %s %s for the peers' watch", id,
                  rc == OPAL_SUCCESS ? "published" : "not published: peers can't watch this process");
}

/* Each peer's identity, at the first look (a stall: never on the fast path). */
static void load(mca_coll_dfccl_watch_t *w, struct ompi_communicator_t *comm)
{
    const unsigned long long my_ns = pid_ns();
    const int me = ompi_comm_rank(comm);
    w->loaded = true;
    for (int i = 0; i < w->size; i++) {
        w->peer[i].how = PEER_UNSEEN;
        if (i == me)
            continue;
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        char *id = NULL;
        int rc = OPAL_ERR_NOT_FOUND;
        if (proc && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags) && opal_pmix.get)
            OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, WATCH_KEY, &proc->super.proc_name, &id, OPAL_STRING);
        int pid = 0;
        unsigned long long start = 0, ns = 0;
        if (rc == OPAL_SUCCESS && id && sscanf(id, "%d %llu %llu", &pid, &start, &ns) == 3 && pid > 0 &&
            ns == my_ns && my_ns) {
            w->peer[i].pid = pid;
            w->peer[i].start = start;
            w->peer[i].how = PEER_WATCHED;
        } else {
            w->unseen++;
        }
        free(id);
    }
}

int mca_coll_dfccl_watch_lost(mca_coll_dfccl_watch_t **wp, struct ompi_communicator_t *comm, int *pid)
{
    mca_coll_dfccl_watch_t *w = *wp;
    if (!w) {
        const int n = ompi_comm_size(comm);
        w = calloc(1, sizeof(*w) + (size_t)n * sizeof(w->peer[0]));
        if (!w)
            return -1; /* looked at again at the next stall */
        w->size = n;
        *wp = w;
    }
    if (!w->loaded)
        load(w, comm);
    for (int i = 0; i < w->size; i++) {
        if (w->peer[i].how != PEER_WATCHED)
            continue;
        const int p = w->peer[i].pid;
        char state = 0;
        const bool gone = kill(p, 0) == -1 && errno == ESRCH;
        const unsigned long long start = gone ? 0 : proc_stat(p, &state);
        /* a zombie is dead (not reaped yet); another start time: the pid was reused */
        if (gone || state == 'Z' || state == 'X' ||
            (start && w->peer[i].start && start != w->peer[i].start)) {
            *pid = p;
            return i;
        }
    }
    return -1;
}

int mca_coll_dfccl_watch_unseen(const mca_coll_dfccl_watch_t *w)
{
    return w && w->loaded ? w->unseen : 0;
}

void mca_coll_dfccl_watch_free(mca_coll_dfccl_watch_t *w)
{
    free(w);
}
