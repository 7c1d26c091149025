"""A replay order for grouped traces whose warps hand data over through mbarriers.

:class:`~tracerace.convert.gpu.order.CtaReplay` orders a block's warps at its
``__syncthreads`` barriers. A warp-specialized kernel also orders them through
mbarriers: a consumer warp's wait returns only once the phase it waits for has
completed, that is after the producer's arrivals (and expect-tx bytes) that
complete it. :class:`PhaseReplay` keeps that order too. It follows each
mbarrier of the block as the replay runs (expected count, pending arrivals,
transaction count, phase: the rules of ``trace-format-v1.md`` rule 6), and a
warp whose next item is a wait runs on only when the phase it waits for has
completed, as on the GPU: ``try_wait.parity P`` returns when the current
phase's parity is not ``P``.

A wait for parity 1 before the mbarrier's first phase completes returns at
once on the GPU (the producer's first wait on an "empty" mbarrier): it waits
for nothing and orders nothing, so it is left out of the trace. A wait that no
order of the recorded warps lets return (the GPU did return from it, so the
trace lacks what completed the phase) fails the import, naming the wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...trace import ops as O
from .emit import CHUNK_ITEMS
from .kernel import Launch, Record, popcount
from .order import CtaReplay
from .source import error

MARK_BARRIER, MARK_ACTION, MARK_WAIT = 0, 1, 2
"""Kinds of a warp's marks: a barrier arrival (after ``index`` items), an
mbarrier action (item ``index``), an mbarrier wait (item ``index``)."""
MBAR_ACTIONS = frozenset({O.MBAR_INIT, O.MBAR_ARRIVE, O.MBAR_EXPECT_TX, O.MBAR_INVAL})
FIRST_PHASE_PARITY = 1
"""The parity a wait gives to return at once while phase 0 is in progress."""


@dataclass
class _MBar:
    """The replay's view of one mbarrier of the block."""

    expected: int = 0
    pending: int = 0
    tx: int = 0
    phase: int = 0
    valid: bool = False

    def apply(self, op: int, arg: int, lanes: int) -> bool:
        """One item: each of its ``lanes`` threads does ``op`` in turn; whether a phase
        completed."""
        phase = self.phase
        for _ in range(lanes):
            if op == O.MBAR_INIT:
                self.expected = self.pending = arg
                self.tx = self.phase = 0
                self.valid = True
            elif op == O.MBAR_INVAL:
                self.valid = False
            elif self.valid:
                if op == O.MBAR_ARRIVE:
                    self.pending -= max(arg, 1)
                else:
                    self.tx += arg
                if self.pending <= 0 and self.tx <= 0:
                    self.phase += 1
                    self.pending, self.tx = self.expected, 0
        return self.phase != phase

    def returns(self, parity: int) -> tuple[bool, bool]:
        """(a wait for ``parity`` returns now, it returns without a completed phase)."""
        if not self.valid:
            return True, False  # emitted: the checker reports the wait before init
        if self.phase % 2 == parity:
            return False, False
        return True, self.phase == 0 and parity == FIRST_PHASE_PARITY


class PhaseReplay(CtaReplay):
    """:class:`CtaReplay` that also keeps the order mbarrier waits impose."""

    def __init__(self, launch: Launch, spill_dir: str | None = None) -> None:
        super().__init__(launch, spill_dir)
        self.marks: dict[int, list[tuple]] = {}

    def begin_block(self, block: int, lineno: int) -> None:
        super().begin_block(block, lineno)
        self.marks = {}

    def begin_warp(self, warp: int) -> None:
        super().begin_warp(warp)
        self.marks.setdefault(warp, [])

    def record(self, rec: Record) -> None:
        w = self.warps[rec.warp]
        marks = self.marks[rec.warp]
        before_live, before = len(w.live), w.total
        arrival = self.launch.translate(rec, w.live)
        cols = w.live.cols
        for k in range(before_live, len(w.live)):
            op = cols["op"][k]
            if op == O.MBAR_WAIT:
                marks.append(
                    (
                        before + k - before_live,
                        MARK_WAIT,
                        (cols["obj"][k], cols["arg"][k], rec.lineno),
                    )
                )
            elif op in MBAR_ACTIONS:
                marks.append(
                    (
                        before + k - before_live,
                        MARK_ACTION,
                        (cols["obj"][k], op, cols["arg"][k], popcount(cols["lanes"][k])),
                    )
                )
        if arrival is not None:
            w.ends.append(w.total)
            w.arrivals.append(arrival)
            marks.append((w.total, MARK_BARRIER, arrival))
        if len(w.live) >= CHUNK_ITEMS:
            self._freeze(w)

    def _schedule(self) -> list:
        """Item ranges ``(warp, lo, hi)`` and barrier releases, in replay order."""
        out: list = []
        mbars: dict[int, _MBar] = {}
        nxt = {w: 0 for w in self.warps}
        start = {w: 0 for w in self.warps}
        at_barrier: dict = {}
        done: set[int] = set()

        def emit(w: int, hi: int) -> None:
            if hi > start[w]:
                out.append((w, start[w], hi))
            start[w] = hi

        def advance(w: int) -> bool:
            marks = self.marks.get(w, [])
            moved = False
            while nxt[w] < len(marks):
                index, kind, payload = marks[nxt[w]]
                if kind == MARK_BARRIER:
                    emit(w, index)
                    at_barrier[w] = payload
                    nxt[w] += 1
                    return True
                if kind == MARK_WAIT:
                    obj, parity, _ = payload
                    ready, vacuous = mbars.setdefault(obj, _MBar()).returns(parity)
                    if not ready:
                        moved |= index > start[w]
                        emit(w, index)
                        return moved
                    if vacuous:
                        emit(w, index)
                        start[w] = index + 1
                else:
                    obj, op, arg, lanes = payload
                    if mbars.setdefault(obj, _MBar()).apply(op, arg, lanes):
                        # A phase completed: its waiters run before this warp goes on
                        # (and perhaps completes the next phase of the same mbarrier).
                        nxt[w] += 1
                        emit(w, index + 1)
                        return True
                nxt[w] += 1
                moved = True
            emit(w, self.warps[w].total)
            done.add(w)
            return True

        def waiting(w: int) -> bool:
            marks = self.marks.get(w, [])
            return nxt[w] < len(marks) and marks[nxt[w]][1] == MARK_WAIT

        order = sorted(self.warps)
        while True:
            # Warps at a wait go first, then the others, lowest first; after any step,
            # start again, so that a wait returns in the phase it waits for.
            moved = True
            while moved:
                ready = [w for w in order if w not in done and w not in at_barrier]
                ready.sort(key=lambda w: not waiting(w))
                moved = any(advance(w) for w in ready)
            live = [w for w in order if w not in done]
            if not live:
                return out
            stuck = [w for w in live if w not in at_barrier]
            if stuck:
                w = stuck[0]
                obj, parity, lineno = self.marks[w][nxt[w]][2]
                raise error(
                    self.launch.path,
                    lineno,
                    "gpu-mbarrier",
                    f"block {self.block}: warp {w} waits on mbarrier {obj:#x} for "
                    f"parity {parity}, and no order of the trace's warps completes "
                    f"that phase before it (arrivals or transaction bytes are "
                    f"missing from the trace)",
                )
            barriers = sorted({a.barrier for a in at_barrier.values()})
            if len(barriers) > 1:
                first = min(at_barrier.values(), key=lambda a: a.lineno)
                raise error(
                    self.launch.path,
                    first.lineno,
                    "gpu-barrier",
                    f"block {self.block}: its live warps wait at different barriers "
                    f"({', '.join(map(str, barriers))}) without a count, so none can "
                    f"release (warps {', '.join(map(str, sorted(at_barrier)))})",
                )
            out.append([at_barrier[w] for w in sorted(at_barrier)])
            at_barrier.clear()
