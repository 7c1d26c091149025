"""Kernels that reach their arrays through views and whole-array NumPy calls:
``.reshape``, ``.ravel``, ``.view``, ``.T``, a ufunc with an output array
(numba-cuda's own example: ``np.sin(x, r)``) and a slice copy.

``correct``  each thread writes its own elements, through views
``broken``   every thread writes element 0 of a raveled view, and two threads
             run the ufunc into the same output

Lines marked ``# race`` are where the broken kernels' racing accesses are;
lines marked ``# view`` must have accesses in the trace.
"""

import sys

import numpy as np
from numba import cuda

N = 8


@cuda.jit
def through_views(x, out, table):
    t = cuda.threadIdx.x
    grid = out.reshape(2, N // 2)
    grid[t // (N // 2), t % (N // 2)] = x.ravel()[t]  # view
    cuda.syncthreads()
    bits = out.view(np.int32)
    if t == 0:
        bits[0] = bits[N - 1]  # view
    rows = table.T
    rows[t % 2, t // 2] += 1.0  # view


@cuda.jit
def through_views_broken(x, out, table):
    t = cuda.threadIdx.x
    flat = out.ravel()
    flat[0] = x[t]  # race


@cuda.jit
def sines(r, x):
    np.sin(x, r)  # view # race


@cuda.jit
def slice_copy(src, dst):
    t = cuda.threadIdx.x
    if t == 0:
        dst[0:4] = src[4:8]  # view


def main(variant: str) -> int:
    x = np.arange(N, dtype=np.float32)
    out = np.zeros(N, dtype=np.float32)
    table = np.zeros((N // 2, 2), dtype=np.float32)
    r = np.zeros(N, dtype=np.float32)
    dst = np.zeros(4, dtype=np.float32)
    if variant == "correct":
        through_views[1, N](x, out, table)
        sines[1, 1](r, x)
        slice_copy[1, 2](x, dst)
        ok = table.sum() == N and np.allclose(r, np.sin(x)) and dst.tolist() == [4, 5, 6, 7]
    else:
        through_views_broken[1, N](x, out, table)
        sines[1, 2](r, x)  # two threads write all of r
        ok = True
    print("results ok" if ok else "WRONG RESULTS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
