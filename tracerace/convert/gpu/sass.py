"""The SASS opcode table: what an NVIDIA SASS instruction means to tracerace.

Every importer of GPU-recorded traces (``tracerace.convert.gpu``) decodes opcodes here
and nowhere else. :func:`decode` maps an opcode with its modifiers
(``LDG.E.128.SYS``, ``ATOMG.E.ADD.STRONG.GPU``, ``BAR.SYNC.DEFER_BLOCKING``)
to a :class:`Sass`: the instruction's :class:`Effect`, memory space, bytes per
lane address, scope and semantics. Operand values (a barrier's id and count,
the ``N`` of ``DEPBAR.LE SB0, N``, a ``WARPSYNC`` mask) are not in the
opcode; each format carries them differently (Accel-Sim: one immediate;
CUTracer: the SASS text), and :func:`operands` / :func:`sync_operands` read
the textual form.

The table
---------

============================== ===========================================================
SASS                           tracerace
============================== ===========================================================
``LDG`` / ``STG``              global ``read`` / ``write``
``LDS`` / ``STS``              shared ``read`` / ``write``
``LDL`` / ``STL``              local ``read`` / ``write``
``LD`` / ``ST``                generic: resolved per lane by the shared and local windows
``LDSM`` / ``STSM``            shared matrix ``read`` / ``write``: 16 bytes per lane
                               address, lanes 0-7, 0-15 or 0-31 for ``.1``/``.2``/``.4``
``ATOMG`` / ``ATOMS``          ``atomic`` in global / shared memory
``ATOM`` / ``RED``             ``atomic``, generic address (``REDG``: global)
``.STRONG.{SM,GPU,SYS}``,      on a load or store: a morally strong access, imported as a
``.MMIO.{GPU,SYS}``            relaxed ``atomic`` at that scope (two never race, as in the
                               PTX memory model); on an atomic: its scope. ``SM``/``CTA``
                               is block, ``GPU`` device, ``SYS`` system. Atomics without
                               a scope: device (block for ``ATOMS``). SASS atomics carry no
                               acquire/release; the fences around them do (rule 4).
``LDGSTS``                     ``cp_async``: shared destination, global source
``LDGDEPBAR``                  ``cp_async_commit``
``DEPBAR.LE SB0, N``           ``cp_async_wait`` N (``DEPBAR`` on other scoreboards waits
                               for registers: no event)
``BAR.SYNC``, ``BAR.RED.*``,   ``bar_sync`` on barrier id (first operand); the count is
``BAR.SYNCALL``                the second operand, or every thread of the block that has
                               not exited when the id is alone
``BAR.ARV``                    ``bar_arrive`` (id, count)
``WARPSYNC``                   ``warp_sync`` with the mask operand (``.ALL``: every lane)
``MEMBAR.{CTA,GL,GPU,VC,SYS}`` ``fence`` acq_rel at block / device / device / device /
                               system scope (``.SC`` and ``.ALL`` forms alike)
``CCTL.IVALL``                 ``fence`` acquire, device scope: the cache invalidation
                               that completes ``ld.acquire`` after a strong load
``FENCE.VIEW.ASYNC.*``         ``fence_proxy_async``
``SYNCS.EXCH.64``              ``mbar_init``: the count from the exchanged register's
                               value (:func:`mbar_init_count`)
``SYNCS.ARRIVE.TRANS64.AxTy``  ``mbar_expect_tx`` (``Ty`` = ``TR``: the register's bytes),
                               then ``mbar_arrive`` (``A1``: one arrival, ``AR``: the
                               register's count, ``A0``: none); without ``AxTy`` it is
                               ``A1TR`` (``mbarrier.arrive.expect_tx``: nvcc 13 for sm_90a
                               writes ``SYNCS.ARRIVE.TRANS64 RZ, [R6+URZ], R3`` with the
                               bytes in ``R3``, and ``.A1T0 ..., RZ`` for a plain arrive)
``SYNCS.PHASECHK.TRANS64``     ``mbar_wait`` on the parity in the register's low bit
                               (``.TRYWAIT`` and the test form alike; see the importers for
                               which attempt succeeded)
``SYNCS.CCTL.IV``              ``mbar_inval``
============================== ===========================================================

The mbarrier address of a ``SYNCS`` is the line's memory address; the count,
bytes and parity are register values, which only Accel-Sim's tracer version 6
records (``Val`` lines); an importer without them fails on a ``SYNCS``.

Sizes come from the modifiers: ``U8``/``S8`` 1, ``U16``/``S16``/``F16`` 2,
``32``/``F32``/``U32``/``S32`` and packed 16-bit pairs 4, ``64``/``S64``/``U64``/``F64``
8, ``128`` 16; 4 when none is given (the 32-bit default of SASS).

Not followed (:data:`Effect.UNFOLLOWABLE`): instructions that touch memory or
synchronise in ways none of the supported formats records the operands of.
An import that meets one fails and says what is missing, rather than dropping
an access or inventing order:

* ``SYNCS`` forms not in the table above, and ``ARRIVES``
  (``cp.async.mbarrier.arrive``);
* ``UTMALDG``, ``UTMASTG``, ``UTMAREDG``, ``UBLKCP``, ``UBLKRED``,
  ``UTMACMDFLUSH``, ``REDAS`` (TMA and bulk copies): no supported format
  records the shared-memory side of the copy (Accel-Sim version 6 records the
  mbarrier, the byte count and the global addresses, not the shared ones), and
  tracerace gives no verdict about bytes nobody saw;
* ``HGMMA``/``IGMMA``/``QGMMA``/``BGMMA``, ``WARPGROUP.*``: warpgroup MMA reads
  shared-memory operands through descriptors;
* ``UCGABAR_*``/``CGABAR``: cluster barriers; tensor-memory (``LDTM``,
  ``STTM``, ``UTC*``) instructions; texture and surface instructions.

Known to neither touch memory nor order it (:data:`Effect.NONE`): arithmetic,
conversions, moves, predicates, uniform-datapath arithmetic, branches and
convergence barriers (``BSSY``/``BSYNC``), ``EXIT``, shuffles, votes, matches
and warp reductions (they order no memory), register-only MMA (``HMMA``,
``IMMA``, ``DMMA``, ``BMMA``), constant-bank loads (``LDC``/``ULDC``: the
kernel cannot write them), prefetches and other cache controls. Any opcode
in neither list is :data:`Effect.UNKNOWN`, and an import fails on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from ...trace.ops import Scope, Sem, Space


class Effect(Enum):
    """What an instruction does, for race detection."""

    NONE = "none"  # no memory access, no ordering
    LOAD = "load"
    STORE = "store"
    ATOMIC = "atomic"  # read-modify-write, or a morally strong load/store
    CP_ASYNC = "cp_async"  # LDGSTS: global -> shared, asynchronous
    CP_COMMIT = "cp_async_commit"  # LDGDEPBAR
    CP_WAIT = "cp_async_wait"  # DEPBAR.LE SB0, N
    BAR_SYNC = "bar_sync"
    BAR_ARRIVE = "bar_arrive"
    WARP_SYNC = "warp_sync"
    FENCE = "fence"
    FENCE_PROXY_ASYNC = "fence_proxy_async"
    MBAR_INIT = "mbar_init"  # SYNCS.EXCH.64
    MBAR_ARRIVE = "mbar_arrive"  # SYNCS.ARRIVE.TRANS64.AxTy: expect-tx and/or arrive
    MBAR_WAIT = "mbar_wait"  # SYNCS.PHASECHK.TRANS64[.TRYWAIT]
    MBAR_INVAL = "mbar_inval"  # SYNCS.CCTL.IV
    EXIT = "exit"  # no event; the lanes leave (barrier counts, masks)
    UNFOLLOWABLE = "unfollowable"  # known; needs operands no supported format records
    UNKNOWN = "unknown"  # not in this table

    @property
    def is_access(self) -> bool:
        return self in (Effect.LOAD, Effect.STORE, Effect.ATOMIC, Effect.CP_ASYNC)


GENERIC = 3
"""Memory space of a generic-address instruction (``LD``, ``ST``, ``ATOM``,
``RED``): each lane's address is resolved by the shared and local windows."""

DEFAULT_SIZE = 4
MATRIX_ROW_BYTES = 16
"""``LDSM``/``STSM``: each lane address names one 16-byte row of an 8x8 matrix."""
DEPBAR_CP_ASYNC_SCOREBOARD = 0
"""``DEPBAR.LE SB0, N`` waits for cp.async groups; other scoreboards are register waits."""
IMPLICIT_COUNT = 0
"""A barrier without a count operand: every thread of the block that has not exited."""
MBAR_COUNT_BITS = 20
"""An mbarrier's arrival counts are 20-bit fields (PTX: a count is at most 2^20 - 1)."""


def mbar_init_count(value: int) -> int:
    """The expected arrival count of a ``SYNCS.EXCH.64`` (``mbarrier.init``) whose
    exchanged register (the low word of the 64-bit state) holds ``value``.

    nvcc 13 for sm_90a builds that word as ``(2^20 - count) << 1``
    (``UIADD3 UR4, -UR4, 0x100000``; ``USHF.L.U32 UR4, UR4, 0x1``): the pending
    count is kept as a negative 20-bit field above bit 0. Read from the
    compiler's code, not yet from a recording on hardware. 0 when the field is
    0 (no valid count)."""
    field = (value >> 1) & ((1 << MBAR_COUNT_BITS) - 1)
    return (1 << MBAR_COUNT_BITS) - field if field else 0


REG_ZERO = frozenset({"RZ", "R255", "URZ", "UR63"})
"""Register names that read as 0 whatever a trace records for them."""


@dataclass(frozen=True)
class Sass:
    """The meaning of one opcode (with its modifiers)."""

    opcode: str
    mnemonic: str
    effect: Effect
    space: int = int(Space.GLOBAL)  # ops.Space value, or GENERIC
    size: int = 0  # bytes per lane address
    scope: int = int(Scope.DEVICE)
    sem: int = int(Sem.RELAXED)
    lanes: int = 32  # lanes whose address is used (LDSM .1/.2: 8/16)
    strong: bool = False  # a .STRONG load/store imported as a relaxed atomic
    arrivals: str = ""  # SYNCS.ARRIVE: "0", "1" or "R" (the register's count)
    tx: str = ""  # SYNCS.ARRIVE: "0" or "R" (the register's bytes)
    why: str | None = None  # UNFOLLOWABLE / UNKNOWN: what is missing

    @property
    def followable(self) -> bool:
        return self.effect not in (Effect.UNFOLLOWABLE, Effect.UNKNOWN)


# --- the lists ----------------------------------------------------------------------

_NO_EFFECT = frozenset(
    """
    FADD FADD32I FADD2 FCHK FCMP FFMA FFMA32I FFMA2 FMNMX FMNMX3 FMUL FMUL32I FMUL2 FSEL FSET
    FSETP FSWZADD MUFU FRND HADD2 HADD2_32I HFMA2 HFMA2_32I HFMA2_MMA HMNMX2 HMUL2 HMUL2_32I
    HSET2 HSETP2 DADD DFMA DMUL DSETP DMNMX F2F F2I I2F I2I I2IP F2IP F2FP I2FP
    BMSK BREV FLO IABS IADD IADD3 IADD32I IDP IDP4A IMAD IMAD32I IMADSP IMNMX IMUL IMUL32I
    ISCADD ISCADD32I ISETP LEA LOP LOP3 LOP32I POPC SHF SHL SHR VABSDIFF VABSDIFF4 VIADD
    VIADDMNMX VIMNMX VIMNMX3 VHMNMX
    MOV MOV32I MOVM PRMT SEL SGXT SHFL P2R R2P PLOP3 PSETP CS2R S2R S2UR R2UR
    UMOV UIADD3 UIMAD ULOP ULOP3 ULOP32I USHF USEL UISETP UFLO UPOPC UPRMT UBMSK UBREV ULEA
    UPLOP3 UPSETP USGXT UCLEA UP2UR UR2UP USETMAXREG UF2FP UI2FP UIMNMX UVIRTCOUNT
    BRA BRX BRXU JMP JMX JMXU CALL RET BSSY BSYNC BREAK BPT KILL NANOSLEEP NOP YIELD BMOV
    RPCMOV LEPC PMTRIG ERRBAR CGAERRBAR ELECT ENDCOLLECTIVE PREEXIT
    VOTE VOTEU MATCH REDUX B2R R2B QSPC
    HMMA IMMA DMMA BMMA
    LDC ULDC UTMAPF UBLKPF UTMACCTL CCTLL CCTLT
""".split()
)
"""Opcodes that neither access memory nor order accesses (see the module doc)."""

_UNFOLLOWABLE = {
    "ARRIVES": "cp.async.mbarrier.arrive: the trace does not record the mbarrier's phase or count",
    "UTMALDG": "a TMA load: no trace records the shared-memory side of the copy, and "
    "tracerace gives no verdict about bytes nobody saw",
    "UTMASTG": "a TMA store: no trace records the shared-memory side of the copy, and "
    "tracerace gives no verdict about bytes nobody saw",
    "UTMAREDG": "a TMA reduction: no trace records the shared-memory side of the copy",
    "UBLKCP": "a bulk copy: no trace records the shared-memory side of the copy, and "
    "tracerace gives no verdict about bytes nobody saw",
    "UBLKRED": "a bulk reduction: no trace records the shared-memory side of the copy",
    "UTMACMDFLUSH": "a bulk async-group commit: the bulk copies it groups cannot be followed",
    "REDAS": "an asynchronous shared::cluster reduction: the trace does not record its mbarrier",
    "HGMMA": "a warpgroup MMA: it reads shared memory through descriptors the trace does "
    "not record",
    "IGMMA": "a warpgroup MMA: it reads shared memory through descriptors the trace does "
    "not record",
    "QGMMA": "a warpgroup MMA: it reads shared memory through descriptors the trace does "
    "not record",
    "BGMMA": "a warpgroup MMA: it reads shared memory through descriptors the trace does "
    "not record",
    "WARPGROUP": "a warpgroup MMA fence or wait: the MMAs it orders cannot be followed",
    "UCGABAR_ARV": "a cluster barrier: tracerace's barriers are per block",
    "UCGABAR_WAIT": "a cluster barrier: tracerace's barriers are per block",
    "CGABAR": "a cluster barrier: tracerace's barriers are per block",
    "LDTM": "a tensor-memory access: the trace does not record tensor-memory addresses",
    "STTM": "a tensor-memory access: the trace does not record tensor-memory addresses",
}
for _name in (
    "UTCBAR",
    "UTCMMA",
    "UTCHMMA",
    "UTCQMMA",
    "UTCIMMA",
    "UTCOMMA",
    "UTCCP",
    "UTCSHIFT",
    "UTCATOMSWS",
):
    _UNFOLLOWABLE[_name] = (
        "a tensor-core (tcgen05) instruction: it reads or writes shared "
        "and tensor memory the trace does not record"
    )
for _name in (
    "TEX",
    "TLD",
    "TLD4",
    "TMML",
    "TXD",
    "TXQ",
    "TEXS",
    "TLDS",
    "TLD4S",
    "SULD",
    "SUST",
    "SUATOM",
    "SURED",
    "SUQUERY",
):
    _UNFOLLOWABLE[_name] = (
        "a texture or surface instruction: the trace does not record the memory it reads or writes"
    )

_LOADS = {
    "LDG": Space.GLOBAL,
    "LDS": Space.SHARED,
    "LDL": Space.LOCAL,
    "LD": GENERIC,
    "LDSM": Space.SHARED,
}
_STORES = {
    "STG": Space.GLOBAL,
    "STS": Space.SHARED,
    "STL": Space.LOCAL,
    "ST": GENERIC,
    "STSM": Space.SHARED,
}
_ATOMICS = {
    "ATOMG": Space.GLOBAL,
    "ATOMS": Space.SHARED,
    "ATOM": GENERIC,
    "RED": GENERIC,
    "REDG": Space.GLOBAL,
}

_SIZES = {
    "U8": 1,
    "S8": 1,
    "U16": 2,
    "S16": 2,
    "F16": 2,
    "BF16": 2,
    "32": 4,
    "U32": 4,
    "S32": 4,
    "F32": 4,
    "F16X2": 4,
    "BF16X2": 4,
    "F16x2": 4,
    "BF16x2": 4,
    "BF16_V2": 4,
    "F16_V2": 4,
    "64": 8,
    "U64": 8,
    "S64": 8,
    "F64": 8,
    "128": 16,
}
_SCOPES = {
    "SM": Scope.BLOCK,
    "CTA": Scope.BLOCK,
    "GPU": Scope.DEVICE,
    "GL": Scope.DEVICE,
    "VC": Scope.DEVICE,
    "SYS": Scope.SYSTEM,
}


def _size(mods: tuple[str, ...]) -> int:
    for m in mods:
        if m in _SIZES:
            return _SIZES[m]
    return DEFAULT_SIZE


def _strong_scope(mods: tuple[str, ...]) -> int | None:
    """The scope of ``.STRONG.X`` / ``.MMIO.X``, or None for a weak access."""
    for i, m in enumerate(mods):
        if m in ("STRONG", "MMIO"):
            nxt = mods[i + 1] if i + 1 < len(mods) else ""
            if nxt in _SCOPES:
                return int(_SCOPES[nxt])
            return int(Scope.SYSTEM) if m == "MMIO" else int(Scope.DEVICE)
    return None


@lru_cache(maxsize=4096)
def decode(opcode: str) -> Sass:
    """The :class:`Sass` of ``opcode`` (mnemonic and dot-separated modifiers)."""
    parts = tuple(p for p in opcode.strip().split(".") if p)
    if not parts:
        return Sass(opcode, "", Effect.UNKNOWN, why="an empty opcode")
    name, mods = parts[0], parts[1:]
    if name in _NO_EFFECT:
        return Sass(opcode, name, Effect.NONE)
    if name == "EXIT":
        return Sass(opcode, name, Effect.EXIT)
    if name in _UNFOLLOWABLE:
        return Sass(opcode, name, Effect.UNFOLLOWABLE, why=_UNFOLLOWABLE[name])
    if name in _LOADS or name in _STORES:
        store = name in _STORES
        space = int((_STORES if store else _LOADS)[name])
        if name in ("LDSM", "STSM"):
            count = next((int(m) for m in reversed(mods) if m in ("1", "2", "4")), 4)
            return Sass(
                opcode,
                name,
                Effect.STORE if store else Effect.LOAD,
                space,
                MATRIX_ROW_BYTES,
                lanes=8 * count,
            )
        scope = _strong_scope(mods)
        if scope is not None:
            return Sass(opcode, name, Effect.ATOMIC, space, _size(mods), scope=scope, strong=True)
        return Sass(opcode, name, Effect.STORE if store else Effect.LOAD, space, _size(mods))
    if name in _ATOMICS:
        space = int(_ATOMICS[name])
        scope = _strong_scope(mods)
        if scope is None:
            scope = int(Scope.BLOCK if space == Space.SHARED else Scope.DEVICE)
        return Sass(opcode, name, Effect.ATOMIC, space, _size(mods), scope=scope)
    if name == "LDGSTS":
        return Sass(opcode, name, Effect.CP_ASYNC, int(Space.SHARED), _size(mods))
    if name == "LDGDEPBAR":
        return Sass(opcode, name, Effect.CP_COMMIT)
    if name == "DEPBAR":
        if "LE" in mods:
            return Sass(opcode, name, Effect.CP_WAIT)
        return Sass(opcode, name, Effect.NONE)  # waits on register scoreboards only
    if name == "BAR":
        if not mods:
            return Sass(opcode, name, Effect.BAR_SYNC)
        if mods[0] in ("SYNC", "SYNCALL", "RED"):
            return Sass(opcode, name, Effect.BAR_SYNC)
        if mods[0] == "ARV":
            return Sass(opcode, name, Effect.BAR_ARRIVE)
        return Sass(
            opcode,
            name,
            Effect.UNKNOWN,
            why=f"barrier form BAR.{mods[0]} is not in tracerace's SASS table",
        )
    if name == "WARPSYNC":
        return Sass(opcode, name, Effect.WARP_SYNC)
    if name == "MEMBAR":
        scope = next((int(_SCOPES[m]) for m in mods if m in _SCOPES), None)
        if scope is None:
            return Sass(
                opcode,
                name,
                Effect.UNKNOWN,
                why="a MEMBAR without a known level (CTA, GL, GPU, VC, SYS)",
            )
        return Sass(opcode, name, Effect.FENCE, scope=scope, sem=int(Sem.ACQ_REL))
    if name == "FENCE":
        if mods[:2] == ("VIEW", "ASYNC"):
            return Sass(opcode, name, Effect.FENCE_PROXY_ASYNC)
        return Sass(opcode, name, Effect.UNKNOWN, why="a FENCE form not in tracerace's SASS table")
    if name == "SYNCS":
        return _syncs(opcode, mods)
    if name == "CCTL":
        if "IVALL" in mods:
            return Sass(opcode, name, Effect.FENCE, scope=int(Scope.DEVICE), sem=int(Sem.ACQUIRE))
        return Sass(opcode, name, Effect.NONE)
    return Sass(
        opcode,
        name,
        Effect.UNKNOWN,
        why="an opcode not in tracerace's SASS table (it may touch memory or synchronise)",
    )


_ARRIVE_TX = re.compile(r"^A([01R])T([0R])$")


def _syncs(opcode: str, mods: tuple[str, ...]) -> Sass:
    """The mbarrier forms of ``SYNCS`` (see the table in the module doc)."""
    if mods[:2] == ("EXCH", "64"):
        return Sass(opcode, "SYNCS", Effect.MBAR_INIT, int(Space.SHARED), 8)
    if mods[:2] == ("ARRIVE", "TRANS64"):
        form = next((m for m in (_ARRIVE_TX.match(x) for x in mods[2:]) if m), None)
        arrivals, tx = form.groups() if form else ("1", "R")
        return Sass(
            opcode,
            "SYNCS",
            Effect.MBAR_ARRIVE,
            int(Space.SHARED),
            8,
            scope=int(Scope.BLOCK),
            sem=int(Sem.RELEASE),
            arrivals=arrivals,
            tx=tx,
        )
    if mods[:2] == ("PHASECHK", "TRANS64"):
        return Sass(
            opcode,
            "SYNCS",
            Effect.MBAR_WAIT,
            int(Space.SHARED),
            8,
            scope=int(Scope.BLOCK),
            sem=int(Sem.ACQUIRE),
        )
    if mods[:2] == ("CCTL", "IV"):
        return Sass(opcode, "SYNCS", Effect.MBAR_INVAL, int(Space.SHARED), 8)
    return Sass(
        opcode, "SYNCS", Effect.UNFOLLOWABLE, why="an mbarrier form not in tracerace's SASS table"
    )


# --- operands in SASS text ----------------------------------------------------------

_PREDICATE = re.compile(r"^@!?U?P[T0-9]+$")
_IMMEDIATE = re.compile(r"^-?(0x[0-9a-fA-F]+|\d+)$")


def split_text(text: str) -> tuple[str, list[str]]:
    """``(opcode, operands)`` of one SASS instruction as disassemblers print it:
    ``@P0 BAR.SYNC.DEFER_BLOCKING 0x0 ;`` -> ``("BAR.SYNC.DEFER_BLOCKING", ["0x0"])``."""
    body = text.strip().rstrip(";").strip()
    words = body.split(None, 1)
    if words and _PREDICATE.match(words[0]):
        words = words[1].split(None, 1) if len(words) > 1 else []
    if not words:
        return "", []
    opcode = words[0]
    rest = words[1] if len(words) > 1 else ""
    ops = [o.strip() for o in rest.split(",")] if rest.strip() else []
    return opcode, ops


def immediate(operand: str) -> int | None:
    """The value of an immediate operand (``0x10``, ``16``), or None (a register...)."""
    if _IMMEDIATE.match(operand):
        return int(operand, 0) if not operand.startswith("-") else -int(operand[1:], 0)
    return None


@dataclass(frozen=True)
class SyncOperands:
    """Operand values of a synchronising instruction; None where not recorded."""

    barrier: int | None = None  # BAR: barrier id
    count: int | None = None  # BAR: thread count; IMPLICIT_COUNT when absent
    scoreboard: int | None = None  # DEPBAR.LE: SBn
    pending: int | None = None  # DEPBAR.LE: N
    mask: int | None = None  # WARPSYNC: lane mask
    value: int | None = None  # SYNCS: the operand register's value (count, bytes, parity)


def _is_predicate(op: str) -> bool:
    return bool(re.match(r"^!?U?P[T0-9]+$", op))


def sync_operands(sass: Sass, ops: list[str]) -> SyncOperands:
    """Operand values of a BAR, DEPBAR.LE or WARPSYNC from its SASS text operands."""
    if sass.effect in (Effect.BAR_SYNC, Effect.BAR_ARRIVE):
        values = [o for o in ops if not _is_predicate(o)]
        if sass.opcode.startswith("BAR.RED") and values and values[0].startswith("R"):
            values = values[1:]  # BAR.RED's destination register
        if not values:
            return SyncOperands(barrier=0, count=IMPLICIT_COUNT)  # BAR.SYNCALL and the like
        bar = immediate(values[0])
        count = immediate(values[1]) if len(values) > 1 else IMPLICIT_COUNT
        return SyncOperands(barrier=bar, count=count)
    if sass.effect is Effect.CP_WAIT:
        sb = re.match(r"^SB(\d+)$", ops[0]) if ops else None
        pending = immediate(ops[1]) if len(ops) > 1 else None
        return SyncOperands(scoreboard=int(sb.group(1)) if sb else None, pending=pending)
    if sass.effect is Effect.WARP_SYNC:
        if ".ALL" in sass.opcode:
            return SyncOperands(mask=0xFFFFFFFF)
        value = immediate(ops[0]) if ops else None
        return SyncOperands(mask=None if value is None else value & 0xFFFFFFFF)
    return SyncOperands()
