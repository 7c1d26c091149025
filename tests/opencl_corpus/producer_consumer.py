"""pyopencl host for producer_consumer.cl: 2 work-groups of 4."""

import sys

import numpy as np
import pyopencl as cl
from clhost import build

N = 8


def main() -> None:
    context, queue, program = build("producer_consumer")
    flags = cl.mem_flags
    data = cl.Buffer(context, flags.READ_WRITE, N * 4)
    flag = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=np.zeros(1, np.int32))
    out = cl.Buffer(context, flags.WRITE_ONLY, N * 4)
    program.producer_consumer(queue, (8,), (4,), data, flag, out)
    result = np.empty(N, np.int32)
    cl.enqueue_copy(queue, result, out)
    queue.finish()
    print(result)
    sys.exit(0 if list(result) == [i * i for i in range(N)] else 1)


if __name__ == "__main__":
    main()
