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
 */
#ifndef DFCCL_TEST_COMMON_H
#define DFCCL_TEST_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "dfccl.h"
#include "dfccl_mpi.h"

/* ---------------------------------------------------------------- process state */

static int tc_rank = -1; /* rank in MPI_COMM_WORLD, for messages */
static int tc_size = 0;

static inline void tc_init_world(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &tc_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tc_size);
    setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline void tc_abort(void)
{
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

#define TC_FAIL(...)                                                                                         \
    do {                                                                                                     \
        fprintf(stderr, "[rank %d] FAIL %s:%d: ", tc_rank, __FILE__, __LINE__);                              \
        fprintf(stderr, __VA_ARGS__);                                                                        \
        fprintf(stderr, "\n");                                                                               \
        tc_abort();                                                                                          \
    } while (0)

/* Any dfccl call that must succeed. */
#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        dfcclResult_t tc_r_ = (call);                                                                        \
        if (tc_r_ != dfcclSuccess) {                                                                         \
            fprintf(stderr, "[rank %d] FAIL %s:%d: %s returned %d (%s): %s\n", tc_rank, __FILE__, __LINE__,  \
                    #call, (int)tc_r_, dfcclGetErrorString(tc_r_), dfcclGetLastError());                     \
            tc_abort();                                                                                      \
        }                                                                                                    \
    } while (0)

/* Any MPI call that must succeed. */
#define MPI_CHECK(call)                                                                                      \
    do {                                                                                                     \
        int tc_m_ = (call);                                                                                  \
        if (tc_m_ != MPI_SUCCESS) {                                                                          \
            fprintf(stderr, "[rank %d] FAIL %s:%d: %s returned MPI error %d\n", tc_rank, __FILE__, __LINE__, \
                    #call, tc_m_);                                                                           \
            tc_abort();                                                                                      \
        }                                                                                                    \
    } while (0)

static inline void *tc_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        TC_FAIL("out of memory allocating %zu bytes", bytes);
    return p;
}

/* ------------------------------------------------------------------ randomness */

static inline uint64_t tc_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct {
    uint64_t s;
} tc_rng_t;

static inline void tc_rng_seed(tc_rng_t *g, uint64_t seed)
{
    g->s = tc_mix(seed ^ 0x5eed5eedull);
}
static inline uint64_t tc_rng_next(tc_rng_t *g)
{
    g->s += 0x9e3779b97f4a7c15ull;
    uint64_t z = g->s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* uniform in [0, n) (n > 0) */
static inline uint64_t tc_rng_below(tc_rng_t *g, uint64_t n)
{
    return tc_rng_next(g) % n;
}

static inline void tc_shuffle_int(tc_rng_t *g, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)tc_rng_below(g, (uint64_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ----------------------------------------------------- half / bfloat16 helpers */

/* float -> IEEE binary16, round to nearest even (NaN stays NaN, overflow -> inf) */
static inline uint16_t tc_f2h(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xffu)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        unsigned shift = (unsigned)(14 - e);
        uint32_t h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is correct, up to inf */
    return (uint16_t)(sign | h);
}

static inline float tc_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        float f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* float -> bfloat16, round to nearest even */
static inline uint16_t tc_f2bf(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static inline float tc_bf2f(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---------------------------------------------------------- type / op metadata */

#define TC_COPY ((dfcclRedOp_t)-1) /* "op" used to generate data of non-reducing collectives */

static const dfcclDataType_t tc_all_types[] = {dfcclInt8,    dfcclUint8,  dfcclInt32,   dfcclUint32,
                                               dfcclInt64,   dfcclUint64, dfcclFloat16, dfcclBfloat16,
                                               dfcclFloat32, dfcclFloat64};
#define TC_NTYPES 10
static const dfcclRedOp_t tc_all_ops[] = {dfcclSum,  dfcclProd, dfcclMax, dfcclMin,
                                          dfcclBand, dfcclBor,  dfcclBxor};
#define TC_NOPS 7

static inline const char *tc_type_name(dfcclDataType_t t)
{
    static const char *const n[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                    "uint64", "float16", "bfloat16", "float32", "float64"};
    return (int)t >= 0 && (int)t < TC_NTYPES ? n[t] : "?type";
}

static inline const char *tc_op_name(dfcclRedOp_t op)
{
    static const char *const n[] = {"sum", "prod", "max", "min", "band", "bor", "bxor"};
    if (op == TC_COPY)
        return "-";
    return (int)op >= 0 && (int)op < TC_NOPS ? n[op] : "?op";
}

static inline size_t tc_type_size(dfcclDataType_t t)
{
    switch (t) {
    case dfcclInt8:
    case dfcclUint8: return 1;
    case dfcclFloat16:
    case dfcclBfloat16: return 2;
    case dfcclInt32:
    case dfcclUint32:
    case dfcclFloat32: return 4;
    case dfcclInt64:
    case dfcclUint64:
    case dfcclFloat64: return 8;
    default: return 0;
    }
}

static inline int tc_is_float(dfcclDataType_t t)
{
    return t == dfcclFloat16 || t == dfcclBfloat16 || t == dfcclFloat32 || t == dfcclFloat64;
}

static inline int tc_is_signed(dfcclDataType_t t)
{
    return t == dfcclInt8 || t == dfcclInt32 || t == dfcclInt64;
}

static inline int tc_op_valid(dfcclDataType_t t, dfcclRedOp_t op)
{
    if (op == dfcclBand || op == dfcclBor || op == dfcclBxor)
        return !tc_is_float(t);
    return (int)op >= 0 && (int)op < TC_NOPS;
}

static inline uint64_t tc_width_mask(dfcclDataType_t t)
{
    size_t s = tc_type_size(t);
    return s >= 8 ? ~0ull : ((1ull << (8 * s)) - 1);
}

/* sign-extend the raw bits of an integer element */
static inline int64_t tc_sext(dfcclDataType_t t, uint64_t raw)
{
    switch (t) {
    case dfcclInt8: return (int8_t)(uint8_t)raw;
    case dfcclInt32: return (int32_t)(uint32_t)raw;
    case dfcclInt64: return (int64_t)raw;
    default: return (int64_t)raw; /* unused for unsigned types */
    }
}

/* ------------------------------------------------------ element load and store */

/* raw bits of integer element i (zero-extended) */
static inline uint64_t tc_load_i(const void *buf, dfcclDataType_t t, size_t i)
{
    switch (tc_type_size(t)) {
    case 1: return ((const uint8_t *)buf)[i];
    case 2: return ((const uint16_t *)buf)[i];
    case 4: return ((const uint32_t *)buf)[i];
    default: return ((const uint64_t *)buf)[i];
    }
}

static inline void tc_store_i(void *buf, dfcclDataType_t t, size_t i, uint64_t raw)
{
    switch (tc_type_size(t)) {
    case 1: ((uint8_t *)buf)[i] = (uint8_t)raw; break;
    case 2: ((uint16_t *)buf)[i] = (uint16_t)raw; break;
    case 4: ((uint32_t *)buf)[i] = (uint32_t)raw; break;
    default: ((uint64_t *)buf)[i] = raw; break;
    }
}

static inline double tc_load_f(const void *buf, dfcclDataType_t t, size_t i)
{
    switch (t) {
    case dfcclFloat16: return tc_h2f(((const uint16_t *)buf)[i]);
    case dfcclBfloat16: return tc_bf2f(((const uint16_t *)buf)[i]);
    case dfcclFloat32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

static inline void tc_store_f(void *buf, dfcclDataType_t t, size_t i, double v)
{
    switch (t) {
    case dfcclFloat16: ((uint16_t *)buf)[i] = tc_f2h((float)v); break;
    case dfcclBfloat16: ((uint16_t *)buf)[i] = tc_f2bf((float)v); break;
    case dfcclFloat32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

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

/* ------------------------------------------------- generic collective test cases */

typedef enum {
    TC_ALLREDUCE,
    TC_REDUCE,
    TC_BCAST,
    TC_ALLGATHER,
    TC_REDUCESCATTER,
    TC_ALLTOALL,
    TC_BARRIER,
    TC_NCOLL
} tc_coll_t;

static const char *const tc_coll_names[TC_NCOLL] = {"allreduce",      "reduce",   "bcast",  "allgather",
                                                    "reduce_scatter", "alltoall", "barrier"};

static inline int tc_coll_has_op(tc_coll_t c)
{
    return c == TC_ALLREDUCE || c == TC_REDUCE || c == TC_REDUCESCATTER;
}
static inline int tc_coll_has_root(tc_coll_t c)
{
    return c == TC_REDUCE || c == TC_BCAST;
}
static inline int tc_coll_has_inplace(tc_coll_t c)
{
    return c == TC_ALLREDUCE || c == TC_BCAST || c == TC_ALLGATHER || c == TC_REDUCESCATTER;
}

/* One collective with its buffers. The caller sets coll, t, op (TC_COPY when the
 * collective has none), count, inplace, root, seed, comm, P, me and label; the same
 * fields must be identical on every rank of comm (except me). */
typedef struct {
    tc_coll_t coll;
    dfcclDataType_t t;
    dfcclRedOp_t op;
    size_t count;
    int inplace;
    int root;
    uint64_t seed;
    dfcclComm_t comm;
    int P, me;
    int label;                     /* e.g. the communicator's index, for messages */
    int misalign;                  /* buffers element-aligned but not 16-byte aligned */
    void *send, *recv;             /* owned buffers (send NULL in place where it lives in recv) */
    size_t send_bytes, recv_bytes; /* their sizes (guard zones excluded) */
    void *sendp, *recvp;           /* the pointers passed */
    size_t send_elems, recv_elems;
    dfcclRequest_t req;
} tc_case_t;

/* Guard zones around every case buffer catch writes outside it. Layout:
 * [TC_GUARD bytes][misalignment][data][TC_GUARD bytes], guards filled with TC_GUARD_BYTE. */
#define TC_GUARD      64
#define TC_GUARD_BYTE 0x5C

static inline size_t tc_case_offset(const tc_case_t *c)
{
    size_t es = tc_type_size(c->t);
    return c->misalign ? (es == 1 ? 3 : es) : 0;
}

static inline void *tc_case_alloc(const tc_case_t *c, size_t bytes)
{
    size_t off = tc_case_offset(c);
    unsigned char *base = tc_malloc(bytes + 2 * TC_GUARD + off);
    memset(base, TC_GUARD_BYTE, TC_GUARD + off);
    memset(base + TC_GUARD + off + bytes, TC_GUARD_BYTE, TC_GUARD);
    return base + TC_GUARD + off;
}

static inline void tc_case_release(const tc_case_t *c, void *p)
{
    if (p)
        free((unsigned char *)p - TC_GUARD - tc_case_offset(c));
}

/* number of guard bytes around buffer p (of @p bytes) that were overwritten */
static inline size_t tc_case_guard_check(const tc_case_t *c, const char *which, const void *p, size_t bytes)
{
    if (!p)
        return 0;
    size_t off = tc_case_offset(c), bad = 0;
    const unsigned char *lo = (const unsigned char *)p - TC_GUARD - off;
    const unsigned char *hi = (const unsigned char *)p + bytes;
    for (size_t i = 0; i < TC_GUARD + off; i++)
        if (lo[i] != TC_GUARD_BYTE) {
            if (!bad)
                fprintf(stderr,
                        "[rank %d] OVERRUN coll=%s type=%s op=%s count=%zu comm#%d: %s "
                        "written %zu bytes before its start (0x%02x)\n",
                        tc_rank, tc_coll_names[c->coll], tc_type_name(c->t), tc_op_name(c->op), c->count,
                        c->label, which, TC_GUARD + off - i, lo[i]);
            bad++;
        }
    for (size_t i = 0; i < TC_GUARD; i++)
        if (hi[i] != TC_GUARD_BYTE) {
            if (!bad)
                fprintf(stderr,
                        "[rank %d] OVERRUN coll=%s type=%s op=%s count=%zu comm#%d: %s "
                        "written at byte %zu past its end (0x%02x)\n",
                        tc_rank, tc_coll_names[c->coll], tc_type_name(c->t), tc_op_name(c->op), c->count,
                        c->label, which, i, hi[i]);
            bad++;
        }
    return bad;
}

static inline void tc_case_desc(const tc_case_t *c, char *s, size_t len)
{
    snprintf(s, len, "inplace=%d root=%d misalign=%d nranks=%d comm#%d seed=%llu", c->inplace, c->root,
             c->misalign, c->P, c->label, (unsigned long long)c->seed);
}

static inline void tc_case_setup(tc_case_t *c)
{
    size_t es = tc_type_size(c->t), n = c->count;
    int P = c->P, me = c->me;
    c->send = c->recv = c->sendp = c->recvp = NULL;
    c->send_elems = c->recv_elems = 0;
    c->send_bytes = c->recv_bytes = 0;
    c->req = NULL;
    switch (c->coll) {
    case TC_ALLREDUCE:
        c->send_elems = c->recv_elems = n;
        c->recv = tc_case_alloc(c, c->recv_bytes = n * es);
        if (c->inplace) {
            tc_fill(c->recv, c->t, c->op, c->seed, me, 0, n);
            c->sendp = c->recv;
        } else {
            c->send = tc_case_alloc(c, c->send_bytes = n * es);
            tc_fill(c->send, c->t, c->op, c->seed, me, 0, n);
            tc_poison(c->recv, n * es);
            c->sendp = c->send;
        }
        c->recvp = c->recv;
        break;
    case TC_REDUCE:
        c->send_elems = c->recv_elems = n;
        c->send = tc_case_alloc(c, c->send_bytes = n * es);
        c->recv = tc_case_alloc(c, c->recv_bytes = n * es);
        tc_fill(c->send, c->t, c->op, c->seed, me, 0, n);
        tc_poison(c->recv, n * es);
        c->sendp = c->send;
        c->recvp = c->recv;
        break;
    case TC_BCAST:
        c->send_elems = c->recv_elems = n;
        c->recv = tc_case_alloc(c, c->recv_bytes = n * es);
        if (c->inplace) {
            if (me == c->root)
                tc_fill(c->recv, c->t, TC_COPY, c->seed, me, 0, n);
            else
                tc_poison(c->recv, n * es);
            c->sendp = c->recv;
        } else {
            /* every rank passes a valid sendbuf; only the root's is used */
            c->send = tc_case_alloc(c, c->send_bytes = n * es);
            tc_fill(c->send, c->t, TC_COPY, c->seed, me, 0, n);
            tc_poison(c->recv, n * es);
            c->sendp = c->send;
        }
        c->recvp = c->recv;
        break;
    case TC_ALLGATHER:
        c->send_elems = n;
        c->recv_elems = n * (size_t)P;
        c->recv = tc_case_alloc(c, c->recv_bytes = c->recv_elems * es);
        tc_poison(c->recv, c->recv_elems * es);
        if (c->inplace) {
            c->sendp = (char *)c->recv + (size_t)me * n * es;
            tc_fill(c->sendp, c->t, TC_COPY, c->seed, me, 0, n);
        } else {
            c->send = tc_case_alloc(c, c->send_bytes = n * es);
            tc_fill(c->send, c->t, TC_COPY, c->seed, me, 0, n);
            c->sendp = c->send;
        }
        c->recvp = c->recv;
        break;
    case TC_REDUCESCATTER:
        c->send_elems = n * (size_t)P;
        c->recv_elems = n;
        c->send = tc_case_alloc(c, c->send_bytes = c->send_elems * es);
        tc_fill(c->send, c->t, c->op, c->seed, me, 0, c->send_elems);
        c->sendp = c->send;
        if (c->inplace) {
            c->recvp = (char *)c->send + (size_t)me * n * es;
        } else {
            c->recv = tc_case_alloc(c, c->recv_bytes = n * es);
            tc_poison(c->recv, n * es);
            c->recvp = c->recv;
        }
        break;
    case TC_ALLTOALL:
        c->send_elems = c->recv_elems = n * (size_t)P;
        c->send = tc_case_alloc(c, c->send_bytes = c->send_elems * es);
        c->recv = tc_case_alloc(c, c->recv_bytes = c->recv_elems * es);
        tc_fill(c->send, c->t, TC_COPY, c->seed, me, 0, c->send_elems);
        tc_poison(c->recv, c->recv_elems * es);
        c->sendp = c->send;
        c->recvp = c->recv;
        break;
    default: break;
    }
}

/* Submit; returns the result of the submitting call (no abort). */
static inline dfcclResult_t tc_case_submit_rc(tc_case_t *c)
{
    size_t n = c->count;
    switch (c->coll) {
    case TC_ALLREDUCE: return dfcclAllReduce(c->sendp, c->recvp, n, c->t, c->op, c->comm, &c->req);
    case TC_REDUCE: return dfcclReduce(c->sendp, c->recvp, n, c->t, c->op, c->root, c->comm, &c->req);
    case TC_BCAST: return dfcclBroadcast(c->sendp, c->recvp, n, c->t, c->root, c->comm, &c->req);
    case TC_ALLGATHER: return dfcclAllGather(c->sendp, c->recvp, n, c->t, c->comm, &c->req);
    case TC_REDUCESCATTER: return dfcclReduceScatter(c->sendp, c->recvp, n, c->t, c->op, c->comm, &c->req);
    case TC_ALLTOALL: return dfcclAllToAll(c->sendp, c->recvp, n, c->t, c->comm, &c->req);
    case TC_BARRIER: return dfcclBarrier(c->comm, &c->req);
    default: return dfcclInternalError;
    }
}

static inline void tc_case_submit(tc_case_t *c)
{
    dfcclResult_t r = tc_case_submit_rc(c);
    if (r != dfcclSuccess) {
        char d[160];
        tc_case_desc(c, d, sizeof d);
        TC_FAIL("submit coll=%s type=%s op=%s count=%zu %s returned %d (%s): %s", tc_coll_names[c->coll],
                tc_type_name(c->t), tc_op_name(c->op), c->count, d, (int)r, dfcclGetErrorString(r),
                dfcclGetLastError());
    }
}

static inline size_t tc_case_expect(const tc_case_t *c, const char *part, const void *got, const void *exp,
                                    size_t n)
{
    char d[200];
    tc_case_desc(c, d, sizeof d);
    if (part) {
        size_t l = strlen(d);
        snprintf(d + l, sizeof d - l, " part=%s", part);
    }
    return tc_compare(tc_coll_names[c->coll], c->t, c->op, c->count, d, got, exp, n);
}

/* Check the results of a completed case; returns the number of bad elements
 * (already reported on stderr). Also checks that out-of-place inputs were not
 * modified and that a non-root's reduce recvbuf was not written. */
static inline size_t tc_case_check(const tc_case_t *c)
{
    size_t es = tc_type_size(c->t), n = c->count, bad = 0;
    int P = c->P, me = c->me;
    if (c->coll == TC_BARRIER)
        return 0;
    void *exp = tc_malloc((c->recv_elems > c->send_elems ? c->recv_elems : c->send_elems) * es);
    switch (c->coll) {
    case TC_ALLREDUCE:
        tc_ref_reduce(exp, c->t, c->op, c->seed, P, 0, n);
        bad += tc_case_expect(c, NULL, c->recvp, exp, n);
        if (!c->inplace) {
            tc_fill(exp, c->t, c->op, c->seed, me, 0, n);
            bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, n);
        }
        break;
    case TC_REDUCE:
        if (me == c->root) {
            tc_ref_reduce(exp, c->t, c->op, c->seed, P, 0, n);
            bad += tc_case_expect(c, "root-recvbuf", c->recv, exp, n);
        } else {
            tc_poison(exp, n * es);
            bad += tc_case_expect(c, "nonroot-recvbuf-untouched", c->recv, exp, n);
        }
        tc_fill(exp, c->t, c->op, c->seed, me, 0, n);
        bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, n);
        break;
    case TC_BCAST:
        tc_fill(exp, c->t, TC_COPY, c->seed, c->root, 0, n);
        bad += tc_case_expect(c, NULL, c->recv, exp, n);
        if (!c->inplace) {
            tc_fill(exp, c->t, TC_COPY, c->seed, me, 0, n);
            bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, n);
        }
        break;
    case TC_ALLGATHER:
        for (int r = 0; r < P; r++)
            tc_fill((char *)exp + (size_t)r * n * es, c->t, TC_COPY, c->seed, r, 0, n);
        bad += tc_case_expect(c, NULL, c->recv, exp, c->recv_elems);
        if (!c->inplace) {
            tc_fill(exp, c->t, TC_COPY, c->seed, me, 0, n);
            bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, n);
        }
        break;
    case TC_REDUCESCATTER:
        tc_ref_reduce(exp, c->t, c->op, c->seed, P, (size_t)me * n, n);
        bad += tc_case_expect(c, NULL, c->recvp, exp, n);
        break;
    case TC_ALLTOALL:
        for (int p = 0; p < P; p++)
            tc_fill((char *)exp + (size_t)p * n * es, c->t, TC_COPY, c->seed, p, (size_t)me * n, n);
        bad += tc_case_expect(c, NULL, c->recv, exp, c->recv_elems);
        tc_fill(exp, c->t, TC_COPY, c->seed, me, 0, c->send_elems);
        bad += tc_case_expect(c, "sendbuf-unchanged", c->send, exp, c->send_elems);
        break;
    default: break;
    }
    free(exp);
    bad += tc_case_guard_check(c, "sendbuf", c->send, c->send_bytes);
    bad += tc_case_guard_check(c, "recvbuf", c->recv, c->recv_bytes);
    return bad;
}

static inline void tc_case_free(tc_case_t *c)
{
    tc_case_release(c, c->send);
    tc_case_release(c, c->recv);
    c->send = c->recv = c->sendp = c->recvp = NULL;
}

/* One float-sum allreduce of 100000 elements on comm, whose P ranks number this one
 * me, checked; fails the test with @p what when the result is wrong. */
static inline void tc_checked_allreduce_on(dfcclComm_t comm, int P, int me, const char *what)
{
    tc_case_t c;
    memset(&c, 0, sizeof c);
    c.coll = TC_ALLREDUCE;
    c.t = dfcclFloat32;
    c.op = dfcclSum;
    c.count = 100000;
    c.seed = 42;
    c.comm = comm;
    c.P = P;
    c.me = me;
    tc_case_setup(&c);
    tc_case_submit(&c);
    CHECK(dfcclWait(&c.req));
    if (tc_case_check(&c))
        TC_FAIL("%s gave wrong results", what);
    tc_case_free(&c);
}

/* The same on a communicator of every rank of MPI_COMM_WORLD. */
static inline void tc_checked_allreduce(dfcclComm_t comm, const char *what)
{
    tc_checked_allreduce_on(comm, tc_size, tc_rank, what);
}

/* Pick a random valid (type, op) for collective c. */
static inline void tc_random_type_op(tc_rng_t *g, tc_coll_t c, dfcclDataType_t *t, dfcclRedOp_t *op)
{
    *t = tc_all_types[tc_rng_below(g, TC_NTYPES)];
    if (!tc_coll_has_op(c)) {
        *op = TC_COPY;
        return;
    }
    do
        *op = tc_all_ops[tc_rng_below(g, TC_NOPS)];
    while (!tc_op_valid(*t, *op));
}

/* ------------------------------------------------------------ misc utilities */

static inline void tc_sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Number of /dev/shm entries named dfccl-<pid>-* (pid >= 0) or dfccl-* (pid < 0);
 * the names are printed when @p print is set. */
static inline int tc_shm_count(long pid, int print)
{
    char prefix[64];
    if (pid >= 0)
        snprintf(prefix, sizeof prefix, "dfccl-%ld-", pid);
    else
        snprintf(prefix, sizeof prefix, "dfccl-");
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            if (print)
                fprintf(stderr, "[rank %d] /dev/shm/%s\n", tc_rank, e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Does the last-error text contain @p needle? */
static inline int tc_lasterr_has(const char *needle)
{
    const char *m = dfcclGetLastError();
    return m && strstr(m, needle) != NULL;
}

/* Parse "--name VALUE" (returns the value or NULL) and "--name" (flag) options. */
static inline const char *tc_arg_value(int argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return NULL;
}

static inline int tc_arg_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name))
            return 1;
    return 0;
}

/* Wait for n requests, polling with dfcclTest; if deadline_s > 0 and they are not all
 * complete after deadline_s seconds, print which are not and _exit(3).
 * names[i] (may be NULL) describes request i. Returns the first error met. */
static inline dfcclResult_t tc_wait_deadline(int n, dfcclRequest_t *reqs, double deadline_s,
                                             const char *const *names)
{
    if (deadline_s <= 0)
        return dfcclWaitAll(n, reqs);
    dfcclResult_t first = dfcclSuccess;
    double t0 = MPI_Wtime();
    int left = 0;
    for (int i = 0; i < n; i++)
        left += reqs[i] != NULL;
    long spins = 0;
    while (left > 0) {
        for (int i = 0; i < n; i++) {
            if (!reqs[i])
                continue;
            int done = 0;
            dfcclResult_t r = dfcclTest(&reqs[i], &done);
            if (r != dfcclSuccess && first == dfcclSuccess)
                first = r;
            if (done) {
                left--;
                reqs[i] = NULL;
            }
        }
        if (left == 0)
            break;
        if (MPI_Wtime() - t0 > deadline_s) {
            printf("HANG: not complete after %g s (rank %d, %d of %d requests incomplete)\n", deadline_s,
                   tc_rank, left, n);
            for (int i = 0; i < n; i++)
                if (reqs[i])
                    printf("HANG: rank %d incomplete request %d: %s\n", tc_rank, i,
                           names && names[i] ? names[i] : "?");
            fflush(stdout);
            fflush(stderr);
            _exit(3);
        }
        if (++spins > 64)
            tc_sleep_us(50); /* leave the cores to the daemons */
        else
            sched_yield();
    }
    return first;
}

#endif /* DFCCL_TEST_COMMON_H */
