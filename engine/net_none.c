/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport of a build without UCX: communicators whose ranks span hosts (or
 * DFCCL_NET=ucx) are refused by dfcclCommInit with dfcclUnsupported. */
#include "eng_log.h"
#include "eng_net.h"

int eng_net_built(void)
{
    return 0;
}

dfcclResult_t eng_net_comm_setup(struct dfccl_comm *c, const uint8_t *is_net, dfcclAllgatherFn_t ag,
                                 void *ctx)
{
    (void)c, (void)is_net, (void)ag, (void)ctx;
    return eng_set_error(dfcclUnsupported, "dfcclCommInit",
                         "peers on the net need the UCX transport, which "
                         "this build does not have (configure --with-ucx)");
}

void eng_net_comm_teardown(struct dfccl_comm *c)
{
    (void)c;
}
