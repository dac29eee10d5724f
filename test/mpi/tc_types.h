/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers (test_common.h): dfccl's element types and operations as the tests see
 * them: names, sizes, which op is valid for which type, half and bfloat16 by hand, and
 * one element loaded or stored as an integer or a double. */
#ifndef DFCCL_TC_TYPES_H
#define DFCCL_TC_TYPES_H

#include "tc_base.h"

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

#endif /* DFCCL_TC_TYPES_H */
