/* SPDX-License-Identifier: BSD-3-Clause */
/* Heartbeats for same-host peers in another pid namespace (containers sharing /dev/shm
 * but not their pids). A peer's process is watched through its pid where the pid means
 * the same thing to both sides (shm.c, eng_shm_dead_peer); across pid namespaces it
 * does not, so each process bumps a counter in its own segment of every such
 * communicator every ENG_BEAT_NS, from a thread that exists only while one does, and a
 * peer whose counter stands still for ENG_BEAT_DEAD_NS while a collective waits on it
 * is taken for dead. A stopped process (SIGSTOP, a paused container) looks the same, and
 * is taken for dead too: the price of not seeing its pid. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "eng_atomic.h"
#include "eng_comm.h"
#include "eng_log.h"

static pthread_mutex_t beat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dfccl_comm **beating; /* communicators with a peer in another pid namespace */
static int nbeating, cap;
static int running; /* the beating thread runs (it leaves when nbeating drops to 0) */

static void beat_all_locked(void)
{
    for (int i = 0; i < nbeating; i++)
        dfccl_fetch_add_release(&eng_seg_hdr(beating[i], beating[i]->rank)->beat, 1);
}

static void *beat_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&beat_lock);
        if (nbeating == 0) {
            running = 0;
            pthread_mutex_unlock(&beat_lock);
            return NULL;
        }
        beat_all_locked();
        pthread_mutex_unlock(&beat_lock);
        const struct timespec ts = {0, (long)ENG_BEAT_NS};
        nanosleep(&ts, NULL);
    }
}

dfcclResult_t eng_beat_start(struct dfccl_comm *c)
{
    dfcclResult_t res = dfcclSuccess;
    pthread_mutex_lock(&beat_lock);
    if (nbeating == cap) {
        const int ncap = cap ? 2 * cap : 8;
        struct dfccl_comm **nb = realloc(beating, (size_t)ncap * sizeof(*nb));
        if (!nb) {
            res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the heartbeat list");
            goto out;
        }
        beating = nb;
        cap = ncap;
    }
    beating[nbeating++] = c;
    beat_all_locked(); /* a first beat at once */
    if (!running) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, beat_main, NULL) == 0) {
            running = 1;
        } else {
            nbeating--;
            res = eng_set_error(dfcclSystemError, "dfcclCommInit",
                                "could not start the heartbeat thread for peers in another pid namespace");
        }
        pthread_attr_destroy(&at);
    }
out:
    pthread_mutex_unlock(&beat_lock);
    return res;
}

void eng_beat_stop(struct dfccl_comm *c)
{
    pthread_mutex_lock(&beat_lock);
    for (int i = 0; i < nbeating; i++)
        if (beating[i] == c) {
            beating[i] = beating[--nbeating];
            break;
        }
    pthread_mutex_unlock(&beat_lock);
}
