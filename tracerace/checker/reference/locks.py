"""Locks: a release leaves the releaser's clock on the lock, an acquire joins it
(the twin of ``engine/locks.py``).
"""

from __future__ import annotations

from .agents import AgentState
from .clocks import join


class Locks:
    """Lock release and acquire.

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def on_release(self, row: int, ev: dict, st: AgentState) -> None:
        join(self.locks[ev["obj"]], st.clock)

    def on_acquire(self, row: int, ev: dict, st: AgentState) -> None:
        join(st.clock, self.locks[ev["obj"]])
