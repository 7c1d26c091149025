"""Tiles through a tensor descriptor and a load inside a device function (clean).

``out[i, :] = x[i, :] + y[i]``: the rows of ``x`` come from ``x_desc.load``
(the interpreter expands the descriptor into pointers), ``y`` through the
``@triton.jit`` helper ``load_at``, whose own line is the load's site.
"""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

ROWS, COLS, BLOCK = 8, 4, 4


@triton.jit
def load_at(ptr, offsets):
    return tl.load(ptr + offsets)  # helper load


@triton.jit
def add_rows(x_desc, y_ptr, out_ptr, COLS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tile = x_desc.load([tl.program_id(0) * BLOCK, 0])  # descriptor load
    y = load_at(y_ptr, rows)
    tl.store(out_ptr + rows[:, None] * COLS + tl.arange(0, COLS)[None, :], tile + y[:, None])


def main() -> None:
    x = torch.arange(ROWS * COLS, dtype=torch.float32).reshape(ROWS, COLS)
    y = torch.ones(ROWS)
    out = torch.empty(ROWS, COLS)
    add_rows[(ROWS // BLOCK,)](
        TensorDescriptor.from_tensor(x, [BLOCK, COLS]), y, out, COLS=COLS, BLOCK=BLOCK
    )
    assert torch.equal(out, x + 1)


if __name__ == "__main__":
    main()
