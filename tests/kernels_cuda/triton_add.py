"""GPU session kernel: a Triton kernel whose output aliases a shifted view of
its input (``aliased``), so a program's store races with another program's
load; ``separate`` writes a fresh tensor. Usage: python triton_add.py aliased|separate"""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def shift_add(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs + 1, mask=offs + 1 < n + 1)
    tl.store(out_ptr + offs, x + 1, mask=mask)


def main(form: str) -> None:
    x = torch.ones(4097, device="cuda")
    out = x if form == "aliased" else torch.empty_like(x)
    shift_add[(triton.cdiv(4096, 256),)](x, out, 4096, BLOCK=256)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "separate")
