"""A record whose field is itself a record (``r.inner.x``): the recorder follows
fields of plain and array types only, so it refuses this one, naming the line."""

import numpy as np
from numba import cuda

INNER = np.dtype([("x", np.int32), ("y", np.int32)])
OUTER = np.dtype([("inner", INNER), ("n", np.int32)])


@cuda.jit
def bump(r):
    r.inner.x = cuda.threadIdx.x  # nested


if __name__ == "__main__":
    item = np.zeros(1, dtype=OUTER)[0]
    bump[1, 4](item)
