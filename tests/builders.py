"""Hand-written traces for tests: a tiny event builder and batch splitting."""

from __future__ import annotations

import numpy as np

from tracerace.trace.meta import TraceMeta
from tracerace.trace.ops import Op
from tracerace.trace.reader import Batch
from tracerace.trace.rows import RowFields
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
        self.rows = RowFields(None, in_memory=True)  # a TraceReader's rows, by number

    def __iter__(self):
        bounds = [0] + self.splits + [self.n]
        for lo, hi in zip(bounds, bounds[1:]):
            batch = Batch(
                lo, hi - lo, {k: np.ascontiguousarray(v[lo:hi]) for k, v in self.cols.items()}
            )
            self.rows.note(batch)
            yield batch


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


def follow_extension_rules(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Random columns made lawful for the extension ops' row rules: each
    op's rows name the memory it uses (``op-space``), store one of its sizes
    (``op-size``), and arrive on their own block's mbarrier (108, 109)."""
    from tracerace.trace.columns import NO_SPACE, OP_SIZES, OP_SPACES

    op = cols["op"]
    for code, spaces in OP_SPACES.items():
        for name, space in zip(("space", "space2"), spaces):
            if space != NO_SPACE:
                cols[name] = np.where(op == code, space, cols[name]).astype(cols[name].dtype)
    for code, sizes in OP_SIZES.items():
        pick = np.resize(np.array(sizes, dtype=cols["size"].dtype), len(op))
        cols["size"] = np.where(op == code, pick, cols["size"])
    own = np.isin(op, [int(Op.CP_ASYNC_MBAR_ARRIVE), int(Op.CP_ASYNC_MBAR_ARRIVE_NOINC)])
    if own.any():
        block = cols.get("block", np.zeros(len(op), dtype=np.uint32))
        peer = cols.get("peer", np.zeros(len(op), dtype=np.uint32))
        cols["peer"] = np.where(own, block, peer).astype(np.uint32)
    return cols
