"""The record both checkers emit: one row per (later event, hazard kind).

The reference checker and the Numba engine must produce identical arrays of
``FINDING_DTYPE`` for every trace (sorted by :func:`sort_findings`); the report
layer groups and words them. ``prev_*`` fields describe the earlier access
(``prev_row == -1`` when the hazard has a single event, as ``uninit_read``).

Bytes: ``space``/``owner``/``addr``/``size`` give the bytes involved: for a
race, the overlap of the two accesses; for ``uninit_read``, the span from the
first to the last uninitialized byte the read touched. ``owner`` is the owning
block for shared memory, the thread for local memory, 0 for global.

``bar_obj``/``bar_gen`` (and ``prev_bar_*``): the last barrier generation the
access's agent completed before the access (-1 when none); the text report
uses them to say why no barrier ordered the pair. ``code`` and ``aux`` carry a
kind-specific reason (see ``tracerace.checker.reasons``).
"""

from __future__ import annotations

import numpy as np

FINDING_DTYPE = np.dtype(
    [
        ("kind", np.uint8),
        ("severity", np.uint8),
        ("row", np.int64),
        ("launch", np.uint32),
        ("block", np.uint32),
        ("thread", np.uint32),
        ("op", np.uint8),
        ("ts", np.uint64),
        ("site", np.uint32),
        ("prev_row", np.int64),
        ("prev_launch", np.uint32),
        ("prev_block", np.uint32),
        ("prev_thread", np.uint32),
        ("prev_op", np.uint8),
        ("prev_ts", np.uint64),
        ("prev_site", np.uint32),
        ("prev_async", np.uint8),
        ("space", np.uint8),
        ("owner", np.uint32),
        ("addr", np.uint64),
        ("size", np.uint32),
        ("obj", np.uint64),
        ("bar_obj", np.int64),
        ("bar_gen", np.int64),
        ("prev_bar_obj", np.int64),
        ("prev_bar_gen", np.int64),
        ("code", np.uint8),
        ("aux", np.int64),
    ]
)

FIELDS = FINDING_DTYPE.names

NO_ROW = -1
"""``prev_row`` of a finding with a single event (``uninit_read``, ...)."""


def sort_findings(findings: np.ndarray) -> np.ndarray:
    """Canonical order: by row, then kind, then earlier row."""
    order = np.lexsort((findings["prev_row"], findings["kind"], findings["row"]))
    return findings[order]


def empty_findings(n: int = 0) -> np.ndarray:
    out = np.zeros(n, dtype=FINDING_DTYPE)
    out["prev_row"] = -1
    return out


class CheckResult:
    """What a checker returns: the number of events replayed and its findings."""

    __slots__ = ("events", "findings")

    def __init__(self, events: int, findings: np.ndarray) -> None:
        self.events = int(events)
        self.findings = sort_findings(findings)

    def triples(self) -> list[tuple[int, int, int]]:
        """(row, kind, prev_row) of every finding: what the two checkers must share."""
        f = self.findings
        return list(zip(f["row"].tolist(), f["kind"].tolist(), f["prev_row"].tolist()))
