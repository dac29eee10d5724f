/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's own names for the rows of the settings table (settings.c; the row type
 * is dfccl_setting.h's): the configuration (config.c) reads rows 0 to K_COUNT - 1 from
 * the environment and dfcclConfig_t fields; the rows after them are variables read
 * where they are used (the host name, the timeline, the log), listed for dfccl-info and
 * the check of unknown DFCCL_* names. */
#ifndef DFCCL_ENG_SETTINGS_H
#define DFCCL_ENG_SETTINGS_H

#include "dfccl_setting.h"

enum {
    K_PREEMPT,
    K_BASE_NS,
    K_MAX_NS,
    K_GROWTH,
    K_HEAD,
    K_SLOTS,
    K_CHANNELS,
    K_CHUNK,
    K_DEPTH,
    K_ONESHOT,
    K_STALL,
    K_TIMEOUT,
    K_IDLE,
    K_GPU_CHANNELS,
    K_GPU_THREADS,
    K_GPU_IDLE,
    K_GPU_STALL,
    K_GPU,
    K_GPU_CHUNK,
    K_SYS_SCOPE,
    K_LL,
    K_TRACE,
    K_CPU_THREADS,
    K_NET_THREADS,
    K_NET_PIECE,
    K_GPU_NET_CHUNK,
    K_NET,
    K_LEVEL,
    K_DIRECT,
    K_ONESHOT_RANKS,
    K_DIRECT_RANKS,
    K_READ_MIN,
    K_NET_PUT,
    K_LL_WIDE,
    K_NET_PUT_MIN,
    K_COUNT, /* the configuration's rows end here */
    K_HOST = K_COUNT,
    K_TIMELINE,
    K_DEBUG,
    K_DEBUG_SUBSYS,
    K_DEBUG_FILE,
    K_ALL
};

extern const dfccl_setting_t eng_settings[K_ALL];

#endif
