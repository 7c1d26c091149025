"""Warp-level operations, which numba-cuda's simulator does not have: a tree
reduction whose last steps use ``cuda.syncwarp`` (as numba's own reduction
kernel does once a block holds a full warp), and a shuffle. Recording must
fail and name the line. ``python warp.py syncwarp|shfl``."""

import sys

import numpy as np
from numba import cuda, float32

TPB = 64


@cuda.jit
def block_sum(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    stride = TPB // 2
    while stride >= 32:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncwarp()  # warp operation
        stride //= 2
    if t == 0:
        out[0] = s[0]


@cuda.jit
def shuffle(x, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(0xFFFFFFFF, x[t], 1)  # warp operation


def main(variant: str) -> None:
    x = np.ones(TPB, dtype=np.float32)
    out = np.zeros(TPB, dtype=np.float32)
    (block_sum if variant == "syncwarp" else shuffle)[1, TPB](x, out)


if __name__ == "__main__":
    main(sys.argv[1])
