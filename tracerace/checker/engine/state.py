"""The engine's state between batches: every table, its growth, and the views."""

from __future__ import annotations

import collections
import threading
from collections import namedtuple

import numpy as np

from ...trace import badinput
from ...trace.rows import RowFields
from .clocks import compact
from .hashmap import new_table
from .hashmap import rehash as hm_rehash
from .launches import begin_launch
from .layout import (
    AGENTS_MAX,
    C_FIELDS,
    CV_FIELDS,
    G_FIELDS,
    GENS_MAX,
    GR_AGENTS,
    GR_ARENA,
    GR_ARR,
    GR_RL,
    GR_SIG,
    I_SHADED,
    N_INFO,
    N_KINDS,
    NODES_MAX,
    S_FIELDS,
    SV_ARENA_TOP,
    SV_BAR_GENS_MAX,
    SV_CP_ARRIVES_MAX,
    SV_CP_GROUP_MAX,
    SV_FIELDS,
    SV_FIXED_SHARED,
    SV_GRAN_COUNT,
    SV_LAUNCH,
    SV_MAPS_CAP,
    SV_N_AGENTS,
    SV_NFIND,
    SV_NODE_TOP,
    SV_PAGE_LAUNCH,
    SV_PAGE_SHIFT,
    SV_SHARD,
    SV_SHARDS,
    SV_SIG_FREE,
    SV_STRETCH_SHIFT,
    SV_VIEW,
    VIEW_ALL,
)
from .mapped import MappedArray
from .pools import (
    AG_FAULT_AHEAD,
    FAULT_AHEAD,
    FAULT_CHUNK,
    MAPPED,
    MAPS,
    POOLS,
    SPARE_BLIND_MAX,
    SPARSE,
    Sizes,
)
from .races import add_earlier_rows, records
from .room import ARENA_NEED, PLAIN_NG
from .shadow import (
    GLOBAL_GRANULE_SHIFT,
    GRANULE_SHIFT,
    PAGE_SHIFT,
    PST_SIZE,
    WIDE_GRANULE_SHIFT,
    gran_limit,
    rehash,
)
from .shards import STRETCH_PAGES_SHIFT

# With a findings consumer, the findings pool is emptied into records (held
# until the batch ends) rather than grown past this many rows (3.75 MiB of int64
# fields); ``check_trace(handover_rows=...)`` sets another.
FIND_HANDOVER_ROWS = 1 << 14
# The pace of new granules is judged over this many batches.
TREND_BATCHES = 4


Tables = namedtuple(
    "Tables",
    "sv ag agent_map async_map snaps arena_a arena_e scratch touched "
    "nodes cold shades gran gens bar_map arr sigs flag_map fq mbs mb_map lock_map rels "
    "atom_map fen find cand ivs pst pairs edges cvs",
)
"""Every array the replay kernel reads or writes: what :meth:`EngineState.tables`
hands it (``sv``, the scalar vector of ``layout``; the pools of ``pools``;
the hash maps; the scratch arrays of the joins and the candidates)."""


class EngineState:
    """Every array the kernels keep across batches, and their growth."""

    def __init__(
        self,
        page_shift: int = PAGE_SHIFT,
        sizes: Sizes | None = None,
        shared_shift: int | None = None,
        shard: tuple[int, int] = (0, 1),
        stretch_shift: int | None = None,
        cp_limits: tuple[int, int] | None = None,
        bar_gens: int | None = None,
    ) -> None:
        """``page_shift``: log2 of the pages large accesses are recorded by;
        ``sizes``: the tables' starting sizes; ``shared_shift``: the shared
        granule shift of every launch (None: chosen per launch, see
        :mod:`.granularity`). No answer depends on them. ``shard``: (k, n),
        this state checks only the bytes shard k of n owns (:mod:`.shards`),
        in stretches of ``1 << stretch_shift`` bytes (None: ``page_shift +
        STRETCH_PAGES_SHIFT``; at least a page). ``cp_limits``: the most
        cp.async groups and cp_async_mbar_arrive rows a thread may have
        (``badinput.cp_limits``; tests make them small); ``bar_gens``: the
        most generations of one barrier that complete in a launch
        (``badinput.bar_gens_limit``; tests make it small)."""
        k, n = shard
        if not 0 <= k < n:
            raise ValueError(f"shard {k} of {n}: need 0 <= k < n")
        if stretch_shift is None:
            stretch_shift = page_shift + STRETCH_PAGES_SHIFT
        if not page_shift <= stretch_shift < 48:
            raise ValueError(f"stretch_shift {stretch_shift}: a stretch holds whole pages")
        self.sizes = sizes = sizes or Sizes()
        self.shared_shift = shared_shift
        if not GLOBAL_GRANULE_SHIFT < WIDE_GRANULE_SHIFT < page_shift < 40:
            raise ValueError(f"page_shift {page_shift}: pages must hold several granules")
        self.sv = np.zeros(SV_FIELDS, np.int64)
        self.sv[SV_SIG_FREE] = -1
        self.sv[SV_VIEW] = VIEW_ALL
        self.sv[SV_PAGE_SHIFT] = page_shift
        self.sv[SV_PAGE_LAUNCH] = -1
        self.sv[SV_MAPS_CAP] = sizes.maps
        self.sv[SV_FIXED_SHARED] = -1 if shared_shift is None else shared_shift
        self.sv[SV_SHARDS] = n
        self.sv[SV_SHARD] = k
        self.sv[SV_STRETCH_SHIFT] = stretch_shift
        self.sv[SV_CP_GROUP_MAX], self.sv[SV_CP_ARRIVES_MAX] = badinput.cp_limits(cp_limits)
        self.sv[SV_BAR_GENS_MAX] = badinput.bar_gens_limit(bar_gens)
        # Per page hash, the last launch that gave one of its granules lists.
        self.pst = np.full(PST_SIZE, -1, np.int64)
        self.findings: list[np.ndarray] = []
        self.arrays: dict[str, np.ndarray] = {}
        # The node pools and the clock arena grow in place (tracerace.mapped).
        self.mapped: dict[str, MappedArray] = {}
        for name, (_, cols, fill) in POOLS.items():
            rows = sizes.rows[name]
            if name in MAPPED:
                self.mapped[name] = MappedArray(rows, cols, reserve=self._ahead(name))
                self.arrays[name] = self.mapped[name].array
            else:
                self.arrays[name] = np.full((rows, cols), fill, np.int64)
        for name in ("arena_a", "arena_e"):
            self.mapped[name] = MappedArray(sizes.arena, reserve=FAULT_AHEAD)
        self.arena_a = self.mapped["arena_a"].array
        self.arena_e = self.mapped["arena_e"].array
        self.cand = np.zeros((N_KINDS, C_FIELDS), np.int64)
        self.cvs = np.empty((self._cvs_rows(), CV_FIELDS), np.int64)
        # A granule table twice the size of the one in use, filled by the
        # faulter before the replay asks for it (see ``_prepare_spare``),
        # and what it goes by: the rows replayed and, when known, in all.
        self.spare_gran: np.ndarray | None = None
        self._gran_lock = threading.Lock()
        self.spares_taken = 0  # growths that found their table ready
        # Calls of the replay kernel (``check.replay_batch``): one per batch,
        # plus one per stop to grow a pool or to start a long launch.
        self.kernel_calls = 0
        self.rows_done = 0
        self.rows_total: int | None = None
        self.rows = RowFields(None, in_memory=True)
        """The trace's rows by number, where a finding's earlier access is
        looked up (``races.add_earlier_rows``): a reader's
        (:meth:`read_rows_from`), else the batches ``check.replay_batch``
        replays, kept (a replay by hand: tests, ``bench.kernel``)."""
        self.notes_rows = True
        # (rows replayed, granules) after each of the last batches.
        self.trend: collections.deque[tuple[int, int]] = collections.deque(maxlen=TREND_BATCHES)
        self.reset_launch(-1)

    def tables(self) -> Tables:
        """The arrays as they are now (a growth replaces some: ask again after one)."""
        ar = self.arrays
        return Tables(
            self.sv,
            ar["ag"],
            self.agent_map,
            self.async_map,
            ar["snaps"],
            self.arena_a,
            self.arena_e,
            self.scratch,
            self.touched,
            ar["nodes"],
            ar["cold"],
            ar["shades"],
            ar["gran"],
            ar["gens"],
            self.bar_map,
            ar["arr"],
            ar["sigs"],
            self.flag_map,
            ar["fq"],
            ar["mbs"],
            self.mb_map,
            self.lock_map,
            ar["rels"],
            self.atom_map,
            ar["fen"],
            ar["find"],
            self.cand,
            ar["ivs"],
            self.pst,
            ar["pairs"],
            ar["edges"],
            self.cvs,
        )

    def reset_launch(
        self, launch: int, shared_shift: int | None = None, global_shift: int | None = None
    ) -> None:
        """Forget everything of the finished launch (:mod:`.launches`), and
        make the per-launch hash maps afresh at their starting size; the
        replay does the same itself at most boundaries (``next_launch``).
        ``shared_shift``, ``global_shift``: log2 of the new launch's shared-
        and global-memory granules (default: 4 and 8 bytes; see
        :func:`shared_shift_for` and :func:`global_shift_for`)."""
        shared = GRANULE_SHIFT if shared_shift is None else shared_shift
        glob = GLOBAL_GRANULE_SHIFT if global_shift is None else global_shift
        begin_launch(self.sv, self.arrays["ivs"], self.arrays["snaps"], launch, shared, glob)
        # The joins' scratch (merge_many) is all -1 again after every join, so
        # it is made only when missing: remaking it at each launch cost every
        # launch the agents of the widest launch before it.
        rows = self.arrays["ag"].shape[0]
        if getattr(self, "scratch", None) is None or self.scratch.shape[0] != rows:
            self.scratch = np.full(rows, -1, np.int64)
            self.touched = np.zeros(rows, np.int64)
        for name in MAPS:
            if name != "flag_map" or not hasattr(self, "flag_map"):
                setattr(self, name, new_table(self.sizes.maps))

    def grow(self, mask: int) -> None:
        for name, (bit, _, fill) in POOLS.items():
            if mask & bit:
                old = self.arrays[name]
                if name == "gens" and old.shape[0] * 2 > GENS_MAX:
                    # a barrier position names a slot (layout, AG_BARPOS)
                    raise MemoryError(f"more than {GENS_MAX:,} barriers in a launch")
                if name == "gran":
                    with self._gran_lock:
                        new, self.spare_gran = self.spare_gran, None
                        if new is None or new.shape[0] != old.shape[0] * 2:
                            new = None  # a spare of another size is freed first
                            new = np.full((old.shape[0] * 2, old.shape[1]), -1, np.int64)
                        else:
                            self.spares_taken += 1
                        self.sv[SV_GRAN_COUNT] = rehash(old, new, self.sv[SV_LAUNCH])
                        self.arrays[name] = new
                    continue
                elif name in MAPPED:
                    # Only the rows in use are kept.
                    rows = old.shape[0] * 2
                    if name in ("nodes", "cold", "shades") and rows > NODES_MAX + 1:
                        # a slot holds a list's head in 32 bits (layout, G_HEADS)
                        raise MemoryError(f"more than {NODES_MAX + 1:,} shadow nodes")
                    if name == "ag" and rows > AGENTS_MAX:
                        # a node holds its agent in 32 bits (layout, N_LINK)
                        raise MemoryError(f"more than {AGENTS_MAX:,} agents")
                    del old, self.arrays[name]
                    new = self.mapped[name].grow(rows, int(self.sv[MAPPED[name]]))
                else:
                    new = np.full((old.shape[0] * 2, old.shape[1]), fill, np.int64)
                    new[: old.shape[0]] = old
                self.arrays[name] = new
        if mask & GR_AGENTS:
            n = self.arrays["ag"].shape[0]
            scratch = np.full(n, -1, np.int64)
            scratch[: self.scratch.shape[0]] = self.scratch
            self.scratch = scratch
            self.touched = np.zeros(n, np.int64)
        for name, bit in MAPS.items():
            if mask & bit:
                old = getattr(self, name)
                new = new_table(old.shape[0] * 2)
                hm_rehash(old, new)
                setattr(self, name, new)
        if mask & (GR_ARR | GR_RL | GR_SIG):
            self.cvs = np.empty((self._cvs_rows(), CV_FIELDS), np.int64)
        if mask & GR_ARENA:
            self._compact_or_grow_arena()

    def prefault(self) -> bool:
        """Fault in the mapped pools' rows up to FAULT_AHEAD (the agents':
        AG_FAULT_AHEAD) past their tops, at most FAULT_CHUNK rows per pool
        per call, and prepare a spare granule table when one will be needed,
        from the calling thread (see :class:`.faulter.Faulter`). Returns whether it
        did anything."""
        did = self._prepare_spare()
        tops = dict(MAPPED, arena_a=SV_ARENA_TOP, arena_e=SV_ARENA_TOP)
        for name in SPARSE:
            del tops[name]
        for name, top in tops.items():
            m = self.mapped[name]
            want = int(self.sv[top]) + self._ahead(name)
            if m.populated < want:
                did = m.populate(min(want, m.populated + FAULT_CHUNK)) or did
        return did

    def _prepare_spare(self) -> bool:
        """Fill the granule table the next growth will take, if one looks
        like it is coming: more than 80% of the way to its limit
        (``shadow.gran_limit``), and on course to pass the limit by the end
        of the trace at the pace of the last batches or, when the length of
        the trace is unknown, small (so an unneeded spare wastes little). A
        spare that is no longer called for is dropped. Growing took ~0.1 s of
        a 1.4 s tiled 10^7 check on the replay thread, nearly all of it the
        kernel clearing the new table's pages; here the other core pays. The
        replay only takes a spare of exactly the size it needs.

        Called from the faulter's thread: the decision and the fill hold
        ``_gran_lock``, which ``grow`` takes too, so a growth waits for a
        spare being filled and takes it, and a spare is never filled for a
        table that has already grown (the new table and such a stray spare,
        each twice the old one, were the peak of a 10^7 check's memory)."""
        with self._gran_lock:
            cap = self.arrays["gran"].shape[0]
            limit = gran_limit(cap)
            count = int(self.sv[SV_GRAN_COUNT])
            total, done = self.rows_total, self.rows_done
            if 5 * count < 4 * limit:
                wanted = False
            elif total is None:
                wanted = 2 * cap <= SPARE_BLIND_MAX
            else:
                wanted = self._expected_granules(count, total, done) + PLAIN_NG > limit
            spare = self.spare_gran
            if spare is not None and (spare.shape[0] != 2 * cap or not wanted):
                self.spare_gran = spare = None  # made for a smaller table, or not needed now
            if spare is not None or not wanted:
                return False
            self.spare_gran = np.full((2 * cap, G_FIELDS), -1, np.int64)
            return True

    def _expected_granules(self, count: int, total: int, done: int) -> float:
        """Granules at the end of the trace, at the pace of the last batches
        (of all rows so far, until a second batch is in): a workload whose
        variables were all touched early (the cpu benchmark's 10^6) stops
        adding granules, and a spare table would be wasted (it is dropped
        once the pace says so)."""
        r0, c0 = 0, 0
        for rows, granules in list(self.trend):
            if rows < done:
                r0, c0 = rows, granules
                break
        if done <= r0:
            return count
        return count + (count - c0) * (total - done) / (done - r0)

    def batch_done(self, rows: int) -> None:
        """``rows`` rows are replayed (what ``_prepare_spare`` goes by)."""
        self.rows_done = rows
        self.trend.append((rows, int(self.sv[SV_GRAN_COUNT])))

    @staticmethod
    def _ahead(name: str) -> int:
        return AG_FAULT_AHEAD if name == "ag" else FAULT_AHEAD

    def _compact_or_grow_arena(self) -> None:
        compact(self.arrays["snaps"], self.arena_a, self.arena_e, self.sv)
        need = ARENA_NEED * (int(self.sv[SV_N_AGENTS]) + 8)  # what replay asks to be free
        top = int(self.sv[SV_ARENA_TOP])  # entries past the top are never read
        # Grow unless compaction left room for half as much as is live, so
        # each compaction is paid for by half as many new entries, and for at
        # least ARENA_SLACK entries: a compaction has a fixed cost (a call
        # from Python, allocations, a sort of the live ids), and with a small
        # live arena (cpu: ~40 k entries) that cost came every ~150 lock
        # acquires, 6,300 times in 10^7 events, a third of the check.
        if self.arena_a.shape[0] - top < max(2 * need, top // 2, self.sizes.arena_slack):
            n = self.arena_a.shape[0] * 2
            self.arena_a = self.arena_e = None
            self.arena_a = self.mapped["arena_a"].grow(n, top)
            self.arena_e = self.mapped["arena_e"].grow(n, top)

    def _cvs_rows(self) -> int:
        ar = self.arrays
        return max(ar["arr"].shape[0], ar["rels"].shape[0], ar["sigs"].shape[0]) + 2

    def take_findings(self) -> np.ndarray:
        """The findings so far as ``FINDING_DTYPE`` records; the pool is emptied
        (a finding is complete once its event is replayed: none refers to
        another's slot)."""
        return records(self.take_rows())

    def take_rows(self) -> np.ndarray:
        """The findings pool's rows so far (with F_RANK), and empty it."""
        n = int(self.sv[SV_NFIND])
        out = self.arrays["find"][:n].copy()  # F is FINDING_DTYPE's order
        self.sv[SV_NFIND] = 0
        add_earlier_rows(out, self.rows)
        return out

    def read_rows_from(self, reader) -> None:
        """Look a finding's earlier access up in ``reader``'s rows (its
        :class:`~tracerace.trace.rows.RowFields`) instead of keeping the
        batches replayed. Called before the reader is iterated."""
        self.rows, self.notes_rows = reader.rows, False
        self.rows.keep()

    def fork(self, view: int) -> EngineState:
        """A copy of this state that checks ``view``'s memory from now on,
        with no findings yet (those so far stay with this state)."""
        twin = EngineState.__new__(EngineState)
        twin.__dict__.update(self.__dict__)
        twin.mapped = {}
        for name, m in self.mapped.items():
            twin.mapped[name] = MappedArray(m.array.shape[0], m.cols, reserve=m.capacity)
            twin.mapped[name].array[...] = m.array
        twin.arrays = {
            name: twin.mapped[name].array if name in twin.mapped else a.copy()
            for name, a in self.arrays.items()
        }
        twin.arena_a = twin.mapped["arena_a"].array
        twin.arena_e = twin.mapped["arena_e"].array
        for name in ("sv", "cand", "cvs", "scratch", "touched", "pst", *MAPS):
            setattr(twin, name, getattr(self, name).copy())
        twin.spare_gran = None
        twin._gran_lock = threading.Lock()
        twin.trend = collections.deque(self.trend, maxlen=TREND_BATCHES)
        twin.sv[SV_NFIND] = 0
        twin.sv[SV_VIEW] = view
        return twin

    @property
    def nbytes(self) -> int:
        """The bytes of every table; of a sparse pool (``pools.SPARSE``), only
        its pages that hold a written row."""
        dense = sum(a.nbytes for name, a in self.arrays.items() if name not in SPARSE)
        return dense + self.arena_a.nbytes * 2 + self.shaded_pages() * PAGE_BYTES

    def shaded_pages(self) -> int:
        """The pages of the shade pool that hold a shaded node's row (the
        rest of the pool was never written)."""
        top = int(self.sv[SV_NODE_TOP])
        rows = np.flatnonzero(self.arrays["nodes"][:top, N_INFO] & I_SHADED)
        return int(np.unique(rows // (PAGE_BYTES // (8 * S_FIELDS))).size)


PAGE_BYTES = 4096
