"""Replay orders: the order in which a launch's records become rows.

:class:`RecordedOrder` keeps the order of the file, which is an order the GPU
really produced (the tracer's channel receives records in the order warps
pushed them); :class:`CtaReplay` builds one for Accel-Sim's ``.traceg``, which
keeps each warp's instructions in order but not the order between warps (see
its doc).
"""

from __future__ import annotations

import bisect
import os
import shutil
import tempfile

import numpy as np

from .emit import CHUNK_ITEMS
from .items import FIELD_NAMES, ItemBuffer, Items
from .kernel import Arrival, Launch, Record
from .source import error

SPILL_BYTES = 256 << 20
"""A block whose buffered events pass this many bytes spills them to disk
(:class:`CtaReplay`)."""


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
        self.parts: list = []  # Items, or the path of a spilled Items
        self.starts: list[int] = []  # item index of each part's first item
        self.live = ItemBuffer()
        self.count = 0  # items in frozen parts
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

    def begin_warp(self, warp: int, block: int | None = None) -> None:
        self.warps.setdefault(self.key(block, warp), _Warp())

    def key(self, block: int | None, warp: int):
        """A warp's key in :attr:`warps`: its number, in the one block replayed."""
        return warp

    def record(self, rec: Record) -> None:
        w = self.warps[self.key(rec.block, rec.warp)]
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
            return Items({name: z[name] for name in FIELD_NAMES}, z["flat"])

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
                raise error(
                    self.launch.path,
                    first.lineno,
                    "gpu-barrier",
                    f"block {self.block}: its live warps wait at different barriers "
                    f"({', '.join(map(str, barriers))}) without a count, so none can "
                    f"release (warps {', '.join(map(str, sorted(waiting)))})",
                )
            out.append([waiting[w] for w in sorted(waiting)])
            for w in waiting:
                seg[w] += 1
            runnable = sorted(waiting)
        return out

    def end_block(self) -> None:
        for st in self.warps.values():
            self._freeze(st)
        releases = ItemBuffer()
        pieces: list[tuple] = []  # (part key, lo, hi) in emission order
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
                part_hi = part_lo + (
                    st.starts[i + 1] - part_lo if i + 1 < len(st.starts) else st.count - part_lo
                )
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
        index = np.concatenate(
            [
                np.arange(offset[key] + lo, offset[key] + hi, dtype=np.int64)
                for key, lo, hi in pieces
            ]
        )
        self.emitter.add_items(Items.concat(parts).take(index))

    def finish(self) -> None:
        self.launch.finish()
        self.close()

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
