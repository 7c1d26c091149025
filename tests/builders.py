"""Hand-written traces for tests: a tiny event builder and batch splitting."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracerace.trace.meta import TraceMeta
from tracerace.trace.ops import Op
from tracerace.trace.schema import COLUMNS, DEFAULT_BLOCK


def columns(events: list[dict]) -> dict[str, np.ndarray]:
    """Full v1 columns (defaults filled) from a list of event dicts."""
    n = len(events)
    out = {}
    for col in COLUMNS:
        arr = np.zeros(n, dtype=col.dtype)
        for i, ev in enumerate(events):
            if col.name in ev:
                arr[i] = int(ev[col.name])
            elif col.default == DEFAULT_BLOCK:
                arr[i] = int(ev["block"])
            elif col.default is not None:
                arr[i] = col.default
        out[col.name] = arr
    return out


@dataclass
class SimpleBatch:
    row0: int
    n: int
    cols: dict


class SimpleReader:
    """Stands in for a TraceReader over in-memory columns, split into batches."""

    def __init__(
        self,
        cols: dict[str, np.ndarray],
        splits: list[int] | None = None,
        meta: TraceMeta | None = None,
    ) -> None:
        self.cols = cols
        self.n = len(cols["op"])
        self.splits = sorted(set(s for s in (splits or []) if 0 < s < self.n))
        self.meta = meta or TraceMeta(path="test.arrow", num_rows=self.n)

    def __iter__(self):
        bounds = [0] + self.splits + [self.n]
        for lo, hi in zip(bounds, bounds[1:]):
            yield SimpleBatch(
                lo, hi - lo, {k: np.ascontiguousarray(v[lo:hi]) for k, v in self.cols.items()}
            )


class Trace:
    """Build a trace by calling methods named after ops: ``t.write(0, 1, addr=0, size=4)``.

    ``block`` and ``thread`` are positional; ``ts`` counts up by itself.
    """

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.launch = 0

    def ev(self, op: Op, block: int, thread: int, **kw) -> Trace:
        kw.setdefault("launch", self.launch)
        self.events.append(dict(op=int(op), block=block, thread=thread, ts=len(self.events), **kw))
        return self

    def __getattr__(self, name: str):
        op = Op[name.upper()]
        return lambda block, thread, **kw: self.ev(op, block, thread, **kw)

    def columns(self) -> dict[str, np.ndarray]:
        return columns(self.events)

    def reader(self, splits: list[int] | None = None) -> SimpleReader:
        return SimpleReader(self.columns(), splits)
