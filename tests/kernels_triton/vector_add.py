"""Vector add: each program adds one block of elements; the last block is masked."""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)  # load x
    y = tl.load(y_ptr + offsets, mask=mask)  # load y
    tl.store(out_ptr + offsets, x + y, mask=mask)  # store out


def main(n: int) -> None:
    device = triton.runtime.driver.active.get_active_torch_device()
    x = torch.arange(n, dtype=torch.float32, device=device)
    y = torch.ones(n, dtype=torch.float32, device=device)
    out = torch.empty(n, dtype=torch.float32, device=device)
    add_kernel[(triton.cdiv(n, 16),)](x, y, out, n, BLOCK=16)
    assert torch.equal(out, x + y)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
