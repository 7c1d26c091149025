"""A suffix scan by look-back to later programs, and the issue's minimal hand-off.

``scan`` kernel: program p sums its chunk, waits until program p + 1 has
published its inclusive suffix sum, adds it and publishes its own: every
program but the last waits for a later one (a decoupled look-back run right to
left). ``acq_rel``: the flag is raised by a releasing exchange and polled by an
acquiring compare-and-swap (clean). ``relaxed``: both atomics are relaxed, so
nothing orders a program's suffix sum before the next program's read of it.

``minimal``: program 0 spins until program 1 raises a flag (the issue's form).
``deadlock``: each of two programs waits for a flag only the other raises
after its own wait, so neither can go on. ``volatile``: program 0 spins on a
volatile load of a flag that program 1 stores, plainly: the wait ends, but
nothing orders the flag's store and loads.
"""

import sys

import torch
import triton
import triton.language as tl

PROGRAMS, CHUNK = 4, 8


@triton.jit
def suffix_scan(x_ptr, sums_ptr, flags_ptr, RELAXED: tl.constexpr, CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    local = tl.sum(tl.load(x_ptr + pid * CHUNK + tl.arange(0, CHUNK)), axis=0)
    if pid < tl.num_programs(0) - 1:
        if RELAXED:
            while tl.atomic_cas(flags_ptr + pid + 1, 1, 1, sem="relaxed") != 1:  # poll
                pass
        else:
            while tl.atomic_cas(flags_ptr + pid + 1, 1, 1, sem="acquire") != 1:  # poll
                pass
        local += tl.load(sums_ptr + pid + 1)  # race
    tl.store(sums_ptr + pid, local)  # race
    if RELAXED:
        tl.atomic_xchg(flags_ptr + pid, 1, sem="relaxed")
    else:
        tl.atomic_xchg(flags_ptr + pid, 1, sem="release")


@triton.jit
def wait_for_later(flags_ptr, out_ptr, DEADLOCK: tl.constexpr):
    if tl.program_id(0) == 0:
        while tl.atomic_cas(flags_ptr, 1, 1) != 1:  # wait 0
            pass
        tl.store(out_ptr, 7)
        if DEADLOCK:
            tl.atomic_xchg(flags_ptr + 1, 1)
    else:
        if DEADLOCK:
            while tl.atomic_cas(flags_ptr + 1, 1, 1) != 1:  # wait 1
                pass
        tl.atomic_xchg(flags_ptr, 1)


@triton.jit
def spin_on_load(flags_ptr, out_ptr):
    if tl.program_id(0) == 0:
        while tl.load(flags_ptr, volatile=True) == 0:  # race volatile
            pass
        tl.store(out_ptr, 7)
    else:
        tl.store(flags_ptr, 1)  # race volatile


def main(mode: str) -> None:
    flags = torch.zeros(PROGRAMS, dtype=torch.int32)
    if mode == "volatile":
        out = torch.zeros(1, dtype=torch.int32)
        spin_on_load[(2,)](flags, out)
        assert out.item() == 7
        return
    if mode in ("minimal", "deadlock"):
        out = torch.zeros(1, dtype=torch.int32)
        wait_for_later[(2,)](flags, out, DEADLOCK=mode == "deadlock")
        assert out.item() == 7
        return
    x = torch.arange(PROGRAMS * CHUNK, dtype=torch.float32)
    sums = torch.empty(PROGRAMS)
    suffix_scan[(PROGRAMS,)](x, sums, flags, RELAXED=mode == "relaxed", CHUNK=CHUNK)
    expected = x.view(PROGRAMS, CHUNK).sum(dim=1).flip(0).cumsum(0).flip(0)
    assert torch.equal(sums, expected), sums


if __name__ == "__main__":
    main(sys.argv[1])
