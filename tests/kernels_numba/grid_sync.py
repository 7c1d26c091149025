"""numba-cuda's cooperative-groups example (``sequential_rows``) on a small
grid of three blocks: row r of a matrix is computed from row r - 1 of other
columns, which other blocks wrote, and ``grid.sync()`` separates the rows.
``broken`` drops the grid barrier; ``deadlock`` has the first thread of each
block wait at ``syncthreads`` while the others wait at the grid barrier.

Lines marked ``# race`` are where the broken kernel's racing accesses are.
"""

import sys

import numpy as np
from numba import cuda

ROWS, COLS, TPB = 6, 24, 8


@cuda.jit
def sequential_rows(M):
    col = cuda.grid(1)
    g = cuda.cg.this_grid()
    rows = M.shape[0]
    cols = M.shape[1]
    for row in range(1, rows):
        opposite = cols - col - 1
        M[row, col] = M[row - 1, opposite] + 1
        g.sync()


@cuda.jit
def sequential_rows_broken(M):
    col = cuda.grid(1)
    rows = M.shape[0]
    cols = M.shape[1]
    for row in range(1, rows):
        opposite = cols - col - 1
        M[row, col] = M[row - 1, opposite] + 1  # race


@cuda.jit
def mixed_barriers(M):
    if cuda.threadIdx.x == 0:
        cuda.syncthreads()
    else:
        cuda.cg.this_grid().sync()
    M[0, cuda.grid(1)] = 1


def main(variant: str) -> int:
    kernel = {
        "correct": sequential_rows,
        "broken": sequential_rows_broken,
        "deadlock": mixed_barriers,
    }[variant]
    M = np.zeros((ROWS, COLS), dtype=np.int32)
    kernel[COLS // TPB, TPB](M)
    expected = np.tile(np.arange(ROWS, dtype=np.int32), (COLS, 1)).T
    ok = np.array_equal(M, expected)
    print("results ok" if ok else "WRONG RESULTS")
    return 0 if ok or variant != "correct" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
