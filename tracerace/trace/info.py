"""A one-screen summary of a trace, computed in one streaming pass.

What a user wants to know before checking a trace: how big it is, how many
launches, blocks and agents it covers, which ops occur, which memory it
touches, and what metadata came with it. Every count is accumulated batch by
batch, so summarising a trace costs the memory of one batch plus the
distinct keys seen (launches, blocks, agents), never the whole table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..shown import shown
from .meta import Buffer
from .ops import (
    BULK_COPY_PEER,
    BULK_REDUCE,
    BULK_REDUCE_PEER,
    CP_ASYNC,
    TMA_LOAD,
    TMA_STORE,
    Op,
    Space,
)
from .reader import DEFAULT_BATCH_SIZE, Batch, open_trace

# Ops whose (space, addr, size) is the memory they access.
_PLAIN_ACCESS = np.zeros(256, dtype=bool)
_PLAIN_ACCESS[[int(Op.READ), int(Op.WRITE), int(Op.ATOMIC), int(Op.INIT)]] = True
_PLAIN_ACCESS[[int(Op.ST_ASYNC), int(Op.RED_ASYNC)]] = True

# Copies: (op, destination space, source space); None = the row's space2 column.
_COPIES = (
    (CP_ASYNC, int(Space.SHARED), None),
    (TMA_LOAD, int(Space.SHARED), int(Space.GLOBAL)),
    (TMA_STORE, int(Space.GLOBAL), int(Space.SHARED)),
    (BULK_COPY_PEER, int(Space.SHARED), int(Space.SHARED)),
    (BULK_REDUCE, int(Space.GLOBAL), int(Space.SHARED)),
    (BULK_REDUCE_PEER, int(Space.SHARED), int(Space.SHARED)),
)

_CONTAINERS = {
    "file": "Arrow IPC file",
    "stream": "Arrow IPC stream",
    "parquet": "Parquet",
    "table": "Arrow table",
    "batch": "Arrow record batch",
    "reader": "Arrow record batch reader",
}


@dataclass
class SpaceUse:
    """Accesses to one memory space and the byte range they touch.

    ``lo``/``hi`` bound the bytes as ``[lo, hi)``; None when no access in the
    space has a non-zero size. Shared-memory addresses are offsets into a
    block's shared memory, so their range is an offset range.
    """

    accesses: int = 0
    lo: int | None = None
    hi: int | None = None

    def add(self, addr: np.ndarray, size: np.ndarray) -> None:
        self.accesses += len(addr)
        sized = size > 0
        if not sized.any():
            return
        addr, size = addr[sized], size[sized]
        lo = int(addr.min())
        end = addr + size  # may wrap past 2**64: count those exactly
        wrapped = end < addr
        hi = int(end[wrapped].max()) + 2**64 if wrapped.any() else int(end.max())
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)


@dataclass
class TraceInfo:
    path: str | None
    container: str
    version: int
    producer: str | None
    events: int = 0
    launches: int = 0
    blocks: int = 0
    agents: int = 0
    ops: dict[str, int] = field(default_factory=dict)
    spaces: dict[str, SpaceUse] = field(default_factory=dict)
    ts_first: int | None = None
    ts_last: int | None = None
    sites: int = 0
    buffers: tuple[Buffer, ...] = ()

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "container": self.container,
            "version": self.version,
            "producer": self.producer,
            "events": self.events,
            "launches": self.launches,
            "blocks": self.blocks,
            "agents": self.agents,
            "ops": dict(self.ops),
            "spaces": {
                name: {"accesses": s.accesses, "lo": s.lo, "hi": s.hi}
                for name, s in self.spaces.items()
            },
            "ts": {"first": self.ts_first, "last": self.ts_last},
            "sites": self.sites,
            "buffers": [b.to_json() for b in self.buffers],
        }


def trace_info(source, *, batch_size: int = DEFAULT_BATCH_SIZE) -> TraceInfo:
    """Summarise a trace (any source :func:`~tracerace.trace.reader.open_trace` takes).

    The trace is fully read, so a trace that breaks the format raises
    :class:`~tracerace.errors.TraceError` here too.
    """
    with open_trace(source, batch_size=batch_size) as reader:
        meta = reader.meta
        info = TraceInfo(
            path=meta.path,
            container=reader.container,
            version=meta.version,
            producer=meta.producer,
            sites=len(meta.sites),
            buffers=meta.buffers,
        )
        launches, blocks, agents = _DistinctPairs(), _DistinctPairs(), _DistinctPairs()
        op_counts = np.zeros(256, dtype=np.int64)
        spaces = {int(s): SpaceUse() for s in Space}
        for batch in reader:
            c = batch.cols
            info.events += batch.n
            if info.ts_first is None:
                info.ts_first = int(c["ts"][0])
            info.ts_last = int(c["ts"][-1])
            op_counts += np.bincount(c["op"], minlength=256)
            launch = c["launch"].astype(np.uint64)
            block = c["block"].astype(np.uint64)
            launches.add(np.zeros_like(launch), launch)
            blocks.add(launch, block)
            agents.add(launch, (block << np.uint64(32)) | c["thread"])
            _memory(batch, spaces)
    info.launches, info.blocks, info.agents = len(launches), len(blocks), len(agents)
    info.ops = {Op(code).label: int(count) for code, count in enumerate(op_counts) if count}
    info.spaces = {Space(s).name.lower(): use for s, use in spaces.items() if use.accesses}
    return info


def _memory(batch: Batch, spaces: dict[int, SpaceUse]) -> None:
    """Add a batch's accesses, copies counted once per side, to ``spaces``."""
    c = batch.cols
    op, size = c["op"], c["size"]
    sides = [(_PLAIN_ACCESS[op], c["space"], c["addr"])]
    for code, dst, src in _COPIES:
        is_copy = op == code
        if is_copy.any():
            sides.append((is_copy, np.full(batch.n, dst, np.uint8), c["addr"]))
            src_space = c["space2"] if src is None else np.full(batch.n, src, np.uint8)
            sides.append((is_copy, src_space, c["addr2"]))
    for rows, space, addr in sides:
        for s, use in spaces.items():
            mask = rows & (space == s)
            if mask.any():
                use.add(addr[mask], size[mask])


class _DistinctPairs:
    """Counts distinct ``(hi, lo)`` uint64 pairs fed in batches.

    Keeps, per ``hi`` value (a launch), the sorted distinct ``lo`` values seen.
    A batch usually repeats keys already seen (the same threads run on), so
    each batch's distinct keys are first looked up by binary search and only
    the new ones are merged: a pass over a long trace costs one sort per batch,
    not a growing re-sort. Memory is the number of distinct pairs.
    """

    def __init__(self) -> None:
        self._seen: dict[int, np.ndarray] = {}

    def add(self, hi: np.ndarray, lo: np.ndarray) -> None:
        if len(hi) == 0:
            return
        if hi.min() == hi.max():  # the usual batch: a single launch
            self._merge(int(hi[0]), _sorted_unique(lo))
            return
        order = np.argsort(hi, kind="stable")
        hi, lo = hi[order], lo[order]
        cuts = np.flatnonzero(hi[1:] != hi[:-1]) + 1
        for start, stop in zip(np.r_[0, cuts], np.r_[cuts, len(hi)]):
            self._merge(int(hi[start]), _sorted_unique(lo[start:stop]))

    def _merge(self, hi: int, keys: np.ndarray) -> None:
        seen = self._seen.get(hi)
        if seen is None:
            self._seen[hi] = keys
            return
        at = np.minimum(np.searchsorted(seen, keys), len(seen) - 1)
        new = keys[seen[at] != keys]
        if len(new):
            merged = np.concatenate([seen, new])
            merged.sort()
            self._seen[hi] = merged

    def __len__(self) -> int:
        return sum(len(keys) for keys in self._seen.values())


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    # np.unique in NumPy 2.3+ hashes, about 4x slower than sorting for 1M uint64 keys.
    keys = np.sort(values)
    keep = np.ones(len(keys), dtype=bool)
    keep[1:] = keys[1:] != keys[:-1]
    return keys[keep]


def format_text(info: TraceInfo) -> str:
    """The summary as aligned text lines (the trace's text in them shown escaped)."""
    where = info.path or "<trace>"
    head = f"{_CONTAINERS.get(info.container, info.container)}, trace format v{info.version}"
    if info.producer:
        head += f", producer: {info.producer}"
    lines = [
        ("trace", f"{where} ({head})"),
        ("events", f"{info.events:,}"),
        ("launches", f"{info.launches:,}"),
        ("blocks", f"{info.blocks:,}"),
        ("agents", f"{info.agents:,} (distinct launch, block, thread)"),
        ("ts", "-" if info.ts_first is None else f"{info.ts_first} .. {info.ts_last}"),
    ]
    ops = sorted(info.ops.items(), key=lambda kv: (-kv[1], kv[0]))
    lines.append(("ops", ", ".join(f"{name} {count:,}" for name, count in ops) or "-"))
    if not info.spaces:
        lines.append(("memory", "-"))
    for i, (name, use) in enumerate(info.spaces.items()):
        span = (
            "no bytes"
            if use.lo is None or use.hi is None
            else f"bytes [{use.lo:#x}, {use.hi:#x}) ({use.hi - use.lo:,} B span)"
        )
        lines.append(("memory" if i == 0 else "", f"{name}: {use.accesses:,} accesses, {span}"))
    lines.append(("sites", f"{info.sites:,}"))
    if not info.buffers:
        lines.append(("buffers", "-"))
    for i, buf in enumerate(info.buffers):
        shape = "x".join(str(d) for d in buf.shape) or "scalar"
        text = (
            f"{buf.name}: {Space(buf.space).name.lower()} at {buf.base:#x}, "
            f"shape {shape}, itemsize {buf.itemsize}"
        )
        if buf.strides is not None:
            text += f", strides {list(buf.strides)}"
        if buf.launch is not None:
            text += f", launch {buf.launch}"
        lines.append(("buffers" if i == 0 else "", text))
    width = max(len(label) for label, _ in lines)
    return "\n".join(f"{label:<{width}}  {shown(text)}" for label, text in lines)


def format_json(info: TraceInfo) -> str:
    """The summary as a JSON document (addresses as plain integers)."""
    return json.dumps(info.to_json(), indent=2)
