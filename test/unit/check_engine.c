/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests (Check) of the backend-neutral engine pieces: the submission ring, the
 * scheduler's decisions, the reductions, and every algorithm's state machine driven
 * step by step for N simulated ranks in one process, with injected stalls and context
 * copies, against a reference and against an uninterrupted run. One binary, one suite a
 * file (check_engine.h lists them). */
#include "check_engine.h"

int main(void)
{
    SRunner *sr = srunner_create(check_queue_suite());
    srunner_add_suite(sr, check_reduce_suite());
    srunner_add_suite(sr, check_algo_sim_suite());
    srunner_add_suite(sr, check_algo_plan_suite());
    srunner_add_suite(sr, check_net_suite());
    srunner_add_suite(sr, check_trace_suite());
    srunner_add_suite(sr, check_settings_suite());
    srunner_add_suite(sr, check_sig_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
