/* SPDX-License-Identifier: BSD-3-Clause */
/* The zero-copy read's host side (engine/algo_read.h; the daemon's half is
 * cuda_read.cuh). An owner exports the allocation behind each send buffer it submits to
 * ENG_ALGO_READ into one of ENG_READ_SLOTS slots of its segment's header (the page every
 * same-host peer has mapped already, so no new shared memory and no exchange at
 * creation): its CUDA IPC handle, size and a generation no other export of this
 * communicator's rank ever had. A reader's daemon that misses a (slot, generation) asks
 * its host through the communicator's map table (host-mapped: the daemon writes `want`
 * there), and the reader's host opens the handle at its next progress call, from the
 * waits: nothing ever blocks on it, the first call on a new buffer is staged and later
 * ones are read where they are.
 *
 * The owner's cache is keyed by the allocation's buffer id (CU_POINTER_ATTRIBUTE_
 * BUFFER_ID, unique per allocation: a buffer freed and allocated again at the same
 * address is a new export), and it reuses a slot only once every collective that named
 * it has completed here (a slot tracks GPU_READ_USERS of them; a collective that finds
 * them all in flight is staged). That collective completed only after every reader
 * replied, and a reader replies after its copy: so when a reader's host replaces a
 * mapping (a descriptor named the slot's new generation), no daemon reads the old one. */
#include <cuda.h>

#include "gpu_backend.h"

#define GPU_READ_USERS 8 /* requests in flight one export slot keeps track of */

struct gpu_read {
    eng_read_export_t *mine;  /* my slots, in my segment's header */
    eng_read_export_t **peer; /* [nranks]: each same-host peer's slots, NULL for the others */
    eng_read_map_t *map;      /* host-mapped [nranks][ENG_READ_SLOTS] (device alias map_dev) */
    eng_read_map_t *map_dev;
    eng_read_cache_t *cache; /* device [nranks][ENG_READ_SLOTS]: the daemon's copies of map's entries */
    uint64_t *failed;        /* [nranks][ENG_READ_SLOTS]: a generation whose handle would not open */
    struct {
        unsigned long long buf_id;
        uint64_t base, size, gen;
        /* the requests that named it and may be in flight (-1: none), with G.id_uses[id]
         * then (the id was not reused since): in submission order they need not complete */
        int id[GPU_READ_USERS];
        uint32_t use[GPU_READ_USERS];
    } exp[ENG_READ_SLOTS];
    uint64_t next_gen;
    uint32_t next_slot;
};

/* The communicators with a read state, for the progress calls. */
static pthread_mutex_t R_lock = PTHREAD_MUTEX_INITIALIZER;
static eng_gpu_comm_t *R_comms[GPU_MAX_COMMS];
static int R_n;

/* Without its memory a rank has no read state, which is no error: its exports say
 * generation 0 and its connections have no map, so every read with it is staged. */
void gpu_read_setup(eng_gpu_comm_t *gc, uint64_t *const *arrived, const uint8_t *tp)
{
    const int N = gc->nranks;
    gpu_read_t *R = N > 0 ? (gpu_read_t *)calloc(1, sizeof(*R)) : NULL;
    if (!R)
        return;
    R->peer = (eng_read_export_t **)calloc((size_t)N, sizeof(*R->peer));
    R->failed = (uint64_t *)calloc((size_t)N * ENG_READ_SLOTS, sizeof(uint64_t));
    R->map = mapped_alloc<eng_read_map_t>((size_t)N * ENG_READ_SLOTS, &R->map_dev);
    const size_t nc = (size_t)N * ENG_READ_SLOTS;
    eng_read_cache_t *c0 = R->map ? (eng_read_cache_t *)calloc(nc, sizeof(*c0)) : NULL;
    for (size_t i = 0; c0 && i < nc; i++)
        c0[i].map = R->map_dev + i; /* generation 0: nothing found yet */
    /* on the legacy stream: the communicator's cudaMemcpy of its connections, which the
     * daemon needs before it can look here, follows it there */
    if (!c0 || cudaMalloc((void **)&R->cache, nc * sizeof(*c0)) != cudaSuccess ||
        cudaMemcpy(R->cache, c0, nc * sizeof(*c0), cudaMemcpyHostToDevice) != cudaSuccess) {
        cudaGetLastError();
        if (R->cache)
            cudaFree(R->cache);
        R->cache = NULL;
    }
    free(c0);
    if (!R->peer || !R->failed || !R->map || !R->cache) {
        cudaGetLastError();
        if (R->map)
            cudaFreeHost(R->map);
        if (R->cache)
            cudaFree(R->cache);
        free(R->peer);
        free(R->failed);
        free(R);
        dfccl_warn("no memory for the zero-copy read's maps: alltoall and allgather on device buffers "
                   "are staged on this communicator");
        return;
    }
    gc->read = R;
    for (int i = 0; i < ENG_READ_SLOTS; i++)
        for (int u = 0; u < GPU_READ_USERS; u++)
            R->exp[i].id[u] = -1;
    /* arrived[p] is &gpu_arrived in p's mapped segment header (engine/comm.c), NULL for a
     * peer without one (net) */
    for (int p = 0; p < N; p++)
        if (arrived[p] && tp[p] == ENG_TP_SHM) {
            eng_seg_hdr_t *h = (eng_seg_hdr_t *)((char *)arrived[p] - offsetof(eng_seg_hdr_t, gpu_arrived));
            if (p == gc->rank)
                R->mine = h->reads;
            else
                R->peer[p] = h->reads;
        }
    pthread_mutex_lock(&R_lock);
    R_comms[R_n++] = gc;
    pthread_mutex_unlock(&R_lock);
}

eng_read_cache_t *gpu_read_cache_dev(const eng_gpu_comm_t *gc, int p)
{
    const gpu_read_t *R = gc->read;
    return R && R->peer[p] ? R->cache + (size_t)p * ENG_READ_SLOTS : NULL;
}

/* After the daemon dropped the communicator: every mapping closed. */
void gpu_read_close(eng_gpu_comm_t *gc)
{
    gpu_read_t *R = gc->read;
    if (!R)
        return;
    pthread_mutex_lock(&R_lock);
    for (int i = 0; i < R_n; i++)
        if (R_comms[i] == gc) {
            R_comms[i] = R_comms[--R_n];
            break;
        }
    pthread_mutex_unlock(&R_lock);
    if (R->map) {
        for (int i = 0; i < gc->nranks * ENG_READ_SLOTS; i++)
            if (R->map[i].gen && R->map[i].base)
                cudaIpcCloseMemHandle((void *)(uintptr_t)R->map[i].base);
        cudaFreeHost(R->map);
    }
    cudaFree(R->cache);
    if (R->mine) /* nothing of mine is exported any more */
        for (int i = 0; i < ENG_READ_SLOTS; i++)
            dfccl_store_release64(&R->mine[i].gen, 0);
    cudaGetLastError();
    free(R->peer);
    free(R->failed);
    free(R);
    gc->read = NULL;
}

/* cuPointerGetAttributes from the driver the runtime loaded (no link against libcuda). */
typedef CUresult (*get_attrs_fn_t)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
static get_attrs_fn_t get_attrs_locked(void)
{
    static get_attrs_fn_t fn;
    static int tried;
    if (!tried) {
        tried = 1;
        void *f = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &f, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (get_attrs_fn_t)f;
        cudaGetLastError();
    }
    return fn;
}

/* User u of slot i is done: none, an id reused since (so completed), or completed. */
static int user_done_locked(const gpu_read_t *R, int i, int u)
{
    const int id = R->exp[i].id[u];
    return id < 0 || G.id_uses[id] != R->exp[i].use[u] || dfccl_load_acquire(&G.done[id]);
}

/* Slot i may take another allocation: every collective that named it has completed here,
 * so every reader has replied, after its copy: no daemon reads the old mapping. */
static int slot_free_locked(const gpu_read_t *R, int i)
{
    for (int u = 0; u < GPU_READ_USERS; u++)
        if (R->exp[i].gen && !user_done_locked(R, i, u))
            return 0;
    return 1;
}

/* Slot i can record one more user (gpu_read_mark_locked). */
static int slot_room_locked(const gpu_read_t *R, int i)
{
    for (int u = 0; u < GPU_READ_USERS; u++)
        if (user_done_locked(R, i, u))
            return 1;
    return 0;
}

void gpu_read_export(eng_gpu_comm_t *gc, const void *buf, uint64_t bytes, eng_block_t *desc)
{
    memset(desc, 0, sizeof(*desc)); /* generation 0: not exported, every reader asks for a PUSH */
    gpu_read_t *R = gc ? gc->read : NULL;
    if (!R || !R->mine || !buf)
        return;
    pthread_mutex_lock(&G_lock);
    get_attrs_fn_t attrs = get_attrs_locked();
    unsigned long long buf_id = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    unsigned long long ipc = 0; /* a boolean the driver writes (wide enough whatever its width) */
    CUpointer_attribute at[4] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
    void *out[4] = {&buf_id, &start, &size, &ipc};
    const uint64_t addr = (uint64_t)(uintptr_t)buf;
    /* not exportable (a pool's memory, managed, VMM): generation 0 */
    if (!attrs || attrs(4, at, out, (CUdeviceptr)addr) != CUDA_SUCCESS || !ipc || !start || addr < start ||
        addr - start > size || bytes > size - (addr - start))
        goto out;
    {
        int s = -1;
        for (int i = 0; i < ENG_READ_SLOTS && s < 0; i++)
            if (R->exp[i].gen && R->exp[i].buf_id == buf_id && R->exp[i].base == start)
                s = i;
        if (s >= 0 && !slot_room_locked(R, s))
            goto out; /* GPU_READ_USERS of its collectives in flight: this one is staged */
        if (s < 0) {  /* a new export, into a slot no collective in flight names */
            for (uint32_t k = 0; k < ENG_READ_SLOTS && s < 0; k++) {
                const int i = (int)((R->next_slot + k) % ENG_READ_SLOTS);
                if (slot_free_locked(R, i))
                    s = i;
            }
            cudaIpcMemHandle_t h;
            if (s < 0 || cudaIpcGetMemHandle(&h, (void *)(uintptr_t)start) != cudaSuccess) {
                cudaGetLastError();
                goto out;
            }
            R->next_slot = (uint32_t)(s + 1) % ENG_READ_SLOTS;
            eng_read_export_t *e = &R->mine[s];
            const uint64_t gen = ++R->next_gen;
            /* the seqlock (eng_types.h): readers see gen 0, then the whole new entry */
            dfccl_store_release64(&e->gen, 0);
            dfccl_fence_seq_cst();
            static_assert(sizeof(h) == sizeof(e->handle), "an IPC handle fits the export slot");
            memcpy(e->handle, &h, sizeof(h));
            e->size = size;
            dfccl_store_release64(&e->gen, gen);
            R->exp[s].buf_id = buf_id;
            R->exp[s].base = start;
            R->exp[s].size = size;
            R->exp[s].gen = gen;
            for (int u = 0; u < GPU_READ_USERS; u++)
                R->exp[s].id[u] = -1;
        }
        desc->soff = addr - start;
        desc->sbytes = bytes;
        desc->roff = R->exp[s].gen;
        desc->rbytes = (uint64_t)s;
    }
out:
    pthread_mutex_unlock(&G_lock);
}

void gpu_read_mark_locked(eng_gpu_comm_t *gc, const eng_block_t *desc, int id)
{
    gpu_read_t *R = gc->read;
    if (!R || !desc->roff || desc->rbytes >= ENG_READ_SLOTS || R->exp[desc->rbytes].gen != desc->roff)
        return;
    const int i = (int)desc->rbytes;
    for (int u = 0; u < GPU_READ_USERS; u++)
        if (user_done_locked(R, i, u)) { /* gpu_read_export saw room, under the same lock order */
            R->exp[i].id[u] = id;
            R->exp[i].use[u] = G.id_uses[id];
            return;
        }
}

/* One reader's map entry (peer p, slot s) to the generation its daemon asked for, when
 * the owner still exports it; a handle that does not open (a rank of this same process,
 * a device without peer access) is not tried again for that generation. */
static void map_entry(gpu_read_t *R, int p, int s)
{
    eng_read_map_t *m = &R->map[(size_t)p * ENG_READ_SLOTS + s];
    uint64_t *failed = &R->failed[(size_t)p * ENG_READ_SLOTS + s];
    const uint64_t want = DFCCL_READ_ONCE(m->want);
    if (!want || want == DFCCL_READ_ONCE(m->gen) || want == *failed)
        return;
    const eng_read_export_t *e = &R->peer[p][s];
    const uint64_t g1 = dfccl_load_acquire64(&e->gen);
    cudaIpcMemHandle_t h;
    memcpy(&h, e->handle, sizeof(h));
    const uint64_t size = DFCCL_READ_ONCE(e->size);
    dfccl_fence_seq_cst();
    if (g1 != want || DFCCL_READ_ONCE(e->gen) != g1)
        return; /* the owner moved on: a later descriptor asks for its generation */
    if (m->gen) {
        /* no daemon reads it: the owner reused the slot only after the collectives that
         * named the old generation completed, after every reader's copy */
        dfccl_store_release64(&m->gen, 0);
        cudaIpcCloseMemHandle((void *)(uintptr_t)m->base);
        m->base = 0;
    }
    void *ptr = NULL;
    if (cudaIpcOpenMemHandle(&ptr, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
        cudaGetLastError();
        *failed = want;
        dfccl_info("zero-copy read: rank %d's buffer (slot %d) cannot be mapped here; it is staged", p, s);
        return;
    }
    m->base = (uint64_t)(uintptr_t)ptr;
    m->size = size;
    dfccl_store_release64(&m->gen, want); /* the daemon's acquire of gen reads base and size */
}

void gpu_read_progress(void)
{
    if (!DFCCL_READ_ONCE(R_n) || pthread_mutex_trylock(&R_lock) != 0)
        return; /* another thread is at it */
    int dev = -1;
    for (int i = 0; i < R_n; i++) {
        gpu_read_t *R = R_comms[i]->read;
        for (int p = 0; p < R_comms[i]->nranks; p++)
            for (int s = 0; R->peer[p] && s < ENG_READ_SLOTS; s++) {
                const eng_read_map_t *m = &R->map[(size_t)p * ENG_READ_SLOTS + s];
                const uint64_t want = DFCCL_READ_ONCE(m->want);
                if (!want || want == DFCCL_READ_ONCE(m->gen) ||
                    want == R->failed[(size_t)p * ENG_READ_SLOTS + s])
                    continue;
                /* the calling thread may have another device current (the application's) */
                if (dev < 0 && (cudaGetDevice(&dev) != cudaSuccess || dev != G.device))
                    cudaSetDevice(G.device);
                map_entry(R, p, s);
            }
    }
    if (dev >= 0 && dev != G.device)
        cudaSetDevice(dev);
    pthread_mutex_unlock(&R_lock);
}
