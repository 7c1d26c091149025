"""A persistent kernel that hands a tile from one program to the next through a flag.

Program 0 writes the tile and raises the flag; program 1 waits for the flag
and reads the tile. ``acq_rel``: the flag is raised by a releasing exchange at
device scope and polled by an acquiring compare-and-swap (clean). ``relaxed``:
both atomics are relaxed, so nothing orders the tile's write before its read.
``cta``: the release reaches only its own program (block scope), so it does
order the write for program 1, and a block-scope atomic races with atomics of
other programs (``waw``; lines marked ``# race cta``). The interpreter runs
program 0 first, so the wait ends at once.
"""

import sys

import torch
import triton
import triton.language as tl

BLOCK = 16


@triton.jit
def handoff(tile_ptr, flag_ptr, out_ptr, MODE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(tile_ptr + offsets, offsets.to(tl.float32) * 2)  # race
        tl.debug_barrier()
        if MODE == "relaxed":
            tl.atomic_xchg(flag_ptr, 1, sem="relaxed")
        elif MODE == "cta":
            tl.atomic_xchg(flag_ptr, 1, sem="release", scope="cta")  # race cta
        else:
            tl.atomic_xchg(flag_ptr, 1, sem="release", scope="gpu")
    else:
        if MODE == "relaxed":
            while tl.atomic_add(flag_ptr, 0, sem="relaxed") == 0:
                pass
        else:
            while tl.atomic_cas(flag_ptr, 1, 1, sem="acquire", scope="gpu") == 0:  # race cta
                pass
        tl.store(out_ptr + offsets, tl.load(tile_ptr + offsets))  # race


def main(mode: str) -> None:
    tile = torch.empty(BLOCK)
    flag = torch.zeros(1, dtype=torch.int32)
    out = torch.empty(BLOCK)
    handoff[(2,)](tile, flag, out, MODE=mode, BLOCK=BLOCK)
    assert torch.equal(out, torch.arange(BLOCK, dtype=torch.float32) * 2)


if __name__ == "__main__":
    main(sys.argv[1])
