"""Instruction lines of Accel-Sim's tracer version 6, shared by its text traces
(:mod:`.accelsim`) and ``.tracez`` (:mod:`.tracez`), and the operand reading
every version shares (:func:`operands`).

A line, after the raw trace's CTA, warp and cluster fields::

    [LINE] PC MASK NDST [Rd] OPCODE NSRC [Rs...] [GMMA] WIDTH [MEM] IMM [IMM2] Val|NoVal ...

read as the simulator's parser reads it (accel-sim-framework
``gpu-simulator/trace-parser/trace_parser.cc``, ``parse_from_string``):
registers carry their kind (``R12``, ``UR4``, ``P0``); a ``*GMMA`` instruction
has a commit-group flag after its source registers; ``MEM`` is a memory
instruction's addresses (``0`` list, ``1`` base+stride, ``2`` base+deltas) or,
for the TMA and bulk-copy opcodes, the copy: ``MBAR MULTICAST [CTA_MASK] BYTES
OOB_BYTES MODE`` then ``3 N a...`` or ``4 BASE N d...`` (its global
addresses); a second immediate may follow the first; ``Val`` is followed by
each destination then source register's values (``1 v``: one value in every
lane, ``32 v...``: one per lane), ``NoVal`` by nothing.

``SYNCS`` take their operand (count, bytes, parity) from the value of the last
source register (``RZ``/``URZ`` read 0). A TMA or bulk copy fails the import
(``tma-shared-unseen``): the line does not give its shared-memory side.
"""

from __future__ import annotations

from dataclasses import replace

from ...trace.schema import SITE_NONE
from .items import A_ACTIVE, A_STRIDE
from .kernel import KernelInfo, Record
from .sass import IMPLICIT_COUNT, REG_ZERO, Effect, SyncOperands, decode
from .source import error

TMA_OPCODES = ("UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UBLKCP", "UBLKPF", "UBLKRED")
TMA_LIST, TMA_BASE_DELTA = 3, 4
REG_VALUES_ONE, REG_VALUES_ALL = 1, 32
VALUES_VERSION = 6
MAX_BARRIER_ID = 15
RAW_FIELDS = 11
"""A raw version 6 line starts with CTA x y z, warp, cluster id x y z, CTA id in
the cluster x y z and cluster rank."""


def operands(opcode: str, nsrc: int, imm: int | None) -> SyncOperands | None:
    """Operand values of a ``BAR``, ``DEPBAR`` or ``WARPSYNC`` from the one immediate
    the tracer records (versions 5 and 6)."""
    if not (opcode.startswith(("BAR", "DEPBAR", "WARPSYNC"))):
        return None
    if imm is None:
        return SyncOperands()
    if opcode.startswith("BAR"):
        if nsrc == 0 and 0 <= imm <= MAX_BARRIER_ID:
            return SyncOperands(barrier=imm, count=IMPLICIT_COUNT)
        return SyncOperands()
    if opcode.startswith("DEPBAR"):
        return SyncOperands(pending=imm) if imm >= 0 else SyncOperands()
    if opcode.startswith("WARPSYNC.ALL"):
        return SyncOperands(mask=0xFFFFFFFF)
    return SyncOperands(mask=imm & 0xFFFFFFFF) if nsrc == 0 else SyncOperands()


def short(text: str) -> str:
    """``text`` cut for a one-line message."""
    text = text.strip()
    return text if len(text) <= 70 else text[:67] + "..."


class V6LineParser:
    """The instruction part of a line (after the CTA, warp and cluster fields of a
    raw trace, if any) of tracer versions 3 to 6."""

    def __init__(
        self, path: str, info: KernelInfo, version: int, lineinfo: bool, writer, rule: str
    ) -> None:
        self.path = path
        self.rule = rule
        self.info = info
        self.version = version
        self.lineinfo = lineinfo
        self.writer = writer
        self.sites: dict[tuple, int] = {}

    def site(self, pc: int, opcode: str, line: int | None) -> int:
        key = (pc, opcode, line)
        site = self.sites.get(key)
        if site is None:
            if decode(opcode).effect in (Effect.NONE, Effect.EXIT):
                return SITE_NONE
            where = f" line {line}" if line is not None else ""
            site = self.sites[key] = self.writer.site(
                f"{self.info.name}{where} pc {pc:#06x} {opcode}"
            )
        return site

    def parse(self, lineno: int, text: str, block: int, warp: int) -> Record | None:
        t = text.split()
        i = 0
        try:
            line = None
            if self.lineinfo:
                line = int(t[0])
                i = 1
            pc = int(t[i], 16)
            mask = int(t[i + 1], 16)
            if not 0 <= mask <= 0xFFFFFFFF:
                raise ValueError
            ndst = int(t[i + 2])
            dst = t[i + 3 : i + 3 + ndst]
            i += 3 + ndst
            opcode = t[i]
            nsrc = int(t[i + 1])
            if not (0 <= ndst <= 4 and 0 <= nsrc <= 8):
                raise ValueError
            src = t[i + 2 : i + 2 + nsrc]
            if len(dst) != ndst or len(src) != nsrc:
                raise IndexError
            i += 2 + nsrc
            if "GMMA" in opcode:
                i += 1
            width = int(t[i])
            i += 1
            addrs = None
            copy = None
            if opcode.startswith(TMA_OPCODES):
                copy, i = self._copy(t, i)
            elif width:
                addrs, i = self._addresses(t, i, mask, lineno)
            imm = int(t[i])
            i += 1
            value = None
            if self.version >= VALUES_VERSION:
                if i < len(t) and t[i] not in ("Val", "NoVal"):
                    int(t[i])  # the second immediate
                    i += 1
                if t[i] == "Val":
                    values, i = self._values(t, i + 1, ndst + nsrc)
                    value = _operand_value(src, values[ndst:], mask)
                elif t[i] != "NoVal":
                    raise ValueError
                else:
                    i += 1
            if i != len(t):
                raise IndexError
        except (IndexError, ValueError):
            raise error(
                self.path,
                lineno,
                self.rule,
                f"{short(text)!r}: expected "
                f"{'LINE ' if self.lineinfo else ''}PC MASK NDST [Rd] OPCODE NSRC "
                f"[Rs...] WIDTH [ADDRESSES] IMM"
                f"{' [IMM2] Val VALUES|NoVal' if self.version >= 6 else ''} "
                f"(tracer version {self.version})",
            ) from None
        if copy is not None and mask:
            mbar, nbytes, first = copy
            raise error(
                self.path,
                lineno,
                "tma-shared-unseen",
                f"{opcode}: a copy of {nbytes} bytes (global {first}) completing on "
                f"mbarrier {mbar:#x}: the trace does not record its shared-memory "
                f"side, and tracerace gives no verdict about bytes nobody saw",
            )
        eff = decode(opcode).effect
        if eff is Effect.NONE:
            return None
        if not -(1 << 63) <= imm < 1 << 64:
            raise error(self.path, lineno, self.rule, f"immediate {imm} is not a 64-bit integer")
        ops = operands(opcode, nsrc, imm)
        if value is not None:
            ops = replace(ops or SyncOperands(), value=value)
        return Record(
            lineno, block, warp, opcode, self.site(pc, opcode, line), mask, addrs, ops, pc
        )

    @staticmethod
    def _addresses(t: list[str], i: int, mask: int, lineno: int) -> tuple:
        fmt = int(t[i])
        n = mask.bit_count()
        if fmt == 0:
            out = [int(a, 16) for a in t[i + 1 : i + 1 + n]]
            if len(out) != n:
                raise IndexError
            return (A_ACTIVE, out), i + 1 + n
        if fmt == 1:
            return (A_STRIDE, int(t[i + 1], 16), int(t[i + 2])), i + 3
        if fmt == 2:
            base = int(t[i + 1], 16)
            deltas = t[i + 2 : i + 1 + n] if n else []
            if len(deltas) != max(n - 1, 0):
                raise IndexError
            out, acc = [base], base
            for d in deltas:
                acc += int(d)
                out.append(acc)
            return (A_ACTIVE, out[:n]), i + 2 + max(n - 1, 0)
        raise ValueError

    @staticmethod
    def _copy(t: list[str], i: int) -> tuple:
        """A TMA/bulk copy's fields: (mbarrier, bytes, first global address)."""
        mbar = int(t[i], 16)
        multicast = int(t[i + 1])
        i += 2
        if multicast:
            int(t[i], 16)
            i += 1
        nbytes = int(t[i])
        int(t[i + 1])  # out-of-bounds bytes
        mode = int(t[i + 2])
        i += 3
        if mode == TMA_LIST:
            n = int(t[i])
            if not 0 <= n <= len(t):
                raise ValueError
            addrs = [int(a, 16) for a in t[i + 1 : i + 1 + n]]
            if len(addrs) != n:
                raise IndexError
            i += 1 + n
        elif mode == TMA_BASE_DELTA:
            base = int(t[i], 16)
            n = int(t[i + 1])
            if not 0 <= n <= len(t):
                raise ValueError
            deltas = [int(d) for d in t[i + 2 : i + 1 + n]] if n else []
            if len(deltas) != max(n - 1, 0):
                raise IndexError
            addrs = [base] if n else []
            i += 2 + max(n - 1, 0)
        else:
            raise ValueError
        first = f"{addrs[0]:#x}" if addrs else "addresses not recorded"
        return (mbar, nbytes, first), i

    @staticmethod
    def _values(t: list[str], i: int, nregs: int) -> tuple[list[list[int]], int]:
        out = []
        for _ in range(nregs):
            n = int(t[i])
            if n not in (REG_VALUES_ONE, REG_VALUES_ALL):
                raise ValueError
            vals = [int(v, 16) for v in t[i + 1 : i + 1 + n]]
            if len(vals) != n or any(not 0 <= v <= 0xFFFFFFFF for v in vals):
                raise ValueError
            out.append(vals)
            i += 1 + n
        return out, i


def _operand_value(src: list[str], values: list[list[int]], mask: int) -> int | None:
    """The value of the last non-predicate source register in the active lanes, when
    they agree (None otherwise, or without such a register)."""
    for name, vals in zip(reversed(src), reversed(values)):
        if name.lstrip("U").startswith("P"):
            continue
        if name in REG_ZERO:
            return 0
        if len(vals) == REG_VALUES_ONE:
            return vals[0]
        active = {vals[lane] for lane in range(32) if (mask >> lane) & 1}
        return active.pop() if len(active) == 1 else None
    return None


class TryWaits:
    """A warp's try-wait loop as one wait: a try-wait that fails is retried, so of a
    run of waits on one mbarrier and parity only the last returned."""

    def __init__(self, replay) -> None:
        self.replay = replay
        self.pending: Record | None = None

    @staticmethod
    def key(rec: Record) -> tuple:
        spec = rec.addrs
        addrs = (spec[0], tuple(spec[1])) if spec and spec[0] == A_ACTIVE else spec
        value = rec.ops.value if rec.ops else None
        return addrs, rec.mask, None if value is None else value & 1

    def record(self, rec: Record) -> None:
        if decode(rec.opcode).effect is Effect.MBAR_WAIT:
            if self.pending is not None and self.key(self.pending) != self.key(rec):
                self.replay.record(self.pending)
            self.pending = rec
            return
        self.flush()
        self.replay.record(rec)

    def flush(self) -> None:
        if self.pending is not None:
            self.replay.record(self.pending)
            self.pending = None


class RawV6LineParser(V6LineParser):
    """A raw (``kernel-N.trace``) version 6 line: the CTA, warp and cluster fields,
    then the instruction."""

    def parse_raw(self, lineno: int, text: str) -> tuple[Record | None, tuple, tuple]:
        """``(record or None, CTA, cluster id)``."""
        t = text.split(None, RAW_FIELDS)
        try:
            fields = [int(x) for x in t[:RAW_FIELDS]]
            if len(t) <= RAW_FIELDS or min(fields) < 0:
                raise ValueError
        except ValueError:
            raise error(
                self.path,
                lineno,
                self.rule,
                f"{short(text)!r}: expected CTA_X CTA_Y "
                f"CTA_Z WARP CLUSTER_X CLUSTER_Y CLUSTER_Z CLUSTER_CTA_X CLUSTER_CTA_Y "
                f"CLUSTER_CTA_Z CLUSTER_RANK, then the instruction (tracer version "
                f"{self.version})",
            ) from None
        cta = (fields[0], fields[1], fields[2])
        warp, cluster = fields[3], tuple(fields[4:7])
        block = self.info.block_index(cta)
        if block is None:
            raise error(
                self.path, lineno, self.rule, f"CTA {cta} is outside the grid {self.info.grid}"
            )
        if warp >= self.info.warps:
            raise error(
                self.path,
                lineno,
                self.rule,
                f"warp {warp} is outside a {self.info.threads}-thread block",
            )
        return self.parse(lineno, t[RAW_FIELDS], block, warp), cta, cluster
