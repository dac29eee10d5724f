/* SPDX-License-Identifier: BSD-3-Clause */
/* CPU-backend primitives of the zero-copy read (algo_read.h). The algorithm runs on a
 * daemon thread of the reading rank's process, so reading a peer's send buffer is one
 * process_vm_readv(2) (Cross Memory Attach) from the peer's process, or a plain copy
 * when the peer is a rank of this same process. A read the kernel refuses (EPERM under
 * a ptrace policy, ENOSYS, a peer in another pid namespace, where its pid means nothing
 * here) makes the reader ask the owner to push its block through the FIFOs instead.
 *
 * The descriptor (eng_block_t, built on the owner's host by eng_read_desc_cpu):
 *   soff   sendbuf's address in the owner's process
 *   sbytes the bytes a reader may read from it
 *   roff   the owner's pid
 *   rbytes the inode of the owner's pid namespace (0: unknown, never read) */
#ifndef DFCCL_PRIMS_CPU_READ_H
#define DFCCL_PRIMS_CPU_READ_H

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "eng_proc.h"
#include "prims_cpu.h"
#include "prims_compose.h"

/* Unit tests: a nonzero return refuses the read of owner's buffer by reader, as a
 * failing system call would (the PUSH path). One per translation unit: the test sets
 * its own, which the algorithms it compiles call. */
static int (*eng_read_test_refuse)(int reader, int owner) __attribute__((unused));

/* eng_pid_ns, looked up once: the read asks at every collective. */
DFCCL_INLINE uint64_t eng_read_pidns(void)
{
    static uint64_t ns; /* a benign race: every thread finds the same value */
    if (!ns)
        ns = eng_pid_ns();
    return ns;
}

/* The owner's descriptor of buf (bytes long), for the CPU daemon. */
DFCCL_INLINE void eng_read_desc_cpu(eng_block_t *d, const void *buf, uint64_t bytes)
{
    d->soff = (uint64_t)(uintptr_t)buf;
    d->sbytes = bytes;
    d->roff = (uint64_t)getpid();
    d->rbytes = eng_read_pidns();
}

/* bytes at offset off of the buffer d describes -> dst: 1, or 0 when it cannot be read
 * (dst may then hold part of it: the PUSH that follows overwrites it). */
DFCCL_INLINE int eng_read_copy_cpu(const eng_block_t *d, uint64_t off, void *dst, uint64_t bytes)
{
    if (!bytes)
        return 1;
    if (!d->rbytes || d->rbytes != eng_read_pidns() || off > d->sbytes || bytes > d->sbytes - off)
        return 0;
    const char *src = (const char *)(uintptr_t)d->soff + off;
    const pid_t pid = (pid_t)d->roff;
    if (pid == getpid()) { /* a rank of this process (threads as ranks) */
        memmove(dst, src, bytes);
        return 1;
    }
    uint64_t done = 0;
    while (done < bytes) { /* the kernel may stop at a page it could not read */
        struct iovec l = {(char *)dst + done, (size_t)(bytes - done)};
        struct iovec rm = {(void *)(src + done), (size_t)(bytes - done)};
        const ssize_t n = process_vm_readv(pid, &l, 1, &rm, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        done += (uint64_t)n;
    }
    return 1;
}

/* Post this rank's descriptor to every peer of mask (each has room). */
DFCCL_DEV_INLINE void prim_read_post_desc(eng_conn_t *conns, int n, uint32_t mask, const eng_chan_view_t *v,
                                          const eng_block_t *desc)
{
    for (int p = 0; p < n; p++)
        if (mask >> p & 1)
            prim_send(&conns[p], v, desc, sizeof(*desc));
}

/* Every peer p of mask (its descriptor's step is there, and it has room for a reply):
 * read this channel's range of p's exported buffer (d->e elements from byte src_off)
 * into dst's block p (elements d->off.. of it), reply DONE, or PUSH where the read is
 * refused, and give the descriptor's step back. Returns the peers replied PUSH. */
DFCCL_DEV_INLINE uint32_t prim_read_pull(eng_conn_t *conns, int n, uint32_t mask, const eng_chan_view_t *v,
                                         const eng_dx_chunk_t *d, uint64_t src_off, char *dst)
{
    uint32_t refused = 0;
    for (int p = 0; p < n; p++) {
        if (!(mask >> p & 1))
            continue;
        eng_conn_t *c = &conns[p];
        eng_block_t desc;
        memcpy(&desc, prim_recv_buf(c, v, sizeof(desc)), sizeof(desc));
        const int ok =
            !(eng_read_test_refuse && eng_read_test_refuse(v->rank, p)) &&
            eng_read_copy_cpu(&desc, src_off, dst + ((uint64_t)p * d->S + d->off) * d->ts, d->e * d->ts);
        prim_recv_done(c);
        prim_send_post(c, v, ok ? 0 : ENG_READ_PUSH);
        refused |= (uint32_t)!ok << p;
    }
    return refused;
}

/* Every peer p of mask (its reply is there): take it. Returns the peers that asked for
 * a PUSH. */
DFCCL_DEV_INLINE uint32_t prim_read_replies(eng_conn_t *conns, int n, uint32_t mask, const eng_chan_view_t *v)
{
    uint32_t push = 0;
    for (int p = 0; p < n; p++) {
        if (!(mask >> p & 1))
            continue;
        push |= (uint32_t)(prim_recv_bytes(&conns[p], v) == ENG_READ_PUSH) << p;
        prim_recv_done(&conns[p]);
    }
    return push;
}

#endif
