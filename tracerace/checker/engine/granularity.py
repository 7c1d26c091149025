"""Granule sizes per launch: 4 or 16 bytes for shared memory, narrow or wide granules
for global memory, chosen from a sample of the launch's accesses.
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from .shadow import GLOBAL_GRANULE_SHIFT, GRANULE_SHIFT, WIDE_GRANULE_SHIFT

# How a launch's shared-memory granule size is chosen (shared_shift_for):
# from the first SHIFT_SAMPLE events of the launch in the batch at hand, if
# at least SHIFT_MIN_ACCESSES of them access shared memory and at most
# 1/SHIFT_NARROW_SHARE of those are not aligned 16-byte multiples.
SHIFT_SAMPLE = 1 << 16
SHIFT_MIN_ACCESSES = 64
SHIFT_NARROW_SHARE = 16


def _launch_sample(cols: dict, start: int) -> slice:
    """Rows of the launch that starts at ``start``, at most SHIFT_SAMPLE of
    them (launches come in order, so a binary search finds its end: a trace
    of many short launches does not scan 2^16 rows for each)."""
    launch = cols["launch"][start : start + SHIFT_SAMPLE]
    return slice(start, start + int(np.searchsorted(launch, launch[0], side="right")))


def _mostly_vectors(size: np.ndarray, addr: np.ndarray) -> bool:
    """Whether enough accesses (sizes and addresses) are sampled, and at
    most 1/SHIFT_NARROW_SHARE of them are not aligned 16-byte multiples."""
    n = size.shape[0]
    if n < SHIFT_MIN_ACCESSES:
        return False
    size = size.astype(np.int64)
    addr = addr.astype(np.int64)
    narrow = np.count_nonzero(((size & 15) != 0) | ((addr & 15) != 0) | (size == 0))
    return narrow * SHIFT_NARROW_SHARE <= n


def _coalesced_elements(size: np.ndarray, addr: np.ndarray) -> bool:
    """Whether enough accesses are sampled, nearly all of them elements of at
    most 4 bytes, and at least half of them in the 16-byte block of the
    access sampled before: the threads of a warp reading consecutive
    elements (a coalesced load). An 8-byte granule then holds two elements'
    lists anyway; a 16-byte one holds four, in half the granules."""
    n = size.shape[0]
    if n < SHIFT_MIN_ACCESSES:
        return False
    size = size.astype(np.int64)
    block = addr.astype(np.int64) >> 4
    wider = np.count_nonzero((size > 4) | (size == 0))
    shared_block = np.count_nonzero(block[1:] == block[:-1])
    return wider * SHIFT_NARROW_SHARE <= n and 2 * shared_block >= n


def shared_shift_for(cols: dict, start: int) -> int:
    """log2 of the shared-memory granule for the launch that starts at row
    ``start`` of a batch's columns: 16 bytes where its shared accesses are
    nearly all aligned 16-byte vectors, else 4. Results never depend on the
    choice, only speed: masks keep every byte apart either way. With 4-byte
    elements read by many threads (a tiled matmul), 16-byte granules would
    put four elements' readers in one list; with 16-byte vectors (a
    cp.async pipeline), 4-byte granules cost four of everything per access.
    Shared memory starts afresh at a launch, so each launch may choose."""
    rows = _launch_sample(cols, start)
    if rows.stop - rows.start < SHIFT_MIN_ACCESSES:
        return GRANULE_SHIFT  # too few to sample (a trace of many short launches)
    op = cols["op"][rows]
    shared = (cols["space"][rows] == O.SPACE_SHARED) & ((op <= O.ATOMIC) | (op == O.CP_ASYNC))
    wide = _mostly_vectors(cols["size"][rows][shared], cols["addr"][rows][shared])
    return WIDE_GRANULE_SHIFT if wide else GRANULE_SHIFT


def global_shift_for(cols: dict, start: int) -> int:
    """log2 of the global-memory granule for the launch that starts at row
    ``start``: 16 bytes where its global accesses and cp.async sources are
    nearly all aligned 16-byte vectors (a cp.async pipeline: each source is
    then one granule and one node, not two), or where its direct global
    accesses are nearly all coalesced elements of at most 4 bytes (a kernel
    streaming through its input: half the granule slots); else 8 (8-byte
    words, the common variable of CPU-style traces, keep lists of their
    own). Results never depend on the choice (see shadow.SV_GLOBAL_SIZES for
    the initialized bytes, which outlive a launch)."""
    rows = _launch_sample(cols, start)
    if rows.stop - rows.start < SHIFT_MIN_ACCESSES:
        return GLOBAL_GRANULE_SHIFT
    op = cols["op"][rows]
    direct = (cols["space"][rows] == O.SPACE_GLOBAL) & (op <= O.ATOMIC)
    source = (cols["space2"][rows] == O.SPACE_GLOBAL) & (op == O.CP_ASYNC)
    size = cols["size"][rows]
    addr = cols["addr"][rows]
    wide = _mostly_vectors(
        np.concatenate([size[direct], size[source]]),
        np.concatenate([addr[direct], cols["addr2"][rows][source]]),
    ) or _coalesced_elements(size[direct], addr[direct])
    return WIDE_GRANULE_SHIFT if wide else GLOBAL_GRANULE_SHIFT
