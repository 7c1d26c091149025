"""GELU (tanh approximation) and a normalization through libdevice.

``stub``: the functions come from ``triton.language.extra.libdevice`` (the
stubs compiled Triton resolves per backend, as Liger-Kernel imports them);
``cuda``: from ``triton.language.extra.cuda.libdevice``. Both must compute the
values torch does. ``bessel``: ``libdevice.j0``, which the recorder cannot
compute on the CPU; ``fast_tanhf``: a stub with no CUDA function at all.
"""

import sys

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice

N = 40


@triton.jit
def gelu(x_ptr, out_ptr, n, CUDA: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    if CUDA:
        y = 0.5 * x * (1 + cuda_libdevice.tanh(inner)) * cuda_libdevice.rsqrt(x * x + 1)
    else:
        y = 0.5 * x * (1 + libdevice.tanh(inner)) * libdevice.rsqrt(x * x + 1)
    tl.store(out_ptr + offsets, y, mask=mask)


@triton.jit
def bessel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, libdevice.j0(tl.load(x_ptr + offsets)))  # unsupported


@triton.jit
def fast_tanh(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, libdevice.fast_tanhf(tl.load(x_ptr + offsets)))  # unsupported


def main(mode: str) -> None:
    x = torch.linspace(-4, 4, N)
    if mode == "bessel":
        bessel[(1,)](x, BLOCK=16)
        return
    if mode == "fast_tanhf":
        fast_tanh[(1,)](x, BLOCK=16)
        return
    out = torch.empty(N)
    gelu[(triton.cdiv(N, 16),)](x, out, N, CUDA=mode == "cuda", BLOCK=16)
    expected = torch.nn.functional.gelu(x, approximate="tanh") * torch.rsqrt(x * x + 1)
    torch.testing.assert_close(out, expected)


if __name__ == "__main__":
    main(sys.argv[1])
