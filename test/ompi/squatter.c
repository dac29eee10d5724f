/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile local user for the component suite: watches /dev/shm (inotify) and, for
 * every dfccl segment that appears, at once pre-creates the names that the other ranks'
 * segments of that communicator would get if names followed from one another (the
 * same id, a nearby pid, another rank number). Runs until killed; prints how many names
 * it created.
 *
 *   squatter
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term; /* no SA_RESTART: the read returns and the loop ends */
    sigaction(SIGTERM, &sa, NULL);
    int in = inotify_init();
    if (in < 0 || inotify_add_watch(in, "/dev/shm", IN_CREATE) < 0) {
        perror("inotify");
        return 1;
    }
    long made = 0;
    char buf[8192];
    static char seen[256][64]; /* ids already squatted: its own names don't set it off again */
    int nseen = 0;
    while (!stop) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n <= 0)
            break;
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            int pid, rank;
            char id[64];
            int known = 0;
            if (e->len && sscanf(e->name, "dfccl-%d-%63[0-9a-f]-%d", &pid, id, &rank) == 3) {
                for (int i = 0; i < 256 && !known; i++)
                    known = !strcmp(seen[i], id);
                if (!known)
                    snprintf(seen[nseen++ % 256], sizeof(seen[0]), "%s", id);
            } else {
                known = 1;
            }
            if (!known)
                for (int d = -4; d <= 4; d++)
                    for (int r = 0; r < 8; r++) {
                        char name[160];
                        snprintf(name, sizeof(name), "/dev/shm/dfccl-%d-%s-%d", pid + d, id, r);
                        int fd = open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
                        if (fd >= 0) {
                            close(fd);
                            made++;
                        }
                    }
            p += sizeof(*e) + e->len;
        }
    }
    printf("squatter: %ld names created\n", made);
    return 0;
}
