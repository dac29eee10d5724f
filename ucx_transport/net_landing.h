/* SPDX-License-Identifier: BSD-3-Clause */
/* Receiver side of a net connection: steps land in any order (a rendezvous step may
 * finish after the eager one behind it), and the step counter the daemon reads advances
 * over landed steps only, in order. Plain C over the control words, so the unit tests
 * can drive it without UCX. */
#ifndef DFCCL_NET_LANDING_H
#define DFCCL_NET_LANDING_H

#include <stdint.h>

#include "eng_atomic.h"
#include "eng_inline.h"
#include "eng_types.h"

typedef struct {
    uint64_t posted; /* steps published to the daemon */
    uint64_t mask;   /* slots landed beyond them */
} net_landing_t;

/* Is `step` one the sender's credits allow now (published < step + 1 <= published + depth)? */
DFCCL_INLINE int net_in_window(const net_landing_t *l, uint32_t depth, uint64_t step)
{
    return step >= l->posted && step - l->posted < depth;
}

/* Step `step` (bytes long) is in its slot. Returns 1 when the published count moved,
 * 0 when it waits for an earlier step, -1 for a step outside the window the sender's
 * credits allow, or one that landed already (a protocol error: nothing is changed). */
DFCCL_INLINE int net_land(net_landing_t *l, eng_conn_ctrl_t *ctrl, uint32_t depth, uint64_t step,
                          uint64_t bytes)
{
    const uint32_t slot = (uint32_t)(step % depth);
    if (!net_in_window(l, depth, step) || (l->mask & (1ull << slot)))
        return -1;
    ctrl->bytes[slot] = bytes;
    l->mask |= 1ull << slot;
    uint64_t p = l->posted;
    while (l->mask & (1ull << (p % depth))) {
        l->mask &= ~(1ull << (p % depth));
        p++;
    }
    if (p == l->posted)
        return 0;
    l->posted = p;
    dfccl_store_release64(&ctrl->posted, p); /* after the data and the sizes */
    return 1;
}

/* A piece of step `step`, `len` of its `total` bytes, is in its slot (the caller checked
 * net_in_window before copying it there); got[slot] counts the step's bytes landed so far. The step lands
 * (net_land) with its last byte. Returns as net_land, 0 while pieces are missing, -1 for
 * a piece outside the window or one that overfills its step. */
DFCCL_INLINE int net_land_piece(net_landing_t *l, uint64_t *got, eng_conn_ctrl_t *ctrl, uint32_t depth,
                                uint64_t step, uint64_t len, uint64_t total)
{
    const uint32_t slot = (uint32_t)(step % depth);
    if (!net_in_window(l, depth, step) || (l->mask & (1ull << slot)) || got[slot] > total ||
        len > total - got[slot])
        return -1;
    got[slot] += len;
    if (got[slot] < total)
        return 0;
    got[slot] = 0;
    return net_land(l, ctrl, depth, step, total);
}

#endif
