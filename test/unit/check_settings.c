/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the table of settings (engine/settings.c): every row is whole, every
 * default is a value of its own setting, names are unique, and the parsers and the
 * "did you mean" distance behave as the error messages and warnings say. */
#include <stdio.h>
#include <string.h>

#include "check_engine.h"
#include "dfccl.h"
#include "dfccl_setting.h"

START_TEST(rows_whole_and_defaults_parse)
{
    const dfccl_setting_t *s;
    int rows = 0, parsed = 0, mca = 0;
    for (int i = 0; (s = dfccl_setting(i)) != NULL; i++, rows++) {
        ck_assert_msg(s->env && !strncmp(s->env, "DFCCL_", 6), "row %d: env %s", i, s->env ? s->env : "NULL");
        ck_assert_msg(s->def && s->unit && s->help && *s->help, "%s: default, unit and help", s->env);
        ck_assert_msg(!s->mca || s->field, "%s: an MCA parameter needs a dfcclConfig_t field", s->env);
        for (int j = 0; j < i; j++) {
            const dfccl_setting_t *o = dfccl_setting(j);
            ck_assert_msg(strcmp(o->env, s->env), "%s twice", s->env);
            ck_assert_msg(!s->mca || !o->mca || strcmp(o->mca, s->mca), "coll_dfccl_%s twice", s->mca);
        }
        mca += s->mca != NULL;
        if (!s->parse)
            continue; /* read where it is used */
        uint64_t v = ~0ull;
        ck_assert_msg(s->parse(s, s->def, &v) == 0, "%s: default %s does not parse", s->env, s->def);
        ck_assert_msg(v >= s->min && v <= s->max, "%s: default out of its range", s->env);
        if (s->words)
            ck_assert_msg(s->words[s->max] && !s->words[s->max + 1], "%s: max is the last word", s->env);
        parsed++;
    }
    ck_assert_int_eq(rows, parsed + 5); /* DFCCL_HOST, _TRACE, _DEBUG, _DEBUG_SUBSYS, _DEBUG_FILE */
    ck_assert_int_eq(mca, 28);          /* the component's coll_dfccl_* engine parameters */
    dfcclConfigEntry_t e;
    ck_assert_int_eq(dfcclGetConfigEntry(rows - 1, &e), dfcclSuccess);
    ck_assert_int_eq(dfcclGetConfigEntry(rows, &e), dfcclInvalidArgument);
}
END_TEST

static const dfccl_setting_t *find(const char *env)
{
    const dfccl_setting_t *s;
    for (int i = 0; (s = dfccl_setting(i)) != NULL; i++)
        if (!strcmp(s->env, env))
            return s;
    return NULL;
}

START_TEST(parsers_and_messages)
{
    const dfccl_setting_t *slots = find("DFCCL_SLOTS"), *net = find("DFCCL_NET");
    ck_assert_ptr_nonnull(slots);
    ck_assert_ptr_nonnull(net);
    uint64_t v = 0;
    ck_assert_int_eq(slots->parse(slots, "0x10", &v), 0);
    ck_assert_uint_eq(v, 16);
    ck_assert_int_eq(slots->parse(slots, "65", &v), -1); /* out of [1, 64] */
    ck_assert_int_eq(slots->parse(slots, "-1", &v), -1);
    ck_assert_int_eq(slots->parse(slots, "4k", &v), -1); /* no suffixes in DFCCL_* */
    ck_assert_int_eq(net->parse(net, "UCX", &v), 0);
    ck_assert_uint_eq(v, 1);
    ck_assert_int_eq(net->parse(net, "tcp", &v), -1);
    char buf[96];
    ck_assert_str_eq(dfccl_setting_expect(slots, buf, sizeof buf), "an integer in [1, 64]");
    ck_assert_str_eq(dfccl_setting_expect(net, buf, sizeof buf), "auto or ucx");
    ck_assert_str_eq(dfccl_setting_expect(find("DFCCL_LOG_LEVEL"), buf, sizeof buf),
                     "error, warn, info, debug or trace");
    /* a count or auto (the per-daemon default, UINT64_MAX) */
    const dfccl_setting_t *rd = find("DFCCL_READ_MIN");
    ck_assert_ptr_nonnull(rd);
    ck_assert_int_eq(rd->parse(rd, "AUTO", &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert_int_eq(rd->parse(rd, "0", &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(rd->parse(rd, "0x100000", &v), 0);
    ck_assert_uint_eq(v, 1048576);
    ck_assert_int_eq(rd->parse(rd, "-1", &v), -1);
    ck_assert_int_eq(rd->parse(rd, "1099511627777", &v), -1); /* past 2^40 */
    ck_assert_str_eq(dfccl_setting_expect(rd, buf, sizeof buf), "auto or an integer in [0, 1099511627776]");
    ck_assert_int_eq(dfccl_name_distance("DFCCL_CHANELS", 13, "DFCCL_CHANNELS"), 1);
    ck_assert_int_eq(dfccl_name_distance("chanels", 7, "channels"), 1);
    ck_assert_int_eq(dfccl_name_distance("slots", 5, "slots"), 0);
}
END_TEST

Suite *check_settings_suite(void)
{
    Suite *s = suite_create("settings");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, rows_whole_and_defaults_parse);
    tcase_add_test(tc, parsers_and_messages);
    suite_add_tcase(s, tc);
    return s;
}
