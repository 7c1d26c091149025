"""Histogram privatized per block in shared memory, merged into global bins
with atomics. ``broken`` counts into the shared bins with a plain increment
instead of an atomic.

Lines marked ``# race`` are where the broken kernel's racing accesses are.
"""

import sys

import numpy as np
from numba import cuda, int32

TPB = 16
BINS = 4


@cuda.jit
def histogram(x, bins):
    h = cuda.shared.array(BINS, int32)
    t = cuda.threadIdx.x
    if t < BINS:
        h[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(h, x[i], 1)
    cuda.syncthreads()
    if t < BINS:
        cuda.atomic.add(bins, t, h[t])


@cuda.jit
def histogram_broken(x, bins):
    h = cuda.shared.array(BINS, int32)
    t = cuda.threadIdx.x
    if t < BINS:
        h[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        h[x[i]] += 1  # race
    cuda.syncthreads()
    if t < BINS:
        cuda.atomic.add(bins, t, h[t])


def main(variant: str) -> None:
    kernel = histogram if variant == "correct" else histogram_broken
    x = (np.arange(40) * 7 % BINS).astype(np.int32)
    bins = np.zeros(BINS, dtype=np.int32)
    kernel[3, TPB](x, bins)
    print("bins", bins, "expected", np.bincount(x, minlength=BINS))


if __name__ == "__main__":
    main(sys.argv[1])
