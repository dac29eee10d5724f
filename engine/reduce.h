/* SPDX-License-Identifier: BSD-3-Clause */
/* Element-wise reductions dst[i] = a[i] op b[i] for every dfccl type and op. dst may
 * alias a or b (in-place collectives rely on it). Integer arithmetic wraps (done on the
 * unsigned type, so signed overflow is defined). float16 and bfloat16 are reduced in
 * float and rounded back to nearest even, as the GPU does. */
#ifndef DFCCL_REDUCE_H
#define DFCCL_REDUCE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dfccl.h"
#include "eng_inline.h"

/* On the device, the hardware conversions (one instruction each, round to nearest even;
 * a NaN comes back as the canonical one); on the host, the same conversions in integer
 * code. */
DFCCL_INLINE float eng_half_to_float(uint16_t h)
{
#ifdef __CUDA_ARCH__
    float out;
    asm("cvt.f32.f16 %0, %1;" : "=f"(out) : "h"(h));
    return out;
#else
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, f;
    if (exp == 0) {
        if (man == 0) {
            f = sign;
        } else { /* subnormal: normalize */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) {
                man <<= 1;
                exp--;
            }
            f = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 0x1f) {
        f = sign | 0x7f800000u | (man << 13);
    } else {
        f = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float out;
    memcpy(&out, &f, 4);
    return out;
#endif
}

DFCCL_INLINE uint16_t eng_float_to_half(float fv)
{
#ifdef __CUDA_ARCH__
    uint16_t r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(fv));
    return r;
#else
    uint32_t f;
    memcpy(&f, &fv, 4);
    uint32_t sign = (f >> 16) & 0x8000;
    int32_t exp = (int32_t)((f >> 23) & 0xff) - 127 + 15;
    uint32_t man = f & 0x7fffff;
    if (((f >> 23) & 0xff) == 0xff) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    if (exp >= 0x1f)
        return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13), rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++; /* may carry into the exponent, which is the correct rounding */
    return (uint16_t)half;
#endif
}

DFCCL_INLINE float eng_bf16_to_float(uint16_t b)
{
    uint32_t f = (uint32_t)b << 16;
    float out;
    memcpy(&out, &f, 4);
    return out;
}

DFCCL_INLINE uint16_t eng_float_to_bf16(float fv)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint16_t r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(fv));
    return r;
#else
    uint32_t f;
    memcpy(&f, &fv, 4);
    if ((f & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((f >> 16) | 0x40); /* quiet nan */
    f += 0x7fff + ((f >> 16) & 1);
    return (uint16_t)(f >> 16);
#endif
}

#define ENG_OP_SUM(_x, _y)  ((_x) + (_y))
#define ENG_OP_PROD(_x, _y) ((_x) * (_y))
#define ENG_OP_MAX(_x, _y)  ((_x) > (_y) ? (_x) : (_y))
#define ENG_OP_MIN(_x, _y)  ((_x) < (_y) ? (_x) : (_y))
#define ENG_OP_BAND(_x, _y) ((_x) & (_y))
#define ENG_OP_BOR(_x, _y)  ((_x) | (_y))
#define ENG_OP_BXOR(_x, _y) ((_x) ^ (_y))

/* _T: storage type, _A: arithmetic type for sum/prod (unsigned for integers). */
#define ENG_LOOP(_T, _A, _OPM)                                                                               \
    do {                                                                                                     \
        _T *d_ = (_T *)dst;                                                                                  \
        const _T *a_ = (const _T *)a, *b_ = (const _T *)b;                                                   \
        for (size_t i_ = DFCCL_TID; i_ < n; i_ += DFCCL_NTHREADS)                                            \
            d_[i_] = (_T)_OPM((_A)DFCCL_LOAD(&a_[i_]), (_A)DFCCL_LOAD(&b_[i_]));                             \
    } while (0)

#define ENG_HALF_LOOP(_TOF, _FROMF, _OPM)                                                                    \
    do {                                                                                                     \
        uint16_t *d_ = (uint16_t *)dst;                                                                      \
        const uint16_t *a_ = (const uint16_t *)a, *b_ = (const uint16_t *)b;                                 \
        for (size_t i_ = DFCCL_TID; i_ < n; i_ += DFCCL_NTHREADS)                                            \
            d_[i_] = _FROMF(_OPM(_TOF(DFCCL_LOAD(&a_[i_])), _TOF(DFCCL_LOAD(&b_[i_]))));                     \
    } while (0)

#define ENG_LOOP_RET(_T, _A, _OPM)                                                                           \
    do {                                                                                                     \
        ENG_LOOP(_T, _A, _OPM);                                                                              \
        return 0;                                                                                            \
    } while (0)
#define ENG_HALF_LOOP_RET(_TOF, _FROMF, _OPM)                                                                \
    do {                                                                                                     \
        ENG_HALF_LOOP(_TOF, _FROMF, _OPM);                                                                   \
        return 0;                                                                                            \
    } while (0)

/* The op switches, written once for the element loops and the LL packets: _B(_X, _Y, _OPM)
 * reduces with _OPM and returns; for integers (_X, _Y) is (storage type, arithmetic type),
 * for floats (type, type), for halves (to-float, from-float). */
#define ENG_INT_SWITCH(_B, _T, _U, _DEFAULT)                                                                 \
    switch (op) {                                                                                            \
    case dfcclSum: _B(_T, _U, ENG_OP_SUM);                                                                   \
    case dfcclProd: _B(_T, _U, ENG_OP_PROD);                                                                 \
    case dfcclMax: _B(_T, _T, ENG_OP_MAX);                                                                   \
    case dfcclMin: _B(_T, _T, ENG_OP_MIN);                                                                   \
    case dfcclBand: _B(_T, _T, ENG_OP_BAND);                                                                 \
    case dfcclBor: _B(_T, _T, ENG_OP_BOR);                                                                   \
    case dfcclBxor: _B(_T, _T, ENG_OP_BXOR);                                                                 \
    default: _DEFAULT;                                                                                       \
    }

#define ENG_FLOAT_SWITCH(_B, _X, _Y, _DEFAULT)                                                               \
    switch (op) {                                                                                            \
    case dfcclSum: _B(_X, _Y, ENG_OP_SUM);                                                                   \
    case dfcclProd: _B(_X, _Y, ENG_OP_PROD);                                                                 \
    case dfcclMax: _B(_X, _Y, ENG_OP_MAX);                                                                   \
    case dfcclMin: _B(_X, _Y, ENG_OP_MIN);                                                                   \
    default: _DEFAULT;                                                                                       \
    }

/* Returns 0, or -1 for a type/op pair the engine does not reduce (checked at submit). */
DFCCL_INLINE int eng_reduce(void *dst, const void *a, const void *b, size_t n, int dtype, int op)
{
    switch (dtype) {
    case dfcclInt8: ENG_INT_SWITCH(ENG_LOOP_RET, int8_t, uint8_t, return -1)
    case dfcclUint8: ENG_INT_SWITCH(ENG_LOOP_RET, uint8_t, uint8_t, return -1)
    case dfcclInt32: ENG_INT_SWITCH(ENG_LOOP_RET, int32_t, uint32_t, return -1)
    case dfcclUint32: ENG_INT_SWITCH(ENG_LOOP_RET, uint32_t, uint32_t, return -1)
    case dfcclInt64: ENG_INT_SWITCH(ENG_LOOP_RET, int64_t, uint64_t, return -1)
    case dfcclUint64: ENG_INT_SWITCH(ENG_LOOP_RET, uint64_t, uint64_t, return -1)
    case dfcclFloat32: ENG_FLOAT_SWITCH(ENG_LOOP_RET, float, float, return -1)
    case dfcclFloat64: ENG_FLOAT_SWITCH(ENG_LOOP_RET, double, double, return -1)
    case dfcclFloat16: ENG_FLOAT_SWITCH(ENG_HALF_LOOP_RET, eng_half_to_float, eng_float_to_half, return -1)
    case dfcclBfloat16: ENG_FLOAT_SWITCH(ENG_HALF_LOOP_RET, eng_bf16_to_float, eng_float_to_bf16, return -1)
    default: return -1;
    }
}

/* The same reduction by one thread on one 8-byte packet of each side (the LL one-shot's
 * unit: every thread reduces the packets it read itself). Elements past the message's
 * end are reduced too and never stored. */
#define ENG_PK(_T, _A, _OPM)                                                                                 \
    do {                                                                                                     \
        _T x_[8 / sizeof(_T)], y_[8 / sizeof(_T)];                                                           \
        memcpy(x_, &a, 8);                                                                                   \
        memcpy(y_, &b, 8);                                                                                   \
        for (unsigned i_ = 0; i_ < 8 / sizeof(_T); i_++)                                                     \
            x_[i_] = (_T)_OPM((_A)x_[i_], (_A)y_[i_]);                                                       \
        memcpy(&a, x_, 8);                                                                                   \
        return a;                                                                                            \
    } while (0)

#define ENG_PK_HALF(_TOF, _FROMF, _OPM)                                                                      \
    do {                                                                                                     \
        uint16_t x_[4], y_[4];                                                                               \
        memcpy(x_, &a, 8);                                                                                   \
        memcpy(y_, &b, 8);                                                                                   \
        for (unsigned i_ = 0; i_ < 4; i_++)                                                                  \
            x_[i_] = _FROMF(_OPM(_TOF(x_[i_]), _TOF(y_[i_])));                                               \
        memcpy(&a, x_, 8);                                                                                   \
        return a;                                                                                            \
    } while (0)

/* a op b on the packets (the pair was validated at submission) */
DFCCL_INLINE uint64_t eng_reduce_packet(uint64_t a, uint64_t b, int dtype, int op)
{
    switch (dtype) {
    case dfcclInt8: ENG_INT_SWITCH(ENG_PK, int8_t, uint8_t, return a)
    case dfcclUint8: ENG_INT_SWITCH(ENG_PK, uint8_t, uint8_t, return a)
    case dfcclInt32: ENG_INT_SWITCH(ENG_PK, int32_t, uint32_t, return a)
    case dfcclUint32: ENG_INT_SWITCH(ENG_PK, uint32_t, uint32_t, return a)
    case dfcclInt64: ENG_INT_SWITCH(ENG_PK, int64_t, uint64_t, return a)
    case dfcclUint64: ENG_INT_SWITCH(ENG_PK, uint64_t, uint64_t, return a)
    case dfcclFloat32: ENG_FLOAT_SWITCH(ENG_PK, float, float, return a)
    case dfcclFloat64: ENG_FLOAT_SWITCH(ENG_PK, double, double, return a)
    case dfcclFloat16: ENG_FLOAT_SWITCH(ENG_PK_HALF, eng_half_to_float, eng_float_to_half, return a)
    case dfcclBfloat16: ENG_FLOAT_SWITCH(ENG_PK_HALF, eng_bf16_to_float, eng_float_to_bf16, return a)
    default: return a;
    }
}

DFCCL_INLINE int eng_op_valid(int dtype, int op)
{
    if (dtype < 0 || dtype >= dfcclNumTypes || op < 0 || op >= dfcclNumOps)
        return 0;
    int is_int = dtype <= dfcclUint64;
    return op <= dfcclMin || is_int;
}

DFCCL_INLINE size_t eng_type_size(int dtype)
{
    switch (dtype) {
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

#endif
