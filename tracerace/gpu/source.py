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

from ..errors import TraceError

READ_BYTES = 1 << 22


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
            raise error(path, None, "usage", "reading zstd needs the zstandard package "
                        "(pip install 'tracerace[gpu]')") from None
        return _ZstdFrames(raw, zstandard)
    return raw


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a stream of zstd frames (CUTracer writes one frame
    per buffer flush). A stream that ends inside a frame raises ``EOFError``."""

    def __init__(self, raw, zstandard) -> None:
        self._raw = raw
        self._zstd = zstandard
        self._dobj = None
        self._pending = b""

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._pending:
            data = self._raw.read(READ_BYTES)
            if not data:
                if self._dobj is not None and not self._dobj.eof:
                    raise EOFError("the zstd stream ends inside a frame")
                return b""
            while data:
                if self._dobj is None:
                    self._dobj = self._zstd.ZstdDecompressor().decompressobj()
                try:
                    self._pending += self._dobj.decompress(data)
                except self._zstd.ZstdError as exc:
                    raise EOFError(f"damaged zstd data: {exc}") from None
                if self._dobj.eof:
                    data = self._dobj.unused_data
                    self._dobj = None
                else:
                    data = b""
        if size is None or size < 0:
            out, self._pending = self._pending, b""
        else:
            out, self._pending = self._pending[:size], self._pending[size:]
        return out

    def close(self) -> None:
        self._raw.close()
        super().close()


def lines(path: str) -> Iterator[tuple[int, str]]:
    """``(line number, text without the newline)`` for every line of ``path``.

    Decoding is UTF-8 with replacement (kernel names are the only non-ASCII
    text a tracer writes). A compressed stream that ends early raises
    ``TraceError`` (rule ``truncated``).
    """
    f = open_binary(path)
    lineno = 0
    try:
        with f:
            for raw in _raw_lines(f, path):
                lineno += 1
                yield lineno, raw.decode("utf-8", errors="replace").rstrip("\r\n")
    except (EOFError, lzma.LZMAError) as exc:
        kind = compression_of(path) or "compressed"
        raise error(path, lineno or None, "truncated",
                    f"the {kind} stream is damaged or ends early ({exc}) after line {lineno}"
                    ) from None
    except OSError as exc:
        raise error(path, lineno or None, "unreadable", f"cannot read: {exc}") from None


def _raw_lines(f, path: str) -> Iterator[bytes]:
    rest = b""
    while True:
        data = f.read(READ_BYTES)
        if not data:
            break
        data = rest + data
        parts = data.split(b"\n")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


def is_directory(path: str) -> bool:
    return os.path.isdir(path)
