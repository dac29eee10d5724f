/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA driver, opened with dlopen: staging copies, scratch memory and the context of
 * a device pointer. Pointer kinds come from libdfccl (dfcclPointerGetKind), the one
 * detector the engine uses too.
 *
 * The driver is loaded at the first use and never initialised by us (no cuInit), which
 * keeps a plain MPI program on a GPU machine free of a CUDA context. The few prototypes
 * are declared here, so building needs no CUDA headers.
 */
#include "ompi_config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"

#include "coll_dfccl.h"
#include "coll_dfccl_cuda.h"

typedef int dfccl_cu_result_t;                   /* CUresult; 0 is CUDA_SUCCESS */
typedef unsigned long long dfccl_cu_deviceptr_t; /* CUdeviceptr on 64-bit hosts */
typedef struct dfccl_cu_ctx_st *dfccl_cu_context_t;

/* values of CUpointer_attribute and CUmemorytype (stable driver ABI) */
#define DFCCL_CU_POINTER_ATTRIBUTE_CONTEXT 1

static struct {
    pthread_once_t once;
    void *handle;
    dfccl_cu_result_t (*pointer_get_attributes)(unsigned int n, int *attrs, void **data,
                                                dfccl_cu_deviceptr_t ptr);
    dfccl_cu_result_t (*memcpy)(dfccl_cu_deviceptr_t dst, dfccl_cu_deviceptr_t src, size_t len);
    dfccl_cu_result_t (*ctx_get_current)(dfccl_cu_context_t *ctx_p);
    dfccl_cu_result_t (*ctx_set_current)(dfccl_cu_context_t ctx);
    dfccl_cu_result_t (*ctx_push_current)(dfccl_cu_context_t ctx);
    dfccl_cu_result_t (*ctx_pop_current)(dfccl_cu_context_t *ctx_p);
    dfccl_cu_result_t (*get_error_string)(dfccl_cu_result_t res, const char **str_p);
    dfccl_cu_result_t (*stream_synchronize)(void *stream);
    dfccl_cu_result_t (*mem_alloc)(dfccl_cu_deviceptr_t *ptr_p, size_t len);
    dfccl_cu_result_t (*mem_free)(dfccl_cu_deviceptr_t ptr);
    dfccl_cu_result_t (*mem_alloc_async)(dfccl_cu_deviceptr_t *ptr_p, size_t len, void *stream);
    dfccl_cu_result_t (*mem_free_async)(dfccl_cu_deviceptr_t ptr, void *stream);
} cu = {.once = PTHREAD_ONCE_INIT};

static void cu_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        /* the normal case on a machine without a GPU: say it only when asked */
        DFCCL_VERBOSE(2, "no CUDA driver (%s): every buffer is host memory", dlerror());
        return;
    }
    *(void **)&cu.pointer_get_attributes = dlsym(h, "cuPointerGetAttributes");
    *(void **)&cu.memcpy = dlsym(h, "cuMemcpy");
    *(void **)&cu.ctx_get_current = dlsym(h, "cuCtxGetCurrent");
    *(void **)&cu.ctx_set_current = dlsym(h, "cuCtxSetCurrent");
    *(void **)&cu.ctx_push_current = dlsym(h, "cuCtxPushCurrent_v2");
    *(void **)&cu.ctx_pop_current = dlsym(h, "cuCtxPopCurrent_v2");
    *(void **)&cu.get_error_string = dlsym(h, "cuGetErrorString");
    *(void **)&cu.stream_synchronize = dlsym(h, "cuStreamSynchronize");
    *(void **)&cu.mem_alloc = dlsym(h, "cuMemAlloc_v2");
    *(void **)&cu.mem_free = dlsym(h, "cuMemFree_v2");
    *(void **)&cu.mem_alloc_async = dlsym(h, "cuMemAllocAsync");
    *(void **)&cu.mem_free_async = dlsym(h, "cuMemFreeAsync");
    if (!cu.pointer_get_attributes || !cu.memcpy || !cu.ctx_get_current || !cu.ctx_set_current ||
        !cu.ctx_push_current || !cu.ctx_pop_current || !cu.stream_synchronize) {
        DFCCL_VERBOSE(1, "CUDA driver too old (a symbol is missing): every buffer is host memory");
        memset((char *)&cu + offsetof(__typeof__(cu), pointer_get_attributes), 0,
               sizeof(cu) - offsetof(__typeof__(cu), pointer_get_attributes));
        dlclose(h);
        return;
    }
    cu.handle = h;
    DFCCL_VERBOSE(1, "CUDA driver loaded: device buffers are recognised");
}

bool mca_coll_dfccl_cuda_driver(void)
{
    pthread_once(&cu.once, cu_load);
    return cu.handle != NULL && cu.pointer_get_attributes != NULL;
}

static const char *cu_error_string(dfccl_cu_result_t res)
{
    const char *s = NULL;
    if (cu.get_error_string)
        cu.get_error_string(res, &s);
    return s ? s : "unknown CUDA error";
}

mca_coll_dfccl_mem_t mca_coll_dfccl_mem_kind(const void *ptr)
{
    if (!ptr || ptr == MPI_IN_PLACE)
        return MCA_COLL_DFCCL_MEM_HOST;
    if (mca_coll_dfccl_component.fake_device)
        return MCA_COLL_DFCCL_MEM_DEVICE;
    /* the copies and contexts this file gives for device buffers need the driver here
     * too (without it no buffer is device memory to the component, as before) */
    pthread_once(&cu.once, cu_load);
    if (!cu.handle)
        return MCA_COLL_DFCCL_MEM_HOST;
    /* libdfccl's detector, the engine's own; managed memory counts as host here: the
     * CPU (the previous module, the CPU daemon) may touch it as it is */
    dfcclMemKind_t k = dfcclMemHost;
    dfcclPointerGetKind(ptr, &k);
    return k == dfcclMemDevice ? MCA_COLL_DFCCL_MEM_DEVICE : MCA_COLL_DFCCL_MEM_HOST;
}

/* The context owning a device pointer, for threads that have none current. */
static dfccl_cu_context_t cu_pointer_context(const void *ptr)
{
    dfccl_cu_context_t ctx = NULL;
    int attr = DFCCL_CU_POINTER_ATTRIBUTE_CONTEXT;
    void *data = &ctx;
    if (cu.pointer_get_attributes(1, &attr, &data, (dfccl_cu_deviceptr_t)(uintptr_t)ptr) != 0)
        return NULL;
    return ctx;
}

/* For a thread with no current context (a progress or set-up thread): make the one
 * owning device pointer a (else b) current. 1 when pushed: cu_pop() after. */
static int cu_push_for(const void *a, const void *b)
{
    dfccl_cu_context_t cur = NULL, ctx;
    if (cu.ctx_get_current(&cur) == 0 && cur)
        return 0;
    ctx = cu_pointer_context(a);
    if (!ctx && b)
        ctx = cu_pointer_context(b);
    return ctx && cu.ctx_push_current(ctx) == 0;
}

static void cu_pop(int pushed)
{
    dfccl_cu_context_t ctx;
    if (pushed)
        cu.ctx_pop_current(&ctx);
}

/* Scratch memory stream-ordered on the legacy stream when the driver has it: the free
 * then never waits for the GPU daemon's kernel, which runs on a non-blocking stream. */
static bool cu_async_alloc(void)
{
    return cu.mem_alloc_async && cu.mem_free_async;
}

int mca_coll_dfccl_copy(void *dst, const void *src, size_t len, bool dst_device)
{
    if (!len || dst == src)
        return OMPI_SUCCESS;
    if (!cu.handle || mca_coll_dfccl_component.fake_device) { /* both sides are host memory */
        memmove(dst, src, len);
        return OMPI_SUCCESS;
    }
    const int pushed = cu_push_for(dst, src);
    /* unified addressing: the driver infers the direction from the pointers; the
     * copy is synchronous with respect to the host for pageable memory */
    dfccl_cu_result_t res =
        cu.memcpy((dfccl_cu_deviceptr_t)(uintptr_t)dst, (dfccl_cu_deviceptr_t)(uintptr_t)src, len);
    /* from pageable memory the copy may return before its DMA lands: wait for the
     * legacy stream it ran on, so that the data is in place when MPI returns even
     * for work the application then puts on a non-blocking stream */
    if (res == 0 && dst_device)
        res = cu.stream_synchronize(NULL);
    cu_pop(pushed);
    if (res != 0) {
        DFCCL_ERROR("cuMemcpy(%p, %p, %zu) failed: %s (%d)", dst, src, len, cu_error_string(res), res);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

void *mca_coll_dfccl_device_alloc(size_t len, const void *like)
{
    if (mca_coll_dfccl_component.fake_device) /* testing: host memory stands for device memory */
        return malloc(len ? len : 1);
    pthread_once(&cu.once, cu_load);
    if (!cu.handle || !cu.mem_alloc || !cu.mem_free)
        return NULL;
    const int pushed = cu_push_for(like, NULL);
    dfccl_cu_deviceptr_t d = 0;
    dfccl_cu_result_t res =
        cu_async_alloc() ? cu.mem_alloc_async(&d, len ? len : 1, NULL) : cu.mem_alloc(&d, len ? len : 1);
    if (res == 0 && cu_async_alloc())
        res = cu.stream_synchronize(NULL); /* allocated before the daemon touches it */
    cu_pop(pushed);
    if (res != 0) {
        DFCCL_ERROR("cuMemAlloc of %zu bytes failed: %s (%d)", len, cu_error_string(res), res);
        return NULL;
    }
    return (void *)(uintptr_t)d;
}

void mca_coll_dfccl_device_free(void *ptr)
{
    if (ptr && mca_coll_dfccl_component.fake_device) {
        free(ptr);
        return;
    }
    if (!ptr || !cu.handle)
        return;
    const int pushed = cu_push_for(ptr, NULL);
    if (cu_async_alloc())
        cu.mem_free_async((dfccl_cu_deviceptr_t)(uintptr_t)ptr, NULL);
    else
        cu.mem_free((dfccl_cu_deviceptr_t)(uintptr_t)ptr);
    cu_pop(pushed);
}

int mca_coll_dfccl_device_move(void *dst, const void *src, size_t len)
{
    const size_t apart = (const char *)src > (char *)dst ? (size_t)((const char *)src - (char *)dst)
                                                         : (size_t)((char *)dst - (const char *)src);
    /* cuMemcpy between overlapping ranges is undefined: through a temporary then */
    if (apart >= len || !cu.handle || mca_coll_dfccl_component.fake_device)
        return mca_coll_dfccl_copy(dst, src, len, true);
    void *tmp = mca_coll_dfccl_device_alloc(len, dst);
    if (!tmp)
        return OMPI_ERR_OUT_OF_RESOURCE;
    int rc = mca_coll_dfccl_copy(tmp, src, len, true);
    if (rc == OMPI_SUCCESS)
        rc = mca_coll_dfccl_copy(dst, tmp, len, true);
    mca_coll_dfccl_device_free(tmp);
    return rc;
}

int mca_coll_dfccl_device_ready(void)
{
    if (!cu.handle || !mca_coll_dfccl_component.device_sync)
        return OMPI_SUCCESS;
    dfccl_cu_result_t res = cu.stream_synchronize(NULL);
    if (res != 0) {
        DFCCL_ERROR("cuStreamSynchronize(legacy stream) failed: %s (%d)", cu_error_string(res), res);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

void *mca_coll_dfccl_cuda_context(void)
{
    dfccl_cu_context_t ctx = NULL;
    pthread_once(&cu.once, cu_load);
    if (!cu.handle || cu.ctx_get_current(&ctx) != 0)
        return NULL;
    return ctx;
}

void mca_coll_dfccl_cuda_use_context(void *ctx)
{
    if (ctx && cu.handle && cu.ctx_set_current((dfccl_cu_context_t)ctx) != 0)
        DFCCL_VERBOSE(1, "cuCtxSetCurrent failed: the engine's set-up thread uses the default device");
}

void *mca_coll_dfccl_host_alloc(size_t len)
{
    return malloc(len ? len : 1);
}

void mca_coll_dfccl_host_free(void *ptr)
{
    free(ptr);
}

void mca_coll_dfccl_cuda_fini(void)
{
    /* Deliberately nothing: the driver stays loaded for the life of the process, as
     * CUDA libraries do (the application may hold CUDA state of its own). */
}
