"""Histogram of small integers, one block of the data per program.

``atomic``: bins are counted with ``tl.atomic_add`` (clean); the kernel is
autotuned with ``reset_to_zero``, so the autotuner zeroes the (``torch.empty``)
histogram on the host before each config runs. ``plain``: each program loads
the counts, adds its own and stores them back, so programs overwrite each
other's counts.
"""

import sys

import torch
import triton
import triton.language as tl

N, BINS = 64, 8


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})],
    key=["n"],
    reset_to_zero=["hist_ptr"],
)
@triton.jit
def atomic_histogram(data_ptr, hist_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    bins = tl.load(data_ptr + offsets, mask=mask)
    tl.atomic_add(hist_ptr + bins, 1, mask=mask)


@triton.jit
def plain_histogram(data_ptr, hist_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    bins = tl.load(data_ptr + offsets, mask=mask)
    counts = tl.histogram(bins, BINS, mask=mask)
    old = tl.load(hist_ptr + tl.arange(0, BINS))  # race
    tl.store(hist_ptr + tl.arange(0, BINS), old + counts)  # race


def main(mode: str) -> None:
    data = torch.arange(N, dtype=torch.int32) % BINS
    if mode == "atomic":
        hist = torch.empty(BINS, dtype=torch.int32)
        atomic_histogram[lambda meta: (triton.cdiv(N, meta["BLOCK"]),)](data, hist, N, BINS=BINS)
        assert hist.tolist() == [N // BINS] * BINS, hist
    else:
        hist = torch.zeros(BINS, dtype=torch.int32)
        plain_histogram[(triton.cdiv(N, 16),)](data, hist, N, BINS=BINS, BLOCK=16)


if __name__ == "__main__":
    main(sys.argv[1])
