"""Matrix transpose through a shared tile (padded against bank conflicts).
``broken`` transposes in place: each block writes the tile that the mirror
block reads, a cross-block race that no barrier can order.

Lines marked ``# race`` are where the broken kernel's racing accesses are.
"""

import sys

import numpy as np
from numba import cuda, float32

T = 4
N = 8


@cuda.jit
def transpose(a, out):
    tile = cuda.shared.array((T, T + 1), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tile[ty, tx] = a[cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx]
    cuda.syncthreads()
    out[cuda.blockIdx.x * T + ty, cuda.blockIdx.y * T + tx] = tile[tx, ty]


@cuda.jit
def transpose_in_place(a):
    tile = cuda.shared.array((T, T + 1), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tile[ty, tx] = a[cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx]  # race
    cuda.syncthreads()
    a[cuda.blockIdx.x * T + ty, cuda.blockIdx.y * T + tx] = tile[tx, ty]  # race


def main(variant: str) -> None:
    a = np.arange(N * N, dtype=np.float32).reshape(N, N)
    if variant == "correct":
        out = np.zeros_like(a)
        transpose[(N // T, N // T), (T, T)](a, out)
    else:
        d = cuda.to_device(a)
        transpose_in_place[(N // T, N // T), (T, T)](d)
        out = d.copy_to_host()
    print("transposed:", bool((out == a.T).all()))


if __name__ == "__main__":
    main(sys.argv[1])
