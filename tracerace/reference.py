"""The reference checker: the definition of tracerace's semantics.

Plain Python, one event at a time, with explicit vector clocks (dicts) and the
full per-byte access history: nothing is pruned, nothing is clever. The Numba
engine (``tracerace.engine``) must produce exactly the same findings on every
trace; ``docs/semantics.md`` states the rules in prose.

Vocabulary (ThreadSanitizer's): an *agent* is a (launch, block, thread) triple
or one of its asynchronous copy agents; each agent counts its events in an
*epoch*; a *clock* maps agents to the epoch of theirs known to happen before;
``x`` happens before ``e`` when ``clock(e)[agent(x)] >= epoch(x)``, or when
``x`` is in an earlier launch.

Asynchronous copies run on agents of their own, so an in-flight copy is
concurrent with everything, its issuer included, until something retires it:

* ``(t, CP)``: the cp.async copies of thread ``t``; a copy's epoch is its group
  number, and ``clock[(t, CP)]`` is the number of groups known retired.
* ``(t, BULK)``: the same for tma_store bulk groups.
* ``(t, TMA, mbarrier)``: the tma_loads of ``t`` that complete bytes on one
  mbarrier; epoch ``k`` is the k-th such load. Phases complete in order, so a
  phase's clock naming ``k`` also covers loads ``1..k-1``.

A copy's own clock is its issuer's clock at the issue, without an entry for
the copy agent itself: two in-flight copies are never ordered.

Scopes (the PTX memory model's *morally strong*): ``reach(x, y)`` is the
narrowest scope that contains both agents; an operation of scope ``s``
contains both when ``s >= reach``. A release/acquire pair synchronizes only
when every scope involved (each atomic's, and a fence's that supplies a
half) reaches.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

from . import badinput
from . import ops as O
from . import reasons as R
from .errors import TraceError
from .findings import CheckResult, empty_findings
from .schema import SITE_NONE

THREAD, CP, BULK, TMA = 0, 1, 2, 3
WARP_BARRIER = -2  # bar_obj of a warp_sync generation

Clock = dict  # agent key -> epoch; SHARED -> {agent key: epoch} (below)

# A barrier whose ``fence_spaces`` leaves out global or shared memory splits
# happens-before in two relations, one per memory; every other edge belongs
# to both. A clock holds the global relation's entries, and under SHARED the
# shared relation's entries that differ from them (none until such a barrier).
SHARED = "shared"
GLOBAL_FENCE, SHARED_FENCE = 1, 2


def shared_epoch(clock: Clock, agent) -> int:
    """What ``clock`` knows of ``agent`` for shared memory."""
    return clock.get(SHARED, {}).get(agent, clock.get(agent, 0))


def set_shared(clock: Clock, agent, epoch: int) -> None:
    """Make the shared relation know ``epoch`` of ``agent`` (stored only where
    it differs from the global one)."""
    if epoch == clock.get(agent, 0):
        shared = clock.get(SHARED)
        if shared is not None:
            shared.pop(agent, None)
            if not shared:
                del clock[SHARED]
    else:
        clock.setdefault(SHARED, {})[agent] = epoch


def join(into: Clock, other: Clock) -> None:
    """into := into joined with other, in both relations."""
    if SHARED not in into and SHARED not in other:
        for agent, epoch in other.items():
            if into.get(agent, -1) < epoch:
                into[agent] = epoch
        return
    agents = [a for a in other if a != SHARED] + list(other.get(SHARED, ()))
    shared = {a: max(shared_epoch(into, a), shared_epoch(other, a)) for a in agents}
    join_relation(into, {a: e for a, e in other.items() if a != SHARED}, GLOBAL_FENCE)
    for agent, epoch in shared.items():
        set_shared(into, agent, epoch)


def copy_clock(clock: Clock) -> Clock:
    out = dict(clock)
    if SHARED in out:
        out[SHARED] = dict(out[SHARED])
    return out


def relation(clock: Clock, which: int) -> dict:
    """One relation's entries of ``clock``, as a plain agent -> epoch dict."""
    if which == GLOBAL_FENCE:
        return {a: e for a, e in clock.items() if a != SHARED}
    agents = [a for a in clock if a != SHARED] + list(clock.get(SHARED, ()))
    return {a: shared_epoch(clock, a) for a in agents}


def join_relation(into: Clock, entries: dict, which: int) -> None:
    """Join plain ``entries`` into one relation of ``into``, leaving the other."""
    for agent, epoch in entries.items():
        if which == GLOBAL_FENCE:
            if into.get(agent, 0) < epoch:
                before = shared_epoch(into, agent)
                into[agent] = epoch
                set_shared(into, agent, before)
        elif shared_epoch(into, agent) < epoch:
            set_shared(into, agent, epoch)


def raise_entry(clock: Clock, agent, epoch: int) -> None:
    """Both relations know at least ``epoch`` of ``agent``."""
    shared = max(shared_epoch(clock, agent), epoch)
    clock[agent] = max(clock.get(agent, 0), epoch)
    set_shared(clock, agent, shared)


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
    cp_open: int = 1        # group number of the uncommitted cp.async group
    cp_retired: int = 0
    # cp_async_waits that retired groups: (groups retired up to, epoch, site).
    cp_retire_log: list = field(default_factory=list)
    bulk_open: int = 1
    bulk_retired: int = 0
    tma_count: dict = field(default_factory=dict)  # mbarrier key -> loads issued


@dataclass
class Generation:
    arg: int
    first_row: int
    rows: list = field(default_factory=list)
    clock: Clock = field(default_factory=dict)
    waiters: list = field(default_factory=list)
    mask: int = 0
    # Arrivals whose barrier fences one memory only: that relation's entries.
    global_only: dict = field(default_factory=dict)
    shared_only: dict = field(default_factory=dict)
    waiter_fences: dict = field(default_factory=dict)  # id(agent state) -> its fence_spaces


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


def fields_of(a: Access) -> tuple:
    return (a.launch, a.block, a.thread, a.cluster)


class ReferenceChecker:
    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.launch = -1
        self.agents: dict[tuple, AgentState] = {}
        self.history: dict[tuple, list[Access]] = defaultdict(list)
        self.initialized: set[tuple] = set()
        self.generations: dict[tuple, Generation] = {}
        self.gen_count: dict[tuple, int] = defaultdict(int)
        self.locks: dict[int, Clock] = defaultdict(dict)
        self.flags: dict[int, deque] = defaultdict(deque)
        # address -> {(releaser key, scope): [fields, clock]}, in creation order
        self.atomic_releases: dict[tuple, dict] = defaultdict(dict)
        self.mbarriers: dict[tuple, MBarrier] = defaultdict(MBarrier)
        self.async_retired: dict[tuple, int] = defaultdict(int)
        self.waited_phases: set[tuple] = set()  # phases some mbar_wait returned on
        self.pairs: dict[int, list] = {}
        self.alias_edges: dict[int, set] = {}
        self.findings: list[dict] = []
        self.events = 0

    # -- helpers ---------------------------------------------------------
    def error(self, row: int, rule: badinput.Rule, *values: int) -> TraceError:
        """A trace that breaks a replay rule at ``row``, worded as the engine words it."""
        return badinput.error(rule, *values, path=self.path, row=row)

    def agent(self, launch: int, block: int, thread: int, cluster: int) -> AgentState:
        key = (launch, block, thread, THREAD)
        st = self.agents.get(key)
        if st is None:
            st = AgentState(key=key, clock={}, cluster=cluster)
            self.agents[key] = st
        return st

    def hb(self, x: Access, launch: int, clock: Clock, space: int = O.SPACE_GLOBAL) -> bool:
        """``x`` happens before an access to ``space`` made with ``clock``."""
        if x.launch < launch:
            return True
        if space == O.SPACE_SHARED:
            return shared_epoch(clock, x.agent) >= x.epoch
        return clock.get(x.agent, 0) >= x.epoch

    def emit(self, kind: int, row: int, ev: dict, *, prev: Access | None = None,
             prev_row: int = -1, prev_ev: dict | None = None, severity: int = O.Severity.ERROR,
             space: int = 0, owner: int = 0, addr: int = 0, size: int = 0, obj: int = 0,
             code: int = 0, aux: int = 0, bar=(-1, -1)) -> None:
        f = {"kind": kind, "severity": int(severity), "row": row, "launch": ev["launch"],
             "block": ev["block"], "thread": ev["thread"], "op": ev["op"], "ts": ev["ts"],
             "site": ev["site"], "space": space, "owner": owner, "addr": addr, "size": size,
             "obj": obj, "code": code, "aux": aux, "bar_obj": bar[0], "bar_gen": bar[1],
             "prev_row": -1, "prev_bar_obj": -1, "prev_bar_gen": -1, "prev_site": SITE_NONE}
        if prev is not None:
            f.update(prev_row=prev.row, prev_launch=prev.launch, prev_block=prev.block,
                     prev_thread=prev.thread, prev_op=prev.op, prev_ts=prev.ts,
                     prev_site=prev.site, prev_async=int(prev.is_async_agent),
                     prev_bar_obj=prev.bar[0], prev_bar_gen=prev.bar[1])
        elif prev_ev is not None:
            f.update(prev_row=prev_row, prev_launch=prev_ev["launch"], prev_block=prev_ev["block"],
                     prev_thread=prev_ev["thread"], prev_op=prev_ev["op"], prev_ts=prev_ev["ts"],
                     prev_site=prev_ev["site"])
        self.findings.append(f)

    # -- the replay ------------------------------------------------------
    def run(self, batches: Iterable, progress: Callable[[int], None] | None = None,
            on_findings: Callable[[np.ndarray], None] | None = None) -> CheckResult:
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
            raise self.error(row, badinput.BARRIER_ORDER, ev["block"], ev["thread"], bkey[-1], gen)
        st.epoch += 1
        st.clock[st.key] = st.epoch  # (no shared entry of its own: it differs from no one's)
        handler = HANDLERS.get(op)
        if handler is not None:
            handler(self, row, ev, st)

    # -- memory accesses -------------------------------------------------
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

    def make_access(self, row, ev, st, agent, epoch, addr, size, *, is_write, is_atomic=False,
                    proxy_async=False, copy_kind=0, copy_group=0) -> Access:
        return Access(row=row, agent=agent, epoch=epoch, launch=ev["launch"], block=ev["block"],
                      thread=ev["thread"], cluster=st.cluster, op=ev["op"], ts=ev["ts"],
                      site=ev["site"], addr=addr, size=size, is_write=is_write,
                      is_atomic=is_atomic, scope=ev["scope"], is_async_agent=agent is not st.key,
                      proxy_async=proxy_async, bar=st.bar, copy_kind=copy_kind, copy_group=copy_group)

    def access(self, row: int, ev: dict, st: AgentState, acc: Access, clock: Clock,
               space: int, found: dict, *, source: bool = False) -> None:
        """Check one access against the history, then record it.

        ``found`` maps hazard kind to the best candidate so far for this row:
        (prev row, prev is write, this is write, prev access, this access).
        """
        launch = ev["launch"]
        okey = self.owner_key(ev, space, launch, source=source)
        uninit_lo = uninit_hi = None
        reads = not acc.is_write or acc.is_atomic
        for b in range(acc.addr, acc.addr + acc.size):
            key = okey + (b,)
            if reads and key not in self.initialized:
                uninit_lo = b if uninit_lo is None else uninit_lo
                uninit_hi = b
            hist = self.history.get(key, ())
            last_write = None
            for x in hist:
                if x.is_write:
                    last_write = x
                if not (x.is_write or acc.is_write):
                    continue  # both reads
                if x.is_atomic and acc.is_atomic and \
                        min(x.scope, acc.scope) >= reach(fields_of(x), fields_of(acc)):
                    continue  # atomics whose scopes both contain both agents
                if self.hb(x, launch, clock, space):
                    continue
                if x.is_async_agent and self.in_flight(x):
                    kind = O.K_ASYNC_INFLIGHT
                elif x.is_write:
                    kind = O.K_WAW if acc.is_write else O.K_RAW
                else:
                    kind = O.K_WAR
                self.offer(found, kind, x, acc)
            if acc.proxy_async and last_write is not None and not last_write.proxy_async \
                    and last_write.launch == launch and self.hb(last_write, launch, clock, space) \
                    and not self.proxy_fenced(last_write, clock, space):
                self.offer(found, O.K_PROXY_FENCE, last_write, acc)
        if uninit_lo is not None:
            cur = found.get(O.K_UNINIT_READ)
            if cur is None:
                found[O.K_UNINIT_READ] = (-1, False, False, None, acc, space,
                                          self.owner_field(ev, space, source=source), uninit_lo,
                                          uninit_hi - uninit_lo + 1)
        for b in range(acc.addr, acc.addr + acc.size):
            key = okey + (b,)
            self.history[key].append(acc)
            if acc.is_write:
                self.initialized.add(key)

    def in_flight(self, x: Access) -> bool:
        """Whether copy access ``x`` is not retired yet: a cp.async or bulk group
        no wait of its issuer retired, or a tma_load whose phase no mbar_wait
        (of any thread) has returned on."""
        if x.copy_kind == R.INFLIGHT_TMA_LOAD:
            return x.phase not in self.waited_phases
        return self.async_retired[x.agent] < x.epoch

    def retiring_wait(self, w: Access) -> tuple:
        """(epoch, site) of the cp_async_wait that retired cp.async copy ``w``."""
        st = self.agents[w.agent[:4]]
        return next((epoch, site) for upto, epoch, site in st.cp_retire_log if upto >= w.epoch)

    def proxy_fenced(self, w: Access, clock: Clock, space: int) -> bool:
        """A fence_proxy_async by w's thread after w (after the wait that
        retired it, for a cp.async destination) that happens before the clock."""
        thread = w.agent[:4]
        after = self.retiring_wait(w)[0] if w.is_async_agent else w.epoch
        known = shared_epoch(clock, thread) if space == O.SPACE_SHARED else clock.get(thread, 0)
        return any(after < f <= known for f in self.agents[thread].fences)

    @staticmethod
    def offer(found: dict, kind: int, prev: Access, acc: Access) -> None:
        rank = (prev.row, prev.is_write, acc.is_write)
        cur = found.get(kind)
        if cur is None or rank > cur[:3]:
            found[kind] = rank + (prev, acc)

    def emit_found(self, row: int, ev: dict, found: dict, space_of: dict,
                   st: AgentState) -> None:
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
            self.emit(kind, row, ev, prev=prev, space=space, owner=owner, addr=lo, size=hi - lo,
                      obj=obj, code=code, aux=aux, bar=acc.bar)

    def reason(self, kind: int, prev: Access, st: AgentState, space: int) -> tuple[int, int, int]:
        """(code, aux, obj) of a two-access finding: what was missing."""
        if kind == O.K_ASYNC_INFLIGHT:
            if prev.copy_kind == R.INFLIGHT_TMA_LOAD:
                return prev.copy_kind, prev.phase[2], prev.mbar_obj
            return prev.copy_kind, prev.copy_group, 0
        if kind == O.K_PROXY_FENCE:
            if prev.is_async_agent:
                return R.PROXY_CP_ASYNC_DEST, self.retiring_wait(prev)[1], 0
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

    def on_access(self, row: int, ev: dict, st: AgentState) -> None:
        op = ev["op"]
        space = ev["space"]
        acc = self.make_access(row, ev, st, st.key, st.epoch, ev["addr"], ev["size"],
                               is_write=op != O.READ, is_atomic=op == O.ATOMIC,
                               proxy_async=ev["proxy"] == 1)
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

    # -- atomics and fences ------------------------------------------------
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
        for (releaser, scope), (fields, clock) in self.atomic_releases.get(self.atomic_key(ev), {}).items():
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
            releases = [(min(scope, ev["scope"]), clock) for scope, clock in st.fence_release.items()]
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

    def on_fence_proxy(self, row: int, ev: dict, st: AgentState) -> None:
        st.fences.append(st.epoch)

    # -- asynchronous copies (rule 5) ------------------------------------
    def copy(self, row: int, ev: dict, st: AgentState, agent: tuple, epoch: int, *,
             proxy_async: bool, copy_kind: int, phase: tuple | None = None) -> Clock:
        """Check and record a copy's source read and destination write, made by
        ``agent`` with its issuer's clock (no entry for the copy agent itself)."""
        clock = copy_clock(st.clock)
        size = ev["size"]
        src = self.make_access(row, ev, st, agent, epoch, ev["addr2"], size, is_write=False,
                               proxy_async=proxy_async, copy_kind=copy_kind, copy_group=epoch)
        dst = self.make_access(row, ev, st, agent, epoch, ev["addr"], size, is_write=True,
                               proxy_async=proxy_async, copy_kind=copy_kind, copy_group=epoch)
        src.phase = dst.phase = phase
        src.mbar_obj = dst.mbar_obj = ev["obj"]
        found: dict = {}
        self.access(row, ev, st, src, clock, ev["space2"], found, source=True)
        self.access(row, ev, st, dst, clock, ev["space"], found)
        self.emit_found(row, ev, found, {
            id(src): (ev["space2"], self.owner_field(ev, ev["space2"], source=True)),
            id(dst): (ev["space"], self.owner_field(ev, ev["space"])),
        }, st)
        return clock

    def on_cp_async(self, row: int, ev: dict, st: AgentState) -> None:
        self.copy(row, ev, st, st.key + (CP,), st.cp_open, proxy_async=False,
                  copy_kind=R.INFLIGHT_CP_ASYNC)

    def on_tma_store(self, row: int, ev: dict, st: AgentState) -> None:
        self.copy(row, ev, st, st.key + (BULK,), st.bulk_open, proxy_async=True,
                  copy_kind=R.INFLIGHT_BULK_STORE)

    def on_cp_commit(self, row: int, ev: dict, st: AgentState) -> None:
        st.cp_open += 1

    def on_bulk_commit(self, row: int, ev: dict, st: AgentState) -> None:
        st.bulk_open += 1

    def retire(self, row: int, ev: dict, st: AgentState, lane: int, open_group: int,
               retired: int) -> int:
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

    # -- mbarriers (rule 6) ------------------------------------------------
    @staticmethod
    def mbar_key(ev: dict) -> tuple:
        return (ev["launch"], ev["peer"], ev["obj"])

    def mbar(self, ev: dict) -> tuple[tuple, MBarrier]:
        key = self.mbar_key(ev)
        return key, self.mbarriers[key]

    def misuse(self, row: int, ev: dict, st: AgentState, code: int, *, prev_row: int = -1,
               prev_ev: dict | None = None) -> None:
        self.emit(O.K_MBARRIER_MISUSE, row, ev, prev_row=prev_row, prev_ev=prev_ev,
                  space=O.SPACE_SHARED, owner=ev["peer"], addr=ev["obj"], size=8, obj=ev["obj"],
                  code=code, bar=st.bar)

    def on_tma_load(self, row: int, ev: dict, st: AgentState) -> None:
        key, mb = self.mbar(ev)
        count = st.tma_count.get(key, 0) + 1
        st.tma_count[key] = count
        agent = st.key + (TMA, key)
        clock = self.copy(row, ev, st, agent, count, proxy_async=True, copy_kind=R.INFLIGHT_TMA_LOAD,
                          phase=(key, mb.inits, mb.phase))
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
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
        mb.completed_phase[mb.phase % 2] = (self.mbar_key(ev), mb.inits, mb.phase)
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
        self.mbarriers[key] = mb = MBarrier(expected=ev["arg"], pending=ev["arg"], valid=True,
                                            inits=mb.inits + 1)
        mb.init_row, mb.init_ev = row, ev

    def on_mbar_arrive(self, row: int, ev: dict, st: AgentState) -> None:
        _, mb = self.mbar(ev)
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        count = ev["arg"] if ev["arg"] > 0 else 1
        if count > mb.pending:
            self.misuse(row, ev, st, R.MBAR_ARRIVAL_UNDERFLOW)
            count = mb.pending
        mb.pending -= count
        join(mb.clock, st.clock)
        self.complete_phase(row, ev, st, mb)

    def on_mbar_expect_tx(self, row: int, ev: dict, st: AgentState) -> None:
        _, mb = self.mbar(ev)
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        mb.tx += ev["arg"]
        self.complete_phase(row, ev, st, mb)

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
        self.waited_phases.add(mb.completed_phase[ev["arg"] & 1])  # retires its tma_loads

    def on_mbar_inval(self, row: int, ev: dict, st: AgentState) -> None:
        _, mb = self.mbar(ev)
        if not mb.valid:
            self.misuse(row, ev, st, R.MBAR_BEFORE_INIT)
            return
        mb.valid = False

    # -- locks and flags -------------------------------------------------
    def on_release(self, row: int, ev: dict, st: AgentState) -> None:
        join(self.locks[ev["obj"]], st.clock)

    def on_acquire(self, row: int, ev: dict, st: AgentState) -> None:
        join(st.clock, self.locks[ev["obj"]])

    def on_signal(self, row: int, ev: dict, st: AgentState) -> None:
        count = ev["arg"] if ev["arg"] > 0 else 1
        self.flags[ev["obj"]].append([count, copy_clock(st.clock), row, ev, st.key, st.epoch])

    def on_wait(self, row: int, ev: dict, st: AgentState) -> None:
        obj = ev["obj"]
        need = ev["arg"] if ev["arg"] > 0 else 1
        queue = self.flags[obj]
        available = sum(entry[0] for entry in queue)
        if available < need:
            raise self.error(row, badinput.WAIT_WITHOUT_SIGNAL, obj, need, available)
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
                if p["launch"] != ev["launch"] or p["s_ev"]["launch"] != ev["launch"] or \
                        p["s_site"] == s_ev["site"] or p["w_site"] == wsite:
                    continue
                w1_before_s2 = s_clock.get(p["w_agent"], 0) >= p["w_epoch"]
                s1_before_s2 = s_clock.get(p["s_agent"], 0) >= p["s_epoch"]
                if not w1_before_s2 and not s1_before_s2 and (warn is None or p["s_row"] > warn["s_row"]):
                    warn = p
        for entry in consumed:
            _, s_clock, s_row, s_ev, s_agent, s_epoch = entry
            pairs.append({"launch": ev["launch"], "s_row": s_row, "s_ev": s_ev, "s_site": s_ev["site"],
                          "s_agent": s_agent, "s_epoch": s_epoch, "w_site": wsite,
                          "w_agent": st.key, "w_epoch": st.epoch})
            edges.add((s_ev["site"], wsite))
        fed = {sa for (sa, w) in edges if w == wsite}
        foreign = {sa for sa in fed if any(w != wsite for (s2, w) in edges if s2 == sa)}
        if len(fed) >= 2 and foreign:
            pick = [e for e in consumed if e[3]["site"] in foreign] or consumed
            entry = max(pick, key=lambda e: e[2])
            self.emit(O.K_SYNC_ALIAS, row, ev, prev_row=entry[2], prev_ev=entry[3], obj=obj,
                      code=R.ALIAS_CROSSED, bar=st.bar)
        elif warn is not None:
            self.emit(O.K_SYNC_ALIAS, row, ev, prev_row=warn["s_row"], prev_ev=warn["s_ev"], obj=obj,
                      code=R.ALIAS_MAY_CROSS, severity=O.Severity.WARNING, bar=st.bar)

    # -- barriers --------------------------------------------------------
    def on_barrier(self, row: int, ev: dict, st: AgentState) -> None:
        op = ev["op"]
        if op == O.WARP_SYNC:
            mask = ev["arg"] & 0xFFFFFFFF
            count = bin(mask).count("1")
            bkey = (ev["launch"], ev["block"], "warp", ev["thread"] // 32)
            bar_obj = WARP_BARRIER
            if count == 0:
                raise self.error(row, badinput.EMPTY_WARP_MASK)
        else:
            count = ev["arg"]
            mask = 0
            bkey = (ev["launch"], ev["block"], "bar", ev["obj"])
            bar_obj = ev["obj"]
            if count <= 0:
                raise self.error(row, badinput.BARRIER_COUNT, ev["obj"], count)
        gen = self.generations.get(bkey)
        if gen is None:
            gen = Generation(arg=count, first_row=row, mask=mask)
            self.generations[bkey] = gen
        elif count != gen.arg or mask != gen.mask:
            self.emit(O.K_BARRIER_MISMATCH, row, ev, prev_row=gen.first_row, prev_ev=gen.first_ev,
                      obj=ev["obj"] if op != O.WARP_SYNC else ev["arg"],
                      code=R.BAR_ARG_DISAGREES, aux=gen.arg, bar=st.bar)
        if not gen.rows:
            gen.first_ev = ev
        gen.rows.append(row)
        gen.last_ev = ev
        fences = ev["fence_spaces"] & (GLOBAL_FENCE | SHARED_FENCE)
        if fences == GLOBAL_FENCE | SHARED_FENCE:
            join(gen.clock, st.clock)
        elif fences:
            gen_only = gen.global_only if fences == GLOBAL_FENCE else gen.shared_only
            join(gen_only, relation(st.clock, fences))
        number = self.gen_count[bkey]
        if op != O.BAR_ARRIVE:
            gen.waiters.append((st, fences))
            gen.waiter_fences[id(st)] = ev["fence_spaces"]
            st.blocked_on = (bkey, number)
        if len(gen.rows) >= gen.arg:
            ev_fences = gen.waiter_fences
            for waiter, fences in gen.waiters:
                # Each relation joins what the arrivals that fence its memory gave.
                if fences == GLOBAL_FENCE | SHARED_FENCE:
                    join(waiter.clock, gen.clock)
                for which in (GLOBAL_FENCE, SHARED_FENCE):
                    if fences & which:
                        if fences != GLOBAL_FENCE | SHARED_FENCE:
                            join_relation(waiter.clock, relation(gen.clock, which), which)
                        join_relation(waiter.clock,
                                      gen.global_only if which == GLOBAL_FENCE else gen.shared_only,
                                      which)
                waiter.blocked_on = None
                waiter.bar = (bar_obj, number)
                waiter.bar_fences = ev_fences[id(waiter)]
            self.gen_count[bkey] += 1
            del self.generations[bkey]

    def finish_launch(self) -> None:
        """End of a launch: incomplete barrier generations are mismatches."""
        for bkey, gen in sorted(self.generations.items(), key=lambda kv: kv[1].first_row):
            ev = gen.last_ev
            obj = ev["obj"] if bkey[2] == "bar" else ev["arg"]
            self.emit(O.K_BARRIER_MISMATCH, gen.rows[-1], ev, obj=obj, code=R.BAR_INCOMPLETE,
                      aux=len(gen.rows))
        self.generations.clear()
        for st in self.agents.values():
            st.blocked_on = None
        # Launch order covers every release of this launch: later launches
        # need none of them (and no explanation may name them).
        self.atomic_releases.clear()


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
    O.TMA_STORE: ReferenceChecker.on_tma_store,
    O.BULK_COMMIT: ReferenceChecker.on_bulk_commit,
    O.BULK_WAIT: ReferenceChecker.on_bulk_wait,
    O.MBAR_INIT: ReferenceChecker.on_mbar_init,
    O.MBAR_ARRIVE: ReferenceChecker.on_mbar_arrive,
    O.MBAR_EXPECT_TX: ReferenceChecker.on_mbar_expect_tx,
    O.MBAR_WAIT: ReferenceChecker.on_mbar_wait,
    O.MBAR_INVAL: ReferenceChecker.on_mbar_inval,
    O.RELEASE: ReferenceChecker.on_release,
    O.ACQUIRE: ReferenceChecker.on_acquire,
    O.SIGNAL: ReferenceChecker.on_signal,
    O.WAIT: ReferenceChecker.on_wait,
}


def check_trace(reader, *, progress: Callable[[int], None] | None = None,
                on_findings: Callable[[np.ndarray], None] | None = None) -> CheckResult:
    """Replay ``reader`` (a TraceReader) through the reference checker
    (``on_findings``: see :meth:`ReferenceChecker.run`)."""
    checker = ReferenceChecker(path=reader.meta.path)
    return checker.run(reader, progress, on_findings)
