/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport's process-wide state (ucx_state.h: the room and its locks) and how a
 * failure spreads: a lost peer or a protocol error sets the communicator's abort words,
 * and the daemons fail its pending collectives. */
#include "eng_log.h"
#include "ucx_state.h"

net_ucx_t net_ucx = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The daemons fail every task of the communicator once they see the word. */
void net_abort(struct eng_net_comm *nc)
{
    for (int i = 0; i < 2; i++)
        if (nc->abort_words[i])
            dfccl_store_release(nc->abort_words[i], (int32_t)dfcclCommAborted);
}

/* Peer p is gone (endpoint error, or its process exited): unless it said goodbye first
 * (it then owes us nothing), the communicator's pending collectives fail. */
void net_peer_lost(struct eng_net_comm *nc, int p, const char *why)
{
    DFCCL_WRITE_ONCE(nc->dead[p], 1); /* read by every proxy */
    if (nc->closing)
        return; /* our own endpoints, closed by our teardown */
    if (peer_closed(nc, p)) {
        dfccl_debug("communicator %016llx (rank %d): peer rank %d left (%s)", (unsigned long long)nc->uid,
                    nc->rank, p, why);
        return;
    }
    if (!net_aborted(nc))
        dfccl_error("communicator %016llx (rank %d): peer rank %d is unreachable over UCX (%s); its pending "
                    "collectives fail",
                    (unsigned long long)nc->uid, nc->rank, p, why);
    net_abort(nc);
}
