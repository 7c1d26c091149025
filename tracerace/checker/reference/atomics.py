"""Atomics and fences: the releases an atomic reads (acquire side) and leaves
(release side), and what a fence adds to either (the twin of ``engine/atomics.py``).
"""

from __future__ import annotations

from ...trace import ops as O
from .. import reasons as R
from .agents import AgentState, reach
from .clocks import copy_clock, join


class Atomics:
    """Scoped atomics and fences.

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def atomic_key(self, ev: dict) -> tuple:
        return self.owner_key(ev, ev["space"], ev["launch"]) + (ev["addr"],)

    def atomic_acquire(self, ev: dict, st: AgentState) -> None:
        """The acquire side of an atomic: it reads every release on its address
        so far, and synchronizes with one when both are morally strong (each
        scope contains both agents): at once when it has acquire semantics,
        else through a later acquire fence that reaches too (``pending_acquire``).
        A release it reads but cannot synchronize with is remembered (``weak``)
        to explain the races that follow."""
        me = (ev["launch"], ev["block"], ev["thread"], st.cluster)
        acquires = ev["sem"] in (O.SEM_ACQUIRE, O.SEM_ACQ_REL)
        weak = None
        for (releaser, scope), (fields, clock) in self.atomic_releases.get(
            self.atomic_key(ev), {}
        ).items():
            if releaser == st.key:
                continue  # its own release: program order already has it
            need = reach(fields, me)
            if scope >= need and ev["scope"] >= need:
                if acquires:
                    join(st.clock, clock)
                    continue
                join(st.pending_acquire.setdefault(need, {}), clock)
                how = R.WEAK_RELAXED
            else:
                how = R.WEAK_SCOPE
            # The newest release read in vain (ties: the record made last).
            if weak is None or clock[releaser] >= weak[1]:
                weak = (releaser, clock[releaser], scope, ev["scope"], need, how, ev["addr"])
        if weak is not None:
            st.weak = weak

    def atomic_release(self, ev: dict, st: AgentState) -> None:
        """A release atomic releases the thread's clock at its own scope; a
        relaxed one after release fences releases, for each fence scope, the
        clock at the fence, at the narrower of the two scopes."""
        if ev["sem"] in (O.SEM_RELEASE, O.SEM_ACQ_REL):
            releases = [(ev["scope"], copy_clock(st.clock))]
        else:
            releases = [
                (min(scope, ev["scope"]), clock) for scope, clock in st.fence_release.items()
            ]
        fields = (ev["launch"], ev["block"], ev["thread"], st.cluster)
        records = self.atomic_releases[self.atomic_key(ev)]
        for scope, clock in releases:
            record = records.setdefault((st.key, scope), [fields, {}])
            join(record[1], clock)

    def on_fence(self, row: int, ev: dict, st: AgentState) -> None:
        sem, scope = ev["sem"], ev["scope"]
        if sem in (O.SEM_ACQUIRE, O.SEM_ACQ_REL):
            for need in [n for n in st.pending_acquire if n <= scope]:
                join(st.clock, st.pending_acquire.pop(need))
        if sem in (O.SEM_RELEASE, O.SEM_ACQ_REL):
            # This fence, at its scope and every narrower one, supersedes older
            # fences (thread scope orders nothing for others; system is device's
            # reach for every pair of agents).
            for s in range(O.SCOPE_WARP, min(scope, O.SCOPE_DEVICE) + 1):
                st.fence_release[s] = copy_clock(st.clock)
