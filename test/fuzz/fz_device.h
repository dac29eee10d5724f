/* SPDX-License-Identifier: BSD-3-Clause */
/* The deadlock fuzzer's --device (fz_native_dev, built with -DFZ_CUDA; fuzz.h): every
 * buffer is a device copy of the host one (guard zones included), and before a
 * submission the rank now and then synchronizes the device while collectives are
 * pending (what the GPU daemon's stall quit exists for). */
#ifndef DFCCL_FZ_DEVICE_H
#define DFCCL_FZ_DEVICE_H

#include <cuda_runtime.h>

#include "fuzz.h"

static int fz_device;

#define FZ_CU(call)                                                                                          \
    do {                                                                                                     \
        cudaError_t fz_e_ = (call);                                                                          \
        if (fz_e_ != cudaSuccess)                                                                            \
            TC_FAIL("%s: %s", #call, cudaGetErrorString(fz_e_));                                             \
    } while (0)

static void fz_cuda_bind(void)
{
    const char *l = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int ndev = 0;
    FZ_CU(cudaGetDeviceCount(&ndev));
    if (ndev < 1)
        TC_FAIL("--device: no CUDA device");
    FZ_CU(cudaSetDevice((l ? atoi(l) : tc_rank) % ndev));
}

static void *fz_dev_copy(const void *host, size_t bytes)
{
    void *d = NULL;
    FZ_CU(cudaMalloc(&d, bytes + 2 * FZ_GUARD));
    FZ_CU(cudaMemcpy(d, (const char *)host - FZ_GUARD, bytes + 2 * FZ_GUARD, cudaMemcpyHostToDevice));
    return d;
}

static void fz_dev_back(void *host, void *d, size_t bytes)
{
    FZ_CU(cudaMemcpy((char *)host - FZ_GUARD, d, bytes + 2 * FZ_GUARD, cudaMemcpyDeviceToHost));
    FZ_CU(cudaFree(d));
}

/* map a host pointer into x->send or x->recv onto its device copy */
static void *fz_dev_ptr(const fz_run_t *x, void *p)
{
    if ((char *)p >= (char *)x->recv && (char *)p <= (char *)x->recv + x->recv_n * tc_type_size(x->o->t))
        return (char *)x->drecv + FZ_GUARD + ((char *)p - (char *)x->recv);
    return (char *)x->dsend + FZ_GUARD + ((char *)p - (char *)x->send);
}

static void fz_dev_sync(tc_rng_t *g)
{
    static _Thread_local void *scratch;
    switch (tc_rng_below(g, 12)) {
    case 0: FZ_CU(cudaDeviceSynchronize()); break;
    case 1: { /* a cudaFree waits for the device too */
        void *d = NULL;
        FZ_CU(cudaMalloc(&d, 4096));
        FZ_CU(cudaFree(d));
        break;
    }
    case 2: /* work on the legacy default stream, waited for */
        if (!scratch)
            FZ_CU(cudaMalloc(&scratch, 1 << 20));
        FZ_CU(cudaMemsetAsync(scratch, (int)tc_rng_below(g, 256), 1 << 20, 0));
        FZ_CU(cudaStreamSynchronize(0));
        break;
    default: break;
    }
}

#endif /* DFCCL_FZ_DEVICE_H */
