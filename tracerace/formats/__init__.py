"""Output formats: each a module behind one interface.

A format module has ``NAME``, ``BINARY`` (writes bytes, not text) and
``write(report, stream)``; it may add ``write_path(report, path)`` when a file
is better written differently from a stream (Arrow: IPC file vs IPC stream).
:func:`render` opens files, picks text or byte streams and turns I/O failures
into :class:`~tracerace.errors.TraceError`.
"""

from __future__ import annotations

import io
import os
import sys
from types import ModuleType
from typing import IO, Any

from ..errors import TraceError
from ..report import Report
from . import arrowfmt, jsonfmt, sarif, text

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (text, jsonfmt, sarif, arrowfmt)}


def get(name: str) -> ModuleType:
    """The format module called ``name``; an unknown name is a usage error."""
    try:
        return FORMATS[name]
    except KeyError:
        raise TraceError(f"unknown format {name!r} (known: {', '.join(FORMATS)})",
                         path="options", rule="usage") from None


def resolve(fmt: str, out: str | os.PathLike[str] | IO[Any] | None = None) -> ModuleType:
    """The format module for writing ``fmt`` to ``out``, checked before any work:
    an unknown name, or binary output to a terminal, is a usage error."""
    module = get(fmt)
    stream = sys.stdout if out is None else out
    if module.BINARY and not isinstance(stream, (str, os.PathLike)) and text.is_terminal(stream):
        raise TraceError(f"the {fmt} format is binary: give an output file or redirect stdout",
                         path="options", rule="usage")
    return module


def render(report: Report, fmt: str, out: str | os.PathLike[str] | IO[Any] | None = None) -> None:
    """Write ``report`` as ``fmt`` to a path, an open stream, or stdout (None)."""
    module = resolve(fmt, out)
    if out is None:
        out = sys.stdout
    if isinstance(out, (str, os.PathLike)):
        path = os.fspath(out)
        try:
            if hasattr(module, "write_path"):
                module.write_path(report, path)
            elif module.BINARY:
                with open(path, "wb") as stream:
                    module.write(report, stream)
            else:
                with open(path, "w", encoding="utf-8") as stream:
                    module.write(report, stream)
        except OSError as err:
            raise TraceError(err.strerror or str(err), path=path, rule="io") from None
        return
    if module.BINARY:
        if isinstance(out, io.TextIOBase) or hasattr(out, "buffer"):
            out.flush()
            out = out.buffer
        module.write(report, out)
        out.flush()
    elif isinstance(out, (io.RawIOBase, io.BufferedIOBase)):
        wrapper = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
        module.write(report, wrapper)
        wrapper.detach()
    else:
        module.write(report, out)
        out.flush()

