"""The engine's choice of shared-memory granule per launch (``shared_shift_for``)."""

from __future__ import annotations

import pytest

from tracerace import engine
from tracerace.engine.granularity import shared_shift_for
from tracerace.engine.layout import SV_SHARED_REGION
from tracerace.ops import Op, Space
from tracerace.engine.shadow import GRANULE_SHIFT, REGION_WIDE, WIDE_GRANULE_SHIFT

from builders import columns
from test_engine_agrees import assert_agree


def _vectors(n, *, size=16, stride=16, offset=0, launch=0, op=Op.READ):
    """``n`` shared accesses of ``size`` bytes by 32 threads of block 0."""
    return [dict(op=int(op), ts=i, launch=launch, block=0, thread=i % 32,
                 space=int(Space.SHARED), addr=offset + stride * (i % 64), size=size)
            for i in range(n)]


def _shift(events, start=0):
    return shared_shift_for(columns(events), start)


def test_a_launch_of_aligned_16_byte_vectors_gets_16_byte_granules():
    assert _shift(_vectors(256)) == WIDE_GRANULE_SHIFT
    # 32-byte accesses at 16-byte alignment are two whole granules each.
    assert _shift(_vectors(256, size=32, stride=32)) == WIDE_GRANULE_SHIFT
    # cp.async of 16 bytes into shared memory counts as well.
    copies = [dict(ev, op=int(Op.CP_ASYNC), space2=int(Space.GLOBAL), addr2=4096 + 16 * i)
              for i, ev in enumerate(_vectors(256))]
    assert _shift(copies) == WIDE_GRANULE_SHIFT


@pytest.mark.parametrize("events", [
    _vectors(256, size=4, stride=4),          # 4-byte elements: a tiled matmul
    _vectors(256, offset=8),                  # 16 bytes, misaligned
    _vectors(32),                             # too few shared accesses to tell
], ids=["4-byte", "misaligned", "few"])
def test_other_launches_keep_4_byte_granules(events):
    assert _shift(events) == GRANULE_SHIFT


def test_a_few_narrow_accesses_among_vectors_are_tolerated_but_not_more():
    vec = _vectors(240)
    few = vec + _vectors(15, size=4, stride=4)   # 15 of 255: under 1/16
    many = vec + _vectors(17, size=4, stride=4)  # 17 of 257: over 1/16
    assert _shift(few) == WIDE_GRANULE_SHIFT
    assert _shift(many) == GRANULE_SHIFT


def test_only_the_launch_that_starts_counts():
    """Events of the next launch after it do not vote; a launch starting
    further in the batch is judged from its own first row."""
    narrow = _vectors(64, size=4, stride=4)
    wide = _vectors(256, launch=1)
    assert _shift(narrow + wide) == GRANULE_SHIFT
    assert _shift(narrow + wide, start=64) == WIDE_GRANULE_SHIFT


def test_the_choice_reaches_the_replay_and_leaves_the_findings_alone():
    """A racy launch of 16-byte vectors (writes by one thread, unordered
    reads by others) followed by a launch of 4-byte accesses: the engine
    gives the first 16-byte granules, the second 4-byte ones, and reports
    what the reference reports."""
    racy = _vectors(128, op=Op.WRITE) + [dict(ev, ts=128 + i, thread=(i % 32) + 1)
                                          for i, ev in enumerate(_vectors(128))]
    narrow = [dict(ev, ts=256 + i) for i, ev in
              enumerate(_vectors(128, size=4, stride=4, launch=1, op=Op.WRITE))]
    chosen = []
    original = engine.EngineState.reset_launch

    def spy(self, launch, shared_shift=None, global_shift=None):
        original(self, launch, shared_shift, global_shift)
        chosen.append((launch, int(self.sv[SV_SHARED_REGION]) & int(REGION_WIDE) != 0))

    engine.EngineState.reset_launch = spy
    try:
        want = assert_agree(racy + narrow, [100, 300])
    finally:
        engine.EngineState.reset_launch = original
    assert chosen[1:] == [(0, True), (1, False)]
    assert len(want.findings) > 0
