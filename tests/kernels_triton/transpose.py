"""Tiled transpose on a 2-D grid, ``out[j, i] = x[i, j]``, from a strided view.

``x`` is the transpose of a row-major tensor (strides (1, ROWS)), so its
buffer keeps its strides, and each program is one (row tile, column tile).
Clean.
"""

import torch
import triton
import triton.language as tl

ROWS, COLS, TILE = 8, 12, 4


@triton.jit
def transpose_kernel(
    x_ptr, out_ptr, stride_xm, stride_xn, COLS_OUT: tl.constexpr, TILE: tl.constexpr
):
    rows = tl.program_id(0) * TILE + tl.arange(0, TILE)
    cols = tl.program_id(1) * TILE + tl.arange(0, TILE)
    tile = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn)
    tl.store(out_ptr + cols[:, None] * COLS_OUT + rows[None, :], tl.trans(tile))


def main() -> None:
    x = torch.arange(ROWS * COLS, dtype=torch.float32).reshape(COLS, ROWS).t()
    out = torch.empty(COLS, ROWS)
    transpose_kernel[(ROWS // TILE, COLS // TILE)](
        x, out, x.stride(0), x.stride(1), COLS_OUT=ROWS, TILE=TILE
    )
    assert torch.equal(out, x.t())


if __name__ == "__main__":
    main()
