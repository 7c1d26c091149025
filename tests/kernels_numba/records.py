"""Records: a single record (``np.void``) passed as an argument, one with an
array field (``f.garden[i]``), and whole elements of structured arrays copied
(``f[1] = f[0]``, ``sm[t] = x[i]``).

``correct``  thread 0 alone writes the record argument; each thread writes its
             own element of the array field; each element is copied into
             shared memory, a barrier, then read back shifted
``broken``   every thread writes the record argument and the same element of
             the array field, and overwrites its shared element with no barrier
             after its neighbour's read

Lines marked ``# race`` are where the broken kernels' racing accesses are.
"""

import sys

import numpy as np
from numba import cuda

N = 8
POINT = np.dtype([("x", np.float32), ("y", np.float32)])


@cuda.jit
def use_record(r, out):
    t = cuda.threadIdx.x
    out[t] = r.x * t
    if t == 0:
        r.y = 1.0


@cuda.jit
def use_record_broken(r, out):
    t = cuda.threadIdx.x
    out[t] = r.x * t
    r.y = t  # race


@cuda.jit
def plant(f):
    t = cuda.threadIdx.x
    f.garden[t] = t + 1


@cuda.jit
def plant_broken(f):
    t = cuda.threadIdx.x
    f.garden[0] = t + 1  # race


@cuda.jit
def shift(points, shifted):
    sm = cuda.shared.array(N, POINT)
    t = cuda.threadIdx.x
    sm[t] = points[t]
    cuda.syncthreads()
    shifted[t] = sm[(t + 1) % N]
    if t == 0:
        shifted[N] = shifted[0]


@cuda.jit
def shift_broken(points, shifted):
    sm = cuda.shared.array(N, POINT)
    t = cuda.threadIdx.x
    sm[t] = points[t]
    cuda.syncthreads()
    shifted[t] = sm[(t + 1) % N]  # race
    sm[t] = points[(t + 2) % N]  # race


def main(variant: str) -> int:
    broken = variant == "broken"
    record = np.zeros(1, dtype=POINT)[0]
    record["x"] = 3.0
    out = np.zeros(N, dtype=np.float32)
    (use_record_broken if broken else use_record)[1, N](record, out)
    item = np.recarray(1, dtype=[("garden", "i4", (4,))])[0]
    item.garden[:] = 0
    (plant_broken if broken else plant)[1, 4](item)
    points = np.zeros(N, dtype=POINT)
    points["x"] = np.arange(N)
    shifted = np.zeros(N + 1, dtype=POINT)
    (shift_broken if broken else shift)[1, N](points, shifted)
    ok = broken or (
        record["y"] == 1.0
        and out.tolist() == [3.0 * t for t in range(N)]
        and item.garden.tolist() == [1, 2, 3, 4]
        and shifted["x"].tolist() == [(t + 1) % N for t in range(N)] + [1]
    )
    print("results ok" if ok else "WRONG RESULTS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
