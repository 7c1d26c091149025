"""A record batch's columns: converted to the schema dtypes and checked row by row.

:func:`convert_record` turns every v1 column of an Arrow record batch into a
contiguous, read-only NumPy array of the schema dtype (defaults filled in,
values that do not fit the column type reported); :class:`RowChecks` applies
the format's per-row rules (op codes, ``ts`` order across batches, enum
ranges, site indexes, address ranges) to those arrays, vectorised. Both report
problems as ``(row, order, rule, message)``; the reader
(:mod:`tracerace.trace.reader`) raises the first.
"""

from __future__ import annotations

import functools
from enum import IntEnum

import numpy as np
import pyarrow as pa

from .meta import TraceMeta
from .ops import ADDRESSED_OPS, COPY_OPS, OP_CODES, UNCHECKED_OPS, Op, Proxy, Scope, Sem, Space
from .schema import (
    COLUMN_BY_NAME,
    COLUMN_NAMES,
    COLUMNS,
    DEFAULT_BLOCK,
    FENCE_ALL,
    FORMAT_VERSION,
    META_SITES,
    SITE_NONE,
    Column,
)

EXTENSION_OP_MIN = 100
"""Op codes from here up are reserved for extensions of the format."""

# Columns whose values are small enumerations: column -> largest valid value.
ENUM_LIMITS: dict[str, tuple[int, type[IntEnum] | None]] = {
    "space": (int(max(Space)), Space),
    "space2": (int(max(Space)), Space),
    "scope": (int(max(Scope)), Scope),
    "sem": (int(max(Sem)), Sem),
    "proxy": (int(max(Proxy)), Proxy),
    "fence_spaces": (FENCE_ALL, None),
}

_KNOWN_OP = np.zeros(256, dtype=bool)
_KNOWN_OP[sorted(OP_CODES)] = True

# Ops whose ``addr``/``size`` name bytes, and those (copies) whose ``addr2`` does too.
_ADDRESSED = np.zeros(256, dtype=bool)
_ADDRESSED[sorted(ADDRESSED_OPS)] = True
_COPIES = np.zeros(256, dtype=bool)
_COPIES[sorted(COPY_OPS)] = True

NO_SPACE = -1
OP_SPACES: dict[Op, tuple[int, int]] = {
    Op.BULK_COPY_PEER: (Space.SHARED, Space.SHARED),
    Op.BULK_REDUCE: (Space.GLOBAL, Space.SHARED),
    Op.BULK_REDUCE_PEER: (Space.SHARED, Space.SHARED),
    Op.ST_ASYNC: (Space.SHARED, NO_SPACE),
    Op.RED_ASYNC: (Space.SHARED, NO_SPACE),
}
"""Rule ``op-space``: the ``space`` and ``space2`` an extension op's rows must
hold (``NO_SPACE``: the op leaves the column free)."""
_SPACE_OF = np.full(256, NO_SPACE, dtype=np.int16)
_SPACE2_OF = np.full(256, NO_SPACE, dtype=np.int16)
for _op, (_space, _space2) in OP_SPACES.items():
    _SPACE_OF[_op] = _space
    _SPACE2_OF[_op] = _space2
OP_SIZES: dict[Op, tuple[int, ...]] = {
    Op.ST_ASYNC: (4, 8, 16),  # .b32, .b64, .v2.b32, .v4.b32 / .v2.b64
    Op.RED_ASYNC: (4, 8),  # .b32/.u32/.s32, .b64/.u64
}
"""Rule ``op-size``: the sizes an extension op's rows may hold."""
_SIZED = np.zeros(256, dtype=bool)
_SIZED[list(OP_SIZES)] = True


def _size_allowed(op: np.ndarray, size: np.ndarray) -> np.ndarray:
    ok = np.zeros(len(op), dtype=bool)
    for code, sizes in OP_SIZES.items():
        ok |= (op == code) & np.isin(size, sizes)
    return ok


_OWN_MBARRIER = np.zeros(256, dtype=bool)
_OWN_MBARRIER[[Op.CP_ASYNC_MBAR_ARRIVE, Op.CP_ASYNC_MBAR_ARRIVE_NOINC]] = True
"""Rule ``op-space`` too: ops whose mbarrier is the row's own block's (PTX has
only their ``.shared::cta`` form), so ``peer`` must be ``block``."""
ADDRESS_END = (1 << 64) - 1
"""The largest end (``addr + size``) of a byte range: it must fit a uint64."""

# What each op is, as bits, so that one look-up per row and two reductions
# per batch tell which of the op-dependent rules a batch can break: a rule
# no row of the batch is subject to costs no pass over the batch.
_IS_KNOWN, _IS_ADDRESSED, _IS_COPY, _IS_SPACED, _IS_SIZED, _IS_OWN_MBARRIER = (
    1 << k for k in range(6)
)
_OP_BITS = (
    _KNOWN_OP * _IS_KNOWN
    + _ADDRESSED * _IS_ADDRESSED
    + _COPIES * _IS_COPY
    + ((_SPACE_OF != NO_SPACE) | (_SPACE2_OF != NO_SPACE)) * _IS_SPACED
    + _SIZED * _IS_SIZED
    + _OWN_MBARRIER * _IS_OWN_MBARRIER
).astype(np.uint8)


def convert_record(record: pa.RecordBatch) -> tuple[dict[str, np.ndarray], list]:
    """Every v1 column of ``record`` as a NumPy array of its schema dtype.

    Returns the columns and a list of ``(row, order, rule, message)`` problems
    (the first per column), rows relative to ``record``. Types were checked
    against the schema when the trace was opened; here only values can fail.
    """
    index = {name: i for i, name in enumerate(record.schema.names)}
    n = record.num_rows
    cols: dict[str, np.ndarray] = {}
    problems: list = []
    # block first: peer and cluster default to it.
    for col in sorted(COLUMNS, key=lambda c: c.default == DEFAULT_BLOCK):
        i = index.get(col.name)
        if i is None:
            values = _default_column(col, n, cols)
        else:
            values, problem = _column_values(col, record.column(i), cols)
            if problem is not None:
                problems.append(problem)
        values.flags.writeable = False
        cols[col.name] = values
    return {name: cols[name] for name in COLUMN_NAMES}, problems


def convert_columns(record: pa.RecordBatch, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Columns ``names`` of ``record`` (none defaulting to ``block``) as
    :func:`convert_record` gives them, for rows it has checked already."""
    index = {name: i for i, name in enumerate(record.schema.names)}
    cols: dict[str, np.ndarray] = {}
    for name in names:
        col = COLUMN_BY_NAME[name]
        assert col.default != DEFAULT_BLOCK
        i = index.get(name)
        if i is None:
            cols[name] = _default_column(col, record.num_rows, cols)
        else:
            cols[name] = _column_values(col, record.column(i), cols)[0]
    return cols


def _default_column(col: Column, n: int, cols: dict[str, np.ndarray]) -> np.ndarray:
    """A column the trace leaves out. Batch columns are read-only, so a
    default shares memory: ``peer`` and ``cluster`` are ``block`` itself, and
    constants come from a cache. Fresh arrays cost their page faults at every
    batch: 8 MB of new pages per left-out 64-bit column of a 1M-row batch."""
    if col.default == DEFAULT_BLOCK:
        return cols["block"]
    return _constant(np.dtype(col.dtype).str, col.default, n)


@functools.lru_cache(maxsize=64)
def _constant(dtype: str, value: int, n: int) -> np.ndarray:
    values = np.full(n, value, dtype=dtype)
    values.flags.writeable = False
    return values


def _column_values(col: Column, array: pa.Array, cols: dict[str, np.ndarray]):
    """(values, problem-or-None) for one present column."""
    n = len(array)
    if pa.types.is_null(array.type):
        mask = np.ones(n, dtype=bool)
        raw = np.zeros(n, dtype=col.dtype)
    elif array.null_count:
        mask = array.is_null().to_numpy(zero_copy_only=False)
        raw = array.fill_null(0).to_numpy()
    else:
        mask = None
        raw = array.to_numpy()

    problem = None
    if mask is not None and col.required:
        row = int(np.argmax(mask))
        problem = (row, 0, "bad-value", f"{col.name} is null; a required column has no default")
    bad = out_of_range(raw, col.dtype)
    if bad is not None and bad.any():
        row = int(np.argmax(bad))
        rule = "unknown-op" if col.name == "op" else "bad-value"
        message = (
            f"{col.name} value {raw[row]} does not fit the column type "
            f"{col.arrow_type} (given as {array.type})"
        )
        if problem is None or row < problem[0]:
            problem = (row, 0, rule, message)

    if mask is None:
        values = raw if raw.dtype == col.dtype else raw.astype(col.dtype)
    else:
        values = np.array(raw, dtype=col.dtype)  # a private, writable copy
        values[mask] = cols["block"][mask] if col.default == DEFAULT_BLOCK else (col.default or 0)
    return np.ascontiguousarray(values), problem


def out_of_range(values: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """Mask of integer ``values`` that ``dtype`` cannot hold; None when all can.

    Comparisons are made in the source dtype, where the target's bounds are
    representable whenever they are tighter, so no value wraps while checked.
    """
    have, want = np.iinfo(values.dtype), np.iinfo(dtype)
    bad = None
    if have.min < want.min:
        bad = values < 0  # want is unsigned: int64 is the widest signed type
    if have.max > want.max:
        high = values > np.asarray(want.max, dtype=values.dtype)
        bad = high if bad is None else bad | high
    return bad


class RowChecks:
    """The format's per-row rules, vectorised; ``ts`` order spans batches."""

    def __init__(self, meta: TraceMeta) -> None:
        self.nsites = len(meta.sites)
        self.last_ts: int | None = None

    def problems(self, cols: dict[str, np.ndarray], n: int) -> list:
        found = []

        def first(mask: np.ndarray, order: int, rule: str, describe) -> None:
            if mask.any():
                row = int(np.argmax(mask))
                found.append((row, order, rule, describe(row)))

        # Each rule's mask is made only where a cheap screen (the op bits of
        # the batch, a column's maximum) says a row may break it; the mask,
        # and so the first row and the message, are the rule's own.
        op = cols["op"]
        bits = _OP_BITS[op]
        some = int(np.bitwise_or.reduce(bits)) if n else 0
        every = int(np.bitwise_and.reduce(bits)) if n else 0
        if not every & _IS_KNOWN:
            first(~_KNOWN_OP[op], 1, "unknown-op", lambda r: _unknown_op_message(int(op[r])))

        ts = cols["ts"]
        if self.last_ts is not None and ts[0] < self.last_ts:
            found.append(
                (
                    0,
                    2,
                    "ts-decreasing",
                    f"ts {ts[0]} is less than the previous row's ts {self.last_ts} "
                    f"(ts must be non-decreasing)",
                )
            )
        elif n > 1:
            down = ts[1:] < ts[:-1]
            if down.any():
                r = int(np.argmax(down)) + 1
                found.append(
                    (
                        r,
                        2,
                        "ts-decreasing",
                        f"ts {ts[r]} is less than the previous row's ts {ts[r - 1]} "
                        f"(ts must be non-decreasing)",
                    )
                )

        for order, (name, (limit, enum)) in enumerate(ENUM_LIMITS.items(), start=3):
            values = cols[name]
            if n and values.max() > limit:
                first(
                    values > limit,
                    order,
                    "bad-value",
                    lambda r, v=values, nm=name, e=enum: _enum_message(nm, int(v[r]), e),
                )

        site = cols["site"]
        if n and int(site.max()) >= self.nsites:
            first(
                (site != SITE_NONE) & (site >= self.nsites),
                10,
                "site-range",
                lambda r: _site_message(int(site[r]), self.nsites),
            )

        size = cols["size"]
        largest = int(size.max()) if n else 0
        for order, (name, uses, bit) in enumerate(
            (("addr", _ADDRESSED, _IS_ADDRESSED), ("addr2", _COPIES, _IS_COPY)), 11
        ):
            addr = cols[name]
            if not some & bit or int(addr.max()) + largest <= ADDRESS_END:
                continue
            room = np.uint64(ADDRESS_END) - size.astype(np.uint64)
            first(
                uses[op] & (addr > room),
                order,
                "address-overflow",
                lambda r, a=addr, nm=name: (
                    f"{nm} {int(a[r]):#x} + size {int(cols['size'][r])} "
                    f"passes the end of the 64-bit address space"
                ),
            )

        if some & _IS_SPACED:
            want, want2 = _SPACE_OF[op], _SPACE2_OF[op]
            wrong = ((want != NO_SPACE) & (cols["space"] != want)) | (
                (want2 != NO_SPACE) & (cols["space2"] != want2)
            )
            first(
                wrong,
                13,
                "op-space",
                lambda r: _op_space_message(
                    int(op[r]), int(cols["space"][r]), int(cols["space2"][r])
                ),
            )
        if some & _IS_SIZED:
            first(
                _SIZED[op] & ~_size_allowed(op, size),
                15,
                "op-size",
                lambda r: (
                    f"{Op(int(op[r])).label} stores "
                    f"{' or '.join(map(str, OP_SIZES[Op(int(op[r]))]))} bytes; "
                    f"the row has size {int(size[r])}"
                ),
            )
        if some & _IS_OWN_MBARRIER:
            first(
                _OWN_MBARRIER[op] & (cols["peer"] != cols["block"]),
                14,
                "op-space",
                lambda r: (
                    f"{Op(int(op[r])).label} arrives on an mbarrier of its own block: "
                    f"peer must be the row's block {int(cols['block'][r])}, "
                    f"the row has peer {int(cols['peer'][r])}"
                ),
            )
        return found

    def advance(self, cols: dict[str, np.ndarray]) -> None:
        self.last_ts = int(cols["ts"][-1])


def _op_space_message(code: int, space: int, space2: int) -> str:
    want, want2 = int(_SPACE_OF[code]), int(_SPACE2_OF[code])
    need = f"space {want} ({Space(want).name.lower()})"
    if want2 != NO_SPACE:
        need += f" and space2 {want2} ({Space(want2).name.lower()})"
        return f"{Op(code).label} needs {need}; the row has space {space} and space2 {space2}"
    return f"{Op(code).label} needs {need}; the row has space {space}"


def _unknown_op_message(code: int) -> str:
    if code in UNCHECKED_OPS:
        return (
            f"op code {code} ({Op(code).label}) is defined by trace format "
            f"v{FORMAT_VERSION} but this version of tracerace does not check it yet"
        )
    if code >= EXTENSION_OP_MIN:
        return (
            f"op code {code} is in the extension range (>= {EXTENSION_OP_MIN}) "
            f"but not known to trace format v{FORMAT_VERSION}"
        )
    return f"op code {code} is not in trace format v{FORMAT_VERSION}"


def _enum_message(name: str, value: int, enum: type[IntEnum] | None) -> str:
    if enum is None:
        return f"{name} {value} is not a bit mask of 1 global, 2 shared, 4 local"
    choices = ", ".join(f"{int(m)} {m.name.lower()}" for m in enum)
    return f"{name} {value} is not one of {choices}"


def _site_message(site: int, nsites: int) -> str:
    if nsites == 0:
        return f"site {site} is given but the trace has no {META_SITES} list"
    return f"site {site} is out of range: {META_SITES} has {nsites} entries"
