"""JSON: the pinned report shape (:meth:`tracerace.report.model.Report.to_json`),
written group by group (only the shown groups are worded)."""

from __future__ import annotations

from typing import IO

from ..model import Report
from .jsonstream import Items, dump

NAME = "json"
BINARY = False


def write(report: Report, stream: IO[str]) -> None:
    doc = {**report.json_head(), "hazards": Items(g.to_json() for g in report.shown_groups),
           **report.json_tail()}
    dump(doc, stream)
    stream.write("\n")
