"""Vectorised trace building for the scenarios.

A scenario describes one launch as a few dozen *pieces*: NumPy arrays that
broadcast together (scalars repeat), one row per element, each row with a sort
key. :meth:`Launch.columns` puts the rows in key order (ties keep the order
they were added in), so one piece can say "every core runs this instruction
for every head" while each row still lands at its agent's point in the
schedule. No Python code runs per event.

:func:`write_launches` then streams launches to a
:class:`~tracerace.trace.writer.TraceWriter` in chunks of about ``CHUNK_ROWS`` rows,
filling in ``launch`` and ``ts``: a scenario at 10^8 events needs memory for
one chunk, not the trace.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..trace.schema import COLUMNS, DEFAULT_BLOCK, SITE_NONE

CHUNK_ROWS = 1 << 21
"""Rows handed to the writer at a time; bounds the generator's memory."""

LAUNCH_GAP = 1000
"""``ts`` ticks between the last event of a launch and the first of the next."""

_PER_LAUNCH = ("ts", "launch")  # filled in by write_launches
_FIELDS = tuple(c for c in COLUMNS if c.name not in _PER_LAUNCH)


class Launch:
    """The events of one launch, added as keyed pieces, read back in replay order."""

    def __init__(self) -> None:
        self._pieces: list[dict[str, np.ndarray]] = []

    def add(self, key, op, block, thread, **cols) -> None:
        """Rows for every element of the broadcast of ``key``, ``op``, ``block``,
        ``thread`` and the optional columns (C order). ``peer`` and ``cluster``
        default to ``block``, ``site`` to no site, the rest to the format's defaults."""
        named = {"key": key, "op": op, "block": block, "thread": thread, **cols}
        arrays = {name: np.asarray(value) for name, value in named.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
        if 0 in shape:
            return
        self._pieces.append({name: np.broadcast_to(a, shape).ravel() for name, a in arrays.items()})

    def columns(self) -> dict[str, np.ndarray]:
        """Every column but ``ts`` and ``launch``, rows in key order."""
        if not self._pieces:
            return {c.name: np.empty(0, dtype=c.dtype) for c in _FIELDS}
        keys = np.concatenate([p["key"].astype(np.int64, copy=False) for p in self._pieces])
        order = np.argsort(keys, kind="stable")
        out = {}
        for col in _FIELDS:
            parts = []
            for p in self._pieces:
                n = len(p["key"])
                if col.name in p:
                    parts.append(p[col.name].astype(col.dtype, copy=False))
                elif col.default == DEFAULT_BLOCK:
                    parts.append(p["block"].astype(col.dtype, copy=False))
                elif col.name == "site":
                    parts.append(np.full(n, SITE_NONE, dtype=col.dtype))
                else:
                    parts.append(np.full(n, col.default, dtype=col.dtype))
            out[col.name] = np.concatenate(parts)[order]
        return out


def write_launches(
    writer, launches: Iterable[dict[str, np.ndarray]], *, chunk_rows: int = CHUNK_ROWS
) -> int:
    """Append launches 0, 1, ... (column dicts from :meth:`Launch.columns`, which
    may repeat) to ``writer``; ``ts`` counts one tick per row with a gap between
    launches. Returns the rows written."""
    pending: list[dict[str, np.ndarray]] = []
    pending_rows = 0
    launch = 0
    ts = 0
    total = 0

    def flush() -> None:
        nonlocal pending, pending_rows, launch, ts, total
        if not pending:
            return
        lengths = np.array([len(p["op"]) for p in pending], dtype=np.int64)
        cols = {c.name: np.concatenate([p[c.name] for p in pending]) for c in _FIELDS}
        ids = np.arange(launch, launch + len(pending), dtype=np.uint32)
        cols["launch"] = np.repeat(ids, lengths)
        # Row r of launch i gets ts = start_i + r: starts are spaced by length + gap.
        starts = ts + np.concatenate(([0], np.cumsum(lengths + LAUNCH_GAP)[:-1]))
        first_row = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        row = np.arange(pending_rows, dtype=np.int64)
        cols["ts"] = (np.repeat(starts - first_row, lengths) + row).astype(np.uint64)
        writer.extend(**cols)
        launch += len(pending)
        ts = int(starts[-1] + lengths[-1] + LAUNCH_GAP)
        total += pending_rows
        pending, pending_rows = [], 0

    for cols in launches:
        pending.append(cols)
        pending_rows += len(cols["op"])
        if pending_rows >= chunk_rows:
            flush()
    flush()
    return total


def variants(rng: np.random.Generator, count: int, pool: int, build) -> Iterable:
    """``count`` launches drawn from a pool of ``min(count, pool)`` schedules
    ``build(rng)``: long traces vary from launch to launch without paying for a
    fresh schedule each time. The first ``pool`` launches are the pool in order."""
    built = [build(rng) for _ in range(min(count, pool))]
    picks = rng.integers(0, len(built), size=max(0, count - len(built)))
    yield from built
    for i in picks.tolist():
        yield built[i]
