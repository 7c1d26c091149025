"""Bad input a replay finds: both checkers raise the same one-line error, worded
by the one formatter (``tracerace.badinput.error``)."""

from __future__ import annotations

import pytest

from tracerace import badinput, engine, reference
from tracerace.engine import layout
from tracerace.errors import TraceError

from builders import Trace


def _launch_order(t: Trace) -> None:
    t.launch = 1
    t.write(0, 0, addr=0, size=4)
    t.launch = 0
    t.write(0, 0, addr=0, size=4)


BAD = {
    # rule: (events, row, the values the message reads)
    badinput.LAUNCH_ORDER: (_launch_order, 1, (0, 1)),
    badinput.BARRIER_ORDER: (lambda t: t.bar_sync(0, 3, arg=2).write(0, 3, addr=0, size=4),
                             1, (0, 3, 0, 0)),
    badinput.WAIT_WITHOUT_SIGNAL: (lambda t: t.signal(0, 0, obj=5).wait(0, 1, obj=5, arg=2),
                                   1, (5, 2, 1)),
    badinput.BARRIER_COUNT: (lambda t: t.write(0, 0, addr=0, size=4).bar_sync(0, 0, obj=2, arg=0),
                             1, (2, 0)),
    badinput.EMPTY_WARP_MASK: (lambda t: t.write(0, 0, addr=0, size=4).warp_sync(0, 0, arg=0),
                               1, ()),
    badinput.MBARRIER_COUNT: (lambda t: t.mbar_init(0, 0, obj=0x100, arg=-2), 0, (0x100, -2)),
    badinput.WAIT_GROUP: (lambda t: t.cp_async_wait(0, 0, arg=-1), 0, (-1,)),
}


def errors(build) -> list[TraceError]:
    t = Trace()
    build(t)
    out = []
    for checker in (reference, engine):
        with pytest.raises(TraceError) as err:
            checker.check_trace(t.reader())
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
    assert (ref.rule, ref.row, ref.message) == (eng.rule, eng.row, eng.message) == \
        (rule.name, row, rule.message(*values))


def test_the_formatter_takes_the_engines_status_and_its_four_values():
    err = badinput.error(badinput.LAUNCH_ORDER.code, 3, 7, 0, 0, path="t.arrow", row=12)
    assert str(err) == ("t.arrow: row 12: launch-order: launch 3 after launch 7: launches "
                        "must not interleave")
    with pytest.raises(TypeError, match="needs"):
        badinput.error(badinput.BARRIER_COUNT, 1, path=None, row=0)


def test_the_rules_codes_are_distinct_and_not_the_kernels_other_statuses():
    """The replay kernel returns a rule's code as its status (``engine.layout.E_*``
    are the rules' codes); OK, NEED_GROW and NEW_LAUNCH must stay apart."""
    codes = [rule.code for rule in (badinput.BARRIER_ORDER, badinput.WAIT_WITHOUT_SIGNAL,
                                    badinput.BARRIER_COUNT, badinput.EMPTY_WARP_MASK,
                                    badinput.LAUNCH_ORDER, badinput.MBARRIER_COUNT,
                                    badinput.WAIT_GROUP)]
    assert len(set(codes)) == len(codes)
    assert not set(codes) & {layout.OK, layout.NEED_GROW, layout.NEW_LAUNCH}
