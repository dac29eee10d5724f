/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's unit tests (Check), one suite a file, run together by check_engine.c.
 * A new test goes into the file of the part it tests (test/README.md); a new part gets
 * a file of its own, its suite declared here and added in check_engine.c's main. */
#ifndef DFCCL_CHECK_ENGINE_H
#define DFCCL_CHECK_ENGINE_H

#include <check.h>

Suite *check_queue_suite(void);     /* check_queue.c: the submission ring, the scheduler */
Suite *check_reduce_suite(void);    /* check_reduce.c: the reductions */
Suite *check_algo_sim_suite(void);  /* check_algo_sim.c: the algorithms run on simulated ranks */
Suite *check_algo_plan_suite(void); /* check_algo_plan.c: the algorithms' plans */
Suite *check_net_suite(void);       /* check_net.c: net landing, the locality decision */
Suite *check_trace_suite(void);     /* check_trace.c: DFCCL_TRACE and its files */
Suite *check_settings_suite(void);  /* check_settings.c: the table of settings */
Suite *check_sig_suite(void);       /* check_sig.c: the mismatch diagnosis over descriptions */

#endif
