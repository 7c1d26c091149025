"""Importing traces recorded on real GPUs by NVBit tools into trace format v1.

Three tools are read, each from the output its own writer produces:

``accelsim``  Accel-Sim's tracer: ``kernel-N.trace`` (every SASS instruction of
              every warp, in the order the GPU produced them), the
              post-processed ``kernel-N.traceg`` (grouped by block and warp),
              ``kernelslist`` / ``kernelslist.g`` (several kernels); plain or
              ``.xz`` (:mod:`.accelsim`).
``tracez``    Accel-Sim 2.0's compressed ``kernel-N.tracez`` (block and warp
              grouped, zstd), alone or named by ``kernelslist.g``
              (:mod:`.tracez`).
``cutracer``  Meta's CUTracer: per-kernel NDJSON, plain or zstd
              (``.ndjson``, ``.ndjson.zst``) (:mod:`.cutracer`).
``memtrace``  NVBit's ``mem_trace`` example tool: the ``MEMTRACE:`` lines it
              prints (:mod:`.nvbit`).

Each format module provides an :class:`~..interface.Importer`; :data:`REGISTRY`
lists them in the order :func:`detect` asks them (by name, then by the first
lines of a file).

Every format becomes one launch per kernel: CTA -> ``block`` (linear, x
fastest), lane of warp w -> ``thread`` ``w * 32 + lane``, inactive lanes
dropped. :mod:`.sass` is the one table of what each SASS instruction does;
:mod:`.kernel` turns records into items (:mod:`.items`), :mod:`.order` picks
their replay order and :mod:`.emit` expands them into rows. What a format
does not record is stated in its module and in the import's notes; an
instruction the import cannot follow (an unknown opcode, an mbarrier or TMA
operation, an operand the format lacks) fails the import with the file, line
and opcode, exit 2.

The trace's metadata gains ``tracerace.kernels`` (per launch: name, grid and
block dims, source file, windows) and ``tracerace.import`` (format, order,
notes); ``schemas/metadata.json`` documents both.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from ...errors import TraceError
from ...trace.writer import TraceWriter
from ..interface import SNIFF_LINES, Importer, Registry
from . import accelsim, cutracer, nvbit, tracez
from .emit import Emitter
from .kernel import KernelInfo, Notes
from .source import lines

REGISTRY = Registry((tracez.IMPORTER, accelsim.IMPORTER, cutracer.IMPORTER, nvbit.IMPORTER))
"""The GPU formats, in the order detection asks them (:mod:`..interface`)."""
FORMATS = REGISTRY.names
META_KERNELS = "tracerace.kernels"
META_IMPORT = "tracerace.import"
V1_EXTENSIONS = (".arrow", ".arrows", ".parquet", ".feather")


@dataclass(frozen=True)
class ImportOptions:
    """What the user tells the import that the trace does not."""

    shared_window: tuple[int, int] | None = None
    """Generic shared window (base, size); default: the trace's, if it has one."""
    local_window: tuple[int, int] | None = None
    generic_global: bool = False
    """Read generic addresses as global when the trace gives no windows."""
    compression: str | None = None
    """Of the output (lz4, zstd)."""


@dataclass(frozen=True)
class ImportResult:
    src: str
    dst: str
    format: str
    order: str
    launches: int
    records: int
    rows: int
    notes: tuple[str, ...]

    def summary_line(self) -> str:
        return (
            f"{self.src} -> {self.dst}: {self.format}, {self.launches} launch"
            f"{'es' if self.launches != 1 else ''}, {self.records:,} records, "
            f"{self.rows:,} events ({self.order} order)"
        )


def parse_window(text: str, what: str) -> tuple[int, int]:
    """``BASE[:SIZE]`` (hex or decimal) as (base, size); size defaults to 16 MiB."""
    from .emit import DEFAULT_WINDOW_SIZE

    m = re.fullmatch(r"\s*(0x[0-9a-fA-F]+|\d+)\s*(?::\s*(0x[0-9a-fA-F]+|\d+))?\s*", text)
    if not m:
        raise TraceError(
            f"{what} {text!r}: expected BASE[:SIZE], e.g. 0x7f59dd000000:0x1000000",
            path="options",
            rule="usage",
        )
    base = int(m.group(1), 0)
    size = int(m.group(2), 0) if m.group(2) else DEFAULT_WINDOW_SIZE
    if size <= 0:
        raise TraceError(
            f"{what} {text!r}: the size must be positive", path="options", rule="usage"
        )
    if base + size > 1 << 64:
        raise TraceError(
            f"{what} {text!r}: the window passes the end of the 64-bit address space",
            path="options",
            rule="usage",
        )
    return base, size


def detect(path: str, fmt: str | None = None) -> str | None:
    """The GPU-trace format of ``path`` (``fmt`` if given), or None for a v1 or STD file."""
    if fmt is not None:
        return REGISTRY.get(fmt).name
    found = REGISTRY.detect(path, lines)
    return None if found is None else found.name


def import_trace(
    src, dst, *, fmt: str | None = None, options: ImportOptions = ImportOptions()
) -> ImportResult:
    """Import the GPU trace ``src`` (format ``fmt``, else detected) into v1 ``dst``.

    Reads line by line and writes in batches (memory does not grow with the
    trace). ``dst`` appears only when the import succeeds. Raises
    :class:`TraceError` (one line: file, line, rule) on anything it cannot
    follow.
    """
    src, dst = os.fspath(src), os.fspath(dst)
    kind = detect(src, fmt)
    if kind is None:
        raise TraceError(
            f"cannot tell the GPU trace format; name it with --from ({', '.join(FORMATS)})",
            path=src,
            rule="usage",
        )
    if not dst.lower().endswith(V1_EXTENSIONS):
        raise TraceError(
            f"the output of a GPU trace import is a v1 trace ({', '.join(V1_EXTENSIONS)})",
            path=dst,
            rule="usage",
        )
    if os.path.exists(src) and os.path.abspath(src) == os.path.abspath(dst):
        raise TraceError("input and output are the same file", path=dst, rule="usage")
    importer = REGISTRY.get(kind)
    notes = Notes()
    with TraceWriter(
        dst,
        compression=options.compression,
        producer=f"tracerace convert ({kind})",
        batch_size=1 << 20,
    ) as writer:
        emitter = Emitter(writer, [], generic="global" if options.generic_global else "fail")
        kernels, records, order = importer.read(src, writer, emitter, options, notes)
        emitter.finish()
        writer.metadata[META_KERNELS] = json.dumps([k.to_json(i) for i, k in enumerate(kernels)])
        writer.metadata[META_IMPORT] = json.dumps(
            {"format": kind, "order": order, "notes": notes.all()}
        )
    return ImportResult(
        src, dst, kind, order, len(kernels), records, emitter.rows, tuple(notes.all())
    )


__all__ = [
    "FORMATS",
    "REGISTRY",
    "SNIFF_LINES",
    "ImportOptions",
    "ImportResult",
    "Importer",
    "KernelInfo",
    "detect",
    "import_trace",
    "parse_window",
]
