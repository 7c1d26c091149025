"""The v1 column set, in code. ``schemas/`` publishes the same facts as files.

A column that is absent, or null in a row, reads as its default. ``peer`` and
``cluster`` default to the row's ``block`` (``DEFAULT_BLOCK``); ``site``
defaults to ``SITE_NONE``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

FORMAT_VERSION = 1
"""The highest trace-format version this package reads."""

META_VERSION = "tracerace.version"
META_SITES = "tracerace.sites"
META_BUFFERS = "tracerace.buffers"
META_PRODUCER = "tracerace.producer"
META_WARNINGS = "tracerace.warnings"

SITE_NONE = 0xFFFFFFFF
"""The in-memory ``site`` of a row that names no site."""

DEFAULT_BLOCK = "block"
"""Marker default: the column reads as the row's ``block``."""


@dataclass(frozen=True)
class Column:
    name: str
    arrow_type: pa.DataType
    required: bool
    default: int | str | None  # int, DEFAULT_BLOCK, or None for required columns
    doc: str

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.arrow_type.to_pandas_dtype())


COLUMNS: tuple[Column, ...] = (
    Column("ts", pa.uint64(), True, None, "timestamp in any monotone unit; non-decreasing"),
    Column("op", pa.uint8(), True, None, "event code"),
    Column("launch", pa.uint32(), True, None, "kernel launch index"),
    Column("block", pa.uint32(), True, None, "block (CTA, core, PE) within the launch"),
    Column(
        "thread", pa.uint32(), True, None, "thread (lane, sub-core, DMA engine) within the block"
    ),
    Column("space", pa.uint8(), False, 0, "0 global, 1 shared, 2 local"),
    Column("addr", pa.uint64(), False, 0, "byte address (copies: destination)"),
    Column("size", pa.uint32(), False, 0, "bytes accessed from addr"),
    Column("addr2", pa.uint64(), False, 0, "copies: source address"),
    Column("space2", pa.uint8(), False, 0, "copies: source space"),
    Column("peer", pa.uint32(), False, DEFAULT_BLOCK, "shared space: owning block of the memory"),
    Column("cluster", pa.uint32(), False, DEFAULT_BLOCK, "thread-block cluster of block"),
    Column("obj", pa.uint64(), False, 0, "sync object: barrier id, mbarrier address, flag, lock"),
    Column("arg", pa.int64(), False, 0, "op argument: count, bytes, groups, parity"),
    Column(
        "scope", pa.uint8(), False, 4, "0 thread, 1 warp, 2 block, 3 cluster, 4 device, 5 system"
    ),
    Column("sem", pa.uint8(), False, 0, "0 relaxed, 1 acquire, 2 release, 3 acq_rel"),
    Column("proxy", pa.uint8(), False, 0, "0 generic, 1 async"),
    Column("site", pa.uint32(), False, SITE_NONE, "index into tracerace.sites"),
    Column(
        "fence_spaces",
        pa.uint8(),
        False,
        7,
        "barriers: the memory spaces the barrier orders, bits 1 global, 2 shared, 4 local",
    ),
)

FENCE_GLOBAL, FENCE_SHARED, FENCE_LOCAL = 1, 2, 4
FENCE_ALL = FENCE_GLOBAL | FENCE_SHARED | FENCE_LOCAL
"""Bits of ``fence_spaces``; the default, all three, is a barrier that orders all memory."""

COLUMN_BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}
REQUIRED = tuple(c.name for c in COLUMNS if c.required)
COLUMN_NAMES = tuple(c.name for c in COLUMNS)


def arrow_schema(metadata: dict[str, str] | None = None) -> pa.Schema:
    """The full v1 Arrow schema (every column), with optional metadata."""
    fields = [pa.field(c.name, c.arrow_type, nullable=not c.required) for c in COLUMNS]
    return pa.schema(fields, metadata=metadata)
