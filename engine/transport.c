/* SPDX-License-Identifier: BSD-3-Clause */
/* What this build has: its transports (transport.h) and its GPU backend (eng_gpu.h), as
 * table entries that are absent when not built (dfcclGetBuildInfo reports them); and the
 * locality decision, which peer each rank reaches through which transport. */
#include <stdio.h>
#include <string.h>

#include "eng_config.h"
#include "eng_gpu.h"
#include "eng_log.h"
#include "transport.h"

extern const eng_transport_t eng_tp_shm;
#ifdef DFCCL_HAVE_UCX
extern const eng_transport_t eng_tp_ucx;
#endif

const eng_transport_t *const eng_transports[ENG_TP_NUM] = {
    [ENG_TP_SHM] = &eng_tp_shm,
#ifdef DFCCL_HAVE_UCX
    [ENG_TP_UCX] = &eng_tp_ucx,
#endif
};

#ifdef DFCCL_HAVE_CUDA
extern const eng_gpu_backend_t eng_gpu_cuda;
const eng_gpu_backend_t *const eng_gpu = &eng_gpu_cuda;
#else
const eng_gpu_backend_t *const eng_gpu = NULL;
#endif

void eng_tp_card(eng_tp_card_t *card)
{
    memset(card, 0, sizeof(*card));
    snprintf(card->host, sizeof(card->host), "%s", eng_config.host);
    card->net_only = eng_config.net_force != 0;
    for (int t = 0; t < ENG_TP_NUM; t++)
        card->built |= eng_transports[t] ? 1u << t : 0;
}

static const eng_tp_card_t *card_of(const eng_tp_card_t *cards, size_t stride, int r)
{
    return (const eng_tp_card_t *)((const char *)cards + (size_t)r * stride);
}

dfcclResult_t eng_tp_pick(const eng_tp_card_t *cards, size_t stride, int nranks, int me, uint8_t *tp,
                          uint32_t *used_p)
{
    uint32_t used = 1u << ENG_TP_SHM; /* every rank's own segment */
    for (int p = 0; p < nranks; p++)
        for (int q = 0; q < nranks; q++) {
            if (p == q) {
                if (p == me)
                    tp[q] = ENG_TP_SHM;
                continue;
            }
            const eng_tp_card_t *a = card_of(cards, stride, p), *b = card_of(cards, stride, q);
            int pick = -1;
            /* the first transport, in the table's order, that reaches the pair and that
             * both ends have */
            for (int t = 0; t < ENG_TP_NUM && pick < 0; t++)
                if (eng_transports[t] && ((a->built & b->built) >> t & 1) && eng_transports[t]->reaches(a, b))
                    pick = t;
            if (pick < 0) {
                /* shm reaches every pair on one host: what is left needs the net */
                const int lacking = a->built >> ENG_TP_UCX & 1 ? q : p;
                return eng_set_error(dfcclUnsupported, "dfcclCommInit",
                                     "rank %d (host '%.64s') must be reached over the net, but its dfccl (or "
                                     "this one) has no UCX transport (configure --with-ucx)",
                                     lacking, card_of(cards, stride, lacking)->host);
            }
            used |= 1u << pick;
            if (p == me)
                tp[q] = (uint8_t)pick;
        }
    *used_p = used;
    return dfcclSuccess;
}

dfcclResult_t dfcclGetBuildInfo(dfcclBuildInfo_t *info)
{
    if (!info)
        return DFCCL_ARG_ERROR("info is NULL");
    memset(info, 0, sizeof(*info));
    info->version = DFCCL_VERSION_CODE;
    info->gpuBackend = eng_gpu != NULL;
    info->netTransport = eng_transports[ENG_TP_UCX] != NULL;
    if (eng_gpu) {
        info->gpuDevices = eng_gpu->describe(info->devices, sizeof(info->devices));
    } else {
        snprintf(info->devices, sizeof(info->devices), "libdfccl was built without CUDA");
        info->gpuDevices = -1;
    }
    return dfcclSuccess;
}
