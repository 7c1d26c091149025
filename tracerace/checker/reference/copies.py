"""The async copies a thread issues and waits for: cp.async and bulk (TMA) stores,
their commit groups and waits (the twin of ``engine/copies.py``).
"""

from __future__ import annotations

from ...trace import badinput
from ...trace import ops as O
from .. import reasons as R
from .agents import BULK, CP, AgentState, cp_group, cp_stamp
from .clocks import raise_entry


class Copies:
    """cp.async and bulk groups (rule 5).

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def on_cp_async(self, row: int, ev: dict, st: AgentState) -> None:
        st.cp_last_clock = self.copy(
            row,
            ev,
            st,
            st.key + (CP,),
            st.cp_open,
            proxy_async=False,
            copy_kind=R.INFLIGHT_CP_ASYNC,
            group=cp_group(st.cp_open),
        )

    def on_tma_store(self, row: int, ev: dict, st: AgentState) -> None:
        """A bulk store (a bulk_reduce: its destination write is a relaxed
        device-scope atomic)."""
        self.copy(
            row,
            ev,
            st,
            st.key + (BULK,),
            st.bulk_open,
            proxy_async=True,
            copy_kind=R.INFLIGHT_BULK_STORE,
            dst_scope=O.SCOPE_DEVICE if ev["op"] == O.BULK_REDUCE else None,
        )

    def on_cp_commit(self, row: int, ev: dict, st: AgentState) -> None:
        group = cp_group(st.cp_open)
        if group >= self.cp_group_max:
            raise self.error(
                row, badinput.CP_GROUP_OVERFLOW, ev["block"], ev["thread"], self.cp_group_max
            )
        st.cp_open = (group + 1) << badinput.CP_ARRIVE_BITS

    def on_bulk_commit(self, row: int, ev: dict, st: AgentState) -> None:
        st.bulk_open += 1

    def on_cp_wait(self, row: int, ev: dict, st: AgentState) -> None:
        """Every group but the newest ``arg`` is complete: its copies happen
        before what follows, and those no wait retired before are retired here."""
        pending = ev["arg"]
        if pending < 0:
            raise self.error(row, badinput.WAIT_GROUP, pending)
        agent = st.key + (CP,)
        upto = st.cp_retired
        group = cp_group(st.cp_open) - 1 - pending
        if group > 0:
            upto = max(upto, cp_stamp(group))
        raise_entry(st.clock, agent, upto)
        if upto > self.async_retired[agent]:
            st.cp_retire_log.append((upto, st.epoch, ev["site"], st.key, False))
            self.async_retired[agent] = upto
        st.cp_retired = upto

    def on_bulk_wait(self, row: int, ev: dict, st: AgentState) -> None:
        pending = ev["arg"]
        if pending < 0:
            raise self.error(row, badinput.WAIT_GROUP, pending)
        upto = max(st.bulk_retired, st.bulk_open - 1 - pending)
        agent = st.key + (BULK,)
        raise_entry(st.clock, agent, upto)
        self.async_retired[agent] = upto
        st.bulk_retired = upto
