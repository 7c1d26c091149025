"""Event codes and the small enumerations of the trace format (v1).

Every code the format pins lives here, once. Kernels use the plain ``int``
constants at the bottom (Numba treats module-level ints as compile-time
constants); ``schemas/ops.json`` mirrors :class:`Op` and a test keeps the two
in agreement.
"""

from __future__ import annotations

from enum import IntEnum


class Op(IntEnum):
    READ = 0
    WRITE = 1
    ATOMIC = 2
    INIT = 3
    BAR_SYNC = 10
    BAR_ARRIVE = 11
    WARP_SYNC = 12
    FENCE = 20
    FENCE_PROXY_ASYNC = 21
    CP_ASYNC = 30
    CP_ASYNC_COMMIT = 31
    CP_ASYNC_WAIT = 32
    MBAR_INIT = 40
    MBAR_ARRIVE = 41
    MBAR_EXPECT_TX = 42
    MBAR_WAIT = 43
    MBAR_INVAL = 44
    TMA_LOAD = 50
    TMA_STORE = 51
    BULK_COMMIT = 52
    BULK_WAIT = 53
    SIGNAL = 60
    WAIT = 61
    ACQUIRE = 62
    RELEASE = 63
    # The Hopper/Blackwell extension (schemas/trace-format-v1.md, section 9).
    CLUSTER_ARRIVE = 100
    CLUSTER_ARRIVE_RELAXED = 101
    CLUSTER_WAIT = 102
    BULK_COPY_PEER = 103
    BULK_REDUCE = 104
    BULK_REDUCE_PEER = 105
    ST_ASYNC = 106
    RED_ASYNC = 107
    CP_ASYNC_MBAR_ARRIVE = 108
    CP_ASYNC_MBAR_ARRIVE_NOINC = 109
    MBAR_ARRIVE_DROP = 110

    @property
    def label(self) -> str:
        return self.name.lower()


class Space(IntEnum):
    GLOBAL = 0
    SHARED = 1
    LOCAL = 2


class Scope(IntEnum):
    THREAD = 0
    WARP = 1
    BLOCK = 2
    CLUSTER = 3
    DEVICE = 4
    SYSTEM = 5


class Sem(IntEnum):
    RELAXED = 0
    ACQUIRE = 1
    RELEASE = 2
    ACQ_REL = 3


class Proxy(IntEnum):
    GENERIC = 0
    ASYNC = 1


class HazardKind(IntEnum):
    RAW = 0
    WAR = 1
    WAW = 2
    UNINIT_READ = 3
    ASYNC_INFLIGHT = 4
    PROXY_FENCE = 5
    SYNC_ALIAS = 6
    BARRIER_MISMATCH = 7
    MBARRIER_MISUSE = 8

    @property
    def label(self) -> str:
        return self.name.lower()


class Severity(IntEnum):
    ERROR = 0
    WARNING = 1

    @property
    def label(self) -> str:
        return self.name.lower()


COPY_OPS = frozenset(
    {
        Op.CP_ASYNC,
        Op.TMA_LOAD,
        Op.TMA_STORE,
        Op.BULK_COPY_PEER,
        Op.BULK_REDUCE,
        Op.BULK_REDUCE_PEER,
    }
)
"""Copies: an async agent moves ``size`` bytes from ``addr2`` to ``addr``."""

ASYNC_OPS = COPY_OPS | {Op.ST_ASYNC, Op.RED_ASYNC}
"""Ops whose memory access an async agent makes (reported at the issue's row)."""

ADDRESSED_OPS = frozenset({Op.READ, Op.WRITE, Op.ATOMIC, Op.INIT}) | ASYNC_OPS
"""Ops whose ``addr``/``size`` name bytes."""

UNCHECKED_OPS: frozenset[Op] = frozenset()
"""Ops the format defines that the checkers do not replay yet (none now): the
reader rejects them (rule ``unknown-op``) rather than let a checker skip an
event, which could hide a race or invent one."""

OP_CODES = frozenset(int(op) for op in Op if op not in UNCHECKED_OPS)
"""The op codes a trace may hold for this reader."""

# Plain ints for jitted code.
READ = int(Op.READ)
WRITE = int(Op.WRITE)
ATOMIC = int(Op.ATOMIC)
INIT = int(Op.INIT)
BAR_SYNC = int(Op.BAR_SYNC)
BAR_ARRIVE = int(Op.BAR_ARRIVE)
WARP_SYNC = int(Op.WARP_SYNC)
FENCE = int(Op.FENCE)
FENCE_PROXY_ASYNC = int(Op.FENCE_PROXY_ASYNC)
CP_ASYNC = int(Op.CP_ASYNC)
CP_ASYNC_COMMIT = int(Op.CP_ASYNC_COMMIT)
CP_ASYNC_WAIT = int(Op.CP_ASYNC_WAIT)
MBAR_INIT = int(Op.MBAR_INIT)
MBAR_ARRIVE = int(Op.MBAR_ARRIVE)
MBAR_EXPECT_TX = int(Op.MBAR_EXPECT_TX)
MBAR_WAIT = int(Op.MBAR_WAIT)
MBAR_INVAL = int(Op.MBAR_INVAL)
TMA_LOAD = int(Op.TMA_LOAD)
TMA_STORE = int(Op.TMA_STORE)
BULK_COMMIT = int(Op.BULK_COMMIT)
BULK_WAIT = int(Op.BULK_WAIT)
SIGNAL = int(Op.SIGNAL)
WAIT = int(Op.WAIT)
ACQUIRE = int(Op.ACQUIRE)
RELEASE = int(Op.RELEASE)
CLUSTER_ARRIVE = int(Op.CLUSTER_ARRIVE)
CLUSTER_ARRIVE_RELAXED = int(Op.CLUSTER_ARRIVE_RELAXED)
CLUSTER_WAIT = int(Op.CLUSTER_WAIT)
BULK_COPY_PEER = int(Op.BULK_COPY_PEER)
BULK_REDUCE = int(Op.BULK_REDUCE)
BULK_REDUCE_PEER = int(Op.BULK_REDUCE_PEER)
ST_ASYNC = int(Op.ST_ASYNC)
RED_ASYNC = int(Op.RED_ASYNC)
CP_ASYNC_MBAR_ARRIVE = int(Op.CP_ASYNC_MBAR_ARRIVE)
CP_ASYNC_MBAR_ARRIVE_NOINC = int(Op.CP_ASYNC_MBAR_ARRIVE_NOINC)
MBAR_ARRIVE_DROP = int(Op.MBAR_ARRIVE_DROP)

SPACE_GLOBAL = int(Space.GLOBAL)
SPACE_SHARED = int(Space.SHARED)
SPACE_LOCAL = int(Space.LOCAL)

SCOPE_THREAD = int(Scope.THREAD)
SCOPE_WARP = int(Scope.WARP)
SCOPE_BLOCK = int(Scope.BLOCK)
SCOPE_CLUSTER = int(Scope.CLUSTER)
SCOPE_DEVICE = int(Scope.DEVICE)
SCOPE_SYSTEM = int(Scope.SYSTEM)

SEM_RELAXED = int(Sem.RELAXED)
SEM_ACQUIRE = int(Sem.ACQUIRE)
SEM_RELEASE = int(Sem.RELEASE)
SEM_ACQ_REL = int(Sem.ACQ_REL)

K_RAW = int(HazardKind.RAW)
K_WAR = int(HazardKind.WAR)
K_WAW = int(HazardKind.WAW)
K_UNINIT_READ = int(HazardKind.UNINIT_READ)
K_ASYNC_INFLIGHT = int(HazardKind.ASYNC_INFLIGHT)
K_PROXY_FENCE = int(HazardKind.PROXY_FENCE)
K_SYNC_ALIAS = int(HazardKind.SYNC_ALIAS)
K_BARRIER_MISMATCH = int(HazardKind.BARRIER_MISMATCH)
K_MBARRIER_MISUSE = int(HazardKind.MBARRIER_MISUSE)
