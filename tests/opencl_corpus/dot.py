"""pyopencl host for dot.cl: `partial` on 32 elements in 4 work-groups of 8,
then `finish` (which overwrites the ONE_LAUNCH form's result with the same sum)."""

import sys

import numpy as np
import pyopencl as cl
from clhost import build

N, GROUP = 32, 8


def main() -> None:
    context, queue, program = build("dot")
    flags = cl.mem_flags
    x = np.arange(N, dtype=np.float32)
    y = np.ones(N, dtype=np.float32)
    x_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=y)
    groups = N // GROUP
    sums = cl.Buffer(context, flags.READ_WRITE, groups * 4)
    result = cl.Buffer(context, flags.READ_WRITE, 4)
    program.partial(queue, (N,), (GROUP,), x_buf, y_buf, sums, result, cl.LocalMemory(GROUP * 4))
    program.finish(queue, (1,), (1,), sums, result, np.uint32(groups))
    total = np.empty(1, np.float32)
    cl.enqueue_copy(queue, total, result)
    queue.finish()
    print(total[0])
    sys.exit(0 if total[0] == x @ y else 1)


if __name__ == "__main__":
    main()
