"""Spin-waits: threads poll a flag with an atomic until another thread sets it.

``in_block``     the last thread of the block publishes a value; the others
                 poll (with fences, a correct release/acquire hand-off)
``in_block_unfenced``  the same without the fences: the reads of the value race
``cross_block``  block 0 polls a flag that block 1 sets (blocks run one after
                 another, so block 1 must get to run while block 0 waits)
``forever``      the flag is never set: the recording must stop and say so

Lines marked ``# race`` are where the unfenced hand-off races.
"""

import sys

import numpy as np
from numba import cuda

N = 8


@cuda.jit
def in_block(data, flag, out):
    t = cuda.threadIdx.x
    if t == N - 1:
        data[0] = 42
        cuda.threadfence()
        cuda.atomic.exch(flag, 0, 1)
    else:
        while cuda.atomic.add(flag, 0, 0) == 0:
            pass
        cuda.threadfence()
        out[t] = data[0]


@cuda.jit
def in_block_unfenced(data, flag, out):
    t = cuda.threadIdx.x
    if t == N - 1:
        data[0] = 42  # race
        cuda.atomic.exch(flag, 0, 1)
    else:
        while cuda.atomic.add(flag, 0, 0) == 0:
            pass
        out[t] = data[0]  # race


@cuda.jit
def cross_block(data, flag, out):
    if cuda.blockIdx.x == 1:
        data[0] = 7
        cuda.threadfence()
        cuda.atomic.exch(flag, 0, 1)
    else:
        while cuda.atomic.add(flag, 0, 0) == 0:
            pass
        cuda.threadfence()
        out[0] = data[0]


@cuda.jit
def forever(flag):
    while cuda.atomic.add(flag, 0, 0) == 0:  # nobody sets the flag
        pass


def main(variant: str) -> int:
    data = np.zeros(1, dtype=np.int32)
    flag = np.zeros(1, dtype=np.int32)
    out = np.zeros(N, dtype=np.int32)
    if variant == "in_block":
        in_block[1, N](data, flag, out)
        ok = out[: N - 1].tolist() == [42] * (N - 1)
    elif variant == "in_block_unfenced":
        in_block_unfenced[1, N](data, flag, out)
        ok = out[: N - 1].tolist() == [42] * (N - 1)
    elif variant == "cross_block":
        cross_block[2, 1](data, flag, out)
        ok = out[0] == 7
    else:
        forever[1, 2](flag)
        ok = False
    print("results ok" if ok else "WRONG RESULTS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
