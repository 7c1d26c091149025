"""Locks: a release leaves the releaser's clock on the lock, an acquire joins it
(the reference's ``on_release`` and ``on_acquire``).
"""

from __future__ import annotations

import numpy as np

from ..jit import jit_inline
from .agents import join_into
from .clocks import SN_SERIAL, decref, incref, merge
from .hashmap import hm_get, hm_put
from .layout import AG_ACQ_SERIAL, AG_BASE, SV_LOCK_N


# ---------------------------------------------------------------------------
@jit_inline
def on_release(t, c, i, ev, a, epoch):
    """A release of a lock: the lock's clock joins the releaser's. When it is
    still the snapshot this thread acquired (the usual critical section), the
    thread's clock already covers it, and the join is the thread's clock plus
    its own epoch: a delta, not a merge."""
    sv, ag, snaps, arena_a, arena_e, lock_map = (
        t.sv,
        t.ag,
        t.snaps,
        t.arena_a,
        t.arena_e,
        t.lock_map,
    )
    obj = np.int64(c.obj[i])
    lock = max(hm_get(lock_map, obj, 0, 0), 0)
    if lock == 0 or snaps[lock, SN_SERIAL] == ag[a, AG_ACQ_SERIAL]:
        snap = merge(snaps, arena_a, arena_e, sv, ag[a, AG_BASE], 0, a, epoch)
    else:
        snap = merge(snaps, arena_a, arena_e, sv, lock, ag[a, AG_BASE], a, epoch)
    incref(snaps, snap)
    decref(snaps, sv, lock)
    sv[SV_LOCK_N] += hm_put(lock_map, obj, 0, 0, snap)


@jit_inline
def on_acquire(t, c, i, ev, a, epoch):
    """An acquire of a lock: the acquirer's clock joins the lock's."""
    sv, ag, snaps, arena_a, arena_e, lock_map = (
        t.sv,
        t.ag,
        t.snaps,
        t.arena_a,
        t.arena_e,
        t.lock_map,
    )
    lock = max(hm_get(lock_map, np.int64(c.obj[i]), 0, 0), 0)
    join_into(ag, snaps, arena_a, arena_e, sv, a, lock, -1, 0)
    ag[a, AG_ACQ_SERIAL] = snaps[lock, SN_SERIAL]
