"""SARIF 2.1.0, for code-scanning tools: one result per shown group, written
result by result.

Written as plain dicts (no maintained SARIF object-model library fits; the
structure is small). One rule per hazard kind, ``ruleIndex`` = its code. A site
that starts with ``file:line`` (``matmul.cu:104 LDGSTS.E.128``,
``kernel.py:88:5 tl.store``) becomes a physical location, the rest of the site
text its message; any other site a logical location. The later access is the
result's location, the earlier one a related location. The group's fix hint
(:mod:`tracerace.report.hints`) ends the message and, when it names a ``file:line``
site, is the result's ``fixes`` entry: its description and an empty region
at the start of that line (where the change goes; tracerace does not write
the code). A race linked to a crossed wait (``sync_alias``)
has that wait as a second related location. Message texts and logical
location names show control characters as escapes (:mod:`tracerace.shown`).

A site's file becomes an artifact URI only as a path relative to the source
roots (:meth:`tracerace.report.sources.SourceRoots.relative`): a relative path that
stays below them, or an absolute path inside one. A URI (``https://...``,
``file://...``), a path that climbs out with ``..`` or an absolute path
outside every root is no file location: the site is a logical location.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import IO, Any
from urllib.parse import quote

from ...shown import shown
from ...trace.ops import HazardKind
from ...version import tool_version
from ..explain import KIND_TITLES
from ..hazards import Access
from ..model import HazardGroup, ReportModel
from ..sources import SourceRoots
from .jsonstream import Items, dump

NAME = "sarif"
BINARY = False

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

SITE_RE = re.compile(r"^(?P<file>\S+?):(?P<line>\d+)(?::(?P<col>\d+))?(?:\s+(?P<rest>.*))?$")
"""``path:line[:col] [text]``; the path is everything up to the first ``:digits``."""


TAKES_SOURCE_ROOTS = True
"""``write`` takes ``source_roots``: site paths are made relative to them."""


def write(
    report: ReportModel,
    stream: IO[str],
    *,
    source_roots: SourceRoots | Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Result by result, as each group is worded."""
    roots = SourceRoots.of(source_roots)
    dump(_document(report, Items(_result(g, roots) for g in report.shown_groups)), stream)
    stream.write("\n")


def to_sarif(
    report: ReportModel, *, source_roots: SourceRoots | Iterable[str | os.PathLike[str]] = ()
) -> dict[str, Any]:
    """The whole SARIF document as a dict."""
    roots = SourceRoots.of(source_roots)
    return _document(report, [_result(g, roots) for g in report.shown_groups])


def _document(report: ReportModel, results: list | Items) -> dict[str, Any]:
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "tracerace",
                "version": tool_version(),
                "rules": [_rule(kind) for kind in HazardKind],
            }
        },
        "results": results,
        "properties": {"events": report.events, "summary": report.summary},
    }
    if report.omitted_groups:
        run["properties"]["hazardsOmitted"] = report.omitted_groups
    if report.filtered:
        run["properties"]["filtered"] = report.filtered
    if report.meta.path:
        run["artifacts"] = [
            {"location": {"uri": _uri(report.meta.path)}, "roles": ["analysisTarget"]}
        ]
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


_RULE_NAMES = {
    HazardKind.RAW: "ReadAfterWrite",
    HazardKind.WAR: "WriteAfterRead",
    HazardKind.WAW: "WriteAfterWrite",
}


def _rule(kind: HazardKind) -> dict[str, Any]:
    return {
        "id": kind.label,
        "name": _RULE_NAMES.get(kind) or "".join(p.capitalize() for p in kind.label.split("_")),
        "shortDescription": {"text": KIND_TITLES[kind]},
        "defaultConfiguration": {"level": "error"},
    }


def _result(group: HazardGroup, roots: SourceRoots) -> dict[str, Any]:
    ex = group.example
    count = f"{group.count:,} hazard{'' if group.count == 1 else 's'}"
    where = f" on {ex.location}" if ex.location else ""
    hint = group.hint
    fix = f" Fix: {hint.text}." if hint is not None else ""
    result: dict[str, Any] = {
        "ruleId": group.kind,
        "ruleIndex": int(HazardKind[group.kind.upper()]),
        "level": group.severity,
        "message": _message(f"{group.kind}: {ex.explanation} ({count}{where}).{fix}"),
        "locations": [location(ex.second, f"later {ex.second.op} by {_agent(ex.second)}", roots)],
        "properties": {
            "count": group.count,
            "space": ex.space,
            "addr": ex.addr,
            "size": ex.size,
            "element": ex.element,
            "row": ex.second.row,
            "group": group.id,
        },
    }
    related = []
    if ex.first is not None:
        related.append(
            {"id": 1, **location(ex.first, f"earlier {ex.first.op} by {_agent(ex.first)}", roots)}
        )
        result["properties"]["firstRow"] = ex.first.row
    linked = group.linked
    if linked is not None:
        related.append({"id": 2, **_site_location(linked.site, linked.text, roots)})
        result["properties"]["linked"] = {
            "row": linked.row,
            "obj": linked.obj,
            "hint": linked.hint.text,
        }
    if related:
        result["relatedLocations"] = related
    if hint is not None:
        result["properties"]["hint"] = hint.text
        fix = _fix(hint.text, hint.site, roots)
        if fix is not None:
            result["fixes"] = [fix]
    return result


def _agent(access: Access) -> str:
    return access.name or access.agent


def _fix(text: str, site: str | None, roots: SourceRoots) -> dict[str, Any] | None:
    """A SARIF ``fix``: the hint, and an empty region at the start of the line
    where the change goes; None when ``site`` names no ``file:line`` a URI can
    be made of (SARIF wants at least one artifact change; the message has the
    hint)."""
    m = SITE_RE.match(site) if site else None
    uri = _site_uri(m["file"], roots) if m is not None else None
    if uri is None or int(m["line"]) < 1:
        return None
    line = int(m["line"])
    return {
        "description": _message(text),
        "artifactChanges": [
            {
                "artifactLocation": {"uri": uri},
                "replacements": [
                    {
                        "deletedRegion": {
                            "startLine": line,
                            "startColumn": 1,
                            "endLine": line,
                            "endColumn": 1,
                        }
                    }
                ],
            }
        ],
    }


def _site_location(site: str | None, text: str, roots: SourceRoots) -> dict[str, Any]:
    """A location for a site with no access record (a linked wait)."""
    if site is None:
        return {"message": _message(text)}
    m = SITE_RE.match(site)
    uri = _site_uri(m["file"], roots) if m is not None else None
    if uri is None or int(m["line"]) < 1:
        return {"logicalLocations": [_logical(site)], "message": _message(text)}
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": uri},
            "region": {"startLine": int(m["line"])},
        },
        "message": _message(text),
    }


def location(access: Access, what: str, roots: SourceRoots | None = None) -> dict[str, Any]:
    """A SARIF location for an access: physical when its site is ``file:line``
    with a file a URI can be made of (see the module's rule), else logical."""
    text = f"{what} (row {access.row}, launch {access.launch}, ts {access.ts})"
    site = access.site
    if site is None:
        return {"message": _message(text)}
    m = SITE_RE.match(site)
    uri = _site_uri(m["file"], roots or SourceRoots()) if m is not None else None
    if uri is None:
        return {"logicalLocations": [_logical(site)], "message": _message(text)}
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    if int(m["line"]) >= 1:  # SARIF lines and columns count from 1
        physical["region"] = {"startLine": int(m["line"])}
        if m["col"] and int(m["col"]) >= 1:
            physical["region"]["startColumn"] = int(m["col"])
    if m["rest"]:
        text = f"{text}: {m['rest']}"
    return {"physicalLocation": physical, "message": _message(text)}


def _message(text: str) -> dict[str, str]:
    """A SARIF message (or description) people read: the trace's text in it shown
    escaped (:func:`~tracerace.shown.shown`), as in the text report."""
    return {"text": shown(text)}


def _logical(site: str) -> dict[str, str]:
    """A logical location: the site, shown escaped, as its name."""
    name = shown(site)
    return {"name": name, "fullyQualifiedName": name}


def _site_uri(name: str, roots: SourceRoots) -> str | None:
    """The artifact URI of a site's file: relative to the source roots, or None."""
    relative = roots.relative(name)
    return None if relative is None else quote(relative, safe="/")


def _uri(path: str) -> str:
    """A relative path stays relative; an absolute one becomes a ``file://`` URI."""
    if path.startswith("/"):
        return "file://" + quote(path)
    return quote(path.replace("\\", "/"), safe="/:")
