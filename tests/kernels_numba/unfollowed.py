"""What the recorder cannot follow, or must warn about:

``attribute``  a device array reached through an object's attribute
``sum``        ``a.sum()`` reads every element behind the recorder's back
``no_access``  a launch whose kernel touches no memory (a warning, not an error)
"""

import sys

import numpy as np
from numba import cuda


class Holder:
    def __init__(self, array) -> None:
        self.array = array


HOLDER = Holder(cuda.to_device(np.zeros(4, dtype=np.float32)))


@cuda.jit
def through_attribute(out):
    t = cuda.threadIdx.x
    out[t] = HOLDER.array[t]  # unfollowed


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
    if variant == "attribute":
        through_attribute[1, 4](out)
    elif variant == "sum":
        whole_sum[1, 1](x, out)
    else:
        nothing[1, 4](x)


if __name__ == "__main__":
    main(sys.argv[1])
