"""Output files: written beside their path, renamed over it only when complete,
with the permissions the user's umask gives (as ``open`` would), and never
over one of the command's inputs.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable

from .errors import TraceError

MODE = 0o666
"""Permissions asked for a new output file; the umask takes its bits away."""


def same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file (links and ``..`` included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_inputs(path: str, inputs: Iterable[str]) -> None:
    """Raise a ``usage`` error when output ``path`` is one of ``inputs``."""
    for source in inputs:
        if same_file(path, source):
            raise TraceError(f"the output is the same file as the input {source}: "
                             f"choose another output path", path=path, rule="usage")


def create_beside(path: str, suffix: str = ".tmp") -> tuple[int, str]:
    """A new, empty file next to ``path`` (same folder, so a rename is atomic),
    opened for writing (and reading: a format may read back what it wrote):
    ``(fd, its path)``. Its mode is :data:`MODE` less the
    umask. An ``OSError`` names ``path``, not the temporary name."""
    folder, name = os.path.split(os.path.abspath(path))
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        temp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}{suffix}")
        try:
            return os.open(temp, flags, MODE), temp
        except FileExistsError:
            continue
        except OSError as err:
            where = folder if err.errno is not None else path
            raise type(err)(err.errno, _reason(err, folder), where) from None


def _reason(err: OSError, folder: str) -> str:
    if isinstance(err, FileNotFoundError):
        return "no such folder" if not os.path.isdir(folder) else (err.strerror or str(err))
    if isinstance(err, PermissionError):
        return "cannot write in this folder (permission denied)"
    return err.strerror or str(err)


def io_error(err: OSError, path: str | None) -> TraceError:
    """A one-line ``io`` error for a failed read or write."""
    where = err.filename if isinstance(err.filename, str) else path
    return TraceError(err.strerror or str(err), path=where, rule="io")
