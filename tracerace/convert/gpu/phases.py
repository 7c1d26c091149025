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

MARK_BARRIER, MARK_ACTION, MARK_WAIT, MARK_CLUSTER_ARRIVE, MARK_CLUSTER_WAIT = 0, 1, 2, 3, 4
"""Kinds of a warp's marks: a barrier arrival (after ``index`` items), an
mbarrier action (item ``index``), an mbarrier wait (item ``index``), a cluster
barrier arrival and wait (item ``index``)."""
CLUSTER_ARRIVALS = frozenset({O.CLUSTER_ARRIVE, O.CLUSTER_ARRIVE_RELAXED})
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
    """:class:`CtaReplay` that also keeps the order mbarrier waits impose.

    With ``clusters`` (a launch whose trace gives each block's cluster), the unit
    replayed is a cluster: its blocks' warps run together (keys ``(block,
    warp)``), each block's barriers release that block's warps, and a warp at a
    cluster barrier wait runs on once every thread of the cluster has arrived
    for that generation (arrive and wait alternate in each thread, so the
    ``k``-th wait of a warp waits for ``(k + 1) * threads`` arrivals)."""

    def __init__(
        self, launch: Launch, spill_dir: str | None = None, *, clusters: bool = False
    ) -> None:
        super().__init__(launch, spill_dir)
        self.marks: dict = {}
        self.clusters = clusters
        self.cluster_threads = launch.info.threads

    def key(self, block: int | None, warp: int):
        return (block, warp) if self.clusters else warp

    def block_of(self, w) -> int:
        if self.clusters:
            return int(w[0])
        assert self.block is not None
        return self.block

    def begin_block(self, block: int, lineno: int) -> None:
        super().begin_block(block, lineno)
        self.marks = {}

    def begin_warp(self, warp: int, block: int | None = None) -> None:
        super().begin_warp(warp, block)
        self.marks.setdefault(self.key(block, warp), [])

    def record(self, rec: Record) -> None:
        k = self.key(rec.block, rec.warp)
        w = self.warps[k]
        marks = self.marks[k]
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
            elif op in CLUSTER_ARRIVALS:
                marks.append(
                    (before + k - before_live, MARK_CLUSTER_ARRIVE, popcount(cols["lanes"][k]))
                )
            elif op == O.CLUSTER_WAIT:
                marks.append((before + k - before_live, MARK_CLUSTER_WAIT, rec.lineno))
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
        mbars: dict[tuple, _MBar] = {}
        arrived = [0]  # cluster barrier arrivals so far
        waited = {w: 0 for w in self.warps}  # cluster barrier waits each warp passed
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
                if kind == MARK_CLUSTER_ARRIVE:
                    arrived[0] += payload
                elif kind == MARK_CLUSTER_WAIT:
                    if arrived[0] < (waited[w] + 1) * self.cluster_threads:
                        moved |= index > start[w]
                        emit(w, index)
                        return moved
                    waited[w] += 1
                elif kind == MARK_WAIT:
                    obj, parity, _ = payload
                    key = (self.block_of(w), obj)
                    ready, vacuous = mbars.setdefault(key, _MBar()).returns(parity)
                    if not ready:
                        moved |= index > start[w]
                        emit(w, index)
                        return moved
                    if vacuous:
                        emit(w, index)
                        start[w] = index + 1
                else:
                    obj, op, arg, lanes = payload
                    if mbars.setdefault((self.block_of(w), obj), _MBar()).apply(op, arg, lanes):
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

        def waiting(w) -> bool:
            marks = self.marks.get(w, [])
            return nxt[w] < len(marks) and marks[nxt[w]][1] in (MARK_WAIT, MARK_CLUSTER_WAIT)

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
            if not self._release(live, at_barrier, out):
                self._stuck([w for w in live if w not in at_barrier], nxt, arrived[0], waited)

    def _release(self, live: list, at_barrier: dict, out: list) -> bool:
        """Release the barrier of each block whose every live warp waits at it; whether
        one was released."""
        blocks: dict[int, list] = {}
        for w in live:
            blocks.setdefault(self.block_of(w), []).append(w)
        released = False
        for block, warps in blocks.items():
            if not all(w in at_barrier for w in warps):
                continue
            barriers = sorted({at_barrier[w].barrier for w in warps})
            if len(barriers) > 1:
                first = min((at_barrier[w] for w in warps), key=lambda a: a.lineno)
                raise error(
                    self.launch.path,
                    first.lineno,
                    "gpu-barrier",
                    f"block {block}: its live warps wait at different barriers "
                    f"({', '.join(map(str, barriers))}) without a count, so none can "
                    f"release (warps {', '.join(str(self._warp(w)) for w in warps)})",
                )
            out.append([at_barrier.pop(w) for w in warps])
            released = True
        return released

    def _warp(self, w) -> int:
        return w[1] if self.clusters else w

    def _stuck(self, stuck: list, nxt: dict, arrived: int, waited: dict):
        """Fail naming the first warp that no order lets go on."""
        w = stuck[0]
        _, kind, payload = self.marks[w][nxt[w]]
        block = self.block_of(w)
        if kind == MARK_CLUSTER_WAIT:
            need = (waited[w] + 1) * self.cluster_threads
            raise error(
                self.launch.path,
                payload,
                "gpu-cluster",
                f"block {block}: warp {self._warp(w)} waits at a cluster barrier, and no "
                f"order of the trace's warps completes that generation before it "
                f"({arrived} of the {need} arrivals it needs; arrivals are missing from "
                f"the trace, or threads exited before the barrier)",
            )
        obj, parity, lineno = payload
        raise error(
            self.launch.path,
            lineno,
            "gpu-mbarrier",
            f"block {block}: warp {self._warp(w)} waits on mbarrier {obj:#x} for "
            f"parity {parity}, and no order of the trace's warps completes "
            f"that phase before it (arrivals or transaction bytes are "
            f"missing from the trace)",
        )
