/* SPDX-License-Identifier: BSD-3-Clause */
/* This process as its peers on the same host see it. */
#ifndef DFCCL_ENG_PROC_H
#define DFCCL_ENG_PROC_H

#include <stdint.h>
#include <sys/stat.h>

/* The inode of this process's pid namespace (0: unknown): a process in another one
 * (containers sharing /dev/shm) sees other pids, so its pids mean nothing here. */
static inline uint64_t eng_pid_ns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

#endif
