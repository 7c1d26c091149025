"""The Oclgrind plugin's output, turned into a v1 trace.

The plugin (``oclgrind_plugin/tracerace_plugin.cpp``) writes, per process,
``PREFIX.PID.events`` (32-byte records in Oclgrind's execution order) and
``PREFIX.PID.meta`` (sites, launches, buffers). The mapping to the format:

- work-group (linear index) -> ``block``; work-item (linear local id) -> ``thread``;
- global and constant memory -> global space; local memory -> shared space
  (per block); private memory -> local space (per agent);
- an atomic -> ``atomic``, relaxed (OpenCL 1.2 atomics order nothing by
  themselves), scope ``block`` in local memory and ``device`` in global memory;
- ``mem_fence`` / ``read_mem_fence`` / ``write_mem_fence`` -> ``fence`` with
  sem acq_rel / acquire / release, scope device when its flags include global
  memory, block otherwise;
- a work-item reaching ``barrier`` / ``work_group_barrier`` /
  ``wait_group_events`` -> ``bar_sync`` on barrier 0 with the group's size as
  the count (OpenCL has one barrier per work-group), and ``fence_spaces`` from
  the barrier's flags: ``CLK_LOCAL_MEM_FENCE`` -> shared (2),
  ``CLK_GLOBAL_MEM_FENCE`` (or the image fence) -> global (1);
  ``wait_group_events`` fences both, as Oclgrind does;
- a barrier that Oclgrind released with work-items missing (barrier
  divergence: they finished without reaching it): each missing work-item
  arrives there (``bar_arrive``) counting only the work-items that did arrive.
  The generation completes as it did in Oclgrind, so the happens-before is the
  simulated one, and the disagreeing count is reported as ``barrier_mismatch``;
- ``async_work_group_copy`` (and the strided form): the first work-item of the
  group to call it (Oclgrind's order) issues it: one ``cp_async`` per element
  (destination ``addr``/``space``, source ``addr2``/``space2``) and a
  ``cp_async_commit``, at its call. When that work-item reaches a
  ``wait_group_events`` naming the copy's event, a ``cp_async_wait`` retires
  the copy just before its ``bar_sync``, so the copy is in flight from the
  issue to the wait and everything after the wait's barrier sees it. (Oclgrind
  itself moves the data at the wait; those group accesses are not rows.)
- a by-value (struct) argument's private copy, which Oclgrind fills without a
  store when it creates the work-item -> ``init`` of the work-item's local
  space before its first event;
- host writes (buffer creation with data, writes, maps for writing) ->
  ``init`` before the next launch; those after the last launch are dropped.

A fatal Oclgrind error during a launch (``unreachable`` reached, an
unsupported instruction) abandons the rest of the launch even when the host
program exits 0; :func:`convert` then refuses to write a trace.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from glob import escape, glob

import numpy as np

from ...errors import TraceError
from ...trace.columns import ADDRESS_END
from ...trace.ops import Op, Scope, Sem, Space
from ...trace.schema import FENCE_ALL, FENCE_GLOBAL, FENCE_SHARED
from ...trace.writer import TraceWriter
from ..events import Rows
from ..sites import SiteIndex

RECORD_DTYPE = np.dtype(
    [
        ("kind", "u1"),
        ("space", "u1"),
        ("detail", "u1"),
        ("variant", "u1"),
        ("size", "<u4"),
        ("group", "<u4"),
        ("item", "<u4"),
        ("address", "<u8"),
        ("site", "<u4"),
        ("count", "<u4"),
    ]
)
"""``struct Record`` of the plugin (packed, little-endian, 32 bytes)."""

NO_SITE = 0xFFFFFFFF
BARRIER_ID = 0
PRODUCER = "tracerace oclgrind plugin"


class Kind(IntEnum):
    """Record kinds; mirrors ``enum Kind`` in tracerace_plugin.cpp."""

    LOAD = 0
    STORE = 1
    ATOMIC = 2
    HOST_WRITE = 3
    ARG_INIT = 4
    ARRIVE = 10
    RELEASE = 11
    FENCE = 20
    GROUP_LOAD = 30
    GROUP_STORE = 31
    COPY_ISSUE = 32
    WAIT_EVENTS = 33
    KERNEL_BEGIN = 40
    KERNEL_END = 41


class BarrierKind(IntEnum):
    """The ``variant`` of an ARRIVE; mirrors ``enum BarrierKind`` in the plugin."""

    FLAGS = 0  # barrier / work_group_barrier: ``detail`` holds its flags
    WAIT = 1  # wait_group_events
    UNKNOWN = 2  # another call that waits at the barrier


class OclSpace(IntEnum):
    """Oclgrind's address spaces (``oclgrind::AddressSpace``)."""

    PRIVATE = 0
    GLOBAL = 1
    CONSTANT = 2
    LOCAL = 3


LOCAL_MEM_FENCE, GLOBAL_MEM_FENCE, IMAGE_MEM_FENCE = 1, 2, 4
"""OpenCL's ``cl_mem_fence_flags`` bits."""

FENCE_SEM = np.array([Sem.ACQ_REL, Sem.ACQUIRE, Sem.RELEASE], dtype=np.uint8)
"""Fence semantics by the plugin's FenceKind: mem_fence, read_mem_fence, write_mem_fence."""

SPACE_OF = np.array([Space.LOCAL, Space.GLOBAL, Space.GLOBAL, Space.SHARED], dtype=np.uint8)
"""Trace space by Oclgrind address space."""

OP_OF_ACCESS = {
    Kind.LOAD: Op.READ,
    Kind.STORE: Op.WRITE,
    Kind.ATOMIC: Op.ATOMIC,
    Kind.HOST_WRITE: Op.INIT,
    Kind.ARG_INIT: Op.INIT,
}
ACCESS_KINDS = list(OP_OF_ACCESS)
DIRECT_KINDS = [*ACCESS_KINDS, Kind.ARRIVE, Kind.FENCE]
"""Records that become one row each (host writes only when a launch follows)."""


def fence_spaces(flags):
    """``fence_spaces`` of a barrier with OpenCL fence ``flags`` (int or array):
    local memory is tracerace's shared space; global and image memory its
    global space. Private memory is per work-item, so no bit is needed for it."""
    flags = np.asarray(flags)
    spaces = np.where(flags & LOCAL_MEM_FENCE, FENCE_SHARED, 0)
    spaces = spaces | np.where(flags & (GLOBAL_MEM_FENCE | IMAGE_MEM_FENCE), FENCE_GLOBAL, 0)
    return spaces.astype(np.int64)


@dataclass(frozen=True)
class CopyCall:
    """One work-item's ``async_work_group_copy`` call (a ``copy`` line of the meta file)."""

    dest: int
    src: int
    dest_space: int  # Oclgrind address spaces
    src_space: int
    element: int  # bytes per element
    count: int
    src_stride: int  # in elements
    dest_stride: int
    event: int

    @property
    def key(self) -> tuple:
        """What Oclgrind compares to match the calls of one copy (the site aside)."""
        return (
            self.dest,
            self.src,
            self.dest_space,
            self.element,
            self.count,
            self.src_stride,
            self.dest_stride,
        )


@dataclass
class Meta:
    """The plugin's text side table."""

    sites: list[str] = field(default_factory=list)
    kernels: dict[int, str] = field(default_factory=dict)  # launch -> kernel name
    buffers: list[dict] = field(default_factory=list)
    copies: dict[int, CopyCall] = field(default_factory=dict)
    waits: dict[int, tuple[int, ...]] = field(default_factory=dict)  # wait -> events
    fatal: list[tuple[int, str]] = field(default_factory=list)  # (launch, message)


ROW_DEFAULTS = {
    "op": 0,
    "launch": 0,
    "block": 0,
    "thread": 0,
    "space": int(Space.GLOBAL),
    "addr": 0,
    "size": 0,
    "addr2": 0,
    "space2": int(Space.GLOBAL),
    "obj": BARRIER_ID,
    "arg": 0,
    "scope": int(Scope.DEVICE),
    "sem": int(Sem.RELAXED),
    "site": NO_SITE,
    "fence_spaces": FENCE_ALL,
}
"""The columns this converter writes, with the values of a row that does not set them."""


BATCH_RECORDS = 1 << 18
"""Plugin records converted at a time (8 MiB of records, about 40 MiB of columns):
the memory a conversion needs, whatever the kernel's length."""
MAX_GROUP_SIZE = 1 << 16
"""The largest work-group a release record may name (Oclgrind's own limit is 1024)."""
MAX_COPY_ELEMENTS = 1 << 16
"""The most elements one async copy may name (each is a row; local memory is smaller)."""
SOURCE = "oclgrind backend"
"""What errors about the plugin's files name: the files are temporary."""


def convert(
    prefix: str,
    out: str,
    *,
    source_names: dict[str, str] | None = None,
    batch_records: int = BATCH_RECORDS,
) -> tuple[int, int]:
    """Write the v1 trace of the plugin output under ``prefix``; (events, launches).

    ``source_names`` renames source files in sites (Oclgrind calls a program
    built from a string ``input.cl``). A fatal Oclgrind error in a launch is
    a :class:`TraceError` (nothing is written). The records are read and
    written ``batch_records`` at a time, so memory does not grow with the run.
    The recorded program can write the plugin's files too: anything in them
    that the plugin does not write is a :class:`TraceError` naming the file,
    the record or line, and what is wrong.
    """
    events, meta = read_output(prefix)
    names = source_names or {}
    if meta.fatal:
        raise fatal_error(meta, names)
    sites = SiteIndex([rename_site(s, names) for s in meta.sites])
    with TraceWriter(out, producer=PRODUCER) as writer:
        writer.sites = sites.texts  # the converter appends to it (sites of added rows)
        for buf in buffers(meta):
            try:
                writer.buffer(
                    buf["name"],
                    buf["space"],
                    buf["base"],
                    buf["shape"],
                    buf["itemsize"],
                    launch=buf["launch"],
                )
            except ValueError as exc:
                raise bad_output("the side table", str(exc)[:200]) from None
        launches = 0
        if events is not None:
            launches = scan_records(events, batch_records, meta)
        converter = Converter(sites, meta, launches)
        if events is not None:
            for records in read_records(events, batch_records):
                cols = converter.columns(records)
                if len(cols["ts"]):
                    writer.extend(**cols)
        rows = writer.rows
    return rows, len(meta.kernels)


def fatal_error(meta: Meta, names: dict[str, str]) -> TraceError:
    """The error for the first fatal Oclgrind error: what, which work-item, where."""
    launch, message = meta.fatal[0]
    lines = [line.strip() for line in message.split(" | ") if line.strip()]
    what = lines[1] if len(lines) > 1 else "a fatal error"
    details = []
    for line in lines[2:]:
        entity = re.match(r"Entity:\s*(.*)", line)
        at = re.match(r"At line (\d+).* of (.*?):?$", line)
        if entity:
            details.append(f"work-item {entity.group(1)}")
        elif at:
            details.append(f"at {names.get(at.group(2), at.group(2))}:{at.group(1)}")
    where = f" ({', '.join(details)})" if details else ""
    kernel = meta.kernels.get(launch, "?")
    return TraceError(
        f"Oclgrind stopped kernel {kernel} (launch {launch}) with a fatal "
        f"error: {what}{where}; the rest of the launch never ran, so no trace "
        f"was written",
        path=SOURCE,
        rule="record",
    )


def bad_output(what: str, message: str) -> TraceError:
    """The error of a plugin file holding what the plugin does not write."""
    return TraceError(
        f"{what}: {message} (the plugin does not write this: the recorded "
        f"program wrote its files?)",
        path=SOURCE,
        rule="record",
    )


def read_output(prefix: str) -> tuple[str | None, Meta]:
    """The records file and side table of the one process that ran kernels
    (None and an empty table when no process did).

    The plugin creates its files when Oclgrind loads it, with the first OpenCL
    context: no files means the program made none (or the plugin did not load).
    """
    files = sorted(glob(f"{escape(prefix)}.*.events"))
    if not files:
        raise TraceError(
            "the program created no OpenCL context under Oclgrind (or "
            "Oclgrind could not load tracerace's plugin: see its messages "
            "above); nothing was recorded",
            path=SOURCE,
            rule="record",
        )
    ran = [f for f in files if _ran_kernels(f)]
    if len(ran) > 1:
        raise TraceError(
            f"{len(ran)} processes ran OpenCL kernels; record one at a time",
            path=SOURCE,
            rule="record",
        )
    if not ran:
        return None, Meta()
    return ran[0], read_meta(ran[0][: -len(".events")] + ".meta")


def read_records(path: str, batch: int) -> Iterator[np.ndarray]:
    """The records of ``path``, ``batch`` at a time."""
    size = RECORD_DTYPE.itemsize
    try:
        total = os.path.getsize(path)
        if total % size:
            raise bad_output(
                "the records file", f"{total} bytes is not a whole number of {size}-byte records"
            )
        with open(path, "rb") as f:
            while True:
                records = np.fromfile(f, dtype=RECORD_DTYPE, count=batch)
                if not len(records):
                    return
                yield records
    except OSError as exc:
        raise TraceError(
            f"cannot read the plugin's records: {exc.strerror or exc}", path=SOURCE, rule="record"
        ) from None


def _ran_kernels(path: str) -> bool:
    return any(np.any(r["kind"] == Kind.KERNEL_BEGIN) for r in read_records(path, BATCH_RECORDS))


def scan_records(path: str, batch: int, meta: Meta) -> int:
    """Check every record of ``path`` holds what the plugin writes; the number of
    launches (``KERNEL_BEGIN`` records)."""
    launches = 0
    first = 0
    nsites = len(meta.sites)
    for records in read_records(path, batch):
        problem = record_problem(records, launches, nsites, meta)
        if problem is not None:
            row, message = problem
            raise bad_output(f"the records file, record {first + row}", message)
        launches += int(np.sum(records["kind"] == Kind.KERNEL_BEGIN))
        first += len(records)
    return launches


_KNOWN_KIND = np.zeros(256, dtype=bool)
_KNOWN_KIND[[int(k) for k in Kind]] = True


def record_problem(
    rec: np.ndarray, launches_before: int, nsites: int, meta: Meta
) -> tuple[int, str] | None:
    """(index, why) of the first record the plugin would not write, or None."""
    kind = rec["kind"]
    found = []

    def first(mask: np.ndarray, describe) -> None:
        if mask.any():
            i = int(np.argmax(mask))
            found.append((i, describe(i)))

    first(~_KNOWN_KIND[kind], lambda i: f"unknown record kind {int(kind[i])}")
    begun = launches_before + np.cumsum(kind == Kind.KERNEL_BEGIN)
    first(
        (begun == 0) & (kind != Kind.HOST_WRITE),
        lambda i: f"a {Kind(int(kind[i])).name} record before any kernel began",
    )
    access = np.isin(kind, ACCESS_KINDS)
    first(
        access & (rec["space"] > OclSpace.LOCAL),
        lambda i: f"address space {int(rec['space'][i])} (Oclgrind has 0 to 3)",
    )
    room = np.uint64(ADDRESS_END) - rec["size"].astype(np.uint64)
    first(
        access & (rec["address"] > room),
        lambda i: (
            f"address {int(rec['address'][i]):#x} + size {int(rec['size'][i])} "
            f"passes the end of the 64-bit address space"
        ),
    )
    rowed = np.isin(kind, DIRECT_KINDS + [Kind.COPY_ISSUE, Kind.WAIT_EVENTS])
    first(
        rowed & (rec["site"] != NO_SITE) & (rec["site"] >= nsites),
        lambda i: f"site {int(rec['site'][i])}, and the side table has {nsites}",
    )
    first(
        (kind == Kind.RELEASE) & (rec["count"] > MAX_GROUP_SIZE),
        lambda i: f"a work-group of {int(rec['count'][i]):,} work-items",
    )
    copies = kind == Kind.COPY_ISSUE
    if copies.any():
        known = np.fromiter(meta.copies, dtype=np.int64, count=len(meta.copies))
        first(
            copies & ~np.isin(rec["count"], known),
            lambda i: f"async copy {int(rec['count'][i])}, which the side table lacks",
        )
    waits = kind == Kind.WAIT_EVENTS
    if waits.any():
        known = np.fromiter(meta.waits, dtype=np.int64, count=len(meta.waits))
        first(
            waits & ~np.isin(rec["count"], known),
            lambda i: f"wait {int(rec['count'][i])}, which the side table lacks",
        )
    return min(found) if found else None


META_FIELDS = {"site": 2, "kernel": 2, "buffer": 6, "copy": 10, "wait": 2, "fatal": 2}
"""Side-table line kinds and their least number of tab-separated fields after the kind."""


def read_meta(path: str) -> Meta:
    """Parse the tab-separated side table (``site``, ``kernel``, ``buffer``,
    ``copy``, ``wait`` and ``fatal`` lines); a line the plugin would not write is
    a :class:`TraceError`."""
    meta = Meta()
    sites: dict[int, str] = {}
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TraceError(
            f"cannot read the plugin's side table: {exc.strerror or exc}",
            path=SOURCE,
            rule="record",
        ) from None
    with f:
        for lineno, line in enumerate(_bounded_lines(f), 1):
            parts = line.rstrip("\n").split("\t")
            what = f"the side table, line {lineno}"
            need = META_FIELDS.get(parts[0])
            if need is None:
                raise bad_output(what, f"unknown line kind {parts[0][:40]!r}")
            if len(parts) - 1 < need:
                raise bad_output(what, f"a {parts[0]} line needs {need} fields or more")
            try:
                _meta_line(meta, sites, parts)
            except ValueError as exc:
                raise bad_output(what, f"a {parts[0]} line: {exc}") from None
    if sorted(sites) != list(range(len(sites))):
        missing = min(set(range(len(sites))) - set(sites))
        raise bad_output("the side table", f"site {missing} is missing")
    meta.sites = [sites[i] for i in range(len(sites))]
    return meta


MAX_META_LINE = 1 << 20
"""The longest side-table line read (a site is a file name and a line number)."""


def _bounded_lines(f) -> Iterator[str]:
    while True:
        line = f.readline(MAX_META_LINE + 1)
        if not line:
            return
        if len(line) > MAX_META_LINE:
            raise bad_output("the side table", f"a line longer than {MAX_META_LINE >> 20} MiB")
        yield line


def _number(text: str, low: int = 0, high: int = ADDRESS_END) -> int:
    """A decimal field within [low, high]; ``ValueError`` otherwise."""
    if not re.fullmatch(r"-?\d{1,20}", text):
        raise ValueError(f"{text[:40]!r} is not a number")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"{value} is out of range")
    return value


def _meta_line(meta: Meta, sites: dict[int, str], parts: list[str]) -> None:
    kind = parts[0]
    if kind == "site":
        index = _number(parts[1], high=NO_SITE - 1)
        if index in sites:
            raise ValueError(f"site {index} twice")
        sites[index] = "\t".join(parts[2:])
    elif kind == "kernel":
        meta.kernels[_number(parts[1], high=NO_SITE)] = parts[2]
    elif kind == "buffer":
        launch, name, space, base, size, itemsize = parts[1:7]
        if space not in ("global", "constant", "local"):
            raise ValueError(f"space {space[:40]!r}")
        base_, bytes_ = _number(base), _number(size)
        if base_ + bytes_ > ADDRESS_END:
            raise ValueError("the buffer passes the end of the 64-bit address space")
        meta.buffers.append(
            {
                "launch": _number(launch, high=NO_SITE),
                "name": name,
                "space": space,
                "base": base_,
                "bytes": bytes_,
                "itemsize": _number(itemsize, low=1, high=1 << 16),
            }
        )
    elif kind == "copy":
        ints = [_number(v) for v in parts[2:11]]
        call = CopyCall(*ints)
        if call.dest_space > OclSpace.LOCAL or call.src_space > OclSpace.LOCAL:
            raise ValueError("an address space past 3")
        if not 0 < call.element <= 1 << 16 or call.count > MAX_COPY_ELEMENTS:
            raise ValueError(f"{call.count} elements of {call.element} bytes")
        for start, stride in ((call.dest, call.dest_stride), (call.src, call.src_stride)):
            if start + max(call.count - 1, 0) * stride * call.element + call.element > ADDRESS_END:
                raise ValueError("the copy passes the end of the 64-bit address space")
        meta.copies[_number(parts[1], high=NO_SITE)] = call
    elif kind == "wait":
        events = tuple(_number(e) for e in parts[2].split(",") if e)
        meta.waits[_number(parts[1], high=NO_SITE)] = events
    else:
        meta.fatal.append((_number(parts[1], high=NO_SITE), "\t".join(parts[2:])))


def rename_site(site: str, names: dict[str, str]) -> str:
    """``input.cl:12`` -> ``reduce.cl:12`` when ``names`` maps the file."""
    file, sep, line = site.rpartition(":")
    return f"{names[file]}{sep}{line}" if sep and file in names else site


def buffers(meta: Meta) -> list[dict]:
    """Buffer declarations: kernel parameters and local arrays, per launch."""
    out = []
    for buf in meta.buffers:
        itemsize = buf["itemsize"] if buf["bytes"] % buf["itemsize"] == 0 else 1
        if buf["bytes"] == 0:
            continue
        name = buf["name"]
        kernel = meta.kernels.get(buf["launch"], "")
        if name.startswith(kernel + "."):  # clang names a kernel's __local array kernel.var
            name = name[len(kernel) + 1 :]
        space = Space.SHARED if buf["space"] == "local" else Space.GLOBAL
        out.append(
            {
                "name": name,
                "space": int(space),
                "base": buf["base"],
                "shape": [buf["bytes"] // itemsize],
                "itemsize": itemsize,
                "launch": buf["launch"],
            }
        )
    return out


# --- rows --------------------------------------------------------------------------


def to_columns(
    records: np.ndarray, sites: list[str], meta: Meta | None = None
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Trace columns (in replay order) for all the records at once; sites may grow."""
    meta = meta or Meta()
    converter = Converter(SiteIndex(sites), meta, int(np.sum(records["kind"] == Kind.KERNEL_BEGIN)))
    return converter.columns(records), sites


class Converter:
    """Records to trace columns, one batch after another: what spans batches
    (the launch, each work-group's barrier and copies, the row count) is kept here."""

    def __init__(self, sites: SiteIndex, meta: Meta, launches: int) -> None:
        self.sites = sites
        self.meta = meta
        self.launches = launches  # KERNEL_BEGIN records in the whole run
        self.begun = 0  # ... in the batches before this one
        self.groups: dict[int, GroupState] = {}
        self.rows = 0

    def columns(self, records: np.ndarray) -> dict[str, np.ndarray]:
        """Columns of the next batch of records (``ts`` continues the last batch's)."""
        launch = launch_of(records, self.begun)
        kind = records["kind"]
        keep = np.isin(kind, DIRECT_KINDS) & ((kind != Kind.HOST_WRITE) | (launch < self.launches))
        base = direct_columns(records[keep], launch[keep])
        key = np.flatnonzero(keep) * 2
        extra = added_rows(records, launch, self.sites, self.meta, self.groups)
        cols = extra.merged(base, key)
        cols["ts"] += np.uint64(self.rows)
        self.rows += len(cols["ts"])
        self.begun += int(np.sum(kind == Kind.KERNEL_BEGIN))
        return cols


def launch_of(records: np.ndarray, begun: int = 0) -> np.ndarray:
    """Each record's launch (``begun`` launches began before ``records``); a host
    write belongs to the launch after it."""
    begins = begun + np.cumsum(records["kind"] == Kind.KERNEL_BEGIN).astype(np.int64)
    return np.where(records["kind"] == Kind.HOST_WRITE, begins, begins - 1)


def direct_columns(rec: np.ndarray, launch: np.ndarray) -> dict[str, np.ndarray]:
    """Columns of the records that map one to one onto rows."""
    kind = rec["kind"]
    n = len(rec)
    op = np.zeros(n, dtype=np.int64)
    for k, o in OP_OF_ACCESS.items():
        op[kind == k] = o
    arrive = kind == Kind.ARRIVE
    op[arrive] = Op.BAR_SYNC
    op[kind == Kind.FENCE] = Op.FENCE
    access = np.isin(kind, ACCESS_KINDS)
    space = np.where(access, SPACE_OF[np.minimum(rec["space"], OclSpace.LOCAL)], Space.GLOBAL)
    host = kind == Kind.HOST_WRITE
    fence = kind == Kind.FENCE
    atomic = kind == Kind.ATOMIC
    scope = np.full(n, Scope.DEVICE, dtype=np.int64)
    scope[atomic & (space == Space.SHARED)] = Scope.BLOCK
    scope[fence & ((rec["detail"] & GLOBAL_MEM_FENCE) == 0)] = Scope.BLOCK
    sem = np.zeros(n, dtype=np.int64)
    sem[fence] = FENCE_SEM[np.minimum(rec["variant"][fence], 2)]
    spaces = np.full(n, FENCE_ALL, dtype=np.int64)
    known = arrive & (rec["variant"] != BarrierKind.UNKNOWN)
    spaces[known] = fence_spaces(rec["detail"][known])
    return {
        "op": op,
        "launch": launch,
        "block": np.where(host, 0, rec["group"]).astype(np.int64),
        "thread": np.where(host, 0, rec["item"]).astype(np.int64),
        "space": space.astype(np.int64),
        "addr": np.where(access, rec["address"], 0).astype(np.uint64),
        "size": np.where(access, rec["size"], 0).astype(np.int64),
        "addr2": np.zeros(n, dtype=np.uint64),
        "space2": np.full(n, Space.GLOBAL, dtype=np.int64),
        "obj": np.zeros(n, dtype=np.int64) + BARRIER_ID,
        "arg": np.where(arrive, rec["count"], 0).astype(np.int64),
        "scope": scope,
        "sem": sem,
        "site": rec["site"].astype(np.int64),
        "fence_spaces": spaces,
    }


@dataclass
class PendingCopy:
    """A copy Oclgrind has registered in a work-group and not yet completed."""

    call: CopyCall
    issuer: int
    joined: set[int] = field(default_factory=set)


@dataclass
class GroupState:
    """A work-group's barrier in progress (who arrived) and its async copies:
    those registered, and each issuer's groups in flight, oldest first."""

    arrived: list[int] = field(default_factory=list)
    site: int = NO_SITE
    waited: tuple[int, ...] = ()  # the events the barrier in progress completes
    copies: list[PendingCopy] = field(default_factory=list)
    in_flight: dict[int, list[int]] = field(default_factory=dict)  # item -> events


def added_rows(
    records: np.ndarray,
    launch: np.ndarray,
    sites: SiteIndex,
    meta: Meta,
    groups: dict[int, GroupState],
) -> Rows:
    """Rows that are not one record each: missing barrier arrivals and async copies.
    ``groups`` is the work-groups' state, carried from batch to batch."""
    rows = Rows(ROW_DEFAULTS)
    wanted = [Kind.ARRIVE, Kind.RELEASE, Kind.COPY_ISSUE, Kind.WAIT_EVENTS, Kind.KERNEL_BEGIN]
    index = np.flatnonzero(np.isin(records["kind"], wanted))
    picked = records[index]
    for i, kind, group, item, site, count in zip(
        index.tolist(),
        picked["kind"].tolist(),
        picked["group"].tolist(),
        picked["item"].tolist(),
        picked["site"].tolist(),
        picked["count"].tolist(),
    ):
        if kind == Kind.KERNEL_BEGIN:
            groups.clear()
            continue
        state = groups.setdefault(group, GroupState())
        where = (2 * i + 1, int(launch[i]), group, item, site)
        if kind == Kind.ARRIVE:
            state.arrived.append(item)
            state.site = site
        elif kind == Kind.RELEASE:
            release(rows, i, records, int(launch[i]), state, sites)
            # Oclgrind completes the copies of the events the first arrival named.
            state.copies = [c for c in state.copies if c.call.event not in state.waited]
            state.arrived, state.site, state.waited = [], NO_SITE, ()
        elif kind == Kind.COPY_ISSUE:
            issue_copy(rows, where, meta.copies[count], state)
        else:
            events = meta.waits[count]
            if not state.arrived:
                state.waited = events
            wait_copies(rows, where, events, state, sites)
    return rows


def release(
    rows: Rows, index: int, records: np.ndarray, launch: int, state: GroupState, sites: SiteIndex
) -> None:
    """The rows of release record ``index``, sorted right after its position:
    a ``bar_arrive`` for each work-item that never reached the barrier."""
    group, size = int(records["group"][index]), int(records["count"][index])
    missing = sorted(set(range(size)) - set(state.arrived))
    if not missing:
        return
    site = sites.add(f"(work-item finished before the barrier at {site_text(sites, state.site)})")
    spaces = int(fence_spaces(int(records["detail"][index])))
    rows.arrive(
        2 * index + 1,
        missing,
        launch=launch,
        block=group,
        arg=len(state.arrived),
        site=site,
        fence_spaces=spaces,
    )


def issue_copy(rows: Rows, where: tuple, call: CopyCall, state: GroupState) -> None:
    """A work-item's ``async_work_group_copy`` call. As in Oclgrind, it joins the
    oldest registered copy it has not joined yet; when there is none, it
    registers a new copy and issues it: a ``cp_async`` per element and a commit."""
    key, launch, group, item, site = where
    for pending in state.copies:
        if item not in pending.joined:
            pending.joined.add(item)
            return
    state.copies.append(PendingCopy(call, item, {item}))
    state.in_flight.setdefault(item, []).append(call.event)
    dest_space = SPACE_OF[min(call.dest_space, OclSpace.LOCAL)]
    src_space = SPACE_OF[min(call.src_space, OclSpace.LOCAL)]
    for n in range(call.count):
        rows.add(
            key,
            op=Op.CP_ASYNC,
            launch=launch,
            block=group,
            thread=item,
            space=dest_space,
            addr=call.dest + n * call.dest_stride * call.element,
            space2=src_space,
            addr2=call.src + n * call.src_stride * call.element,
            size=call.element,
            site=site,
        )
    rows.add(key, op=Op.CP_ASYNC_COMMIT, launch=launch, block=group, thread=item, site=site)


def wait_copies(
    rows: Rows, where: tuple, events: tuple[int, ...], state: GroupState, sites: SiteIndex
) -> None:
    """A work-item's ``wait_group_events``: the copies it issued with those
    events retire (a ``cp_async_wait`` before its ``bar_sync``). A wait retires
    a work-item's copies oldest first; leaving an older one of its copies in
    flight while retiring a newer one is not expressible, and refused."""
    key, launch, group, item, site = where
    flight = state.in_flight.get(item, [])
    waited = [n for n, event in enumerate(flight) if event in events]
    if not waited:
        return
    newest = waited[-1]
    if len(waited) != newest + 1:
        raise TraceError(
            f"at {site_text(sites, site)}, work-item {item} of work-group {group} "
            "waits for an async copy it issued while an older copy it issued "
            "stays in flight; the trace format retires copies oldest first",
            path=SOURCE,
            rule="record",
        )
    state.in_flight[item] = flight[newest + 1 :]
    rows.add(
        key,
        op=Op.CP_ASYNC_WAIT,
        launch=launch,
        block=group,
        thread=item,
        arg=len(flight) - newest - 1,
        site=site,
    )


def site_text(sites: SiteIndex, index: int) -> str:
    return sites.text(index) if index != NO_SITE else "an unknown line"
