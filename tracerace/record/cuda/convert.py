"""The CUDA tool library's record stream (:mod:`.stream`), turned into a v1 trace.

The mapping:

- a launch -> ``launch`` (in the order the tool saw them; the tool waits for
  each launch to finish before the next one runs, so launches do not overlap);
  a block -> ``block``, a thread -> ``thread`` (linear indexes, so warp ``w``
  holds threads ``32 w`` to ``32 w + 31`` as in the format);
- an access -> ``read`` / ``write``; one that both reads and writes ->
  ``atomic``, relaxed (the API reports no memory order), scope block in shared
  memory, system for a system-scope atomic, device otherwise; prefetches are
  dropped. Shared and local addresses are offsets in their windows, which is
  what the format's shared (per block) and local (per thread) spaces hold;
- ``__syncthreads`` / ``bar.sync`` -> ``bar_sync`` on the barrier's index with
  the threads it expects (every thread of the block when the API says 0);
  threads that exited count as arrived when every other thread of the block
  has reached a block-wide barrier (a ``bar_arrive`` each, and a warning);
- ``__syncwarp(mask)`` -> ``warp_sync`` with the mask;
- ``cp.async`` -> ``cp_async`` (destination shared, source global), its commit
  and wait -> ``cp_async_commit`` / ``cp_async_wait`` N. A zero-filling copy
  (source size 0) copies from :data:`ZERO_SOURCE` in the thread's local
  memory, which an ``init`` defines first, so its shared bytes stay in flight
  until the wait as the hardware has them;
- ``cuda::barrier`` / mbarrier actions -> ``mbar_init`` (expected arrivals),
  ``mbar_arrive`` (count), ``mbar_arrive_drop`` (count; the later phases
  expect that many fewer arrivals), ``mbar_wait`` (the parity of the phase the
  arrivals so far completed), ``mbar_inval``;
- a cluster launch (the launch record's cluster dimensions) -> ``cluster``
  of every row, clusters numbered x first as blocks are; ``barrier.cluster``
  arrive and wait -> ``cluster_arrive`` (every thread of the cluster taking
  part; the API does not tell ``.relaxed`` apart, so each is a release, with a
  warning) and ``cluster_wait``; a distributed shared memory access ->
  ``read`` / ``write`` / ``atomic`` (cluster scope) in shared memory with
  ``peer`` the owning block;
- bulk stores and reductions from the block's shared memory into global
  memory -> ``tma_store`` / ``bulk_reduce``, one row per warp issue (the API
  reports them once per active lane); the API reports neither their
  commit_group nor their wait_group, so they stay in flight to the end of
  the launch (a warning says so);
- host copies and memsets into device memory, and whole managed or
  host-mapped allocations (the CPU writes them unseen) -> ``init`` before the
  next launch; global memory outside every device allocation the tool saw
  (module globals, memory imported from elsewhere) -> ``init`` of the bytes a
  launch touches, at its start, since nothing shows who wrote them.

Every trace warns that tensor TMA and warpgroup MMA operands have no callback.

Refused (a :class:`TraceError`, nothing written): a stream that ends inside a
launch or a record, a record of a kind this reader does not know, a launch
whose records overflowed the device buffer, instructions the format or the
API cannot express (:data:`.stream.UNFOLLOWED_NAMES`: ``ldmatrix``, warpgroup
MMA, ``tcgen05.commit``, ``st.bulk``, ``cp.async.mbarrier.arrive``), bytes
completing on an mbarrier (bulk copies into shared memory, multicast or not,
bulk reductions into shared memory, ``st.async``, ``red.async``: the API
does not report the ``expect_tx`` bytes a phase waits for), a cluster record
in a launch without cluster dimensions (but for a bulk copy naming only its
issuer's shared memory: the driver reports none for a launch without
clusters), a rank outside the cluster, an mbarrier action on another block's
mbarrier, and an mbarrier wait that returned before any phase of its barrier
completed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from glob import escape, glob
from math import prod

import numpy as np

from ...errors import TraceError
from ...trace.columns import ADDRESS_END
from ...trace.ops import Op, Scope, Sem
from ...trace.ops import Space as TSpace
from ...trace.schema import FENCE_ALL, SITE_NONE
from ...trace.writer import TraceWriter
from ..events import Rows
from ..sites import SiteIndex
from .lines import find_nvdisasm, line_namer
from .stream import (
    BULK_MBARRIER,
    BULK_NAMES,
    BULK_WARP_UNIFORM,
    PEER_MBARRIER,
    RANK_SHIFT,
    RECORD_DTYPE,
    UNFOLLOWED_NAMES,
    AccessFlag,
    BarrierAction,
    Bulk,
    Kind,
    Launch,
    Space,
    StreamBatches,
    decode_launch,
    stream_error,
)

PRODUCER = "tracerace cuda tool (Compute Sanitizer API)"
ZERO_SOURCE = 0xFFFF_FFFF_0000_0000
"""Local address of the zeros a zero-filling ``cp.async`` copies (beyond any local window)."""

DEVICE_KINDS = (
    Kind.ACCESS,
    Kind.BARRIER,
    Kind.SYNCWARP,
    Kind.BLOCK_EXIT,
    Kind.CP_ASYNC,
    Kind.CP_COMMIT,
    Kind.CP_WAIT,
    Kind.MBARRIER,
    Kind.UNFOLLOWED,
    Kind.CLUSTER_ARRIVE,
    Kind.CLUSTER_WAIT,
    Kind.PEER_ACCESS,
    Kind.BULK,
)
CLUSTER_KINDS = (Kind.CLUSTER_ARRIVE, Kind.CLUSTER_WAIT, Kind.PEER_ACCESS, Kind.BULK)
"""Device records that name the cluster: they need the launch's cluster dimensions."""
KNOWN_KINDS = np.array(sorted(int(k) for k in Kind), dtype=np.uint8)

ATOMIC_WARNING = (
    "launch {launch} ({kernel}): atomics are recorded as relaxed (device scope; "
    "block in shared memory; system for .sys atomics): the Compute Sanitizer "
    "API reports neither their memory order nor fences, so what they order "
    "(flags, locks, __threadfence) is not followed, and races between "
    "accesses ordered that way are reported all the same"
)
FENCE_WARNING = (
    "fences (__threadfence, fence.*, membar) and the memory order of loads and "
    "stores (ld.acquire, st.release, volatile) are not reported by the Compute "
    "Sanitizer API: a kernel that orders memory with them alone shows races "
    "it does not have"
)
EXIT_WARNING = (
    "launch {launch} ({kernel}): block {block}: {n} thread(s) had exited when "
    "the others completed the barrier at {site}; they are counted as arrived, "
    "as the GPU does"
)
EMPTY_WARNING = "launch {launch} ({kernel}): no memory access was recorded"
TENSOR_WARNING = (
    "tensor TMA (cp.async.bulk.tensor loads and stores, multicast included) and "
    "warpgroup MMA operands have no Compute Sanitizer callback: a kernel's copies "
    "of that kind are missing from the trace, and so are the races on their bytes"
)
CLUSTER_ARRIVE_WARNING = (
    "launch {launch} ({kernel}): cluster barrier arrivals are recorded as "
    "barrier.cluster.arrive (a release): the Compute Sanitizer API does not tell "
    "the .relaxed form apart, so a race that only a relaxed arrival leaves open "
    "is not reported"
)
BULK_GROUP_WARNING = (
    "launch {launch} ({kernel}): the Compute Sanitizer API reports bulk stores and "
    "reductions into global memory (cp.async.bulk, cp.reduce.async.bulk) but not "
    "their commit_group and wait_group, nor fence.proxy.async: each stays in "
    "flight to the end of the launch, and every generic write of its source "
    "lacks a proxy fence, so an async_inflight or proxy_fence finding on one may "
    "be one the kernel's wait_group or fence prevents"
)

ROW_DEFAULTS = {
    "peer": -1,  # the row's block
    "op": 0,
    "launch": 0,
    "block": 0,
    "thread": 0,
    "space": int(TSpace.GLOBAL),
    "addr": 0,
    "size": 0,
    "addr2": 0,
    "space2": int(TSpace.GLOBAL),
    "obj": 0,
    "arg": 0,
    "scope": int(Scope.DEVICE),
    "sem": int(Sem.RELAXED),
    "site": SITE_NONE,
    "fence_spaces": FENCE_ALL,
}


SiteNamer = Callable[[Launch, int], str]
"""``(launch, pc)`` -> the site text of an instruction of that launch's kernel."""


def offset_site(launch: Launch, pc: int) -> str:
    """``kernel+0x1a0``: the instruction's offset in its kernel (no line information)."""
    return f"{launch.name}+0x{max(pc - launch.pc, 0):x}" if pc else launch.name


def find_streams(prefix: str) -> list[str]:
    return sorted(glob(f"{escape(prefix)}.*.trc"))


MAX_IDS = 1 << 32
"""Block and thread ids are uint32 columns."""
BATCH_RECORDS = 1 << 18
"""Stream records converted at a time (12 MiB of records): with two passes over
the stream, the conversion's memory does not grow with the kernel's length."""


def convert(
    prefix: str,
    out: str,
    *,
    site_of: SiteNamer | None = None,
    warnings: tuple[str, ...] = (),
    batch_records: int = BATCH_RECORDS,
) -> tuple[int, int, tuple[str, ...]]:
    """Write the v1 trace of the one process that launched kernels under ``prefix``;
    (events, launches, warnings). ``warnings`` are added to the trace's own. Sites
    are ``site_of(launch, pc)``; by default source lines where the module's cubin
    has them (:mod:`.lines`), else instruction offsets. The stream is read
    twice, ``batch_records`` at a time: once to check it and learn its launches
    (:func:`scan`), once to write the rows (:class:`Converter`)."""
    paths = find_streams(prefix)
    if not paths:
        raise TraceError(
            "the program did not initialise CUDA under the tool (or the tool "
            "library could not load: see the messages above); nothing was "
            "recorded",
            path="cuda backend",
            rule="record",
        )
    launched = [p for p in paths if _launches_kernels(p, batch_records)]
    if len(launched) > 1:
        raise TraceError(
            f"{len(launched)} processes launched CUDA kernels; record one at a time",
            path="cuda backend",
            rule="record",
        )
    if not launched:
        raise TraceError("the program launched no CUDA kernel", path="cuda backend", rule="record")
    path = launched[0]
    plan = scan(path, batch_records)
    if site_of is None:
        site_of = line_namer(
            module_cubins(plan.modules, plan.texts, path), offset_site, find_nvdisasm()
        )
    converter = Converter(plan, Sites(site_of), path)
    with TraceWriter(out, producer=PRODUCER) as writer:
        for rec, index in StreamBatches(path, batch_records):
            cols = converter.columns(rec, index)
            if len(cols["ts"]):
                writer.extend(**cols)
        found = plan.warnings + converter.warnings
        if plan.launches:
            found.append(FENCE_WARNING)
            found.append(TENSOR_WARNING)
        all_warnings = tuple(dict.fromkeys((*warnings, *found)))
        writer.sites = converter.sites.texts  # grows while converting
        for text in all_warnings:
            writer.warn(text)
        for x in plan.launches:
            writer.launch_dims(x.launch, x.grid, x.block, x.name)
        rows = writer.rows
    return rows, len(plan.launches), all_warnings


def _launches_kernels(path: str, batch: int) -> bool:
    return any(np.any(rec["kind"] == Kind.LAUNCH) for rec, _ in StreamBatches(path, batch))


def module_cubins(rec: np.ndarray, texts: dict[int, str], path: str) -> dict[int, str]:
    """Module id -> the cubin the tool wrote beside the stream at ``path``."""
    modules = rec[rec["kind"] == Kind.MODULE]
    folder = os.path.dirname(path)
    found = {
        int(m["thread"]): os.path.join(folder, texts.get(int(m["size"]), ""))
        for m in modules
        if texts.get(int(m["size"]))
    }
    return {module: cubin for module, cubin in found.items() if os.path.isfile(cubin)}


@dataclass
class Plan:
    """What the first pass over a stream learns: the strings, the launches, the
    modules, and per launch the global bytes nothing defined and its warnings."""

    texts: dict[int, str]
    launches: list[Launch]
    modules: np.ndarray
    untracked: dict[int, list[tuple[int, int]]]
    warnings: list[str]


@dataclass
class _Open:
    """The launch the first pass is in."""

    launch: Launch
    start: int  # stream position of its LAUNCH record
    allocs: list[tuple[int, int]]
    device: int = 0
    accesses: bool = False
    atomics: bool = False
    cluster_arrivals: bool = False
    bulk_stores: bool = False
    spans: set = field(default_factory=set)


def scan(path: str, batch: int) -> Plan:
    """The first pass: check the stream's launches and learn what the second needs.

    Refuses what the tool reported it could not do (an ERROR record), a stream
    that ends inside a launch, a launch whose device buffer overflowed, and
    device records outside launches."""
    batches = StreamBatches(path, batch)
    launches: list[Launch] = []
    modules: list[np.ndarray] = []
    allocs: list[tuple[int, int]] = []
    untracked: dict[int, list[tuple[int, int]]] = {}
    flags: list[tuple[bool, bool, bool, bool]] = []
    error: tuple[int, int] | None = None
    state: _Open | None = None
    texts = batches.texts

    def segment(rec: np.ndarray, index: np.ndarray, lo: int, hi: int) -> None:
        """Records ``lo:hi`` of a batch, none of them a launch's start or end."""
        part = rec[lo:hi]
        unknown = ~np.isin(part["kind"], KNOWN_KINDS)
        if unknown.any():
            i = int(np.argmax(unknown))
            raise stream_error(
                path,
                f"a record of kind {int(part['kind'][i])}, which this tracerace does not "
                f"know (it reads stream versions 1 and 2)",
                row=int(index[lo + i]),
            )
        sized = np.isin(
            part["kind"],
            [Kind.ACCESS, Kind.CP_ASYNC, Kind.HOST_INIT, Kind.ALLOC, Kind.PEER_ACCESS],
        )
        room = np.uint64(ADDRESS_END) - part["size"].astype(np.uint64)
        to_global = (part["kind"] == Kind.BULK) & np.isin(
            part["aux"], [Bulk.SHARED_TO_GLOBAL, Bulk.REDUCE_TO_GLOBAL]
        )
        from_global = (part["kind"] == Kind.CP_ASYNC) | (
            (part["kind"] == Kind.BULK) & (part["aux"] == Bulk.GLOBAL_TO_SHARED)
        )
        past = ((sized | to_global) & (part["addr"] > room)) | (
            from_global & (part["addr2"] > room)
        )
        if past.any():
            i = int(np.argmax(past))
            raise stream_error(
                path,
                f"a {Kind(int(part['kind'][i])).name} record's bytes pass "
                f"the end of the 64-bit address space (the tool writes "
                f"none)",
                row=int(index[lo + i]),
            )
        device = np.isin(part["kind"], DEVICE_KINDS)
        if state is None:
            if device.any():
                raise stream_error(
                    path,
                    "a device record outside any launch",
                    row=int(index[lo + int(np.argmax(device))]),
                )
            return
        state.device += int(device.sum())
        kind, pflags = part["kind"], part["flags"]
        access = (kind == Kind.ACCESS) & ((pflags & AccessFlag.PREFETCH) == 0)
        peer = kind == Kind.PEER_ACCESS
        both = AccessFlag.READ | AccessFlag.WRITE
        state.accesses |= bool((access | peer | (kind == Kind.BULK)).any())
        state.atomics |= bool(((access | peer) & ((pflags & both) == both)).any())
        state.cluster_arrivals |= bool((kind == Kind.CLUSTER_ARRIVE).any())
        state.bulk_stores |= bool(
            (
                (kind == Kind.BULK)
                & np.isin(part["aux"], [Bulk.SHARED_TO_GLOBAL, Bulk.REDUCE_TO_GLOBAL])
            ).any()
        )
        glob_ = access & (part["space"] == Space.GLOBAL)
        if glob_.any():
            a = part["addr"][glob_].astype(np.uint64)
            e = a + part["size"][glob_].astype(np.uint64)
            inside = np.zeros(len(a), dtype=bool)
            for low, high in state.allocs:
                inside |= (a >= low) & (e <= high)
            state.spans.update(zip(a[~inside].tolist(), e[~inside].tolist()))

    for rec, index in batches:
        kind = rec["kind"]
        errors = np.flatnonzero(kind == Kind.ERROR)
        if error is None and len(errors):
            error = (int(index[errors[0]]), int(rec["size"][errors[0]]))
        marks = np.flatnonzero(
            np.isin(kind, [Kind.LAUNCH, Kind.LAUNCH_END, Kind.ALLOC, Kind.MODULE])
        ).tolist()
        lo = 0
        for i in marks:
            segment(rec, index, lo, i)
            lo = i + 1
            k, row = int(kind[i]), int(index[i])
            if k == Kind.ALLOC:
                allocs.append((int(rec["addr"][i]), int(rec["addr"][i]) + int(rec["size"][i])))
            elif k == Kind.MODULE:
                modules.append(rec[i : i + 1])
            elif k == Kind.LAUNCH:
                n = len(launches)
                if state is not None:
                    raise _ended(path, state.launch)
                launch = decode_launch(rec[i], texts)
                if min(launch.grid + launch.block) < 1:
                    raise stream_error(
                        path,
                        f"launch {n} ({launch.name}) has grid "
                        f"{launch.grid} and block {launch.block}: a "
                        f"dimension of 0",
                        row=row,
                    )
                if any(launch.cluster) and any(
                    c == 0 or g % c for g, c in zip(launch.grid, launch.cluster)
                ):
                    raise stream_error(
                        path,
                        f"launch {n} ({launch.name}) has grid {launch.grid} in clusters "
                        f"of {launch.cluster}: the clusters do not tile the grid",
                        row=row,
                    )
                if prod(launch.grid) > MAX_IDS or launch.threads_per_block > MAX_IDS:
                    raise stream_error(
                        path,
                        f"launch {n} ({launch.name}) has grid "
                        f"{launch.grid} and block {launch.block}: more "
                        f"than 2^32 blocks or threads",
                        row=row,
                    )
                if int(rec["block"][i]) != n:
                    raise stream_error(
                        path,
                        f"launch {int(rec['block'][i])} where launch {n} was expected",
                        row=row,
                    )
                launches.append(launch)
                state = _Open(launch, row, list(allocs))
            else:
                if state is None:
                    raise stream_error(path, "the end of a launch that did not begin", row=row)
                n, launch = state.launch.launch, state.launch
                produced, capacity = int(rec["arg"][i]), int(rec["addr"][i])
                if produced > capacity:
                    raise TraceError(
                        f"launch {n} ({launch.name}) produced {produced:,} records but the "
                        f"device buffer holds {capacity:,}; the rest were lost, so nothing "
                        f"was written: set TRACERACE_CUDA_BUFFER_MB to at least "
                        f"{-(-produced * RECORD_DTYPE.itemsize // (1 << 20)) + 1} and record "
                        f"again",
                        path=path,
                        rule="record",
                    )
                if state.device != produced:
                    raise stream_error(
                        path,
                        f"launch {n} holds {state.device} device records, its end says {produced}",
                        row=row,
                    )
                untracked[n] = merge(sorted(state.spans))
                flags.append(
                    (state.accesses, state.atomics, state.cluster_arrivals, state.bulk_stores)
                )
                state = None
        segment(rec, index, lo, len(rec))
    if error is not None:
        message = texts.get(error[1], "an unknown error")
        raise TraceError(
            f"the CUDA tool stopped recording: {message}; nothing was written",
            path=path,
            row=error[0],
            rule="record",
        )
    if state is not None:
        raise _ended(path, state.launch)
    warnings = []
    for launch, (accesses, atomics, arrivals, stores) in zip(launches, flags):
        named = {"launch": launch.launch, "kernel": launch.name}
        if not accesses:
            warnings.append(EMPTY_WARNING.format(**named))
        if atomics:
            warnings.append(ATOMIC_WARNING.format(**named))
        if arrivals:
            warnings.append(CLUSTER_ARRIVE_WARNING.format(**named))
        if stores:
            warnings.append(BULK_GROUP_WARNING.format(**named))
    module_records = np.concatenate(modules) if modules else np.zeros(0, dtype=RECORD_DTYPE)
    return Plan(texts, launches, module_records, untracked, warnings)


def _ended(path: str, launch: Launch) -> TraceError:
    return TraceError(
        f"the program ended while launch {launch.launch} ({launch.name}) was "
        "running or being recorded; nothing was written",
        path=path,
        rule="record",
    )


class Converter:
    """The second pass: stream records to trace columns, batch after batch. What
    spans batches (the launch in progress, barrier generations, mbarrier phases,
    the row count) is kept here."""

    def __init__(self, plan: Plan, sites: Sites, path: str) -> None:
        self.plan = plan
        self.sites = sites
        self.path = path
        self.warnings: list[str] = []
        self.begun = 0  # LAUNCH records before this batch
        self.open = 0  # 1 inside a launch at the batch's start
        self.rows = 0
        self.mbarriers: dict[tuple[int, int], MBarrier] = {}
        self.barriers = BarrierState()
        self.lanes: dict[tuple[int, int], tuple[tuple, set[int]]] = {}

    def columns(self, rec: np.ndarray, index: np.ndarray) -> dict[str, np.ndarray]:
        plan, sites, path = self.plan, self.sites, self.path
        kind = rec["kind"]
        starts = (kind == Kind.LAUNCH).astype(np.int64)
        ends = (kind == Kind.LAUNCH_END).astype(np.int64)
        begun = self.begun + np.cumsum(starts)
        depth = self.open + np.cumsum(starts) - (np.cumsum(ends) - ends)  # an end is inside
        launch_of = np.where(depth > 0, begun - 1, -1)
        host = kind == Kind.HOST_INIT
        launch_of[host] = begun[host]  # a host init belongs to the launch after it
        if len(rec):
            self.begun = int(begun[-1])
            self.open = int(depth[-1] - ends[-1])
        launches = plan.launches
        refuse_unfollowed(rec, index, launches, launch_of, path, sites.site_of)
        clusters = Clusters(launches)
        refuse_cluster(rec, index, launches, launch_of, clusters, path, sites.site_of)
        parity = mbar_parities(rec, index, launches, launch_of, sites, path, self.mbarriers)
        repeated = warp_repeats(rec, self.lanes)
        direct, key = direct_rows(rec, launches, launch_of, sites, parity, clusters, repeated)
        extra = Rows(ROW_DEFAULTS)
        barriers(rec, launches, launch_of, sites, extra, self.warnings, self.barriers)
        for i in np.flatnonzero(kind == Kind.LAUNCH).tolist():
            n = int(launch_of[i])
            for begin, end in plan.untracked.get(n, ()):
                extra.add(2 * i + 1, op=Op.INIT, launch=n, addr=begin, size=end - begin)
        cols = extra.merged(direct, key)
        cols["peer"] = np.where(cols["peer"] < 0, cols["block"], cols["peer"])
        cols["cluster"] = clusters.of(cols["launch"], cols["block"])
        cols["ts"] += np.uint64(self.rows)
        self.rows += len(cols["ts"])
        return cols


class Sites:
    """Site texts by (launch, pc), numbered in first-use order (:class:`..sites.SiteIndex`)."""

    def __init__(self, site_of: SiteNamer) -> None:
        self.site_of = site_of
        self.index = SiteIndex()

    @property
    def texts(self) -> list[str]:
        return self.index.texts

    def add(self, text: str) -> int:
        return self.index.add(text)

    def of(self, launch: Launch, pc: int) -> int:
        return self.index.of((launch.launch, pc), lambda: self.site_of(launch, pc))

    def text(self, launch: Launch, pc: int) -> str:
        return self.index.text(self.of(launch, pc))


def refuse_unfollowed(rec, index, launches, launch_of, path, site_of) -> None:
    """Fail on the first record tracerace cannot express, naming it, the kernel and the site:
    an unfollowed instruction, an access in an unknown space, or an mbarrier action on
    another block's mbarrier."""
    kind, aux = rec["kind"], rec["aux"]
    peer_mbarrier = (kind == Kind.MBARRIER) & ((rec["flags"] & PEER_MBARRIER) != 0)
    bad = (
        (kind == Kind.UNFOLLOWED)
        | ((kind == Kind.ACCESS) & (rec["space"] > Space.LOCAL))
        | peer_mbarrier
    )
    hits = np.flatnonzero(bad)
    if not len(hits):
        return
    i = int(hits[0])
    launch = launches[int(launch_of[i])]
    if kind[i] == Kind.UNFOLLOWED:
        what = UNFOLLOWED_NAMES.get(int(aux[i]), f"Sanitizer instruction {int(aux[i])}")
    elif peer_mbarrier[i]:
        what = (
            f"an mbarrier action on the mbarrier of block rank {int(rec['space'][i])} "
            "of its cluster (a shared::cluster mbarrier)"
        )
    else:
        what = f"an access in memory space {int(rec['space'][i])}"
    raise TraceError(
        f"launch {launch.launch} ({launch.name}) executed {what} at "
        f"{site_of(launch, int(rec['pc'][i]))} (block {int(rec['block'][i])}, "
        f"thread {int(rec['thread'][i])}), which tracerace cannot follow; "
        "nothing was written",
        path=path,
        row=int(index[i]),
        rule="record",
    )


def direct_rows(
    rec: np.ndarray,
    launches: list[Launch],
    launch_of: np.ndarray,
    sites: Sites,
    parity: np.ndarray,
    clusters: Clusters,
    repeated: np.ndarray,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Columns of the records that are one row each, and their sort keys."""
    kind, flags = rec["kind"], rec["flags"]
    peer_access = kind == Kind.PEER_ACCESS
    access = np.isin(kind, [Kind.ACCESS, Kind.PEER_ACCESS]) & ((flags & AccessFlag.PREFETCH) == 0)
    rw = flags & (AccessFlag.READ | AccessFlag.WRITE)
    atomic = access & (rw == (AccessFlag.READ | AccessFlag.WRITE))
    cp = kind == Kind.CP_ASYNC
    zero_fill = cp & (rec["addr2"] == 0)
    mbar = (kind == Kind.MBARRIER) & np.isin(rec["aux"], list(MBAR_OPS))
    host = (kind == Kind.HOST_INIT) & (launch_of < len(launches))
    bulk = (kind == Kind.BULK) & np.isin(rec["aux"], list(BULK_OPS)) & ~repeated
    keep = (
        access
        | np.isin(
            kind,
            [
                Kind.BARRIER,
                Kind.SYNCWARP,
                Kind.CP_COMMIT,
                Kind.CP_WAIT,
                Kind.CLUSTER_ARRIVE,
                Kind.CLUSTER_WAIT,
            ],
        )
        | cp
        | mbar
        | host
        | bulk
    )
    idx = np.flatnonzero(keep)
    r = rec[idx]
    k = kind[idx]
    n = len(idx)
    op = np.zeros(n, dtype=np.int64)
    op[rw[idx] == AccessFlag.READ] = Op.READ
    op[rw[idx] == AccessFlag.WRITE] = Op.WRITE
    op[atomic[idx]] = Op.ATOMIC
    op[k == Kind.BARRIER] = Op.BAR_SYNC
    op[k == Kind.SYNCWARP] = Op.WARP_SYNC
    op[k == Kind.CP_ASYNC] = Op.CP_ASYNC
    op[k == Kind.CP_COMMIT] = Op.CP_ASYNC_COMMIT
    op[k == Kind.CP_WAIT] = Op.CP_ASYNC_WAIT
    op[k == Kind.HOST_INIT] = Op.INIT
    op[k == Kind.CLUSTER_ARRIVE] = Op.CLUSTER_ARRIVE
    op[k == Kind.CLUSTER_WAIT] = Op.CLUSTER_WAIT
    for action, code in MBAR_OPS.items():
        op[(k == Kind.MBARRIER) & (r["aux"] == action)] = code
    is_bulk = bulk[idx]
    for instruction, code in BULK_OPS.items():
        op[is_bulk & (r["aux"] == instruction)] = code
    is_access = access[idx]
    is_peer = peer_access[idx]
    tspace = np.where(is_access, r["space"], TSpace.GLOBAL).astype(np.int64)
    tspace[k == Kind.CP_ASYNC] = TSpace.SHARED
    tspace[is_peer] = TSpace.SHARED
    scope = np.full(n, Scope.DEVICE, dtype=np.int64)
    scope[atomic[idx] & (r["space"] == Space.SHARED)] = Scope.BLOCK
    scope[atomic[idx] & is_peer] = Scope.CLUSTER
    scope[atomic[idx] & ((r["flags"] & AccessFlag.ATOMSYS) != 0)] = Scope.SYSTEM
    lsize = np.array([launch.threads_per_block for launch in launches] or [0], dtype=np.int64)
    lid = launch_of[idx]
    arg = np.zeros(n, dtype=np.int64)
    bar = k == Kind.BARRIER
    arg[bar] = np.where(r["arg"][bar] == 0, lsize[lid[bar]], r["arg"][bar])
    arg[k == Kind.SYNCWARP] = r["arg"][k == Kind.SYNCWARP]
    arg[k == Kind.CP_WAIT] = r["arg"][k == Kind.CP_WAIT]
    arrivals = k == Kind.CLUSTER_ARRIVE
    arg[arrivals] = lsize[lid[arrivals]] * clusters.blocks[lid[arrivals]]
    arrive = (k == Kind.MBARRIER) & np.isin(
        r["aux"],
        [BarrierAction.INIT, *DROPS, BarrierAction.ARRIVE, BarrierAction.ARRIVE_NOCOMPLETE],
    )
    arg[arrive] = r["arg"][arrive]
    wait = (k == Kind.MBARRIER) & (r["aux"] == BarrierAction.WAIT)
    arg[wait] = parity[idx][wait]
    obj = np.zeros(n, dtype=np.int64).astype(np.uint64)
    obj[bar] = r["addr"][bar]
    obj[k == Kind.MBARRIER] = r["addr"][k == Kind.MBARRIER]
    sized = is_access | (k == Kind.CP_ASYNC) | (k == Kind.HOST_INIT) | is_bulk
    addr = np.where(sized, r["addr"], 0).astype(np.uint64)
    space2 = np.full(n, TSpace.GLOBAL, dtype=np.int64)
    space2[zero_fill[idx]] = TSpace.LOCAL
    space2[is_bulk] = TSpace.SHARED  # the bulk ops kept read the block's own shared memory
    addr2 = np.where((k == Kind.CP_ASYNC) | is_bulk, r["addr2"], 0).astype(np.uint64)
    addr2[is_bulk] &= np.uint64(OFFSET_MASK)
    addr2[zero_fill[idx]] = ZERO_SOURCE
    peer = np.full(n, -1, dtype=np.int64)
    if is_peer.any():
        peer[is_peer] = clusters.peer(lid[is_peer], r["block"][is_peer], r["arg"][is_peer])
    site = np.full(n, SITE_NONE, dtype=np.int64)
    device = k != Kind.HOST_INIT
    for j in np.flatnonzero(device & (r["pc"] != 0)).tolist():
        site[j] = sites.of(launches[int(lid[j])], int(r["pc"][j]))
    cols = {
        "peer": peer,
        "op": op,
        "launch": lid,
        "block": np.where(device, r["block"], 0).astype(np.int64),
        "thread": np.where(device, r["thread"], 0).astype(np.int64),
        "space": tspace,
        "addr": addr,
        "size": np.where(sized, r["size"], 0).astype(np.int64),
        "addr2": addr2,
        "space2": space2,
        "obj": obj,
        "arg": arg,
        "scope": scope,
        "sem": np.zeros(n, dtype=np.int64),
        "site": site,
        "fence_spaces": np.full(n, FENCE_ALL, dtype=np.int64),
    }
    return cols, idx.astype(np.int64) * 2


OFFSET_MASK = (1 << RANK_SHIFT) - 1
"""The offset part of a cluster address."""
BULK_OPS = {Bulk.SHARED_TO_GLOBAL: Op.TMA_STORE, Bulk.REDUCE_TO_GLOBAL: Op.BULK_REDUCE}
"""The BULK instructions written as rows: those with no mbarrier, from the
issuing block's shared memory into global memory."""


class Clusters:
    """The launches' clusters: per launch id, the grid and cluster dimensions
    (a launch whose stream gives none has clusters of one block)."""

    def __init__(self, launches: list[Launch]) -> None:
        self.grid = np.array([x.grid for x in launches] or [(1, 1, 1)], dtype=np.int64)
        dims = np.array([x.cluster for x in launches] or [(1, 1, 1)], dtype=np.int64)
        self.known: np.ndarray = np.all(dims > 0, axis=1)
        self.dims = np.where(self.known[:, None], dims, 1)
        self.blocks = self.dims.prod(axis=1)

    def _coords(self, launch: np.ndarray, block: np.ndarray) -> np.ndarray:
        g = self.grid[launch]
        b = np.asarray(block, dtype=np.int64)
        return np.stack([b % g[:, 0], (b // g[:, 0]) % g[:, 1], b // (g[:, 0] * g[:, 1])], axis=1)

    def of(self, launch: np.ndarray, block: np.ndarray) -> np.ndarray:
        """The cluster id of each block: clusters numbered as blocks are, x first."""
        launch = np.asarray(launch, dtype=np.int64)
        c, d = self._coords(launch, block), self.dims[launch]
        n = self.grid[launch] // d
        q = c // d
        return q[:, 0] + n[:, 0] * (q[:, 1] + n[:, 1] * q[:, 2])

    def peer(self, launch: np.ndarray, block: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """The block of rank ``rank`` in the cluster of ``block``."""
        launch = np.asarray(launch, dtype=np.int64)
        rank = np.asarray(rank, dtype=np.int64)
        c, d, g = self._coords(launch, block), self.dims[launch], self.grid[launch]
        origin = c - c % d
        at = origin + np.stack(
            [rank % d[:, 0], (rank // d[:, 0]) % d[:, 1], rank // (d[:, 0] * d[:, 1])], axis=1
        )
        return at[:, 0] + g[:, 0] * (at[:, 1] + g[:, 1] * at[:, 2])

    def rank(self, launch: int, block: int) -> int:
        c = self._coords(np.array([launch]), np.array([block]))[0]
        d = self.dims[launch]
        r = c % d
        return int(r[0] + d[0] * (r[1] + d[1] * r[2]))


def cluster_ranks(rec: np.ndarray) -> list[tuple[np.ndarray, str]]:
    """The ranks a record names, each with what it names: a peer access's owner,
    a BULK record's shared destination, source and mbarrier."""
    kind, aux = rec["kind"], rec["aux"]
    bulk = kind == Kind.BULK
    shared_dst = bulk & ~np.isin(aux, [Bulk.SHARED_TO_GLOBAL, Bulk.REDUCE_TO_GLOBAL])
    shared_src = bulk & np.isin(
        aux,
        [
            Bulk.SHARED_TO_GLOBAL,
            Bulk.REDUCE_TO_GLOBAL,
            Bulk.SHARED_TO_SHARED,
            Bulk.REDUCE_TO_SHARED,
        ],
    )
    with_mbar = bulk & np.isin(aux, list(BULK_MBARRIER))
    none = np.int64(-1)
    return [
        (np.where(kind == Kind.PEER_ACCESS, rec["arg"].astype(np.int64), none), "the memory"),
        (
            np.where(shared_dst, (rec["addr"] >> RANK_SHIFT).astype(np.int64), none),
            "the destination",
        ),
        (np.where(shared_src, (rec["addr2"] >> RANK_SHIFT).astype(np.int64), none), "the source"),
        (np.where(with_mbar, (rec["arg"] >> RANK_SHIFT).astype(np.int64), none), "the mbarrier"),
    ]


def refuse_cluster(rec, index, launches, launch_of, clusters: Clusters, path, site_of) -> None:
    """Fail on the first record that names the cluster in a launch whose cluster
    dimensions the stream does not give (a bulk copy naming only its issuer's
    shared memory excepted), that names a block outside its cluster,
    that reads another block's shared memory where PTX allows only the issuer's,
    or that completes bytes on an mbarrier (whose expected transaction bytes the
    API does not report)."""
    kind = rec["kind"]
    picked = np.isin(kind, CLUSTER_KINDS)
    if not picked.any():
        return
    lid = np.where(picked, launch_of, 0)
    ranks = cluster_ranks(rec)
    # A launch the driver gave no cluster dimensions for (on an H200, every launch
    # without clusters) may still hold bulk copies: a BULK record whose shared
    # sides all name rank 0 names the issuing block's own memory (its source is
    # always the issuer's), whatever the cluster's size, so it needs none.
    own_only = (kind == Kind.BULK) & np.all([(r == -1) | (r == 0) for r, _ in ranks], axis=0)
    unknown = picked & ~clusters.known[lid] & ~own_only
    own = np.zeros(len(rec), dtype=np.int64)
    size = clusters.blocks[lid]
    outside = np.zeros(len(rec), dtype=bool)
    for rank, _ in ranks:
        outside |= ~unknown & (rank >= size)
    foreign_source = np.zeros(len(rec), dtype=bool)
    src_rank = ranks[2][0]
    for i in np.flatnonzero(~unknown & (src_rank >= 0) & ~outside).tolist():
        own[i] = clusters.rank(int(lid[i]), int(rec["block"][i]))
        foreign_source[i] = src_rank[i] != own[i]
    tx = (kind == Kind.BULK) & np.isin(rec["aux"], list(BULK_MBARRIER))
    bad = unknown | outside | foreign_source | tx
    if not bad.any():
        return
    i = int(np.argmax(bad))
    launch = launches[int(launch_of[i])]
    block, thread = int(rec["block"][i]), int(rec["thread"][i])
    where = f"{site_of(launch, int(rec['pc'][i]))} (block {block}, thread {thread})"
    k = int(kind[i])
    if k == Kind.BULK:
        what = BULK_NAMES.get(Bulk(int(rec["aux"][i])), "a bulk copy")
    else:
        what = {
            Kind.CLUSTER_ARRIVE: "a cluster barrier arrive",
            Kind.CLUSTER_WAIT: "a cluster barrier wait",
            Kind.PEER_ACCESS: "a distributed shared memory access",
        }[Kind(k)]
    head = f"launch {launch.launch} ({launch.name}): {what} at {where}"
    if unknown[i]:
        message = (
            f"{head}, but the launch record gives no cluster dimensions (a stream of "
            "version 1, or a driver that did not report them): which blocks share the "
            "cluster, and whose shared memory a cluster address names, is unknown"
        )
        rule = "record"
    elif outside[i]:
        rank, named = next((r[i], named) for r, named in ranks if r[i] >= size[i])
        message = (
            f"{head} names block rank {int(rank)} for {named}, outside its cluster of "
            f"{int(size[i])} blocks {launch.cluster}"
        )
        rule = "cuda-stream"
    elif foreign_source[i]:
        message = (
            f"{head} reads the shared memory of block rank {int(src_rank[i])} of its "
            f"cluster, not its own (rank {int(own[i])}): PTX copies from the issuing "
            "block's shared memory only"
        )
        rule = "cuda-stream"
    else:
        mbar = int(rec["arg"][i])
        message = (
            f"{head} completes {int(rec['size'][i])} bytes on the mbarrier at shared "
            f"offset 0x{mbar & OFFSET_MASK:x} of block rank {mbar >> RANK_SHIFT} of the "
            "cluster, but the Compute Sanitizer API does not report the transaction bytes "
            "an mbarrier phase expects (mbarrier.expect_tx), so which phase these bytes "
            "complete, and when a wait on it may return, is unknown"
        )
        rule = "record"
    raise TraceError(f"{message}; nothing was written", path=path, row=int(index[i]), rule=rule)


def warp_repeats(
    rec: np.ndarray, lanes: dict[tuple[int, int], tuple[tuple, set[int]]]
) -> np.ndarray:
    """A mask of the BULK records that repeat another lane's report of the same
    warp-uniform instruction: the API reports a bulk copy once per active lane of
    the warp, every lane with the same operands. A record is a repeat when the
    previous bulk record of its warp had the same operands and came from another
    lane that has not reported this issue yet (a lane reporting twice is a second
    issue). ``lanes`` carries each warp's latest issue from batch to batch."""
    repeated = np.zeros(len(rec), dtype=bool)
    kind = rec["kind"]
    picked = np.flatnonzero(
        ((kind == Kind.BULK) & np.isin(rec["aux"], list(BULK_WARP_UNIFORM))) | (kind == Kind.LAUNCH)
    )
    for i in picked.tolist():
        if kind[i] == Kind.LAUNCH:
            lanes.clear()
            continue
        block, thread = int(rec["block"][i]), int(rec["thread"][i])
        operands = tuple(
            int(rec[name][i])
            for name in ("aux", "pc", "addr", "addr2", "size", "arg", "space", "flags")
        )
        warp = (block, thread // 32)
        last = lanes.get(warp)
        if last is not None and last[0] == operands and thread not in last[1]:
            last[1].add(thread)
            repeated[i] = True
        else:
            lanes[warp] = (operands, {thread})
    return repeated


MBAR_OPS = {
    BarrierAction.INIT: Op.MBAR_INIT,
    BarrierAction.ARRIVE: Op.MBAR_ARRIVE,
    BarrierAction.ARRIVE_NOCOMPLETE: Op.MBAR_ARRIVE,
    BarrierAction.WAIT: Op.MBAR_WAIT,
    BarrierAction.INVALIDATE: Op.MBAR_INVAL,
    BarrierAction.ARRIVE_DROP: Op.MBAR_ARRIVE_DROP,
    BarrierAction.ARRIVE_DROP_NOCOMPLETE: Op.MBAR_ARRIVE_DROP,
}
DROPS = (BarrierAction.ARRIVE_DROP, BarrierAction.ARRIVE_DROP_NOCOMPLETE)


@dataclass
class Generation:
    """A block barrier's generation in progress: who arrived, and where."""

    arrived: set[int] = field(default_factory=set)
    pc: int = 0


@dataclass
class BarrierState:
    """Per launch: the threads that exited (by block), the block barriers'
    generations in progress, the threads whose zero source is defined."""

    exited: dict[int, set[int]] = field(default_factory=dict)
    open_: dict[tuple[int, int], Generation] = field(default_factory=dict)
    zeroed: set[tuple[int, int]] = field(default_factory=set)


def barriers(
    rec,
    launches,
    launch_of,
    sites: Sites,
    rows: Rows,
    warnings: list[str],
    state: BarrierState | None = None,
) -> None:
    """Rows for threads that exited before a block-wide barrier the rest of their
    block completed (a ``bar_arrive`` each, right after the record that
    completed the generation), and the zero sources of zero-filling copies.
    ``state`` carries what is in progress from one batch of records to the next."""
    kind = rec["kind"]
    picked = np.flatnonzero(
        np.isin(kind, [Kind.BARRIER, Kind.BLOCK_EXIT, Kind.LAUNCH])
        | ((kind == Kind.CP_ASYNC) & (rec["addr2"] == 0))
    )
    state = state or BarrierState()
    exited, open_, zeroed = state.exited, state.open_, state.zeroed
    for i, k, block, thread, addr, count, pc in zip(
        picked.tolist(),
        kind[picked].tolist(),
        rec["block"][picked].tolist(),
        rec["thread"][picked].tolist(),
        rec["addr"][picked].tolist(),
        rec["arg"][picked].tolist(),
        rec["pc"][picked].tolist(),
    ):
        if k == Kind.LAUNCH:
            exited.clear()
            open_.clear()
            zeroed.clear()
            continue
        launch = launches[int(launch_of[i])]
        if k == Kind.CP_ASYNC:
            if (block, thread) not in zeroed:
                zeroed.add((block, thread))
                rows.add(
                    2 * i - 1,
                    op=Op.INIT,
                    launch=launch.launch,
                    block=block,
                    thread=thread,
                    space=TSpace.LOCAL,
                    addr=ZERO_SOURCE,
                    size=256,
                )
            continue
        gone = exited.setdefault(block, set())
        if k == Kind.BLOCK_EXIT:
            gone.add(thread)
            for (b, index), gen in list(open_.items()):
                if b == block:
                    complete(rows, i, launch, block, index, gen, gone, open_, sites, warnings)
            continue
        if count not in (0, launch.threads_per_block):
            continue  # a barrier of some of the threads: exits do not complete it
        gen = open_.setdefault((block, addr), Generation(pc=pc))
        gen.arrived.add(thread)
        complete(rows, i, launch, block, addr, gen, gone, open_, sites, warnings)


def complete(
    rows,
    i,
    launch: Launch,
    block,
    index,
    gen: Generation,
    gone: set[int],
    open_,
    sites: Sites,
    warnings: list[str],
) -> None:
    """Close ``gen`` when its arrivals and the exited threads make up the block."""
    missing = gone - gen.arrived
    if len(gen.arrived) + len(missing) < launch.threads_per_block:
        return
    del open_[(block, index)]
    if not missing:
        return
    where = sites.text(launch, gen.pc)
    site = sites.add(f"(thread exited before the barrier at {where})")
    rows.arrive(
        2 * i + 1,
        missing,
        launch=launch.launch,
        block=block,
        obj=index,
        arg=launch.threads_per_block,
        site=site,
    )
    warnings.append(
        EXIT_WARNING.format(
            launch=launch.launch, kernel=launch.name, block=block, n=len(missing), site=where
        )
    )


def mbar_parities(
    rec,
    index,
    launches,
    launch_of,
    sites: Sites,
    path: str,
    state: dict[tuple[int, int], MBarrier] | None = None,
) -> np.ndarray:
    """The parity of each mbarrier wait (0 elsewhere): that of the phase the
    arrivals recorded so far completed last. The API reports that a wait
    happened, not the parity it waited for. ``state`` (the mbarriers of the
    launch in progress) carries from one batch of records to the next."""
    kind, aux = rec["kind"], rec["aux"]
    parity = np.zeros(len(rec), dtype=np.int64)
    picked = np.flatnonzero((kind == Kind.MBARRIER) | (kind == Kind.LAUNCH))
    state = {} if state is None else state
    for i in picked.tolist():
        if kind[i] == Kind.LAUNCH:
            state.clear()
            continue
        block, addr, action = int(rec["block"][i]), int(rec["addr"][i]), int(aux[i])
        bar = state.setdefault((block, addr), MBarrier())
        if action == BarrierAction.INIT:
            if int(rec["arg"][i]) == 0:
                launch = launches[int(launch_of[i])]
                raise TraceError(
                    f"launch {launch.launch} ({launch.name}): the init of mbarrier 0x{addr:x} "
                    f"at {sites.text(launch, int(rec['pc'][i]))} reports no expected arrival "
                    "count (the Compute Sanitizer API gives none for mbarrier.init on sm_90 "
                    "and newer, as in cuda::barrier), so when its phases complete is unknown; "
                    "nothing was written",
                    path=path,
                    row=int(index[i]),
                    rule="record",
                )
            bar.expected = bar.pending = int(rec["arg"][i])
            bar.completed = 0
        elif action in (BarrierAction.ARRIVE, BarrierAction.ARRIVE_NOCOMPLETE, *DROPS):
            count = max(int(rec["arg"][i]), 1)
            bar.pending -= count
            if action in DROPS:  # later phases expect that many fewer arrivals
                bar.expected = max(bar.expected - count, 0)
            if bar.pending <= 0 and bar.expected:
                bar.completed += 1
                bar.pending = bar.expected
        elif action == BarrierAction.WAIT:
            if bar.completed == 0:
                launch = launches[int(launch_of[i])]
                raise TraceError(
                    f"launch {launch.launch} ({launch.name}): a wait on mbarrier "
                    f"0x{addr:x} at {sites.text(launch, int(rec['pc'][i]))} returned before "
                    "any of its phases completed by the arrivals recorded (the API reports "
                    "no transaction counts); nothing was written",
                    path=path,
                    row=int(index[i]),
                    rule="record",
                )
            parity[i] = (bar.completed - 1) & 1
    return parity


def merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted byte ranges with overlapping and adjacent ones joined."""
    out: list[list[int]] = []
    for begin, end in spans:
        if out and begin <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([begin, end])
    return [(b, e) for b, e in out]


@dataclass
class MBarrier:
    """An mbarrier as its recorded arrivals drive it."""

    expected: int = 0
    pending: int = 0
    completed: int = 0
