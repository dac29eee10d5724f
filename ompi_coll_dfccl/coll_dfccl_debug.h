/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Logging of the dfccl coll component: one opal_output stream opened in the
 * component's open, its verbosity set by coll_dfccl_verbose. Levels: 1 set-up and
 * teardown, 2 per-communicator engine events, 3 one line per collective call (the
 * path it took), 5 why a call could not run on the engine. Errors always print.
 */
#ifndef MCA_COLL_DFCCL_DEBUG_H
#define MCA_COLL_DFCCL_DEBUG_H

#include "ompi_config.h"

#include "opal/util/output.h"

extern int mca_coll_dfccl_output;

#define DFCCL_VERBOSE(_lvl, _fmt, ...)                                                                       \
    opal_output_verbose((_lvl), mca_coll_dfccl_output, "%s:%d - %s() " _fmt, __FILE__, __LINE__, __func__,   \
                        ##__VA_ARGS__)

/* Level 0 prints whatever coll_dfccl_verbose is. */
#define DFCCL_WARN(_fmt, ...)                                                                                \
    opal_output_verbose(0, mca_coll_dfccl_output, "%s:%d - %s() WARNING: " _fmt, __FILE__, __LINE__,         \
                        __func__, ##__VA_ARGS__)
#define DFCCL_ERROR(_fmt, ...)                                                                               \
    opal_output_verbose(0, mca_coll_dfccl_output, "%s:%d - %s() ERROR: " _fmt, __FILE__, __LINE__, __func__, \
                        ##__VA_ARGS__)

#endif /* MCA_COLL_DFCCL_DEBUG_H */
