"""mbarriers: phases, arrivals and transaction counts, TMA loads that complete bytes
on them, and what a completed phase gives its waiters (the twin of
``engine/mbarriers.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...trace import badinput
from ...trace import ops as O
from .. import reasons as R
from .agents import CP, TMA, AgentState
from .clocks import Clock, copy_clock, join, raise_entry


@dataclass
class MBarrier:
    expected: int = 0
    pending: int = 0
    tx: int = 0
    phase: int = 0
    valid: bool = False
    inits: int = 0  # mbar_inits so far: a phase is (mbarrier, init number, phase)
    clock: Clock = field(default_factory=dict)
    completed: dict = field(default_factory=dict)  # parity -> clock of the latest completed phase
    completed_phase: dict = field(default_factory=dict)  # parity -> that phase's key
    # cp.async copies that cp_async_mbar_arrive rows made arrive on the open
    # phase: (cp.async agent, the stamp they go up to).
    cp_tracked: list = field(default_factory=list)


class MBarriers:
    """mbarriers and TMA loads (rule 6).

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    @staticmethod
    def mbar_key(ev: dict) -> tuple:
        return (ev["launch"], ev["peer"], ev["obj"])

    def mbar(self, ev: dict) -> tuple[tuple, MBarrier]:
        key = self.mbar_key(ev)
        return key, self.mbarriers[key]

    def on_tma_load(self, row: int, ev: dict, st: AgentState) -> None:
        """A TMA load (a bulk_copy_peer: from shared memory; a bulk_reduce_peer:
        also a reduction, its destination a relaxed cluster-scope atomic)."""
        key, mb = self.mbar(ev)
        count = st.tma_count.get(key, 0) + 1
        st.tma_count[key] = count
        agent = st.key + (TMA, key)
        clock = self.copy(
            row,
            ev,
            st,
            agent,
            count,
            proxy_async=True,
            copy_kind=R.INFLIGHT_TMA_LOAD,
            phase=(key, mb.inits, mb.phase),
            dst_scope=O.SCOPE_CLUSTER if ev["op"] == O.BULK_REDUCE_PEER else None,
        )
        self.complete_bytes(row, ev, st, mb, agent, count, clock)

    def on_st_async(self, row: int, ev: dict, st: AgentState) -> None:
        """An st.async (a red.async: the write is a relaxed cluster-scope
        atomic): a generic-proxy write of ``peer``'s shared bytes by the
        thread's TMA agent of the mbarrier, which completes its bytes on the
        phase (no arrival) and is retired, as a tma_load is, by a wait on it."""
        key, mb = self.mbar(ev)
        count = st.tma_count.get(key, 0) + 1
        st.tma_count[key] = count
        agent = st.key + (TMA, key)
        clock = copy_clock(st.clock)
        dst = self.make_access(
            row,
            ev,
            st,
            agent,
            count,
            ev["addr"],
            ev["size"],
            is_write=True,
            is_atomic=ev["op"] == O.RED_ASYNC,
            copy_kind=R.INFLIGHT_TMA_LOAD,
            copy_group=count,
        )
        if dst.is_atomic:
            dst.scope = O.SCOPE_CLUSTER
        dst.phase = (key, mb.inits, mb.phase)
        dst.mbar_obj = ev["obj"]
        found: dict = {}
        self.access(row, ev, st, dst, clock, ev["space"], found)
        self.emit_found(
            row, ev, found, {id(dst): (ev["space"], self.owner_field(ev, ev["space"]))}, st
        )
        self.complete_bytes(row, ev, st, mb, agent, count, clock)

    def complete_bytes(
        self, row: int, ev: dict, st: AgentState, mb: MBarrier, agent: tuple, count: int, clock
    ) -> None:
        """The ``size`` bytes of a copy or store by ``agent`` (its ``count``-th)
        complete on the phase, which takes the issuer's ``clock`` and the copy."""
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        self.check_tx(row, ev, mb, -ev["size"])
        mb.tx -= ev["size"]
        join(mb.clock, clock)
        raise_entry(mb.clock, agent, count)
        self.complete_phase(row, ev, st, mb)

    def complete_phase(self, row: int, ev: dict, st: AgentState, mb: MBarrier) -> None:
        if mb.pending > 0 or mb.tx > 0:
            return
        if mb.tx < 0:
            self.misuse(row, ev, st, R.MBAR_TX_UNDERFLOW)
        mb.completed[mb.phase % 2] = mb.clock
        phase = (self.mbar_key(ev), mb.inits, mb.phase)
        mb.completed_phase[mb.phase % 2] = phase
        if mb.cp_tracked:
            self.cp_tracked[phase] = mb.cp_tracked
            mb.cp_tracked = []
        mb.phase += 1
        mb.pending = mb.expected
        mb.tx = 0
        mb.clock = {}

    def on_mbar_init(self, row: int, ev: dict, st: AgentState) -> None:
        key, mb = self.mbar(ev)
        if ev["arg"] <= 0:
            raise self.error(row, badinput.MBARRIER_COUNT, ev["obj"], ev["arg"])
        if mb.valid:
            self.misuse(row, ev, st, R.MBAR_REINIT, prev_row=mb.init_row, prev_ev=mb.init_ev)
        self.mbarriers[key] = mb = MBarrier(
            expected=ev["arg"], pending=ev["arg"], valid=True, inits=mb.inits + 1
        )
        mb.init_row, mb.init_ev = row, ev

    def on_mbar_arrive(self, row: int, ev: dict, st: AgentState) -> None:
        _, mb = self.mbar(ev)
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        self.arrive(row, ev, st, mb, ev["arg"] if ev["arg"] > 0 else 1)

    def arrive(self, row: int, ev: dict, st: AgentState, mb: MBarrier, count: int) -> None:
        """``count`` arrivals with release semantics; more than are pending is a misuse."""
        if count > mb.pending:
            self.misuse(row, ev, st, R.MBAR_ARRIVAL_UNDERFLOW)
            count = mb.pending
        mb.pending -= count
        join(mb.clock, st.clock)
        self.complete_phase(row, ev, st, mb)

    def on_mbar_arrive_drop(self, row: int, ev: dict, st: AgentState) -> None:
        """Lower the expected arrivals of later phases, then arrive: dropping
        below zero is a misuse (the count stays at zero)."""
        _, mb = self.mbar(ev)
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        count = ev["arg"] if ev["arg"] > 0 else 1
        if count > mb.expected:
            # One misuse per row: the pending count is never above the
            # expected one, so the arrival takes what is pending, unreported.
            self.misuse(row, ev, st, R.MBAR_DROP_UNDERFLOW)
            mb.expected = 0
            count = mb.pending
        else:
            mb.expected -= count
        self.arrive(row, ev, st, mb, count)

    def on_mbar_expect_tx(self, row: int, ev: dict, st: AgentState) -> None:
        _, mb = self.mbar(ev)
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        self.check_tx(row, ev, mb, ev["arg"])
        mb.tx += ev["arg"]
        self.complete_phase(row, ev, st, mb)

    def check_tx(self, row: int, ev: dict, mb: MBarrier, change: int) -> None:
        """A transaction count stays a signed 64-bit number (rule ``count-overflow``)."""
        if not badinput.COUNT_MIN <= mb.tx + change <= badinput.COUNT_MAX:
            raise self.error(row, badinput.TX_OVERFLOW, ev["obj"], mb.tx, change)

    def on_mbar_wait(self, row: int, ev: dict, st: AgentState) -> None:
        _, mb = self.mbar(ev)
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        done = mb.completed.get(ev["arg"] & 1)
        if done is None:
            self.misuse(row, ev, st, R.MBAR_PHASE_NEVER_COMPLETED)
            return
        join(st.clock, done)
        # The first wait retires the phase's tma_loads and st_async stores,
        # and the cp.async copies it tracked that no wait retired before.
        phase = mb.completed_phase[ev["arg"] & 1]
        if phase in self.waited_phases:
            return
        self.waited_phases[phase] = (st.key, st.epoch, ev["site"])
        for agent, stamp in self.cp_tracked.pop(phase, ()):
            if self.async_retired[agent] < stamp:
                self.async_retired[agent] = stamp
                log = self.agents[agent[:4]].cp_retire_log
                log.append((stamp, st.epoch, ev["site"], st.key, True))

    def on_cp_async_mbar_arrive(self, row: int, ev: dict, st: AgentState) -> None:
        """cp.async.mbarrier.arrive(.noinc): the thread's cp.async copies so far
        arrive on the open phase. The arrival gives the phase the thread's
        clock at its latest copy (not at this row) and the copies, and
        retires them at the first wait on the phase. Without ``.noinc`` it
        adds the pending arrival it makes (the count does not change); with
        it, it is one of the arrivals the phase expects."""
        key, mb = self.mbar(ev)
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        if st.cp_last_clock is not None:
            if st.cp_open & badinput.CP_ARRIVES_MAX >= self.cp_arrives_max:
                raise self.error(
                    row,
                    badinput.CP_ARRIVE_OVERFLOW,
                    ev["block"],
                    ev["thread"],
                    self.cp_arrives_max,
                )
            agent = st.key + (CP,)
            join(mb.clock, st.cp_last_clock)
            raise_entry(mb.clock, agent, st.cp_open)
            mb.cp_tracked.append((agent, st.cp_open))
            st.cp_open += 1  # later copies of the group are not tracked
        if ev["op"] == O.CP_ASYNC_MBAR_ARRIVE_NOINC:
            if mb.pending < 1:
                self.misuse(row, ev, st, R.MBAR_ARRIVAL_UNDERFLOW)
            else:
                mb.pending -= 1
        self.complete_phase(row, ev, st, mb)

    def on_mbar_inval(self, row: int, ev: dict, st: AgentState) -> None:
        _, mb = self.mbar(ev)
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        mb.valid = False
