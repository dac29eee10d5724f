/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport of a build without UCX: communicators whose ranks span hosts (or
 * DFCCL_NET=ucx) are refused by dfcclCommInit with dfcclUnsupported. */
#include "eng_log.h"
#include "eng_net.h"

int eng_net_built(void)
{
    return 0;
}

dfcclResult_t eng_net_setup(const eng_net_layout_t *L, dfcclAllgatherFn_t ag, void *ctx, eng_net_t **net_p)
{
    (void)L, (void)ag, (void)ctx;
    *net_p = NULL;
    return eng_set_error(dfcclUnsupported, "dfcclCommInit",
                         "peers on the net need the UCX transport, which "
                         "this build does not have (configure --with-ucx)");
}

char *eng_net_shadow(eng_net_t *net, int p)
{
    (void)net, (void)p;
    return NULL;
}

int eng_net_teardown(eng_net_t *net)
{
    (void)net;
    return 0;
}
