"""Everything else the recorder logs, in race-free kernels: a device function,
local arrays, two shared arrays, syncthreads_count/and/or, the three fences,
global atomics, a device array kept across launches, dynamic shared memory,
threads that leave before a barrier, and record (structured array) fields.
Exits 1 if a result is wrong."""

import sys

import numpy as np
from numba import cuda, float32, int32

N = 8


@cuda.jit(device=True)
def store(array, i, value):
    array[i] = value  # device function store


@cuda.jit
def features(x, out, counts):
    a = cuda.shared.array(N, int32)
    b = cuda.shared.array(N, int32)
    t = cuda.threadIdx.x
    scratch = cuda.local.array(2, int32)
    scratch[0] = x[t]
    store(a, t, scratch[0])
    b[t] = 2 * scratch[0]
    n = cuda.syncthreads_count(x[t] > 2)
    every = cuda.syncthreads_and(x[t] >= 0)
    some = cuda.syncthreads_or(x[t] > 100)
    cuda.threadfence_block()
    cuda.threadfence()
    cuda.threadfence_system()
    out[t] = a[(t + 1) % N] + b[t]
    if t == 0:
        counts[0] = n
        counts[1] = every
        counts[2] = some
    cuda.atomic.add(counts, 3, 1)
    cuda.atomic.max(counts, 4, t)


@cuda.jit
def dynamic(out):
    d = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    d[t] = t
    cuda.syncthreads()
    out[t] = d[N - 1 - t]


@cuda.jit
def early_exit(out, mirrored):
    t = cuda.threadIdx.x
    if t >= N // 2:
        return
    out[t] = t
    cuda.syncthreads()
    mirrored[t] = out[N // 2 - 1 - t]


@cuda.jit
def records(points):
    t = cuda.threadIdx.x
    points[t].y = points[t].x * 2  # record fields


def main() -> int:
    x = np.arange(N, dtype=np.int32)
    out = cuda.to_device(np.zeros(N, dtype=np.int32))
    ok = True
    for _ in range(2):
        counts = np.zeros(5, dtype=np.int32)
        features[1, N](x, out, counts)
        ok &= counts.tolist() == [N - 3, 1, 0, N, N - 1]
    ok &= out.copy_to_host().tolist() == [(t + 1) % N + 2 * t for t in range(N)]
    fout = np.zeros(N, dtype=np.float32)
    dynamic[1, N, 0, N * 4](fout)
    ok &= fout.tolist() == list(range(N - 1, -1, -1))
    half, mirrored = np.zeros(N, dtype=np.int32), np.zeros(N, dtype=np.int32)
    early_exit[1, N](half, mirrored)
    ok &= mirrored[: N // 2].tolist() == list(range(N // 2 - 1, -1, -1))
    points = np.zeros(N, dtype=[("x", np.float32), ("y", np.float32)])
    points["x"] = np.arange(N)
    records[1, N](points)
    ok &= points["y"].tolist() == [2 * t for t in range(N)]
    print("results ok" if ok else "WRONG RESULTS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
