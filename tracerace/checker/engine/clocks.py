"""Vector clocks as shared, immutable, sparse snapshots in one arena.

An agent's clock is ``snapshot(base) + {agent: epoch}``: its own epoch moves
at every event without copying anything, and the many agents that leave one
barrier generation share one snapshot. A snapshot is a run of
``(agent, epoch)`` pairs sorted by agent in ``arena_a``/``arena_e``; the
``snaps`` table holds (start, length, reference count, stamp). Snapshot 0 is
the empty clock and is never freed.

A *clock value* (CV) is the triple (base snapshot, agent, epoch): what a
release, a signal or a barrier arrival hands over without copying.

Invariant: every live snapshot has ``ref > 0``; ``live`` counts the arena
entries of live snapshots, so ``top - live`` is garbage that
:func:`compact` reclaims.
"""

from __future__ import annotations

import numpy as np

from ..jit import jit, jit_inline, jit_leaf
from .layout import (
    CV_AGENT,
    CV_BASE,
    CV_EPOCH,
    SN_LEN,
    SN_PARENT,
    SN_REF,
    SN_SERIAL,
    SN_STAMP,
    SN_START,
    SV_ARENA_LIVE,
    SV_ARENA_TOP,
    SV_SNAP_FREE,
    SV_SNAP_N,
    SV_SNAP_SERIAL,
    SV_STAMP,
)

# Snapshot rows (``layout.SN_*``) are padded to one cache line.
# ``SN_SERIAL`` numbers snapshots in the order they are made (from 1; never
# reused, unlike ids), so "the same snapshot as before" is a comparison of
# serials that a freed and reused id cannot fool.

# Delta snapshots. Joining one (agent, epoch) into a large clock (a thread
# retiring its cp.async groups: its base, a block-wide barrier snapshot, plus
# its copy agent) used to copy the whole snapshot; every thread of a pipeline
# block did it at every k-step, and the next barrier then read 256 distinct
# copies. Now such a join makes a *delta*: ``SN_PARENT`` names a root
# snapshot (a plain one) and the delta's own entries (at most DELTA_MAX,
# sorted) override it; the parent is never itself a delta. ``SN_PARENT == 0``
# means a root (snapshot 0, the empty clock, is nobody's parent). A held
# delta holds its parent: the parent's reference is taken when the delta's
# count goes 0 -> 1 and given back when it goes back to 0, so a delta that was
# made and never held (compaction reclaims it) holds nothing.
DELTA_MIN = 16  # a root at least this long gets deltas; shorter ones are copied
DELTA_MAX = 8


@jit_inline
def lookup(snaps, arena_a, arena_e, snap, agent):
    """Epoch of ``agent`` in a snapshot, 0 when absent (binary search)."""
    if snaps[snap, SN_PARENT] > 0:
        # Not inlined: lookups are inlined at many sites, and the delta case
        # inlined there too would be compiled at each of them (cold start).
        return _lookup_delta(snaps, arena_a, arena_e, snap, agent)
    return _lookup_root(snaps, arena_a, arena_e, snap, agent)


@jit_leaf
def _lookup_delta(snaps, arena_a, arena_e, snap, agent):
    lo = snaps[snap, SN_START]
    for k in range(lo, lo + snaps[snap, SN_LEN]):
        if arena_a[k] == agent:
            return arena_e[k]
    return _lookup_root(snaps, arena_a, arena_e, snaps[snap, SN_PARENT], agent)


@jit_inline
def _lookup_root(snaps, arena_a, arena_e, snap, agent):
    lo = snaps[snap, SN_START]
    n = snaps[snap, SN_LEN]
    if n == 0:
        return 0
    # Agents of a block get consecutive indices, so a snapshot taken at a
    # barrier is usually a dense run: then the entry sits at a fixed offset.
    off = agent - arena_a[lo]
    if off < 0:
        return 0
    if off < n and arena_a[lo + off] == agent:
        return arena_e[lo + off]
    # ... or a dense run at the top (a block whose thread 0 arrived first).
    hi = lo + n
    top = arena_a[hi - 1] - agent
    if top < 0:
        return 0
    if top < n and arena_a[hi - 1 - top] == agent:
        return arena_e[hi - 1 - top]
    while lo < hi:
        mid = (lo + hi) >> 1
        a = arena_a[mid]
        if a < agent:
            lo = mid + 1
        elif a > agent:
            hi = mid
        else:
            return arena_e[mid]
    return 0


@jit_leaf
def incref(snaps, snap):
    if snap > 0:
        if snaps[snap, SN_REF] == 0 and snaps[snap, SN_PARENT] > 0:
            snaps[snaps[snap, SN_PARENT], SN_REF] += 1
        snaps[snap, SN_REF] += 1


@jit_inline
def _release(snaps, sv, snap):
    """One reference less; frees the id at zero. Returns the parent to give
    back (0: none)."""
    snaps[snap, SN_REF] -= 1
    if snaps[snap, SN_REF] != 0:
        return np.int64(0)
    parent = snaps[snap, SN_PARENT]
    sv[SV_ARENA_LIVE] -= snaps[snap, SN_LEN]
    snaps[snap, SN_START] = sv[SV_SNAP_FREE]
    snaps[snap, SN_LEN] = -1
    snaps[snap, SN_PARENT] = 0
    sv[SV_SNAP_FREE] = snap
    return parent


@jit_leaf
def decref(snaps, sv, snap):
    if snap > 0:
        parent = _release(snaps, sv, snap)
        if parent > 0:
            _release(snaps, sv, parent)  # a root: it has no parent of its own


@jit_leaf
def _new_id(snaps, sv):
    if sv[SV_SNAP_FREE] >= 0:
        snap = sv[SV_SNAP_FREE]
        sv[SV_SNAP_FREE] = snaps[snap, SN_START]
    else:
        snap = sv[SV_SNAP_N]
        sv[SV_SNAP_N] += 1
    snaps[snap, SN_REF] = 0
    snaps[snap, SN_STAMP] = 0
    snaps[snap, SN_PARENT] = 0
    sv[SV_SNAP_SERIAL] += 1
    snaps[snap, SN_SERIAL] = sv[SV_SNAP_SERIAL]
    return snap


@jit_inline
def _publish(snaps, sv, top, out, parent):
    """A new snapshot of the entries just written at ``arena[top:out]``."""
    snap = _new_id(snaps, sv)
    snaps[snap, SN_START] = top
    snaps[snap, SN_LEN] = out - top
    snaps[snap, SN_PARENT] = parent
    sv[SV_ARENA_TOP] = out
    sv[SV_ARENA_LIVE] += out - top
    return snap


_END = np.int64(1) << 62  # past every agent: an exhausted side


@jit_inline
def _side(snaps, s):
    """Cursors over snapshot ``s``: its root's entries, and for a delta its
    own (an empty range for a root)."""
    parent = snaps[s, SN_PARENT]
    start = snaps[s, SN_START]
    if parent > 0:
        root = snaps[parent, SN_START]
        return root, root + snaps[parent, SN_LEN], start, start + snaps[s, SN_LEN]
    return start, start + snaps[s, SN_LEN], start, start


@jit_inline
def _take(arena_a, arena_e, agent, i, iend, d, dend):
    """A side's epoch of ``agent`` (-1: it names none), taken from the heads
    of its root and delta cursors, and the cursors moved past it."""
    e = np.int64(-1)
    if i < iend and arena_a[i] == agent:
        e = arena_e[i]
        i += 1
    if d < dend and arena_a[d] == agent:
        e = max(e, arena_e[d])
        d += 1
    return e, i, d


@jit_leaf
def merge(snaps, arena_a, arena_e, sv, s1, s2, agent, epoch):
    """The snapshot ``s1 ∪ s2 ∪ {agent: epoch}`` (``agent < 0``: none).

    Returns ``s1`` itself when nothing changes, so repeated joins of what an
    agent already knows allocate nothing. The caller holds the reference.
    Adding one agent to a large clock makes a delta (see DELTA_MIN); a
    general merge reads delta inputs as their root overlaid by their own
    entries (no flattened copy) and writes a root. At most ``agents + 1``
    new arena entries and one new id.
    """
    if agent >= 0 and (s2 == 0 or s2 == s1):
        if lookup(snaps, arena_a, arena_e, s1, agent) >= epoch:
            return s1
        d = _add_delta(snaps, arena_a, arena_e, sv, s1, agent, epoch)
        if d > 0:
            return d
    # Four sorted streams (each side's root and its delta entries, empty for
    # a root) and the extra entry. A delta's entry overrides its root's and is
    # never smaller, so taking the larger is right. The delta streams are
    # short (DELTA_MAX), so their checks are cheap and well predicted.
    i1, i1end, d1, d1end = _side(snaps, s1)
    i2, i2end, d2, d2end = _side(snaps, s2)
    top = sv[SV_ARENA_TOP]
    extra = agent >= 0
    out = top
    changed = False
    while True:
        # The common stretch: both roots name the same agent, and no delta
        # entry or extra entry comes first. A tight loop with one branch.
        nxt = _END
        if d1 < d1end:
            nxt = arena_a[d1]
        if d2 < d2end and arena_a[d2] < nxt:
            nxt = arena_a[d2]
        if extra and agent < nxt:
            nxt = agent
        while i1 < i1end and i2 < i2end:
            x = arena_a[i1]
            if x != arena_a[i2] or x >= nxt:
                break
            e = arena_e[i1]
            if arena_e[i2] > e:
                e = arena_e[i2]
                changed = True
            arena_a[out] = x
            arena_e[out] = e
            out += 1
            i1 += 1
            i2 += 1
        if not (i1 < i1end or i2 < i2end or d1 < d1end or d2 < d2end or extra):
            break
        best = _END
        if i1 < i1end:
            best = arena_a[i1]
        if i2 < i2end and arena_a[i2] < best:
            best = arena_a[i2]
        if d1 < d1end and arena_a[d1] < best:
            best = arena_a[d1]
        if d2 < d2end and arena_a[d2] < best:
            best = arena_a[d2]
        if extra and agent < best:
            best = agent
        e1, i1, d1 = _take(arena_a, arena_e, best, i1, i1end, d1, d1end)
        e2, i2, d2 = _take(arena_a, arena_e, best, i2, i2end, d2, d2end)
        from1 = e1 >= 0
        e = max(e1, np.int64(0))
        if e2 >= 0 and (e2 > e or not from1):
            e = e2
            changed = True
        if extra and agent == best:
            if epoch > e:
                e = epoch
                changed = True
            elif not from1:
                changed = True
            extra = False
        arena_a[out] = best
        arena_e[out] = e
        out += 1
    if not changed:
        return s1
    return _publish(snaps, sv, top, out, 0)


@jit_leaf
def _add_delta(snaps, arena_a, arena_e, sv, s1, agent, epoch):
    """``s1 ∪ {agent: epoch}`` as a delta, or 0 when it should be copied
    (``s1`` a short root, or a delta with DELTA_MAX entries already)."""
    parent = snaps[s1, SN_PARENT]
    if parent > 0:
        if snaps[s1, SN_LEN] >= DELTA_MAX:
            return 0
    elif snaps[s1, SN_LEN] < DELTA_MIN:
        return 0
    top = sv[SV_ARENA_TOP]
    out = top
    placed = False
    if parent > 0:
        lo = snaps[s1, SN_START]
        for k in range(lo, lo + snaps[s1, SN_LEN]):
            a = arena_a[k]
            if not placed and agent <= a:
                arena_a[out] = agent
                arena_e[out] = epoch
                out += 1
                placed = True
                if a == agent:
                    continue  # the new epoch is larger (checked by the caller)
            arena_a[out] = a
            arena_e[out] = arena_e[k]
            out += 1
    else:
        parent = s1
    if not placed:
        arena_a[out] = agent
        arena_e[out] = epoch
        out += 1
    return _publish(snaps, sv, top, out, parent)


# merge_many reads the clock-value workspace ``cvs`` by its first columns
# (``layout.CV_BASE``, ``CV_AGENT``, ``CV_EPOCH``); callers add their own after
# these.


@jit_leaf
def _heapsort(a, n):
    """Sort ``a[:n]`` in place (no allocation: callers are compiled without NRT)."""
    for start in range(n // 2 - 1, -1, -1):
        _sift(a, start, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift(a, 0, end)


@jit_inline
def _sift(a, root, n):
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and a[child + 1] > a[child]:
            child += 1
        if a[root] >= a[child]:
            return
        a[root], a[child] = a[child], a[root]
        root = child


@jit_leaf
def merge_many(snaps, arena_a, arena_e, sv, cvs, n, scratch, touched):
    """The join of the ``n`` clock values in the rows of ``cvs``
    (base ∪ {agent: epoch}; agent < 0: none).

    Distinct bases are visited once (stamped), entries gathered in the dense
    ``scratch`` (epoch by agent, -1 = unset) and sorted on the way out.
    """
    sv[SV_STAMP] += 1
    stamp = sv[SV_STAMP]
    k = 0
    for m in range(n):
        b = cvs[m, CV_BASE]
        # A delta: its root (once for all its deltas), then its own entries.
        for level in range(2):
            if level == 0:
                s = snaps[b, SN_PARENT] if b > 0 else 0
            else:
                s = b
            if s <= 0 or snaps[s, SN_STAMP] == stamp:
                continue
            snaps[s, SN_STAMP] = stamp
            start = snaps[s, SN_START]
            for p in range(start, start + snaps[s, SN_LEN]):
                a = arena_a[p]
                if scratch[a] < 0:
                    touched[k] = a
                    k += 1
                    scratch[a] = arena_e[p]
                elif arena_e[p] > scratch[a]:
                    scratch[a] = arena_e[p]
        a = cvs[m, CV_AGENT]
        if a >= 0:
            e = cvs[m, CV_EPOCH]
            if scratch[a] < 0:
                touched[k] = a
                k += 1
                scratch[a] = e
            elif e > scratch[a]:
                scratch[a] = e
    if k == 0:
        return 0
    top = sv[SV_ARENA_TOP]
    if k * 32 >= scratch.shape[0]:
        # A large join (crossblock: tens of thousands of agents): one pass
        # over the dense scratch yields the agents in order, far faster than
        # sorting them (measured: heapsort made crossblock 2.7x slower).
        p = 0
        for a in range(scratch.shape[0]):
            if scratch[a] >= 0:
                arena_a[top + p] = a
                arena_e[top + p] = scratch[a]
                scratch[a] = -1
                p += 1
    else:
        _heapsort(touched, k)
        for p in range(k):
            a = touched[p]
            arena_a[top + p] = a
            arena_e[top + p] = scratch[a]
            scratch[a] = -1
    return _publish(snaps, sv, top, top + k, 0)


@jit
def compact(snaps, arena_a, arena_e, sv):
    """Slide live snapshots down over garbage, keeping their ids.

    Also rebuilds the free-id list from the reference counts, so a snapshot
    that was made and never held is reclaimed here.
    """
    n = sv[SV_SNAP_N]
    ids = np.empty(n, np.int64)
    m = 0
    sv[SV_SNAP_FREE] = -1
    for s in range(n - 1, 0, -1):
        if snaps[s, SN_LEN] >= 0 and snaps[s, SN_REF] > 0:
            ids[m] = s
            m += 1
        else:
            snaps[s, SN_LEN] = -1
            snaps[s, SN_REF] = 0
            snaps[s, SN_PARENT] = 0
            snaps[s, SN_START] = sv[SV_SNAP_FREE]
            sv[SV_SNAP_FREE] = s
    starts = np.empty(m, np.int64)
    for q in range(m):
        starts[q] = snaps[ids[q], SN_START]
    order = np.argsort(starts)
    top = 0
    for q in range(m):
        s = ids[order[q]]
        start, ln = snaps[s, SN_START], snaps[s, SN_LEN]
        if start != top:
            for p in range(ln):
                arena_a[top + p] = arena_a[start + p]
                arena_e[top + p] = arena_e[start + p]
            snaps[s, SN_START] = top
        top += ln
    sv[SV_ARENA_TOP] = top
    sv[SV_ARENA_LIVE] = top
