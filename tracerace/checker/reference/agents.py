"""Agents: a thread's state (clock, epoch, barrier, fences, atomics, copy groups),
its async copy agents, and ``reach``, the narrowest scope containing two agents
(the twin of ``engine/agents.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...trace import ops as O
from ...trace.badinput import CP_ARRIVE_BITS
from .clocks import Clock

THREAD, CP, BULK, TMA = 0, 1, 2, 3


@dataclass
class AgentState:
    key: tuple
    clock: Clock
    epoch: int = 0
    cluster: int = 0
    blocked_on: tuple | None = None  # (barrier key, generation) of a pending bar_sync
    bar: tuple = (-1, -1)
    bar_fences: int = 7  # fence_spaces of its arrival at that generation
    # Release fences: scope -> the clock at the latest release fence of that
    # scope or wider (an earlier fence, or a narrower one, releases less).
    fence_release: dict = field(default_factory=dict)
    # Releases read by relaxed atomics, waiting for an acquire fence: reach ->
    # clock. A fence of scope s takes those of reach <= s.
    pending_acquire: dict = field(default_factory=dict)
    # The last release this thread's atomics read without synchronizing:
    # (releaser key, releaser epoch, release scope, acquire scope, reach, how, address).
    weak: tuple | None = None
    fences: list = field(default_factory=list)  # epochs of fence_proxy_async
    # The stamp of its next cp.async copy, the epoch its cp.async agent gives
    # it: (group << CP_ARRIVE_BITS) | its cp_async_mbar_arrive rows in the
    # group so far, so the copies an mbarrier tracks are told apart from
    # later ones of the same group (``cp_stamp``, ``cp_group``).
    cp_open: int = 1 << CP_ARRIVE_BITS
    cp_retired: int = 0  # the stamp its own cp_async_waits retired up to
    # Waits that retired its cp.async copies, in replay order: (stamp
    # retired up to, the waiter's epoch, site, the waiter, an mbar_wait):
    # its own cp_async_waits, and the first mbar_wait on a phase that
    # tracked them.
    cp_retire_log: list = field(default_factory=list)
    cp_last_clock: Clock | None = None  # its clock at its latest cp_async
    bulk_open: int = 1
    bulk_retired: int = 0
    tma_count: dict = field(default_factory=dict)  # mbarrier key -> loads issued
    # Its cluster-barrier arrival not yet waited for: the generation's key and
    # number while it is open, and the clock it completed with once it is.
    cluster_pending: tuple | None = None
    cluster_done: Clock | None = None


def cp_group(stamp: int) -> int:
    """The cp.async group of a copy's stamp."""
    return stamp >> CP_ARRIVE_BITS


def cp_stamp(group: int) -> int:
    """The last stamp of cp.async ``group`` (a wait that retires the group
    retires every copy of it)."""
    return ((group + 1) << CP_ARRIVE_BITS) - 1


def reach(x: tuple, y: tuple) -> int:
    """The narrowest scope containing agents ``x`` and ``y``, each given as
    (launch, block, thread, cluster). A block lies in its own cluster."""
    lx, bx, tx, cx = x
    ly, by, ty, cy = y
    if lx != ly:
        return O.SCOPE_DEVICE
    if bx == by:
        if tx == ty:
            return O.SCOPE_THREAD
        return O.SCOPE_WARP if tx // 32 == ty // 32 else O.SCOPE_BLOCK
    return O.SCOPE_CLUSTER if cx == cy else O.SCOPE_DEVICE


class Agents:
    """The thread agent of an event, made at its first event.

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def agent(self, launch: int, block: int, thread: int, cluster: int) -> AgentState:
        key = (launch, block, thread, THREAD)
        st = self.agents.get(key)
        if st is None:
            st = AgentState(key=key, clock={}, cluster=cluster)
            self.agents[key] = st
        return st
