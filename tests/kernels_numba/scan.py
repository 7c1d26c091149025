"""Inclusive prefix sum (Hillis-Steele) of one block in shared memory. Each
step reads a neighbour, waits, then adds; ``broken`` drops the wait between
the read and the add, so a thread reads a value its neighbour is updating.

Lines marked ``# race`` are where the broken kernel's racing accesses are.
"""

import sys

import numpy as np
from numba import cuda, int32

TPB = 16


@cuda.jit
def scan(x, out):
    s = cuda.shared.array(TPB, int32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    offset = 1
    while offset < TPB:
        v = s[t - offset] if t >= offset else 0
        cuda.syncthreads()
        s[t] += v
        cuda.syncthreads()
        offset *= 2
    out[t] = s[t]


@cuda.jit
def scan_broken(x, out):
    s = cuda.shared.array(TPB, int32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    offset = 1
    while offset < TPB:
        v = s[t - offset] if t >= offset else 0  # race
        s[t] += v  # race
        cuda.syncthreads()
        offset *= 2
    out[t] = s[t]


def main(variant: str) -> None:
    kernel = scan if variant == "correct" else scan_broken
    x = np.arange(1, TPB + 1, dtype=np.int32)
    out = np.zeros(TPB, dtype=np.int32)
    kernel[1, TPB](x, out)
    print("matches cumsum:", bool((out == np.cumsum(x)).all()))


if __name__ == "__main__":
    main(sys.argv[1])
