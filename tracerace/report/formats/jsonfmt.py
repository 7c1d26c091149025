"""JSON: the pinned report shape (``schemas/report-v1.schema.json``), written
group by group (only the shown groups are worded).

``hazards`` holds the shown groups; ``hazards_omitted`` appears only when
``max_reports`` left groups out, ``filtered`` (findings per kind) only when
``select``/``ignore`` dropped some.
"""

from __future__ import annotations

from typing import IO, Any

from ..model import HazardGroup, ReportModel
from .jsonstream import Items, dump

NAME = "json"
BINARY = False

JSON_VERSION = 1
"""``version`` of the JSON report (``schemas/report-v1.schema.json``): fields are
only ever added within a version; a change to an existing one is a new version."""


def write(report: ReportModel, stream: IO[str]) -> None:
    doc = {
        **head(report),
        "hazards": Items(group_json(g) for g in report.shown_groups),
        **tail(report),
    }
    dump(doc, stream)
    stream.write("\n")


def to_json(report: ReportModel) -> dict[str, Any]:
    """The whole JSON report as a dict."""
    return {**head(report), "hazards": [group_json(g) for g in report.shown_groups], **tail(report)}


def head(report: ReportModel) -> dict[str, Any]:
    """The JSON report's fields before ``hazards``, in order."""
    meta = report.meta
    return {
        "version": JSON_VERSION,
        "events": report.events,
        "trace": meta.path,
        "producer": meta.producer,
        "warnings": list(meta.warnings),
        "launches": [d.to_json() for d in meta.launches],
        "legend": report.legend,
    }


def tail(report: ReportModel) -> dict[str, Any]:
    """The JSON report's fields after ``hazards``, in order."""
    out: dict[str, Any] = {
        "summary": report.summary,
        "summary_line": report.summary_line(),
        "groups": report.group_count,
    }
    if report.omitted_groups:
        out["hazards_omitted"] = report.omitted_groups
    if report.filtered:
        out["filtered"] = report.filtered
    return out


def group_json(group: HazardGroup) -> dict[str, Any]:
    """A group of the JSON report: what the text report says of it, and the
    example's fields."""
    ex = group.example
    hint = group.hint
    return {
        "kind": group.kind,
        "severity": group.severity,
        "count": group.count,
        "space": ex.space,
        "addr": ex.addr,
        "size": ex.size,
        "first": ex.first.to_json() if ex.first is not None else None,
        "second": ex.second.to_json(),
        "element": ex.element,
        "explanation": ex.explanation,
        "obj": ex.obj,
        "reason": ex.reason,
        "group": group.id,
        "first_site": group.first_site,
        "second_site": group.second_site,
        "roles": {"earlier": group.earlier_role, "later": group.later_role},
        "owner": ex.owner,
        "owner_text": group.owner_text,
        "location": ex.location,
        "locations": list(group.locations),
        "byte_ranges": group.byte_ranges,
        "span": group.span,
        "code": ex.code,
        "aux": ex.aux,
        "hint": hint.to_json() if hint is not None else None,
        "linked": group.linked.to_json() if group.linked is not None else None,
    }
