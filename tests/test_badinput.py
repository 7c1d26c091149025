"""Bad input a replay finds: both checkers raise the same one-line error, worded
by the one formatter (``tracerace.trace.badinput.error``)."""

from __future__ import annotations

import pytest
from builders import Trace

from tracerace.checker import engine, reference
from tracerace.checker.engine import layout
from tracerace.errors import TraceError
from tracerace.trace import badinput


def _launch_order(t: Trace) -> None:
    t.launch = 1
    t.write(0, 0, addr=0, size=4)
    t.launch = 0
    t.write(0, 0, addr=0, size=4)


BAD = {
    # rule: (events, row, the values the message reads)
    badinput.LAUNCH_ORDER: (_launch_order, 1, (0, 1)),
    badinput.BARRIER_ORDER: (
        lambda t: t.bar_sync(0, 3, arg=2).write(0, 3, addr=0, size=4),
        1,
        (0, 3, 0, 0),
    ),
    badinput.WAIT_WITHOUT_SIGNAL: (
        lambda t: t.signal(0, 0, obj=5).wait(0, 1, obj=5, arg=2),
        1,
        (5, 2, 1),
    ),
    badinput.BARRIER_COUNT: (
        lambda t: t.write(0, 0, addr=0, size=4).bar_sync(0, 0, obj=2, arg=0),
        1,
        (2, 0),
    ),
    badinput.EMPTY_WARP_MASK: (
        lambda t: t.write(0, 0, addr=0, size=4).warp_sync(0, 0, arg=0),
        1,
        (),
    ),
    badinput.MBARRIER_COUNT: (lambda t: t.mbar_init(0, 0, obj=0x100, arg=-2), 0, (0x100, -2)),
    badinput.WAIT_GROUP: (lambda t: t.cp_async_wait(0, 0, arg=-1), 0, (-1,)),
    # two signals of 2^62 pass the int64 a count is (issue 35: the engine wrapped)
    badinput.SIGNAL_OVERFLOW: (
        lambda t: (
            t.signal(0, 0, obj=5, arg=1 << 62).signal(0, 0, obj=5, arg=1 << 62).wait(0, 1, obj=5)
        ),
        1,
        (5, 1 << 62, 1 << 62),
    ),
    # expect_tx of 2^63-1 twice (the engine wrapped to a negative count)
    badinput.TX_OVERFLOW: (
        lambda t: (
            t.mbar_init(0, 0, obj=8, arg=1)
            .mbar_expect_tx(0, 0, obj=8, arg=(1 << 63) - 1)
            .mbar_expect_tx(0, 0, obj=8, arg=(1 << 63) - 1)
            .mbar_expect_tx(0, 0, obj=8, arg=2)
        ),
        2,
        (8, (1 << 63) - 1, (1 << 63) - 1),
    ),
    # cluster barriers (format section 9); a block is its own cluster here
    badinput.CLUSTER_ORDER: (
        lambda t: t.cluster_arrive(1, 3, arg=2).cluster_wait(1, 3).write(1, 3, addr=0, size=4),
        2,
        (1, 3, 1, 0),
    ),
    badinput.CLUSTER_COUNT: (lambda t: t.cluster_arrive(2, 0, arg=-1), 0, (2, -1)),
    badinput.CLUSTER_ARRIVE_AGAIN: (
        lambda t: t.cluster_arrive(0, 1, arg=2).cluster_arrive_relaxed(0, 1, arg=2),
        1,
        (0, 1, 0),
    ),
    badinput.CLUSTER_WAIT_ALONE: (lambda t: t.cluster_wait(0, 1), 0, (0, 1, 0)),
    # cp.async stamps (format section 9), within limits made small (cp_limits)
    badinput.CP_GROUP_OVERFLOW: (
        lambda t: t.cp_async_commit(0, 2).cp_async_commit(0, 2).cp_async_commit(0, 2),
        2,
        (0, 2, 3),
    ),
    badinput.CP_ARRIVE_OVERFLOW: (
        lambda t: (
            t.mbar_init(0, 0, obj=8, arg=5)
            .cp_async(0, 0, space=1, addr=0, size=4, space2=0, addr2=0)
            .cp_async_mbar_arrive(0, 0, obj=8)
            .cp_async_mbar_arrive(0, 0, obj=8)
            .cp_async_mbar_arrive(0, 0, obj=8)
        ),
        4,
        (0, 0, 2),
    ),
    # a barrier position holds a generation's number in 32 bits; made small here
    badinput.BAR_GENS_OVERFLOW: (
        lambda t: [t.bar_sync(1, k % 2, obj=7, arg=2) for k in range(6)],
        5,
        (1, 7, 2),
    ),
}
CP_LIMITS = (3, 2)  # the checkers' cp_limits in these tests
BAR_GENS = 2  # and their bar_gens


def errors(build) -> list[TraceError]:
    t = Trace()
    build(t)
    out = []
    for checker in (reference, engine):
        with pytest.raises(TraceError) as err:
            checker.check_trace(t.reader(), cp_limits=CP_LIMITS, bar_gens=BAR_GENS)
        out.append(err.value)
    return out


def test_every_replay_rule_is_covered():
    assert set(BAD) == set(badinput.RULES.values())


@pytest.mark.parametrize("rule", list(BAD), ids=lambda rule: f"{rule.code}-{rule.name}")
def test_both_checkers_word_a_broken_rule_alike(rule):
    build, row, values = BAD[rule]
    ref, eng = errors(build)
    want = badinput.error(rule, *values, path="test.arrow", row=row)
    assert str(ref) == str(eng) == str(want)
    assert (
        (ref.rule, ref.row, ref.message)
        == (eng.rule, eng.row, eng.message)
        == (rule.name, row, rule.message(*values))
    )


def test_the_formatter_takes_the_engines_status_and_its_four_values():
    err = badinput.error(badinput.LAUNCH_ORDER.code, 3, 7, 0, 0, path="t.arrow", row=12)
    assert str(err) == (
        "t.arrow: row 12: launch-order: launch 3 after launch 7: launches must not interleave"
    )
    with pytest.raises(TypeError, match="needs"):
        badinput.error(badinput.BARRIER_COUNT, 1, path=None, row=0)


def test_the_rules_codes_are_distinct_and_not_the_kernels_other_statuses():
    """The replay kernel returns a rule's code as its status (``engine.layout.E_*``
    are the rules' codes); OK, NEED_GROW and NEW_LAUNCH must stay apart."""
    codes = [
        rule.code
        for rule in (
            badinput.BARRIER_ORDER,
            badinput.WAIT_WITHOUT_SIGNAL,
            badinput.BARRIER_COUNT,
            badinput.EMPTY_WARP_MASK,
            badinput.LAUNCH_ORDER,
            badinput.MBARRIER_COUNT,
            badinput.WAIT_GROUP,
            badinput.SIGNAL_OVERFLOW,
            badinput.TX_OVERFLOW,
        )
    ]
    assert len(set(codes)) == len(codes)
    assert not set(codes) & {layout.OK, layout.NEED_GROW, layout.NEW_LAUNCH}


@pytest.mark.parametrize("change, row", [(-(1 << 63), 2), (-(1 << 62), 3)])
def test_a_transaction_count_below_int64_is_bad_input(change, row):
    """Negative expect_tx twice (row 2), or a load's 16 bytes after them (row 3),
    take the count past -2^63."""

    def build(t: Trace) -> None:
        t.mbar_init(0, 0, obj=8, arg=2).mbar_expect_tx(0, 0, obj=8, arg=change)
        t.mbar_expect_tx(0, 0, obj=8, arg=change)
        t.tma_load(0, 0, obj=8, space=1, addr=0, size=16, addr2=0x1000, space2=0)

    ref, eng = errors(build)
    assert str(ref) == str(eng)
    assert (ref.rule, ref.row) == ("count-overflow", row)


def test_a_sync_object_past_2_63_reads_alike_from_both_checkers():
    """The engine keeps ``obj`` in an int64: the message still shows the trace's value."""
    obj = (1 << 64) - 16
    ref, eng = errors(lambda t: t.signal(0, 0, obj=obj).wait(0, 1, obj=obj, arg=2))
    assert str(ref) == str(eng)
    assert f"flag {obj} " in str(ref)


def test_warp_sync_with_every_bit_of_arg_set_is_checked_by_both():
    """``arg = -1`` is a full mask; the reference used to overflow writing it as the
    mismatch's ``obj``."""
    t = Trace()
    t.write(0, 0, addr=0, size=4).warp_sync(0, 0, arg=3).warp_sync(0, 1, arg=-1)
    ref = reference.check_trace(t.reader()).findings
    eng = engine.check_trace(t.reader()).findings
    assert ref.tolist() == eng.tolist()
    assert ref["obj"].tolist() == [(1 << 64) - 1]  # the mismatch names the mask as written
