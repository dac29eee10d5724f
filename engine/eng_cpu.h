/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's view of the CPU backend (cpu/): the calls through which communicators
 * and requests reach the host daemon threads, as eng_gpu.h is the view of cuda/. Every
 * build has it (transport.c): it runs what is on host memory, and everything in CI. */
#ifndef DFCCL_ENG_CPU_H
#define DFCCL_ENG_CPU_H

#include <stdint.h>

#include "dfccl.h"
#include "eng_types.h"

struct dfccl_comm;
struct dfccl_request;

typedef struct eng_cpu_backend {
    /* Every communicator holds the daemon from its creation to its destroy: the first
     * acquire starts the worker threads (DFCCL_CPU_THREADS), the last release stops them. */
    dfcclResult_t (*acquire)(void);
    void (*release)(void);
    /* Submit a collective (ENG_SQ_COLL: assigns its sequence number) or a destroy marker. */
    dfcclResult_t (*submit)(uint32_t kind, struct dfccl_comm *comm, const eng_coll_args_t *args,
                            struct dfccl_request *req);
    /* Wait for a completion word, sleeping when it takes long. */
    void (*wait)(struct dfccl_request *req);
    /* Fail whatever is still pending on c, in submission order, and wait until no worker
     * holds anything of it. Returns the sequence number of the first collective it
     * failed, or c's count of collectives when none was pending. */
    uint64_t (*destroy)(struct dfccl_comm *c);
    /* A request's deferred wake of the daemon (wake_due), done now. */
    void (*kick)(struct dfccl_request *req);
} eng_cpu_backend_t;

extern const eng_cpu_backend_t *const eng_cpu;

#endif
