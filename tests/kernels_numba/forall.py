"""``kernel.forall(n)``: CUDA launches blocks of ``tpb`` threads (chosen by
occupancy on the device when ``tpb`` is 0) and ``ceil(n / tpb)`` of them. The
kernel uses ``threadIdx`` and shared memory, so the block size matters.
``python forall.py TASKS [TPB]``."""

import sys

import numpy as np
from numba import cuda, int32

BLOCK_MAX = 1024


@cuda.jit
def neighbours(x, out):
    s = cuda.shared.array(BLOCK_MAX, int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < x.size:
        s[t] = x[i]
    cuda.syncthreads()
    if i < x.size:
        last = min(cuda.blockDim.x, x.size - cuda.blockIdx.x * cuda.blockDim.x) - 1
        out[i] = s[t] + (s[t + 1] if t < last else 0)


def main(tasks: int, tpb: int) -> None:
    x = np.arange(tasks, dtype=np.int32)
    out = np.zeros(tasks, dtype=np.int32)
    neighbours.forall(tasks, tpb)(x, out)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
