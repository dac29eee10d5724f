/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: the buffers. Host memory is read and written in place;
 * device memory only through cudaMemcpy/cudaMemset, so the inputs and the reference stay
 * host code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DFCCL_BENCH_CUDA
#include <cuda_runtime.h>
#endif

#include "dfccl_bench_mem.h"

#ifdef DFCCL_BENCH_CUDA
#define CUCHECK(call)                                                                                        \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess)                                                                               \
            bench_die("%s failed: %s", #call, cudaGetErrorString(e_));                                       \
    } while (0)
#endif

void *bench_buf_alloc(int mem, size_t bytes)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        void *p = NULL;
        return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
    }
#endif
    (void)mem;
    return malloc(bytes);
}

void bench_buf_free(int mem, void *p)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        if (p)
            cudaFree(p);
        return;
    }
#endif
    (void)mem;
    free(p);
}

/* dst (a benchmark buffer) = the host bytes src. */
void bench_buf_put(int mem, void *dst, const void *src, size_t bytes)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        CUCHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
        return;
    }
#endif
    (void)mem;
    memcpy(dst, src, bytes);
}

void bench_buf_get(int mem, void *dst, const void *src, size_t bytes)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        CUCHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
        return;
    }
#endif
    (void)mem;
    memcpy(dst, src, bytes);
}

void bench_buf_set(int mem, void *p, int byte, size_t bytes)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE) {
        CUCHECK(cudaMemset(p, byte, bytes));
        return;
    }
#endif
    (void)mem;
    memset(p, byte, bytes);
}

/* Before a timed call: the daemon and MPI use their own streams, so the copies and
 * the memset must have landed (cudaMemset may return before it has). */
void bench_buf_settle(int mem)
{
#ifdef DFCCL_BENCH_CUDA
    if (mem == MEM_DEVICE)
        CUCHECK(cudaDeviceSynchronize());
#endif
    (void)mem;
}

/* -B device: this rank's GPU (local rank modulo the devices, as bench/gpu_bench),
 * chosen before the dfccl communicator exists so that it gets a GPU part.
 * 0, or -1 with the reason in err. */
int bench_device_init(char *err, size_t len, char *name, size_t nlen)
{
#ifdef DFCCL_BENCH_CUDA
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        snprintf(err, len, "-B device: no CUDA device on this node (cudaGetDeviceCount: %s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return -1;
    }
    MPI_Comm local;
    int lrank;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_free(&local);
    struct cudaDeviceProp prop;
    if ((e = cudaSetDevice(lrank % ndev)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&prop, lrank % ndev)) != cudaSuccess) {
        snprintf(err, len, "-B device: cudaSetDevice(%d): %s", lrank % ndev, cudaGetErrorString(e));
        return -1;
    }
    snprintf(name, nlen, "GPU %d of %d: %.200s", lrank % ndev, ndev, prop.name);
    return 0;
#else
    (void)name;
    (void)nlen;
    snprintf(err, len, "-B device: this dfccl-bench was built without CUDA");
    return -1;
#endif
}
