"""The format's rules that only a replay can check, and the one formatter of
their errors.

The reader checks every rule a row breaks on its own (``tracerace.trace.reader``);
these need the events before a row, so both checkers find them while
replaying, and ``tracerace validate`` replays the trace to find them too. A
checker that finds one calls :func:`error` with the :class:`Rule` and the
rule's values, so both checkers word every rule alike: the reference checker
passes the values by rule, the engine passes the status code its kernel
returned (:attr:`Rule.code`) and the values the kernel left in
``SV_ERR_A..D``, in the order of :attr:`Rule.fields`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TraceError


@dataclass(frozen=True)
class Rule:
    """A rule of the format that a replay checks."""

    code: int
    """The engine kernel's status for a trace that breaks it (0-2 are not errors)."""
    name: str
    """The rule as the error names it (``launch-order``)."""
    fields: tuple[str, ...]
    """The values the message reads, in the order a checker passes them."""
    text: str
    """The message: a format string over :attr:`fields`."""

    def message(self, *values: int) -> str:
        """The message for ``values`` (extra trailing values are ignored: the engine
        hands over all four it keeps). A sync object (:data:`OBJECT_FIELDS`) reads
        as the trace's unsigned 64-bit ``obj``, whichever checker passes it: the
        engine keeps it in a signed 64-bit word."""
        if len(values) < len(self.fields):
            raise TypeError(f"rule {self.name} needs {self.fields}, got {values}")
        named = {
            name: value & OBJ_MASK if name in OBJECT_FIELDS else value
            for name, value in zip(self.fields, values)
        }
        return self.text.format(**named)


OBJECT_FIELDS = frozenset({"obj", "flag"})
"""Fields that hold a value of the ``obj`` column (uint64)."""
OBJ_MASK = (1 << 64) - 1

COUNT_MAX = (1 << 63) - 1
"""The largest count the format holds: ``arg`` is an int64. A flag's pending
signals and an mbarrier phase's transaction count are sums of ``arg`` values;
a sum past the int64 range is bad input (``count-overflow``), never a wrapped
count."""
COUNT_MIN = -(1 << 63)


BARRIER_ORDER = Rule(
    10,
    "barrier-order",
    ("block", "thread", "obj", "generation"),
    "thread ({block},{thread}) has an event while its bar_sync on barrier {obj} "
    "generation {generation} has not completed",
)
WAIT_WITHOUT_SIGNAL = Rule(
    11,
    "wait-without-signal",
    ("flag", "need", "pending"),
    "wait on flag {flag} consumes {need} signal(s) but only {pending} are pending",
)
BARRIER_COUNT = Rule(
    12,
    "barrier-count",
    ("obj", "count"),
    "barrier {obj} arrival names {count} participating threads",
)
EMPTY_WARP_MASK = Rule(13, "barrier-count", (), "warp_sync with an empty lane mask")
LAUNCH_ORDER = Rule(
    14,
    "launch-order",
    ("launch", "previous"),
    "launch {launch} after launch {previous}: launches must not interleave",
)
MBARRIER_COUNT = Rule(
    15,
    "mbarrier-count",
    ("obj", "count"),
    "mbar_init of {obj:#x} expects {count} arrivals; it must be > 0",
)
WAIT_GROUP = Rule(16, "bad-value", ("count",), "wait_group {count}: the group count must be >= 0")
SIGNAL_OVERFLOW = Rule(
    17,
    "count-overflow",
    ("flag", "pending", "count"),
    "signal on flag {flag} adds {count} to {pending} pending signal(s): "
    "the sum passes 2^63-1, the largest count the format holds",
)
TX_OVERFLOW = Rule(
    18,
    "count-overflow",
    ("obj", "tx", "change"),
    "mbarrier {obj:#x}: transaction count {tx} changed by {change} leaves the "
    "signed 64-bit range the format holds",
)

# Cluster barriers (trace format section 9).
CLUSTER_ORDER = Rule(
    19,
    "barrier-order",
    ("block", "thread", "cluster", "generation"),
    "thread ({block},{thread}) has an event while its cluster_wait on the "
    "barrier of cluster {cluster} generation {generation} has not completed",
)
CLUSTER_COUNT = Rule(
    20,
    "barrier-count",
    ("cluster", "count"),
    "the barrier of cluster {cluster}: an arrival names {count} participating threads",
)
CLUSTER_ARRIVE_AGAIN = Rule(
    21,
    "cluster-wait",
    ("block", "thread", "cluster"),
    "thread ({block},{thread}) arrives at the barrier of cluster "
    "{cluster} again before a cluster_wait",
)
CLUSTER_WAIT_ALONE = Rule(
    22,
    "cluster-wait",
    ("block", "thread", "cluster"),
    "thread ({block},{thread}) has a cluster_wait on the barrier of "
    "cluster {cluster} without a cluster arrival since its last wait",
)

# cp.async copies tracked by an mbarrier (trace format section 9). The
# checkers tell a thread's copies apart by (group, the thread's
# cp_async_mbar_arrive rows in that group so far), packed in one int64
# (``CP_ARRIVE_BITS`` low bits for the rows): past either limit they would
# wrap, so a trace that goes there is refused.
CP_ARRIVE_BITS = 32
CP_GROUP_MAX = (1 << (63 - CP_ARRIVE_BITS)) - 1
"""The most cp.async groups one thread may have in a launch, the open one included."""
CP_ARRIVES_MAX = (1 << CP_ARRIVE_BITS) - 1
"""The most cp_async_mbar_arrive rows of one thread in one cp.async group."""
CP_GROUP_OVERFLOW = Rule(
    23,
    "count-overflow",
    ("block", "thread", "limit"),
    "thread ({block},{thread}) commits a cp.async group past the {limit} groups "
    "(the open one included) that tracerace counts for a thread in one launch",
)
CP_ARRIVE_OVERFLOW = Rule(
    24,
    "count-overflow",
    ("block", "thread", "limit"),
    "thread ({block},{thread}) has more than {limit} cp_async_mbar_arrive rows "
    "with copies in one cp.async group, the most tracerace counts",
)
BAR_GENS_OVERFLOW = Rule(
    25,
    "count-overflow",
    ("block", "obj", "limit"),
    "barrier {obj} of block {block} completes more than {limit} generations in one "
    "launch, the most tracerace counts",
)
# A thread's barrier position keeps a generation's number in 32 bits
# (engine layout, AG_BARPOS).
BAR_GENS_MAX = 1 << 32


def bar_gens_limit(limit: int | None) -> int:
    """The generations of one barrier a checker counts up to in a launch:
    ``limit``, which tests make small, or ``BAR_GENS_MAX``."""
    if limit is None:
        return BAR_GENS_MAX
    if not 1 <= limit <= BAR_GENS_MAX:
        raise ValueError(f"bar_gens {limit}: past what a barrier position holds")
    return limit


def cp_limits(limits: tuple[int, int] | None) -> tuple[int, int]:
    """The (groups, cp_async_mbar_arrive rows) a checker counts up to:
    ``limits``, which tests make small, or ``CP_GROUP_MAX``/``CP_ARRIVES_MAX``."""
    if limits is None:
        return CP_GROUP_MAX, CP_ARRIVES_MAX
    groups, arrives = limits
    if not (1 <= groups <= CP_GROUP_MAX and 0 <= arrives <= CP_ARRIVES_MAX):
        raise ValueError(f"cp_limits {limits}: past what a copy's stamp holds")
    return groups, arrives


RULES = {
    rule.code: rule
    for rule in (
        BARRIER_ORDER,
        WAIT_WITHOUT_SIGNAL,
        BARRIER_COUNT,
        EMPTY_WARP_MASK,
        LAUNCH_ORDER,
        MBARRIER_COUNT,
        WAIT_GROUP,
        SIGNAL_OVERFLOW,
        TX_OVERFLOW,
        CLUSTER_ORDER,
        CLUSTER_COUNT,
        CLUSTER_ARRIVE_AGAIN,
        CLUSTER_WAIT_ALONE,
        CP_GROUP_OVERFLOW,
        CP_ARRIVE_OVERFLOW,
        BAR_GENS_OVERFLOW,
    )
}
"""Every replay rule by its engine status code."""
assert len(RULES) == 16 and min(RULES) > 2, "codes are distinct and not the kernels' 0-2"


def error(rule: Rule | int, *values: int, path: str | None, row: int) -> TraceError:
    """The error of a trace that breaks ``rule`` (a :class:`Rule`, or its
    :attr:`~Rule.code`) at ``row``, worded from ``values``."""
    if not isinstance(rule, Rule):
        rule = RULES[int(rule)]
    return TraceError(rule.message(*values), path=path, row=row, rule=rule.name)
