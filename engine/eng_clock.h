/* SPDX-License-Identifier: BSD-3-Clause */
/* The one host clock of the library (engine/cpu_wait.c): every wait, timeout, heartbeat
 * and timeline stamp of the engine, the net transport and the GPU backend's host side. */
#ifndef DFCCL_ENG_CLOCK_H
#define DFCCL_ENG_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC, in ns. */
uint64_t eng_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif
