"""Launch boundaries inside the replay (engine.launches).

The kernel closes a launch and starts the next itself unless the new launch
is long enough for its granule sizes to be sampled, so a trace of many short
launches costs no call from Python per launch; the findings stay the
reference's, whatever is pending when a launch ends.
"""

from __future__ import annotations

import numpy as np
from builders import SimpleReader, columns
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from test_engine_agrees import SETTINGS, assert_agree, split_rows
from tracegen import traces

from tracerace.checker import reference
from tracerace.checker.engine import EngineState
from tracerace.checker.engine.check import close_launch, replay_batch
from tracerace.checker.engine.granularity import SHIFT_MIN_ACCESSES
from tracerace.checker.engine.pools import Sizes
from tracerace.checker.engine.shadow import WIDE_GRANULE_SHIFT
from tracerace.errors import TraceError
from tracerace.trace import ops as O
from tracerace.trace.ops import Op, Space


def _kernel_calls(events: list[dict], **options) -> int:
    """Calls of the replay kernel for ``events`` in one batch."""
    st_ = EngineState(**options)
    for batch in SimpleReader(columns(events), []):
        replay_batch(st_, batch, None)
    close_launch(st_)
    return st_.kernel_calls


def _one_write_launches(n: int, per_launch: int = 1) -> list[dict]:
    return [
        dict(
            launch=k // per_launch,
            block=k % 3,
            thread=0,
            op=Op.WRITE,
            space=Space.GLOBAL,
            addr=8 * (k % 5),
            size=8,
        )
        for k in range(n)
    ]


def test_short_launches_are_crossed_by_the_kernel_itself():
    """1,000 one-write launches in one batch: one kernel call, not one per
    launch (a driver that closed every launch called it 1,001 times)."""
    assert _kernel_calls(_one_write_launches(1000)) == 1
    assert _kernel_calls(_one_write_launches(1000), shared_shift=WIDE_GRANULE_SHIFT) == 1


def test_a_launch_long_enough_to_sample_goes_to_the_driver_once():
    """Launches of SHIFT_MIN_ACCESSES rows have their granule sizes sampled
    by the driver: one more call each, none for the short ones."""
    long_ = _one_write_launches(4 * SHIFT_MIN_ACCESSES, per_launch=SHIFT_MIN_ACCESSES)
    short = [dict(ev, launch=4 + k) for k, ev in enumerate(_one_write_launches(100))]
    assert _kernel_calls(long_ + short) == 1 + 4


def test_findings_pool_grows_at_a_boundary_the_kernel_crosses():
    """Incomplete barrier generations at the end of short launches need
    room in the findings pool: with tiny pools the kernel stops to grow it
    and goes on, and every launch's barrier_mismatch is reported."""
    events = []
    for launch in range(40):
        events.append(dict(launch=launch, block=0, thread=0, op=Op.BAR_SYNC, obj=0, arg=2))
        events.append(
            dict(
                launch=launch,
                block=0,
                thread=1,
                op=Op.WRITE,
                space=Space.GLOBAL,
                addr=8 * launch,
                size=8,
            )
        )
    want = assert_agree(events, [], sizes=Sizes.tiny())
    assert np.count_nonzero(want.findings["kind"] == O.K_BARRIER_MISMATCH) == 40
    assert assert_agree(events, [13, 41]).findings.shape == want.findings.shape


@settings(max_examples=300, **SETTINGS)
@given(events=traces(async_ops=True, max_events=120, max_launches=12), data=st.data())
def test_engine_matches_reference_over_many_short_launches(events, data):
    """Up to twelve short launches, crossed by the kernel (or, after a launch
    that grew a hash map, by the driver), batches split anywhere."""
    splits = data.draw(split_rows(events))
    sizes = data.draw(st.sampled_from([None, Sizes.tiny()]))
    assert_agree(events, splits, sizes=sizes)


def _last_launch(events) -> int:
    return max((ev["launch"] for ev in events), default=-1)


def _pending_signal(events) -> bool:
    """A signal of one launch consumed by a wait of a later one."""
    signalled = {}
    for ev in events:
        if ev["op"] == Op.SIGNAL:
            signalled.setdefault(ev.get("obj"), ev["launch"])
        elif ev["op"] == Op.WAIT and signalled.get(ev.get("obj"), ev["launch"]) < ev["launch"]:
            return True
    return False


def _copy_in_flight(events) -> bool:
    """A launch before the last ends with a thread's cp.async not waited for."""
    open_ = {}
    for ev in events:
        key = (ev["launch"], ev["block"], ev["thread"])
        if ev["op"] == Op.CP_ASYNC:
            open_[key] = True
        elif ev["op"] == Op.CP_ASYNC_WAIT:
            open_[key] = False
    return any(v and key[0] < _last_launch(events) for key, v in open_.items())


def _mbarrier_open(events) -> bool:
    """A launch before the last expects transaction bytes on an mbarrier."""
    return any(
        ev["op"] == Op.MBAR_EXPECT_TX and ev["launch"] < _last_launch(events) for ev in events
    )


def _barrier_incomplete(events) -> bool:
    """A launch before the last ends with a barrier generation incomplete."""
    try:
        found = reference.check_trace(SimpleReader(columns(events), [])).findings
    except TraceError:
        return False
    return bool(
        np.any((found["kind"] == O.K_BARRIER_MISMATCH) & (found["launch"] < _last_launch(events)))
    )


PENDING = (_pending_signal, _copy_in_flight, _mbarrier_open, _barrier_incomplete)


def test_generated_traces_reach_launch_ends_with_pending_state():
    """The generator behind the agreement tests ends launches with signals
    pending, copies in flight, mbarriers expecting bytes and barrier
    generations incomplete."""
    seen = set()

    @settings(max_examples=300, phases=[Phase.generate], database=None, **SETTINGS)
    @given(events=traces(async_ops=True, max_events=120, max_launches=12))
    def draw(events):
        seen.update(p.__name__ for p in PENDING if p(events))

    draw()
    assert seen == {p.__name__ for p in PENDING}


def _flag_launches(n: int) -> list[dict]:
    """Launch 0 signals flag 1 twice from two sites (one pending across every
    launch); launches 1..n-2 each signal a fresh flag and write; the last
    launch's two threads each consume one of launch 0's signals, after a pair
    of their own on flag 1 (sync_alias pairings of two launches on one flag),
    and write what launch 0 wrote."""
    ev = [
        dict(launch=0, block=0, thread=0, op=Op.WRITE, space=Space.GLOBAL, addr=0, size=8),
        dict(launch=0, block=0, thread=0, op=Op.SIGNAL, obj=1, site=1),
        dict(launch=0, block=0, thread=1, op=Op.SIGNAL, obj=1, site=2),
    ]
    for k in range(1, n - 1):
        ev += [
            dict(launch=k, block=0, thread=0, op=Op.SIGNAL, obj=100 + k, site=3),
            dict(launch=k, block=0, thread=0, op=Op.WRITE, space=Space.GLOBAL, addr=8, size=8),
        ]
    last = n - 1
    ev += [
        dict(launch=last, block=0, thread=0, op=Op.WAIT, obj=1, arg=1, site=4),
        dict(launch=last, block=0, thread=1, op=Op.WAIT, obj=1, arg=1, site=5),
        dict(launch=last, block=0, thread=0, op=Op.WRITE, space=Space.GLOBAL, addr=0, size=8),
        dict(launch=last, block=0, thread=1, op=Op.WRITE, space=Space.GLOBAL, addr=8, size=8),
    ]
    return ev


@settings(**SETTINGS, max_examples=20)
@given(n=st.integers(2, 40), split=st.integers(1, 200))
def test_signals_pending_across_many_launches_agree_with_the_reference(n, split):
    """A signal and a flag's pairings are stamped with their launch and read
    as empty from a later one (no boundary walks the flags): the waits of the
    last launch take launch 0's signals, which order nothing of it."""
    events = _flag_launches(n)
    assert_agree(events, list(range(split, len(events), split)))
    assert_agree(events, [], sizes=Sizes.tiny())


def test_a_later_launch_does_not_see_an_earlier_launchs_pairings():
    """Launch 0 pairs flag 7's signal site 1 with wait site 2; launch 1 pairs
    site 3 with site 4 on the same flag. The reference reports no sync_alias
    (the pairings of launch 0 are not launch 1's), nor may the engine, whose
    pool of pairings starts again at each launch."""
    events = [
        dict(launch=0, block=0, thread=0, op=Op.SIGNAL, obj=7, site=1),
        dict(launch=0, block=0, thread=1, op=Op.WAIT, obj=7, arg=1, site=2),
        dict(launch=1, block=0, thread=0, op=Op.SIGNAL, obj=7, site=3),
        dict(launch=1, block=0, thread=1, op=Op.WAIT, obj=7, arg=1, site=4),
        dict(launch=1, block=0, thread=0, op=Op.SIGNAL, obj=7, site=1),
        dict(launch=1, block=0, thread=1, op=Op.WAIT, obj=7, arg=1, site=2),
    ]
    for splits in ([], [1, 3, 5], [2, 4]):
        ref = assert_agree(events, splits)
        assert O.K_SYNC_ALIAS not in ref.findings["kind"].tolist()
