"""``tracerace check A.arrow B.arrow ...`` (or a directory): every trace checked
at once, on this machine's threads or a Dask cluster; one report per trace,
then a summary table; the exit code is the worst of them.

Reports go to stdout one after another (text only), or with ``--output DIR``
each to ``DIR/<trace name>.<format's suffix>`` (any format). The CLI calls
:func:`check_several`; the checking is :func:`tracerace.api.check_many` or
:func:`tracerace.api.cluster.check_on_cluster`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import TraceError

SUFFIX = {"text": ".txt", "json": ".json", "sarif": ".sarif", "html": ".html", "arrow": ".arrow"}
"""The file suffix of each format's report under ``--output DIR``."""


def report_names(paths: Sequence[str]) -> list[str]:
    """A distinct report file name (no suffix) per trace: its file name
    without suffix, and where two traces share it, their paths' parts."""
    stems = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    out = []
    for p, stem in zip(paths, stems):
        if stems.count(stem) > 1:
            stem = os.path.splitext(os.path.normpath(p))[0].strip(os.sep).replace(os.sep, "__")
        out.append(stem)
    return out


def check_several(
    paths: Sequence[str],
    *,
    fmt: str,
    output: str | None,
    engine: str,
    max_reports: Any,
    select: Any,
    ignore: Any,
    progress: bool | None,
    source_root: Sequence[str],
    jobs: int | None,
    dask: str | None,
    dask_timeout: float | None,
    bar: Callable[[bool | None], Any],
    say: Callable[[str], None],
    echo: Callable[[str], None],
) -> int:
    """Check ``paths``, write their reports and the summary; the exit code."""
    from .. import api
    from ..report import formats
    from ..report.output import Output

    try:
        formats.get(fmt)
        if fmt not in SUFFIX:
            raise TraceError(f"unknown format {fmt!r}", path="options", rule="usage")
        if output is None and fmt != "text" and len(paths) > 1:
            raise TraceError(
                f"several traces in format {fmt} need --output DIRECTORY (one report file each)",
                path="options",
                rule="usage",
            )
        if "-" in paths and len(paths) > 1:
            raise TraceError(
                "standard input (-) can be checked only on its own", path="options", rule="usage"
            )
        if output is not None:
            if os.path.exists(output) and not os.path.isdir(output):
                raise TraceError(
                    "with several traces --output names a directory", path=output, rule="usage"
                )
            os.makedirs(output, exist_ok=True)
        # Every finding is kept for the Arrow format, which lists them all.
        options = dict(
            engine=engine,
            max_reports=max_reports,
            select=select,
            ignore=ignore,
            keep_findings=fmt == "arrow",
        )
        with bar(progress) as shown:
            if dask is not None:
                from .cluster import check_on_cluster, client_for

                with client_for(dask, dask_timeout) as client:
                    results = check_on_cluster(paths, client, progress=shown.update, **options)
            else:
                results = api.check_many(paths, jobs=jobs, progress=shown.update, **options)
    except TraceError as err:
        say(f"tracerace: error: {err}")
        return 2
    names = report_names(paths)
    worst = 0
    for path, name, result in zip(paths, names, results):
        if isinstance(result, TraceError):
            say(f"tracerace: error: {result}")
            worst = 2
            continue
        for warning in result.meta.warnings:
            say(f"tracerace: warning: {result.meta.path or path}: {warning}")
        dest = None if output is None else os.path.join(output, name + SUFFIX[fmt])
        try:
            with Output(fmt, dest, inputs=list(paths), source_roots=source_root) as out:
                out.write(result)
        except TraceError as err:
            say(f"tracerace: error: {err}")
            worst = 2
            continue
        worst = max(worst, result.exit_code)
    echo(summary_table(paths, results))
    return worst


def summary_table(paths: Sequence[str], results: Sequence[Any]) -> str:
    """One line per trace: its events, hazards, errors and warnings, and what
    it adds to the exit code."""
    from ..shown import shown

    rows = [("trace", "events", "hazards", "errors", "warnings", "exit")]
    for path, r in zip(paths, results):
        if isinstance(r, TraceError):
            rows.append((shown(path), "-", "-", "-", "-", f"2 ({r.rule})"))
        else:
            rows.append(
                (
                    shown(r.meta.path or path),
                    f"{r.events:,}",
                    f"{r.total:,}",
                    f"{r.errors:,}",
                    f"{r.warnings:,}",
                    str(r.exit_code),
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
