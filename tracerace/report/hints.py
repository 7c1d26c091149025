"""What to change in the kernel: one fix hint per finding, from what the trace shows.

:func:`hint` reads the same ``FINDING_DTYPE`` fields as
:func:`~tracerace.report.explain.explain` (the two sites, the agents, the barrier
generations, the reason code and its ``aux``) and says where the missing
ordering goes: a barrier between two lines (naming the barrier id the block
already uses), a ``cp.async.wait_group`` before a line, an mbarrier wait on a
phase, a ``fence.proxy.async`` after a line, a wider scope on one side of a
release/acquire pair, a flag of its own for one hand-off, an initialization.
``buffer`` (the name of the tensor the bytes belong to, when the trace
declares one) lets an ``uninit_read`` hint name what to initialize.

A hint is a :class:`Hint`: the sentence, and the site where the change goes
(the SARIF fix's location), or None when no single line is the place.
Lines are written ``file:line`` when the site starts that way
(``matmul.cu:104 LDGSTS.E.128`` -> ``matmul.cu:104``), else as the site's text.

Hints speak the producer's language (:class:`Language`, chosen from the
trace's ``tracerace.producer`` by :func:`language_of`): CUDA C++ with its PTX
(the default: the CUDA tool, GPU tracer imports, the scenarios), numba.cuda,
Triton or OpenCL C, for barriers, atomics and the hand-off between blocks. A
flag or mbarrier whose address a declared buffer holds is named by its
element (``counter[0]``), else by its address.

A race that is part of a read-modify-write of the same bytes by many threads
(a histogram's ``h[k] += 1``) needs an atomic update, not a barrier; which
races are is a property of the report's groups, not of one finding
(:func:`updates`), so the caller says so (``update``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..checker import reasons
from ..trace.meta import TraceMeta
from ..trace.ops import HazardKind, Op, Scope, Space
from .explain import ASYNC_STORES, CLUSTER_ARRIVALS, NO_GENERATION, FindingView, scope_name

_SITE_LINE_PATTERN = r"^(?P<line>[^ \t\n\r\f\v]+?:[0-9]+)(?::[0-9]+)?(?:[ \t\n\r\f\v]|$)"
"""``file:line`` at the start of a site, in what Python's ``re`` and Arrow's RE2
read alike (ASCII classes: their ``\\s`` and ``\\d`` differ)."""
_SITE_LINE = re.compile(_SITE_LINE_PATTERN)

_OPENCL_FENCE = {
    int(Space.GLOBAL): "CLK_GLOBAL_MEM_FENCE",
    int(Space.SHARED): "CLK_LOCAL_MEM_FENCE",
}


@dataclass(frozen=True)
class Language:
    """How the hints of one producer's language spell what to write."""

    name: str
    barrier: str
    """A barrier every thread of the block reaches (block scope)."""
    agents: str
    """What the language calls the blocks of a launch."""
    atomic_update: str
    """An atomic read-modify-write of ``{b}`` (the buffer's name), with the others."""
    handoff: str
    """The release after ``{l1}`` and the acquire before ``{l2}`` that order two blocks."""
    barrier_id: str | None = None
    """A barrier of id ``{n}`` (None: the language has only :attr:`barrier`)."""
    threads: str = "threads"
    """What the language calls the agents that run the kernel's code."""


CUDA = Language(
    name="CUDA C++",
    barrier="`__syncthreads()`",
    agents="blocks",
    barrier_id="`bar.sync {n}` / `__syncthreads()` for 0",
    atomic_update="`atomicAdd(&{b}[i], v)`, or the atomic of the update (`atomicMax`, "
    "`atomicOr`, an `atomicCAS` loop)",
    handoff="a release after {l1} (device scope: a `st.release.gpu` or `atomic` with release, "
    "or `__threadfence()` then a flag write) and an acquire of the same flag before {l2}",
)
NUMBA = Language(
    name="numba.cuda",
    barrier="`cuda.syncthreads()`",
    agents="blocks",
    atomic_update="`cuda.atomic.add({b}, i, v)`, or the atomic of the update "
    "(`cuda.atomic.max`, `cuda.atomic.or_`, a `cuda.atomic.cas` loop)",
    handoff="after {l1}, `cuda.threadfence()` then raise a flag (`cuda.atomic.exch(flag, 0, "
    "1)`); before {l2}, wait until the flag is raised (a `cuda.atomic.cas` loop) then "
    "`cuda.threadfence()`",
)
TRITON = Language(
    name="Triton",
    barrier="`tl.debug_barrier()`",
    agents="programs",
    threads="programs",
    atomic_update="`tl.atomic_add({b} + offsets, v)`, or the atomic of the update "
    "(`tl.atomic_max`, `tl.atomic_or`, a `tl.atomic_cas` loop)",
    handoff='a release after {l1} (`tl.atomic_xchg(flag, 1, sem="release", '
    'scope="gpu")`) and an acquire of the same flag before {l2} (a '
    '`tl.atomic_cas(flag, 1, 1, sem="acquire", scope="gpu")` loop)',
)
OPENCL = Language(
    name="OpenCL C",
    barrier="`barrier(CLK_LOCAL_MEM_FENCE)`",
    agents="work-groups",
    threads="work-items",
    atomic_update="`atomic_add(&{b}[i], v)`, or the atomic of the update (`atomic_max`, "
    "`atomic_or`, an `atomic_cmpxchg` loop)",
    handoff="a release after {l1} (`atomic_store_explicit(&flag, 1, memory_order_release, "
    "memory_scope_device)`, OpenCL 2.0) and an acquire of the same flag before {l2} "
    "(an `atomic_load_explicit(&flag, memory_order_acquire, memory_scope_device)` loop)",
)

_PRODUCERS = (
    (re.compile(r"numba", re.I), NUMBA),
    (re.compile(r"triton", re.I), TRITON),
    (re.compile(r"oclgrind|opencl", re.I), OPENCL),
)
"""The recorders' producer texts (``tracerace ... record: numba-cuda ... simulator``,
``... record: triton ... interpreter``, ``tracerace oclgrind plugin``) by language."""


@functools.lru_cache(maxsize=64)
def language_of(producer: str | None) -> Language:
    """The language of a trace's producer; CUDA C++ for any other (the CUDA tool,
    the GPU tracer imports, hand-written traces)."""
    for pattern, language in _PRODUCERS:
        if producer and pattern.search(producer):
            return language
    return CUDA


@dataclass(frozen=True)
class Hint:
    """A fix hint: ``text``; ``site``: the site text of the line the change goes at."""

    text: str
    site: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "site": self.site}


def line_of(site: str | None, fallback: str) -> str:
    """``matmul.cu:104`` of ``matmul.cu:104 LDGSTS.E.128``; the whole site when it
    names no line; ``fallback`` without a site."""
    if not site:
        return fallback
    m = _SITE_LINE.match(site)
    return m.group(1) if m else site


class _Words:
    """The two lines of a finding, as a hint names them, in the producer's language."""

    def __init__(self, v: FindingView) -> None:
        self.v = v
        meta = v.meta
        self.lang = language_of(meta.producer)
        self.site2 = meta.site_text(v.site)
        self.site1 = meta.site_text(v.prev_site) if v.has_first else None
        self.l2 = line_of(self.site2, f"row {v.row:,}")
        self.l1 = line_of(
            self.site1, f"row {v.prev_row:,}" if v.has_first else "the earlier access"
        )

    def barrier(self, n: int | None = None) -> str:
        """A barrier of the block (of id ``n``, when the language names ids)."""
        lang = self.lang
        if lang is OPENCL and self.v.space == int(Space.GLOBAL):
            return "`barrier(CLK_GLOBAL_MEM_FENCE)`"
        if n is not None and lang.barrier_id is not None:
            return lang.barrier_id.format(n=n)
        return lang.barrier

    def obj_name(self) -> str:
        """The finding's sync object (a flag, an mbarrier) by the element a buffer
        declares at its address (``counter[0]``), else by the address."""
        v = self.v
        for space in (int(Space.GLOBAL), int(Space.SHARED)):
            element = v.meta.describe_bytes(space, v.obj, v.launch)
            if element is not None:
                return f"`{element}`"
        return v.obj_hex


def _update(v: FindingView, w: _Words, buffer: str | None) -> Hint:
    """A race of a read-modify-write by many threads: an atomic update."""
    what = f"`{buffer}`" if buffer else "these bytes"
    read, write = v.update
    where = f"at {write}" if read == write else f"read at {read} and written at {write}"
    site = w.site1 if v.kind == int(HazardKind.RAW) else w.site2
    example = w.lang.atomic_update.format(b=buffer or "x")
    return Hint(
        f"make the read-modify-write of {what} {where} one atomic update: many "
        f"{w.lang.threads} read and write these bytes there and overwrite each other's "
        f"updates; "
        f"{example} (a barrier would order the threads, not make each update whole)",
        site,
    )


def _race(v: FindingView, w: _Words, buffer: str | None) -> Hint | None:
    if v.prev_launch != v.launch:
        return None  # a checker bug (see explain): nothing to fix in the kernel
    if v.update:
        return _update(v, w, buffer)
    if v.code == reasons.RACE_WEAK_SYNC:
        rel, acq, need, how = reasons.weak_sync_parts(v.aux)
        flag = f"flag {w.obj_name()}"
        if how == reasons.WEAK_RELAXED:
            return Hint(
                f"make the atomic on {flag} that {v.thread_of()} does before {w.l2} an "
                f"acquire of {scope_name(need)} scope (or follow it with an acquire "
                f"fence of {scope_name(need)} scope): it reads the release of "
                f"{v.thread_of(True)} but, relaxed, orders nothing",
                w.site2,
            )
        block = w.lang.agents[:-1]  # "block", "program", "work-group"
        where = f"another {block}" if need >= int(Scope.DEVICE) else f"another {scope_name(acq)}"
        if acq < need:
            text = (
                f"widen the acquire on {flag} before {w.l2} to {scope_name(need)} scope: the "
                f"release it reads, by {v.thread_of(True)}, is in {where}"
            )
            if rel < need:
                text += f"; widen that release (after {w.l1}) to {scope_name(need)} scope too"
            return Hint(text, w.site2)
        return Hint(
            f"widen the release on {flag} after {w.l1} to {scope_name(need)} scope: the "
            f"acquire that reads it, by {v.thread_of()}, is in {where}",
            w.site1,
        )
    if v.code == reasons.RACE_UNFENCED_BARRIER:
        memory = Space(v.space).name.lower()
        opencl = _OPENCL_FENCE.get(v.space)
        return Hint(
            f"make barrier {v.bar_obj} fence {memory} memory too (its generation "
            f"{v.bar_gen} orders {w.l1} before {w.l2} for every thread only then"
            + (f"; {opencl} in OpenCL)" if opencl else ")"),
            None,
        )
    if v.is_async(True) and not v.is_async(False):
        return Hint(
            f"wait for the async copy issued at {w.l1} to complete (its "
            f"cp.async.wait_group, or the mbarrier it completes), then a barrier, "
            f"before {w.l2}",
            w.site2,
        )
    if v.is_async(False):
        return Hint(
            f"put a barrier between {w.l1} and the copy issued at {w.l2}: the copy "
            f"starts when it is issued",
            w.site2,
        )
    if v.prev_block != v.block:
        lang = w.lang
        return Hint(
            f"{lang.agents} {v.prev_block} and {v.block} must be ordered: "
            f"{lang.handoff.format(l1=w.l1, l2=w.l2)}; or end the kernel between them "
            f"(a launch boundary orders everything)",
            w.site2,
        )
    barrier = next((b for b in (v.bar_obj, v.prev_bar_obj) if b >= 0), None)
    if barrier is not None and (v.bar_gen != NO_GENERATION or v.prev_bar_gen != NO_GENERATION):
        return Hint(
            f"add a barrier between {w.l1} and {w.l2}: barrier {barrier}, which this "
            f"block already uses ({w.barrier(barrier)}), reached by every thread of "
            f"the block",
            w.site2,
        )
    after = {
        "war": "the read is done",
        "raw": "the data is written",
        "waw": "the first write is done",
    }[HazardKind(v.kind).label]
    return Hint(
        f"order {w.l1} before {w.l2}: a barrier both threads reach between them "
        f"({w.barrier()}), or a signal after {w.l1} ({after}) that "
        f"{v.thread_of(launch=False)} waits for before {w.l2}",
        w.site2,
    )


def _uninit_read(v: FindingView, w: _Words, buffer: str | None) -> Hint:
    what = buffer or {
        int(Space.SHARED): "this shared memory",
        int(Space.LOCAL): "this local memory",
    }.get(v.space, "these bytes")
    if v.space == int(Space.SHARED):
        return Hint(
            f"initialize {what} before {w.l2}: nothing (no store, copy or TMA load) "
            f"wrote these bytes in this launch; write every element the read covers, "
            f"then a barrier (a copy that should fill it may be missing)",
            w.site2,
        )
    if v.space == int(Space.LOCAL):
        return Hint(
            f"initialize {what} before {w.l2}: the thread reads it before writing it", w.site2
        )
    return Hint(
        f"initialize {what} before {w.l2}: write it from the host (a copy or memset) "
        f"or in an earlier kernel, or in this one before a barrier or release that "
        f"orders the read",
        w.site2,
    )


def _async_inflight(v: FindingView, w: _Words, buffer: str | None) -> Hint:
    other = v.prev_thread != v.thread or v.prev_block != v.block
    then = (
        f"; {v.thread_of(True)} issued it, so the wait is theirs: follow it with a barrier "
        f"before {v.thread_of()} goes on"
        if other
        else ""
    )
    if v.code == reasons.INFLIGHT_CP_ASYNC:
        group = f"group {v.aux}" if v.aux >= 0 else "the group (not committed yet: commit it)"
        return Hint(
            f"`cp.async.wait_group 0` (or `cp.async.wait_all`) before {w.l2}: {group} "
            f"issued at {w.l1} is still in flight{then}",
            w.site2,
        )
    if v.code == reasons.INFLIGHT_BULK_STORE:
        group = f"bulk group {v.aux}" if v.aux >= 0 else "the bulk group (commit it)"
        return Hint(
            f"`cp.async.bulk.wait_group.read 0` before {w.l2}: {group} of the store "
            f"issued at {w.l1} is still reading its source{then}",
            w.site2,
        )
    if v.code == reasons.INFLIGHT_TMA_LOAD:
        what = ASYNC_STORES.get(v.prev_op, "TMA load")
        return Hint(
            f"`mbarrier` wait on {w.obj_name()} phase {v.aux} (parity {v.aux & 1}) before "
            f"{w.l2}: the {what} issued at {w.l1} completes that phase",
            w.site2,
        )
    return Hint(f"wait for the async copy issued at {w.l1} before {w.l2}", w.site2)


def _proxy_fence(v: FindingView, w: _Words, buffer: str | None) -> Hint:
    if v.code == reasons.PROXY_CP_ASYNC_DEST and v.prev_op in ASYNC_STORES:
        wait_site = v.meta.site_text(v.aux)
        wait = line_of(wait_site, "the first mbarrier wait on the store's phase")
        return Hint(
            f"`fence.proxy.async` after {wait} (the wait that retires the "
            f"{ASYNC_STORES[v.prev_op]}) "
            f"before the async-proxy access at {w.l2}, by the thread of that wait",
            wait_site,
        )
    if v.code == reasons.PROXY_CP_ASYNC_MBAR_DEST:
        wait_site = v.meta.site_text(v.aux)
        wait = line_of(wait_site, "the first mbarrier wait on the phase the copies arrived on")
        return Hint(
            f"`fence.proxy.async` after {wait} (the wait that retires the cp.async copy) "
            f"before the async-proxy access at {w.l2}, by the thread of that wait",
            wait_site,
        )
    if v.code == reasons.PROXY_CP_ASYNC_DEST:
        wait_site = v.meta.site_text(v.aux)
        wait = line_of(wait_site, "the cp.async wait that retires the copy")
        return Hint(
            f"`fence.proxy.async` after {wait} (the retiring wait) before the "
            f"async-proxy access at {w.l2}, by {v.thread_of(True)}",
            wait_site,
        )
    return Hint(
        f"`fence.proxy.async` after {w.l1} (the generic write), before the barrier or "
        f"release that orders it with the async-proxy access at {w.l2}",
        w.site1,
    )


def _sync_alias(v: FindingView, w: _Words, buffer: str | None) -> Hint:
    return Hint(
        f"give each hand-off its own flag: flag {v.obj} carries the signal at {w.l1} "
        f"and the wait at {w.l2} of another protocol; move one of the protocols to a "
        f"flag id nothing else uses",
        w.site1,
    )


def _barrier_mismatch(v: FindingView, w: _Words, buffer: str | None) -> Hint | None:
    if v.op in CLUSTER_ARRIVALS:
        if v.code == reasons.BAR_ARG_DISAGREES:
            return Hint(
                f"count every thread of cluster {v.obj} in each `barrier.cluster.arrive`: "
                f"{w.l2} passes another count than the {v.aux} of {w.l1}",
                w.site2,
            )
        if v.code == reasons.BAR_INCOMPLETE:
            return Hint(
                f"make every thread of cluster {v.obj} arrive at the cluster barrier "
                f"(only {v.aux} arrived, the last at {w.l2}): none may skip "
                f"`barrier.cluster.arrive` or exit before it",
                w.site2,
            )
        return None
    if v.code == reasons.BAR_ARG_DISAGREES:
        return Hint(
            f"pass the same thread count to every arrival at barrier {v.obj}: {w.l2} "
            f"passes another than the {v.aux} of {w.l1}",
            w.site2,
        )
    if v.code == reasons.BAR_INCOMPLETE:
        return Hint(
            f"make every thread of block {v.block} reach barrier {v.obj} at {w.l2} (only "
            f"{v.aux} arrived): move it out of divergent code and before any early "
            f"return",
            w.site2,
        )
    return None


def _mbarrier_misuse(v: FindingView, w: _Words, buffer: str | None) -> Hint | None:
    bar = w.obj_name()
    if v.code == reasons.MBAR_BEFORE_INIT:
        return Hint(
            f"`mbarrier.init` on {bar} before {w.l2} (then a fence and a barrier so "
            f"every thread sees it initialized)",
            w.site2,
        )
    if v.code == reasons.MBAR_REINIT:
        return Hint(f"`mbarrier.inval` on {bar} before re-initializing it at {w.l2}", w.site2)
    if v.code == reasons.MBAR_ARRIVAL_UNDERFLOW:
        return Hint(
            f"initialize {bar} with the number of arrivals each phase gets: the "
            f"{v.op_label} at {w.l2} is one more than its count",
            w.site2,
        )
    if v.code == reasons.MBAR_TX_UNDERFLOW:
        return Hint(
            f"`mbarrier.expect_tx` on {bar} for every byte the copies complete, before {w.l2}",
            w.site2,
        )
    if v.code == reasons.MBAR_DROP_UNDERFLOW:
        return Hint(
            f"drop each participant from {bar} once: the {v.op_label} at {w.l2} drops "
            f"more arrivals than its init count left",
            w.site2,
        )
    if v.code == reasons.MBAR_PHASE_NEVER_COMPLETED:
        return Hint(
            f"make the arrivals and transaction bytes on {bar} reach what its init and "
            f"expect_tx set before the wait at {w.l2}, or do not wait on that phase",
            w.site2,
        )
    return None


_HINTS: dict[HazardKind, Callable[[FindingView, _Words, str | None], Hint | None]] = {
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


def hint(
    finding: Mapping[str, Any],
    meta: TraceMeta | None = None,
    buffer: str | None = None,
    update: tuple[str, str] | None = None,
) -> Hint | None:
    """The fix hint of ``finding`` (a ``FINDING_DTYPE`` record or a dict of its
    fields), or None when the trace shows nothing to change (a checker bug).
    ``update``: the (read line, write line) of the read-modify-write by many
    threads the race is part of (:func:`updates`): an atomic update is the fix."""
    v = FindingView(finding, meta)
    v.update = update
    v.op_label = Op(v.op).label if v.op in Op._value2member_map_ else f"op{v.op}"
    return _HINTS[HazardKind(int(v.kind))](v, _Words(v), buffer)


def buffer_name(element: str | None) -> str | None:
    """``out`` of ``out[1, 2]``; None for None."""
    if element is None:
        return None
    cut = element.find("[")
    return element if cut < 0 else element[:cut]


def link_hint(flag: int, site: str | None) -> Hint:
    """The hint of a race linked to a crossed wait of its thread (``sync_alias``)."""
    return Hint(
        f"give each hand-off its own flag: the wait on flag {flag} at "
        f"{line_of(site, 'its wait')} consumed another protocol's signal; once each "
        f"protocol has its own flag, that wait orders this access",
        site,
    )


def site_lines(sites: tuple[str, ...]) -> tuple[list[str], np.ndarray]:
    """The distinct lines (:func:`line_of`) of ``sites``, and for each site the
    index of its line, then -1 (for "no site"). Vectorised (Arrow's regex):
    a trace may have a site per instruction."""
    import pyarrow as pa
    import pyarrow.compute as pc

    texts = pa.array(sites, pa.string())
    found = pc.extract_regex(texts, _SITE_LINE_PATTERN)
    # A site that names no line (a null match) is its own line, as in line_of.
    encoded = pc.if_else(pc.is_valid(found), found.field("line"), texts).dictionary_encode()
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return encoded.dictionary.to_pylist(), np.append(ids, -1)


def updates(
    kind: np.ndarray, line1: np.ndarray, line2: np.ndarray, plain: np.ndarray
) -> dict[int, tuple[int, int]]:
    """The races that are part of a read-modify-write of the same bytes by many
    threads, among a report's groups: for each such group's index, the (read
    line, write line) of the update. Per group: its ``kind``, the lines of its
    earlier and later access (``line1``, ``line2``: ids, -1 for none) and whether
    both accesses are ``plain`` reads or writes (not atomics, not copies).

    An update is a line whose writes race with each other (``waw`` with both
    accesses at that line) and a read racing with them (``war`` from the read's
    line to it, or ``raw`` from it to the read's line): each thread read the
    bytes, then wrote them, while another did the same (a histogram's
    ``h[k] += 1`` on one line, or ``v = h[k]`` ... ``h[k] = v + 1``). Races
    where the later thread writes other bytes than it read (a stencil's
    ``x[i] = x[i - 1]``) have no such ``waw``. Vectorised: a report may have
    hundreds of thousands of groups."""
    ok = plain & (line1 >= 0) & (line2 >= 0)
    waw = ok & (kind == int(HazardKind.WAW)) & (line1 == line2)
    war, raw = ok & (kind == int(HazardKind.WAR)), ok & (kind == int(HazardKind.RAW))
    written = np.unique(line1[waw])
    # Each candidate read, as (read line, write line).
    read = np.where(war, line1, line2)
    write = np.where(war, line2, line1)
    pair = (war | raw) & np.isin(write, written)
    if not pair.any():
        return {}
    out = {int(g): (int(read[g]), int(write[g])) for g in np.flatnonzero(pair)}
    first_read: dict[int, int] = {}
    for r, w in sorted(set(out.values())):
        first_read.setdefault(w, r)
    for g in np.flatnonzero(waw & np.isin(line1, list(first_read))).tolist():
        out[g] = (first_read[int(line1[g])], int(line1[g]))
    return out


PLAIN_OPS = np.array([int(Op.READ), int(Op.WRITE)])
"""The ops that can be half of a non-atomic update (:func:`updates`)."""
