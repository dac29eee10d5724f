/* SPDX-License-Identifier: BSD-3-Clause */
/* The table of dfccl's settings, one row per setting (as UCX's ucs_config_field_t): its
 * DFCCL_* variable, its dfcclConfig_t field and Open MPI parameter where it has them,
 * default, unit, help and parser. The engine reads the environment and the fields from
 * it (config.c), dfcclGetConfigEntry and dfccl-info list it, and the Open MPI component
 * registers its coll_dfccl_* parameters from it: the one interface of the engine's
 * that the component includes, exported from libdfccl (C, no engine types). */
#ifndef DFCCL_SETTING_H
#define DFCCL_SETTING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dfccl_setting dfccl_setting_t;

struct dfccl_setting {
    const char *env;   /* the environment variable, e.g. "DFCCL_SLOTS" */
    const char *mca;   /* the Open MPI parameter is coll_dfccl_<mca>; NULL: none */
    const char *field; /* its dfcclConfig_t field; NULL: environment only */
    size_t off;        /* offsetof(dfcclConfig_t, field) */
    int wide;          /* the field is an int64_t, else an int32_t */
    const char *def;   /* the default, as the user writes it */
    const char *unit;  /* the unit, or the words it takes */
    const char *help;  /* what it does, one line (dfccl-info) */
    const char *more;  /* what the Open MPI parameter's help says besides; NULL: nothing */
    uint64_t min, max; /* an integer's range */
    /* word settings take one of words; the value is the word's index, which is also the
     * field's enum value; NULL: an integer */
    const char *const *words;
    /* text -> value: 0, or -1 when the text is not a value of this setting; NULL: the
     * setting is read where it is used, not by the configuration (DFCCL_HOST, ...) */
    int (*parse)(const dfccl_setting_t *s, const char *text, uint64_t *out);
};

/* Row i (0, 1, ...) of the table; NULL past the last. */
const dfccl_setting_t *dfccl_setting(int i);

/* What a setting takes, as an error message says it after "expected" ("an integer in
 * [1, 64]", "auto or ucx") into buf; returns buf. */
const char *dfccl_setting_expect(const dfccl_setting_t *s, char *buf, size_t len);

/* The edit distance of a's first la characters and b, capped at 9: how close a
 * misspelled name is to a setting's (the "did you mean" of unknown names). */
int dfccl_name_distance(const char *a, size_t la, const char *b);

#ifdef __cplusplus
}
#endif

#endif
