"""One sentence per finding, in words a kernel engineer acts on.

:func:`explain` reads a ``FINDING_DTYPE`` record (a row of the findings array,
or any mapping with the same field names) and the trace's
:class:`~tracerace.trace.meta.TraceMeta` (for site names). Agents are written
``(block,thread)``; the launch is named only when it is not 0. The earlier
access is the ``prev_*`` side of the record; races never cross launches, since
every event of a launch happens before every event of the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..checker import reasons
from ..checker.findings import FIELDS
from ..trace.meta import TraceMeta
from ..trace.ops import ASYNC_OPS, HazardKind, Op, Scope, Space

NO_GENERATION = -1
"""``bar_gen``/``prev_bar_gen`` of an agent that completed no barrier yet."""

ASYNC_OP_CODES = frozenset(int(op) for op in ASYNC_OPS)
"""Ops whose memory access is made by an async agent, reported at the issue row."""

ASYNC_STORES = {
    int(Op.ST_ASYNC): "st.async store",
    int(Op.RED_ASYNC): "red.async reduction",
    int(Op.BULK_REDUCE_PEER): "bulk reduction",
}
"""The stores that complete bytes on an mbarrier, as findings name them."""

KIND_TITLES = {
    HazardKind.RAW: "read-after-write race: a read not ordered after a conflicting write",
    HazardKind.WAR: "write-after-read race: a write not ordered after a conflicting read",
    HazardKind.WAW: "write-after-write race: two writes to the same bytes, unordered",
    HazardKind.UNINIT_READ: "read of bytes that no write or init covered",
    HazardKind.ASYNC_INFLIGHT: "access to memory an async copy was still using: a missing wait",
    HazardKind.PROXY_FENCE: "generic-proxy write seen by the async proxy without fence.proxy.async",
    HazardKind.SYNC_ALIAS: "one sync object serves two protocols",
    HazardKind.BARRIER_MISMATCH: "barrier arrivals disagree, or a generation never completes",
    HazardKind.MBARRIER_MISUSE: "mbarrier used before init, re-initialized, underflowed, "
    "or waited on a phase that never completed",
}
"""One line per hazard kind: what it is (the SARIF rule descriptions)."""

# (earlier, later) access nouns of each race kind; an atomic counts as a write.
_RACE_NOUNS = {
    HazardKind.RAW: ("write", "read"),
    HazardKind.WAR: ("read", "write"),
    HazardKind.WAW: ("write", "write"),
}
_VERB = {"write": "wrote", "read": "read", "atomic": "did an atomic"}

_OP_LABELS = {int(op): op.label for op in Op}


def op_name(code: int) -> str:
    """``"write"`` for 1; ``"op123"`` for a code outside :class:`Op`."""
    return _OP_LABELS.get(code) or f"op{code}"


def agent_text(launch: int, block: int, thread: int, meta: TraceMeta | None = None) -> str:
    """``(0,5)``, or ``(0,5) of launch 2`` outside launch 0; with the launch's
    dimensions in ``meta``, ``block (0,0,0) thread (5,0,0)`` (:mod:`tracerace.trace.coords`)."""
    text = (
        meta.coords.agent(launch, block, thread, warp=False)
        if meta is not None
        else f"({block},{thread})"
    )
    return text if launch == 0 else f"{text} of launch {launch}"


class FindingView:
    """A finding's fields as int attributes (``v.prev_thread``), with the few words
    every sentence needs: what explanations and fix hints (:mod:`.hints`) read
    of a finding."""

    def __init__(self, f: Mapping[str, Any], meta: TraceMeta | None) -> None:
        # Plain int attributes: a sentence reads a dozen fields, and numpy
        # scalars or __getattr__ would cost more than the words.
        if isinstance(f, np.void):
            self.__dict__.update(zip(FIELDS, f.tolist()))
        else:  # a dict of the record's fields, as from explain_all
            self.__dict__.update(f)
        self.meta = meta or TraceMeta()

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> int:
            """The finding's fields (``FIELDS``), set in ``__init__``: ints."""
            ...

    @property
    def has_first(self) -> bool:
        """The finding names an earlier event (only this is read of ``prev_row``)."""
        return self.prev_row >= 0

    def at(self, prev: bool = False) -> str:
        """`` at kernel.cu:12 ...``, or nothing when the event names no site."""
        site = self.meta.site_text(self.prev_site if prev else self.site)
        return f" at {site}" if site else ""

    def agent(self, prev: bool = False, launch: bool = True) -> str:
        if prev:
            return agent_text(
                self.prev_launch if launch else 0, self.prev_block, self.prev_thread, self.meta
            )
        return agent_text(self.launch if launch else 0, self.block, self.thread, self.meta)

    def thread_of(self, prev: bool = False, launch: bool = True) -> str:
        """``thread (0,5)``, or ``block (0,0,0) thread (5,0,0)`` (which says "thread")."""
        agent = self.agent(prev, launch)
        return agent if agent.startswith("block (") else f"thread {agent}"

    def is_async(self, prev: bool = False) -> bool:
        if prev:
            return bool(self.prev_async) or self.prev_op in ASYNC_OP_CODES
        return self.op in ASYNC_OP_CODES

    def who(self, prev: bool = False, launch: bool = True) -> str:
        """``thread (0,5)``, or ``the async copy issued by (0,5)``."""
        if self.is_async(prev):
            return f"the async copy issued by {self.agent(prev, launch)}"
        return self.thread_of(prev, launch)

    def access(self, prev: bool = False, noun: str | None = None) -> str:
        """``the read by thread (0,5)``; ``noun`` defaults to the op's own."""
        op = self.prev_op if prev else self.op
        if op == int(Op.ATOMIC):
            noun = "atomic"
        elif noun is None:
            noun = {int(Op.READ): "read", int(Op.WRITE): "write"}.get(op)
        if noun is None:  # a copy: the agent text says what it is
            return self.who(prev)
        return f"the {noun} by {self.who(prev)}"

    @property
    def obj_hex(self) -> str:
        return f"0x{self.obj:x}"


def scope_name(scope: int) -> str:
    """``"block"`` for 2 (PTX says cta, CUDA says block)."""
    return Scope(scope).name.lower() if scope in Scope._value2member_map_ else f"scope {scope}"


def _weak_sync(v: FindingView, n1: str) -> str:
    """A race after a release/acquire that did not synchronize (RACE_WEAK_SYNC)."""
    rel, acq, need, how = reasons.weak_sync_parts(v.aux)
    who_rel, who_acq = v.thread_of(True), v.thread_of()
    read = (
        f"{who_acq}'s atomic on {v.obj_hex} read the release {who_rel} made after its {n1}, "
        f"but did not synchronize with it"
    )
    if how == reasons.WEAK_RELAXED:
        return (
            f"{read}: the atomic is relaxed and no acquire fence of {scope_name(need)} scope "
            f"or wider followed it; make it an acquire of {scope_name(need)} scope, or put "
            f"such a fence after it"
        )
    narrow = []
    if rel < need:
        narrow.append(f"the release has {scope_name(rel)} scope")
    if acq < need:
        narrow.append(f"the acquire has {scope_name(acq)} scope")
    return (
        f"{read}: {' and '.join(narrow)}, which does not contain both threads; they need "
        f"{scope_name(need)} scope (widen it on that side, and on the fence that supplies "
        f"it, if one does)"
    )


_FENCE_NAMES = {1: "global", 2: "shared", 4: "local"}
_OPENCL_FENCE = {0: "CLK_GLOBAL_MEM_FENCE", 1: "CLK_LOCAL_MEM_FENCE"}


def _unfenced_barrier(v: FindingView, n1: str, n2: str) -> str:
    """A race across a barrier whose fence_spaces leave out the memory (RACE_UNFENCED_BARRIER)."""
    memory = Space(v.space).name.lower()
    fenced = [name for bit, name in _FENCE_NAMES.items() if v.aux & bit and bit != 4]
    fences = f"fences only {' and '.join(fenced)} memory" if fenced else "fences no memory"
    hint = _OPENCL_FENCE.get(v.space)
    return (
        f"{v.who(True)} {_VERB[n1]} before generation {v.bar_gen} of barrier {v.bar_obj} and "
        f"{v.who()} {_VERB[n2]} after it, but that barrier {fences}, not {memory} memory: "
        f"make it fence {memory} memory too" + (f" ({hint} in OpenCL)" if hint else "")
    )


def _race(v: FindingView) -> str:
    n1, n2 = _RACE_NOUNS[HazardKind(v.kind)]
    if v.code == reasons.RACE_WEAK_SYNC and v.prev_launch == v.launch:
        return _weak_sync(v, "atomic" if v.prev_op == int(Op.ATOMIC) else n1)
    if v.code == reasons.RACE_UNFENCED_BARRIER and v.prev_launch == v.launch:
        return _unfenced_barrier(v, n1, n2)
    if v.prev_launch != v.launch:
        return (
            f"launch {v.prev_launch} ends before launch {v.launch} begins, so "
            f"{v.access(True, n1)} and {v.access(False, n2)} cannot race; "
            f"this report is a checker bug"
        )
    # Both agents share the launch: name it once, at the end.
    launch = "" if v.launch == 0 else f" (launch {v.launch})"
    a, b = v.who(True, launch=False), v.who(False, launch=False)
    n1 = "atomic" if v.prev_op == int(Op.ATOMIC) else n1
    n2 = "atomic" if v.op == int(Op.ATOMIC) else n2
    if v.prev_block != v.block:
        return (
            f"blocks {v.prev_block} and {v.block} share no barrier, and no signal, lock or "
            f"release/acquire atomic ordered the {n1} by {a} before the {n2} by {b}{launch}"
        )
    if v.prev_bar_gen == NO_GENERATION and v.bar_gen == NO_GENERATION:
        if not (v.is_async(True) or v.is_async(False)):
            if v.meta.coords.known:
                return f"{a} and {b} never synchronized between the accesses{launch}"
            return (
                f"threads {v.agent(True, launch=False)} and {v.agent(False, launch=False)} "
                f"never synchronized between the accesses{launch}"
            )
        return f"{a} and {b} never synchronized between the accesses{launch}"
    v1, v2 = _VERB[n1], _VERB[n2]
    if v.prev_bar_gen == NO_GENERATION:
        first = f"{a} {v1} before completing any barrier"
    else:
        first = f"{a} {v1} after generation {v.prev_bar_gen} of barrier {v.prev_bar_obj}"
    if v.bar_gen == NO_GENERATION:
        second = f"{b} {v2} before completing any barrier"
    elif v.bar_obj == v.prev_bar_obj and v.bar_gen <= v.prev_bar_gen:
        # The later agent had not reached the generation after the earlier access.
        second = f"{b} {v2} before generation {v.bar_gen + 1}"
    else:
        second = f"{b} {v2} after generation {v.bar_gen} of barrier {v.bar_obj}"
    return f"no barrier between them: {first}, {second}{launch}"


def _uninit_read(v: FindingView) -> str:
    reader = v.who()
    if v.op == int(Op.ATOMIC):
        reader = f"the atomic by {reader}"
    text = f"no write or init covered these bytes before the read by {reader}"
    if v.space == int(Space.SHARED):
        text += " (shared memory starts uninitialized in every launch)"
    return text


def _async_inflight(v: FindingView) -> str:
    issuer, at, access = v.agent(True), v.at(True), v.access()
    group = f"group {v.aux}" if v.aux >= 0 else "an uncommitted group"
    bulk_group = f"bulk group {v.aux}" if v.aux >= 0 else "an uncommitted bulk group"
    if v.code == reasons.INFLIGHT_CP_ASYNC:
        return (
            f"cp.async issued{at} by {issuer} in {group} was still in flight: "
            f"no cp_async_wait retired its group before {access}"
        )
    if v.code == reasons.INFLIGHT_BULK_STORE:
        what = "bulk reduction" if v.prev_op == int(Op.BULK_REDUCE) else "bulk/TMA store"
        return (
            f"{what} issued{at} by {issuer} in {bulk_group} was still in flight: "
            f"no bulk_wait retired its group before {access}"
        )
    if v.code == reasons.INFLIGHT_TMA_LOAD:
        what = ASYNC_STORES.get(v.prev_op, "TMA load")
        return (
            f"{what} issued{at} by {issuer} completes phase {v.aux} (parity {v.aux & 1}) of "
            f"mbarrier {v.obj_hex}, and no mbar_wait had returned on that phase before "
            f"{access}: wait on mbarrier {v.obj_hex} with parity {v.aux & 1} first"
        )
    return f"an async copy issued{at} by {issuer} was still in flight at {access}"


def _proxy_fence(v: FindingView) -> str:
    if v.code == reasons.PROXY_CP_ASYNC_DEST and v.prev_op in ASYNC_STORES:
        site = v.meta.site_text(v.aux)
        wait = f"the mbar_wait at {site}" if site else "the mbar_wait"
        return (
            f"the {ASYNC_STORES[v.prev_op]} issued{v.at(True)} by {v.agent(True)} wrote "
            f"these bytes "
            f"through the generic proxy, performed at {wait}, the first to return on its "
            f"phase, and the async-proxy {op_name(v.op)} by {v.agent()}{v.at()} reads them "
            f"with no fence.proxy.async by the thread of that wait after it"
        )
    if v.code == reasons.PROXY_CP_ASYNC_MBAR_DEST:
        site = v.meta.site_text(v.aux)
        wait = f"the mbar_wait at {site}" if site else "the mbar_wait"
        return (
            f"the cp.async copy issued{v.at(True)} by {v.agent(True)} arrived on an mbarrier "
            f"(cp.async.mbarrier.arrive) and wrote these bytes through the generic proxy, "
            f"performed at {wait}, the first to return on that phase; the async-proxy "
            f"{op_name(v.op)} by {v.agent()}{v.at()} reads them with no fence.proxy.async by "
            f"the thread of that wait after it"
        )
    if v.code == reasons.PROXY_CP_ASYNC_DEST:
        site = v.meta.site_text(v.aux)
        wait = f"the cp_async_wait at {site}" if site else "the cp_async_wait"
        return (
            f"the cp.async copy issued{v.at(True)} by {v.agent(True)} wrote these bytes "
            f"through the generic proxy when {wait} retired it, and the async-proxy "
            f"{op_name(v.op)} by {v.agent()}{v.at()} reads them with no fence.proxy.async by "
            f"{v.agent(True)} after {wait}: a fence before that wait does not cover the copy"
        )
    return (
        f"the generic-proxy write by {v.thread_of(True)}{v.at(True)} reaches the async-proxy "
        f"{op_name(v.op)} by {v.agent()}{v.at()} with no fence.proxy.async by "
        f"{v.agent(True)} between the write and the release that orders them"
    )


def _sync_alias(v: FindingView) -> str:
    wait = f"the wait{v.at()} by {v.agent()}"
    signal = f"the signal{v.at(True)} by {v.agent(True)}"
    if v.code == reasons.ALIAS_CROSSED:
        return (
            f"sync object {v.obj} serves two protocols that crossed in this schedule: the "
            f"waits at this site consumed signals from two signal sites, one of which also "
            f"feeds another wait site; here {wait} consumed {signal}; "
            f"give each handoff its own object"
        )
    return (
        f"sync object {v.obj} serves two protocols: {wait} could consume {signal} in "
        f"another schedule (neither the signal nor that protocol's wait is ordered before "
        f"this wait's own signal); give each handoff its own object"
    )


CLUSTER_ARRIVALS = frozenset({int(Op.CLUSTER_ARRIVE), int(Op.CLUSTER_ARRIVE_RELAXED)})


def _barrier_mismatch(v: FindingView) -> str:
    if v.op in CLUSTER_ARRIVALS:  # obj: the cluster
        where = f"the barrier of cluster {v.obj}"
    else:
        where = f"barrier {v.obj} of block {v.block}"
    if v.launch != 0:
        where += f" in launch {v.launch}"
    if v.code == reasons.BAR_ARG_DISAGREES:
        first = f"{v.thread_of(True)}{v.at(True)}" if v.has_first else "the first arrival"
        return (
            f"arrivals at {where} disagree on the thread count: {v.thread_of()}{v.at()} "
            f"arrived with a count other than the {v.aux} given by the generation's first "
            f"arrival, {first}"
        )
    if v.code == reasons.BAR_INCOMPLETE:
        s = "" if v.aux == 1 else "s"
        return (
            f"{where} ends the trace with an incomplete generation: only {v.aux} arrival{s}, "
            f"the last by {v.thread_of()}{v.at()}; the other threads never arrived "
            f"(look for a barrier in divergent code or after an early return)"
        )
    return f"{where}: {_reason_or(v, 'barrier arrivals do not match')}"


def _mbarrier_misuse(v: FindingView) -> str:
    bar, who, at, op = f"mbarrier {v.obj_hex}", v.thread_of(), v.at(), op_name(v.op)
    if v.code == reasons.MBAR_BEFORE_INIT:
        return f"{who} used {bar} ({op}){at} before any mbar_init"
    if v.code == reasons.MBAR_REINIT:
        prev = f" (initialized{v.at(True)} by {v.agent(True)})" if v.has_first else ""
        return f"{who} re-initialized {bar}{at} without an mbar_inval after its previous init{prev}"
    if v.code == reasons.MBAR_ARRIVAL_UNDERFLOW:
        return (
            f"the {op} by {who}{at} arrived on {bar} more times than its phase expects: "
            f"the pending-arrival count went below zero"
        )
    if v.code == reasons.MBAR_TX_UNDERFLOW:
        return (
            f"the {op} by {who}{at} completed more bytes on {bar} than mbar_expect_tx "
            f"announced: the transaction count went below zero"
        )
    if v.code == reasons.MBAR_PHASE_NEVER_COMPLETED:
        return (
            f"{who} waited{at} on {bar} for a phase that never completed: its arrivals or "
            f"transaction bytes never reached zero"
        )
    if v.code == reasons.MBAR_DROP_UNDERFLOW:
        return (
            f"the {op} by {who}{at} dropped more arrivals from {bar} than its init count "
            f"left: the expected-arrival count went below zero"
        )
    return f"{bar}: {_reason_or(v, 'misused')} by {who}{at}"


def _reason_or(v: FindingView, default: str) -> str:
    return reason_text(v.kind, v.code) or default


def reason_text(kind: int, code: int) -> str | None:
    """The short name of a finding's reason code (``tracerace.checker.reasons.NAMES``), or None."""
    return reasons.NAMES.get(HazardKind(kind).label, {}).get(code)


_EXPLAIN: dict[HazardKind, Callable[[FindingView], str]] = {
    HazardKind.RAW: _race,
    HazardKind.WAR: _race,
    HazardKind.WAW: _race,
    HazardKind.UNINIT_READ: _uninit_read,
    HazardKind.ASYNC_INFLIGHT: _async_inflight,
    HazardKind.PROXY_FENCE: _proxy_fence,
    HazardKind.SYNC_ALIAS: _sync_alias,
    HazardKind.BARRIER_MISMATCH: _barrier_mismatch,
    HazardKind.MBARRIER_MISUSE: _mbarrier_misuse,
}


def explain(finding: Mapping[str, Any], meta: TraceMeta | None = None) -> str:
    """One sentence saying why ``finding`` is a hazard (no trailing period)."""
    return _EXPLAIN[HazardKind(int(finding["kind"]))](FindingView(finding, meta))


UNWORDED = frozenset({"row", "ts", "prev_ts", "owner", "addr", "size"})
"""Fields no sentence reads; of ``prev_row`` only the sign is read."""


def explain_all(findings: np.ndarray, meta: TraceMeta | None = None) -> list[str]:
    """:func:`explain` for every record of a findings array.

    Memoized on the fields a sentence reads: a kernel bug repeats the same
    agents, sites and generations across many bytes and rows.
    """
    names = findings.dtype.names
    worded = [i for i, name in enumerate(names) if name not in UNWORDED and name != "prev_row"]
    prev_row = names.index("prev_row")
    memo: dict[tuple, str] = {}
    out = []
    for values in findings.tolist():
        key = (values[prev_row] >= 0, *(values[i] for i in worded))
        text = memo.get(key)
        if text is None:
            text = memo[key] = explain(dict(zip(names, values)), meta)
        out.append(text)
    return out
