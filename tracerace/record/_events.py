"""The event log of a recording under Numba's CUDA simulator.

Kernel code runs as plain Python there, so every recorded access costs Python
time; this module keeps that cost to two ``array.append`` calls per event.
An event is an address plus one packed 64-bit *word* (op, space, scope, sem,
size, site). Agents are not stored per event but as *runs* (the row where a
(launch, block, thread) starts running), since one simulated thread runs at a
time. :meth:`EventLog.flush` unpacks the words with NumPy and hands whole
columns to :meth:`TraceWriter.extend`; ``ts`` is the row number.

A ``bar_sync`` word carries its ``arg`` (the arrivals of its generation) in the
address slot, because the scheduler learns the count only when the generation
completes and patches it then, in the buffer or, once flushed, through the
writer (see :meth:`EventLog.set_arg`). A ``warp_sync`` carries its lane mask
(``arg``) in the address slot too. A ``signal``
or ``wait`` (the grid barrier) carries its flag (``obj``) in the address slot
and its count (``arg``) in the size field.
"""

from __future__ import annotations

import os
import sysconfig
from array import array

import numpy as np

from ..trace.ops import ATOMIC, BAR_SYNC, READ, SIGNAL, WAIT, WARP_SYNC, WRITE, Scope
from ..trace.schema import SITE_NONE

# The packed word, low bits first.
OP_MASK = 0xFF
SPACE_SHIFT = 8
SCOPE_SHIFT = 12
SEM_SHIFT = 16
SIZE_SHIFT = 20
SIZE_BITS = 24
SITE_SHIFT = SIZE_SHIFT + SIZE_BITS
SITE_BITS = 64 - SITE_SHIFT

SIZE_LIMIT = (1 << SIZE_BITS) - 1
"""The largest ``size`` one word holds; larger ``init`` ranges are split."""
NO_SITE = (1 << SITE_BITS) - 1
"""The site field of a row that names no site."""
NO_SITE_WORD = NO_SITE << SITE_SHIFT

ACCESS_OPS = (READ, WRITE, ATOMIC)
"""The ops that access memory (a launch with none of them gets a warning)."""

FLUSH_ROWS = 1 << 18
"""Rows buffered before the scheduler flushes them to the writer (it looks at thread
switches, outside an open barrier generation)."""


def pack(op: int, *, space: int = 0, size: int = 0, scope: int = int(Scope.DEVICE),
         sem: int = 0) -> int:
    """A word without its site (OR in a site word from :class:`SiteTable`)."""
    if not 0 <= size <= SIZE_LIMIT:
        raise ValueError(f"an access of {size} bytes does not fit one event word")
    return (op | space << SPACE_SHIFT | scope << SCOPE_SHIFT | sem << SEM_SHIFT
            | size << SIZE_SHIFT)


class EventLog:
    """Buffered trace rows of the whole run, flushed to a ``TraceWriter``."""

    def __init__(self, writer) -> None:
        self.writer = writer
        self.addr = array("Q")
        self.word = array("Q")
        self.runs: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)]
        """(first buffered row, launch, block, thread) of each run of one agent."""
        self.flushed = 0
        self.flushed_accesses = 0
        """Reads, writes and atomics among the flushed rows."""

    @property
    def rows(self) -> int:
        """Rows logged so far, flushed or not."""
        return self.flushed + len(self.addr)

    def set_agent(self, launch: int, block: int, thread: int) -> None:
        """The agent of the rows logged from now on."""
        self.runs.append((len(self.addr), launch, block, thread))

    def log(self, addr: int, word: int) -> int:
        """Log one row (slow path: hot callers append to the arrays directly);
        its row number in the trace."""
        self.addr.append(addr)
        self.word.append(word)
        return self.flushed + len(self.addr) - 1

    def accesses(self) -> int:
        """Reads, writes and atomics logged so far, flushed or not."""
        ops = np.frombuffer(self.word, dtype=np.uint64) & OP_MASK if len(self.word) else ()
        return self.flushed_accesses + int(np.isin(ops, ACCESS_OPS).sum())

    def set_arg(self, row: int, arg: int) -> None:
        """Set the ``arg`` of the ``bar_sync`` at trace row ``row``: in the buffer,
        or, once flushed, in the writer (so a barrier that stays open while other
        threads run long does not hold every row since in memory)."""
        if row >= self.flushed:
            self.addr[row - self.flushed] = arg
        else:
            self.writer.set_value(row, "arg", arg)

    def flush(self) -> None:
        """Write the buffered rows (an open barrier's ``arg`` is set later, see
        :meth:`set_arg`)."""
        n = len(self.addr)
        if n:
            columns = self._columns(n)
            self.writer.extend(**columns)
            self.flushed += n
            self.flushed_accesses += int(np.isin(columns["op"], ACCESS_OPS).sum())
            del self.addr[:]
            del self.word[:]
        self.runs = [(0, *self.runs[-1][1:])]

    def _columns(self, n: int) -> dict[str, np.ndarray]:
        addr = np.frombuffer(self.addr, dtype=np.uint64).copy()
        word = np.frombuffer(self.word, dtype=np.uint64).copy()
        op = (word & OP_MASK).astype(np.uint8)
        site = (word >> SITE_SHIFT).astype(np.uint32)
        site[site == NO_SITE] = SITE_NONE
        size = _field(word, SIZE_SHIFT, SIZE_LIMIT, np.uint32)
        barrier = (op == BAR_SYNC) | (op == WARP_SYNC)
        flag = (op == SIGNAL) | (op == WAIT)
        arg = np.where(barrier, addr, np.where(flag, size, 0)).astype(np.int64)
        obj = np.where(flag, addr, 0).astype(np.uint64)
        addr[barrier | flag] = 0
        size[flag] = 0
        cols = dict(ts=np.arange(self.flushed, self.flushed + n, dtype=np.uint64), op=op,
                    addr=addr, arg=arg, obj=obj, site=site, size=size,
                    space=_field(word, SPACE_SHIFT, 0xF, np.uint8),
                    scope=_field(word, SCOPE_SHIFT, 0xF, np.uint8),
                    sem=_field(word, SEM_SHIFT, 0xF, np.uint8))
        cols.update(self._agents(n))
        return cols

    def _agents(self, n: int) -> dict[str, np.ndarray]:
        """The launch, block and thread columns, expanded from the runs."""
        starts = np.array([r[0] for r in self.runs] + [n], dtype=np.int64)
        lengths = np.diff(starts)
        values = np.array([r[1:] for r in self.runs], dtype=np.uint32).reshape(-1, 3)
        return {name: np.repeat(values[:, i], lengths)
                for i, name in enumerate(("launch", "block", "thread"))}


def _field(word: np.ndarray, shift: int, mask: int, dtype) -> np.ndarray:
    return ((word >> shift) & mask).astype(dtype)


class SiteTable:
    """Source sites (``file:line``) of the user's code, as site words.

    ``cache`` maps (code object, instruction offset) of a user frame to its
    site word; hot callers look it up themselves and call :meth:`resolve` on
    a miss. A frame in library code (NumPy, the simulator, tracerace) is not
    the user's line: :meth:`resolve` walks out to the nearest user frame and
    does not cache, since the answer depends on the caller.
    """

    def __init__(self, writer) -> None:
        self.writer = writer
        self.cache: dict[tuple, int] = {}
        self._files: dict[object, str | None] = {}  # code object -> shown path or None
        self._library = library_roots()
        self._cwd = os.getcwd()

    def word(self, frame) -> int:
        """The site word of ``frame``'s line (or of the nearest user frame above)."""
        word = self.cache.get((frame.f_code, frame.f_lasti))
        return self.resolve(frame) if word is None else word

    def resolve(self, frame) -> int:
        """The site word of the nearest user frame at or above ``frame``."""
        first = frame
        while frame is not None:
            path = self._path(frame.f_code)
            if path is not None:
                word = self.writer.site(f"{path}:{frame.f_lineno}") << SITE_SHIFT
                if frame is first:
                    self.cache[(frame.f_code, frame.f_lasti)] = word
                return word
            frame = frame.f_back
        return NO_SITE_WORD

    def text_of(self, word: int) -> str | None:
        """The site text a word names (None when it names no site)."""
        index = word >> SITE_SHIFT
        return None if index == NO_SITE else self.writer.sites[index]

    def text(self, frame) -> str | None:
        """``file:line`` of the nearest user frame at or above ``frame`` (None: none)."""
        while frame is not None:
            path = self._path(frame.f_code)
            if path is not None:
                return f"{path}:{frame.f_lineno}"
            frame = frame.f_back
        return None

    def _path(self, code) -> str | None:
        """The path shown for ``code``'s file, or None when it is library code."""
        try:
            return self._files[code]
        except KeyError:
            path = self._files[code] = shown_path(code.co_filename, self._library, self._cwd)
            return path


def shown_path(name: str, library: tuple[str, ...], cwd: str) -> str | None:
    """How a site names source file ``name``: relative to ``cwd`` when inside
    it, else absolute; None for library code and ``<string>``-like names."""
    if name.startswith("<"):
        return None
    path = os.path.abspath(name)
    if path.startswith(library):
        return None
    return os.path.relpath(path, cwd) if path.startswith(os.path.join(cwd, "")) else path


def library_roots() -> tuple[str, ...]:
    """Folders whose code is never the user's: the standard library, installed
    packages and tracerace itself."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return tuple(os.path.join(os.path.abspath(r), "") for r in sorted(roots))
