"""From warp-level records of a GPU tracer to v1 rows: lanes, barriers, replay order.

The format parsers (``accelsim``, ``cutracer``, ``nvbit``) turn their lines
into :class:`Record` s: one warp executing one instruction (or, for tracers
that write one record per memory operand, one operand of it). This module does
the rest, the same way for every format:

* :class:`Launch` translates a record through the SASS table
  (:mod:`tracerace.gpu.sass`) into *items*: one event for a set of lanes of a
  warp (``thread = warp * 32 + lane``), kept compact until the end;
* the replay order: :class:`RecordedOrder` keeps the order of the file, which
  is an order the GPU really produced (the tracer's channel receives records
  in the order warps pushed them); :class:`CtaReplay` builds one for
  Accel-Sim's ``.traceg``, which keeps each warp's instructions in order but
  not the order between warps (see its doc);
* :class:`Emitter` expands items into rows, lane by lane and vectorised,
  resolves generic addresses and window-relative shared/local addresses,
  declares global memory initialized, and streams the rows to a
  :class:`~tracerace.writer.TraceWriter`.

Barriers without a count operand (``__syncthreads``: every thread of the block
that has not exited) are counted when they release: their ``bar_sync`` rows
are written when the generation completes, with the number of threads that
arrived as the count. A waiting warp does nothing in between, so moving its
arrival to the release changes no happens-before.
"""

from __future__ import annotations

import bisect
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import ops as O
from .sass import GENERIC, IMPLICIT_COUNT, Effect, Sass, SyncOperands, decode
from .source import error

WARP = 32
FULL_MASK = 0xFFFFFFFF
GLOBAL_INIT_WINDOW = 1 << 16
"""Global memory is declared initialized in aligned windows of this many bytes,
the first time a launch reads from one (see :class:`Emitter`)."""
SHARED_LIMIT = 1 << 18
"""Shared-memory offsets at or past this (256 KiB, more than any GPU gives a
block) are distributed shared memory of another block, which is not followed."""
LOCAL_LIMIT = 1 << 24
DEFAULT_WINDOW_SIZE = 1 << 24
"""Size assumed for the generic shared and local windows when a trace gives
only their base addresses (16 MiB; ``--shared-window BASE:SIZE`` overrides)."""
CHUNK_ITEMS = 1 << 16
SPILL_BYTES = 256 << 20
"""A block whose buffered events pass this many bytes spills them to disk
(:class:`CtaReplay`)."""

# Address modes of an item.
A_NONE, A_STRIDE, A_ACTIVE, A_LANES = 0, 1, 2, 3


@dataclass(frozen=True)
class KernelInfo:
    """A kernel launch as the trace describes it."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    source: str
    shared_window: tuple[int, int] | None = None   # (generic base, size)
    local_window: tuple[int, int] | None = None
    extra: dict = field(default_factory=dict)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps(self) -> int:
        return (self.threads + WARP - 1) // WARP

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def block_index(self, cta: tuple[int, int, int]) -> int | None:
        """The linear block id (x fastest) of CTA coordinates, or None if outside the grid."""
        x, y, z = cta
        gx, gy, gz = self.grid
        if not (0 <= x < gx and 0 <= y < gy and 0 <= z < gz):
            return None
        return x + gx * (y + gy * z)

    def to_json(self, launch: int) -> dict:
        out = {"launch": launch, "name": self.name, "grid": list(self.grid),
               "block": list(self.block), "source": self.source}
        if self.shared_window is not None:
            out["shared_window"] = list(self.shared_window)
        if self.local_window is not None:
            out["local_window"] = list(self.local_window)
        out.update(self.extra)
        return out


@dataclass(slots=True)
class Record:
    """One warp executing one instruction (or one memory operand of it).

    ``mask`` is the set of active lanes where the format records one (Accel-Sim:
    active and predicate-true); None where it does not (CUTracer, NVBit
    mem_trace): lanes are then taken from the addresses, see
    :meth:`Launch.lanes_from_addresses`. ``addrs`` is None for an instruction
    without addresses, else ``(A_STRIDE, base, stride)`` (the active lanes
    from ``base`` in steps of ``stride``), ``(A_ACTIVE, [one per active lane])``
    or ``(A_LANES, [32 addresses])``.
    """

    lineno: int
    block: int
    warp: int
    opcode: str
    site: int
    mask: int | None = None
    addrs: tuple | None = None
    ops: SyncOperands | None = None
    pc: int | None = None


@dataclass(slots=True)
class Arrival:
    """A warp arriving at a barrier whose count is the block's live threads."""

    block: int
    warp: int
    barrier: int
    lanes: int
    site: int
    lineno: int


def popcount(x: int) -> int:
    return bin(x).count("1")


# --- items ---------------------------------------------------------------------------

_ITEM_FIELDS = (("op", np.uint8), ("launch", np.uint32), ("block", np.uint32),
                ("warp", np.uint32), ("lanes", np.uint32), ("space", np.uint8),
                ("size", np.uint32), ("amode", np.uint8), ("a0", np.uint64), ("a1", np.int64),
                ("space2", np.uint8), ("bmode", np.uint8), ("b0", np.uint64), ("b1", np.int64),
                ("obj", np.uint64), ("arg", np.int64), ("scope", np.uint8), ("sem", np.uint8),
                ("proxy", np.uint8), ("site", np.uint32), ("lineno", np.int64),
                ("src", np.uint32))
_FIELD_NAMES = tuple(name for name, _ in _ITEM_FIELDS)


class ItemBuffer:
    """Items being collected, as plain lists; :meth:`freeze` makes a :class:`Items`."""

    __slots__ = ("cols", "flat")

    def __init__(self) -> None:
        self.cols: dict[str, list] = {name: [] for name in _FIELD_NAMES}
        self.flat: list[int] = []

    def __len__(self) -> int:
        return len(self.cols["op"])

    def add(self, op: int, launch: int, block: int, warp: int, lanes: int, site: int,
            lineno: int, src: int, *, space: int = 0, size: int = 0, addrs: tuple | None = None,
            space2: int = 0, addrs2: tuple | None = None, obj: int = 0, arg: int = 0,
            scope: int = int(O.Scope.DEVICE), sem: int = 0, proxy: int = 0) -> None:
        c = self.cols
        c["op"].append(op)
        c["launch"].append(launch)
        c["block"].append(block)
        c["warp"].append(warp)
        c["lanes"].append(lanes)
        c["space"].append(space)
        c["size"].append(size)
        self._addr(addrs, "amode", "a0", "a1")
        c["space2"].append(space2)
        self._addr(addrs2, "bmode", "b0", "b1")
        c["obj"].append(obj)
        c["arg"].append(arg)
        c["scope"].append(scope)
        c["sem"].append(sem)
        c["proxy"].append(proxy)
        c["site"].append(site)
        c["lineno"].append(lineno)
        c["src"].append(src)

    def _addr(self, spec: tuple | None, mode: str, k0: str, k1: str) -> None:
        c = self.cols
        if spec is None:
            c[mode].append(A_NONE)
            c[k0].append(0)
            c[k1].append(0)
        elif spec[0] == A_STRIDE:
            c[mode].append(A_STRIDE)
            c[k0].append(spec[1])
            c[k1].append(spec[2])
        else:
            c[mode].append(spec[0])
            c[k0].append(len(self.flat))
            c[k1].append(0)
            self.flat.extend(spec[1])

    def freeze(self) -> "Items":
        cols = {name: np.array(self.cols[name], dtype=dtype) for name, dtype in _ITEM_FIELDS}
        flat = np.array(self.flat, dtype=np.uint64)
        self.cols = {name: [] for name in _FIELD_NAMES}
        self.flat = []
        return Items(cols, flat)


@dataclass
class Items:
    """Frozen items: column arrays, and the addresses that A_ACTIVE/A_LANES index."""

    cols: dict[str, np.ndarray]
    flat: np.ndarray

    def __len__(self) -> int:
        return len(self.cols["op"])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.cols.values()) + self.flat.nbytes

    def take(self, index: np.ndarray) -> "Items":
        """The items at ``index``, in that order (their addresses stay in ``flat``)."""
        return Items({name: a[index] for name, a in self.cols.items()}, self.flat)

    @staticmethod
    def concat(parts: list["Items"]) -> "Items":
        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0] + [len(p.flat) for p in parts[:-1]])
        cols = {}
        for name in _FIELD_NAMES:
            arrays = [p.cols[name] for p in parts]
            if name in ("a0", "b0"):
                mode = "amode" if name == "a0" else "bmode"
                arrays = [np.where(p.cols[mode] >= A_ACTIVE, a + np.uint64(off), a)
                          for p, a, off in zip(parts, arrays, offsets)]
            cols[name] = np.concatenate(arrays)
        return Items(cols, np.concatenate([p.flat for p in parts]))


# --- rows ----------------------------------------------------------------------------

@dataclass
class Windows:
    """Generic windows of one launch (base, size), size 0 when unknown."""

    shared: tuple[int, int] = (0, 0)
    local: tuple[int, int] = (0, 0)


class Emitter:
    """Expands items into v1 rows and writes them, in order, chunk by chunk.

    Global memory the kernels read counts as initialized: the recording shows
    neither host copies nor memsets, and a GPU kernel reads what the host
    prepared. The first time the trace reads (or cp.async-copies from) an
    aligned :data:`GLOBAL_INIT_WINDOW` of global memory, an ``init`` row of the
    whole window comes just before, by the reading thread (an ``init`` is not an
    access: it orders nothing and races with nothing). Shared and local memory
    start uninitialized, so reading them before any write is an ``uninit_read``.
    """

    def __init__(self, writer, sources: list[str], *, generic: str = "fail") -> None:
        self.writer = writer
        self.sources = sources           # src index -> file, for messages
        self.generic = generic           # "fail" or "global" when a launch has no windows
        self.windows: dict[int, Windows] = {}
        self.buffer = ItemBuffer()
        self.pending: list[Items] = []
        self.pending_n = 0
        self.next_ts = 0
        self.rows = 0
        self.items = 0
        self._inited: set[int] = set()   # global windows declared initialized

    # -- input --

    def add_items(self, items: Items) -> None:
        self.flush_buffer()
        if len(items):
            self.pending.append(items)
            self.pending_n += len(items)
            if self.pending_n >= CHUNK_ITEMS:
                self.write_pending()

    def flush_buffer(self) -> None:
        if len(self.buffer):
            self.pending.append(self.buffer.freeze())
            self.pending_n += len(self.pending[-1])

    def maybe_flush(self) -> None:
        if len(self.buffer) >= CHUNK_ITEMS:
            self.flush_buffer()
            self.write_pending()

    def finish(self) -> None:
        self.flush_buffer()
        self.write_pending()

    # -- expansion --

    def write_pending(self) -> None:
        if not self.pending:
            return
        items = Items.concat(self.pending)
        self.pending, self.pending_n = [], 0
        if len(items):
            self._write(items)

    def _write(self, items: Items) -> None:
        c = items.cols
        n = len(items)
        ts_item = self.next_ts + np.arange(n, dtype=np.uint64)
        self.next_ts += n
        self.items += n
        lane_bits = ((c["lanes"][:, None] >> np.arange(WARP, dtype=np.uint32)) & 1).astype(bool)
        ii, lane = np.nonzero(lane_bits)
        if len(ii) == 0:
            return
        rank = (np.cumsum(lane_bits, axis=1, dtype=np.int64) - 1)[ii, lane]
        lane = lane.astype(np.int64)
        first = _lowest_lane(c["lanes"])[ii]
        addr = _addresses(c["amode"][ii], c["a0"][ii], c["a1"][ii], lane, rank, first,
                          items.flat)
        addr2 = _addresses(c["bmode"][ii], c["b0"][ii], c["b1"][ii], lane, rank, first,
                           items.flat)
        launch = c["launch"][ii]
        space = c["space"][ii].copy()
        space2 = c["space2"][ii].copy()
        op = c["op"][ii]
        self._resolve(space, addr, launch, ii, items, op != O.INIT)
        self._resolve(space2, addr2, launch, ii, items, op == O.CP_ASYNC)
        cols = {
            "ts": ts_item[ii], "op": op, "launch": launch, "block": c["block"][ii],
            "thread": (c["warp"][ii].astype(np.int64) * WARP + lane).astype(np.uint32),
            "space": space, "addr": addr, "size": c["size"][ii], "space2": space2,
            "addr2": addr2, "obj": c["obj"][ii], "arg": c["arg"][ii], "scope": c["scope"][ii],
            "sem": c["sem"][ii], "proxy": c["proxy"][ii], "site": c["site"][ii],
        }
        for piece in self._with_global_init(cols):
            self.writer.extend(**piece)
            self.rows += len(piece["ts"])

    def _resolve(self, space: np.ndarray, addr: np.ndarray, launch: np.ndarray,
                 ii: np.ndarray, items: Items, used: np.ndarray) -> None:
        """Generic addresses to (space, offset); window-relative shared/local offsets."""
        generic = used & (space == GENERIC)
        shared = used & (space == O.SPACE_SHARED)
        local = used & (space == O.SPACE_LOCAL)
        if not (generic.any() or shared.any() or local.any()):
            return
        for lid in np.unique(launch[generic | shared | local]).tolist():
            w = self.windows.get(lid, Windows())
            in_launch = launch == lid
            g = generic & in_launch
            if g.any():
                if w.shared[1] == 0 and w.local[1] == 0 and self.generic == "fail":
                    self._fail(items, ii[np.argmax(g)], "gpu-generic",
                               "a generic-address access, and the trace gives no shared or "
                               "local window to resolve it: pass --shared-window and "
                               "--local-window, or --generic-global if the kernel passes no "
                               "shared or local pointer through generic instructions")
                for sp, (base, size) in ((O.SPACE_SHARED, w.shared), (O.SPACE_LOCAL, w.local)):
                    if size:
                        hit = g & (addr >= np.uint64(base)) & (addr < np.uint64(base + size))
                        space[hit] = sp
                        addr[hit] -= np.uint64(base)
                        g &= ~hit
                space[g] = O.SPACE_GLOBAL
            for sp, (base, size), mask in ((O.SPACE_SHARED, w.shared, shared),
                                           (O.SPACE_LOCAL, w.local, local)):
                m = mask & in_launch
                if size and m.any():
                    hit = m & (addr >= np.uint64(base)) & (addr < np.uint64(base + size))
                    addr[hit] -= np.uint64(base)
        for sp, limit, what in ((O.SPACE_SHARED, SHARED_LIMIT, "shared"),
                                (O.SPACE_LOCAL, LOCAL_LIMIT, "local")):
            bad = used & (space == sp) & (addr >= np.uint64(limit))
            if bad.any():
                k = int(np.argmax(bad))
                self._fail(items, ii[k], "gpu-address",
                           f"{what} address {int(addr[k]):#x} is outside the block's {what} "
                           f"memory (distributed shared memory, or a generic address with "
                           f"the wrong window, is not followed)")

    def _fail(self, items: Items, item: int, rule: str, message: str):
        src = self.sources[int(items.cols["src"][item])]
        raise error(src, int(items.cols["lineno"][item]), rule, message)

    def _with_global_init(self, cols: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """``cols`` in pieces, with ``init`` rows for the global windows read here for
        the first time, each just before the row that first reads it."""
        op, space, addr, size = cols["op"], cols["space"], cols["addr"], cols["size"]
        reads = ((op == O.READ) | (op == O.ATOMIC)) & (space == O.SPACE_GLOBAL) & (size > 0)
        copies = (op == O.CP_ASYNC) & (cols["space2"] == O.SPACE_GLOBAL) & (size > 0)
        if not (reads.any() or copies.any()):
            return [cols]
        lo = np.concatenate([addr[reads], cols["addr2"][copies]])
        hi = lo + np.concatenate([size[reads], size[copies]]).astype(np.uint64) - np.uint64(1)
        row = np.concatenate([np.flatnonzero(reads), np.flatnonzero(copies)])
        shift = np.uint64(GLOBAL_INIT_WINDOW.bit_length() - 1)
        win = np.concatenate([lo >> shift, hi >> shift])
        row = np.concatenate([row, row])
        wins, first = np.unique(win, return_index=True)
        fresh = np.array([w not in self._inited for w in wins.tolist()], dtype=bool)
        if not fresh.any():
            return [cols]
        wins, at = wins[fresh], row[first[fresh]]
        self._inited.update(wins.tolist())
        # Just before the first read, by the reading thread (an init is not an access,
        # and that thread is running, not waiting at a barrier).
        k = len(wins)
        pos = at
        init = {name: a[pos] for name, a in cols.items()}
        init["op"] = np.full(k, O.INIT, dtype=cols["op"].dtype)
        init["space"] = np.zeros(k, dtype=cols["space"].dtype)
        init["addr"] = wins << shift
        init["size"] = np.full(k, GLOBAL_INIT_WINDOW, dtype=cols["size"].dtype)
        for name in ("space2", "addr2", "obj", "arg", "sem", "proxy"):
            init[name] = np.zeros(k, dtype=cols[name].dtype)
        init["scope"] = np.full(k, O.SCOPE_DEVICE, dtype=cols["scope"].dtype)
        init["site"] = np.full(k, 0xFFFFFFFF, dtype=cols["site"].dtype)
        out, prev = [], 0
        for p in np.unique(pos).tolist():
            if p > prev:
                out.append({name: a[prev:p] for name, a in cols.items()})
            sel = pos == p
            out.append({name: a[sel] for name, a in init.items()})
            prev = p
        out.append({name: a[prev:] for name, a in cols.items()})
        return out


def _lowest_lane(lanes: np.ndarray) -> np.ndarray:
    low = lanes & (~lanes + np.uint32(1))  # lowest set bit
    out = np.zeros(len(lanes), dtype=np.int64)
    nz = low != 0
    out[nz] = np.log2(low[nz].astype(np.float64)).astype(np.int64)
    return out


def _addresses(mode, a0, a1, lane, rank, first, flat) -> np.ndarray:
    out = np.zeros(len(mode), dtype=np.uint64)
    s = mode == A_STRIDE
    if s.any():
        step = (a1[s] * (lane[s] - first[s])).astype(np.uint64)
        out[s] = a0[s] + step
    a = mode == A_ACTIVE
    if a.any():
        out[a] = flat[a0[a].astype(np.int64) + rank[a]]
    ln = mode == A_LANES
    if ln.any():
        out[ln] = flat[a0[ln].astype(np.int64) + lane[ln]]
    return out


# --- translation ---------------------------------------------------------------------

class Launch:
    """One kernel launch being imported: translates records into items.

    A record with a ``mask`` names its active lanes. A record without one
    (formats that record no active mask) is read this way: the lanes of an
    access are those whose address is not 0 (:meth:`lanes_from_addresses`),
    and an instruction without addresses (fence, cp.async commit or wait)
    applies to every lane of the warp that has not exited.
    """

    def __init__(self, launch: int, info: KernelInfo, emitter: Emitter, src: int, *,
                 lanes_per_warp: Callable[[int], int] | None = None,
                 explicit_barriers: bool = True, notes: "Notes",
                 single_ldgsts: str | None = None) -> None:
        self.id = launch
        self.info = info
        self.emitter = emitter
        self.src = src
        self.path = emitter.sources[src]
        self.explicit_barriers = explicit_barriers
        self.single_ldgsts = single_ldgsts   # why an LDGSTS cannot be followed, if it cannot
        self.notes = notes
        self.exited: dict[tuple[int, int], int] = {}
        self.cp_pending: dict[tuple[int, int], Record] = {}
        self._lanes_per_warp = lanes_per_warp
        threads = info.threads
        self._full_warps = threads // WARP
        self._tail = (1 << (threads % WARP)) - 1 if threads % WARP else FULL_MASK
        sw, lw = info.shared_window, info.local_window
        emitter.windows[launch] = Windows(sw or (0, 0), lw or (0, 0))

    # -- lanes --

    def existing(self, warp: int) -> int:
        """Lanes of ``warp`` that are threads of the block."""
        if self._lanes_per_warp is not None:
            return self._lanes_per_warp(warp)
        if warp < self._full_warps:
            return FULL_MASK
        if warp == self._full_warps and self._tail != FULL_MASK:
            return self._tail
        return 0

    def live(self, block: int, warp: int) -> int:
        return self.existing(warp) & ~self.exited.get((block, warp), 0)

    def fail(self, rec: Record, rule: str, message: str):
        raise error(self.path, rec.lineno, rule, message)

    def record_lanes(self, rec: Record, sass: Sass) -> int:
        """Active lanes of a masked record, checked against the block's size."""
        exist = self.existing(rec.warp)
        if rec.mask & ~exist:
            self.fail(rec, "gpu-lanes", f"{rec.opcode}: active mask {rec.mask:#010x} names "
                      f"lanes of warp {rec.warp} that are not threads of a "
                      f"{self.info.threads}-thread block")
        return rec.mask

    def lanes_from_addresses(self, rec: Record, sass: Sass, space: int) -> int:
        """Lanes of an access from a format without an active mask.

        A lane whose address is 0 did not access, as CUTracer's own tools read
        it, except in shared and local memory, where 0 is a valid offset: there
        a 0 counts as an access when it continues the arithmetic progression of
        the other lanes' addresses (``s[threadIdx.x]`` at offset 0 for lane 0),
        and a record whose every lane is 0 is one access at offset 0 by the
        lowest live lane. Other zero lanes are counted in the import notes.
        """
        addrs = rec.addrs[1]
        exist = self.live(rec.block, rec.warp)
        lanes = 0
        zeros = []
        for lane, a in enumerate(addrs):
            if a:
                lanes |= 1 << lane
            else:
                zeros.append(lane)
        lanes &= exist
        if space in (O.SPACE_SHARED, O.SPACE_LOCAL) and zeros:
            if len(zeros) == WARP:
                low = exist & -exist
                self.notes.count("zero_broadcast")
                return low
            nonzero = [(lane, addrs[lane]) for lane in range(WARP) if addrs[lane]]
            step = _progression(nonzero)
            if step is not None:
                l0, a0 = nonzero[0]
                for z in zeros:
                    if a0 + step * (z - l0) == 0:
                        lanes |= (1 << z) & exist
            if any(not (lanes >> z) & 1 and (exist >> z) & 1 for z in zeros):
                self.notes.count("zero_lanes")
        elif lanes == 0:
            self.fail(rec, "gpu-address", f"{rec.opcode}: every lane's address is 0")
        return lanes

    def access_lanes(self, rec: Record, sass: Sass) -> int:
        if rec.mask is not None:
            return self.record_lanes(rec, sass)
        if rec.addrs is None or rec.addrs[0] != A_LANES:
            self.fail(rec, "gpu-address", f"{rec.opcode}: no addresses")
        return self.lanes_from_addresses(rec, sass, sass.space)

    def plain_lanes(self, rec: Record, sass: Sass) -> int:
        """Lanes of an instruction without addresses (fence, commit, wait)."""
        if rec.mask is not None:
            return self.record_lanes(rec, sass)
        return self.live(rec.block, rec.warp)

    # -- the translation --

    def translate(self, rec: Record, out: ItemBuffer) -> Arrival | None:
        """Add ``rec``'s items to ``out``; return a barrier arrival to be counted
        at its release (a barrier without a count), else None."""
        sass = decode(rec.opcode)
        eff = sass.effect
        key = (rec.block, rec.warp)
        if key in self.cp_pending and eff is not Effect.CP_ASYNC:
            first = self.cp_pending.pop(key)
            self.fail(first, "gpu-ldgsts", f"{first.opcode}: the tracer writes two address "
                      f"records per LDGSTS (shared destination, then global source); the "
                      f"next record of this warp (line {rec.lineno}) is {rec.opcode}")
        if eff is Effect.NONE:
            return None
        if not sass.followable:
            self.fail(rec, "sass-" + eff.value, f"{rec.opcode}: {sass.why}")
        add = out.add
        common = (self.id, rec.block, rec.warp)
        if eff in (Effect.LOAD, Effect.STORE, Effect.ATOMIC):
            if rec.addrs is None:
                self.fail(rec, "gpu-address", f"{rec.opcode}: a memory instruction without "
                          f"addresses")
            lanes = self.access_lanes(rec, sass)
            if sass.lanes < WARP:
                lanes &= (1 << sass.lanes) - 1
            if lanes:
                op = {Effect.LOAD: O.READ, Effect.STORE: O.WRITE, Effect.ATOMIC: O.ATOMIC}[eff]
                add(op, *common, lanes, rec.site, rec.lineno, self.src, space=sass.space,
                    size=sass.size, addrs=self._addr_spec(rec, lanes), scope=sass.scope,
                    sem=sass.sem)
            return None
        if eff is Effect.CP_ASYNC:
            return self._cp_async(rec, sass, out, key)
        if eff is Effect.EXIT:
            if rec.mask is not None:
                self.exited[key] = self.exited.get(key, 0) | rec.mask
            return None
        if eff in (Effect.BAR_SYNC, Effect.BAR_ARRIVE):
            return self._barrier(rec, sass, out)
        lanes = self.plain_lanes(rec, sass)
        if not lanes:
            return None
        if eff is Effect.CP_COMMIT:
            add(O.CP_ASYNC_COMMIT, *common, lanes, rec.site, rec.lineno, self.src)
        elif eff is Effect.CP_WAIT:
            ops = rec.ops or SyncOperands()
            if ops.scoreboard not in (None, 0):
                return None  # a register-scoreboard wait
            if ops.pending is None:
                self.fail(rec, "sass-unfollowable", f"{rec.opcode}: the trace does not record "
                          f"how many cp.async groups may stay pending (tracer version 5 or "
                          f"later records it)")
            add(O.CP_ASYNC_WAIT, *common, lanes, rec.site, rec.lineno, self.src,
                arg=ops.pending)
        elif eff is Effect.FENCE:
            add(O.FENCE, *common, lanes, rec.site, rec.lineno, self.src, scope=sass.scope,
                sem=sass.sem)
        elif eff is Effect.FENCE_PROXY_ASYNC:
            add(O.FENCE_PROXY_ASYNC, *common, lanes, rec.site, rec.lineno, self.src)
        elif eff is Effect.WARP_SYNC:
            mask = (rec.ops or SyncOperands()).mask
            if mask is None:
                self.fail(rec, "sass-unfollowable", f"{rec.opcode}: the trace does not record "
                          f"the lane mask (a register operand, or a tracer that records no "
                          f"operands)")
            mask &= self.live(rec.block, rec.warp)
            lanes &= mask
            if lanes:
                add(O.WARP_SYNC, *common, lanes, rec.site, rec.lineno, self.src, arg=mask)
        return None

    def _addr_spec(self, rec: Record, lanes: int) -> tuple:
        spec = rec.addrs
        if spec[0] == A_ACTIVE and rec.mask is not None and lanes != rec.mask:
            # Keep the addresses of the lanes that stay (LDSM .1/.2 use fewer lanes).
            kept = [a for i, a in zip(_bits(rec.mask), spec[1]) if (lanes >> i) & 1]
            return (A_ACTIVE, kept)
        return spec

    def _cp_async(self, rec: Record, sass: Sass, out: ItemBuffer, key) -> None:
        if self.single_ldgsts:
            self.fail(rec, "sass-unfollowable", f"{rec.opcode}: {self.single_ldgsts}")
        first = self.cp_pending.pop(key, None)
        if first is None:
            self.cp_pending[key] = rec
            return None
        if first.opcode != rec.opcode or first.pc != rec.pc:
            self.fail(first, "gpu-ldgsts", f"{first.opcode}: one address record, then "
                      f"{rec.opcode} at line {rec.lineno}; the tracer writes two per LDGSTS")
        if rec.mask is not None:
            if first.mask != rec.mask:
                self.fail(rec, "gpu-ldgsts", f"{rec.opcode}: the two address records of one "
                          f"LDGSTS have different masks")
            lanes = self.record_lanes(rec, sass)
        else:
            lanes = self.lanes_from_addresses(rec, sass, O.SPACE_GLOBAL)
        if lanes:
            out.add(O.CP_ASYNC, self.id, rec.block, rec.warp, lanes, first.site, first.lineno,
                    self.src, space=O.SPACE_SHARED, size=sass.size,
                    addrs=self._addr_spec(first, lanes), space2=O.SPACE_GLOBAL,
                    addrs2=self._addr_spec(rec, lanes))
        return None

    def _barrier(self, rec: Record, sass: Sass, out: ItemBuffer) -> Arrival | None:
        ops = rec.ops or SyncOperands()
        if ops.barrier is None or ops.count is None:
            self.fail(rec, "sass-unfollowable", f"{rec.opcode}: the trace does not record the "
                      f"barrier's id and thread count (register operands, or a tracer "
                      f"version that records no operands)")
        lanes = self.live(rec.block, rec.warp)
        if rec.mask is not None:
            if self.record_lanes(rec, sass) == 0:
                return None  # predicated off in every lane
        if not lanes:
            return None
        if ops.count == IMPLICIT_COUNT:
            if sass.effect is Effect.BAR_ARRIVE:
                self.fail(rec, "sass-unfollowable", f"{rec.opcode}: BAR.ARV without a count")
            return Arrival(rec.block, rec.warp, ops.barrier, lanes, rec.site, rec.lineno)
        if not self.explicit_barriers:
            self.fail(rec, "sass-unfollowable", f"{rec.opcode}: a barrier with an explicit "
                      f"count in a trace without an order between warps")
        op = O.BAR_SYNC if sass.effect is Effect.BAR_SYNC else O.BAR_ARRIVE
        out.add(op, self.id, rec.block, rec.warp, lanes, rec.site, rec.lineno, self.src,
                obj=ops.barrier, arg=ops.count)
        return None

    def release(self, arrivals: list[Arrival], out: ItemBuffer) -> None:
        """Write one barrier generation: every arriving lane, counted together."""
        count = sum(popcount(a.lanes) for a in arrivals)
        for a in arrivals:
            out.add(O.BAR_SYNC, self.id, a.block, a.warp, a.lanes, a.site, a.lineno,
                    self.src, obj=a.barrier, arg=count)

    def finish(self) -> None:
        for key, rec in self.cp_pending.items():
            self.fail(rec, "gpu-ldgsts", f"{rec.opcode}: the trace ends after the first of "
                      f"the two address records of this LDGSTS")


def _bits(mask: int):
    lane = 0
    while mask:
        if mask & 1:
            yield lane
        mask >>= 1
        lane += 1


def _progression(points: list[tuple[int, int]]) -> int | None:
    """The common step of ``(lane, address)`` points on one line through them, if any."""
    if len(points) < 2:
        return None
    (l0, a0), (l1, a1) = points[0], points[1]
    if (a1 - a0) % (l1 - l0):
        return None
    step = (a1 - a0) // (l1 - l0)
    if step == 0:
        return None
    if all(a - a0 == step * (lane - l0) for lane, a in points[2:]):
        return step
    return None


class Notes:
    """What an import could not see exactly; written into the trace's metadata."""

    TEXT = {
        "zero_lanes": "{n} shared- or local-memory instructions had lanes whose address was "
                      "0 that did not fit the other lanes' pattern: the format records no "
                      "active mask, so they were taken as inactive (an access to offset 0 by "
                      "such a lane is not in the trace)",
        "zero_broadcast": "{n} shared- or local-memory instructions had address 0 in every "
                          "lane: each was taken as one access at offset 0 by the warp's "
                          "lowest live lane",
    }

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.lines: list[str] = []

    def count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def add(self, text: str) -> None:
        if text not in self.lines:
            self.lines.append(text)

    def all(self) -> list[str]:
        return self.lines + [self.TEXT[k].format(n=n) for k, n in self.counts.items()]


# --- replay orders -------------------------------------------------------------------

class RecordedOrder:
    """The file's own order, which the GPU produced: every record in turn.

    A barrier without a count releases when a warp that arrived at it has its
    next record (it left the barrier), or at the end of the launch.
    """

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.emitter = launch.emitter
        self.waiting: dict[tuple[int, int], tuple[int, int]] = {}
        self.generations: dict[tuple[int, int], list[Arrival]] = {}

    def record(self, rec: Record) -> None:
        key = self.waiting.get((rec.block, rec.warp))
        if key is not None:
            self.release(key)
        arrival = self.launch.translate(rec, self.emitter.buffer)
        if arrival is not None:
            gen_key = (arrival.block, arrival.barrier)
            self.generations.setdefault(gen_key, []).append(arrival)
            self.waiting[(arrival.block, arrival.warp)] = gen_key
        self.emitter.maybe_flush()

    def release(self, key: tuple[int, int]) -> None:
        arrivals = self.generations.pop(key)
        for a in arrivals:
            del self.waiting[(a.block, a.warp)]
        self.launch.release(arrivals, self.emitter.buffer)

    def finish(self) -> None:
        for key in list(self.generations):
            self.release(key)
        self.launch.finish()


class _Warp:
    """One warp's items in a block: frozen parts (in memory or spilled), the live
    tail, and where its segments end (item counts at each barrier arrival)."""

    __slots__ = ("parts", "starts", "live", "count", "ends", "arrivals")

    def __init__(self) -> None:
        self.parts: list = []        # Items, or the path of a spilled Items
        self.starts: list[int] = []  # item index of each part's first item
        self.live = ItemBuffer()
        self.count = 0               # items in frozen parts
        self.ends: list[int] = []
        self.arrivals: list[Arrival] = []

    @property
    def total(self) -> int:
        return self.count + len(self.live)


class CtaReplay:
    """A replay order for a trace that keeps each warp's instructions in order
    but not the order between warps (Accel-Sim's ``.traceg``).

    Each block is replayed alone, blocks in file order. Each warp's records are
    cut at its barrier arrivals into segments; then, in rounds, every warp not
    waiting runs (lowest warp first) to its next barrier or its end, and when
    all live warps wait, the barrier they wait at releases them together. The
    order respects every warp's program order and every barrier (all warps
    reach a barrier before any leaves it), and nothing else: what a barrier
    orders is exact, and accesses that no barrier orders race whatever the
    order. Only conclusions that depend on the recorded interleaving are the
    replay's choice: which of two racing accesses comes first (so the hazard's
    name, ``raw`` or ``war``), and hand-offs through flags or atomics, which
    this order runs block after block (a waiting block comes before the
    block it waits for, so the hand-off is reported as a race).

    A block's events are buffered until its end; past :data:`SPILL_BYTES` they
    go to a temporary directory.
    """

    def __init__(self, launch: Launch, spill_dir: str | None = None) -> None:
        self.launch = launch
        self.emitter = launch.emitter
        self.spill_root = spill_dir
        self._tmp: str | None = None
        self.block: int | None = None
        self.warps: dict[int, _Warp] = {}
        self.held = 0
        self.spilled = 0

    def begin_block(self, block: int, lineno: int) -> None:
        self.block = block
        self.warps = {}
        self.held = 0

    def begin_warp(self, warp: int) -> None:
        self.warps.setdefault(warp, _Warp())

    def record(self, rec: Record) -> None:
        w = self.warps[rec.warp]
        arrival = self.launch.translate(rec, w.live)
        if arrival is not None:
            w.ends.append(w.total)
            w.arrivals.append(arrival)
        if len(w.live) >= CHUNK_ITEMS:
            self._freeze(w)

    def _freeze(self, w: _Warp) -> None:
        if not len(w.live):
            return
        items = w.live.freeze()
        w.starts.append(w.count)
        w.count += len(items)
        if self.held + items.nbytes > SPILL_BYTES:
            w.parts.append(self._spill(items))
        else:
            self.held += items.nbytes
            w.parts.append(items)

    def _spill(self, items: Items) -> str:
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="tracerace-replay-", dir=self.spill_root)
        path = os.path.join(self._tmp, f"{self.spilled}.npz")
        self.spilled += 1
        np.savez(path, flat=items.flat, **items.cols)
        return path

    @staticmethod
    def _load(part) -> Items:
        if isinstance(part, Items):
            return part
        with np.load(part) as z:
            return Items({name: z[name] for name in _FIELD_NAMES}, z["flat"])

    def _schedule(self) -> list:
        """The emission order: ``(warp, lo, hi)`` item ranges and barrier releases."""
        out: list = []
        seg = {w: 0 for w in self.warps}
        start = {w: 0 for w in self.warps}
        runnable = sorted(self.warps)
        while runnable:
            waiting: dict[int, Arrival] = {}
            for w in runnable:
                st = self.warps[w]
                k = seg[w]
                end = st.ends[k] if k < len(st.ends) else st.count
                if end > start[w]:
                    out.append((w, start[w], end))
                start[w] = end
                if k < len(st.arrivals):
                    waiting[w] = st.arrivals[k]
            if not waiting:
                break
            barriers = sorted({a.barrier for a in waiting.values()})
            if len(barriers) > 1:
                first = min(waiting.values(), key=lambda a: a.lineno)
                raise error(self.launch.path, first.lineno, "gpu-barrier",
                            f"block {self.block}: its live warps wait at different barriers "
                            f"({', '.join(map(str, barriers))}) without a count, so none can "
                            f"release (warps {', '.join(map(str, sorted(waiting)))})")
            out.append([waiting[w] for w in sorted(waiting)])
            for w in waiting:
                seg[w] += 1
            runnable = sorted(waiting)
        return out

    def end_block(self) -> None:
        for st in self.warps.values():
            self._freeze(st)
        releases = ItemBuffer()
        pieces: list[tuple] = []   # (part key, lo, hi) in emission order
        n = 0
        for step in self._schedule():
            if isinstance(step, list):
                lo = len(releases)
                self.launch.release(step, releases)
                pieces.append((None, lo, len(releases)))
                n += len(releases) - lo
                continue
            w, lo, hi = step
            st = self.warps[w]
            i = bisect.bisect_right(st.starts, lo) - 1
            while lo < hi:
                part_lo = st.starts[i]
                part_hi = part_lo + (st.starts[i + 1] - part_lo if i + 1 < len(st.starts)
                                     else st.count - part_lo)
                take = min(hi, part_hi)
                pieces.append(((w, i), lo - part_lo, take - part_lo))
                n += take - lo
                lo = take
                i += 1
            if n >= CHUNK_ITEMS:
                self._emit(pieces, releases)
                pieces, n = [], 0
        self._emit(pieces, releases)
        self.warps = {}
        self.held = 0

    def _emit(self, pieces: list[tuple], releases: ItemBuffer) -> None:
        """Gather ``pieces`` (ranges of parts, in order) into one chunk for the emitter."""
        if not pieces:
            return
        keys = list(dict.fromkeys(key for key, _, _ in pieces))
        parts, offset = [], {}
        total = 0
        frozen_releases = releases.freeze() if None in keys else None
        for key in keys:
            if key is None:
                part = frozen_releases
            else:
                w, i = key
                part = self._load(self.warps[w].parts[i])
            offset[key] = total
            total += len(part)
            parts.append(part)
        # The release buffer was frozen above: later pieces index it from 0 again.
        index = np.concatenate([np.arange(offset[key] + lo, offset[key] + hi, dtype=np.int64)
                                for key, lo, hi in pieces])
        self.emitter.add_items(Items.concat(parts).take(index))

    def finish(self) -> None:
        self.launch.finish()
        self.close()

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
