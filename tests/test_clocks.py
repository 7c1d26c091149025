"""Clocks against plain dicts: merge_many on both of its output paths
(in-place heapsort for small joins, a scan of the dense scratch for large),
and delta snapshots through lookups, merges, compaction and reference counts."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracerace.checker.engine.clocks import DELTA_MAX, DELTA_MIN, compact
from tracerace.checker.engine.clocks import decref as _decref
from tracerace.checker.engine.clocks import incref as _incref
from tracerace.checker.engine.clocks import lookup as _lookup
from tracerace.checker.engine.clocks import merge as _merge
from tracerace.checker.engine.clocks import merge_many as _merge_many
from tracerace.checker.engine.layout import (
    CV_EPOCH,
    SN_FIELDS,
    SN_LEN,
    SN_PARENT,
    SN_REF,
    SN_START,
    SV_ARENA_LIVE,
    SV_ARENA_TOP,
    SV_SNAP_FREE,
    SV_SNAP_N,
)
from tracerace.checker.jit import from_python

# Compiled-code-only functions, called here through twins with a Python entry.
decref, incref, lookup, merge, merge_many = map(
    from_python, (_decref, _incref, _lookup, _merge, _merge_many)
)

clock = st.dictionaries(st.integers(0, 199), st.integers(1, 50), max_size=40)


def _join(snapshots, values, scratch_rows):
    snaps = np.zeros((len(snapshots) + 4, SN_FIELDS), np.int64)
    arena_a = np.zeros(4096, np.int64)
    arena_e = np.zeros(4096, np.int64)
    sv = np.zeros(8, np.int64)
    top = 0
    for s, clk in enumerate(snapshots, start=1):  # snapshot 0 is the empty clock
        items = sorted(clk.items())
        snaps[s, SN_START], snaps[s, SN_LEN] = top, len(items)
        for a, e in items:
            arena_a[top], arena_e[top] = a, e
            top += 1
    snaps[0, SN_LEN] = 0
    sv[SV_ARENA_TOP] = top
    sv[SV_SNAP_N] = len(snapshots) + 1
    sv[SV_SNAP_FREE] = -1
    cvs = np.array(values, np.int64).reshape(-1, CV_EPOCH + 1)
    scratch = np.full(scratch_rows, -1, np.int64)
    touched = np.zeros(scratch_rows, np.int64)
    snap = merge_many(snaps, arena_a, arena_e, sv, cvs, len(values), scratch, touched)
    assert (scratch == -1).all()  # left clean for the next join
    lo, n = snaps[snap, SN_START], snaps[snap, SN_LEN] if snap else 0
    agents = arena_a[lo : lo + n].tolist()
    assert agents == sorted(set(agents))  # lookups binary-search by agent
    return dict(zip(agents, arena_e[lo : lo + n].tolist()))


@settings(max_examples=300, deadline=None)
@given(st.lists(clock, min_size=1, max_size=5), st.data(), st.sampled_from([200, 6400]))
def test_merge_many_is_the_pointwise_max(snapshots, data, scratch_rows):
    values = []
    for _ in range(data.draw(st.integers(1, 6))):
        base = data.draw(st.integers(0, len(snapshots)))
        agent = data.draw(st.integers(-1, 199))
        values.append((base, agent, data.draw(st.integers(1, 50))))
    want: dict[int, int] = {}
    for base, agent, epoch in values:
        for a, e in snapshots[base - 1].items() if base else ():
            want[a] = max(want.get(a, 0), e)
        if agent >= 0:
            want[agent] = max(want.get(agent, 0), epoch)
    assert _join(snapshots, values, scratch_rows) == want


def _state(rows=64, arena=1 << 14):
    snaps = np.zeros((rows, SN_FIELDS), np.int64)
    snaps[0, SN_REF] = 1
    sv = np.zeros(8, np.int64)
    sv[SV_SNAP_N] = 1
    sv[SV_SNAP_FREE] = -1
    return snaps, np.zeros(arena, np.int64), np.zeros(arena, np.int64), sv


def _contents(snaps, arena_a, arena_e, snap, agents):
    return {a: e for a in agents if (e := lookup(snaps, arena_a, arena_e, snap, a)) > 0}


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.integers(0, 99), st.integers(1, 50), min_size=DELTA_MIN, max_size=60),
    st.lists(st.tuples(st.integers(0, 119), st.integers(1, 80)), min_size=1, max_size=14),
    st.data(),
)
def test_delta_snapshots_read_as_their_joins(root_clock, joins, data):
    """Joining single agents into a large clock makes deltas (no copy of the
    root); lookups, a general merge, merge_many and compaction all see the
    joined clock, and giving back every reference frees every entry."""
    snaps, arena_a, arena_e, sv = _state()
    items = sorted(root_clock.items())
    root = merge_many(
        snaps,
        arena_a,
        arena_e,
        sv,
        np.array([(0, a, e) for a, e in items], np.int64),
        len(items),
        np.full(128, -1, np.int64),
        np.zeros(128, np.int64),
    )
    incref(snaps, root)
    incref(snaps, root)  # this test's own reference, given back at the end
    agents = range(120)

    def reads_as_joined(held, want):
        assert _contents(snaps, arena_a, arena_e, held, agents) == want

    held, want = _join_each(snaps, arena_a, arena_e, sv, root, root_clock, joins, reads_as_joined)
    if len(joins) <= DELTA_MAX and any(e > root_clock.get(a, 0) for a, e in joins):
        assert snaps[held, SN_PARENT] == root  # a delta, not a copy
    # A general merge with another clock reads the delta in place.
    other = data.draw(st.dictionaries(st.integers(0, 119), st.integers(1, 80), max_size=10))
    oi = sorted(other.items())
    osnap = merge_many(
        snaps,
        arena_a,
        arena_e,
        sv,
        np.array([(0, a, e) for a, e in oi] or [(0, -1, 0)], np.int64),
        max(len(oi), 1),
        np.full(128, -1, np.int64),
        np.zeros(128, np.int64),
    )
    incref(snaps, osnap)
    joined = merge(snaps, arena_a, arena_e, sv, held, osnap, -1, 0)
    both = dict(want)
    for a, e in other.items():
        both[a] = max(both.get(a, 0), e)
    assert _contents(snaps, arena_a, arena_e, joined, agents) == both
    # merge_many over the delta and the root reads the root once.
    many = merge_many(
        snaps,
        arena_a,
        arena_e,
        sv,
        np.array([(held, -1, 0), (root, -1, 0)], np.int64),
        2,
        np.full(128, -1, np.int64),
        np.zeros(128, np.int64),
    )
    assert _contents(snaps, arena_a, arena_e, many, agents) == want
    # Compaction keeps what is held and reclaims the rest.
    compact(snaps, arena_a, arena_e, sv)
    assert _contents(snaps, arena_a, arena_e, held, agents) == want
    decref(snaps, sv, held)
    decref(snaps, sv, osnap)
    decref(snaps, sv, root)
    assert sv[SV_ARENA_LIVE] == 0


def _delta_clock(snaps, arena_a, arena_e, sv, root_clock, joins):
    """A held snapshot: ``root_clock`` as a root, then ``joins`` added one
    agent at a time (deltas while they fit). Returns (snapshot, contents)."""
    items = sorted(root_clock.items()) or [(-1, 0)]
    held = merge_many(
        snaps,
        arena_a,
        arena_e,
        sv,
        np.array([(0, a, e) for a, e in items], np.int64),
        len(items),
        np.full(128, -1, np.int64),
        np.zeros(128, np.int64),
    )
    incref(snaps, held)
    return _join_each(snaps, arena_a, arena_e, sv, held, root_clock, joins)


def _join_each(snaps, arena_a, arena_e, sv, held, clock, joins, each=None):
    """Join ``joins`` into the held snapshot ``held`` (contents ``clock``)
    one agent at a time, giving back each previous snapshot; ``each(held,
    want)`` runs after every join. Returns (snapshot, contents)."""
    want = dict(clock)
    for agent, epoch in joins:
        nxt = merge(snaps, arena_a, arena_e, sv, held, 0, agent, epoch)
        incref(snaps, nxt)
        decref(snaps, sv, held)
        held = nxt
        want[agent] = max(want.get(agent, 0), epoch)
        if each is not None:
            each(held, want)
    return held, want


big_clock = st.dictionaries(st.integers(0, 99), st.integers(1, 50), max_size=60)
few_joins = st.lists(st.tuples(st.integers(0, 119), st.integers(1, 80)), max_size=10)


@settings(max_examples=300, deadline=None)
@given(big_clock, few_joins, big_clock, few_joins, st.integers(-1, 119), st.integers(1, 80))
def test_merge_of_two_deltas_is_the_pointwise_max(c1, j1, c2, j2, agent, epoch):
    """A general merge reads either side as a delta over its root (a lock's
    clock is a delta of its last releaser's), with an extra entry or not;
    it returns the first side itself when that already covers the rest."""
    snaps, arena_a, arena_e, sv = _state()
    s1, w1 = _delta_clock(snaps, arena_a, arena_e, sv, c1, j1)
    s2, w2 = _delta_clock(snaps, arena_a, arena_e, sv, c2, j2)
    want = dict(w1)
    for a, e in list(w2.items()) + ([(agent, epoch)] if agent >= 0 else []):
        want[a] = max(want.get(a, 0), e)
    got = merge(snaps, arena_a, arena_e, sv, s1, s2, agent, epoch)
    agents = range(120)
    assert _contents(snaps, arena_a, arena_e, got, agents) == want
    if want == w1:
        assert got == s1
    elif agent < 0 or s2 not in (0, s1):
        assert snaps[got, SN_PARENT] == 0  # a general merge writes a root
        lo, n = snaps[got, SN_START], snaps[got, SN_LEN]
        assert arena_a[lo : lo + n].tolist() == sorted(set(arena_a[lo : lo + n].tolist()))
