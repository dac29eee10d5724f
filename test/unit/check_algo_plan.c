/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the algorithms' plans, without running them: the selection rules and how
 * channels, pieces and ranges cover a collective's data; the GPU daemon's FIFO layout. */
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
#include "eng_config.h"
#include "eng_gpu_layout.h"

START_TEST(algo_select_rules)
{
    eng_coll_args_t a = {.coll = ENG_COLL_ALLREDUCE, .dtype = dfcclFloat32, .count = 16};
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 0, 0, 0, 0, 0), ENG_ALGO_ONESHOT);
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 32, 0, 0, 0, 0), ENG_ALGO_ONESHOT);
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0, 0, 0), ENG_ALGO_LL);
    ck_assert_int_eq(eng_algo_select(&a, ENG_LL_MAX_RANKS + 1, 64, 64, 0, 0, 0, 0), ENG_ALGO_ONESHOT);
    a.count = 17;
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0, 0, 0), ENG_ALGO_RING);
    ck_assert_int_eq(eng_algo_select(&a, 1, 64, 64, 0, 0, 0, 0), ENG_ALGO_SELF);
    a.coll = ENG_COLL_BCAST;
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0, 0, 0), ENG_ALGO_CHAIN);
    a.coll = ENG_COLL_ALLTOALL;
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0, 0, 0), ENG_ALGO_PAIRWISE);
    /* every uniform collective in one LL round while its piece fits ll_max, never a
     * table's, never an empty one */
    static const uint8_t ll_colls[] = {ENG_COLL_REDUCE,         ENG_COLL_BCAST,    ENG_COLL_ALLGATHER,
                                       ENG_COLL_REDUCE_SCATTER, ENG_COLL_ALLTOALL, ENG_COLL_GATHER,
                                       ENG_COLL_SCATTER};
    static const eng_block_t tab[4];
    for (size_t i = 0; i < sizeof ll_colls; i++) {
        eng_coll_args_t u = {.coll = ll_colls[i], .dtype = dfcclFloat32, .count = 16};
        ck_assert_int_eq(eng_algo_select(&u, 4, 64, 64, 0, 0, 0, 0), ENG_ALGO_LL);
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 63, 0, 0, 0, 0), ENG_ALGO_LL);
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 0, 0, 0, 0, 0), ENG_ALGO_LL);
        ck_assert_int_ne(eng_algo_select(&u, ENG_LL_MAX_RANKS + 1, 64, 64, 0, 0, 0, 0), ENG_ALGO_LL);
        u.count = 0;
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, 0, 0, 0, 0), ENG_ALGO_LL);
        u.count = 16;
        u.blocks = tab;
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, 0, 0, 0, 0), ENG_ALGO_LL);
    }
    /* the direct exchange: allreduce above one-shot, reduce_scatter, allgather and alltoall
     * whose larger buffer (N blocks but for allreduce; alltoall: one block) fits direct_max;
     * never a table's,
     * an empty one, more than ENG_DX_MAX_RANKS ranks or the other collectives */
    eng_coll_args_t d = {.coll = ENG_COLL_ALLREDUCE, .dtype = dfcclFloat32, .count = 1024};
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 4096, 0, 0, 0), ENG_ALGO_DIRECT);
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 4095, 0, 0, 0), ENG_ALGO_RING);
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 0, 0, 0, 0), ENG_ALGO_RING);
    ck_assert_int_eq(eng_algo_select(&d, 4, 4096, 64, 4096, 0, 0, 0), ENG_ALGO_ONESHOT);
    ck_assert_int_eq(eng_algo_select(&d, ENG_DX_MAX_RANKS + 1, 64, 64, 4096, 0, 0, 0), ENG_ALGO_RING);
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 4096, 4, 0, 0), ENG_ALGO_DIRECT1);
    ck_assert_int_eq(eng_algo_select(&d, 5, 64, 64, 4096, 4, 0, 0), ENG_ALGO_DIRECT);
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 0, 4, 0, 0), ENG_ALGO_RING);
    static const uint8_t dx_colls[] = {ENG_COLL_REDUCE_SCATTER, ENG_COLL_ALLGATHER, ENG_COLL_ALLTOALL,
                                       ENG_COLL_BCAST, ENG_COLL_REDUCE};
    for (size_t i = 0; i < sizeof dx_colls; i++) {
        eng_coll_args_t u = {.coll = dx_colls[i], .dtype = dfcclFloat32, .count = 256};
        /* 4 blocks of 1 KiB; alltoall one block, bcast and reduce their buffer */
        const uint64_t dx =
            dx_colls[i] == ENG_COLL_REDUCE_SCATTER || dx_colls[i] == ENG_COLL_ALLGATHER ? 4096 : 1024;
        /* bcast and reduce: up to half of direct_max */
        const int rooted = dx_colls[i] == ENG_COLL_BCAST || dx_colls[i] == ENG_COLL_REDUCE;
        const uint64_t lim = rooted ? 2 * dx : dx;
        ck_assert_int_eq(eng_algo_select(&u, 4, 64, 64, lim, 0, 0, 0), ENG_ALGO_DIRECT);
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, lim - 1, 0, 0, 0), ENG_ALGO_DIRECT);
        ck_assert_int_eq(eng_algo_select(&u, 4, 64, 1024, 4096, 0, 0, 0), ENG_ALGO_LL);
        u.blocks = tab;
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, 4096, 0, 0, 0), ENG_ALGO_DIRECT);
    }
    static const uint8_t no_dx[] = {ENG_COLL_GATHER, ENG_COLL_SCATTER};
    for (size_t i = 0; i < sizeof no_dx; i++) {
        eng_coll_args_t u = {.coll = no_dx[i], .dtype = dfcclFloat32, .count = 256};
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, 1 << 20, 0, 0, 0), ENG_ALGO_DIRECT);
    }
    /* the LL round split over the channels: a uniform piece above 2 x ENG_LL_CHAN_BYTES up
     * to ll_wide, before the one-shot, the direct exchange and the ring; never a table's,
     * without LL, or above ll_wide; at most 2 x ENG_LL_CHAN_BYTES on channel 0 alone */
    static const uint8_t llw_colls[] = {ENG_COLL_ALLREDUCE, ENG_COLL_REDUCE,         ENG_COLL_BCAST,
                                        ENG_COLL_ALLGATHER, ENG_COLL_REDUCE_SCATTER, ENG_COLL_ALLTOALL,
                                        ENG_COLL_GATHER,    ENG_COLL_SCATTER};
    for (size_t i = 0; i < sizeof llw_colls; i++) {
        eng_coll_args_t u = {.coll = llw_colls[i], .dtype = dfcclFloat32, .count = 4096}; /* 16 KiB */
        ck_assert_int_eq(eng_algo_select(&u, 4, 1 << 20, 8192, 1 << 20, 4, 0, 16384), ENG_ALGO_LLW);
        ck_assert_int_ne(eng_algo_select(&u, 4, 1 << 20, 8192, 1 << 20, 4, 0, 16383), ENG_ALGO_LLW);
        ck_assert_int_ne(eng_algo_select(&u, 4, 1 << 20, 0, 1 << 20, 4, 0, 16384), ENG_ALGO_LLW);
        ck_assert_int_ne(eng_algo_select(&u, ENG_LL_MAX_RANKS + 1, 1 << 20, 8192, 0, 4, 0, 16384),
                         ENG_ALGO_LLW);
        u.count = ENG_LL_CHAN_BYTES / 2 + 1; /* 4 KiB + 4 */
        ck_assert_int_eq(eng_algo_select(&u, 4, 0, 8192, 0, 0, 0, 16384), ENG_ALGO_LLW);
        u.count = ENG_LL_CHAN_BYTES / 2; /* two channels' shares: the plain round */
        ck_assert_int_eq(eng_algo_select(&u, 4, 0, 8192, 0, 0, 0, 16384), ENG_ALGO_LL);
        ck_assert_int_eq(eng_algo_select(&u, 4, 0, 8192, 0, 0, 0, 0), ENG_ALGO_LL);
        u.count = 4096;
        u.blocks = tab;
        ck_assert_int_ne(eng_algo_select(&u, 4, 0, 8192, 0, 0, 0, 16384), ENG_ALGO_LLW);
    }
    /* the caller's cap: the channels x ll_max, and nothing where ll_max cannot give a
     * channel twice its least share */
    ck_assert_uint_eq(eng_ll_wide(65536, 8192, 16), 65536);
    ck_assert_uint_eq(eng_ll_wide(65536, 8192, 4), 32768);
    ck_assert_uint_eq(eng_ll_wide(65536, 8192, 1), 8192);
    ck_assert_uint_eq(eng_ll_wide(65536, 2 * ENG_LL_CHAN_BYTES, 64), 65536);
    ck_assert_uint_eq(eng_ll_wide(65536, 2 * ENG_LL_CHAN_BYTES - 1, 64), 0);
    ck_assert_uint_eq(eng_ll_wide(0, 8192, 64), 0);
    /* auto: on the GPU daemon N x (N-1) x the piece up to 4 MiB (64 KiB and more at 8
     * ranks, 256 KiB and more at 4), never on host buffers; a value passes as it is */
    ck_assert_uint_eq(eng_ll_wide_max(ENG_AUTO, 1, 8), (4u << 20) / 56);
    ck_assert_uint_ge(eng_ll_wide_max(ENG_AUTO, 1, 8), 65536);
    ck_assert_uint_lt(eng_ll_wide_max(ENG_AUTO, 1, 8), 131072);
    ck_assert_uint_ge(eng_ll_wide_max(ENG_AUTO, 1, 4), 262144);
    ck_assert_uint_eq(eng_ll_wide_max(ENG_AUTO, 1, 1), 0);
    ck_assert_uint_eq(eng_ll_wide_max(ENG_AUTO, 0, 8), 0);
    ck_assert_uint_eq(eng_ll_wide_max(32768, 0, 8), 32768);
    ck_assert_uint_eq(eng_ll_wide_max(0, 1, 8), 0);
    a.coll = ENG_COLL_BARRIER;
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0, 0, 1 << 20), ENG_ALGO_LL);
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 0, 0, 0, 0, 0), ENG_ALGO_ONESHOT);
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0, 0, 0), ENG_ALGO_LL);
    /* the one-shot's limit gives way to the direct exchange as N grows, never above it */
    ck_assert_uint_eq(eng_oneshot_max(32768, 2, 1), 32768);
    ck_assert_uint_eq(eng_oneshot_max(32768, 4, 1), 16384);
    ck_assert_uint_eq(eng_oneshot_max(32768, 8, 1), 8192);
    ck_assert_uint_eq(eng_oneshot_max(32768, 8, 0), 32768);
    ck_assert_uint_eq(eng_oneshot_max(0, 8, 1), 0);
}
END_TEST

START_TEST(pairwise_pieces_partition_blocks)
{
    /* every block is cut into pieces that tile it exactly, once, over the channels a rank
     * takes part on; a table's pieces depend on the block alone (both ends agree), and a
     * rank's channels cover every block of its table */
    static const uint64_t bytes[] = {0, 1, 15, 16, 17, 65535, 65536, 65537, 1000003, 3u << 20};
    eng_block_t tab[2];
    for (size_t bi = 0; bi < sizeof bytes / sizeof bytes[0]; bi++)
        for (int C = 1; C <= 64; C = C * 2 + 1) {
            /* a table: this rank's largest block in count, as dfcclAllToAllv gives it */
            tab[0] = (eng_block_t){0, bytes[bi], 0, 7};
            tab[1] = (eng_block_t){0, 3, 0, bytes[bi]};
            eng_coll_args_t a = {.coll = ENG_COLL_ALLTOALLV,
                                 .dtype = dfcclUint8,
                                 .algo = ENG_ALGO_PAIRWISE,
                                 .count = DFCCL_MAX(bytes[bi], 7),
                                 .blocks = tab};
            const int k = eng_active_channels(&a, 2, C);
            ck_assert_int_eq(k, (int)eng_pair_chans(a.count, (uint64_t)C));
            for (int blk = 0; blk < 2; blk++) {
                const uint64_t B = blk ? 3 : bytes[bi];
                uint64_t covered = 0, next = 0;
                for (int c = 0; c < C; c++) {
                    eng_ctx_t x;
                    eng_ctx_init(&a, 2, c, C, &x);
                    ck_assert_int_eq(!x.done, c < k);
                    if (x.done)
                        continue;
                    uint64_t lo, hi;
                    pairwise_piece(&a, &x, B, &lo, &hi);
                    if (hi > lo) {
                        ck_assert_uint_eq(lo, next); /* in channel order, no gap, no overlap */
                        ck_assert_uint_eq(lo % 16, 0);
                        next = hi;
                        covered += hi - lo;
                    }
                }
                ck_assert_uint_eq(covered, B);
            }
            /* uniform: an alltoall of `count` floats per peer */
            eng_coll_args_t u = {.coll = ENG_COLL_ALLTOALL,
                                 .dtype = dfcclFloat32,
                                 .algo = ENG_ALGO_PAIRWISE,
                                 .count = bytes[bi] / 4};
            uint64_t covered = 0;
            for (int c = 0; c < C; c++) {
                eng_ctx_t x;
                eng_ctx_init(&u, 3, c, C, &x);
                if (x.done)
                    continue;
                uint64_t lo, hi;
                pairwise_piece(&u, &x, u.count * 4, &lo, &hi);
                covered += hi - lo;
            }
            ck_assert_uint_eq(covered, u.count * 4);
        }
}
END_TEST

START_TEST(active_channels_match_ranges)
{
    /* the closed form must count exactly the channels eng_ctx_init gives work */
    static const size_t counts[] = {1, 2, 3, 7, 15, 16, 17, 100, 1000, 65537};
    static const uint8_t algos[] = {ENG_ALGO_RING,   ENG_ALGO_ONESHOT,  ENG_ALGO_SELF,
                                    ENG_ALGO_CHAIN,  ENG_ALGO_PAIRWISE, ENG_ALGO_LL,
                                    ENG_ALGO_DIRECT, ENG_ALGO_DIRECT1,  ENG_ALGO_LLW};
    static const uint8_t colls[] = {ENG_COLL_ALLREDUCE, ENG_COLL_ALLGATHER, ENG_COLL_BCAST};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (size_t ai = 0; ai < sizeof algos; ai++)
            for (size_t oi = 0; oi < sizeof colls; oi++)
                for (int N = 1; N <= 9; N += 4)
                    for (int C = 1; C <= 32; C = C * 2 + 1) {
                        eng_coll_args_t a = {
                            .coll = colls[oi], .dtype = dfcclFloat32, .algo = algos[ai], .count = counts[ci]};
                        int k = 0;
                        for (int c = 0; c < C; c++) {
                            eng_ctx_t x;
                            eng_ctx_init(&a, N, c, C, &x);
                            k += !x.done;
                            /* the GPU intake's form: the same split, the active channels
                             * with it, with and without the direct exchange compiled in */
                            for (int wd = 0; wd < 2; wd++) {
                                eng_ctx_t y;
                                ck_assert_int_eq(eng_ctx_init_in(&a, N, c, C, &y, wd),
                                                 eng_active_channels_in(&a, N, C, wd));
                                if (wd) {
                                    ck_assert_uint_eq(y.lo, x.lo);
                                    ck_assert_uint_eq(y.hi, x.hi);
                                    ck_assert_int_eq(y.done, x.done);
                                }
                            }
                        }
                        ck_assert_int_eq(eng_active_channels(&a, N, C), k);
                    }
}
END_TEST

START_TEST(ll_split_covers_lines)
{
    /* the LL round over the channels: the channels' line ranges tile [0, lines) of the
     * piece exactly, in order, on the lowest channels, as many as the piece has whole
     * ENG_LL_CHAN_BYTES for (at least 1, at most C), each an even share (so none above
     * channels x ll_max's share, the caller's cap); the plain round runs on channel 0 */
    static const size_t counts[] = {0, 1, 512, 513, 1000, 4097, 16384, 65537};
    static const uint8_t colls[] = {ENG_COLL_ALLREDUCE, ENG_COLL_ALLTOALL, ENG_COLL_BARRIER};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (size_t oi = 0; oi < sizeof colls; oi++)
            for (int wide = 0; wide < 2; wide++)
                for (int C = 1; C <= 64; C = C * 2 + 1) {
                    eng_coll_args_t a = {.coll = colls[oi],
                                         .dtype = dfcclFloat32,
                                         .algo = wide ? ENG_ALGO_LLW : ENG_ALGO_LL,
                                         .count = counts[ci]};
                    const uint64_t piece = eng_ll_piece(&a), lines = wide ? eng_ll_lines(piece) : 1;
                    const uint64_t k = piece / ENG_LL_CHAN_BYTES,
                                   want = !wide || k == 0 ? 1 : DFCCL_MIN((uint64_t)C, k);
                    uint64_t next = 0;
                    int active = 0;
                    for (int c = 0; c < C; c++) {
                        eng_ctx_t x;
                        eng_ctx_init(&a, 4, c, C, &x);
                        if (x.done)
                            continue;
                        ck_assert_int_eq(c, active++);
                        ck_assert_uint_eq(x.lo, next);
                        next = x.hi;
                        ck_assert_uint_ge(x.hi - x.lo, lines / want);
                        ck_assert_uint_le(x.hi - x.lo, DFCCL_DIV_UP(lines, want));
                    }
                    ck_assert_uint_eq(next, lines);
                    ck_assert_uint_eq((uint64_t)active, want);
                }
}
END_TEST

START_TEST(self_copy_pieces_cover_output)
{
    /* one rank: the channels' pieces tile [0, bytes) exactly and in order, on the lowest
     * channels: a small copy stays on channel 0 alone, a large one uses every channel it
     * has pieces for */
    static const size_t counts[] = {0, 1, 3, 65535, 65536, 65537, 1u << 20, (1u << 22) + 5};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int C = 1; C <= 64; C = C * 2 + 1) {
            eng_coll_args_t a = {.coll = ENG_COLL_ALLREDUCE,
                                 .dtype = dfcclFloat32,
                                 .algo = ENG_ALGO_SELF,
                                 .count = counts[ci]};
            const uint64_t n = eng_self_bytes(&a);
            uint64_t next = 0;
            int active = 0;
            for (int c = 0; c < C; c++) {
                eng_ctx_t x;
                eng_ctx_init(&a, 1, c, C, &x);
                if (x.done)
                    continue;
                ck_assert_int_eq(c, active); /* the lowest channels, from channel 0 */
                active++;
                const uint64_t b0 = x.lo * ENG_SELF_PIECE;
                const uint64_t b1 = x.hi * ENG_SELF_PIECE < n ? x.hi * ENG_SELF_PIECE : n;
                if (n)
                    ck_assert_uint_eq(b0, next);
                next = b1 > next ? b1 : next;
            }
            ck_assert_uint_eq(next, n);
            ck_assert_int_eq(active, eng_active_channels(&a, 1, C));
            const uint64_t pieces = n ? (n + ENG_SELF_PIECE - 1) / ENG_SELF_PIECE : 1;
            ck_assert_int_eq(active, (int)(pieces < (uint64_t)C ? pieces : (uint64_t)C));
        }
}
END_TEST

START_TEST(direct_ranges_tile_blocks)
{
    /* the direct exchange's channels tile a block [0, S) exactly, in order, on 16-byte
     * boundaries, from channel 0 up, each at least ENG_DX_PIECE bytes but the last; an
     * allreduce's N blocks cover its buffer */
    static const size_t counts[] = {1, 3, 17, 1000, 4099, 65536, 262147, 1u << 22};
    static const uint8_t dtypes[] = {dfcclInt8, dfcclFloat16, dfcclFloat32, dfcclFloat64};
    static const uint8_t colls[] = {ENG_COLL_ALLREDUCE, ENG_COLL_ALLGATHER, ENG_COLL_ALLREDUCE,
                                    ENG_COLL_BCAST};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (size_t ti = 0; ti < sizeof dtypes; ti++)
            for (size_t oi = 0; oi < sizeof colls; oi++)
                for (int N = 2; N <= 9; N += 7)
                    for (int C = 1; C <= 64; C = C * 2 + 1) {
                        eng_coll_args_t a = {.coll = colls[oi],
                                             .dtype = dtypes[ti],
                                             .algo = oi == 2 ? ENG_ALGO_DIRECT1 : ENG_ALGO_DIRECT,
                                             .count = counts[ci]};
                        const uint64_t ts = eng_type_size(a.dtype), G = eng_dx_grain(&a);
                        const uint64_t S = eng_dx_stride(&a, N);
                        if (a.algo == ENG_ALGO_DIRECT1)
                            ck_assert_uint_eq(S, (a.count + G - 1) / G * G);
                        else if (a.coll == ENG_COLL_ALLREDUCE) {
                            ck_assert_uint_eq(S % G, 0);
                            ck_assert_uint_ge(S * (uint64_t)N, a.count);
                            ck_assert_uint_lt(S * (uint64_t)(N - 1), a.count + G * (uint64_t)N);
                        }
                        uint64_t next = 0;
                        int active = 0;
                        for (int c = 0; c < C; c++) {
                            eng_ctx_t x;
                            eng_ctx_init(&a, N, c, C, &x);
                            if (x.done)
                                continue;
                            ck_assert_int_eq(c, active++);
                            const uint64_t lo = x.lo * G, hi = DFCCL_MIN(x.hi * G, S);
                            ck_assert_uint_eq(lo, next);
                            ck_assert_uint_gt(hi, lo);
                            if (hi < S)
                                ck_assert_uint_ge((hi - lo) * ts, ENG_DX_PIECE / 2);
                            next = hi;
                        }
                        ck_assert_uint_eq(next, S);
                        ck_assert_int_eq(active, eng_active_channels(&a, N, C));
                    }
}
END_TEST

START_TEST(gpu_fifo_layout)
{
    /* every connection of a receiver's FIFO memory is inside it, disjoint from the others,
     * aligned, large enough for its step size, and sender and receiver agree on it */
    const uint64_t chunks[][2] = {{131072, 16384}, {262144, 4096}, {1024, 1024}};
    for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++)
        for (int N = 1; N <= 9; N++)
            for (uint32_t depth = 2; depth <= 4; depth += 2) {
                const uint64_t big = chunks[ci][0],
                               small = eng_gpu_small_chunk(chunks[ci][1], 4096, depth, big);
                const size_t bc = ENG_GPU_CTRL_BYTES + depth * big, sc = ENG_GPU_CTRL_BYTES + depth * small;
                const size_t G = 3; /* slots x channels */
                const size_t total = eng_gpu_fifo_off(G, 0, 0, N, bc, sc);
                ck_assert_uint_eq(total, G * (bc + (size_t)(N - 1) * sc));
                for (int R = 0; R < N; R++) {
                    size_t end_prev = 0;
                    for (size_t g = 0; g < G; g++)
                        for (int src = 0; src < N; src++) {
                            /* in address order: group by group, source by source */
                            const size_t off = eng_gpu_fifo_off(g, src, R, N, bc, sc);
                            const uint64_t step = eng_gpu_step(src, R, N, big, small);
                            const size_t len = ENG_GPU_CTRL_BYTES + depth * step;
                            ck_assert_uint_eq(off, end_prev);
                            ck_assert_uint_eq(off % 256, 0);
                            end_prev = off + len;
                            ck_assert_uint_le(end_prev, total);
                            /* the ring's direction gets the large steps (N = 2: both peers) */
                            ck_assert_uint_eq(step, src == (R - 1 + N) % N ? big : small);
                        }
                    ck_assert_uint_eq(end_prev, total);
                }
                /* a one-shot contribution always fits the small steps of one FIFO (one
                 * chunk per step), an LL one of 4 KiB one step */
                ck_assert_uint_ge(small * depth, DFCCL_MIN(chunks[ci][1], big * depth));
                ck_assert_uint_ge(small, DFCCL_MIN(8192, big));
            }
}
END_TEST

/* DFCCL_READ_MIN=auto per daemon (eng_config.h): the GPU reads from 4 ranks where a
 * rank's blocks make 2 MiB, blocks of 256 KiB at the least, never with the direct
 * exchange off (its lighter kernel has no read); the CPU from 512 KiB; a number applies
 * as it is, and 0 is never */
START_TEST(read_min_auto_rules)
{
    const uint64_t dx = 1u << 20; /* DFCCL_DIRECT_MAX's default */
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, dx, 1, 2), 0);
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, dx, 1, 3), 0);
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, dx, 1, 4), 512u << 10);
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, dx, 1, 5), (2u << 20) / 5);
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, dx, 1, 8), 256u << 10);
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, dx, 1, 32), 256u << 10);
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, dx, 0, 2), 512u << 10);
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, dx, 0, 8), 512u << 10);
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, 0, 1, 8), 0);
    ck_assert_uint_eq(eng_read_min_of(ENG_AUTO, 0, 0, 8), 512u << 10);
    ck_assert_uint_eq(eng_read_min_of(4096, dx, 1, 2), 4096);
    ck_assert_uint_eq(eng_read_min_of(4096, 0, 0, 2), 4096);
    ck_assert_uint_eq(eng_read_min_of(0, dx, 1, 8), 0);
}
END_TEST

Suite *check_algo_plan_suite(void)
{
    Suite *s = suite_create("algo_plan");
    TCase *t;
    t = tcase_create("algo");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, algo_select_rules);
    tcase_add_test(t, read_min_auto_rules);
    tcase_add_test(t, active_channels_match_ranges);
    tcase_add_test(t, pairwise_pieces_partition_blocks);
    tcase_add_test(t, ll_split_covers_lines);
    tcase_add_test(t, self_copy_pieces_cover_output);
    tcase_add_test(t, direct_ranges_tile_blocks);
    tcase_add_test(t, gpu_fifo_layout);
    suite_add_tcase(s, t);
    return s;
}
