"""Flags: signals queued per flag, waits that consume them in FIFO order, and two
protocols on one flag (``sync_alias``) (the twin of ``engine/signals.py``).
"""

from __future__ import annotations

from ...trace import badinput
from ...trace import ops as O
from .. import reasons as R
from .agents import AgentState
from .clocks import copy_clock, join


class Signals:
    """Signals and waits on flags.

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def on_signal(self, row: int, ev: dict, st: AgentState) -> None:
        count = ev["arg"] if ev["arg"] > 0 else 1
        pending = self.pending_signals[ev["obj"]]
        if pending + count > badinput.COUNT_MAX:
            raise self.error(row, badinput.SIGNAL_OVERFLOW, ev["obj"], pending, count)
        self.pending_signals[ev["obj"]] = pending + count
        self.flags[ev["obj"]].append([count, copy_clock(st.clock), row, ev, st.key, st.epoch])

    def on_wait(self, row: int, ev: dict, st: AgentState) -> None:
        obj = ev["obj"]
        need = ev["arg"] if ev["arg"] > 0 else 1
        queue = self.flags[obj]
        available = self.pending_signals[obj]
        if available < need:
            raise self.error(row, badinput.WAIT_WITHOUT_SIGNAL, obj, need, available)
        self.pending_signals[obj] = available - need
        consumed = []
        while need:
            entry = queue[0]
            take = min(need, entry[0])
            join(st.clock, entry[1])
            if not consumed or consumed[-1] is not entry:
                consumed.append(entry)
            entry[0] -= take
            need -= take
            if entry[0] == 0:
                queue.popleft()
        self.sync_alias(row, ev, st, obj, consumed)

    def sync_alias(self, row: int, ev: dict, st: AgentState, obj: int, consumed: list) -> None:
        """Two protocols on one flag (rule: sync_alias).

        FIFO pairing gives (signal site, wait site) pairs. Error: this wait's
        site has been fed by two signal sites, one of which also fed another
        wait site. Warning: an earlier pairing (s1, w1) of this launch with
        other sites, where neither w1 nor s1 happens before this wait's
        signal s2, so another schedule could hand s1 to this wait (all three
        in this wait's launch: launch order rules out any other swap).
        """
        wsite = ev["site"]
        pairs = self.pairs.setdefault(obj, [])
        edges = self.alias_edges.setdefault(obj, set())
        warn = None
        for entry in consumed:
            _, s_clock, s_row, s_ev, s_agent, s_epoch = entry
            if s_ev["launch"] != ev["launch"]:
                continue  # launch order: a signal of an earlier launch cannot be swapped
            for p in pairs:
                if (
                    p["launch"] != ev["launch"]
                    or p["s_ev"]["launch"] != ev["launch"]
                    or p["s_site"] == s_ev["site"]
                    or p["w_site"] == wsite
                ):
                    continue
                w1_before_s2 = s_clock.get(p["w_agent"], 0) >= p["w_epoch"]
                s1_before_s2 = s_clock.get(p["s_agent"], 0) >= p["s_epoch"]
                if (
                    not w1_before_s2
                    and not s1_before_s2
                    and (warn is None or p["s_row"] > warn["s_row"])
                ):
                    warn = p
        for entry in consumed:
            _, s_clock, s_row, s_ev, s_agent, s_epoch = entry
            pairs.append(
                {
                    "launch": ev["launch"],
                    "s_row": s_row,
                    "s_ev": s_ev,
                    "s_site": s_ev["site"],
                    "s_agent": s_agent,
                    "s_epoch": s_epoch,
                    "w_site": wsite,
                    "w_agent": st.key,
                    "w_epoch": st.epoch,
                }
            )
            edges.add((s_ev["site"], wsite))
        fed = {sa for (sa, w) in edges if w == wsite}
        foreign = {sa for sa in fed if any(w != wsite for (s2, w) in edges if s2 == sa)}
        if len(fed) >= 2 and foreign:
            pick = [e for e in consumed if e[3]["site"] in foreign] or consumed
            entry = max(pick, key=lambda e: e[2])
            self.emit(
                O.K_SYNC_ALIAS,
                row,
                ev,
                prev_row=entry[2],
                prev_ev=entry[3],
                obj=obj,
                code=R.ALIAS_CROSSED,
                bar=st.bar,
            )
        elif warn is not None:
            self.emit(
                O.K_SYNC_ALIAS,
                row,
                ev,
                prev_row=warn["s_row"],
                prev_ev=warn["s_ev"],
                obj=obj,
                code=R.ALIAS_MAY_CROSS,
                severity=O.Severity.WARNING,
                bar=st.bar,
            )
