"""Launch boundaries: closing a launch and starting the next, inside the replay.

A launch starts afresh: its agents, clocks, barriers, mbarriers, locks,
atomics and shared memory are forgotten; the granule table (its slots are
stamped with their launch), global init intervals, signals (their counts
pair with later waits; their clocks are made empty) and the findings
survive. ``begin_launch`` does that to the arrays, and is the one definition
of it: the driver's ``EngineState.reset_launch`` calls it too.

The replay crosses a boundary itself (``next_launch``) unless the new launch
is long enough for its granule sizes to be sampled (``granularity``: at least
``SHIFT_MIN_ACCESSES`` of its rows in the batch) or a hash map grew in the
launch before; then it returns ``NEW_LAUNCH`` and the driver does it, once
per such launch. So a trace of many short launches makes no Python call per
launch, and a long launch pays for its one call.
"""

from __future__ import annotations

import numpy as np

from ..jit import jit, jit_leaf
from .barriers import finish_launch
from .clocks import SN_REF
from .granularity import SHIFT_MIN_ACCESSES
from .hashmap import HM_EMPTY
from .layout import (
    GR_FIND,
    IV_REGION,
    NEED_GROW,
    NEW_LAUNCH,
    OK,
    SV_AR_FREE,
    SV_ARR_FREE,
    SV_BAR_GENS_MAX,
    SV_CP_ARRIVES_MAX,
    SV_CP_GROUP_MAX,
    SV_ED_TOP,
    SV_FIELDS,
    SV_FIXED_SHARED,
    SV_FQ_N,
    SV_GEN_N,
    SV_GLOBAL_REGION,
    SV_GLOBAL_SIZES,
    SV_GRAN_COUNT,
    SV_GROW,
    SV_IV_N,
    SV_LAUNCH,
    SV_MAPS_CAP,
    SV_NFIND,
    SV_NODE_FREE,
    SV_PAGE_LAUNCH,
    SV_PAGE_SHIFT,
    SV_SHARD,
    SV_SHARDS,
    SV_SHARED_REGION,
    SV_SIG_FREE,
    SV_SIG_TOP,
    SV_SIG_USED,
    SV_SNAP_FREE,
    SV_SNAP_N,
    SV_STRETCH_SHIFT,
    SV_VIEW,
)
from .shadow import (
    GLOBAL_GRANULE_SHIFT,
    GRANULE_SHIFT,
    GS_NARROW,
    GS_WIDE,
    REGION_SHARED,
    REGION_WIDE,
    WIDE_GRANULE_SHIFT,
)

# The sv slots a launch keeps (every other one starts at 0).
KEEP = np.zeros(SV_FIELDS, np.bool_)
KEEP[
    [
        SV_NFIND,
        SV_FQ_N,
        SV_SIG_TOP,
        SV_SIG_FREE,
        SV_SIG_USED,
        SV_ED_TOP,
        SV_GRAN_COUNT,
        SV_GLOBAL_SIZES,
        SV_VIEW,
        SV_PAGE_SHIFT,
        SV_PAGE_LAUNCH,
        SV_MAPS_CAP,
        SV_FIXED_SHARED,
        SV_SHARDS,
        SV_SHARD,
        SV_STRETCH_SHIFT,
        SV_CP_GROUP_MAX,
        SV_CP_ARRIVES_MAX,
        SV_BAR_GENS_MAX,
    ]
] = True

# Room ``finish_launch`` needs in the findings pool beyond one row per
# barrier generation.
FINISH_SLACK = 8


@jit
def begin_launch(sv, ivs, snaps, launch, shared_shift, global_shift):
    """Forget the finished launch's state in the arrays (not the hash maps,
    which the caller empties) and start ``launch`` (-1: the state's first
    reset, before any launch) with shared and global granules of
    ``shared_shift`` and ``global_shift``."""
    # Global init intervals survive; shared and local ones belong to the
    # launch. The intervals are sorted by (region, lo) and global memory is
    # region 0, so the global ones are a prefix, found by bisection: a
    # boundary does not walk every init of the trace so far.
    lo, hi = 0, sv[SV_IV_N]
    while lo < hi:
        mid = (lo + hi) >> 1
        if ivs[mid, IV_REGION] == 0:
            lo = mid + 1
        else:
            hi = mid
    n_iv = lo
    for k in range(SV_FIELDS):
        if not KEEP[k]:
            sv[k] = 0
    sv[SV_LAUNCH] = launch
    sv[SV_IV_N] = n_iv
    sv[SV_SHARED_REGION] = REGION_SHARED | (
        REGION_WIDE if shared_shift == WIDE_GRANULE_SHIFT else 0
    )
    wide = global_shift == WIDE_GRANULE_SHIFT
    sv[SV_GLOBAL_REGION] = REGION_WIDE if wide else 0
    if launch >= 0:
        sv[SV_GLOBAL_SIZES] |= GS_WIDE if wide else GS_NARROW
    for k in (SV_SNAP_FREE, SV_NODE_FREE, SV_ARR_FREE, SV_AR_FREE):
        sv[k] = -1
    sv[SV_SNAP_N] = 1  # snapshot 0: the empty clock
    snaps[0, :] = 0
    snaps[0, SN_REF] = 1
    # Signals survive a launch (their counts pair with later waits) but
    # their clocks name only agents of the old launch, and the pairs of waits
    # and signals (sync_alias) are the launch's own: both are stamped with
    # their launch and read as empty from a later one (signals.py), so
    # nothing here walks the flags.


@jit_leaf
def _empty(tbl):
    for h in range(tbl.shape[0]):
        tbl[h, 0] = HM_EMPTY


@jit_leaf
def next_launch(t, c, i, launch):
    """Close the launch of ``t.sv`` and start ``launch``, whose first row is
    row ``i`` of batch ``c``: ``OK``; ``NEED_GROW`` (``SV_GROW`` set) when the
    findings pool lacks room for ``finish_launch``; ``NEW_LAUNCH`` when the
    driver is to do it (see the module docstring)."""
    sv = t.sv
    last = i + SHIFT_MIN_ACCESSES - 1
    if last < c.launch.shape[0] and c.launch[last] == launch:
        return NEW_LAUNCH  # long enough to sample its granule sizes
    cap = sv[SV_MAPS_CAP]
    if (
        t.agent_map.shape[0] != cap
        or t.async_map.shape[0] != cap
        or t.bar_map.shape[0] != cap
        or t.mb_map.shape[0] != cap
        or t.lock_map.shape[0] != cap
        or t.atom_map.shape[0] != cap
    ):
        return NEW_LAUNCH  # the driver makes them small again
    if sv[SV_LAUNCH] >= 0:
        if sv[SV_NFIND] + sv[SV_GEN_N] + FINISH_SLACK > t.find.shape[0]:
            sv[SV_GROW] = GR_FIND
            return NEED_GROW
        finish_launch(t.gens, sv, t.find)
    shared = sv[SV_FIXED_SHARED] if sv[SV_FIXED_SHARED] >= 0 else np.int64(GRANULE_SHIFT)
    begin_launch(sv, t.ivs, t.snaps, launch, shared, np.int64(GLOBAL_GRANULE_SHIFT))
    _empty(t.agent_map)
    _empty(t.async_map)
    _empty(t.bar_map)
    _empty(t.mb_map)
    _empty(t.lock_map)
    _empty(t.atom_map)
    return OK
