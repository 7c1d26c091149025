"""One finding in words: :class:`Hazard`, its accesses (:class:`Access`), the
:class:`Link` of a race to the crossed wait behind it, and the names of kinds
and severities the reports use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..checker.findings import FIELDS, NO_ROW
from ..trace.meta import TraceMeta
from ..trace.ops import HazardKind, Severity
from .explain import ASYNC_OP_CODES, explain, op_name, reason_text
from .hints import Hint, link_hint
from .locations import BYTES_KEY, locate, space_name

KIND_NAMES = tuple(k.label for k in HazardKind)
SEVERITY_NAMES = tuple(s.label for s in Severity)


@dataclass(frozen=True)
class Access:
    """One side of a hazard: the event, its agent and where in the source it is."""

    row: int
    launch: int
    block: int
    thread: int
    op: str
    ts: int
    site: str | None
    is_async: bool = False
    """The access was made by an async copy (cp.async, TMA) issued at ``row``."""
    name: str | None = None
    """The agent as the report names it: ``block (1,0,0) thread (33,0,0) (warp 1,
    lane 1)`` when the trace gives the launch's dimensions, else :attr:`agent`."""
    coords: dict | None = None
    """``{"block": [x, y, z], "thread": [x, y, z], "warp", "lane"}``, or None."""

    @property
    def agent(self) -> str:
        """``(block,thread)``."""
        return f"({self.block},{self.thread})"

    @property
    def text(self) -> str:
        """``write by (0,5) in launch 0, row 17, ts 120, at kernel.cu:10 st.shared``
        (``block (0,0,0) thread (5,0,0)`` when the trace gives the launch's dimensions)."""
        op = f"{self.op} (async copy)" if self.is_async else self.op
        site = f", at {self.site}" if self.site else ""
        return (
            f"{op} by {self.name or self.agent} in launch {self.launch}, row {self.row:,}, "
            f"ts {self.ts}{site}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "launch": self.launch,
            "block": self.block,
            "thread": self.thread,
            "op": self.op,
            "ts": self.ts,
            "site": self.site,
            "async": self.is_async,
            "agent": self.name or self.agent,
            "coords": self.coords,
        }


def _access(
    meta: TraceMeta,
    row: int,
    launch: int,
    block: int,
    thread: int,
    op: int,
    ts: int,
    site: int,
    is_async: bool,
) -> Access:
    coords = meta.coords
    return Access(
        row,
        launch,
        block,
        thread,
        op_name(op),
        ts,
        meta.site_text(site),
        is_async,
        coords.agent(launch, block, thread),
        coords.coords(launch, block, thread),
    )


@dataclass(frozen=True)
class Hazard:
    """One finding, in words: the later access, the earlier one (if any), the bytes, why."""

    kind: str
    severity: str
    first: Access | None
    second: Access
    space: str
    owner: int
    addr: int
    size: int
    element: str | None
    location: str | None
    obj: int
    code: int
    aux: int
    explanation: str

    @property
    def row(self) -> int:
        return self.second.row

    @property
    def reason(self) -> str | None:
        """The short name of ``code`` (``"use before init"``), or None."""
        return reason_text(HazardKind[self.kind.upper()], self.code)


def hazard_from_record(
    rec: Any,
    meta: TraceMeta,
    explanation: str | None = None,
    located: tuple[str | None, str | None] | None = None,
) -> Hazard:
    """The :class:`Hazard` of one ``FINDING_DTYPE`` record (or a dict of its fields).

    ``explanation`` and ``located`` (element, location) may come precomputed
    from :func:`~tracerace.report.explain.explain_all` and :func:`locate_all`.
    """
    r = rec if isinstance(rec, dict) else dict(zip(FIELDS, rec.tolist()))
    second = _access(
        meta,
        r["row"],
        r["launch"],
        r["block"],
        r["thread"],
        r["op"],
        r["ts"],
        r["site"],
        r["op"] in ASYNC_OP_CODES,
    )
    first = None
    if r["prev_row"] != NO_ROW:
        first = _access(
            meta,
            r["prev_row"],
            r["prev_launch"],
            r["prev_block"],
            r["prev_thread"],
            r["prev_op"],
            r["prev_ts"],
            r["prev_site"],
            bool(r["prev_async"]) or r["prev_op"] in ASYNC_OP_CODES,
        )
    if located is None:
        located = locate(meta, *(r[name] for name in BYTES_KEY))
    element, location = located
    return Hazard(
        kind=KIND_NAMES[r["kind"]],
        severity=SEVERITY_NAMES[r["severity"]],
        first=first,
        second=second,
        space=space_name(r["space"]),
        owner=r["owner"],
        addr=r["addr"],
        size=r["size"],
        element=element,
        location=location,
        obj=r["obj"],
        code=r["code"],
        aux=r["aux"],
        explanation=explain(r, meta) if explanation is None else explanation,
    )


RACE_KINDS = ("raw", "war", "waw")
"""The kinds a :class:`Link` explains."""


@dataclass(frozen=True)
class Link:
    """A race's likely cause: a crossed wait (a ``sync_alias`` error) of the thread
    of the race's later access. A wait whose flag serves two protocols may be
    released by the other protocol's signal, which leaves the access after it
    unordered; the report links the race to that wait in every format (text
    ``linked:``, JSON and HTML ``linked``, SARIF a related location and
    ``properties.linked``, the Arrow report's ``linked_*`` columns)."""

    row: int
    """The wait's row."""
    site: str | None
    obj: int
    """The flag."""
    kind = "sync_alias"

    @property
    def text(self) -> str:
        where = self.site or f"row {self.row}"
        return (
            f"this thread's wait on flag {self.obj} at {where} (row {self.row}) "
            f"mixes two protocols (sync_alias): a wait released by the other protocol's "
            f"signal leaves this access unordered"
        )

    @property
    def hint(self) -> Hint:
        return link_hint(self.obj, self.site)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "row": self.row,
            "site": self.site,
            "obj": self.obj,
            "text": self.text,
            "hint": self.hint.to_json(),
        }
