/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend's primitives: the only thing that differs between the daemons. The GPU
 * daemon's translation unit includes its own (cuda/cuda_prims.cuh, which defines
 * DFCCL_PRIMS_BACKEND) before the algorithms, so the engine never names cuda/; every
 * other one gets the CPU's. */
#ifndef DFCCL_PRIMS_H
#define DFCCL_PRIMS_H

#ifndef DFCCL_PRIMS_BACKEND
#ifdef __CUDACC__
#error "include cuda/cuda_prims.cuh before the algorithms"
#endif
#include "prims_cpu.h"
#include "prims_compose.h"
#include "prims_cpu_dx.h"
#include "prims_cpu_read.h"
#endif

#endif
