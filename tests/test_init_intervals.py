"""Large ``init`` ranges (at least shadow.INIT_INTERVAL_MIN bytes) go to an
interval list instead of granule masks; a read learns its initialized bytes
from there. The generated traces of test_engine_agrees only make small
inits, so these cover the interval path: ranges that start and end inside a
granule, touch or overlap each other, leave gaps of a few bytes, in every
space, across launches, and reads of every size and alignment over their
edges. The engine must agree with the reference, and a read of a gap must
be reported."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracerace.ops import K_UNINIT_READ, Op, Space
from tracerace.engine.shadow import INIT_INTERVAL_MIN

from test_engine_agrees import SETTINGS, assert_agree, split_rows


@st.composite
def interval_traces(draw):
    events = []
    launches = draw(st.integers(1, 2))
    for launch in range(launches):
        space = draw(st.sampled_from([Space.GLOBAL, Space.GLOBAL, Space.SHARED, Space.LOCAL]))
        for _ in range(draw(st.integers(1, 4))):
            lo = draw(st.integers(0, 96))
            size = draw(st.integers(INIT_INTERVAL_MIN, INIT_INTERVAL_MIN + 40))
            if draw(st.booleans()):
                size = draw(st.integers(1, 12))  # a small one among them: granule masks
            events.append(dict(op=Op.INIT, launch=launch, block=0, thread=0, space=space,
                               addr=lo, size=size))
        for _ in range(draw(st.integers(1, 12))):
            events.append(dict(op=Op.READ, launch=launch, block=0,
                               thread=draw(st.integers(0, 1)), space=space,
                               addr=draw(st.integers(0, 200)),
                               size=draw(st.sampled_from([1, 2, 3, 4, 8, 16, 24]))))
    return [dict(ev, ts=i) for i, ev in enumerate(events)]


@settings(max_examples=300, **SETTINGS)
@given(events=interval_traces(), data=st.data())
def test_reads_over_init_intervals_agree(events, data):
    assert_agree(events, data.draw(split_rows(events, max_size=2)))


def test_a_gap_between_two_intervals_is_reported_and_their_bytes_are_not():
    # Two ranges leave bytes 100-101 uninitialized, inside one 8-byte granule.
    events = [
        dict(op=Op.INIT, addr=3, size=97),
        dict(op=Op.INIT, addr=102, size=70),
        dict(op=Op.READ, addr=96, size=4),    # covered
        dict(op=Op.READ, addr=98, size=8),    # bytes 100-101 are not
        dict(op=Op.READ, addr=102, size=16),  # covered
        dict(op=Op.READ, addr=0, size=4),     # bytes 0-2 are not
    ]
    events = [dict(ev, ts=i, launch=0, block=0, thread=0, space=Space.GLOBAL)
              for i, ev in enumerate(events)]
    f = assert_agree(events, []).findings
    un = f[f["kind"] == K_UNINIT_READ]
    assert sorted(zip(un["row"].tolist(), un["addr"].tolist(), un["size"].tolist())) == [
        (3, 100, 2), (5, 0, 3)]
    assert np.all(f["kind"] == K_UNINIT_READ)
