/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport as the engine sees it (ucx_transport/). For a peer on the net the
 * connections keep exactly the layout of the shared-memory transport: the daemon writes
 * steps into a local shadow of the peer's FIFOs, and the proxy thread puts them into the
 * peer's real FIFOs with UCX (data, then a fence, then the step counter); the receiver's
 * `consumed` counter travels back the same way. The algorithms never know. Built
 * without UCX, engine/net_none.c answers "no net transport". */
#ifndef DFCCL_ENG_NET_H
#define DFCCL_ENG_NET_H

#include <stdint.h>

#include "dfccl.h"

struct dfccl_comm;

/* 1 when this build has the UCX transport. */
int eng_net_built(void);

/* Collective over the communicator's ranks (every rank calls it when any pair of ranks
 * is on the net). is_net[p]: peer p is reached over the net. Points the connections to
 * net peers at local shadows and registers the communicator with the proxy thread. */
dfcclResult_t eng_net_comm_setup(struct dfccl_comm *c, const uint8_t *is_net, dfcclAllgatherFn_t ag,
                                 void *ctx);

/* Local: unregisters from the proxy, releases endpoints, registrations and shadows. */
void eng_net_comm_teardown(struct dfccl_comm *c);

#endif
