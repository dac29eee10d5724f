/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend's primitives: the only thing that differs between the daemons. */
#ifndef DFCCL_PRIMS_H
#define DFCCL_PRIMS_H

#ifdef __CUDACC__
#include "../cuda/cuda_prims.cuh"
#else
#include "prims_cpu.h"
#endif

#endif
