"""The async copies a thread issues and waits for: cp.async and bulk (TMA) stores,
their commit groups and waits (the twin of ``engine/copies.py``).
"""

from __future__ import annotations

from ...trace import badinput
from .. import reasons as R
from .agents import BULK, CP, AgentState
from .clocks import raise_entry


class Copies:
    """cp.async and bulk groups (rule 5).

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def on_cp_async(self, row: int, ev: dict, st: AgentState) -> None:
        self.copy(
            row,
            ev,
            st,
            st.key + (CP,),
            st.cp_open,
            proxy_async=False,
            copy_kind=R.INFLIGHT_CP_ASYNC,
        )

    def on_tma_store(self, row: int, ev: dict, st: AgentState) -> None:
        self.copy(
            row,
            ev,
            st,
            st.key + (BULK,),
            st.bulk_open,
            proxy_async=True,
            copy_kind=R.INFLIGHT_BULK_STORE,
        )

    def on_cp_commit(self, row: int, ev: dict, st: AgentState) -> None:
        st.cp_open += 1

    def on_bulk_commit(self, row: int, ev: dict, st: AgentState) -> None:
        st.bulk_open += 1

    def retire(
        self, row: int, ev: dict, st: AgentState, lane: int, open_group: int, retired: int
    ) -> int:
        pending = ev["arg"]
        if pending < 0:
            raise self.error(row, badinput.WAIT_GROUP, pending)
        upto = max(retired, open_group - 1 - pending)
        agent = st.key + (lane,)
        raise_entry(st.clock, agent, upto)
        self.async_retired[agent] = upto
        return upto

    def on_cp_wait(self, row: int, ev: dict, st: AgentState) -> None:
        upto = self.retire(row, ev, st, CP, st.cp_open, st.cp_retired)
        if upto > st.cp_retired:
            st.cp_retire_log.append((upto, st.epoch, ev["site"]))
        st.cp_retired = upto

    def on_bulk_wait(self, row: int, ev: dict, st: AgentState) -> None:
        st.bulk_retired = self.retire(row, ev, st, BULK, st.bulk_open, st.bulk_retired)
