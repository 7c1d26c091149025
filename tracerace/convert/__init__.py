"""Converting traces: between v1 containers, and from and to STD text.

Traces recorded on GPUs (Accel-Sim, CUTracer, NVBit mem_trace) are imported
by :mod:`tracerace.convert.gpu`; :func:`convert` hands them over.

Formats are chosen by file extension: ``.std`` (STD text), ``.arrow`` (Arrow
IPC file), ``.arrows`` (Arrow IPC stream), ``.parquet``.

STD text is read and written by :mod:`tracerace.convert.std`.
"""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass

import pyarrow as pa

from ..errors import TraceError
from ..trace.outfile import create_beside, destination, io_error, refuse_inputs, refuse_non_trace
from ..trace.reader import open_trace, reads_once
from ..trace.writer import write_batches
from .std import export_std, import_std

EXTENSIONS = {
    ".std": "std",
    ".arrow": "file",
    ".feather": "file",
    ".arrows": "stream",
    ".parquet": "parquet",
}


@dataclass(frozen=True)
class ConvertResult:
    src: str
    dst: str
    rows_in: int
    rows_out: int
    summary: str | None = None
    """A one-line account of the conversion (GPU trace imports), else None."""
    notes: tuple[str, ...] = ()
    """What the input format did not record (GPU trace imports)."""

    def summary_line(self) -> str:
        return self.summary or (
            f"{self.src} -> {self.dst}: {self.rows_in:,} in, {self.rows_out:,} out"
        )


def format_of(path: str) -> str:
    """``std``, ``file``, ``stream`` or ``parquet`` from the extension of ``path``."""
    ext = os.path.splitext(path)[1].lower()
    try:
        return EXTENSIONS[ext]
    except KeyError:
        known = ", ".join(EXTENSIONS)
        raise TraceError(
            f"cannot tell the format from the extension {ext or '(none)'!r} (known: {known})",
            path=path,
            rule="usage",
        ) from None


COMPRESSIONS = ("lz4", "zstd", "none")
DEFAULT_COMPRESSION = "lz4"
"""What an Arrow or Parquet output gets when neither the option nor the input says."""


def convert(
    src,
    dst,
    *,
    compression: str | None = None,
    fmt: str | None = None,
    shared_window: str | tuple[int, int] | None = None,
    local_window: str | tuple[int, int] | None = None,
    generic_global: bool = False,
) -> ConvertResult:
    """Convert trace ``src`` to ``dst``; formats by extension (see the module doc).

    A trace recorded on a GPU (Accel-Sim, CUTracer, NVBit mem_trace; ``fmt``
    names the format, else it is detected) is imported by
    :func:`tracerace.convert.gpu.import_trace`; ``shared_window``/``local_window``
    (``BASE[:SIZE]``) and ``generic_global`` tell it what the trace may not.
    ``compression`` (``lz4``, ``zstd`` or ``none``) applies to Arrow and Parquet
    outputs; by default the output keeps the input's codec when the input is
    a v1 trace compressed with LZ4 or ZSTD, and is LZ4 otherwise (STD text,
    an uncompressed trace, a GPU trace). Raises
    :class:`TraceError` on bad input, an output that is the input, or an
    output that cannot be written; ``dst`` appears only on success.
    """
    from . import gpu

    src, dst = os.fspath(src), os.fspath(dst)
    if compression not in (None, *COMPRESSIONS):
        raise TraceError(
            f"unknown compression {compression!r} (choose lz4, zstd or none)",
            path="options",
            rule="usage",
        )
    windows = {}
    for name, value in (("shared_window", shared_window), ("local_window", local_window)):
        windows[name] = (
            gpu.parse_window(value, "--" + name.replace("_", "-"))
            if isinstance(value, str)
            else value
        )
    once = reads_once(src)
    if once and fmt is not None:
        raise TraceError(
            "a GPU trace is read from a file, not from a pipe or device", path=src, rule="usage"
        )
    gpu_format = None if once else gpu.detect(src, fmt)
    if gpu_format is None and (any(windows.values()) or generic_global):
        raise TraceError(
            "--shared-window, --local-window and --generic-global apply to "
            "traces recorded on a GPU",
            path="options",
            rule="usage",
        )
    refuse_inputs(dst, [src])
    out = destination(dst)
    refuse_non_trace(out)
    try:
        if out.kind == "file":  # a missing or read-only folder fails now
            fd, probe = create_beside(out.real)
            os.close(fd)
            os.unlink(probe)
        if gpu_format is not None:
            codec = compression or DEFAULT_COMPRESSION
            options = gpu.ImportOptions(
                compression=None if codec == "none" else codec,
                generic_global=generic_global,
                **windows,
            )
            result = gpu.import_trace(src, dst, fmt=fmt, options=options)
            return ConvertResult(
                src, dst, result.records, result.rows, result.summary_line(), result.notes
            )
        fin, fout = "stream" if once else format_of(src), format_of(dst)
        if once and fout == "std":
            raise TraceError(
                "an STD export reads its input twice: give a file, not a pipe or device",
                path=src,
                rule="usage",
            )
        if fin == "std" and fout == "std":
            with tempfile.TemporaryDirectory() as tmp:
                mid = os.path.join(tmp, "trace.arrows")
                lines_in, _ = import_std(src, mid)
                _, lines_out = export_std(mid, dst)
            return ConvertResult(src, dst, lines_in, lines_out)
        if fout == "std":
            return ConvertResult(src, dst, *export_std(src, dst))
        if compression is None:
            kept = trace_compression(src) if fin != "std" and not once else None
            compression = kept if kept in ("lz4", "zstd") else DEFAULT_COMPRESSION
        codec = None if compression == "none" else compression
        if fin == "std":
            return ConvertResult(src, dst, *import_std(src, dst, compression=codec))
        return recontainer(src, dst, compression=codec)
    except OSError as err:
        raise io_error(err, dst) from None


# --- v1 -> v1 -------------------------------------------------------------------------


def trace_compression(path: str) -> str | None:
    """``lz4``, ``zstd`` or ``none``: how v1 trace ``path`` is compressed (its
    first record batch, or its first column chunk for Parquet); None when it
    cannot tell (no rows, another codec, not a trace)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
        if magic[:4] == b"PAR1":
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(path).metadata
            if meta.num_row_groups == 0 or meta.num_columns == 0:
                return None
            codec = meta.row_group(0).column(0).compression.lower()
            return {"lz4": "lz4", "lz4_raw": "lz4", "zstd": "zstd", "uncompressed": "none"}.get(
                codec
            )
        with pa.memory_map(path) as source:
            if magic == b"ARROW1":
                source.seek(8)
            messages = pa.ipc.MessageReader.open_stream(source)
            while True:
                message = messages.read_next_message()
                if message.type == "record batch":
                    return _ipc_codec(message.metadata.to_pybytes())
    except (OSError, ValueError, StopIteration, pa.ArrowException):
        return None


def _ipc_codec(message: bytes) -> str | None:
    """The body compression of an IPC record-batch message, read from its
    flatbuffer (``Message.header`` -> ``RecordBatch.compression`` ->
    ``BodyCompression.codec``, Arrow's ``Message.fbs``): pyarrow does not say."""

    def u16(at: int) -> int:
        return struct.unpack_from("<H", message, at)[0]

    def u32(at: int) -> int:
        return struct.unpack_from("<I", message, at)[0]

    def field(table: int, index: int) -> int | None:
        vtable = table - struct.unpack_from("<i", message, table)[0]
        slot = 4 + 2 * index
        if slot >= u16(vtable):
            return None
        offset = u16(vtable + slot)
        return table + offset if offset else None

    def child(table: int, index: int) -> int | None:
        at = field(table, index)
        return None if at is None else at + u32(at)

    batch = child(u32(0), 2)  # Message.header (a RecordBatch)
    compression = None if batch is None else child(batch, 3)
    if compression is None:
        return "none"
    codec = field(compression, 0)  # CompressionType, default LZ4_FRAME
    return {0: "lz4", 1: "zstd"}.get(message[codec] if codec is not None else 0)


# --- v1 -> v1 -------------------------------------------------------------------------


def recontainer(src: str, dst: str, *, compression: str | None = None) -> ConvertResult:
    """Copy a v1 trace into another container, batch by batch (rows are validated)."""
    with open_trace(src) as reader:
        meta = reader.meta
        rows = write_batches(
            dst,
            (batch.cols for batch in reader),
            sites=meta.sites,
            buffers=meta.buffers,
            producer=meta.producer,
            extra=meta.extra,
            warnings=meta.warnings,
            compression=compression,
        )
    return ConvertResult(src, dst, rows, rows)
