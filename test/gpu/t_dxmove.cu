/* SPDX-License-Identifier: BSD-3-Clause */
/* The direct exchange's block move (cuda_dx.cuh's dx_move: the copy engine's bulk moves
 * from DX_BULK_MIN bytes, the threads' vector copy below) on its own, one block as in the
 * daemon, against the bytes it should have moved: up to 32 pieces of random sizes
 * (empty ones, sizes that are no multiple of 16, pieces of many tiles), each between
 * guard bytes that must stay as they were, many moves in a row on one block (the buffers'
 * mbarrier phases carry over from move to move, as in the persistent kernel).
 *
 *   nvcc -std=c++17 -arch=sm_90 -Iinclude -Iengine -Icuda test/gpu/t_dxmove.cu -o t_dxmove
 *   ./t_dxmove [rounds]     prints "OK t_dxmove: ..." or the first wrong byte; exit 0/1
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_prims.cuh"

#define GUARD 64
#define MAXP  32

struct move_t {
    uint32_t np;
    uint64_t src_off[MAXP], dst_off[MAXP];
    uint32_t bytes[MAXP];
};

__global__ void __launch_bounds__(256, 1) k_moves(const move_t *moves, int nmoves, const char *src, char *dst)
{
    dx_block_t *L = dx_block();
    if (threadIdx.x == 0)
        dx_bulk_init();
    __syncthreads();
    for (int m = 0; m < nmoves; m++) {
        const move_t *mv = &moves[m];
        if (threadIdx.x == 0) {
            uint32_t nv = 0;
            int al = 1;
            for (uint32_t k = 0; k < mv->np; k++) {
                L->src[k] = src + mv->src_off[k];
                L->dst[k] = dst + mv->dst_off[k];
                L->bytes[k] = mv->bytes[k];
                nv = mv->bytes[k] / 16 > nv ? mv->bytes[k] / 16 : nv;
                al &= ((mv->src_off[k] | mv->dst_off[k]) & 15) == 0;
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

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 20;
    const int nmoves = 64;
    uint64_t seed = 12345;
    int dev = 0;
    if (cudaSetDevice(dev) != cudaSuccess) {
        printf("SKIP t_dxmove: no GPU\n");
        return 77;
    }
    cudaFuncSetAttribute(k_moves, cudaFuncAttributeMaxDynamicSharedMemorySize, DX_BULK_SMEM);
    long checked = 0, bulk_moves = 0;
    for (int r = 0; r < rounds; r++) {
        move_t *mv = (move_t *)calloc(nmoves, sizeof(move_t));
        uint64_t stotal = 0, dtotal = 0;
        for (int m = 0; m < nmoves; m++) {
            mv[m].np = 1 + rnd(&seed) % MAXP;
            const int unaligned = rnd(&seed) % 8 == 0; /* the threads' byte copy */
            for (uint32_t k = 0; k < mv[m].np; k++) {
                const uint32_t kind = rnd(&seed) % 6;
                uint32_t b = kind == 0   ? 0
                             : kind == 1 ? rnd(&seed) % 64
                             : kind == 2 ? rnd(&seed) % 8192
                             : kind == 3 ? 16384 * (1 + rnd(&seed) % 4)
                                         : rnd(&seed) % 200000;
                mv[m].bytes[k] = b;
                stotal = (stotal + GUARD + 15) / 16 * 16 + (unaligned ? 4 : 0);
                mv[m].src_off[k] = stotal;
                stotal += b;
                dtotal = (dtotal + GUARD + 15) / 16 * 16 + (unaligned ? 8 : 0);
                mv[m].dst_off[k] = dtotal;
                dtotal += b;
            }
        }
        stotal += GUARD;
        dtotal += GUARD;
        char *hs = (char *)malloc(stotal), *hd = (char *)malloc(dtotal), *want = (char *)malloc(dtotal);
        for (uint64_t i = 0; i < stotal; i++)
            hs[i] = (char)rnd(&seed);
        for (uint64_t i = 0; i < dtotal; i++)
            want[i] = hd[i] = (char)(0x5a ^ (i * 7));
        /* every piece has a place of its own between guard bytes: the reference is each one copied */
        for (int m = 0; m < nmoves; m++)
            for (uint32_t k = 0; k < mv[m].np; k++) {
                memcpy(want + mv[m].dst_off[k], hs + mv[m].src_off[k], mv[m].bytes[k]);
                checked += mv[m].bytes[k];
            }
        char *ds, *dd;
        move_t *dm;
        if (cudaMalloc(&ds, stotal) || cudaMalloc(&dd, dtotal) || cudaMalloc(&dm, nmoves * sizeof(move_t))) {
            printf("FAIL t_dxmove: cudaMalloc\n");
            return 1;
        }
        cudaMemcpy(ds, hs, stotal, cudaMemcpyHostToDevice);
        cudaMemcpy(dd, hd, dtotal, cudaMemcpyHostToDevice);
        cudaMemcpy(dm, mv, nmoves * sizeof(move_t), cudaMemcpyHostToDevice);
        k_moves<<<1, 256, DX_BULK_SMEM>>>(dm, nmoves, ds, dd);
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            printf("FAIL t_dxmove: round %d: %s\n", r, cudaGetErrorString(e));
            return 1;
        }
        cudaMemcpy(hd, dd, dtotal, cudaMemcpyDeviceToHost);
        for (uint64_t i = 0; i < dtotal; i++)
            if (hd[i] != want[i]) {
                printf("FAIL t_dxmove: round %d byte %llu of %llu: got 0x%02x, want 0x%02x\n", r,
                       (unsigned long long)i, (unsigned long long)dtotal, (unsigned char)hd[i],
                       (unsigned char)want[i]);
                return 1;
            }
        for (int m = 0; m < nmoves; m++) {
            uint64_t v = 0;
            for (uint32_t k = 0; k < mv[m].np; k++)
                v += mv[m].bytes[k];
            bulk_moves += v >= DX_BULK_MIN;
        }
        cudaFree(ds);
        cudaFree(dd);
        cudaFree(dm);
        free(hs);
        free(hd);
        free(want);
        free(mv);
    }
    printf("OK t_dxmove: %d rounds of %d moves, %ld bytes checked, ~%ld moves large enough for the copy "
           "engine\n",
           rounds, nmoves, checked, bulk_moves);
    return 0;
}
