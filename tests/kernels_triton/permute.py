"""Incident 4's permutation kernel in Triton: ``out[dst[i], :] = x[i, :]``.

``aliased``: the output is the input tensor itself (as XLA's buffer assignment
gave it), so one program's row store races with another program's row load
(``raw`` when the store came first, ``war`` when the load did). ``separate``:
the output has its own memory (clean). The kernel is autotuned over two
column blocks, so each config runs once on the same buffers before the call.
"""

import sys

import torch
import triton
import triton.language as tl

ROWS, D = 16, 8


@triton.autotune(
    configs=[triton.Config({"BLOCK_D": 8}), triton.Config({"BLOCK_D": 4})], key=["rows"]
)
@triton.jit
def permute_kernel(x_ptr, dst_ptr, out_ptr, rows, D: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    dst = tl.load(dst_ptr + pid)
    for start in range(0, D, BLOCK_D):
        cols = start + tl.arange(0, BLOCK_D)
        row = tl.load(x_ptr + pid * D + cols)  # race
        tl.store(out_ptr + dst * D + cols, row)  # race


def main(mode: str) -> None:
    x = torch.arange(ROWS * D, dtype=torch.float32).reshape(ROWS, D)
    dst = torch.randperm(ROWS, generator=torch.Generator().manual_seed(4)).to(torch.int32)
    out = x if mode == "aliased" else torch.empty_like(x)
    permute_kernel[(ROWS,)](x, dst, out, ROWS, D=D)


if __name__ == "__main__":
    main(sys.argv[1])
