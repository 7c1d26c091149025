"""An accumulating kernel, ``out += x``, whose output the host may not have written.

``empty``: ``out`` comes from ``torch.empty``, so the kernel's load of it reads
bytes nothing wrote. ``half``: the host zeroes the first half only, so only
the second half is read uninitialized. ``filled``: the host fills the
``torch.empty`` tensor before the launch (clean). ``numpy``: the host fills it
through NumPy, which the recorder cannot follow, so it counts as written
(clean). ``late``: a first launch sees ``out`` but reads none of it (every
lane masked off), then the host fills it before the second (clean).
``zeros``: ``torch.zeros`` (clean).
"""

import sys

import torch
import triton
import triton.language as tl

N, BLOCK = 32, 8


@triton.jit
def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    acc = tl.load(out_ptr + offsets, mask=mask)  # uninit
    tl.store(out_ptr + offsets, acc + tl.load(x_ptr + offsets, mask=mask), mask=mask)


def main(mode: str) -> None:
    x = torch.ones(N)
    if mode == "zeros":
        out = torch.zeros(N)
    else:
        out = torch.empty(N)
        if mode == "filled":
            out.fill_(0.0)
        elif mode == "half":
            out[: N // 2] = 0.0
        elif mode == "numpy":
            out.numpy()[:] = 0.0
        elif mode == "late":
            accumulate[(N // BLOCK,)](x, out, 0, BLOCK=BLOCK)
            out.fill_(0.0)
    accumulate[(N // BLOCK,)](x, out, N, BLOCK=BLOCK)


if __name__ == "__main__":
    main(sys.argv[1])
