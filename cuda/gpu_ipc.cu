/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA IPC transport between processes on one host (one GPU under MPS, or GPUs of
 * one host): each rank's receive FIFOs live in its own device memory, and the peers map
 * them with CUDA IPC and write into them. The receiver owns the memory, so a sender needs
 * nothing but the mapping. Flags use device scope between processes on one GPU and system
 * scope otherwise. */
#include <stdlib.h>

#include "gpu_backend.h"

/* My receive FIFOs (every group, every source rank), zeroed, and their IPC handle in
 * *mine: mine->status stays as it was (not 0) when the device cannot hold them. */
void ipc_fifo_create(eng_gpu_comm_t *gc, const gpu_geom_t *geo, gpu_boot_t *mine)
{
    gc->fifo_bytes = eng_gpu_fifo_off((size_t)geo->slots * geo->channels, 0, 0, gc->nranks, geo->big_conn,
                                      geo->small_conn);
    gc->peer_fifo = (char **)calloc((size_t)gc->nranks, sizeof(char *));
    if (gc->peer_fifo && cudaMalloc((void **)&gc->fifo, gc->fifo_bytes) == cudaSuccess &&
        cudaMemset(gc->fifo, 0, gc->fifo_bytes) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess &&
        cudaIpcGetMemHandle(&mine->handle, gc->fifo) == cudaSuccess) {
        mine->status = 0;
        mine->device = G.device;
        mine->uuid = G.uuid;
    } else {
        cudaGetLastError();
        dfccl_warn("rank %d: no device FIFOs for the communicator (%zu B): device buffers will be "
                   "refused on it",
                   gc->rank, gc->fifo_bytes);
    }
}

/* Map every local peer's FIFOs (all: their handles). 0, or the error (recorded). */
static int32_t ipc_map_peers(eng_gpu_comm_t *gc, const gpu_boot_t *all, const uint8_t *tp)
{
    gc->peer_fifo[gc->rank] = gc->fifo;
    for (int p = 0; p < gc->nranks; p++) {
        if (p == gc->rank || tp[p] != ENG_TP_SHM)
            continue;
        cudaError_t e =
            cudaIpcOpenMemHandle((void **)&gc->peer_fifo[p], all[p].handle, cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) {
            eng_set_error(dfcclSystemError, "dfcclCommInit", "cudaIpcOpenMemHandle(rank %d) failed: %s", p,
                          cudaGetErrorString(e));
            gc->peer_fifo[p] = NULL;
            return dfcclSystemError;
        }
    }
    return 0;
}

/* Connection group g with local peer p (mine too): I receive in my FIFOs and send into
 * p's; system scope when p is on another device (or DFCCL_GPU_SYS_SCOPE). */
static void ipc_conn_set(const eng_gpu_comm_t *gc, const gpu_geom_t *geo, size_t g, int p,
                         const gpu_boot_t *all, eng_conn_t *cn)
{
    const size_t ctrl = ENG_GPU_CTRL_BYTES;
    const int rank = gc->rank, nranks = gc->nranks;
    cn->recv_ctrl =
        (eng_conn_ctrl_t *)(gc->fifo + eng_gpu_fifo_off(g, p, rank, nranks, geo->big_conn, geo->small_conn));
    cn->recv_data = (char *)cn->recv_ctrl + ctrl;
    cn->send_ctrl = (eng_conn_ctrl_t *)(gc->peer_fifo[p] +
                                        eng_gpu_fifo_off(g, rank, p, nranks, geo->big_conn, geo->small_conn));
    cn->send_data = (char *)cn->send_ctrl + ctrl;
    cn->sys = eng_config.gpu_sys_scope || memcmp(&all[p].uuid, &all[rank].uuid, sizeof(all[p].uuid)) != 0;
}

/* Unmap the peers' FIFOs and free mine. */
static void ipc_close(eng_gpu_comm_t *gc)
{
    if (gc->peer_fifo) {
        for (int p = 0; p < gc->nranks; p++)
            if (p != gc->rank && gc->peer_fifo[p])
                cudaIpcCloseMemHandle(gc->peer_fifo[p]);
        free(gc->peer_fifo);
    }
    if (gc->fifo)
        cudaFree(gc->fifo);
}

const gpu_transport_t gpu_tp_ipc = {"cuda-ipc", ipc_map_peers, NULL, ipc_conn_set, ipc_close};
