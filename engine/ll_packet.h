/* SPDX-License-Identifier: BSD-3-Clause */
/* The LL one-shot's unit of data: packet i is bytes [8i, 8i+8) of a user buffer, read or
 * written by the one thread that owns it. User buffers may have any alignment and any
 * length, so the packet at the end, or an unaligned one, goes byte by byte (zero-padded
 * on the way in, never written past the end on the way out). Shared by both backends'
 * primitives. On the GPU the loads bypass L1 (DFCCL_LOAD, as every other read of a user
 * buffer there): the daemon kernel never ends, so an SM's L1 may still hold a line of a
 * buffer it read in an earlier collective that the host or another process has since
 * rewritten. With plain loads, in-place allreduces on reused buffers return the buffer's
 * earlier bytes (t_gpu reuse and t_colls_dev through MPI fail; measured 2026-12-01, see
 * the git history of bench/RESULTS.md). */
#ifndef DFCCL_LL_PACKET_H
#define DFCCL_LL_PACKET_H

#include <stdint.h>
#include <string.h>

#include "eng_inline.h"

DFCCL_INLINE uint64_t eng_ll_packet_load(const void *buf, uint64_t bytes, uint64_t i)
{
    const unsigned char *s = (const unsigned char *)buf + 8 * i;
    const uint64_t left = bytes - 8 * i;
    if (left >= 8 && ((uintptr_t)s & 7) == 0)
        return (uint64_t)DFCCL_LOAD((const unsigned long long *)s);
    uint64_t v = 0;
    const unsigned n = left < 8 ? (unsigned)left : 8u;
    for (unsigned k = 0; k < n; k++)
        v |= (uint64_t)DFCCL_LOAD(&s[k]) << (8 * k);
    return v;
}

DFCCL_INLINE void eng_ll_packet_store(void *buf, uint64_t bytes, uint64_t i, uint64_t v)
{
    unsigned char *d = (unsigned char *)buf + 8 * i;
    const uint64_t left = bytes - 8 * i;
    if (left >= 8 && ((uintptr_t)d & 7) == 0) {
        *(uint64_t *)d = v;
        return;
    }
    const unsigned n = left < 8 ? (unsigned)left : 8u;
    for (unsigned k = 0; k < n; k++)
        d[k] = (unsigned char)(v >> (8 * k));
}

#endif
