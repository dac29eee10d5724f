/* SPDX-License-Identifier: BSD-3-Clause */
/* What each rank gives the bootstrap all-gather when the net transport sets up a
 * communicator: an int32 status, this header, then its proxies' UCX worker addresses in
 * order. In a header of its own so that the hostile test (test/net/t_netstray.c) can
 * reach a rank's workers as a stray peer would. */
#ifndef DFCCL_NET_BOOT_H
#define DFCCL_NET_BOOT_H

#include <stdint.h>

#include "eng_config.h"

typedef struct {
    uint32_t id;  /* this rank's id of the communicator */
    uint64_t key; /* and its key */
    int32_t pid;
    uint32_t npx;                           /* its proxies (workers) */
    uint32_t put;                           /* it asks for steps by put, and its context has RMA */
    uint32_t addr_len[ENG_MAX_NET_THREADS]; /* their addresses follow, in order */
    char host[128]; /* where the process runs: which endpoint a peer gets (where_am_i) */
} net_boot_hdr_t;

#endif
