"""Source files named by a trace's sites, read only where the user allows.

A site (``kernel.cu:104 st.shared``) is text from the trace, and a trace is
untrusted input: its file part may be ``/etc/passwd``, ``../../../../etc/passwd``,
``/proc/self/environ``, ``/dev/zero``, a FIFO or a symlink. The reports that
show source lines (HTML) or point at source files (SARIF) resolve a site's
file only inside the *source roots* the user names (``--source-root DIR``,
``source_roots=`` in the API). With no root, no file is read and no site
becomes a file URI.

A file is read when all of these hold:

- its path, every symlink resolved, lies inside a root (no ``..`` out, no
  absolute path elsewhere, no symlink pointing out);
- it is not under ``/proc`` or ``/sys`` (whose files claim size 0 and whose
  contents are the process's or the machine's, not source);
- it is a regular file when opened (not a device, FIFO or socket; it is
  opened non-blocking, so a FIFO cannot hold the report up);
- it holds at most :data:`MAX_SOURCE_BYTES`, counted by the bytes actually
  read, never by the size the file system claims.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
import stat
from collections.abc import Iterable

from ..errors import TraceError

MAX_SOURCE_BYTES = 4 << 20
"""A larger source file is not shown (bytes actually read, not ``st_size``)."""

PSEUDO_FILE_SYSTEMS = ("/proc", "/sys")
"""Trees never read, whatever the roots: their files describe the running system."""

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
"""A URI scheme (``https:``, ``file:``); one letter alone is a Windows drive."""


class SourceRoots:
    """The directories source files may be read from (see the module's rule).

    ``roots``: directory paths; one that is not a directory is a usage error
    (rule ``usage``), raised here, before any work.
    """

    def __init__(self, roots: Iterable[str | os.PathLike[str]] = ()) -> None:
        if isinstance(roots, (str, os.PathLike)):
            roots = [roots]
        resolved, spelled = [], []
        for root in roots:
            path = os.fspath(root)
            if not os.path.isdir(path):
                raise TraceError(
                    f"--source-root {path}: not a directory", path="options", rule="usage"
                )
            resolved.append(os.path.realpath(path))
            spelled.append(os.path.abspath(path))
        self.roots: tuple[str, ...] = tuple(dict.fromkeys(resolved))
        """The roots, every symlink resolved: what a file read must lie inside."""
        self._names = tuple(dict.fromkeys(resolved + spelled))
        """The roots as given (absolute) and resolved: what a site's absolute
        path is compared with, on its text alone (:meth:`relative`)."""

    @classmethod
    def of(cls, roots: SourceRoots | Iterable[str | os.PathLike[str]]) -> SourceRoots:
        """``roots`` as :class:`SourceRoots` (itself when it is one)."""
        return roots if isinstance(roots, SourceRoots) else cls(roots)

    def __bool__(self) -> bool:
        return bool(self.roots)

    def read(self, name: str) -> bytes | None:
        """The bytes of the file a site calls ``name``: the first root that
        holds it by the rule, or None (no root, outside every root, not a
        regular file, too large, unreadable)."""
        if not self.roots or not name or "\0" in name or _is_uri(name):
            return None
        for root in self.roots:
            path = os.path.realpath(os.path.join(root, name))
            if not _inside(path, root) or any(_inside(path, p) for p in PSEUDO_FILE_SYSTEMS):
                continue
            data = _read_regular(path)
            if data is not None:
                return data
        return None

    def relative(self, name: str) -> str | None:
        """``name`` as a relative path with ``/`` separators, for a report that
        points at the file without reading it (SARIF): a relative path that
        stays below its root, or an absolute one inside a root (made relative
        to it). None for a URI (``https://``, ``file://``), a path that climbs
        out with ``..``, and an absolute path outside every root. Decided on the
        text alone: the file need not exist here."""
        if not name or "\0" in name:
            return None
        text = name.replace("\\", "/")
        if _is_uri(name) or ntpath.splitdrive(name)[0]:
            return None  # a URI, or a Windows drive path: no root of this machine holds it
        if text.startswith("/"):
            path = posixpath.normpath(text)
            for root in sorted(self._names, key=len, reverse=True):
                if _inside(path, root):
                    rel = posixpath.relpath(path, root)
                    return None if rel == "." else rel
            return None
        rel = posixpath.normpath(text)
        if rel == "." or rel == ".." or rel.startswith("../"):
            return None
        return rel


def _is_uri(name: str) -> bool:
    return bool(_SCHEME.match(name)) and not ntpath.splitdrive(name)[0]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _read_regular(path: str) -> bytes | None:
    """At most :data:`MAX_SOURCE_BYTES` of ``path`` when it is a regular file,
    else None. Opened without following a final symlink (the path is already
    resolved: one there now was put there since) and without blocking."""
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_NOCTTY", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, total = [], 0
        while total <= MAX_SOURCE_BYTES:
            try:
                chunk = os.read(fd, min(1 << 16, MAX_SOURCE_BYTES + 1 - total))
            except OSError:
                return None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > MAX_SOURCE_BYTES:
            return None
        return b"".join(chunks)
    finally:
        os.close(fd)
