"""Tiled matrix multiply through shared-memory tiles. ``broken`` drops the
second barrier, so the next tile overwrites a tile other threads still read.

Lines marked ``# race`` are where the broken kernel's racing accesses are.
"""

import sys

import numpy as np
from numba import cuda, float32

TILE = 4
N = 8


@cuda.jit
def matmul(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0)
    for k0 in range(0, a.shape[1], TILE):
        sa[ty, tx] = a[row, k0 + tx]
        sb[ty, tx] = b[k0 + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    c[row, col] = acc


@cuda.jit
def matmul_broken(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0)
    for k0 in range(0, a.shape[1], TILE):
        sa[ty, tx] = a[row, k0 + tx]  # race
        sb[ty, tx] = b[k0 + ty, col]  # race
        cuda.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]  # race
    c[row, col] = acc


def main(variant: str) -> None:
    kernel = matmul if variant == "correct" else matmul_broken
    a = np.arange(N * N, dtype=np.float32).reshape(N, N) / 10
    b = np.eye(N, dtype=np.float32) + 1
    c = np.zeros((N, N), dtype=np.float32)
    kernel[(N // TILE, N // TILE), (TILE, TILE)](a, b, c)
    print("max error", float(np.abs(c - a @ b).max()))


if __name__ == "__main__":
    main(sys.argv[1])
