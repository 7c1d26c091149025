"""Byte ownership when one trace is checked by several states side by side
(``docs/parallel.md``).

A state made for shard ``k`` of ``n`` (``sv[SV_SHARD]``, ``sv[SV_SHARDS]``)
replays every synchronization event, so its clocks, barriers, copies, flags
and mbarriers are those of a whole check, but it checks and records only the
bytes it owns. The bytes of each memory (global; the shared memory of each
block; local memory) are cut into aligned stretches of ``1 <<
stretch_shift(sv)`` bytes, a few pages (``sv[SV_STRETCH_SHIFT]``), and
:func:`shard_of` deals each run of 8 stretches to the shards in turn, from a
shard a hash of the run picks (and, for shared memory, the block's number). A
stretch holds whole pages, so it holds whole granules and whole runs of pages:
every list of the shadow memory lies in one shard, and a shard's lists are
those a whole check would keep for its bytes. An access that crosses a stretch
boundary is checked, in each shard, over the stretches that shard owns
(``memory.access``); the race it finds names the overlap of the two whole
accesses, as a whole check does, so the shards' findings merge into the whole
check's (``tracerace.checker.parallel``).

A plain read or write none of whose bytes a shard owns is skipped at the
top of the replay loop (``replay``) after its agent is looked up and its
agent's epoch counted, so every epoch of a shard is the whole check's.

With ``sv[SV_SHARDS] == 1`` (every check but a sharded one) every byte is
owned and nothing here changes what the replay does.
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from ..jit import jit_inline, jit_kernel
from .layout import SV_SHARD, SV_SHARDS, SV_STRETCH_SHIFT

STRETCH_PAGES_SHIFT = 2
"""log2 of the pages in one stretch of bytes a shard owns, unless told."""


@jit_inline
def stretch_shift(sv):
    return sv[SV_STRETCH_SHIFT]


DEAL_SHIFT = 3
"""log2 of the stretches in one deal: each aligned run of ``1 << DEAL_SHIFT``
stretches goes to the shards in turn, from a shard its hash picks."""

_K1 = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15, as int64
_K2 = np.int64(-4417276706812531889)  # 0xC2B2AE3D27D4EB4F
_K3 = np.int64(-7723592293110705685)  # 0x94D049BB133111EB


@jit_inline
def deal_start(space, deal):
    """A well-mixed hash of (space, deal), >= 0."""
    h = deal * _K1 + space * _K2
    h ^= (h >> 31) & np.int64(0x1FFFFFFFF)
    h *= _K3
    h ^= (h >> 29) & np.int64(0x7FFFFFFFF)
    return h & np.int64(0x7FFFFFFFFFFF)


@jit_inline
def shard_of(sv, space, owner, stretch):
    """The shard that owns ``stretch`` of ``space`` (``owner``: the block whose
    shared memory it is; ignored for global and local memory). The stretches
    of each aligned deal of ``1 << DEAL_SHIFT`` are dealt round-robin, from a
    shard that a hash of the deal picks: a dense buffer is split evenly (a
    hash alone left one shard 53% of a benchmark's accesses), and a kernel
    whose hot stretches lie N apart (a pitch of two stretches, the first of
    each used) still spreads over every shard, where a plain round-robin
    would give them all to one. The shared memory of block ``b`` starts
    ``b`` shards further on: a kernel's blocks are numbered in a row and do
    about the same work, and a block's shared memory is mostly one stretch,
    so its blocks are dealt in turn too."""
    key = owner if space == O.SPACE_SHARED else np.int64(0)
    start = deal_start(space, stretch >> DEAL_SHIFT) + key
    return (start + (stretch & ((np.int64(1) << DEAL_SHIFT) - 1))) % sv[SV_SHARDS]


@jit_inline
def owns(sv, space, owner, addr, size):
    """Whether this state owns [addr, addr + size): 1 all of it, 0 none, 2 it
    crosses a stretch boundary (``stretch_end`` walks it)."""
    if sv[SV_SHARDS] <= 1:
        return 1
    us = stretch_shift(sv)
    u = addr >> us
    if u != (addr + size - 1) >> us:
        return 2
    return 1 if shard_of(sv, space, owner, u) == sv[SV_SHARD] else 0


@jit_inline
def stretch_end(sv, space, owner, lo, end):
    """(the end of the longest range from ``lo`` towards ``end`` whose stretches
    one shard owns, whether this state is that shard)."""
    us = stretch_shift(sv)
    me = sv[SV_SHARD]
    mine = shard_of(sv, space, owner, lo >> us) == me
    hi = min(end, ((lo >> us) + 1) << us)
    while hi < end and (shard_of(sv, space, owner, hi >> us) == me) == mine:
        hi = min(end, hi + (np.int64(1) << us))
    return hi, mine


@jit_inline
def access_owned(sv, space, peer, addr, size):
    """:func:`owns` of an access of ``size`` > 0 bytes at ``addr`` in ``space``
    (``peer``: the block whose shared memory it is)."""
    return owns(sv, space, peer if space == O.SPACE_SHARED else np.int64(0), addr, size)


@jit_kernel
def keep_owned(rows, op, addr, size, sv):
    """Keep, at the front of ``rows`` (global-memory accesses), those this
    state replays: atomics and the plain accesses it owns a byte of. Returns
    how many."""
    k = 0
    for j in range(rows.shape[0]):
        i = rows[j]
        if (
            op[i] == O.ATOMIC
            or access_owned(
                sv, np.int64(O.SPACE_GLOBAL), np.int64(0), np.int64(addr[i]), np.int64(size[i])
            )
            != 0
        ):
            rows[k] = i
            k += 1
    return k
