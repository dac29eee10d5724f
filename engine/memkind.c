/* SPDX-License-Identifier: BSD-3-Clause */
/* The one memory-kind detector of dfccl (dfcclPointerGetKind): the engine picks a
 * daemon with it, and the Open MPI component its path.
 *
 * It asks the CUDA driver, opened with dlopen at the first query and never initialised
 * here (no cuInit): a process that has not initialised CUDA itself can't hold device
 * memory, and cuPointerGetAttributes answers CU_ERROR_NOT_INITIALIZED there, which
 * reads as host. So a plain program on a GPU machine gets no CUDA context from dfccl,
 * and a build without CUDA still tells device memory from host memory (and refuses it,
 * rather than let the CPU daemon read a device address). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "eng_atomic.h"
#include "eng_log.h"
#include "memkind.h"

/* values of CUpointer_attribute, CUmemorytype and CUresult (stable driver ABI) */
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_POINTER_ATTRIBUTE_SYNC_MEMOPS 6
#define CU_POINTER_ATTRIBUTE_IS_MANAGED  8
#define CU_MEMORYTYPE_DEVICE             2
#define CU_ERROR_NOT_INITIALIZED         3
#define CU_ERROR_DEINITIALIZED           4

typedef int (*cu_get_attrs_fn)(unsigned int n, int *attrs, void **data, unsigned long long ptr);
typedef int (*cu_set_attr_fn)(const void *value, int attr, unsigned long long ptr);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cu_get_attrs_fn get_attrs;
static cu_set_attr_fn set_attr;

static void driver_open(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return; /* no driver: every pointer is host memory */
    get_attrs = (cu_get_attrs_fn)dlsym(h, "cuPointerGetAttributes");
    set_attr = (cu_set_attr_fn)dlsym(h, "cuPointerSetAttribute");
    if (!get_attrs)
        dfccl_info("the CUDA driver has no cuPointerGetAttributes: every buffer is taken for host memory");
}

dfcclMemKind_t eng_mem_kind(const void *ptr)
{
    if (!ptr)
        return dfcclMemHost;
    pthread_once(&once, driver_open);
    if (!get_attrs)
        return dfcclMemHost;
    /* IS_MANAGED and SYNC_MEMOPS may write a bool: keep them zeroed */
    unsigned int type = 0, managed = 0, sync_memops = 0;
    int attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                    CU_POINTER_ATTRIBUTE_SYNC_MEMOPS};
    void *data[3] = {&type, &managed, &sync_memops};
    const unsigned long long p = (unsigned long long)(uintptr_t)ptr;
    /* one query on every call's path. Unknown (plain host) pointers succeed with zeroed
     * attributes; an uninitialised driver fails: both are host. Any other failure may be
     * an allocation that refuses SYNC_MEMOPS (the driver's virtual memory API): its kind
     * is asked again without it, and it gets none */
    const int err = get_attrs(3, attrs, data, p);
    if (err == CU_ERROR_NOT_INITIALIZED || err == CU_ERROR_DEINITIALIZED)
        return dfcclMemHost;
    if (err != 0) {
        type = managed = 0;
        sync_memops = 1;
        if (get_attrs(2, attrs, data, p) != 0)
            return dfcclMemHost;
    }
    if (managed)
        return dfcclMemManaged;
    if (type != CU_MEMORYTYPE_DEVICE)
        return dfcclMemHost;
    /* The GPU daemon reads device buffers on its own, unordered with the application's
     * streams. A synchronous cudaMemcpy from pageable memory (or a cudaMemset) may
     * return before it has landed; with SYNC_MEMOPS on the allocation it returns after,
     * and setting it waits for any such operation still pending. Once per allocation,
     * as Open MPI's own CUDA support does for the buffers it registers; an allocation
     * that refuses it is device memory all the same. */
    if (!sync_memops && set_attr) {
        const unsigned int one = 1;
        static int said; /* such an allocation would say it at every call */
        if (set_attr(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) != 0 && !dfccl_exchange_relaxed(&said, 1))
            dfccl_info(
                "cuPointerSetAttribute(SYNC_MEMOPS, %p) failed: synchronous copies into such memory may "
                "still be in flight when the daemon reads it (said once)",
                ptr);
    }
    return dfcclMemDevice;
}

dfcclResult_t dfcclPointerGetKind(const void *ptr, dfcclMemKind_t *kind_p)
{
    if (!kind_p)
        return DFCCL_ARG_ERROR("kind_p is NULL");
    *kind_p = eng_mem_kind(ptr);
    return dfcclSuccess;
}
