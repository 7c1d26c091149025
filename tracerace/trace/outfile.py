"""Output files: written beside their path, renamed over it only when complete,
with the permissions the user's umask gives (as ``open`` would), and never
over one of the command's inputs.

:func:`destination` decides what an output path is (the rules of
``docs/security.md``, "What tracerace writes"): a new or regular file is
written beside it and renamed over it (a symbolic link is followed: its
target is replaced, the link kept); a character device or FIFO is written
as a stream, never replaced; ``-``, ``/dev/stdout``, ``/dev/fd/N`` and the
like write to that descriptor of this process; anything else (a folder, a
block device, a socket, a link to nothing) is refused. :class:`OutputFile`
writes one output by those rules.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from ..errors import TraceError

STDOUT = "-"
"""The output path that means this process's standard output (as
an input path, standard input)."""

MODE = 0o666
"""Permissions asked for a new output file; the umask takes its bits away."""


def same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file (links and ``..`` included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_inputs(path: str, inputs: Iterable[str]) -> None:
    """Raise a ``usage`` error when output ``path`` is one of ``inputs`` (``-``,
    standard input or output, is no file: never the same)."""
    if path == STDOUT:
        return
    for source in inputs:
        if source != STDOUT and same_file(path, source):
            raise TraceError(
                f"the output is the same file as the input {source}: choose another output path",
                path=path,
                rule="usage",
            )


_DESCRIPTOR_FOLDERS = re.compile(r"^/(?:dev/fd|proc/(?:self|thread-self|\d+)/fd)$")
"""Folders whose entries are a process's open descriptors, by number."""

_LINK_HOPS = 40
"""Symbolic links followed at most while looking for a descriptor (Linux's own limit)."""


@dataclass(frozen=True)
class Destination:
    """Where an output goes. ``kind`` ``file``: a regular file (new or existing)
    written beside ``real`` and renamed over it; ``stream``: written in place,
    never replaced: descriptor ``fd`` of this process, else ``path`` opened
    for writing (a character device or FIFO)."""

    path: str
    kind: str
    real: str
    fd: int | None = None

    @property
    def exists(self) -> bool:
        """Whether a file is there to be replaced."""
        return self.kind == "file" and os.path.lexists(self.real)


def destination(path: str) -> Destination:
    """What output ``path`` is, by the rules of the module doc; a path that
    must not be written is a ``usage`` error."""
    path = os.fspath(path)
    if path == STDOUT:
        return Destination(path, "stream", path, fd=1)
    fd = _descriptor(path)
    if fd is not None:
        return Destination(path, "stream", path, fd=fd)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise _refuse(path, "is a symbolic link to a missing file: not followed") from None
        return Destination(path, "file", path)
    except OSError:
        return Destination(path, "file", path)  # writing it says why, naming it
    if stat.S_ISREG(mode):
        return Destination(path, "file", os.path.realpath(path))
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return Destination(path, "stream", path)
    what = (
        "a folder"
        if stat.S_ISDIR(mode)
        else "a block device"
        if stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "not a regular file"
    )
    raise _refuse(path, f"is {what}: not written")


def _descriptor(path: str) -> int | None:
    """The descriptor number ``path`` names (``/dev/stdout`` -> 1), or None: the
    path, or a link on its way, is an entry of a descriptor folder."""
    here = os.path.abspath(path)
    for _ in range(_LINK_HOPS):
        folder, name = os.path.split(here)
        if _DESCRIPTOR_FOLDERS.match(folder) and name.isdigit():
            if not folder.startswith("/proc/") or folder.split("/")[2] in (
                "self",
                "thread-self",
                str(os.getpid()),
            ):
                return int(name)
            return None
        if not os.path.islink(here):
            return None
        here = os.path.normpath(os.path.join(folder, os.readlink(here)))
    return None


def _refuse(path: str, why: str) -> TraceError:
    return TraceError(f"{why}; choose another output path", path=path, rule="usage")


TRACE_MAGICS = (b"ARROW1", b"PAR1", b"\xff\xff\xff\xff")
"""First bytes of an Arrow IPC file, a Parquet file and an Arrow IPC stream."""

_STD_FIRST_LINE = re.compile(rb"^\s*[^|\s()]+\|[a-z]+\([^|\s()]+\)\|-?\d{1,18}\s*$")
"""An STD text trace's event line (the grammar of :mod:`tracerace.convert.std`)."""


def refuse_non_trace(dest: Destination) -> None:
    """Raise a ``usage`` error when ``dest`` would replace an existing file that
    is not a trace (Arrow IPC file or stream, Parquet, STD text) and not empty
    (or blank):
    a trace output never replaces a program, a source or a report."""
    if not dest.exists:
        return
    try:
        with open(dest.real, "rb") as f:
            head = f.read(4096)
    except OSError:
        return  # unreadable: the rename decides, and its error names the path
    if not head.strip() or head.startswith(TRACE_MAGICS):
        return
    first = next(line for line in head.splitlines() if line.strip())  # STD skips blank lines
    if _STD_FIRST_LINE.match(first):
        return
    raise _refuse(dest.path, "exists and is not a trace (Arrow, Parquet or STD): not replaced")


class OutputFile:
    """One output, written by the rules of :func:`destination`.

    :meth:`open` gives a binary file (readable too, for a file: a format may
    read back what it wrote); :meth:`commit` ends it (a file is renamed over
    its path); :meth:`discard` ends it leaving no trace (a file's temporary is
    removed; a stream keeps what was written). ``suffix``: of the temporary.
    """

    def __init__(self, path: str, suffix: str = ".tmp") -> None:
        self.dest = destination(path)
        self.path = self.dest.path
        self.suffix = suffix
        self.temp: str | None = None
        self.file: IO[bytes] | None = None

    @property
    def is_stream(self) -> bool:
        return self.dest.kind == "stream"

    def open(self) -> IO[bytes]:
        if self.dest.kind == "file":
            fd, self.temp = create_beside(self.dest.real, self.suffix)
            self.file = os.fdopen(fd, "w+b")
        else:
            if self.dest.fd is not None:
                fd = os.dup(self.dest.fd)
            else:  # a FIFO waits here for its reader, as a shell's ``>`` would
                fd = os.open(self.dest.path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
            self.file = os.fdopen(fd, "wb")
        return self.file

    def commit(self) -> None:
        """Close and, for a file, rename the temporary over the path."""
        file, self.file = self.file, None
        if file is not None:
            file.close()
        if self.temp is not None:
            os.replace(self.temp, self.dest.real)
            self.temp = None

    def discard(self) -> None:
        """Close and remove the temporary (errors closing are not the caller's)."""
        file, self.file = self.file, None
        try:
            if file is not None:
                file.close()
        except OSError:
            pass
        finally:
            temp, self.temp = self.temp, None
            if temp is not None and os.path.lexists(temp):
                os.unlink(temp)


def scratch_for(path: str, suffix: str) -> tuple[int, str]:
    """A temporary file for work towards output ``path``: beside it when the output
    is a file (same file system), in the temporary folder when it is a stream."""
    dest = destination(path)
    if dest.kind == "file":
        return create_beside(dest.real, suffix)
    return tempfile.mkstemp(suffix=suffix, prefix=".tracerace.")


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
