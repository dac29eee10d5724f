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

/* Is `step` one the sender's credits allow now? Not published yet (published <= step), and
 * its slot read by the daemon: the sender holds credit for a step below consumed + depth
 * only, so a later one would overwrite a slot the daemon may still be reading. `consumed`
 * is read with acquire: the daemon's reads of the slot come before the overwrite. */
DFCCL_INLINE int net_in_window(const net_landing_t *l, const eng_conn_ctrl_t *ctrl, uint32_t depth,
                               uint64_t step)
{
    const uint64_t consumed = dfccl_load_acquire64(&ctrl->consumed);
    return step >= l->posted && step - consumed < depth;
}

/* A credit from the receiver: it has consumed `credit` steps of the `sent` this side sent,
 * and the sender's credits stand at `consumed`. Returns 1 when it moves them, 0 for one
 * no newer (nothing to do), -1 for steps never sent (a protocol error). */
DFCCL_INLINE int net_credit(uint64_t consumed, uint64_t sent, uint64_t credit)
{
    if (credit > sent)
        return -1;
    return credit > consumed;
}

/* A message names its communicator by the receiver's table index `id`, which a stray or
 * forged message could guess, and its random `key`, which it cannot: both must match
 * (1), else the message is dropped. */
DFCCL_INLINE int net_addressed(uint32_t id, uint64_t key, uint32_t msg_id, uint64_t msg_key)
{
    return id == msg_id && key == msg_key;
}

/* Does a step's message fit its connection (the window aside: net_in_window)? A piece of
 * `length` bytes at `off` of a `total`-byte step within the FIFO's `rchunk`; a rendezvous
 * one carries the whole step. A step that goes by put (comm_put: the connection takes
 * puts and the step is not under put_min, below which steps go as messages) must come
 * as a put's header (put: no payload, whole), and any other step as active messages: a
 * put's bytes land without the receiver, an active message's through its copy, and
 * device FIFOs take no copy from the proxy. */
DFCCL_INLINE int net_step_fits(uint64_t total, uint64_t off, uint64_t length, uint64_t rchunk, int rndv,
                               int put, int comm_put)
{
    if (total > rchunk || off > total || length > total - off || (rndv && length != total))
        return 0;
    if (put != comm_put)
        return 0;
    return !put || (!length && !rndv && !off);
}

/* Step `step` is in its slot; `word` is its size word as the sender's daemon wrote it
 * (its bytes, and above them the tag of its collective's signature: eng_step_word), which
 * the receiver's daemon checks against its own before it takes the step, as it does for a
 * step a shared-memory peer posted. Returns 1 when the published count moved, 0 when it
 * waits for an earlier step, -1 for a step outside the window the sender's credits allow,
 * or one that landed already (a protocol error: nothing is changed). */
DFCCL_INLINE int net_land(net_landing_t *l, eng_conn_ctrl_t *ctrl, uint32_t depth, uint64_t step,
                          uint64_t word)
{
    const uint32_t slot = (uint32_t)(step % depth);
    if (!net_in_window(l, ctrl, depth, step) || (l->mask & (1ull << slot)))
        return -1;
    ctrl->bytes[slot] = word;
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
 * net_in_window before copying it there); got[slot] counts the step's bytes landed so
 * far. The step lands (net_land) with its last byte, its size word carrying `tag` (every
 * piece's header carries the step's). Returns as net_land, 0 while pieces are missing, -1
 * for a piece outside the window or one that overfills its step. */
DFCCL_INLINE int net_land_piece(net_landing_t *l, uint64_t *got, eng_conn_ctrl_t *ctrl, uint32_t depth,
                                uint64_t step, uint64_t len, uint64_t total, uint32_t tag)
{
    const uint32_t slot = (uint32_t)(step % depth);
    if (!net_in_window(l, ctrl, depth, step) || (l->mask & (1ull << slot)) || got[slot] > total ||
        len > total - got[slot])
        return -1;
    got[slot] += len;
    if (got[slot] < total)
        return 0;
    got[slot] = 0;
    return net_land(l, ctrl, depth, step, total | (uint64_t)tag << 32);
}

#endif
