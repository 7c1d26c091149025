"""The events around a hazard: what each of its agents did between the two accesses.

A finding names two accesses; the person fixing it wants to see what ordered
what around them: the barriers, waits, signals, fences and copies each agent
passed, and where the edge that would order the pair is missing.
:func:`timelines` reads the trace once for any number of hazards and returns,
per hazard, the events of its agents (the later access's, and the earlier
access's when it is another) from a few events before the earlier access to
the later one: every synchronisation event, the two accesses, and a count of
the other memory accesses left out. Only the first :data:`MAX_EVENTS` events
of an agent's window nearest to the accesses are kept, with how many were
dropped, so a hazard whose accesses lie a million rows apart stays small.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..trace.ops import Op
from .explain import op_name

MAX_EVENTS = 12
"""Events kept per agent and hazard: the first and the last of its window."""

BEFORE = 3
"""Synchronisation events of each agent shown before the earlier access."""

MEMORY_OPS = frozenset({int(Op.READ), int(Op.WRITE), int(Op.INIT)})
"""Plain accesses: shown only when they are one of the hazard's two accesses."""


@dataclass(frozen=True)
class Event:
    row: int
    op: str
    obj: int
    site: str | None
    role: str | None = None
    """``earlier`` or ``later``: one of the hazard's two accesses; else None."""


@dataclass
class Lane:
    """One agent's events in the window, by row."""

    launch: int
    block: int
    thread: int
    label: str
    events: list[Event] = field(default_factory=list)
    skipped: int = 0
    """Plain memory accesses in the window that are not shown."""
    dropped: int = 0
    """Synchronisation events past :data:`MAX_EVENTS` that are not shown."""


@dataclass(frozen=True)
class Window:
    """What :func:`timelines` is asked for: a hazard's two accesses."""

    launch: int
    later: tuple[int, int, int]
    """(row, block, thread) of the later access."""
    earlier: tuple[int, int, int] | None
    """(row, block, thread) of the earlier access, or None."""


class _Found:
    """What the scan keeps of one agent's window: bounded however long it is."""

    def __init__(self, roles: set[int]) -> None:
        self.roles = roles
        self.before: list[tuple] = []
        self.head: list[tuple] = []
        self.tail: deque[tuple] = deque(maxlen=MAX_EVENTS)
        self.shown = 0
        self.skipped = 0

    def add(self, event: tuple) -> None:
        self.shown += 1
        if len(self.head) < MAX_EVENTS:
            self.head.append(event)
        else:
            self.tail.append(event)

    def events(self) -> tuple[list[tuple], int]:
        """The events to show (the last few before, the first and last of the
        window), and how many window events are left out."""
        inside = self.head + list(self.tail)
        if len(inside) > MAX_EVENTS:
            half = MAX_EVENTS // 2
            inside = self.head[:half] + list(self.tail)[-half:]
        return self.before + inside, self.shown - (len(inside))


def timelines(source: Any, windows: list[Window], meta: Any, name: Any = None) -> list[list[Lane]]:
    """For each window, the lanes of its agents (earlier's first), read from
    ``source`` (a trace path, table or reader) in one pass. ``name(launch,
    block, thread)`` labels a lane (default ``(block,thread)``)."""
    from ..trace.reader import open_trace

    name = name or (lambda launch, block, thread: f"({block},{thread})")
    plans = []
    for w in windows:
        agents = []
        if w.earlier is not None:
            agents.append(w.earlier[1:])
        if w.later[1:] not in agents:
            agents.append(w.later[1:])
        roles = {w.later[0]} | ({w.earlier[0]} if w.earlier is not None else set())
        plans.append((w, agents, min(roles), max(roles), {a: _Found(roles) for a in agents}))
    if not plans:
        return []
    end = max(p[3] for p in plans)
    with open_trace(source) as trace:
        for batch in trace:
            if batch.row0 > end:
                break
            _scan(batch, plans)
    out = []
    for w, agents, _lo, _hi, found in plans:
        lanes = []
        for block, thread in agents:
            f = found[(block, thread)]
            lane = Lane(w.launch, block, thread, name(w.launch, block, thread), skipped=f.skipped)
            events, lane.dropped = f.events()
            for row, op, obj, site in events:
                role = None
                if w.earlier is not None and row == w.earlier[0]:
                    role = "earlier"
                elif row == w.later[0]:
                    role = "later"
                lane.events.append(Event(row, op_name(op), obj, meta.site_text(site), role))
            lanes.append(lane)
        out.append(lanes)
    return out


_MEMORY = np.array(sorted(MEMORY_OPS))


def _scan(batch: Any, plans: list) -> None:
    cols = batch.cols
    rows = batch.row0 + np.arange(batch.n)
    for w, agents, lo, hi, found in plans:
        if batch.row0 > hi:
            continue
        in_launch = (cols["launch"] == w.launch) & (rows <= hi)
        for agent in agents:
            idx = np.flatnonzero(
                in_launch & (cols["block"] == agent[0]) & (cols["thread"] == agent[1])
            )
            if idx.size == 0:
                continue
            f = found[agent]
            r = rows[idx]
            plain = np.isin(cols["op"][idx], _MEMORY)
            role = np.isin(r, list(f.roles))
            early = r < lo
            for i in idx[early & ~plain][-BEFORE:].tolist():
                f.before.append(_event(cols, rows, i))
            del f.before[:-BEFORE]
            inside = ~early
            f.skipped += int(np.count_nonzero(inside & plain & ~role))
            for i in idx[inside & (~plain | role)].tolist():
                f.add(_event(cols, rows, i))


def _event(cols: dict, rows: np.ndarray, i: int) -> tuple[int, int, int, int]:
    return int(rows[i]), int(cols["op"][i]), int(cols["obj"][i]), int(cols["site"][i])
