"""Building a backend's native part (a plugin, a tool library) once into the user's cache.

A build is keyed by a hash of what goes into it (sources, flags, the library it
links: :func:`stamp`), so an edited source or an upgraded dependency gives a
new file, never a stale one. :func:`build` writes a temporary file beside the
target and renames it over the target only when the compiler succeeded, so a
failed or interrupted build leaves nothing behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from ..errors import TraceError

OUT = "{out}"
"""The word of a build command that stands for the file it writes."""

T = TypeVar("T")


def cache_dir() -> Path:
    """``$TRACERACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracerace``, else ``~/.cache/tracerace``."""
    explicit = os.environ.get("TRACERACE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "tracerace"


def stamp(path: str) -> str:
    """``realpath:size:mtime`` of ``path``: what a build key takes from a file it
    depends on without reading it (a library, a compiler)."""
    real = os.path.realpath(path)
    info = os.stat(real)
    return f"{real}:{info.st_size}:{info.st_mtime_ns}"


def first(items: Iterable[T | None]) -> T | None:
    """The first item that is not empty, or None."""
    return next((item for item in items if item), None)


COMPILER_PACKAGE = "g++ (Debian/Ubuntu: apt-get install g++)"
"""What to install when :func:`find_compiler` finds none."""


def find_compiler() -> str | None:
    """``$CXX``, else the first of c++, g++, clang++ on PATH; None when there is none."""
    names = [os.environ["CXX"]] if os.environ.get("CXX") else ["c++", "g++", "clang++"]
    return first(shutil.which(name) for name in names)


def build(command: list[str], path: Path, failed: Callable[[str], TraceError]) -> None:
    """Run ``command``, whose :data:`OUT` word is a temporary file beside ``path``,
    then move that file to ``path``; ``failed(tail)`` is the error when the
    command fails (``tail``: its last lines of output, joined by ``; ``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".build-", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        done = subprocess.run(
            [temp if word == OUT else word for word in command], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise failed("; ".join(done.stderr.strip().splitlines()[-3:]))
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
