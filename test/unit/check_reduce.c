/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the reductions (reduce.h), on whole buffers and on LL packets
 * (ll_packet.h). */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_engine.h"
#include "algo.h"
#include "reduce.h"

/* ---- reductions ---------------------------------------------------------------------- */

START_TEST(reduce_int_and_float)
{
    int32_t a[5] = {1, -2, 3, INT32_MAX, 7}, b[5] = {4, 5, -6, 1, 7}, d[5];
    eng_reduce(d, a, b, 5, dfcclInt32, dfcclSum);
    ck_assert_int_eq(d[0], 5);
    ck_assert_int_eq(d[1], 3);
    ck_assert_int_eq(d[3], INT32_MIN); /* wraps, no UB */
    eng_reduce(d, a, b, 5, dfcclInt32, dfcclMax);
    ck_assert_int_eq(d[2], 3);
    eng_reduce(d, a, b, 5, dfcclInt32, dfcclMin);
    ck_assert_int_eq(d[2], -6);
    eng_reduce(d, a, b, 5, dfcclInt32, dfcclBxor);
    ck_assert_int_eq(d[4], 0);
    uint8_t ua[3] = {0xf0, 0x0f, 200}, ub[3] = {0x3c, 0x3c, 100}, ud[3];
    eng_reduce(ud, ua, ub, 3, dfcclUint8, dfcclBand);
    ck_assert_uint_eq(ud[0], 0x30);
    eng_reduce(ud, ua, ub, 3, dfcclUint8, dfcclBor);
    ck_assert_uint_eq(ud[1], 0x3f);
    eng_reduce(ud, ua, ub, 3, dfcclUint8, dfcclSum);
    ck_assert_uint_eq(ud[2], 44);
    double da[2] = {1.5, -2}, db[2] = {2, 3}, dd[2];
    eng_reduce(dd, da, db, 2, dfcclFloat64, dfcclProd);
    ck_assert(dd[0] == 3.0 && dd[1] == -6.0);
    ck_assert_int_eq(eng_reduce(dd, da, db, 2, dfcclFloat64, dfcclBand), -1);
    ck_assert(!eng_op_valid(dfcclFloat32, dfcclBor));
    ck_assert(!eng_op_valid(dfcclFloat16, dfcclBxor));
    ck_assert(eng_op_valid(dfcclInt64, dfcclBxor));
    ck_assert(!eng_op_valid(dfcclNumTypes, dfcclSum));
}
END_TEST

START_TEST(reduce_half_bf16)
{
    /* every half value round-trips through float */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue; /* nan payloads */
        ck_assert_uint_eq(eng_float_to_half(eng_half_to_float((uint16_t)h)), h);
    }
    ck_assert_uint_eq(eng_float_to_half(1.0f), 0x3c00);
    ck_assert_uint_eq(eng_float_to_half(65520.0f), 0x7c00);        /* rounds to inf */
    ck_assert_uint_eq(eng_float_to_half(1.0f + 0x1p-11f), 0x3c00); /* tie to even */
    ck_assert_uint_eq(eng_float_to_bf16(1.0f), 0x3f80);
    ck_assert(eng_bf16_to_float(eng_float_to_bf16(3.0f)) == 3.0f);
    uint16_t a[2] = {eng_float_to_half(1.5f), eng_float_to_half(-2.f)},
             b[2] = {eng_float_to_half(2.f), eng_float_to_half(8.f)}, d[2];
    eng_reduce(d, a, b, 2, dfcclFloat16, dfcclSum);
    ck_assert(eng_half_to_float(d[0]) == 3.5f && eng_half_to_float(d[1]) == 6.f);
    uint16_t x[1] = {eng_float_to_bf16(3.f)}, y[1] = {eng_float_to_bf16(5.f)}, z[1];
    eng_reduce(z, x, y, 1, dfcclBfloat16, dfcclMax);
    ck_assert(eng_bf16_to_float(z[0]) == 5.f);
}
END_TEST

START_TEST(reduce_packet_matches_reduce)
{
    /* one thread's 8-byte packet reduction is the same as the element loop, every type/op */
    unsigned seed = 99;
    for (int t = 0; t < dfcclNumTypes; t++)
        for (int op = 0; op < dfcclNumOps; op++) {
            if (!eng_op_valid(t, op))
                continue;
            for (int k = 0; k < 200; k++) {
                uint64_t a = 0, b = 0, want;
                unsigned char *pa = (unsigned char *)&a, *pb = (unsigned char *)&b;
                for (int j = 0; j < 8; j++) {
                    pa[j] = (unsigned char)rand_r(&seed);
                    pb[j] = (unsigned char)rand_r(&seed);
                }
                if (t == dfcclFloat32 || t == dfcclFloat64 || t == dfcclFloat16 || t == dfcclBfloat16) {
                    /* finite values: clear the top exponent bit of every element */
                    const size_t ts = eng_type_size(t);
                    for (size_t e = 0; e < 8 / ts; e++) {
                        pa[e * ts + ts - 1] &= 0x3f;
                        pb[e * ts + ts - 1] &= 0x3f;
                    }
                }
                ck_assert_int_eq(eng_reduce(&want, &a, &b, 8 / eng_type_size(t), t, op), 0);
                const uint64_t got = eng_reduce_packet(a, b, t, op);
                ck_assert_msg(got == want, "type %d op %d: %016llx != %016llx", t, op,
                              (unsigned long long)got, (unsigned long long)want);
            }
        }
}
END_TEST

START_TEST(ll_packets_any_alignment)
{
    /* packets of a buffer at every alignment and length: loaded zero-padded, stored
     * without touching a byte past the end */
    unsigned char buf[64], out[64];
    for (int i = 0; i < 64; i++)
        buf[i] = (unsigned char)(i * 37 + 5);
    for (int off = 0; off < 8; off++)
        for (uint64_t len = 1; len <= 20; len++) {
            memset(out, 0xee, sizeof out);
            for (uint64_t i = 0; i < eng_ll_lines(len); i++) {
                const uint64_t pk = eng_ll_packet_load(buf + off, len, i);
                for (uint64_t j = 0; j < 8; j++) {
                    const unsigned char want = 8 * i + j < len ? buf[off + 8 * i + j] : 0;
                    ck_assert_uint_eq((pk >> (8 * j)) & 0xff, want);
                }
                eng_ll_packet_store(out + off, len, i, pk);
            }
            ck_assert_mem_eq(out + off, buf + off, len);
            for (int j = 0; j < 64; j++)
                if (j < off || j >= off + (int)len)
                    ck_assert_uint_eq(out[j], 0xee);
        }
}
END_TEST

Suite *check_reduce_suite(void)
{
    Suite *s = suite_create("reduce");
    TCase *t;
    t = tcase_create("reduce");
    tcase_add_test(t, reduce_int_and_float);
    tcase_add_test(t, reduce_half_bf16);
    tcase_add_test(t, reduce_packet_matches_reduce);
    tcase_add_test(t, ll_packets_any_alignment);
    suite_add_tcase(s, t);
    return s;
}
