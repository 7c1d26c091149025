"""Memory accesses and copies: each byte's history is checked against an access,
then the access is recorded; ``init`` bytes and uninitialised reads (the twin of
``engine/memory.py``, ``engine/granules.py`` and ``engine/pages.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...trace import ops as O
from .agents import AgentState
from .clocks import Clock, copy_clock


@dataclass
class Access:
    """One access in the history: a read, a write (atomics and copy writes included)."""

    row: int
    agent: tuple
    epoch: int
    launch: int
    block: int
    thread: int
    cluster: int
    op: int
    ts: int
    site: int
    addr: int
    size: int
    is_write: bool
    is_atomic: bool
    scope: int
    is_async_agent: bool
    proxy_async: bool
    bar: tuple  # (bar_obj, bar_gen) of the issuing thread at the access
    copy_kind: int = 0  # reasons.INFLIGHT_* when made by a copy agent
    copy_group: int = 0
    phase: tuple | None = None  # a tma_load's phase: (mbarrier key, init number, phase)
    mbar_obj: int = 0  # a tma_load's mbarrier address
    clock: Clock | None = None  # a write's clock at the write (for rule 7), else None


def fields_of(a: Access) -> tuple:
    return (a.launch, a.block, a.thread, a.cluster)


class Memory:
    """Accesses (``on_access``, ``on_init``) and both sides of a copy.

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def owner_key(self, ev: dict, space: int, launch: int, *, source: bool = False) -> tuple:
        """The memory a (space, address) names. A copy's source in shared memory is
        the issuing block's own; ``peer`` names the block of an access or destination."""
        if space == O.SPACE_GLOBAL:
            return (O.SPACE_GLOBAL,)
        if space == O.SPACE_SHARED:
            return (O.SPACE_SHARED, launch, ev["block"] if source else ev["peer"])
        return (O.SPACE_LOCAL, launch, ev["block"], ev["thread"])

    @staticmethod
    def owner_field(ev: dict, space: int, *, source: bool = False) -> int:
        if space == O.SPACE_SHARED:
            return ev["block"] if source else ev["peer"]
        return ev["thread"] if space == O.SPACE_LOCAL else 0

    def make_access(
        self,
        row,
        ev,
        st,
        agent,
        epoch,
        addr,
        size,
        *,
        is_write,
        is_atomic=False,
        proxy_async=False,
        copy_kind=0,
        copy_group=0,
    ) -> Access:
        return Access(
            row=row,
            agent=agent,
            epoch=epoch,
            launch=ev["launch"],
            block=ev["block"],
            thread=ev["thread"],
            cluster=st.cluster,
            op=ev["op"],
            ts=ev["ts"],
            site=ev["site"],
            addr=addr,
            size=size,
            is_write=is_write,
            is_atomic=is_atomic,
            scope=ev["scope"],
            is_async_agent=agent is not st.key,
            proxy_async=proxy_async,
            bar=st.bar,
            copy_kind=copy_kind,
            copy_group=copy_group,
        )

    def access(
        self,
        row: int,
        ev: dict,
        st: AgentState,
        acc: Access,
        clock: Clock,
        space: int,
        found: dict,
        *,
        source: bool = False,
    ) -> None:
        """Check one access against the history, then record it.

        ``found`` maps hazard kind to the best candidate so far for this row:
        (prev row, prev is write, this is write, prev access, this access).
        """
        launch = ev["launch"]
        okey = self.owner_key(ev, space, launch, source=source)
        uninit_lo = uninit_hi = None
        reads = not acc.is_write or acc.is_atomic
        if acc.is_write:
            acc.clock = copy_clock(clock)
        for b in range(acc.addr, acc.addr + acc.size):
            key = okey + (b,)
            if reads and key not in self.initialized:
                uninit_lo = b if uninit_lo is None else uninit_lo
                uninit_hi = b
            hist = self.history.get(key, ())
            for x in hist:
                if not (x.is_write or acc.is_write):
                    continue  # two reads never race
                kind = self.race_kind(x, acc, launch, clock, space)
                if kind >= 0:
                    self.offer(found, kind, x, acc)
            if acc.proxy_async:
                for w in self.writes_seen(hist, launch, clock, space):
                    if not w.proxy_async and not self.proxy_fenced(w, clock, space):
                        self.offer(found, O.K_PROXY_FENCE, w, acc)
        if uninit_lo is not None:
            cur = found.get(O.K_UNINIT_READ)
            if cur is None:
                found[O.K_UNINIT_READ] = (
                    -1,
                    False,
                    False,
                    None,
                    acc,
                    space,
                    self.owner_field(ev, space, source=source),
                    uninit_lo,
                    uninit_hi - uninit_lo + 1,
                )
        for b in range(acc.addr, acc.addr + acc.size):
            key = okey + (b,)
            self.history[key].append(acc)
            if acc.is_write:
                self.initialized.add(key)

    def writes_seen(self, hist: list, launch: int, clock: Clock, space: int) -> list:
        """The writes of this launch in one byte's history ``hist`` that an
        access made with ``clock`` may see (rule 7): those that happen before
        it and that no later performed write follows in happens-before. A
        copy's write is performed once its group (a tma_load: its phase) is
        retired; before that it hides nothing. (A write of an earlier launch
        is never checked, and never follows one of this launch.)"""
        done = [
            x
            for x in hist
            if x.is_write and x.launch == launch and not (x.is_async_agent and self.in_flight(x))
        ]
        return [
            w
            for i, w in enumerate(done)
            if self.hb(w, launch, clock, space)
            and not any(self.hb(w, launch, v.clock, space) for v in done[i + 1 :])
        ]

    def copy(
        self,
        row: int,
        ev: dict,
        st: AgentState,
        agent: tuple,
        epoch: int,
        *,
        proxy_async: bool,
        copy_kind: int,
        phase: tuple | None = None,
        group: int | None = None,
        dst_scope: int | None = None,
    ) -> Clock:
        """Check and record a copy's source read and destination write, made by
        ``agent`` with its issuer's clock (no entry for the copy agent itself).
        ``group``: the copy's group when it is not ``epoch`` (a cp.async
        copy's stamp); ``dst_scope``: the destination write is a relaxed
        atomic of that scope (a bulk reduction)."""
        clock = copy_clock(st.clock)
        size = ev["size"]
        group = epoch if group is None else group
        src = self.make_access(
            row,
            ev,
            st,
            agent,
            epoch,
            ev["addr2"],
            size,
            is_write=False,
            proxy_async=proxy_async,
            copy_kind=copy_kind,
            copy_group=group,
        )
        dst = self.make_access(
            row,
            ev,
            st,
            agent,
            epoch,
            ev["addr"],
            size,
            is_write=True,
            is_atomic=dst_scope is not None,
            proxy_async=proxy_async,
            copy_kind=copy_kind,
            copy_group=group,
        )
        if dst_scope is not None:
            dst.scope = dst_scope
        src.phase = dst.phase = phase
        src.mbar_obj = dst.mbar_obj = ev["obj"]
        found: dict = {}
        self.access(row, ev, st, src, clock, ev["space2"], found, source=True)
        self.access(row, ev, st, dst, clock, ev["space"], found)
        self.emit_found(
            row,
            ev,
            found,
            {
                id(src): (ev["space2"], self.owner_field(ev, ev["space2"], source=True)),
                id(dst): (ev["space"], self.owner_field(ev, ev["space"])),
            },
            st,
        )
        return clock

    def on_access(self, row: int, ev: dict, st: AgentState) -> None:
        op = ev["op"]
        space = ev["space"]
        acc = self.make_access(
            row,
            ev,
            st,
            st.key,
            st.epoch,
            ev["addr"],
            ev["size"],
            is_write=op != O.READ,
            is_atomic=op == O.ATOMIC,
            proxy_async=ev["proxy"] == 1,
        )
        if op == O.ATOMIC:
            self.atomic_acquire(ev, st)
        found: dict = {}
        self.access(row, ev, st, acc, st.clock, space, found)
        self.emit_found(row, ev, found, {id(acc): (space, self.owner_field(ev, space))}, st)
        if op == O.ATOMIC:
            self.atomic_release(ev, st)

    def on_init(self, row: int, ev: dict, st: AgentState) -> None:
        okey = self.owner_key(ev, ev["space"], ev["launch"])
        for b in range(ev["addr"], ev["addr"] + ev["size"]):
            self.initialized.add(okey + (b,))
