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
- a work-item reaching ``barrier`` -> ``bar_sync`` on barrier 0 with the
  group's size as the count (OpenCL has one barrier per work-group);
- a barrier that Oclgrind released with work-items missing (barrier
  divergence: they finished without reaching it): each missing work-item
  arrives there (``bar_arrive``) counting only the work-items that did arrive.
  The generation completes as it did in Oclgrind, so the happens-before is the
  simulated one, and the disagreeing count is reported as ``barrier_mismatch``;
- ``async_work_group_copy`` data, which Oclgrind moves when the group is
  released from ``wait_group_events``: accesses of work-item 0 inside the
  barrier, followed by a second barrier generation of the whole group, so the
  copy is ordered after every arrival and before everything after the wait;
- host writes (buffer creation with data, writes, maps for writing) ->
  ``init`` before the next launch; those after the last launch are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from glob import escape, glob

import numpy as np

from ..errors import TraceError
from ..ops import Op, Scope, Sem, Space
from ..writer import write_table

RECORD_DTYPE = np.dtype([
    ("kind", "u1"), ("space", "u1"), ("detail", "u1"), ("variant", "u1"),
    ("size", "<u4"), ("group", "<u4"), ("item", "<u4"), ("address", "<u8"),
    ("site", "<u4"), ("count", "<u4"),
])
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
    ARRIVE = 10
    RELEASE = 11
    FENCE = 20
    GROUP_LOAD = 30
    GROUP_STORE = 31
    KERNEL_BEGIN = 40
    KERNEL_END = 41


class OclSpace(IntEnum):
    """Oclgrind's address spaces (``oclgrind::AddressSpace``)."""

    PRIVATE = 0
    GLOBAL = 1
    CONSTANT = 2
    LOCAL = 3


GLOBAL_MEM_FENCE = 2
"""The ``CLK_GLOBAL_MEM_FENCE`` bit of a fence's flags."""

FENCE_SEM = np.array([Sem.ACQ_REL, Sem.ACQUIRE, Sem.RELEASE], dtype=np.uint8)
"""Fence semantics by the plugin's FenceKind: mem_fence, read_mem_fence, write_mem_fence."""

SPACE_OF = np.array([Space.LOCAL, Space.GLOBAL, Space.GLOBAL, Space.SHARED], dtype=np.uint8)
"""Trace space by Oclgrind address space."""

OP_OF_ACCESS = {Kind.LOAD: Op.READ, Kind.STORE: Op.WRITE, Kind.ATOMIC: Op.ATOMIC,
                Kind.HOST_WRITE: Op.INIT, Kind.GROUP_LOAD: Op.READ, Kind.GROUP_STORE: Op.WRITE}


@dataclass
class Meta:
    """The plugin's text side table."""

    sites: list[str] = field(default_factory=list)
    kernels: dict[int, str] = field(default_factory=dict)   # launch -> kernel name
    buffers: list[dict] = field(default_factory=list)


ROW_DEFAULTS = {"op": 0, "launch": 0, "block": 0, "thread": 0, "space": int(Space.GLOBAL),
                "addr": 0, "size": 0, "obj": BARRIER_ID, "arg": 0, "scope": int(Scope.DEVICE),
                "sem": int(Sem.RELAXED), "site": NO_SITE}
"""The columns this converter writes, with the values of a row that does not set them."""


@dataclass
class Rows:
    """Rows added by the converter, each with the sort key that places it."""

    key: list[int] = field(default_factory=list)
    cols: dict[str, list[int]] = field(default_factory=lambda: {n: [] for n in ROW_DEFAULTS})

    def add(self, key: int, **values: int) -> None:
        self.key.append(key)
        for name, default in ROW_DEFAULTS.items():
            self.cols[name].append(int(values.pop(name, default)))
        if values:
            raise TypeError(f"unknown columns {sorted(values)}")


def convert(prefix: str, out: str, *, source_names: dict[str, str] | None = None
            ) -> tuple[int, int]:
    """Write the v1 trace of the plugin output under ``prefix``; (events, launches).

    ``source_names`` renames source files in sites (Oclgrind calls a program
    built from a string ``input.cl``).
    """
    records, meta = read_output(prefix)
    sites = [rename_site(s, source_names or {}) for s in meta.sites]
    columns, sites = to_columns(records, sites)
    write_table(out, columns, sites=sites, buffers=buffers(meta), producer=PRODUCER)
    return len(columns["ts"]), len(meta.kernels)


def read_output(prefix: str) -> tuple[np.ndarray, Meta]:
    """The records and side table of the one process that ran kernels.

    The plugin creates its files when Oclgrind loads it, with the first OpenCL
    context: no files means the program made none (or the plugin did not load).
    """
    files = sorted(glob(f"{escape(prefix)}.*.events"))
    if not files:
        raise TraceError("the program created no OpenCL context under Oclgrind (or "
                         "Oclgrind could not load tracerace's plugin: see its messages "
                         "above); nothing was recorded", path="oclgrind backend",
                         rule="record")
    outputs = [(records, base) for records, base in
               ((np.fromfile(f, dtype=RECORD_DTYPE), f[:-len(".events")]) for f in files)
               if np.any(records["kind"] == Kind.KERNEL_BEGIN)]
    if len(outputs) > 1:
        raise TraceError(f"{len(outputs)} processes ran OpenCL kernels; record one at a time",
                         path="oclgrind backend", rule="record")
    if not outputs:
        return np.zeros(0, dtype=RECORD_DTYPE), Meta()
    records, base = outputs[0]
    return records, read_meta(base + ".meta")


def read_meta(path: str) -> Meta:
    """Parse the tab-separated side table (``site``, ``kernel``, ``buffer`` lines)."""
    meta = Meta()
    sites: dict[int, str] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "site":
                sites[int(parts[1])] = "\t".join(parts[2:])
            elif parts[0] == "kernel":
                meta.kernels[int(parts[1])] = parts[2]
            elif parts[0] == "buffer":
                launch, name, space, base, size, itemsize = parts[1:7]
                meta.buffers.append({"launch": int(launch), "name": name, "space": space,
                                     "base": int(base), "bytes": int(size),
                                     "itemsize": int(itemsize)})
    meta.sites = [sites[i] for i in range(len(sites))]
    return meta


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
        if name.startswith(kernel + "."):   # clang names a kernel's __local array kernel.var
            name = name[len(kernel) + 1:]
        space = Space.SHARED if buf["space"] == "local" else Space.GLOBAL
        out.append({"name": name, "space": int(space), "base": buf["base"],
                    "shape": [buf["bytes"] // itemsize], "itemsize": itemsize,
                    "launch": buf["launch"]})
    return out


# --- rows --------------------------------------------------------------------------

def to_columns(records: np.ndarray, sites: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """Trace columns (in replay order) for the records; sites may grow."""
    launch = launch_of(records)
    kind = records["kind"]
    keep = np.isin(kind, [Kind.LOAD, Kind.STORE, Kind.ATOMIC, Kind.ARRIVE, Kind.FENCE]) | (
        (kind == Kind.HOST_WRITE) & (launch < np.sum(kind == Kind.KERNEL_BEGIN)))
    base = direct_columns(records[keep], launch[keep])
    key = np.flatnonzero(keep) * 2
    extra = barrier_rows(records, launch, sites)
    cols = {name: np.concatenate([values, np.asarray(extra.cols[name], dtype=values.dtype)])
            for name, values in base.items()}
    order = np.argsort(np.concatenate([key, np.asarray(extra.key, dtype=np.int64)]),
                       kind="stable")
    cols = {name: values[order] for name, values in cols.items()}
    cols["ts"] = np.arange(len(order), dtype=np.uint64)
    return cols, sites


def launch_of(records: np.ndarray) -> np.ndarray:
    """Each record's launch; a host write belongs to the launch after it."""
    begins = np.cumsum(records["kind"] == Kind.KERNEL_BEGIN).astype(np.int64)
    return np.where(records["kind"] == Kind.HOST_WRITE, begins, begins - 1)


def direct_columns(rec: np.ndarray, launch: np.ndarray) -> dict[str, np.ndarray]:
    """Columns of the records that map one to one onto rows."""
    kind = rec["kind"]
    n = len(rec)
    op = np.zeros(n, dtype=np.int64)
    for k, o in OP_OF_ACCESS.items():
        op[kind == k] = o
    op[kind == Kind.ARRIVE] = Op.BAR_SYNC
    op[kind == Kind.FENCE] = Op.FENCE
    access = np.isin(kind, [Kind.LOAD, Kind.STORE, Kind.ATOMIC, Kind.HOST_WRITE])
    space = np.where(access, SPACE_OF[np.minimum(rec["space"], OclSpace.LOCAL)], Space.GLOBAL)
    host = kind == Kind.HOST_WRITE
    fence = kind == Kind.FENCE
    atomic = kind == Kind.ATOMIC
    scope = np.full(n, Scope.DEVICE, dtype=np.int64)
    scope[atomic & (space == Space.SHARED)] = Scope.BLOCK
    scope[fence & ((rec["detail"] & GLOBAL_MEM_FENCE) == 0)] = Scope.BLOCK
    sem = np.zeros(n, dtype=np.int64)
    sem[fence] = FENCE_SEM[np.minimum(rec["variant"][fence], 2)]
    return {
        "op": op, "launch": launch,
        "block": np.where(host, 0, rec["group"]).astype(np.int64),
        "thread": np.where(host, 0, rec["item"]).astype(np.int64),
        "space": space.astype(np.int64),
        "addr": np.where(access, rec["address"], 0).astype(np.uint64),
        "size": np.where(access, rec["size"], 0).astype(np.int64),
        "obj": np.zeros(n, dtype=np.int64) + BARRIER_ID,
        "arg": np.where(kind == Kind.ARRIVE, rec["count"], 0).astype(np.int64),
        "scope": scope, "sem": sem,
        "site": rec["site"].astype(np.int64),
    }


@dataclass
class GroupState:
    """A work-group's barrier in progress: who arrived, and the group's copies."""

    arrived: list[int] = field(default_factory=list)
    site: int = NO_SITE
    copies: list[int] = field(default_factory=list)


def barrier_rows(records: np.ndarray, launch: np.ndarray, sites: list[str]) -> Rows:
    """Rows added at barrier releases: missing arrivals and work-group copies."""
    rows = Rows()
    groups: dict[int, GroupState] = {}
    wanted = [Kind.ARRIVE, Kind.RELEASE, Kind.GROUP_LOAD, Kind.GROUP_STORE, Kind.KERNEL_BEGIN]
    index = np.flatnonzero(np.isin(records["kind"], wanted))
    picked = records[index]
    for i, kind, group, item, site in zip(index.tolist(), picked["kind"].tolist(),
                                          picked["group"].tolist(), picked["item"].tolist(),
                                          picked["site"].tolist()):
        if kind == Kind.KERNEL_BEGIN:
            groups.clear()
            continue
        state = groups.setdefault(group, GroupState())
        if kind == Kind.ARRIVE:
            state.arrived.append(item)
            state.site = site
        elif kind == Kind.RELEASE:
            release(rows, i, records, int(launch[i]), state, sites)
            del groups[group]
        else:
            state.copies.append(i)
    return rows


def release(rows: Rows, index: int, records: np.ndarray, launch: int, state: GroupState,
            sites: list[str]) -> None:
    """The rows of release record ``index``, sorted right after its position:
    none when every work-item arrived and the group copied nothing."""
    key = 2 * index + 1
    group, size = int(records["group"][index]), int(records["count"][index])
    missing = sorted(set(range(size)) - set(state.arrived))
    if missing:
        site = add_site(sites, "(work-item finished before the barrier at "
                               f"{site_text(sites, state.site)})")
        for item in missing:
            rows.add(key, op=Op.BAR_ARRIVE, launch=launch, block=group, thread=item,
                     arg=len(state.arrived), site=site)
    if state.copies:
        group_copies(rows, key, records[state.copies], launch, group, size, state.site, sites)


def group_copies(rows: Rows, key: int, copies: np.ndarray, launch: int, group: int, size: int,
                 wait_site: int, sites: list[str]) -> None:
    """The group's async copies as work-item 0's accesses, then the whole group at
    the barrier again: the copy lies between the arrivals and everything after."""
    site = add_site(sites, f"{site_text(sites, wait_site)} async_work_group_copy")
    for copy in copies:
        op = Op.READ if copy["kind"] == Kind.GROUP_LOAD else Op.WRITE
        rows.add(key, op=op, launch=launch, block=group, thread=0,
                 space=SPACE_OF[min(int(copy["space"]), OclSpace.LOCAL)],
                 addr=copy["address"], size=copy["size"], site=site)
    for item in range(size):
        rows.add(key, op=Op.BAR_SYNC, launch=launch, block=group, thread=item, arg=size,
                 site=wait_site)


def site_text(sites: list[str], index: int) -> str:
    return sites[index] if index != NO_SITE else "an unknown line"


def add_site(sites: list[str], text: str) -> int:
    """Index of ``text`` in ``sites``, appending it if new."""
    if text not in sites:
        sites.append(text)
    return sites.index(text)

