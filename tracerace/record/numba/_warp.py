"""Warp operations under the recorder's scheduler: what each lane gets back.

numba-cuda's simulator has none of ``cuda.syncwarp``, the shuffles, the votes
or the matches; the recorder gives them CUDA's meaning. The lanes of a warp
are threads ``32w .. 32w+31`` of the block, linearised x fastest. A warp
operation is a *meeting*: the calling lane waits until every lane its mask
names has made the same operation with the same mask (the scheduler's
:meth:`~tracerace.record.numba._sched.BlockRun.warp_meet`), then each lane
computes its result from the values all of them brought, with the functions
below. The trace shows each meeting as one ``warp_sync`` per lane over the
mask; the values a lane passes travel in Python, and the memory it read them
from or writes them to is recorded where the kernel touches it.

Lanes a mask names that the block does not have (a block of 48 threads has
lanes 16..31 of warp 1 missing) are left out of the meeting, as on a GPU,
where they never run; so is a lane whose thread has ended before the meeting
completes (CUDA lets an exited lane off). A lane the operation reads from that
gave no value (it is outside the mask, does not exist or has ended) gives the
caller its own value: CUDA leaves that result undefined, and the recorder picks
a fixed one.
"""

from __future__ import annotations

WARP_SIZE = 32
FULL_MASK = 0xFFFFFFFF

SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_BFLY = 0, 1, 2, 3
"""PTX ``shfl.sync`` modes, as numba-cuda's ``shfl_*_sync`` pass them."""

SHFL_CLAMP = {SHFL_IDX: 0x1F, SHFL_UP: 0, SHFL_DOWN: 0x1F, SHFL_BFLY: 0x1F}
"""The ``c`` operand numba-cuda gives each mode (a whole warp, no segments)."""


def shfl_source(mode: int, lane: int, b: int, c: int) -> int:
    """The lane ``shfl.sync`` reads for ``lane`` (PTX's rule: ``b`` and the
    clamp ``c[4:0]`` keep five bits, ``c[12:8]`` is the segment mask; a source
    outside the clamp is the lane itself)."""
    bval, cval, segmask = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (cval & ~segmask)
    min_lane = lane & segmask
    if mode == SHFL_UP:
        j = lane - bval
        valid = j >= max_lane
    elif mode == SHFL_DOWN:
        j = lane + bval
        valid = j <= max_lane
    elif mode == SHFL_BFLY:
        j = lane ^ bval
        valid = j <= max_lane
    else:
        j = min_lane | (bval & ~segmask)
        valid = j <= max_lane
    return j if valid else lane


def shuffle(values: dict[int, object], mode: int, lane: int, b: int) -> object:
    """What ``lane`` gets from a shuffle whose lanes brought ``values``."""
    source = shfl_source(mode, lane, int(b), SHFL_CLAMP[mode])
    return values.get(source, values[lane])


def ballot(values: dict[int, object]) -> int:
    """The lanes whose predicate is true, as a bit mask."""
    return sum(1 << lane for lane, v in values.items() if v)


def match_any(values: dict[int, object], lane: int) -> int:
    """The lanes that brought the same value as ``lane``."""
    mine = values[lane]
    return sum(1 << other for other, v in values.items() if v == mine)


def match_all(values: dict[int, object], mask: int) -> tuple[int, bool]:
    """``(mask, True)`` when every lane brought the same value, else ``(0, False)``."""
    first = next(iter(values.values()))
    same = all(v == first for v in values.values())
    return (mask, True) if same else (0, False)


def lanes(mask: int) -> str:
    """``mask``'s lanes for a message: ``0-3, 7``."""
    ranges, start = [], None
    for lane in range(WARP_SIZE + 1):
        on = lane < WARP_SIZE and mask >> lane & 1
        if on and start is None:
            start = lane
        elif not on and start is not None:
            ranges.append(str(start) if start == lane - 1 else f"{start}-{lane - 1}")
            start = None
    return ", ".join(ranges)
