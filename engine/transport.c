/* SPDX-License-Identifier: BSD-3-Clause */
/* What this build has: its transports (transport.h), its CPU backend (eng_cpu.h) and its
 * GPU backend (eng_gpu.h), as table entries that are absent when not built
 * (dfcclGetBuildInfo reports them), and this rank's card for the locality decision
 * (locality.c). */
#include <stdio.h>
#include <string.h>

#include "eng_config.h"
#include "eng_cpu.h"
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

extern const eng_cpu_backend_t eng_cpu_host;
const eng_cpu_backend_t *const eng_cpu = &eng_cpu_host;

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
