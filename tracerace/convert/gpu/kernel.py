"""From warp-level records of a GPU tracer to items: lanes, barriers, LDGSTS pairs.

The format parsers (``accelsim``, ``cutracer``, ``nvbit``) turn their lines
into :class:`Record` s: one warp executing one instruction (or, for tracers
that write one record per memory operand, one operand of it). The rest is
done the same way for every format:

* :class:`Launch` (here) translates a record through the SASS table
  (:mod:`tracerace.convert.gpu.sass`) into *items* (:mod:`tracerace.convert.gpu.items`): one
  event for a set of lanes of a warp (``thread = warp * 32 + lane``), kept
  compact until the end;
* the replay order (:mod:`tracerace.convert.gpu.order`): ``RecordedOrder`` keeps the
  order of the file, which is an order the GPU really produced (the tracer's
  channel receives records in the order warps pushed them); ``CtaReplay``
  builds one for Accel-Sim's ``.traceg``, which keeps each warp's instructions
  in order but not the order between warps (see its doc);
* the ``Emitter`` (:mod:`tracerace.convert.gpu.emit`) expands items into rows, lane by
  lane and vectorised, resolves generic addresses and window-relative
  shared/local addresses, declares global memory initialized, and streams the
  rows to a :class:`~tracerace.trace.writer.TraceWriter`.

Barriers without a count operand (``__syncthreads``: every thread of the block
that has not exited) are counted when they release: their ``bar_sync`` rows
are written when the generation completes, with the number of threads that
arrived as the count. A waiting warp does nothing in between, so moving its
arrival to the release changes no happens-before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...trace import ops as O
from ...trace.columns import ADDRESS_END
from .emit import Clusters, Emitter, Windows
from .items import A_ACTIVE, A_LANES, A_STRIDE, FULL_MASK, WARP, ItemBuffer
from .sass import IMPLICIT_COUNT, Effect, Sass, SyncOperands, decode, mbar_init_count
from .source import error


@dataclass(frozen=True)
class KernelInfo:
    """A kernel launch as the trace describes it."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    source: str
    shared_window: tuple[int, int] | None = None  # (generic base, size)
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

    def dims_problem(self) -> str | None:
        """Why the trace format cannot hold this launch's grid and block, or None:
        a block id and a thread id are uint32 columns."""
        if 0 in self.grid or 0 in self.block:
            return (
                f"grid {list(self.grid)} and block {list(self.block)} must be at least 1 "
                f"in every dimension"
            )
        if self.blocks > MAX_IDS:
            return (
                f"grid {list(self.grid)} has {self.blocks:,} blocks: a trace numbers at "
                f"most {MAX_IDS:,} (2^32)"
            )
        if self.threads > MAX_IDS:
            return (
                f"block {list(self.block)} has {self.threads:,} threads: a trace numbers "
                f"at most {MAX_IDS:,} (2^32)"
            )
        return None

    def block_index(self, cta: tuple[int, int, int]) -> int | None:
        """The linear block id (x fastest) of CTA coordinates, or None if outside the grid."""
        x, y, z = cta
        gx, gy, gz = self.grid
        if not (0 <= x < gx and 0 <= y < gy and 0 <= z < gz):
            return None
        return x + gx * (y + gy * z)

    def to_json(self, launch: int) -> dict:
        out = {
            "launch": launch,
            "name": self.name,
            "grid": list(self.grid),
            "block": list(self.block),
            "source": self.source,
        }
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


CLUSTER_BARRIERS = frozenset({"UCGABAR_ARV", "UCGABAR_WAIT"})
"""Cluster barrier arrive and wait (``barrier.cluster.arrive``/``.wait``): followed
in a launch whose trace gives each block's cluster (:class:`.emit.Clusters`), and
whose replay order runs a cluster's blocks together (:mod:`.phases`)."""

MBAR_EFFECTS = frozenset(
    {Effect.MBAR_INIT, Effect.MBAR_ARRIVE, Effect.MBAR_WAIT, Effect.MBAR_INVAL}
)

MAX_IDS = 1 << 32
"""Block and thread ids are uint32 columns: a grid or a block has at most this many."""
MAX_STRIDE = (1 << 63) - 1
"""An Accel-Sim stride is kept as an int64."""


def popcount(x: int) -> int:
    return bin(x).count("1")


class Launch:
    """One kernel launch being imported: translates records into items.

    A record with a ``mask`` names its active lanes. A record without one
    (formats that record no active mask) is read this way: the lanes of an
    access are those whose address is not 0 (:meth:`lanes_from_addresses`),
    and an instruction without addresses (fence, cp.async commit or wait)
    applies to every lane of the warp that has not exited.
    """

    def __init__(
        self,
        launch: int,
        info: KernelInfo,
        emitter: Emitter,
        src: int,
        *,
        lanes_per_warp: Callable[[int], int] | None = None,
        explicit_barriers: bool = True,
        notes: Notes,
        single_ldgsts: str | None = None,
        mbarriers: bool = False,
    ) -> None:
        self.id = launch
        self.info = info
        self.emitter = emitter
        self.src = src
        self.path = emitter.sources[src]
        self.explicit_barriers = explicit_barriers
        self.single_ldgsts = single_ldgsts  # why an LDGSTS cannot be followed, if it cannot
        # Whether the format records what SYNCS need (register values, which try-wait
        # returned) and its replay order keeps mbarrier phases (tracez.py, phases.py).
        self.mbarriers = mbarriers
        self.notes = notes
        self.exited: dict[tuple[int, int], int] = {}
        self.fenced: set[tuple[int, int]] = set()
        """Warps whose last instruction touching or ordering memory was a MEMBAR."""
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
            self.fail(
                rec,
                "gpu-lanes",
                f"{rec.opcode}: active mask {rec.mask:#010x} names "
                f"lanes of warp {rec.warp} that are not threads of a "
                f"{self.info.threads}-thread block",
            )
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
            self.fail(
                first,
                "gpu-ldgsts",
                f"{first.opcode}: the tracer writes two address "
                f"records per LDGSTS (shared destination, then global source); the "
                f"next record of this warp (line {rec.lineno}) is {rec.opcode}",
            )
        if eff is Effect.NONE:
            return None
        if sass.mnemonic in CLUSTER_BARRIERS and self.clusters is not None:
            self._cluster_barrier(rec, sass, out)
            self.fenced.discard(key)
            return None
        if eff is Effect.FENCE and sass.mnemonic == "MEMBAR":
            self.fenced.add(key)
        elif eff is not Effect.EXIT:
            self.fenced.discard(key)
        if not sass.followable:
            self.fail(rec, "sass-" + eff.value, f"{rec.opcode}: {sass.why}")
        add = out.add
        common = (self.id, rec.block, rec.warp)
        if eff in (Effect.LOAD, Effect.STORE, Effect.ATOMIC):
            if rec.addrs is None:
                self.fail(
                    rec, "gpu-address", f"{rec.opcode}: a memory instruction without addresses"
                )
            lanes = self.access_lanes(rec, sass)
            if sass.lanes < WARP:
                lanes &= (1 << sass.lanes) - 1
            if lanes:
                op = {Effect.LOAD: O.READ, Effect.STORE: O.WRITE, Effect.ATOMIC: O.ATOMIC}[eff]
                add(
                    op,
                    *common,
                    lanes,
                    rec.site,
                    rec.lineno,
                    self.src,
                    space=sass.space,
                    size=sass.size,
                    addrs=self._checked(rec, self._addr_spec(rec, lanes), lanes, sass.size),
                    scope=sass.scope,
                    sem=sass.sem,
                )
            return None
        if eff is Effect.CP_ASYNC:
            return self._cp_async(rec, sass, out, key)
        if eff in MBAR_EFFECTS:
            return self._mbarrier(rec, sass, out)
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
                self.fail(
                    rec,
                    "sass-unfollowable",
                    f"{rec.opcode}: the trace does not record "
                    f"how many cp.async groups may stay pending (tracer version 5 or "
                    f"later records it)",
                )
            add(O.CP_ASYNC_WAIT, *common, lanes, rec.site, rec.lineno, self.src, arg=ops.pending)
        elif eff is Effect.FENCE:
            add(
                O.FENCE,
                *common,
                lanes,
                rec.site,
                rec.lineno,
                self.src,
                scope=sass.scope,
                sem=sass.sem,
            )
        elif eff is Effect.FENCE_PROXY_ASYNC:
            add(O.FENCE_PROXY_ASYNC, *common, lanes, rec.site, rec.lineno, self.src)
        elif eff is Effect.WARP_SYNC:
            mask = (rec.ops or SyncOperands()).mask
            if mask is None:
                self.fail(
                    rec,
                    "sass-unfollowable",
                    f"{rec.opcode}: the trace does not record "
                    f"the lane mask (a register operand, or a tracer that records no "
                    f"operands)",
                )
            mask &= self.live(rec.block, rec.warp)
            lanes &= mask
            if lanes:
                add(O.WARP_SYNC, *common, lanes, rec.site, rec.lineno, self.src, arg=mask)
        return None

    @property
    def clusters(self) -> Clusters | None:
        return self.emitter.windows[self.id].clusters

    def _cluster_barrier(self, rec: Record, sass: Sass, out: ItemBuffer) -> None:
        """``UCGABAR_WAIT``, and ``UCGABAR_ARV`` of every active lane, counted against
        every thread of the cluster: a release arrival when the warp's last
        instruction that touched or ordered memory was a ``MEMBAR`` (nvcc 13 writes
        ``barrier.cluster.arrive`` as ``MEMBAR.ALL.GPU; ERRBAR; CGAERRBAR;
        UCGABAR_ARV``), else a relaxed one (``.relaxed`` is a bare
        ``UCGABAR_ARV``)."""
        lanes = self.plain_lanes(rec, sass)
        if not lanes:
            return
        common = (self.id, rec.block, rec.warp, lanes, rec.site, rec.lineno, self.src)
        clusters = self.clusters
        assert clusters is not None
        if sass.mnemonic == "UCGABAR_WAIT":
            out.add(O.CLUSTER_WAIT, *common, scope=O.SCOPE_CLUSTER, sem=O.SEM_ACQUIRE)
        elif (rec.block, rec.warp) not in self.fenced:
            out.add(O.CLUSTER_ARRIVE_RELAXED, *common, arg=clusters.threads, scope=O.SCOPE_CLUSTER)
        else:
            out.add(
                O.CLUSTER_ARRIVE,
                *common,
                arg=clusters.threads,
                scope=O.SCOPE_CLUSTER,
                sem=O.SEM_RELEASE,
            )

    def _addr_spec(self, rec: Record, lanes: int) -> tuple:
        spec = rec.addrs
        if spec[0] == A_ACTIVE and rec.mask is not None and lanes != rec.mask:
            # Keep the addresses of the lanes that stay (LDSM .1/.2 use fewer lanes).
            kept = [a for i, a in zip(_bits(rec.mask), spec[1]) if (lanes >> i) & 1]
            return (A_ACTIVE, kept)
        return spec

    def _checked(self, rec: Record, spec: tuple, lanes: int, size: int) -> tuple:
        """``spec`` once every address it gives ``lanes`` fits the format: ``addr +
        size`` within 64 bits, as a trace's reader requires (rule
        ``address-overflow``, naming the input line, where the reader would name
        only a row of the output)."""
        if spec[0] == A_STRIDE:
            _, base, stride = spec
            span = _bits_max(lanes) - _bits_min(lanes)
            used = [base, base + stride * span]
            if span == 0:
                spec = (A_STRIDE, base, 0)  # one lane: its stride is never used
            elif abs(stride) > MAX_STRIDE:
                spec = (
                    A_ACTIVE,
                    [base + stride * (lane - _bits_min(lanes)) for lane in _bits(lanes)],
                )
        else:
            values = spec[1]
            if values and min(values) >= 0 and max(values) <= ADDRESS_END - size:
                return spec  # the common case, checked at C speed
            for a in values:
                if not 0 <= a <= ADDRESS_END:
                    self.fail(
                        rec,
                        "address-overflow",
                        f"{rec.opcode}: address {a:#x} is not a 64-bit address",
                    )
            used = values if spec[0] == A_ACTIVE else [values[lane] for lane in _bits(lanes)]
        for a in used:
            if not 0 <= a <= ADDRESS_END - size:
                self.fail(
                    rec,
                    "address-overflow",
                    f"{rec.opcode}: address {a:#x} + size "
                    f"{size} passes the end of the 64-bit address space",
                )
        return spec

    def _cp_async(self, rec: Record, sass: Sass, out: ItemBuffer, key) -> None:
        if self.single_ldgsts:
            self.fail(rec, "sass-unfollowable", f"{rec.opcode}: {self.single_ldgsts}")
        first = self.cp_pending.pop(key, None)
        if first is None:
            self.cp_pending[key] = rec
            return None
        if first.opcode != rec.opcode or first.pc != rec.pc:
            self.fail(
                first,
                "gpu-ldgsts",
                f"{first.opcode}: one address record, then "
                f"{rec.opcode} at line {rec.lineno}; the tracer writes two per LDGSTS",
            )
        if rec.mask is not None:
            if first.mask != rec.mask:
                self.fail(
                    rec,
                    "gpu-ldgsts",
                    f"{rec.opcode}: the two address records of one LDGSTS have different masks",
                )
            lanes = self.record_lanes(rec, sass)
        else:
            lanes = self.lanes_from_addresses(rec, sass, O.SPACE_GLOBAL)
        if lanes:
            out.add(
                O.CP_ASYNC,
                self.id,
                rec.block,
                rec.warp,
                lanes,
                first.site,
                first.lineno,
                self.src,
                space=O.SPACE_SHARED,
                size=sass.size,
                addrs=self._checked(first, self._addr_spec(first, lanes), lanes, sass.size),
                space2=O.SPACE_GLOBAL,
                addrs2=self._checked(rec, self._addr_spec(rec, lanes), lanes, sass.size),
            )
        return None

    def mbar_object(self, rec: Record) -> int:
        """The mbarrier a ``SYNCS`` names: the line's address, the same in every active
        lane, as an offset in the block's shared memory when it is a generic address
        in the shared window."""
        if rec.addrs is None:
            self.fail(
                rec,
                "gpu-address",
                f"{rec.opcode}: an mbarrier operation without the mbarrier's address",
            )
        spec = rec.addrs
        if spec[0] == A_STRIDE:
            one = spec[2] == 0 or popcount(rec.mask or 0) <= 1
            values = {spec[1]} if one else set()
        else:
            values = set(spec[1])
        if len(values) != 1:
            self.fail(
                rec,
                "gpu-mbarrier",
                f"{rec.opcode}: its active lanes name different "
                f"mbarriers; tracerace reads one mbarrier per instruction",
            )
        addr = values.pop()
        base, size = self.info.shared_window or (0, 0)
        clusters = self.clusters
        if clusters is not None and size and base <= addr < base + size * clusters.size:
            rank, addr = divmod(addr - base, size)
            own = clusters.rank_of(rec.block)
            if rank not in (0, own):
                self.fail(
                    rec,
                    "gpu-cluster",
                    f"{rec.opcode}: an mbarrier in the shared memory of block rank {rank} "
                    f"of the cluster (this block is rank {own}): an operation on another "
                    f"block's mbarrier is not followed",
                )
            return addr
        if size and base <= addr < base + size:
            addr -= base
        return addr

    def _mbarrier(self, rec: Record, sass: Sass, out: ItemBuffer) -> None:
        """``SYNCS``: mbarrier init, expect-tx and arrive, wait, inval (sass.py's table)."""
        if not self.mbarriers:
            self.fail(
                rec,
                "sass-unfollowable",
                f"{rec.opcode}: an mbarrier operation, and "
                f"this trace format records neither the register values it needs "
                f"(arrival count, transaction bytes, phase parity) nor which try-wait "
                f"returned (Accel-Sim's post-processed .tracez and .traceg of tracer version "
                f"6 do)",
            )
        ops = rec.ops or SyncOperands()
        needs_value = sass.effect in (Effect.MBAR_INIT, Effect.MBAR_WAIT) or "R" in (
            sass.arrivals,
            sass.tx,
        )
        if needs_value and ops.value is None:
            self.fail(
                rec,
                "sass-unfollowable",
                f"{rec.opcode}: the trace does not record "
                f"the register value this mbarrier operation needs (its arrival count, "
                f"transaction bytes or phase parity): Accel-Sim's tracer version 6 "
                f"with register values records it",
            )
        lanes = self.access_lanes(rec, sass)
        if not lanes:
            return
        obj = self.mbar_object(rec)
        common = (self.id, rec.block, rec.warp, lanes, rec.site, rec.lineno, self.src)
        eff = sass.effect
        if eff is Effect.MBAR_INIT:
            count = mbar_init_count(ops.value)
            if count == 0:
                self.fail(
                    rec,
                    "gpu-mbarrier",
                    f"{rec.opcode}: mbarrier {obj:#x} initialized "
                    f"with an expected arrival count of 0 (register value "
                    f"{ops.value:#x})",
                )
            out.add(O.MBAR_INIT, *common, obj=obj, arg=count, scope=O.SCOPE_BLOCK)
        elif eff is Effect.MBAR_ARRIVE:
            if sass.tx == "R" and ops.value:
                out.add(O.MBAR_EXPECT_TX, *common, obj=obj, arg=ops.value, scope=O.SCOPE_BLOCK)
            count = ops.value if sass.arrivals == "R" else int(sass.arrivals)
            if count < 0:
                self.fail(rec, "gpu-mbarrier", f"{rec.opcode}: arrival count {count}")
            if count:
                out.add(
                    O.MBAR_ARRIVE,
                    *common,
                    obj=obj,
                    arg=count,
                    scope=O.SCOPE_BLOCK,
                    sem=O.SEM_RELEASE,
                )
        elif eff is Effect.MBAR_WAIT:
            out.add(
                O.MBAR_WAIT,
                *common,
                obj=obj,
                arg=ops.value & 1,
                scope=O.SCOPE_BLOCK,
                sem=O.SEM_ACQUIRE,
            )
        else:
            out.add(O.MBAR_INVAL, *common, obj=obj, scope=O.SCOPE_BLOCK)

    def _barrier(self, rec: Record, sass: Sass, out: ItemBuffer) -> Arrival | None:
        ops = rec.ops or SyncOperands()
        if ops.barrier is None or ops.count is None:
            self.fail(
                rec,
                "sass-unfollowable",
                f"{rec.opcode}: the trace does not record the "
                f"barrier's id and thread count (register operands, or a tracer "
                f"version that records no operands)",
            )
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
            self.fail(
                rec,
                "sass-unfollowable",
                f"{rec.opcode}: a barrier with an explicit "
                f"count in a trace without an order between warps",
            )
        op = O.BAR_SYNC if sass.effect is Effect.BAR_SYNC else O.BAR_ARRIVE
        out.add(
            op,
            self.id,
            rec.block,
            rec.warp,
            lanes,
            rec.site,
            rec.lineno,
            self.src,
            obj=ops.barrier,
            arg=ops.count,
        )
        return None

    def release(self, arrivals: list[Arrival], out: ItemBuffer) -> None:
        """Write one barrier generation: every arriving lane, counted together."""
        count = sum(popcount(a.lanes) for a in arrivals)
        for a in arrivals:
            out.add(
                O.BAR_SYNC,
                self.id,
                a.block,
                a.warp,
                a.lanes,
                a.site,
                a.lineno,
                self.src,
                obj=a.barrier,
                arg=count,
            )

    def finish(self) -> None:
        for rec in self.cp_pending.values():
            self.fail(
                rec,
                "gpu-ldgsts",
                f"{rec.opcode}: the trace ends after the first of "
                f"the two address records of this LDGSTS",
            )


def cluster_error(
    path: str, lineno: int | None, first: tuple, second: tuple, cluster: tuple
) -> Exception:
    """Two blocks of one cluster: a launch in clusters of more than one block is not
    imported. Its blocks may use each other's shared memory through generic
    addresses and meet at cluster barriers, and neither is followed, so no
    verdict is given on it."""
    fmt = lambda c: "(" + ",".join(map(str, c)) + ")"  # noqa: E731
    return error(
        path,
        lineno,
        "gpu-cluster",
        f"blocks {fmt(first)} and {fmt(second)} share cluster {fmt(cluster)}: "
        f"distributed shared memory and cluster barriers are not followed, so a "
        f"launch in clusters of more than one block is not imported",
    )


def _bits(mask: int):
    lane = 0
    while mask:
        if mask & 1:
            yield lane
        mask >>= 1
        lane += 1


def _bits_min(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _bits_max(mask: int) -> int:
    return mask.bit_length() - 1


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
