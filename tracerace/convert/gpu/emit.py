"""From items to v1 rows: lanes expanded, addresses resolved, global memory initialized.

:class:`Emitter` expands items into rows, lane by lane and vectorised,
resolves generic addresses and window-relative shared/local addresses,
declares global memory initialized, and streams the rows to a
:class:`~tracerace.trace.writer.TraceWriter`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...trace import ops as O
from ...trace.columns import ADDRESS_END
from .items import A_ACTIVE, A_LANES, A_STRIDE, WARP, ItemBuffer, Items
from .sass import GENERIC
from .source import error

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


@dataclass
class Clusters:
    """The thread-block clusters of one launch, from a trace that gives each block's
    cluster and rank (Accel-Sim's ``.tracez`` index).

    ``cluster[b]`` is block ``b``'s cluster id (clusters numbered in the order the
    trace first names them), ``members[c, r]`` the block of rank ``r`` in cluster
    ``c`` (-1 where the trace has none). The shared window holds the cluster's
    shared memories side by side: block rank ``r`` owns ``[base + r * size, base
    + (r + 1) * size)`` of the generic shared window (``base``, ``size``), so a
    generic address there is ``(owner, offset)``; a shared-space instruction
    (``STS``, ``LDS``, ...) reaches its own block's memory whichever window its
    address is in."""

    cluster: np.ndarray
    members: np.ndarray
    threads: int
    """Threads of one cluster: the arrivals a cluster barrier generation counts."""

    @property
    def size(self) -> int:
        return int(self.members.shape[1])

    def rank_of(self, block: int) -> int:
        row = self.members[self.cluster[block]]
        return int(np.flatnonzero(row == block)[0])


@dataclass
class Windows:
    """Generic windows of one launch (base, size), size 0 when unknown, and its
    clusters (None: every block alone)."""

    shared: tuple[int, int] = (0, 0)
    local: tuple[int, int] = (0, 0)
    clusters: Clusters | None = None


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
        self.sources = sources  # src index -> file, for messages
        self.generic = generic  # "fail" or "global" when a launch has no windows
        self.windows: dict[int, Windows] = {}
        self.buffer = ItemBuffer()
        self.pending: list[Items] = []
        self.pending_n = 0
        self.next_ts = 0
        self.rows = 0
        self.items = 0
        self._inited: set[int] = set()  # global windows declared initialized

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
        addr = _addresses(c["amode"][ii], c["a0"][ii], c["a1"][ii], lane, rank, first, items.flat)
        addr2 = _addresses(c["bmode"][ii], c["b0"][ii], c["b1"][ii], lane, rank, first, items.flat)
        launch = c["launch"][ii]
        space = c["space"][ii].copy()
        space2 = c["space2"][ii].copy()
        op = c["op"][ii]
        block = c["block"][ii]
        peer = block.copy()
        self._resolve(space, addr, launch, ii, items, op != O.INIT, block, peer)
        self._resolve(space2, addr2, launch, ii, items, op == O.CP_ASYNC)
        cols = {
            "ts": ts_item[ii],
            "op": op,
            "launch": launch,
            "block": block,
            "peer": peer,
            "cluster": self._cluster_ids(launch, block),
            "thread": (c["warp"][ii].astype(np.int64) * WARP + lane).astype(np.uint32),
            "space": space,
            "addr": addr,
            "size": c["size"][ii],
            "space2": space2,
            "addr2": addr2,
            "obj": c["obj"][ii],
            "arg": c["arg"][ii],
            "scope": c["scope"][ii],
            "sem": c["sem"][ii],
            "proxy": c["proxy"][ii],
            "site": c["site"][ii],
        }
        for piece in self._with_global_init(cols):
            self.writer.extend(**piece)
            self.rows += len(piece["ts"])

    def _cluster_ids(self, launch: np.ndarray, block: np.ndarray) -> np.ndarray:
        out = block.copy()
        for lid in np.unique(launch).tolist():
            clusters = self.windows.get(lid, Windows()).clusters
            if clusters is not None:
                m = launch == lid
                out[m] = clusters.cluster[block[m]]
        return out

    def _resolve(
        self,
        space: np.ndarray,
        addr: np.ndarray,
        launch: np.ndarray,
        ii: np.ndarray,
        items: Items,
        used: np.ndarray,
        block: np.ndarray | None = None,
        peer: np.ndarray | None = None,
    ) -> None:
        """Generic addresses to (space, offset); window-relative shared/local offsets;
        in a launch of clusters, the block that owns each shared address (``peer``)."""
        generic = used & (space == GENERIC)
        shared = used & (space == O.SPACE_SHARED)
        local = used & (space == O.SPACE_LOCAL)
        if not (generic.any() or shared.any() or local.any()):
            return
        for lid in np.unique(launch[generic | shared | local]).tolist():
            w = self.windows.get(lid, Windows())
            in_launch = launch == lid
            shared_window = w.shared
            if w.clusters is not None and w.shared[1]:
                # The cluster's windows side by side (Clusters): resolved as one, split
                # into owner and offset below.
                shared_window = (w.shared[0], w.shared[1] * w.clusters.size)
            g = generic & in_launch
            if g.any():
                if w.shared[1] == 0 and w.local[1] == 0 and self.generic == "fail":
                    self._fail(
                        items,
                        ii[np.argmax(g)],
                        "gpu-generic",
                        "a generic-address access, and the trace gives no shared or "
                        "local window to resolve it: pass --shared-window and "
                        "--local-window, or --generic-global if the kernel passes no "
                        "shared or local pointer through generic instructions",
                    )
                for sp, (base, size) in (
                    (O.SPACE_SHARED, shared_window),
                    (O.SPACE_LOCAL, w.local),
                ):
                    if size:
                        hit = g & _inside(addr, base, size)
                        space[hit] = sp
                        addr[hit] -= np.uint64(base)
                        if sp == O.SPACE_SHARED:
                            self._owners(w, addr, hit, block, peer)
                        g &= ~hit
                space[g] = O.SPACE_GLOBAL
            for (base, size), mask in ((shared_window, shared), (w.local, local)):
                m = mask & in_launch
                if size and m.any():
                    hit = m & _inside(addr, base, size)
                    addr[hit] -= np.uint64(base)
                    if mask is shared and w.clusters is not None:
                        # A shared-space instruction (STS, LDS, ATOMS, LDSM) reaches
                        # its own block's memory only: the offset in its window.
                        addr[hit] %= np.uint64(w.shared[1])
        for sp, limit, what in (
            (O.SPACE_SHARED, SHARED_LIMIT, "shared"),
            (O.SPACE_LOCAL, LOCAL_LIMIT, "local"),
        ):
            bad = used & (space == sp) & (addr >= np.uint64(limit))
            if bad.any():
                k = int(np.argmax(bad))
                self._fail(
                    items,
                    ii[k],
                    "gpu-address",
                    f"{what} address {int(addr[k]):#x} is outside the block's {what} "
                    f"memory (distributed shared memory, or a generic address with "
                    f"the wrong window, is not followed)",
                )

    @staticmethod
    def _owners(w: Windows, addr, hit, block, peer) -> None:
        """Generic addresses resolved to shared offsets ``addr[hit]`` in the cluster's
        windows: to the owning block (``peer``) and the offset in its window."""
        if w.clusters is None or peer is None or not hit.any():
            return
        size = np.uint64(w.shared[1])
        rank = (addr[hit] // size).astype(np.int64)
        addr[hit] %= size
        peer[hit] = w.clusters.members[w.clusters.cluster[block[hit]], rank]

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
        # The last window of the address space stops one byte short: addr + size
        # must fit 64 bits.
        room = np.uint64(ADDRESS_END) - init["addr"]
        init["size"] = np.minimum(room, np.uint64(GLOBAL_INIT_WINDOW)).astype(cols["size"].dtype)
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


def _inside(addr: np.ndarray, base: int, size: int) -> np.ndarray:
    """Mask of ``addr`` in ``[base, base + size)``; the window may end at 2^64."""
    return (addr >= np.uint64(base)) & (addr - np.uint64(base) < np.uint64(size))


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
