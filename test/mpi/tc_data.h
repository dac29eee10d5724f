/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers (test_common.h): the data model: every rank's input element as a
 * function of (type, op, seed, rank, index), exact under every reduction, the reference
 * result computed from it on the host, and the element-by-element comparison. */
#ifndef DFCCL_TC_DATA_H
#define DFCCL_TC_DATA_H

#include "tc_types.h"

/* --------------------------------------------------------------- data patterns */

/* Value of element idx of rank's input, for integer types: raw bits. Full-range bit
 * patterns (wrap-around arithmetic is order independent); odd values for prod so
 * that products do not collapse to 0 modulo 2^n. */
static inline uint64_t tc_ival(dfcclDataType_t t, dfcclRedOp_t op, uint64_t seed, int rank, size_t idx)
{
    uint64_t h = tc_mix(seed * 0x100000001b3ull ^ ((uint64_t)(rank + 1) << 40) ^ (uint64_t)idx);
    if (op == dfcclProd)
        h |= 1;
    return h & tc_width_mask(t);
}

/* Value of element idx of rank's input, for floating types: exact values only.
 *   sum:  small integers (multiples of 1/4 for float32/64), partial sums stay exact
 *   prod: +-1, +-2, 0.5 (powers of two); only +-1 for ranks >= 8 to avoid overflow
 *   max/min/copy: integers (or multiples of 1/8) exactly representable in the type */
static inline double tc_fval(dfcclDataType_t t, dfcclRedOp_t op, uint64_t seed, int rank, size_t idx)
{
    uint64_t h = tc_mix(seed * 0x100000001b3ull ^ ((uint64_t)(rank + 1) << 40) ^ (uint64_t)idx);
    switch (op) {
    case dfcclSum:
        if (t == dfcclFloat16)
            return (double)((int)(h % 129) - 64); /* |sum| <= 64*nranks: exact to 2048 */
        if (t == dfcclBfloat16)
            return (double)((int)(h % 33) - 16); /* |sum| <= 16*nranks: exact to 256 */
        return ((double)((int64_t)(h % 4001) - 2000)) * 0.25;
    case dfcclProd: {
        static const double v8[5] = {1.0, -1.0, 2.0, -2.0, 0.5};
        static const double v2[2] = {1.0, -1.0};
        if (rank < 8)
            return v8[h % 5];
        return v2[h % 2];
    }
    default:
        if (t == dfcclFloat16)
            return (double)((int)(h % 4001) - 2000);
        if (t == dfcclBfloat16)
            return (double)((int)(h % 513) - 256);
        return ((double)((int64_t)(h % 2000001) - 1000000)) * 0.125;
    }
}

/* fill n elements of buf with rank's input at global indices idx0 .. idx0+n-1 */
static inline void tc_fill(void *buf, dfcclDataType_t t, dfcclRedOp_t op, uint64_t seed, int rank,
                           size_t idx0, size_t n)
{
    if (tc_is_float(t)) {
        for (size_t i = 0; i < n; i++)
            tc_store_f(buf, t, i, tc_fval(t, op, seed, rank, idx0 + i));
    } else {
        for (size_t i = 0; i < n; i++)
            tc_store_i(buf, t, i, tc_ival(t, op, seed, rank, idx0 + i));
    }
}

/* garbage that differs from every expected value with high probability */
static inline void tc_poison(void *buf, size_t bytes)
{
    memset(buf, 0xA5, bytes);
}

static inline uint64_t tc_iop(dfcclDataType_t t, dfcclRedOp_t op, uint64_t a, uint64_t b)
{
    uint64_t m = tc_width_mask(t);
    switch (op) {
    case dfcclSum: return (a + b) & m;
    case dfcclProd: return (a * b) & m;
    case dfcclMax:
        if (tc_is_signed(t))
            return tc_sext(t, a) >= tc_sext(t, b) ? a : b;
        return a >= b ? a : b;
    case dfcclMin:
        if (tc_is_signed(t))
            return tc_sext(t, a) <= tc_sext(t, b) ? a : b;
        return a <= b ? a : b;
    case dfcclBand: return a & b;
    case dfcclBor: return a | b;
    case dfcclBxor: return a ^ b;
    default: return a;
    }
}

static inline double tc_fop(dfcclRedOp_t op, double a, double b)
{
    switch (op) {
    case dfcclSum: return a + b;
    case dfcclProd: return a * b;
    case dfcclMax: return a >= b ? a : b;
    case dfcclMin: return a <= b ? a : b;
    default: return a;
    }
}

/* Reference: out[i] = op over ranks 0..nranks-1 of input element idx0 + i. */
static inline void tc_ref_reduce(void *out, dfcclDataType_t t, dfcclRedOp_t op, uint64_t seed, int nranks,
                                 size_t idx0, size_t n)
{
    if (tc_is_float(t)) {
        for (size_t i = 0; i < n; i++) {
            double acc = tc_fval(t, op, seed, 0, idx0 + i);
            for (int r = 1; r < nranks; r++)
                acc = tc_fop(op, acc, tc_fval(t, op, seed, r, idx0 + i));
            tc_store_f(out, t, i, acc);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            uint64_t acc = tc_ival(t, op, seed, 0, idx0 + i);
            for (int r = 1; r < nranks; r++)
                acc = tc_iop(t, op, acc, tc_ival(t, op, seed, r, idx0 + i));
            tc_store_i(out, t, i, acc);
        }
    }
}

/* Relative tolerance of a floating type (the inputs keep results exact; this only
 * absorbs a different but legal rounding of intermediate results). */
static inline double tc_tolerance(dfcclDataType_t t)
{
    switch (t) {
    case dfcclFloat16: return 2e-3;
    case dfcclBfloat16: return 1.6e-2;
    case dfcclFloat32: return 1e-5;
    default: return 1e-12;
    }
}

static inline int tc_elem_equal(dfcclDataType_t t, const void *got, const void *exp, size_t i)
{
    if (tc_is_float(t)) {
        double g = tc_load_f(got, t, i), e = tc_load_f(exp, t, i);
        if (g != g || e != e)
            return (g != g) && (e != e);
        if (isinf(e) || isinf(g))
            return g == e;
        double scale = fabs(e) > 1.0 ? fabs(e) : 1.0;
        return fabs(g - e) <= tc_tolerance(t) * scale;
    }
    return tc_load_i(got, t, i) == tc_load_i(exp, t, i);
}

static inline void tc_format_elem(char *s, size_t len, dfcclDataType_t t, const void *buf, size_t i)
{
    if (tc_is_float(t)) {
        if (t == dfcclFloat16 || t == dfcclBfloat16)
            snprintf(s, len, "%.9g (0x%04x)", tc_load_f(buf, t, i), (unsigned)((const uint16_t *)buf)[i]);
        else
            snprintf(s, len, "%.17g", tc_load_f(buf, t, i));
    } else if (tc_is_signed(t)) {
        snprintf(s, len, "%lld (0x%llx)", (long long)tc_sext(t, tc_load_i(buf, t, i)),
                 (unsigned long long)tc_load_i(buf, t, i));
    } else {
        snprintf(s, len, "%llu (0x%llx)", (unsigned long long)tc_load_i(buf, t, i),
                 (unsigned long long)tc_load_i(buf, t, i));
    }
}

/* Compare n elements; on a mismatch print the first few differences with full
 * context and return the number of mismatching elements. */
static inline size_t tc_compare(const char *what, dfcclDataType_t t, dfcclRedOp_t op, size_t count,
                                const char *extra, const void *got, const void *exp, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (tc_elem_equal(t, got, exp, i))
            continue;
        if (bad < 5) {
            char es[64], gs[64];
            tc_format_elem(es, sizeof es, t, exp, i);
            tc_format_elem(gs, sizeof gs, t, got, i);
            fprintf(stderr,
                    "[rank %d] MISMATCH coll=%s type=%s op=%s count=%zu %s rank=%d index=%zu "
                    "expected=%s got=%s\n",
                    tc_rank, what, tc_type_name(t), tc_op_name(op), count, extra ? extra : "", tc_rank, i, es,
                    gs);
        }
        bad++;
    }
    if (bad)
        fprintf(stderr, "[rank %d] MISMATCH coll=%s type=%s op=%s count=%zu %s: %zu of %zu elements differ\n",
                tc_rank, what, tc_type_name(t), tc_op_name(op), count, extra ? extra : "", bad, n);
    return bad;
}

#endif /* DFCCL_TC_DATA_H */
