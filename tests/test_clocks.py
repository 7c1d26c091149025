"""merge_many against a plain dict join, on both of its output paths
(in-place heapsort for small joins, a scan of the dense scratch for large)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracerace.clocks import (CV_FIELDS_MIN, SN_FIELDS, SN_LEN, SN_START, SV_ARENA_TOP,
                              SV_SNAP_FREE, SV_SNAP_N, merge_many)

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
    cvs = np.array(values, np.int64).reshape(-1, CV_FIELDS_MIN)
    scratch = np.full(scratch_rows, -1, np.int64)
    touched = np.zeros(scratch_rows, np.int64)
    snap = merge_many(snaps, arena_a, arena_e, sv, cvs, len(values), scratch, touched)
    assert (scratch == -1).all()  # left clean for the next join
    lo, n = snaps[snap, SN_START], snaps[snap, SN_LEN] if snap else 0
    agents = arena_a[lo:lo + n].tolist()
    assert agents == sorted(set(agents))  # lookups binary-search by agent
    return dict(zip(agents, arena_e[lo:lo + n].tolist()))


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
        for a, e in (snapshots[base - 1].items() if base else ()):
            want[a] = max(want.get(a, 0), e)
        if agent >= 0:
            want[agent] = max(want.get(agent, 0), epoch)
    assert _join(snapshots, values, scratch_rows) == want
