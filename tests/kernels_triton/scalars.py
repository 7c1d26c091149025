"""RMS norm with float scalar arguments, as Liger-Kernel's ``rms_norm`` takes them.

``eps`` and ``offset`` are Python floats, which compiled Triton passes as fp32
scalars: the kernel calls ``offset.to(tl.float32)`` and mixes ``eps`` into
fp32 arithmetic. ``n_cols`` is an int (i32) and ``scale_out`` a bool (i1).
``rows``: one program per row (clean). ``shared``: two programs per output
row, so pairs of programs write the same row.
"""

import sys

import torch
import triton
import triton.language as tl

ROWS, COLS = 6, 32


@triton.jit
def rms_norm(
    x_ptr, w_ptr, out_ptr, n_cols, eps, offset, scale_out, SHARED: tl.constexpr, BLOCK: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    y = x * rstd * (offset.to(tl.float32) + w)
    if scale_out:
        y = y * 2
    if SHARED:
        row = row // 2
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)  # race


def main(mode: str) -> None:
    x = torch.randn(ROWS, COLS, generator=torch.Generator().manual_seed(0))
    w = torch.rand(COLS, generator=torch.Generator().manual_seed(1))
    out = torch.zeros(ROWS, COLS)
    eps, offset = 1e-6, 1.0
    rms_norm[(ROWS,)](x, w, out, COLS, eps, offset, True, SHARED=mode == "shared", BLOCK=32)
    if mode == "rows":
        expected = x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + eps) * (offset + w) * 2
        torch.testing.assert_close(out, expected)


if __name__ == "__main__":
    main(sys.argv[1])
