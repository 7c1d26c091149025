"""What the recorder cannot follow, or must warn about:

``container``  a device array reached through a list
``sum``        ``a.sum()`` reads every element behind the recorder's back
``no_access``  a launch whose kernel touches no memory (a warning, not an error)
"""

import sys

import numpy as np
from numba import cuda

ARRAYS = [cuda.to_device(np.zeros(4, dtype=np.float32))]


@cuda.jit
def through_list(out):
    t = cuda.threadIdx.x
    out[t] = ARRAYS[0][t]  # unfollowed


@cuda.jit
def whole_sum(x, out):
    out[0] = x.sum()  # unfollowed


@cuda.jit
def nothing(x):
    t = cuda.threadIdx.x
    t = t * 2


def main(variant: str) -> None:
    x = np.ones(4, dtype=np.float32)
    out = np.zeros(4, dtype=np.float32)
    if variant == "container":
        through_list[1, 4](out)
    elif variant == "sum":
        whole_sum[1, 1](x, out)
    else:
        nothing[1, 4](x)


if __name__ == "__main__":
    main(sys.argv[1])
