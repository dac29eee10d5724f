# SPDX-License-Identifier: BSD-3-Clause
"""A real client: mpi4py in its default thread mode (it asks for MPI_THREAD_MULTIPLE).

The collectives dfccl takes on NumPy arrays (host buffers, coll_dfccl_host_buffers=1) or
CuPy arrays (device buffers, --cupy), checked element by element against a reference
computed here; then eight MPI.Comm.Dup communicators, each rank posting Iallreduce on
them in its own order from their very first call, and Waitall under a watchdog: past
--deadline seconds it prints HANG and exits 3 (with preemption off it must hang).

    mpirun -np N python3 t_mpi4py.py [--cupy] [--iters 10] [--deadline 30]
"""
import argparse
import os
import sys
import time

from mpi4py import MPI

ap = argparse.ArgumentParser()
ap.add_argument("--cupy", action="store_true")
ap.add_argument("--iters", type=int, default=10)
ap.add_argument("--deadline", type=float, default=30.0)
opt = ap.parse_args()

if opt.cupy:
    import cupy as xp
else:
    import numpy as xp
import numpy as np

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()


def fail(msg):
    print(f"[rank {rank}] FAIL t_mpi4py: {msg}", flush=True)
    world.Abort(1)


def host(a):
    return xp.asnumpy(a) if opt.cupy else a


def sync():
    # every buffer an MPI call touches must be complete first, as with any CUDA-aware MPI
    # (CuPy fills new arrays on its stream: an unsynchronized xp.zeros may land after the
    # collective wrote the result)
    if opt.cupy:
        xp.cuda.runtime.deviceSynchronize()


def expect(what, got, want):
    got = host(got)
    if got.shape != want.shape or not np.array_equal(got, want):
        bad = np.flatnonzero(got.ravel() != want.ravel())
        i = int(bad[0]) if bad.size else -1
        fail(f"{what}: element {i}: got {got.ravel()[i]} want {want.ravel()[i]}")


def contribution(r, n, dtype, salt=0):
    return (np.arange(n, dtype=np.int64) % 13 + 3 * r + salt).astype(dtype)


level = MPI.Query_thread()
# the collectives dfccl takes, on fresh arrays, checked against NumPy
for dtype in (np.float32, np.float64, np.int32, np.int64):
    n = 1000
    mine = contribution(rank, n, dtype)
    allc = [contribution(r, n, dtype) for r in range(size)]
    send = xp.asarray(mine)
    recv = xp.zeros(n, dtype=dtype)
    sync()
    world.Allreduce(send, recv, op=MPI.SUM)
    expect(f"Allreduce {dtype.__name__}", recv, sum(allc).astype(dtype))
    world.Allreduce(send, recv, op=MPI.MAX)
    expect(f"Allreduce MAX {dtype.__name__}", recv, np.maximum.reduce(allc))

    buf = xp.asarray(contribution(1 % size, n, dtype, 7) if rank == 1 % size else np.zeros(n, dtype))
    sync()
    world.Bcast(buf, root=1 % size)
    expect(f"Bcast {dtype.__name__}", buf, contribution(1 % size, n, dtype, 7))

    gathered = xp.zeros(n * size, dtype=dtype)
    sync()
    world.Allgather(send, gathered)
    expect(f"Allgather {dtype.__name__}", gathered, np.concatenate(allc))

    block = 37
    rs_send = xp.asarray(contribution(rank, block * size, dtype, 1))
    rs_recv = xp.zeros(block, dtype=dtype)
    sync()
    world.Reduce_scatter_block(rs_send, rs_recv, op=MPI.SUM)
    full = sum(contribution(r, block * size, dtype, 1) for r in range(size)).astype(dtype)
    expect(f"Reduce_scatter_block {dtype.__name__}", rs_recv, full[rank * block:(rank + 1) * block])
    counts = [block + (r % 3) for r in range(size)]
    rs_send = xp.asarray(contribution(rank, sum(counts), dtype, 2))
    rs_recv = xp.zeros(counts[rank], dtype=dtype)
    sync()
    world.Reduce_scatter(rs_send, rs_recv, recvcounts=counts, op=MPI.SUM)
    full = sum(contribution(r, sum(counts), dtype, 2) for r in range(size)).astype(dtype)
    off = sum(counts[:rank])
    expect(f"Reduce_scatter {dtype.__name__}", rs_recv, full[off:off + counts[rank]])

    a2a_send = xp.asarray(contribution(rank, block * size, dtype, 5))
    a2a_recv = xp.zeros(block * size, dtype=dtype)
    sync()
    world.Alltoall(a2a_send, a2a_recv)
    want = np.concatenate([contribution(r, block * size, dtype, 5)[rank * block:(rank + 1) * block]
                           for r in range(size)])
    expect(f"Alltoall {dtype.__name__}", a2a_recv, want)

# chaos order on fresh duplicates, from their first call
ncomms = 8
comms = [world.Dup() for _ in range(ncomms)]
rng = np.random.default_rng(1234 + rank)
for it in range(opt.iters):
    n = (1, 100, 4096, 70000)[it % 4]
    order = list(rng.permutation(ncomms))
    first = (it + rank) % ncomms
    order.remove(first)
    order.insert(0, first)
    ins = {c: xp.asarray(contribution(rank, n, np.float32, c)) for c in range(ncomms)}
    outs = {c: xp.zeros(n, dtype=np.float32) for c in range(ncomms)}
    sync()
    reqs = [comms[c].Iallreduce(ins[c], outs[c], op=MPI.SUM) for c in order]
    t0 = time.monotonic()
    while not MPI.Request.Testall(reqs):
        if time.monotonic() - t0 > opt.deadline:
            print(f"HANG: rank {rank}: Iallreduce on {ncomms} duplicates still pending after "
                  f"{opt.deadline:.1f} s", flush=True)
            os._exit(3)
    for c in range(ncomms):
        want = sum(contribution(r, n, np.float32, c) for r in range(size)).astype(np.float32)
        expect(f"iteration {it} Iallreduce on duplicate {c}", outs[c], want)
for c in comms:
    c.Free()
world.Barrier()
if rank == 0:
    names = {MPI.THREAD_SINGLE: "SINGLE", MPI.THREAD_FUNNELED: "FUNNELED",
             MPI.THREAD_SERIALIZED: "SERIALIZED", MPI.THREAD_MULTIPLE: "MULTIPLE"}
    print(f"OK t_mpi4py: {'CuPy' if opt.cupy else 'NumPy'} arrays on {size} ranks at "
          f"MPI_THREAD_{names.get(level, level)}: 6 collectives x 4 types checked, "
          f"{opt.iters} chaos iterations on {ncomms} fresh duplicates", flush=True)
sys.exit(0)
