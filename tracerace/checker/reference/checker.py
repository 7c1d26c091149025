"""The reference checker: the state of one replay and its dispatch, each op to its
``on_*`` handler (the twin of ``engine/replay.py`` and ``engine/check.py``).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable

import numpy as np

from ...errors import TraceError
from ...trace import badinput
from ...trace import ops as O
from ..findings import CheckResult, empty_findings
from .agents import Agents, AgentState
from .async_copies import AsyncCopies
from .atomics import Atomics
from .barriers import Barriers, Generation
from .clocks import Clock
from .clusters import CLUSTER, Clusters
from .copies import Copies
from .locks import Locks
from .mbarriers import MBarrier, MBarriers
from .memory import Access, Memory
from .races import Races
from .signals import Signals


class ReferenceChecker(
    Agents,
    Memory,
    Races,
    AsyncCopies,
    Atomics,
    Copies,
    MBarriers,
    Locks,
    Signals,
    Barriers,
    Clusters,
):
    """One replay: the state of every concern, and ``step``, which hands each event
    to its op's handler (``HANDLERS``); the rules are the mixins' methods."""

    def __init__(
        self,
        path: str | None = None,
        cp_limits: tuple[int, int] | None = None,
        bar_gens: int | None = None,
    ) -> None:
        """``cp_limits``: the most cp.async groups a thread commits in a launch
        and cp_async_mbar_arrive rows with copies in one group (rule
        ``count-overflow``; tests make them small), else what a stamp holds;
        ``bar_gens``: the most generations of one barrier that complete in a
        launch (the same rule; tests make it small), else what the engine's
        barrier positions hold."""
        self.path = path
        self.cp_group_max, self.cp_arrives_max = badinput.cp_limits(cp_limits)
        self.bar_gens_max = badinput.bar_gens_limit(bar_gens)
        self.launch = -1
        self.agents: dict[tuple, AgentState] = {}
        self.history: dict[tuple, list[Access]] = defaultdict(list)
        self.initialized: set[tuple] = set()
        self.generations: dict[tuple, Generation] = {}
        self.gen_count: dict[tuple, int] = defaultdict(int)
        self.locks: dict[int, Clock] = defaultdict(dict)
        self.flags: dict[int, deque] = defaultdict(deque)
        self.pending_signals: dict[int, int] = defaultdict(int)  # the counts in flags[obj]
        # address -> {(releaser key, scope): [fields, clock]}, in creation order
        self.atomic_releases: dict[tuple, dict] = defaultdict(dict)
        self.mbarriers: dict[tuple, MBarrier] = defaultdict(MBarrier)
        self.async_retired: dict[tuple, int] = defaultdict(int)
        # phases some mbar_wait returned on -> (waiter, its epoch, site) of the first
        self.waited_phases: dict[tuple, tuple] = {}
        # completed phases -> the cp.async copies they tracked, until their first wait
        self.cp_tracked: dict[tuple, list] = {}
        self.pairs: dict[int, list] = {}
        self.alias_edges: dict[int, set] = {}
        self.findings: list[dict] = []
        self.events = 0

    # -- helpers ---------------------------------------------------------
    def error(self, row: int, rule: badinput.Rule, *values: int) -> TraceError:
        """A trace that breaks a replay rule at ``row``, worded as the engine words it."""
        return badinput.error(rule, *values, path=self.path, row=row)

    # -- the replay ------------------------------------------------------
    def run(
        self,
        batches: Iterable,
        progress: Callable[[int], None] | None = None,
        on_findings: Callable[[np.ndarray], None] | None = None,
    ) -> CheckResult:
        """Replay ``batches``; ``on_findings`` (when given) takes the findings
        after each batch, and the result then holds none."""
        for batch in batches:
            cols = batch.cols
            names = list(cols)
            lists = {n: cols[n].tolist() for n in names}
            for i in range(batch.n):
                ev = {n: lists[n][i] for n in names}
                self.step(batch.row0 + i, ev)
            self.events += batch.n
            if on_findings is not None:
                on_findings(self.take_findings())
            if progress is not None:
                progress(self.events)
        self.finish_launch()
        if on_findings is not None:
            on_findings(self.take_findings())
        return CheckResult(self.events, self.take_findings())

    def take_findings(self) -> np.ndarray:
        """The findings so far as ``FINDING_DTYPE`` records; the list is emptied."""
        out = empty_findings(len(self.findings))
        for i, f in enumerate(self.findings):
            for k, v in f.items():
                out[k][i] = v
        self.findings = []
        return out

    def step(self, row: int, ev: dict) -> None:
        op, launch = ev["op"], ev["launch"]
        if launch != self.launch:
            if launch < self.launch:
                raise self.error(row, badinput.LAUNCH_ORDER, launch, self.launch)
            self.finish_launch()
            self.launch = launch
        st = self.agent(launch, ev["block"], ev["thread"], ev["cluster"])
        if st.blocked_on is not None:
            bkey, gen = st.blocked_on
            rule = badinput.CLUSTER_ORDER if bkey[2] == CLUSTER else badinput.BARRIER_ORDER
            raise self.error(row, rule, ev["block"], ev["thread"], bkey[-1], gen)
        st.epoch += 1
        st.clock[st.key] = st.epoch  # (no shared entry of its own: it differs from no one's)
        handler = HANDLERS.get(op)
        if handler is not None:
            handler(self, row, ev, st)


HANDLERS: dict[int, Callable] = {
    O.READ: ReferenceChecker.on_access,
    O.WRITE: ReferenceChecker.on_access,
    O.ATOMIC: ReferenceChecker.on_access,
    O.INIT: ReferenceChecker.on_init,
    O.BAR_SYNC: ReferenceChecker.on_barrier,
    O.BAR_ARRIVE: ReferenceChecker.on_barrier,
    O.WARP_SYNC: ReferenceChecker.on_barrier,
    O.FENCE: ReferenceChecker.on_fence,
    O.FENCE_PROXY_ASYNC: ReferenceChecker.on_fence_proxy,
    O.CP_ASYNC: ReferenceChecker.on_cp_async,
    O.CP_ASYNC_COMMIT: ReferenceChecker.on_cp_commit,
    O.CP_ASYNC_WAIT: ReferenceChecker.on_cp_wait,
    O.TMA_LOAD: ReferenceChecker.on_tma_load,
    O.BULK_COPY_PEER: ReferenceChecker.on_tma_load,  # its shared source: the row's space2
    O.ST_ASYNC: ReferenceChecker.on_st_async,
    O.RED_ASYNC: ReferenceChecker.on_st_async,
    O.BULK_REDUCE_PEER: ReferenceChecker.on_tma_load,  # its destination: an atomic
    O.TMA_STORE: ReferenceChecker.on_tma_store,
    O.BULK_REDUCE: ReferenceChecker.on_tma_store,  # its destination: an atomic
    O.BULK_COMMIT: ReferenceChecker.on_bulk_commit,
    O.BULK_WAIT: ReferenceChecker.on_bulk_wait,
    O.MBAR_INIT: ReferenceChecker.on_mbar_init,
    O.MBAR_ARRIVE: ReferenceChecker.on_mbar_arrive,
    O.MBAR_EXPECT_TX: ReferenceChecker.on_mbar_expect_tx,
    O.MBAR_WAIT: ReferenceChecker.on_mbar_wait,
    O.MBAR_INVAL: ReferenceChecker.on_mbar_inval,
    O.MBAR_ARRIVE_DROP: ReferenceChecker.on_mbar_arrive_drop,
    O.CP_ASYNC_MBAR_ARRIVE: ReferenceChecker.on_cp_async_mbar_arrive,
    O.CP_ASYNC_MBAR_ARRIVE_NOINC: ReferenceChecker.on_cp_async_mbar_arrive,
    O.CLUSTER_ARRIVE: ReferenceChecker.on_cluster_arrive,
    O.CLUSTER_ARRIVE_RELAXED: ReferenceChecker.on_cluster_arrive,
    O.CLUSTER_WAIT: ReferenceChecker.on_cluster_wait,
    O.RELEASE: ReferenceChecker.on_release,
    O.ACQUIRE: ReferenceChecker.on_acquire,
    O.SIGNAL: ReferenceChecker.on_signal,
    O.WAIT: ReferenceChecker.on_wait,
}


def check_trace(
    reader,
    *,
    progress: Callable[[int], None] | None = None,
    on_findings: Callable[[np.ndarray], None] | None = None,
    cp_limits: tuple[int, int] | None = None,
    bar_gens: int | None = None,
) -> CheckResult:
    """Replay ``reader`` (a TraceReader) through the reference checker
    (``on_findings``: see :meth:`ReferenceChecker.run`; ``cp_limits``,
    ``bar_gens``: see :class:`ReferenceChecker`)."""
    checker = ReferenceChecker(path=reader.meta.path, cp_limits=cp_limits, bar_gens=bar_gens)
    return checker.run(reader, progress, on_findings)
