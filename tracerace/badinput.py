"""The format's rules that only a replay can check, and their one-line messages.

The reader checks every rule a row breaks on its own (``tracerace.reader``);
these need the events before a row, so both checkers find them while
replaying, and ``tracerace validate`` replays the trace to find them too. Each
function returns ``(rule, message)`` for a :class:`~tracerace.errors.TraceError`
(the checker adds the file and the row), so both checkers word a rule alike.
"""

from __future__ import annotations

Rule = tuple[str, str]


def launch_order(launch: int, previous: int) -> Rule:
    return "launch-order", f"launch {launch} after launch {previous}: launches must not interleave"


def barrier_order(block: int, thread: int, obj: int, generation: int) -> Rule:
    return "barrier-order", (f"thread ({block},{thread}) has an event while its bar_sync on "
                             f"barrier {obj} generation {generation} has not completed")


def wait_without_signal(flag: int, need: int, pending: int) -> Rule:
    return "wait-without-signal", (f"wait on flag {flag} consumes {need} signal(s) but only "
                                   f"{pending} are pending")


def barrier_count(obj: int, count: int) -> Rule:
    return "barrier-count", f"barrier {obj} arrival names {count} participating threads"


def empty_warp_mask() -> Rule:
    return "barrier-count", "warp_sync with an empty lane mask"


def mbarrier_count(obj: int, count: int) -> Rule:
    return "mbarrier-count", f"mbar_init of {obj:#x} expects {count} arrivals; it must be > 0"


def wait_group(count: int) -> Rule:
    return "bad-value", f"wait_group {count}: the group count must be >= 0"
