"""Events as recorders produce them: the packed event log of the Python
backends, and the rows the native backends' converters add.

The event log (:class:`EventLog`) serves a recorder whose kernel code runs as
plain Python (under Numba's CUDA simulator, Triton's interpreter), so every
recorded access costs Python time; the log keeps that cost to two
``array.append`` calls per event.
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

A native backend's converter maps most of its tool's records one to one onto
rows, and adds others between them (barrier arrivals it completes, inits it
infers): :class:`Rows` holds those and merges both in replay order.
"""

from __future__ import annotations

from array import array

import numpy as np

from ..trace.ops import ATOMIC, BAR_ARRIVE, BAR_SYNC, READ, SIGNAL, WAIT, WARP_SYNC, WRITE, Scope
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


def pack(
    op: int, *, space: int = 0, size: int = 0, scope: int = int(Scope.DEVICE), sem: int = 0
) -> int:
    """A word without its site (OR in a site word from :class:`SiteTable`)."""
    if not 0 <= size <= SIZE_LIMIT:
        raise ValueError(f"an access of {size} bytes does not fit one event word")
    return op | space << SPACE_SHIFT | scope << SCOPE_SHIFT | sem << SEM_SHIFT | size << SIZE_SHIFT


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
        cols: dict[str, np.ndarray] = dict(
            ts=np.arange(self.flushed, self.flushed + n, dtype=np.uint64),
            op=op,
            addr=addr,
            arg=arg,
            obj=obj,
            site=site,
            size=size,
            space=_field(word, SPACE_SHIFT, 0xF, np.uint8),
            scope=_field(word, SCOPE_SHIFT, 0xF, np.uint8),
            sem=_field(word, SEM_SHIFT, 0xF, np.uint8),
        )
        cols.update(self._agents(n))
        return cols

    def _agents(self, n: int) -> dict[str, np.ndarray]:
        """The launch, block and thread columns, expanded from the runs."""
        starts = np.array([r[0] for r in self.runs] + [n], dtype=np.int64)
        lengths = np.diff(starts)
        values = np.array([r[1:] for r in self.runs], dtype=np.uint32).reshape(-1, 3)
        return {
            name: np.repeat(values[:, i], lengths)
            for i, name in enumerate(("launch", "block", "thread"))
        }


def _field(word: np.ndarray, shift: int, mask: int, dtype) -> np.ndarray:
    return ((word >> shift) & mask).astype(dtype)


# --- rows a converter adds ---------------------------------------------------------


class Rows:
    """Added rows, each with the sort key that places it among the direct
    rows (``2 i`` is record ``i``'s own row; ``2 i + 1`` comes right after
    it). ``defaults``: the columns, with the values of a row that does not
    set them."""

    def __init__(self, defaults: dict[str, int]) -> None:
        self.defaults = defaults
        self.key: list[int] = []
        self.cols: dict[str, list[int]] = {name: [] for name in defaults}

    def add(self, key: int, **values: int) -> None:
        unknown = set(values) - set(self.defaults)
        if unknown:
            raise TypeError(f"unknown columns {sorted(unknown)}")
        self.key.append(key)
        for name, default in self.defaults.items():
            self.cols[name].append(int(values.get(name, default)))

    def arrive(self, key: int, threads, **values: int) -> None:
        """A ``bar_arrive`` for each of ``threads`` (in thread order) at ``key``: the
        arrivals of threads that left a barrier's generation without reaching it,
        which the converter completes for them."""
        for thread in sorted(threads):
            self.add(key, op=BAR_ARRIVE, thread=thread, **values)

    def merged(self, direct: dict[str, np.ndarray], key: np.ndarray) -> dict[str, np.ndarray]:
        """``direct`` (columns of rows with sort keys ``key``) and these rows,
        in key order (stable), with ``ts`` the row number."""
        cols = {
            name: np.concatenate([values, np.asarray(self.cols[name], dtype=values.dtype)])
            for name, values in direct.items()
        }
        order = np.argsort(
            np.concatenate([key, np.asarray(self.key, dtype=np.int64)]), kind="stable"
        )
        cols = {name: values[order] for name, values in cols.items()}
        cols["ts"] = np.arange(len(order), dtype=np.uint64)
        return cols
