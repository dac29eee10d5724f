/* SPDX-License-Identifier: BSD-3-Clause */
/* Why a communicator is aborted: the first reason given is kept for the errors its
 * callers get (eng_comm_why_get, in comm.c, reads it under the registry's lock). Apart
 * from comm.c so that what finds a reason (sig.c's mismatch diagnosis, the peer checks)
 * records it without calling back into the registry. */
#include <stdarg.h>
#include <stdio.h>

#include "eng_atomic.h"
#include "eng_comm.h"
#include "eng_log.h"

void eng_comm_why(struct dfccl_comm *c, int log, const char *fmt, ...)
{
    char msg[sizeof c->why - 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (log)
        dfccl_error("communicator %016llx (rank %d): %s", (unsigned long long)c->uid, c->rank, msg);
    uint32_t empty = 0;
    if (dfccl_cas_relaxed(&c->why_state, &empty, 1)) {
        snprintf(c->why, sizeof c->why, "rank %d: %s", c->rank, msg);
        dfccl_store_release(&c->why_state, 2);
    }
}
