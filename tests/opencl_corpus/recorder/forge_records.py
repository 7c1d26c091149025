"""A pyopencl host that tampers with the files tracerace's Oclgrind plugin writes.

The plugin tells the program's process where to write (an environment
variable), so the program can write there too. It runs struct_arg.cl once,
then adds to the plugin's files what ``argv[1]`` names, and exits at once
(before the plugin could write anything more).
"""

import glob
import os
import struct
import sys

import numpy as np
import pyopencl as cl

HERE = os.path.dirname(os.path.abspath(__file__))

FORGED = {
    # side table lines the plugin never writes
    "meta-kind": ("meta", b"hello\tworld\n"),
    "meta-short": ("meta", b"buffer\t0\tx\n"),
    "meta-number": ("meta", b"copy\t0\tzero\t0\t3\t1\t4\t1\t1\t1\t1\n"),
    "meta-site-gap": ("meta", b"site\t7\tfar.cl:1\n"),
    "meta-buffer-name": ("meta", b"buffer\t0\t\tglobal\t0\t8\t4\n"),
    # records the plugin never writes (32 bytes: kind space detail variant size group
    # item address site count)
    "record-kind": ("events", struct.pack("<BBBBIIIQII", 99, 0, 0, 0, 4, 0, 0, 0, 0, 0)),
    "record-copy": (
        "events",
        struct.pack("<BBBBIIIQII", 32, 0, 0, 0, 0, 0, 0, 0, 0xFFFFFFFF, 12345),
    ),
    "record-address": (
        "events",
        struct.pack("<BBBBIIIQII", 1, 1, 0, 0, 8, 0, 0, 0xFFFFFFFFFFFFFFFC, 0xFFFFFFFF, 0),
    ),
    "record-partial": ("events", b"\x01\x02\x03"),
}


def main(what: str) -> None:
    context = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(context)
    with open(os.path.join(HERE, "struct_arg.cl")) as f:
        program = cl.Program(context, f.read()).build()
    flags = cl.mem_flags
    data = np.arange(8, dtype=np.float32)
    src = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=data)
    dst = cl.Buffer(context, flags.WRITE_ONLY, data.nbytes)
    params = np.array([(2.0, 0.5)], dtype=[("scale", np.float32), ("offset", np.float32)])
    program.struct_arg(queue, (8,), (4,), src, dst, params[0])
    queue.finish()
    suffix, forged = FORGED[what]
    prefix = os.environ["TRACERACE_OCLGRIND_OUT"]
    for path in glob.glob(f"{glob.escape(prefix)}.*.{suffix}"):
        with open(path, "ab") as f:
            f.write(forged)
    os._exit(0)  # the plugin writes nothing more


if __name__ == "__main__":
    main(sys.argv[1])
