"""Reading recorded text traces line by line: plain, xz (``lzma``) or zstd.

Traces run to gigabytes, so every reader here streams: lines are yielded one
at a time with their 1-based number, and nothing holds more than a block of
the file. A compressed file that ends early (a truncated download, a tracer
killed mid-write) is an error naming the file and the line it ended after,
not a shorter trace.
"""

from __future__ import annotations

import io
import lzma
import os
from collections.abc import Iterator

from ...errors import TraceError
from ...trace.limits import JSONLimitError, load_json

READ_BYTES = 1 << 22
ZSTD_FEED_BYTES = 1 << 10
MAX_LINE_BYTES = 16 << 20
"""The longest line an import reads (16 MiB): a CUTracer ``kernel_metadata``
line of a kernel with 100,000 instructions is under 10 MiB; an Accel-Sim or
mem_trace line is under 2 KiB."""
MAX_BLANK_BYTES = 1 << 20
"""The longest run of blank lines an import reads through (1 MiB)."""
MAX_JSON_DEPTH = 32
"""The deepest JSON nesting a CUTracer line may have (its records nest 3 deep)."""


def where(path: str, lineno: int | None) -> str:
    """``path:line`` for messages (the convention of compilers and of ``convert``)."""
    return path if lineno is None else f"{path}:{lineno}"


def error(path: str, lineno: int | None, rule: str, message: str) -> TraceError:
    return TraceError(message, path=where(path, lineno), rule=rule)


def compression_of(path: str) -> str | None:
    """``xz``, ``zstd`` or None, from the name and, failing that, the magic bytes."""
    lower = path.lower()
    if lower.endswith(".xz"):
        return "xz"
    if lower.endswith((".zst", ".zstd")):
        return "zstd"
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError:
        return None
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd"
    return None


def open_binary(path: str) -> io.BufferedIOBase:
    """The decompressed bytes of ``path``; errors are :class:`TraceError`."""
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise error(path, None, "no-such-file", "no such file") from None
    except IsADirectoryError:
        raise error(path, None, "usage", "is a directory; name a trace file") from None
    except OSError as exc:
        raise error(path, None, "unreadable", f"cannot read: {exc.strerror}") from None
    kind = compression_of(path)
    if kind == "xz":
        return lzma.LZMAFile(raw)
    if kind == "zstd":
        try:
            import zstandard
        except ImportError:
            raw.close()
            raise error(
                path,
                None,
                "usage",
                "reading zstd needs the zstandard package (pip install 'tracerace[gpu]')",
            ) from None
        return io.BufferedReader(_ZstdFrames(raw, zstandard), READ_BYTES)
    return raw


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a stream of zstd frames (CUTracer writes one frame
    per buffer flush). A stream that ends inside a frame raises ``EOFError``.

    The decompressor is fed :data:`ZSTD_FEED_BYTES` of input at a time: a zstd
    block holds at most 128 KiB and takes at least 4 bytes, so one feed yields
    at most ``ZSTD_FEED_BYTES * 32768`` bytes, however the input was crafted
    (a frame of 1 GiB of spaces is a few KiB).
    """

    def __init__(self, raw, zstandard) -> None:
        self._raw = raw
        self._zstd = zstandard
        self._dobj = None
        self._input = b""
        self._out = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._out:
            if not self._input:
                self._input = self._raw.read(READ_BYTES)
                if not self._input:
                    if self._dobj is not None and not self._dobj.eof:
                        raise EOFError("the zstd stream ends inside a frame")
                    return 0
            if self._dobj is None:
                self._dobj = self._zstd.ZstdDecompressor().decompressobj()
            piece, self._input = self._input[:ZSTD_FEED_BYTES], self._input[ZSTD_FEED_BYTES:]
            try:
                self._out = memoryview(self._dobj.decompress(piece))
            except self._zstd.ZstdError as exc:
                raise EOFError(f"damaged zstd data: {exc}") from None
            if self._dobj.eof:
                self._input = self._dobj.unused_data + self._input
                self._dobj = None
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def lines(
    path: str, *, max_line: int = MAX_LINE_BYTES, max_blank: int = MAX_BLANK_BYTES
) -> Iterator[tuple[int, str]]:
    """``(line number, text without the newline)`` for every line of ``path``.

    Decoding is UTF-8 with replacement (kernel names are the only non-ASCII
    text a tracer writes). A compressed stream that ends early raises
    ``TraceError`` (rule ``truncated``). Memory stays bounded whatever the
    input: a line longer than ``max_line`` bytes (rule ``line-too-long``) and
    a run of blank lines longer than ``max_blank`` bytes (rule
    ``blank-input``) are errors, found after reading at most that much.
    """
    f = open_binary(path)
    lineno = 0
    blank_from, blank_bytes = 0, 0
    try:
        with f:
            while True:
                raw = f.readline(max_line + 1)
                if not raw:
                    break
                lineno += 1
                if len(raw) > max_line and not raw.endswith(b"\n"):
                    raise error(
                        path,
                        lineno,
                        "line-too-long",
                        f"a line longer than {_size(max_line)}: no tracer writes one "
                        f"(a damaged file, or not a trace)",
                    )
                if raw.isspace():
                    if not blank_bytes:
                        blank_from = lineno
                    blank_bytes += len(raw)
                    if blank_bytes > max_blank:
                        raise error(
                            path,
                            blank_from,
                            "blank-input",
                            f"more than {_size(max_blank)} of blank lines in a row "
                            f"from here: not a trace",
                        )
                else:
                    blank_bytes = 0
                yield lineno, raw.decode("utf-8", errors="replace").rstrip("\r\n")
    except (EOFError, lzma.LZMAError) as exc:
        kind = compression_of(path) or "compressed"
        raise error(
            path,
            lineno or None,
            "truncated",
            f"the {kind} stream is damaged or ends early ({exc}) after line {lineno}",
        ) from None
    except OSError as exc:
        raise error(path, lineno or None, "unreadable", f"cannot read: {exc}") from None


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n:,} bytes"


def bounded_json(path: str, lineno: int, text: str, rule: str, max_depth: int = MAX_JSON_DEPTH):
    """``json.loads(text)`` through :func:`tracerace.trace.limits.load_json`, refusing
    nesting deeper than ``max_depth`` (rule ``rule``) before parsing. Raises
    ``ValueError`` for text that is not JSON, as ``json.loads`` does."""
    try:
        return load_json(text, max_bytes=MAX_LINE_BYTES, max_depth=max_depth)
    except JSONLimitError as exc:
        if exc.rule != "json-too-deep":
            raise error(path, lineno, rule, str(exc)) from None
        raise error(
            path, lineno, rule, f"JSON nested deeper than {max_depth} levels: no tracer writes one"
        ) from None


def is_directory(path: str) -> bool:
    return os.path.isdir(path)
