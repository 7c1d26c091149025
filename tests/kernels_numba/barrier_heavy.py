"""A barrier-heavy kernel for measuring the recorder: a 3-point smoothing in
shared memory, two barriers per step (about 3 events per thread between
barriers). ``python barrier_heavy.py [blocks] [steps]``."""

import sys

import numpy as np
from numba import cuda, float32

TPB = 256


@cuda.jit
def smooth(x, out, steps):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i]
    cuda.syncthreads()
    for _ in range(steps):
        left = s[t - 1] if t > 0 else s[t]
        right = s[t + 1] if t < TPB - 1 else s[t]
        cuda.syncthreads()
        s[t] = (left + s[t] + right) / 3
        cuda.syncthreads()
    out[i] = s[t]


def main(blocks: int, steps: int) -> None:
    x = np.random.default_rng(0).random(blocks * TPB).astype(np.float32)
    out = np.zeros_like(x)
    smooth[blocks, TPB](x, out, steps)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 8, int(sys.argv[2]) if len(sys.argv) > 2 else 20
    )
