/* SPDX-License-Identifier: BSD-3-Clause */
/* What a test process holds, from /proc/self: the leak checks of the teardown tests
 * (t_commfree through MPI, t_netkill on the net transport). */
#ifndef DFCCL_TEST_PROC_USAGE_H
#define DFCCL_TEST_PROC_USAGE_H

#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

/* entries of a directory such as /proc/self/fd or /proc/self/task, -1 if unreadable */
static inline int proc_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* resident memory, kB */
static inline long proc_rss_kb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

#endif
