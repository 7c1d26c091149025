"""16-byte global-memory granules, chosen per launch (engine.granularity.global_shift_for).

Global memory's initialized bytes outlive a launch, so launches of 8-byte
and of 16-byte granules must hand them to each other (shadow.carry_init).
The traces here alternate launches of both kinds over the same bytes, with
small and large inits, writes, and reads of every alignment; the engine must
agree with the reference, which has no granules at all."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracerace import engine
from tracerace.engine.granularity import global_shift_for
from tracerace.ops import K_UNINIT_READ, Op, Space
from tracerace.engine.shadow import GLOBAL_GRANULE_SHIFT, WIDE_GRANULE_SHIFT

from builders import columns
from test_engine_agrees import SETTINGS, assert_agree, split_rows

WIDE_EVENTS = 72  # at least granularity.SHIFT_MIN_ACCESSES


def _event(launch, thread, op, addr, size):
    return dict(launch=launch, block=0, thread=thread, op=op, space=Space.GLOBAL, addr=addr,
                size=size)


@st.composite
def mixed_launches(draw):
    events = []
    for launch in range(draw(st.integers(2, 4))):
        wide = draw(st.booleans())
        count = WIDE_EVENTS if wide else draw(st.integers(1, 12))
        odd = draw(st.integers(0, 3)) if wide else count  # off-vector accesses
        for k in range(count):
            op = draw(st.sampled_from([Op.READ, Op.READ, Op.WRITE, Op.INIT]))
            if k < odd:
                addr = draw(st.integers(0, 100))
                size = draw(st.sampled_from([1, 2, 4, 8, 3, 12]))
                if op == Op.INIT and draw(st.integers(0, 5)) == 0:
                    size = draw(st.integers(64, 90))  # an init interval
            else:
                addr = 16 * draw(st.integers(0, 6))
                size = 16
            events.append(_event(launch, draw(st.integers(0, 1)), op, addr, size))
        if wide:  # the off-vector accesses anywhere in the launch
            mine = events[len(events) - count:]
            order = draw(st.permutations(range(count)))
            events[len(events) - count:] = [mine[j] for j in order]
    return [dict(ev, ts=i) for i, ev in enumerate(events)]


@settings(max_examples=200, **SETTINGS)
@given(events=mixed_launches(), data=st.data())
def test_launches_of_both_granule_sizes_agree(events, data):
    assert_agree(events, data.draw(split_rows(events, max_size=2)))


def _launch_starts(cols):
    launch = cols["launch"]
    return [0] + [int(k) for k in np.flatnonzero(launch[1:] != launch[:-1]) + 1]


def test_the_choice_follows_the_launch():
    events = [_event(0, 0, Op.WRITE, 8 * k, 8) for k in range(WIDE_EVENTS)]
    events += [_event(1, 0, Op.WRITE, 16 * k, 16) for k in range(WIDE_EVENTS)]
    events += [_event(2, 0, Op.READ, 16 * k, 16) for k in range(10)]  # too few to count
    cols = columns([dict(ev, ts=i) for i, ev in enumerate(events)])
    shifts = [global_shift_for(cols, s) for s in _launch_starts(cols)]
    assert shifts == [GLOBAL_GRANULE_SHIFT, WIDE_GRANULE_SHIFT, GLOBAL_GRANULE_SHIFT]


def test_initialized_bytes_cross_granule_sizes_both_ways():
    # Launch 0 (8-byte granules) writes bytes 8-15; launch 1 (16-byte) reads
    # 0-15 and writes 16-23 among its vectors; launch 2 (8-byte) reads 16-31.
    events = [_event(0, 0, Op.WRITE, 8, 8)]
    events += [_event(1, 0, Op.READ, 0, 16)]
    events += [_event(1, 0, Op.WRITE, 16, 8)]
    events += [_event(1, 0, Op.WRITE, 64 + 16 * k, 16) for k in range(WIDE_EVENTS)]
    events += [_event(2, 0, Op.READ, 16, 16)]
    events = [dict(ev, ts=i) for i, ev in enumerate(events)]
    cols = columns(events)
    assert [global_shift_for(cols, s) for s in _launch_starts(cols)] == [
        GLOBAL_GRANULE_SHIFT, WIDE_GRANULE_SHIFT, GLOBAL_GRANULE_SHIFT]
    f = assert_agree(events, []).findings
    un = f[f["kind"] == K_UNINIT_READ]
    assert sorted(zip(un["row"].tolist(), un["addr"].tolist(), un["size"].tolist())) == [
        (1, 0, 8), (len(events) - 1, 24, 8)]


def test_only_real_launches_mark_a_global_granule_size():
    """A fresh state has run no launch, so no size is marked; a trace of
    16-byte launches alone then never pays for carrying initialized bytes
    across sizes (the state's first reset used to mark 8 bytes)."""
    from tracerace.engine.layout import SV_GLOBAL_SIZES
    from tracerace.engine.shadow import GS_NARROW, GS_WIDE
    st = engine.EngineState()
    assert st.sv[SV_GLOBAL_SIZES] == 0
    st.reset_launch(0, global_shift=WIDE_GRANULE_SHIFT)
    assert st.sv[SV_GLOBAL_SIZES] == GS_WIDE
    st.reset_launch(1, global_shift=GLOBAL_GRANULE_SHIFT)
    assert st.sv[SV_GLOBAL_SIZES] == GS_WIDE | GS_NARROW
