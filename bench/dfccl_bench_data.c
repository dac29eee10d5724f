/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: the inputs, the reference results and one size's buffer
 * geometry. Values are small integers, exact in every type. */
#include <string.h>

#include "dfccl_bench_data.h"

/* ------------------------------------------------------------------------- */
/* Element conversion. Values are small integers, exactly representable.      */

static uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff) /* inf / nan */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) { /* subnormal or zero */
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* may carry into the exponent: still correct */
    return (uint16_t)h;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

/* Store the integer value v as element i of buf. */
static void store(dfcclDataType_t t, void *buf, size_t i, int64_t v)
{
    switch (t) {
    case dfcclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case dfcclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case dfcclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case dfcclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case dfcclInt64: ((int64_t *)buf)[i] = v; break;
    case dfcclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case dfcclFloat16: ((uint16_t *)buf)[i] = float_to_half((float)v); break;
    case dfcclBfloat16: ((uint16_t *)buf)[i] = float_to_bf16((float)v); break;
    case dfcclFloat32: ((float *)buf)[i] = (float)v; break;
    case dfcclFloat64: ((double *)buf)[i] = (double)v; break;
    default: break;
    }
}

int bench_is_float_type(dfcclDataType_t t)
{
    return t == dfcclFloat16 || t == dfcclBfloat16 || t == dfcclFloat32 || t == dfcclFloat64;
}

/* ------------------------------------------------------------------------- */
/* Inputs: element i of the send buffer of rank r (the global index i runs over
 * the whole send buffer, all blocks included). */

static int64_t input_value(const struct opts *o, int r, size_t i)
{
    /* Non-reducing collectives and max/min: values that identify rank and index.
     * Period 101 keeps 8-bit and bfloat16 (exact up to 256) values exact. */
    int small = (o->type == dfcclInt8 || o->type == dfcclUint8 || o->type == dfcclBfloat16);
    int64_t period = small ? 101 : 1021;
    int64_t mix = ((int64_t)r * 37 + (int64_t)(i % 1000003u) * 11) % period;
    int reducing = (o->coll == C_ALLREDUCE || o->coll == C_REDUCE_SCATTER || o->coll == C_REDUCE);
    if (!reducing)
        return mix;
    switch (o->op) {
    case dfcclSum: return ((int64_t)r * 3 + (int64_t)(i % 4u) * 7 + (int64_t)(i / 4u % 3u)) % 4; /* 0..3 */
    case dfcclProd: return ((i + (size_t)r) % 8 == 0) ? 2 : 1; /* at most ceil(n/8) factors of 2 */
    default: return mix;
    }
}

static int64_t apply_op(dfcclRedOp_t op, int64_t a, int64_t b)
{
    switch (op) {
    case dfcclSum: return a + b;
    case dfcclProd: return a * b;
    case dfcclMax: return a > b ? a : b;
    case dfcclMin: return a < b ? a : b;
    case dfcclBand: return a & b;
    case dfcclBor: return a | b;
    case dfcclBxor: return a ^ b;
    default: return 0;
    }
}

static int64_t reduced_value(const struct opts *o, size_t i)
{
    int64_t acc = input_value(o, 0, i);
    for (int r = 1; r < bench_nranks; r++)
        acc = apply_op(o->op, acc, input_value(o, r, i));
    return acc;
}

struct geom bench_geometry(enum coll c, size_t bytes, size_t tsize)
{
    struct geom g;
    size_t n = (size_t)bench_nranks;
    size_t total = bytes / tsize;
    switch (c) {
    case C_ALLREDUCE:
    case C_BCAST:
    case C_REDUCE:
        g.count = total;
        g.send_elems = total;
        g.recv_elems = total;
        break;
    case C_REDUCE_SCATTER:
        g.count = total / n;
        g.send_elems = g.count * n;
        g.recv_elems = g.count;
        break;
    case C_ALLGATHER:
        g.count = total / n;
        g.send_elems = g.count;
        g.recv_elems = g.count * n;
        break;
    case C_ALLTOALL:
    default:
        g.count = total / n;
        g.send_elems = g.count * n;
        g.recv_elems = g.count * n;
        break;
    }
    g.size_bytes = (g.send_elems > g.recv_elems ? g.send_elems : g.recv_elems) * tsize;
    return g;
}

void bench_fill_send(const struct opts *o, void *sendbuf, const struct geom *g)
{
    if (o->coll == C_BCAST && bench_rank != o->root) {
        /* Only the root's buffer matters; give the others something different. */
        for (size_t i = 0; i < g->send_elems; i++)
            store(o->type, sendbuf, i, 7);
        return;
    }
    for (size_t i = 0; i < g->send_elems; i++)
        store(o->type, sendbuf, i, input_value(o, bench_rank, i));
}

/* Reference for this rank's receive buffer. Returns 0 when this rank's recvbuf
 * is not defined by the collective (reduce on a non-root rank). */
int bench_fill_expected(const struct opts *o, void *expected, const struct geom *g)
{
    size_t cnt = g->count;
    switch (o->coll) {
    case C_ALLREDUCE:
        for (size_t i = 0; i < cnt; i++)
            store(o->type, expected, i, reduced_value(o, i));
        return 1;
    case C_REDUCE:
        if (bench_rank != o->root)
            return 0;
        for (size_t i = 0; i < cnt; i++)
            store(o->type, expected, i, reduced_value(o, i));
        return 1;
    case C_REDUCE_SCATTER:
        for (size_t i = 0; i < cnt; i++)
            store(o->type, expected, i, reduced_value(o, (size_t)bench_rank * cnt + i));
        return 1;
    case C_ALLGATHER:
        for (int r = 0; r < bench_nranks; r++)
            for (size_t i = 0; i < cnt; i++)
                store(o->type, expected, (size_t)r * cnt + i, input_value(o, r, i));
        return 1;
    case C_BCAST:
        for (size_t i = 0; i < cnt; i++)
            store(o->type, expected, i, input_value(o, o->root, i));
        return 1;
    case C_ALLTOALL:
        for (int r = 0; r < bench_nranks; r++)
            for (size_t i = 0; i < cnt; i++)
                store(o->type, expected, (size_t)r * cnt + i,
                      input_value(o, r, (size_t)bench_rank * cnt + i));
        return 1;
    default: return 0;
    }
}

uint64_t bench_count_wrong(const void *got, const void *want, size_t elems, size_t tsize)
{
    if (memcmp(got, want, elems * tsize) == 0)
        return 0;
    uint64_t wrong = 0;
    const unsigned char *a = got, *b = want;
    for (size_t i = 0; i < elems; i++)
        if (memcmp(a + i * tsize, b + i * tsize, tsize) != 0)
            wrong++;
    return wrong;
}
