"""Shared-memory tree reduction: one partial sum per block, then a second launch
sums the partials. ``broken`` drops the barrier inside the loop.

Lines marked ``# race`` are where the broken kernel's racing accesses are.
"""

import sys

import numpy as np
from numba import cuda, float32

TPB = 16


@cuda.jit
def block_sum(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def block_sum_broken(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]  # race
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


def main(variant: str) -> None:
    kernel = block_sum if variant == "correct" else block_sum_broken
    x = np.arange(3 * TPB, dtype=np.float32)
    partial = np.zeros(3, dtype=np.float32)
    kernel[3, TPB](x, partial)
    total = np.zeros(1, dtype=np.float32)
    kernel[1, TPB](partial, total)
    print(f"sum {total[0]} (expected {x.sum()})")


if __name__ == "__main__":
    main(sys.argv[1])
