"""The race check and the findings it makes: ``race_kind`` (whether two accesses race,
and how), ``hb`` (happens-before), ``offer`` (which earlier access a finding names),
``reason`` (what was missing), ``emit`` (the twin of ``engine/races.py``).
"""

from __future__ import annotations

from ...trace import ops as O
from ...trace.schema import SITE_NONE
from .. import reasons as R
from .agents import AgentState, reach
from .clocks import Clock, shared_epoch
from .memory import Access, fields_of

# What ``race_kind`` says when an earlier access does not race with this one
# (the engine's values: ``tests/test_twins.py``).
ORDERED = -1  # it happens before this access
ATOMIC_PAIR = -2  # both are atomics of a scope that reaches both agents


class Races:
    """Findings: races between two accesses, uninitialised reads, mbarrier misuse.

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def race_kind(self, x: Access, acc: Access, launch: int, clock: Clock, space: int) -> int:
        """Whether the earlier access ``x`` races with ``acc`` (made with ``clock``),
        asking what the engine's ``race_kind`` asks, in its order (ThreadSanitizer's
        ``CheckRaces`` is the model): an access that happens before ``acc`` is
        ``ORDERED``; two atomics whose scopes both reach both agents do not
        race (``ATOMIC_PAIR``) when both are bulk reductions (an async agent's
        atomic in the async proxy) or neither is (a red_async's write is no
        bulk reduction, and neither is a thread's atomic, whatever its
        ``proxy``); a copy's access not yet retired is ``async_inflight``;
        else ``war`` after a read, ``waw`` or ``raw`` after a write. The caller
        asks only where one of the two writes."""
        if self.hb(x, launch, clock, space):
            return ORDERED
        if (
            x.is_atomic
            and acc.is_atomic
            and (x.is_async_agent and x.proxy_async) == (acc.is_async_agent and acc.proxy_async)
            and min(x.scope, acc.scope) >= reach(fields_of(x), fields_of(acc))
        ):
            return ATOMIC_PAIR
        if x.is_async_agent and self.in_flight(x):
            return O.K_ASYNC_INFLIGHT
        if not x.is_write:
            return O.K_WAR
        return O.K_WAW if acc.is_write else O.K_RAW

    def hb(self, x: Access, launch: int, clock: Clock, space: int = O.SPACE_GLOBAL) -> bool:
        """``x`` happens before an access to ``space`` made with ``clock``."""
        if x.launch < launch:
            return True
        if space == O.SPACE_SHARED:
            return shared_epoch(clock, x.agent) >= x.epoch
        return clock.get(x.agent, 0) >= x.epoch

    def emit(
        self,
        kind: int,
        row: int,
        ev: dict,
        *,
        prev: Access | None = None,
        prev_row: int = -1,
        prev_ev: dict | None = None,
        severity: int = O.Severity.ERROR,
        space: int = 0,
        owner: int = 0,
        addr: int = 0,
        size: int = 0,
        obj: int = 0,
        code: int = 0,
        aux: int = 0,
        bar=(-1, -1),
    ) -> None:
        f = {
            "kind": kind,
            "severity": int(severity),
            "row": row,
            "launch": ev["launch"],
            "block": ev["block"],
            "thread": ev["thread"],
            "op": ev["op"],
            "ts": ev["ts"],
            "site": ev["site"],
            "space": space,
            "owner": owner,
            "addr": addr,
            "size": size,
            "obj": obj,
            "code": code,
            "aux": aux,
            "bar_obj": bar[0],
            "bar_gen": bar[1],
            "prev_row": -1,
            "prev_bar_obj": -1,
            "prev_bar_gen": -1,
            "prev_site": SITE_NONE,
        }
        if prev is not None:
            f.update(
                prev_row=prev.row,
                prev_launch=prev.launch,
                prev_block=prev.block,
                prev_thread=prev.thread,
                prev_op=prev.op,
                prev_ts=prev.ts,
                prev_site=prev.site,
                prev_async=int(prev.is_async_agent),
                prev_bar_obj=prev.bar[0],
                prev_bar_gen=prev.bar[1],
            )
        elif prev_ev is not None:
            f.update(
                prev_row=prev_row,
                prev_launch=prev_ev["launch"],
                prev_block=prev_ev["block"],
                prev_thread=prev_ev["thread"],
                prev_op=prev_ev["op"],
                prev_ts=prev_ev["ts"],
                prev_site=prev_ev["site"],
            )
        self.findings.append(f)

    @staticmethod
    def offer(found: dict, kind: int, prev: Access, acc: Access) -> None:
        rank = (prev.row, prev.is_write, acc.is_write)
        cur = found.get(kind)
        if cur is None or rank > cur[:3]:
            found[kind] = rank + (prev, acc)

    def emit_found(self, row: int, ev: dict, found: dict, space_of: dict, st: AgentState) -> None:
        for kind, cand in found.items():
            if kind == O.K_UNINIT_READ:
                _, _, _, _, acc, space, owner, lo, size = cand
                self.emit(kind, row, ev, space=space, owner=owner, addr=lo, size=size, bar=acc.bar)
                continue
            _, _, _, prev, acc = cand
            lo = max(prev.addr, acc.addr)
            hi = min(prev.addr + prev.size, acc.addr + acc.size)
            space, owner = space_of[id(acc)]
            code, aux, obj = self.reason(kind, prev, st, space)
            self.emit(
                kind,
                row,
                ev,
                prev=prev,
                space=space,
                owner=owner,
                addr=lo,
                size=hi - lo,
                obj=obj,
                code=code,
                aux=aux,
                bar=acc.bar,
            )

    def reason(self, kind: int, prev: Access, st: AgentState, space: int) -> tuple[int, int, int]:
        """(code, aux, obj) of a two-access finding: what was missing."""
        if kind == O.K_ASYNC_INFLIGHT:
            if prev.copy_kind == R.INFLIGHT_TMA_LOAD:
                return prev.copy_kind, prev.phase[2], prev.mbar_obj
            return prev.copy_kind, prev.copy_group, 0
        if kind == O.K_PROXY_FENCE:
            if prev.is_async_agent:
                return self.proxy_code(prev), self.retiring_wait(prev)[2], 0
            return R.PROXY_GENERIC_WRITE, 0, 0
        if kind not in (O.K_RAW, O.K_WAR, O.K_WAW) or prev.is_async_agent:
            return 0, 0, 0
        weak = st.weak
        if weak is not None and weak[0] == prev.agent and weak[1] >= prev.epoch:
            _, _, rel_scope, acq_scope, need, how, address = weak
            return R.RACE_WEAK_SYNC, R.weak_sync_aux(rel_scope, acq_scope, need, how), address
        # The earlier access came before the barrier generation this thread
        # passed last, and that barrier does not fence the memory.
        before = prev.bar[1] < 0 or (prev.bar[0] == st.bar[0] and prev.bar[1] < st.bar[1])
        if st.bar[1] >= 0 and before and not st.bar_fences & (1 << space):
            return R.RACE_UNFENCED_BARRIER, st.bar_fences, 0
        return 0, 0, 0

    def misuse(
        self,
        row: int,
        ev: dict,
        st: AgentState,
        code: int,
        *,
        prev_row: int = -1,
        prev_ev: dict | None = None,
    ) -> None:
        self.emit(
            O.K_MBARRIER_MISUSE,
            row,
            ev,
            prev_row=prev_row,
            prev_ev=prev_ev,
            space=O.SPACE_SHARED,
            owner=ev["peer"],
            addr=ev["obj"],
            size=8,
            obj=ev["obj"],
            code=code,
            bar=st.bar,
        )
