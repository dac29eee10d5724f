/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared helpers of the multi-process (MPI) tests of dfccl.
 *
 * Data model: element i of rank r's input is a deterministic function
 * tc_val(type, op, seed, r, i) of the rank and the index, chosen so that every
 * reduction stays exact in every element type (small integers, powers of two for
 * products of floating types, full-range bit patterns for integer types whose
 * arithmetic wraps). A reference result is computed on the host by evaluating the
 * same function for every rank; buffers are compared element by element.
 *
 * Everything here is static inline: each test program is a single translation unit.
 * The helpers are in four headers by idea, each including the one before:
 *   tc_base.h   the process, checking macros, randomness, small utilities
 *   tc_types.h  element types and operations, half/bfloat16, element load/store
 *   tc_data.h   the data model, the reference result, the comparison
 *   tc_case.h   a generic collective case: set up, submit, check, free
 */
#ifndef DFCCL_TEST_COMMON_H
#define DFCCL_TEST_COMMON_H

#include "tc_case.h"

#endif /* DFCCL_TEST_COMMON_H */
