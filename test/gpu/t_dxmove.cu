/* SPDX-License-Identifier: BSD-3-Clause */
/* The direct exchange's block move (cuda_dx.cuh's dx_move: the copy engine's bulk moves
 * from DX_BULK_MIN bytes, the threads' vector copy below, a byte copy for unaligned
 * pieces) on its own, one block as in the daemon, against a reference: up to 32 pieces
 * of random sizes (empty ones, sizes that are no multiple of 16, pieces of many tiles)
 * between guard bytes, many moves in a row on one block. Each move reads the buffer the
 * one before wrote (X -> Y, then Y -> X, pieces laid out afresh each time, large moves
 * and small or unaligned ones in turn), so a move whose stores had not landed when the
 * next one read them, or whose reads saw old data, leaves wrong bytes behind. The
 * buffers' mbarrier phases carry over from move to move, as in the persistent kernel;
 * the kernel counts the bulk moves, and some must have run.
 *
 *   built with the GPU build (Makefile.am); run by test/gpu/run_gpu_tests.sh
 *   t_dxmove [rounds]     prints "OK t_dxmove: ..." or the first wrong byte; exit 0/1 (77: no GPU)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__device__ unsigned long long g_bulk_moves;
#define DX_BULK_COUNT() (g_bulk_moves++) /* thread 0 of the one block */
#include "cuda_prims.cuh"

#define GUARD 64
#define MAXP  32
#define SPAN  (8u << 20) /* each buffer */

struct move_t {
    uint32_t np;
    uint64_t off[MAXP]; /* the same place in both buffers */
    uint32_t bytes[MAXP];
};

__global__ void __launch_bounds__(256, 1) k_moves(const move_t *moves, int nmoves, char *x, char *y)
{
    dx_block_t *L = dx_block();
    if (threadIdx.x == 0)
        dx_bulk_init();
    __syncthreads();
    for (int m = 0; m < nmoves; m++) {
        const move_t *mv = &moves[m];
        const char *src = m % 2 ? y : x;
        char *dst = m % 2 ? x : y;
        if (threadIdx.x == 0) {
            uint32_t nv = 0;
            int al = 1;
            for (uint32_t k = 0; k < mv->np; k++) {
                L->src[k] = src + mv->off[k];
                L->dst[k] = dst + mv->off[k];
                L->bytes[k] = mv->bytes[k];
                nv = mv->bytes[k] / 16 > nv ? mv->bytes[k] / 16 : nv;
                al &= (mv->off[k] & 15) == 0;
            }
            L->np = mv->np;
            L->nv = nv;
            L->vec = al;
        }
        __syncthreads();
        dx_move(L);
        __syncthreads();
    }
}

static uint32_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* move m's pieces: even moves large (many tiles), odd ones small, some unaligned */
static void layout(move_t *mv, int m, uint64_t *seed)
{
    const int large = m % 2 == 0, unaligned = !large && rnd(seed) % 3 == 0;
    uint64_t at = (rnd(seed) % 4096) * 16;
    mv->np = 1 + rnd(seed) % MAXP;
    for (uint32_t k = 0; k < mv->np; k++) {
        const uint32_t kind = rnd(seed) % 5;
        uint32_t b = kind == 0   ? 0
                     : kind == 1 ? rnd(seed) % 64
                     : large     ? (kind == 2 ? 16384 * (1 + rnd(seed) % 4) : rnd(seed) % 200000)
                                 : rnd(seed) % 4096;
        at = (at + GUARD + 15) / 16 * 16 + (unaligned ? 4 : 0);
        if (at + b + GUARD > SPAN)
            b = 0;
        mv->off[k] = at;
        mv->bytes[k] = b;
        at += b;
    }
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 20;
    const int nmoves = 64;
    uint64_t seed = 12345;
    if (cudaSetDevice(0) != cudaSuccess) {
        printf("SKIP t_dxmove: no GPU\n");
        return 77;
    }
    if (cudaFuncSetAttribute(k_moves, cudaFuncAttributeMaxDynamicSharedMemorySize, DX_BULK_SMEM) !=
        cudaSuccess) {
        printf("FAIL t_dxmove: %u bytes of dynamic shared memory refused\n", DX_BULK_SMEM);
        return 1;
    }
    char *hx = (char *)malloc(SPAN), *hy = (char *)malloc(SPAN), *got = (char *)malloc(SPAN);
    move_t *mv = (move_t *)calloc(nmoves, sizeof(move_t)), *dm;
    char *dx, *dy;
    if (!hx || !hy || !got || !mv || cudaMalloc(&dx, SPAN) || cudaMalloc(&dy, SPAN) ||
        cudaMalloc(&dm, nmoves * sizeof(move_t))) {
        printf("FAIL t_dxmove: out of memory\n");
        return 1;
    }
    unsigned long long checked = 0, bulk = 0;
    for (int r = 0; r < rounds; r++) {
        for (uint64_t i = 0; i < SPAN; i++) {
            hx[i] = (char)rnd(&seed);
            hy[i] = (char)(0x5a ^ (i * 7));
        }
        cudaMemcpy(dx, hx, SPAN, cudaMemcpyHostToDevice);
        cudaMemcpy(dy, hy, SPAN, cudaMemcpyHostToDevice);
        for (int m = 0; m < nmoves; m++) {
            layout(&mv[m], m, &seed);
            char *s = m % 2 ? hy : hx, *d = m % 2 ? hx : hy; /* the reference, move by move */
            for (uint32_t k = 0; k < mv[m].np; k++) {
                memcpy(d + mv[m].off[k], s + mv[m].off[k], mv[m].bytes[k]);
                checked += mv[m].bytes[k];
            }
        }
        cudaMemcpy(dm, mv, nmoves * sizeof(move_t), cudaMemcpyHostToDevice);
        k_moves<<<1, 256, DX_BULK_SMEM>>>(dm, nmoves, dx, dy);
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            printf("FAIL t_dxmove: round %d: %s\n", r, cudaGetErrorString(e));
            return 1;
        }
        for (int side = 0; side < 2; side++) {
            cudaMemcpy(got, side ? dy : dx, SPAN, cudaMemcpyDeviceToHost);
            const char *want = side ? hy : hx;
            for (uint64_t i = 0; i < SPAN; i++)
                if (got[i] != want[i]) {
                    printf("FAIL t_dxmove: round %d, buffer %c byte %llu: got 0x%02x, want 0x%02x\n", r,
                           side ? 'Y' : 'X', (unsigned long long)i, (unsigned char)got[i],
                           (unsigned char)want[i]);
                    return 1;
                }
        }
    }
    cudaMemcpyFromSymbol(&bulk, g_bulk_moves, sizeof(bulk));
    if (!bulk) {
        printf("FAIL t_dxmove: no move went to the copy engine (DX_BULK_MIN %u)\n", DX_BULK_MIN);
        return 1;
    }
    printf("OK t_dxmove: %d rounds of %d chained moves, %llu bytes moved and checked, %llu moves by the copy "
           "engine\n",
           rounds, nmoves, checked, bulk);
    return 0;
}
