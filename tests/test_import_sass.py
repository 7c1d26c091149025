"""The SASS opcode table (tracerace.convert.gpu.sass): effects, spaces, sizes, scopes, operands."""

from __future__ import annotations

import pytest

from tracerace.convert.gpu.sass import (
    GENERIC,
    IMPLICIT_COUNT,
    Effect,
    decode,
    immediate,
    split_text,
    sync_operands,
)
from tracerace.trace.ops import Scope, Sem, Space


@pytest.mark.parametrize(
    "opcode, effect, space, size",
    [
        ("LDG.E.SYS", Effect.LOAD, Space.GLOBAL, 4),
        ("LDG.E.128.SYS", Effect.LOAD, Space.GLOBAL, 16),
        ("LDG.E.U8.CONSTANT", Effect.LOAD, Space.GLOBAL, 1),
        ("LDG.E.S16", Effect.LOAD, Space.GLOBAL, 2),
        ("STG.E.64", Effect.STORE, Space.GLOBAL, 8),
        ("LDS.U.128", Effect.LOAD, Space.SHARED, 16),
        ("STS.64", Effect.STORE, Space.SHARED, 8),
        ("LDL.LU", Effect.LOAD, Space.LOCAL, 4),
        ("STL.128", Effect.STORE, Space.LOCAL, 16),
        ("LD.E.64", Effect.LOAD, GENERIC, 8),
        ("ST.E", Effect.STORE, GENERIC, 4),
        ("ATOMS.ADD", Effect.ATOMIC, Space.SHARED, 4),
        ("ATOMS.CAS.64", Effect.ATOMIC, Space.SHARED, 8),
        ("ATOMG.E.ADD.STRONG.GPU", Effect.ATOMIC, Space.GLOBAL, 4),
        ("ATOMG.E.EXCH.64.STRONG.SYS", Effect.ATOMIC, Space.GLOBAL, 8),
        ("ATOM.E.ADD.F32.FTZ.RN.STRONG.GPU", Effect.ATOMIC, GENERIC, 4),
        ("RED.E.ADD.F16x2.RN.STRONG.GPU", Effect.ATOMIC, GENERIC, 4),
        ("LDGSTS.E.BYPASS.LTC128B.128", Effect.CP_ASYNC, Space.SHARED, 16),
        ("LDGSTS.E.LTC128B", Effect.CP_ASYNC, Space.SHARED, 4),
    ],
)
def test_accesses(opcode, effect, space, size):
    s = decode(opcode)
    assert (s.effect, s.space, s.size) == (effect, int(space), size)


def test_ldsm_rows_and_lanes():
    for opcode, lanes in (
        ("LDSM.16.M88.4", 32),
        ("LDSM.16.M88.2", 16),
        ("LDSM.16.MT88.1", 8),
        ("STSM.16.M88.4", 32),
    ):
        s = decode(opcode)
        assert (s.space, s.size, s.lanes) == (int(Space.SHARED), 16, lanes)
    assert decode("STSM.16.M88.2").effect is Effect.STORE


@pytest.mark.parametrize(
    "opcode, scope",
    [
        ("ATOMG.E.ADD.STRONG.GPU", Scope.DEVICE),
        ("ATOMG.E.ADD.STRONG.SM", Scope.BLOCK),
        ("ATOMG.E.ADD.STRONG.CTA", Scope.BLOCK),
        ("ATOMG.E.ADD.STRONG.SYS", Scope.SYSTEM),
        ("ATOMG.E.ADD", Scope.DEVICE),
        ("ATOMS.ADD", Scope.BLOCK),
        ("RED.E.ADD.MMIO.SYS", Scope.SYSTEM),
    ],
)
def test_atomic_scopes_are_relaxed(opcode, scope):
    s = decode(opcode)
    assert (s.scope, s.sem, s.strong) == (int(scope), int(Sem.RELAXED), False)


def test_strong_loads_and_stores_are_relaxed_atomics():
    s = decode("LDG.E.STRONG.GPU")
    assert (s.effect, s.scope, s.strong) == (Effect.ATOMIC, int(Scope.DEVICE), True)
    s = decode("ST.E.64.STRONG.SM")
    assert (s.effect, s.space, s.size, s.scope) == (Effect.ATOMIC, GENERIC, 8, int(Scope.BLOCK))
    # ".SYS" alone is the default coherence of a weak access in sm_70+ disassembly.
    assert decode("LDG.E.SYS").effect is Effect.LOAD


@pytest.mark.parametrize(
    "opcode, scope",
    [
        ("MEMBAR.SC.GPU", Scope.DEVICE),
        ("MEMBAR.ALL.CTA", Scope.BLOCK),
        ("MEMBAR.SC.SYS", Scope.SYSTEM),
        ("MEMBAR.GL", Scope.DEVICE),
        ("MEMBAR.CTA", Scope.BLOCK),
        ("MEMBAR.SYS", Scope.SYSTEM),
    ],
)
def test_membar(opcode, scope):
    s = decode(opcode)
    assert (s.effect, s.scope, s.sem) == (Effect.FENCE, int(scope), int(Sem.ACQ_REL))


def test_fences_and_sync():
    assert decode("FENCE.VIEW.ASYNC.S").effect is Effect.FENCE_PROXY_ASYNC
    cctl = decode("CCTL.IVALL")
    assert (cctl.effect, cctl.sem, cctl.scope) == (
        Effect.FENCE,
        int(Sem.ACQUIRE),
        int(Scope.DEVICE),
    )
    assert decode("CCTL.E.PF2").effect is Effect.NONE
    assert decode("LDGDEPBAR").effect is Effect.CP_COMMIT
    assert decode("DEPBAR.LE").effect is Effect.CP_WAIT
    assert decode("DEPBAR").effect is Effect.NONE
    for opcode in ("BAR.SYNC", "BAR.SYNC.DEFER_BLOCKING", "BAR.RED.POPC", "BAR.SYNCALL"):
        assert decode(opcode).effect is Effect.BAR_SYNC
    assert decode("BAR.ARV").effect is Effect.BAR_ARRIVE
    assert decode("WARPSYNC").effect is Effect.WARP_SYNC
    assert decode("EXIT").effect is Effect.EXIT


def test_no_effect_and_unknown():
    for opcode in (
        "FFMA",
        "IMAD.WIDE.U32",
        "MOV",
        "S2R",
        "BRA",
        "SHFL.BFLY",
        "VOTE.ALL",
        "HMMA.16816.F32",
        "LDC.64",
        "ULDC.64",
        "BSSY",
        "NANOSLEEP",
        "MATCH.ANY",
    ):
        assert decode(opcode).effect is Effect.NONE, opcode
    for opcode in ("FROB.X", "BAR.SCAN", "FENCE.SC", "MEMBAR.XYZ"):
        s = decode(opcode)
        assert s.effect is Effect.UNKNOWN and not s.followable and s.why, opcode


@pytest.mark.parametrize(
    "opcode, missing",
    [
        ("SYNCS.FROB.TRANS64", "mbarrier form"),
        ("UTMALDG.2D", "shared-memory side"),
        ("UTMASTG.2D", "shared-memory side"),
        ("UBLKCP.S.G", "shared-memory side"),
        ("ARRIVES.LDGSTSBAR.64", "mbarrier"),
        ("HGMMA.64x128x16.F32", "descriptors"),
        ("TEX.SCR.LL", "texture"),
        ("SUST.D.BA.2D", "surface"),
        ("UCGABAR_ARV", "cluster"),
    ],
)
def test_unfollowable_say_what_is_missing(opcode, missing):
    s = decode(opcode)
    assert s.effect is Effect.UNFOLLOWABLE and missing in s.why


def test_split_text_and_operands():
    assert split_text("@P0 BAR.SYNC.DEFER_BLOCKING 0x0 ;") == ("BAR.SYNC.DEFER_BLOCKING", ["0x0"])
    assert split_text("  LDG.E.SYS R2, [R2.64] ;") == ("LDG.E.SYS", ["R2", "[R2.64]"])
    assert split_text("EXIT ;") == ("EXIT", [])
    assert immediate("0x10") == 16 and immediate("7") == 7 and immediate("R5") is None

    def ops(text):
        opcode, operands = split_text(text)
        return sync_operands(decode(opcode), operands)

    assert (
        ops("BAR.SYNC.DEFER_BLOCKING 0x0 ;").barrier,
        ops("BAR.SYNC.DEFER_BLOCKING 0x0 ;").count,
    ) == (0, IMPLICIT_COUNT)
    arv = ops("BAR.ARV 0x1, 0x100 ;")
    assert (arv.barrier, arv.count) == (1, 256)
    assert ops("BAR.SYNC R3 ;").barrier is None
    assert (ops("DEPBAR.LE SB0, 0x1 ;").scoreboard, ops("DEPBAR.LE SB0, 0x1 ;").pending) == (0, 1)
    assert ops("DEPBAR.LE SB1, 0x2 ;").scoreboard == 1
    assert ops("WARPSYNC 0xffff ;").mask == 0xFFFF
    assert ops("WARPSYNC R4 ;").mask is None
    assert ops("WARPSYNC.ALL ;").mask == 0xFFFFFFFF
