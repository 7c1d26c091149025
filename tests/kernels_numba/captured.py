"""Arrays a kernel reaches by name, not as arguments: a device array and a
counter created at module level with ``cuda.to_device`` (as numba-cuda's
globals example does), a host array used as a constant table, a device array
held in an object's attribute, and a device array captured by a closure.

``correct``  the counter is updated with an atomic
``broken``   the counter is updated with a plain read-modify-write, and every
             thread writes the closure's array at the same index

Lines marked ``# race`` are where the broken kernels' racing accesses are.
"""

import sys

import numpy as np
from numba import cuda

N = 8
PRICES = cuda.to_device(np.arange(N, dtype=np.float32) + 10)
COUNTS = cuda.to_device(np.zeros(1, dtype=np.int32))
TABLE = np.array([1.0, 2.0], dtype=np.float32)


class Settings:
    def __init__(self) -> None:
        self.weights = cuda.to_device(np.full(N, 0.5, dtype=np.float32))


SETTINGS = Settings()


@cuda.jit
def totals(quantities, out):
    i = cuda.grid(1)
    out[i] = quantities[i] * PRICES[i] * TABLE[i % 2] * SETTINGS.weights[i]
    cuda.atomic.add(COUNTS, 0, 1)


@cuda.jit
def totals_broken(quantities, out):
    i = cuda.grid(1)
    out[i] = quantities[i] * PRICES[i] * TABLE[i % 2]
    COUNTS[0] += 1  # race


def make_scaler(scratch, broken: bool):
    @cuda.jit
    def scale(x):
        i = cuda.grid(1)
        scratch[0 if broken else i] = 2 * x[i]  # race

    return scale


def main(variant: str) -> int:
    broken = variant == "broken"
    quantities = np.ones(N, dtype=np.float32)
    out = np.zeros(N, dtype=np.float32)
    (totals_broken if broken else totals)[1, N](quantities, out)
    scratch = cuda.to_device(np.zeros(N, dtype=np.float32))
    make_scaler(scratch, broken)[1, N](quantities)
    ok = broken or (COUNTS.copy_to_host()[0] == N and scratch.copy_to_host().tolist() == [2.0] * N)
    print("results ok" if ok else "WRONG RESULTS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
