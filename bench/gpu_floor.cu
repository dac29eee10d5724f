/* SPDX-License-Identifier: BSD-3-Clause */
/* The hardware floor under a small collective's pick-up and completion, measured with
 * the same kinds of memory accesses the daemon makes, so the daemon's figures can be
 * stated against it:
 *   - latency of one dependent 8-byte volatile read of host-mapped memory (PCIe) and of
 *     device memory (L2), from one GPU thread, timed with %globaltimer;
 *   - host <-> device ping-pong through host-mapped words: the host publishes a
 *     sequence number, one GPU thread polls it and answers in another host-mapped word,
 *     the host polls that (the shape of submission -> pick-up -> completion), with the
 *     answer written three ways: a volatile store, a system-scope release store (what
 *     the daemon's completion uses), and __threadfence() then a system-scope release
 *     (what a completion after device-memory results costs);
 *   - cold code: one thread of a 512-thread block (the daemon's shape) runs a stretch of
 *     the engine's reduction code (eng_reduce_packet over every type and op: one branch
 *     each) right after spinning alone in a small loop, then the same stretch again at
 *     once; the difference is what running code that was not just executed costs (the
 *     instruction caches), and the barrier that releases the block after the spin.
 *   - with --flags: the round trip of a flag between two GPU threads through device
 *     memory, the shape of one dependent step between two ranks (gpu-scope release
 *     store, acquire loads while waiting): two blocks of one kernel, then two processes
 *     (the second forked before either touches CUDA; the flags in the first one's
 *     allocation, mapped by CUDA IPC: run it under MPS, as the ranks run, or the two
 *     kernels take turns), each also with LOAD more blocks per side spinning on loads
 *     of their own words, as the daemons' other blocks poll.
 * Usage: gpu_floor [ITERS] | gpu_floor --flags [ITERS [LOAD]]. Run it beside nothing else. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cuda/cuda_atomic.cuh"
#include "../engine/reduce.h"

#define CK(call)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

/* a pointer chase: next = a[cur], n dependent loads; returns ns per load */
__global__ void chase(const uint64_t *a, int n, uint64_t *out)
{
    uint64_t cur = 0;
    const uint64_t t0 = globaltimer_ns();
    for (int i = 0; i < n; i++)
        cur = ld_volatile_u64(&a[cur]);
    const uint64_t t1 = globaltimer_ns();
    out[0] = (t1 - t0);
    out[1] = cur; /* keeps the chain live */
}

/* one warp polling host-mapped slots the way the fetcher does: lane i reads word i of
 * each of `slots` 256-byte slots (all loads in flight), iters times; out = ns per poll */
__global__ void warp_poll(const uint64_t *ring, int words, int slots, int iters, uint64_t *out)
{
    const unsigned lane = threadIdx.x;
    uint64_t acc = 0;
    const uint64_t t0 = globaltimer_ns();
    for (int i = 0; i < iters; i++) {
        uint64_t v0 = 0, v1 = 0;
        if ((int)lane < words) {
            v0 = ld_volatile_u64(&ring[lane]);
            if (slots > 1)
                v1 = ld_volatile_u64(&ring[32 + lane]);
        }
        acc += __any_sync(0xffffffffu, (v0 | v1) == 12345); /* waits for every lane's loads */
    }
    const uint64_t t1 = globaltimer_ns();
    if (lane == 0) {
        out[0] = (t1 - t0) / (uint64_t)iters;
        out[1] = acc;
    }
}

/* cost of the daemon's clocks and block barrier, in SM cycles, and the SM clock rate:
 * out = {globaltimer cycles/read, clock64 cycles/read, __syncthreads cycles, ns per 1e6 cycles} */
__global__ void clocks(int n, uint64_t *out)
{
    __shared__ uint64_t s_sink;
    uint64_t acc = 0;
    long long c0 = clock64();
    for (int i = 0; i < n; i++)
        acc += globaltimer_ns() & 1; /* each read is used: none is dropped */
    long long c1 = clock64();
    for (int i = 0; i < n; i++)
        acc += (uint64_t)clock64() & 1;
    long long c2 = clock64();
    for (int i = 0; i < n; i++)
        __syncthreads();
    long long c3 = clock64();
    const uint64_t g0 = globaltimer_ns();
    const long long c4 = clock64();
    while (clock64() - c4 < 1000000)
        ;
    const uint64_t g1 = globaltimer_ns();
    if (threadIdx.x == 0) {
        s_sink = acc;
        out[0] = (uint64_t)(c1 - c0) / (uint64_t)n;
        out[1] = (uint64_t)(c2 - c1) / (uint64_t)n;
        out[2] = (uint64_t)(c3 - c2) / (uint64_t)n;
        out[3] = g1 - g0;
        out[4] = s_sink;
    }
}

/* out = {cold ns, warm ns, barrier ns after the spin}, sums over iters */
__global__ void __launch_bounds__(512, 1) cold_code(int iters, uint64_t idle_ns, uint64_t *out)
{
    __shared__ int s_pair[dfcclNumTypes * dfcclNumOps][2];
    __shared__ uint64_t s_sink;
    for (int k = threadIdx.x; k < dfcclNumTypes * dfcclNumOps; k += blockDim.x) {
        s_pair[k][0] = k / dfcclNumOps;
        s_pair[k][1] = k % dfcclNumOps;
    }
    uint64_t cold = 0, warm = 0, bar = 0, acc = 0x0102030405060708ull, t_spin = 0;
    __syncthreads();
    for (int it = 0; it < iters; it++) {
        if (threadIdx.x == 0) { /* the idle loop: nothing but the clock */
            const uint64_t t = globaltimer_ns();
            while ((t_spin = globaltimer_ns()) - t < idle_ns)
                ;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            const uint64_t t0 = globaltimer_ns();
            bar += t0 - t_spin;
            for (int k = 0; k < dfcclNumTypes * dfcclNumOps; k++) /* bitwise ops on floats: skipped */
                if (s_pair[k][0] < dfcclFloat16 || s_pair[k][1] < dfcclBand)
                    acc = eng_reduce_packet(acc, acc + (uint64_t)k, s_pair[k][0], s_pair[k][1]);
            const uint64_t t1 = globaltimer_ns();
            for (int k = 0; k < dfcclNumTypes * dfcclNumOps; k++)
                if (s_pair[k][0] < dfcclFloat16 || s_pair[k][1] < dfcclBand)
                    acc = eng_reduce_packet(acc, acc + (uint64_t)k, s_pair[k][0], s_pair[k][1]);
            const uint64_t t2 = globaltimer_ns();
            cold += t1 - t0;
            warm += t2 - t1;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        s_sink = acc;
        out[0] = cold;
        out[1] = warm;
        out[2] = bar;
        out[3] = s_sink;
    }
}

/* one thread answers every sequence number the host publishes, until it sees 0 */
__global__ void pong(const uint64_t *h2d, uint64_t *d2h, int mode)
{
    uint64_t expect = 1;
    for (;;) {
        uint64_t v;
        while ((v = ld_volatile_u64(h2d)) < expect)
            ;
        if (v == UINT64_MAX)
            return;
        if (mode == 0) {
            st_volatile_u64(d2h, v);
        } else if (mode == 1) {
            st_release_sys_u64(d2h, v);
        } else {
            __threadfence();
            st_release_sys_u64(d2h, v);
        }
        expect = v + 1;
    }
}

/* Block 0 of side 0 posts i to side 1's word and waits for side 1's answer in its own;
 * block 0 of side 1 answers (iters + 1 times: the first is not timed); blocks 1.. spin on
 * loads of a word of their own until side 0 is done. words: [0] side 0's, [16] side 1's,
 * [32] done, [48 + 16 b] block b's. A kernel runs one side (two processes) or both
 * (sides: 2, the blocks split in halves). out[0] = ns for iters round trips (side 0). */
__global__ void flag_pingpong(uint64_t *words, int side, int sides, int iters, uint64_t *out)
{
    const int per = (int)gridDim.x / sides, me = sides == 2 ? (int)blockIdx.x / per : side;
    const int b = sides == 2 ? (int)blockIdx.x % per : (int)blockIdx.x;
    if (threadIdx.x != 0)
        return;
    uint64_t *mine = &words[me * 16], *peer = &words[(1 - me) * 16], *done = &words[32];
    if (b != 0) { /* a polling neighbour */
        const uint64_t *w = &words[48 + 16 * (blockIdx.x % 64)];
        uint64_t acc = 0;
        while (!ld_volatile_u64(done))
            acc += ld_acquire_gpu_u64(w);
        if (acc == 1)
            out[1] = acc;
        return;
    }
    /* round trip 0 only meets the other side: in two processes, the other one may still
     * be starting CUDA and opening the IPC handle, which is no part of a round trip */
    uint64_t t0 = 0;
    for (int i = 1; i <= iters + 1; i++) {
        if (me == 0) {
            st_release_gpu_u64(peer, (uint64_t)i);
            while (ld_acquire_gpu_u64(mine) < (uint64_t)i)
                ;
        } else {
            while (ld_acquire_gpu_u64(mine) < (uint64_t)i)
                ;
            st_release_gpu_u64(peer, (uint64_t)i);
        }
        if (i == 1)
            t0 = globaltimer_ns();
    }
    if (me == 0) {
        out[0] = globaltimer_ns() - t0;
        st_release_gpu_u64(done, 1);
    }
}

/* --flags: the flag round trip, between blocks of one kernel and between processes */
static int flags_main(int iters, int load)
{
    int pfd[2], rfd[2];
    if (pipe(pfd) || pipe(rfd))
        return 1;
    const pid_t child = fork(); /* before CUDA: the child is a process of its own */
    if (child < 0)
        return 1;
    if (child == 0) {  /* side 1: map side 0's words, answer every round trip of each run */
        close(pfd[1]); /* a parent that dies ends the read below */
        close(rfd[0]);
        cudaIpcMemHandle_t hnd;
        uint64_t *words, *out;
        for (int run = 0; run < 2; run++) {
            if (read(pfd[0], &hnd, sizeof(hnd)) != (ssize_t)sizeof(hnd))
                _exit(1);
            CK(cudaIpcOpenMemHandle((void **)&words, hnd, cudaIpcMemLazyEnablePeerAccess));
            CK(cudaMalloc((void **)&out, 2 * sizeof(uint64_t)));
            flag_pingpong<<<1 + (run ? load : 0), 32>>>(words, 1, 1, iters, out);
            CK(cudaDeviceSynchronize());
            CK(cudaIpcCloseMemHandle(words));
            cudaFree(out);
            const char ok = 1;
            if (write(rfd[1], &ok, 1) != 1)
                _exit(1);
        }
        _exit(0);
    }
    close(pfd[0]);
    close(rfd[1]);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: gpu_floor needs a CUDA device\n");
        kill(child, SIGKILL);
        return 77;
    }
    uint64_t *words, *out, h[2];
    CK(cudaMalloc((void **)&words, (48 + 16 * 64) * sizeof(uint64_t)));
    CK(cudaMalloc((void **)&out, 2 * sizeof(uint64_t)));
    for (int run = 0; run < 2; run++) { /* one kernel, both sides in it */
        CK(cudaMemset(words, 0, (48 + 16 * 64) * sizeof(uint64_t)));
        const int per = 1 + (run ? load : 0);
        flag_pingpong<<<2 * per, 32>>>(words, 0, 2, iters, out);
        CK(cudaMemcpy(h, out, sizeof(uint64_t), cudaMemcpyDeviceToHost));
        printf(
            "# floor: flag round trip (gpu-scope release, acquire polls), two blocks of one kernel, %d more "
            "polling blocks a side: %.0f ns\n",
            per - 1, (double)h[0] / iters);
    }
    for (int run = 0; run < 2; run++) { /* two processes */
        CK(cudaMemset(words, 0, (48 + 16 * 64) * sizeof(uint64_t)));
        CK(cudaDeviceSynchronize());
        cudaIpcMemHandle_t hnd;
        CK(cudaIpcGetMemHandle(&hnd, words));
        if (write(pfd[1], &hnd, sizeof(hnd)) != (ssize_t)sizeof(hnd))
            return 1;
        flag_pingpong<<<1 + (run ? load : 0), 32>>>(words, 0, 1, iters, out);
        CK(cudaMemcpy(h, out, sizeof(uint64_t), cudaMemcpyDeviceToHost));
        char ok;
        if (read(rfd[0], &ok, 1) != 1)
            return 1;
        printf(
            "# floor: flag round trip, two processes (CUDA IPC%s), %d more polling blocks a side: %.0f ns\n",
            getenv("CUDA_MPS_PIPE_DIRECTORY") ? ", MPS" : ", no MPS: the kernels may take turns",
            run ? load : 0, (double)h[0] / iters);
    }
    int st;
    waitpid(child, &st, 0);
    cudaFree(words);
    cudaFree(out);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--flags"))
        return flags_main(argc > 2 ? atoi(argv[2]) : 20000, argc > 3 ? atoi(argv[3]) : 15);
    const int iters = argc > 1 ? atoi(argv[1]) : 20000;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: gpu_floor needs a CUDA device\n");
        return 77;
    }
    /* ---- read latencies ---- */
    const int NCH = 4096, hops = 2000;
    uint64_t *hchain, *dhchain, *dchain, *out, *hout;
    CK(cudaHostAlloc((void **)&hchain, NCH * sizeof(uint64_t), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dhchain, hchain, 0));
    for (int i = 0; i < NCH; i++) /* stride of 17 lines: no two hops share a line */
        hchain[i] = (uint64_t)((i + 17 * 16) % NCH);
    CK(cudaMalloc((void **)&dchain, NCH * sizeof(uint64_t)));
    CK(cudaMemcpy(dchain, hchain, NCH * sizeof(uint64_t), cudaMemcpyHostToDevice));
    CK(cudaMalloc((void **)&out, 2 * sizeof(uint64_t)));
    hout = (uint64_t *)malloc(2 * sizeof(uint64_t));
    double pcie = 0, l2 = 0;
    for (int rep = 0; rep < 3; rep++) { /* the last repetition counts (warm) */
        chase<<<1, 1>>>(dhchain, hops, out);
        CK(cudaMemcpy(hout, out, 2 * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        pcie = (double)hout[0] / hops;
        chase<<<1, 1>>>(dchain, hops, out);
        CK(cudaMemcpy(hout, out, 2 * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        l2 = (double)hout[0] / hops;
    }
    printf("# floor: dependent volatile 8-byte read, one GPU thread: host-mapped (PCIe) %.0f ns, device "
           "memory (L2) %.0f ns\n",
           pcie, l2);

    {
        uint64_t *dout, h[5];
        CK(cudaMalloc((void **)&dout, 5 * sizeof(uint64_t)));
        for (int rep = 0; rep < 2; rep++)
            clocks<<<1, 512>>>(1000, dout);
        CK(cudaMemcpy(h, dout, 5 * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        const double ns_per_cycle = (double)h[3] / 1e6;
        printf(
            "# floor: one %%globaltimer read %llu cycles (%.0f ns), clock64 %llu cycles, __syncthreads (512 "
            "threads) %llu cycles; SM clock %.2f GHz\n",
            (unsigned long long)h[0], (double)h[0] * ns_per_cycle, (unsigned long long)h[1],
            (unsigned long long)h[2], 1.0 / ns_per_cycle);
        cudaFree(dout);
    }

    {
        uint64_t *dout, h[2];
        CK(cudaMalloc((void **)&dout, 2 * sizeof(uint64_t)));
        const int shapes[3][2] = {{1, 1}, {28, 1}, {28, 2}};
        printf("# floor: one warp polling host-mapped 256-byte slots (all loads in flight):");
        for (int k = 0; k < 3; k++) {
            warp_poll<<<1, 32>>>(dhchain, shapes[k][0], shapes[k][1], 2000, dout);
            CK(cudaMemcpy(h, dout, 2 * sizeof(uint64_t), cudaMemcpyDeviceToHost));
            printf(" %d word(s) x %d slot(s) %llu ns%s", shapes[k][0], shapes[k][1], (unsigned long long)h[0],
                   k < 2 ? "," : "\n");
        }
        cudaFree(dout);
    }

    {
        uint64_t *dout, h[4];
        CK(cudaMalloc((void **)&dout, 4 * sizeof(uint64_t)));
        const int n = 200;
        printf("# floor: cold code (eng_reduce_packet, one branch per type and op, after spinning alone):");
        const uint64_t idles[3] = {1000, 5000, 20000};
        for (int k = 0; k < 3; k++) {
            cold_code<<<1, 512>>>(n, idles[k], dout);
            CK(cudaMemcpy(h, dout, 4 * sizeof(uint64_t), cudaMemcpyDeviceToHost));
            printf(" after %llu ns: first %.0f ns, again %.0f ns, the barrier %.0f ns%s",
                   (unsigned long long)idles[k], (double)h[0] / n, (double)h[1] / n, (double)h[2] / n,
                   k < 2 ? ";" : "\n");
        }
        cudaFree(dout);
    }

    /* ---- ping-pong ---- */
    uint64_t *h2d, *d2h, *dh2d, *dd2h;
    CK(cudaHostAlloc((void **)&h2d, 256, cudaHostAllocMapped));
    CK(cudaHostAlloc((void **)&d2h, 256, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dh2d, h2d, 0));
    CK(cudaHostGetDevicePointer((void **)&dd2h, d2h, 0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    double *t = (double *)malloc(sizeof(double) * (size_t)iters);
    static const char *const names[] = {"volatile store", "st.release.sys", "__threadfence + st.release.sys"};
    for (int mode = 0; mode < 3; mode++) {
        __atomic_store_n(h2d, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(d2h, 0, __ATOMIC_SEQ_CST);
        pong<<<1, 1, 0, s>>>(dh2d, dd2h, mode);
        CK(cudaGetLastError());
        const int warm = 1000;
        for (int k = 1; k <= warm + iters; k++) {
            const double t0 = now_ns();
            __atomic_store_n(h2d, (uint64_t)k, __ATOMIC_RELEASE);
            while (__atomic_load_n(d2h, __ATOMIC_ACQUIRE) != (uint64_t)k)
                ;
            if (k > warm)
                t[k - warm - 1] = now_ns() - t0;
        }
        __atomic_store_n(h2d, UINT64_MAX, __ATOMIC_RELEASE);
        CK(cudaStreamSynchronize(s));
        qsort(t, (size_t)iters, sizeof(double), cmp);
        printf("# floor: host -> GPU -> host ping-pong through mapped words, answer by %s: median %.2f us, "
               "p10 %.2f, p90 %.2f (%d round trips)\n",
               names[mode], t[iters / 2] / 1e3, t[iters / 10] / 1e3, t[iters * 9 / 10] / 1e3, iters);
    }
    free(t);
    free(hout);
    cudaFreeHost(h2d);
    cudaFreeHost(d2h);
    cudaFreeHost(hchain);
    cudaFree(dchain);
    cudaFree(out);
    cudaStreamDestroy(s);
    return 0;
}
