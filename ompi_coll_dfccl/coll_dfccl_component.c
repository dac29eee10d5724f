/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component instance and its MCA parameters (coll_dfccl_*).
 *
 * Each row of the engine's settings table with an MCA name (dfccl_setting.h) is an MCA
 * variable whose default and help are the row's. One set explicitly (command line, file, OMPI_MCA_
 * environment) becomes a set field of the dfcclConfig_t every engine communicator is created with
 * (mca_coll_dfccl_engine_config); one left at its default stays unset there, so that the engine takes its
 * DFCCL_* variable: one given with `mpirun -x` works too.
 */
#include "ompi_config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

#include "coll_dfccl.h"
#include "coll_dfccl_cuda.h"

int mca_coll_dfccl_output = -1;

static int dfccl_register(void);
static int dfccl_open(void);
static int dfccl_close(void);

mca_coll_dfccl_component_t mca_coll_dfccl_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_BASE_VERSION_2_0_0,
                    .mca_component_name = "dfccl",
                    MCA_BASE_MAKE_VERSION(component, DFCCL_MAJOR, DFCCL_MINOR, DFCCL_PATCH),
                    .mca_open_component = dfccl_open,
                    .mca_close_component = dfccl_close,
                    .mca_register_component_params = dfccl_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_NONE},
            .collm_init_query = mca_coll_dfccl_init_query,
            .collm_comm_query = mca_coll_dfccl_comm_query,
        },
    .priority = 78,
    .verbose = 0,
    .enable = true,
    .host_buffers = false,
    .device_staged = false,
    .check = false,
    .fake_device = false,
    .eager = false,
    .device_sync = false,
    .keyval = MPI_KEYVAL_INVALID,
};

/* Open MPI parses an int or bool MCA value loosely ("abc" is 0, "-1" an unsigned 2^64-1,
 * "banana" false): every coll_dfccl_* variable is registered as a string and parsed
 * here, strictly; a value refused is said with its name and turns the component off. */

/* a count: decimal (or 0x hex), optionally k, m or g (x1024, as Open MPI's own ints) */
static bool parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
    if (!s || !*s || *s == '-' || *s == '+' || isspace((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s)
        return false;
    unsigned long long mul = 1;
    if (*end) {
        const char c = (char)tolower((unsigned char)*end);
        mul = c == 'k' ? 1ull << 10 : c == 'm' ? 1ull << 20 : c == 'g' ? 1ull << 30 : 0;
        if (!mul || end[1])
            return false;
    }
    if (v > max / mul)
        return false;
    *out = v * mul;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on", "enabled"};
    static const char *const no[] = {"0", "false", "no", "off", "disabled"};
    for (size_t i = 0; s && i < sizeof(yes) / sizeof(yes[0]); i++)
        if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
            *out = !strcasecmp(s, yes[i]);
            return true;
        }
    return false;
}

static void refuse(const char *name, const char *value, const char *expected)
{
    mca_coll_dfccl_component.bad_params = true;
    opal_output(0,
                "[dfccl] ERROR: MCA parameter coll_dfccl_%s=%s: expected %s; the dfccl coll component is off "
                "in this process",
                name, value, expected);
}

#define NPARAMS 9

/* A coll_dfccl_* name given (mpirun --mca and OMPI_MCA_ reach the processes as OMPI_MCA_
 * variables) that is no parameter of ours: a typo, said with the closest name. */
static void warn_unknown_names(const char *const *names, int n)
{
    extern char **environ;
    static const char prefix[] = "OMPI_MCA_coll_dfccl_";
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, prefix, sizeof(prefix) - 1) || !eq)
            continue;
        char name[64];
        const size_t len = (size_t)(eq - *e) - (sizeof(prefix) - 1);
        snprintf(name, sizeof name, "%.*s", (int)len, *e + sizeof(prefix) - 1);
        const char *best = NULL;
        int best_d = 4; /* suggest only close names */
        bool known = false;
        for (int i = 0; i < n && !known; i++) {
            known = !strcmp(name, names[i]);
            const int d = dfccl_name_distance(name, strlen(name), names[i]);
            if (d < best_d) {
                best_d = d;
                best = names[i];
            }
        }
        if (!known)
            opal_output(0, "[dfccl] WARNING: coll_dfccl_%s is not a dfccl MCA parameter and is ignored%s%s%s",
                        name, best ? " (did you mean coll_dfccl_" : "", best ? best : "", best ? "?)" : "");
    }
}

/* One MCA variable per row of the engine's settings table that has an MCA name, its
 * help the row's with its default, unit and range; a word setting (a transport choice)
 * at level 4 like the switches, a number at 5. */
static void register_knobs(mca_coll_dfccl_component_t *cm)
{
    static char helps[MCA_COLL_DFCCL_MAX_KNOBS][1024];
    const mca_base_component_t *c = &cm->super.collm_version;
    const dfccl_setting_t *row;

    cm->nknobs = 0;
    for (int i = 0; (row = dfccl_setting(i)) != NULL; i++) {
        if (!row->mca || !row->field || cm->nknobs == MCA_COLL_DFCCL_MAX_KNOBS)
            continue;
        mca_coll_dfccl_knob_t *k = &cm->knobs[cm->nknobs];
        char *help = helps[cm->nknobs++];
        char range[64] = "";
        if (!row->words && row->max == UINT64_MAX) /* a count, or auto */
            snprintf(range, sizeof range, ", %llu-%llu", (unsigned long long)row->min, 1ull << 40);
        else if (!row->words)
            snprintf(range, sizeof range, ", %llu-%llu", (unsigned long long)row->min,
                     (unsigned long long)row->max);
        snprintf(help, sizeof helps[0], "%s.%s%s Default %s (%s%s; as %s)", row->help, row->more ? " " : "",
                 row->more ? row->more : "", row->def, row->unit, range, row->env);
        *k = (mca_coll_dfccl_knob_t){.row = row, .str = (char *)row->def};
        k->var_index = mca_base_component_var_register(c, row->mca, help, MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                                       0, row->words ? OPAL_INFO_LVL_4 : OPAL_INFO_LVL_5,
                                                       MCA_BASE_VAR_SCOPE_READONLY, &k->str);
    }
}

/* A knob's value as given, strictly: a count up to its field's width, or one of its words. */
static void parse_knob(mca_coll_dfccl_knob_t *k)
{
    const char *v = k->str ? k->str : "";
    char expected[96];
    if (k->row->words) {
        uint64_t w = 0;
        if (k->row->parse(k->row, v, &w) == 0)
            k->value = w;
        else
            refuse(k->row->mca, v, dfccl_setting_expect(k->row, expected, sizeof expected));
        return;
    }
    if (k->row->max == UINT64_MAX && !strcasecmp(v, "auto")) {
        k->value = ULLONG_MAX; /* the engine's own choice: the field stays unset */
        return;
    }
    const int takes_auto = k->row->max == UINT64_MAX;
    const unsigned long long max = takes_auto ? 1ull << 40 : k->row->wide ? INT64_MAX : INT32_MAX;
    if (!parse_count(v, max, &k->value)) {
        snprintf(expected, sizeof expected, "a non-negative integer up to %llu (k, m, g: x1024)%s", max,
                 takes_auto ? ", or auto" : "");
        refuse(k->row->mca, v, expected);
    }
}

static int dfccl_register(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    const mca_base_component_t *c = &cm->super.collm_version;
    /* priority, verbose and the component's switches (read once) */
    const struct {
        const char *name, *help, *def;
        int level;
        mca_base_var_scope_t scope;
        int *ivar;
        bool *bvar;
        int imax; /* an integer's largest value (0: INT32_MAX) */
    } params[NPARAMS] = {
        {"priority",
         "Priority of the dfccl coll component. Default 78 (above self's 75, so that every collective it "
         "does not take over has a previous module)",
         "78", OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY, &cm->priority, NULL, 0},
        {"verbose",
         "Verbosity of the dfccl coll component: 1 set-up, 2 engine communicators, 3 the path of every "
         "collective call, 5 why a call could not run on the engine. Default 0 (errors only)",
         "0", OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_LOCAL, &cm->verbose, NULL, 0},
        {"enable", "Enable the dfccl coll component. Default 1 (0 or 1)", "1", OPAL_INFO_LVL_3,
         MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->enable, 0},
        {"host_buffers",
         "1: run collectives on host buffers on the engine's CPU backend too; 0: host buffers go to the "
         "previous coll module untouched. Default 0 (0 or 1)",
         "0", OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->host_buffers, 0},
        {"device_staged",
         "1: device buffers are copied to host memory and the previous coll module runs the collective "
         "(what a non-CUDA-aware MPI user does by hand), instead of the engine: a baseline for "
         "measurements. Default 0 (0 or 1)",
         "0", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->device_staged, 0},
        {"check",
         "1: before every collective, compare what each rank passed (collective, byte count, the "
         "datatype's basic types, memory kind, recvcounts, root, op) in one private exchange per call "
         "that never blocks out of order, and fail the call (or its request) with MPI_ERR_ARG on every "
         "rank instead of hanging; the communicator stays usable. With 0 the engine's in-band signatures "
         "find the same mismatches (memory kinds only with host_buffers 1, where both kinds run on the "
         "engine) and abort the communicator. Default 0 (0 or 1)",
         "0", OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->check, 0},
        {"eager",
         "1: start setting up the engine communicator when the MPI communicator is created; 0: at its "
         "first engine call. The set-up never blocks the caller either way (it runs on a thread of its "
         "own; the communicator's engine calls wait for it). Default 0 (0 or 1)",
         "0", OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->eager, 0},
        {"device_sync",
         "1: before each call on device buffers that the GPU daemon runs, wait for the application's "
         "legacy default stream (costs 2-6 us a call with several ranks on one GPU); 0: the application "
         "synchronizes the streams that wrote the buffers, as with any CUDA-aware MPI (synchronous "
         "cudaMemcpy/cudaMemset into them are covered by the SYNC_MEMOPS attribute dfccl sets). Default 0 "
         "(0 or 1)",
         "0", OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, NULL, &cm->device_sync, 0},
        {"fake_device",
         "Testing only: treat every buffer as device memory, so that the device paths run on a machine "
         "without a GPU. 1: they are staged through host copies, as for a communicator without a GPU "
         "part; 2: they are handed to the engine as they are, as the GPU daemon takes them (its scratch "
         "buffers and copies are host ones). Default 0 (0, 1 or 2)",
         "0", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, &cm->fake_device, NULL, 2},
    };

    cm->bad_params = false;
    for (int i = 0; i < NPARAMS; i++) {
        cm->param_str[i] = (char *)params[i].def;
        (void)mca_base_component_var_register(c, params[i].name, params[i].help, MCA_BASE_VAR_TYPE_STRING,
                                              NULL, 0, 0, params[i].level, params[i].scope,
                                              &cm->param_str[i]);
    }
    register_knobs(cm);

    /* every value as given, strictly */
    for (int i = 0; i < NPARAMS; i++) {
        const char *v = cm->param_str[i];
        unsigned long long n = 0;
        if (params[i].ivar) {
            const int imax = params[i].imax ? params[i].imax : INT32_MAX;
            char range[48];
            snprintf(range, sizeof(range), "an integer in [0, %d]", imax);
            if (parse_count(v, (unsigned long long)imax, &n))
                *params[i].ivar = (int)n;
            else
                refuse(params[i].name, v ? v : "", range);
        } else if (!parse_bool(v, params[i].bvar)) {
            refuse(params[i].name, v ? v : "", "0 or 1 (or true/false, yes/no, on/off)");
        }
    }
    for (int i = 0; i < cm->nknobs; i++)
        parse_knob(&cm->knobs[i]);
    if (cm->bad_params)
        cm->enable = false;

    const char *names[NPARAMS + MCA_COLL_DFCCL_MAX_KNOBS];
    for (int i = 0; i < NPARAMS; i++)
        names[i] = params[i].name;
    for (int i = 0; i < cm->nknobs; i++)
        names[NPARAMS + i] = cm->knobs[i].row->mca;
    warn_unknown_names(names, NPARAMS + cm->nknobs);
    return OMPI_SUCCESS;
}

static bool explicitly_set(int var_index);

/* An engine setting's value as the engine will take it: its coll_dfccl_ parameter if set,
 * else its DFCCL_* variable, else its default (the private exchanges' timeout and stall
 * report follow the collectives'). A value the engine would refuse counts as 0 here. */
static long long knob_value(const char *mca)
{
    const mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    for (int i = 0; i < cm->nknobs; i++) {
        const mca_coll_dfccl_knob_t *k = &cm->knobs[i];
        if (strcmp(k->row->mca, mca))
            continue;
        if (explicitly_set(k->var_index))
            return (long long)k->value;
        const char *env = getenv(k->row->env);
        uint64_t v = 0;
        if (!k->row->parse || k->row->parse(k->row, env ? env : k->row->def, &v) != 0)
            return 0;
        return (long long)v;
    }
    return 0;
}

static int dfccl_open(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    mca_coll_dfccl_output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_dfccl_output, cm->verbose);
    OBJ_CONSTRUCT(&cm->lock, opal_mutex_t);
    cm->engine_ready = false;
    cm->active = NULL;
    cm->live = NULL;
    cm->xchg_timeout_ms = knob_value("timeout");
    cm->xchg_stall_ms = knob_value("stall_report");
    if (cm->enable) /* MPI_Init opens the coll framework before its modex: in time */
        mca_coll_dfccl_watch_publish();
    DFCCL_VERBOSE(1, "dfccl coll component %d.%d.%d open: enable %d, priority %d, host_buffers %d",
                  DFCCL_MAJOR, DFCCL_MINOR, DFCCL_PATCH, (int)cm->enable, cm->priority,
                  (int)cm->host_buffers);
    return OMPI_SUCCESS;
}

static int dfccl_close(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    /* before the library is unloaded: nothing of ours may stay in opal_progress, and
     * no engine daemon thread may outlive the code it runs */
    if (cm->shutdown)
        cm->shutdown();
    mca_coll_dfccl_cuda_fini();
    OBJ_DESTRUCT(&cm->lock);
    DFCCL_VERBOSE(1, "dfccl coll component closed");
    opal_output_close(mca_coll_dfccl_output);
    mca_coll_dfccl_output = -1;
    return OMPI_SUCCESS;
}

/* One knob set explicitly: not at its default. */
static bool explicitly_set(int var_index)
{
    mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
    return var_index >= 0 && mca_base_var_get_value(var_index, NULL, &source, NULL) == OPAL_SUCCESS &&
           source != MCA_BASE_VAR_SOURCE_DEFAULT;
}

void mca_coll_dfccl_engine_config(dfcclConfig_t *cfg)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    *cfg = (dfcclConfig_t)DFCCL_CONFIG_INITIALIZER;
    for (int i = 0; i < cm->nknobs; i++) {
        const mca_coll_dfccl_knob_t *k = &cm->knobs[i];
        if (!explicitly_set(k->var_index) || k->value == ULLONG_MAX)
            continue;
        /* fits its field (checked at registration); out of the engine's range: refused there */
        char *field = (char *)cfg + k->row->off;
        if (k->row->wide) {
            const int64_t v = (int64_t)k->value;
            memcpy(field, &v, sizeof(v));
        } else {
            const int32_t v = (int32_t)k->value;
            memcpy(field, &v, sizeof(v));
        }
        if (k->row->words)
            DFCCL_VERBOSE(1, "coll_dfccl_%s=%s", k->row->mca, k->row->words[k->value]);
        else
            DFCCL_VERBOSE(1, "coll_dfccl_%s=%llu: the engine's %s", k->row->mca, k->value, k->row->field);
    }
    /* verbose 2 (engine communicators): let the engine say which transport each peer
     * uses, unless DFCCL_LOG_LEVEL was given */
    if (cm->verbose >= 2 && !getenv("DFCCL_LOG_LEVEL") && !getenv("DFCCL_DEBUG"))
        cfg->logLevel = dfcclLogInfo;
}
