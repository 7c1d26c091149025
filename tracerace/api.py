"""The Python API: ``check(trace) -> Report``. The CLI is a thin layer over it.

Options are validated here, before any trace is read, and a bad one raises
:class:`~tracerace.errors.TraceError` with rule ``usage``.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import TraceError
from .ops import HazardKind
from .report import Report

ENGINES = {"numba": "tracerace.engine", "reference": "tracerace.reference"}
"""Engine name -> module with ``check_trace(reader, *, progress=None) -> CheckResult``."""

DEFAULT_BATCH_SIZE = 1 << 20

PROGRESS_MIN_ROWS = 2_000_000
"""Below this many rows a check takes a second or two: no bar unless asked for."""

ALL_KINDS = frozenset(int(k) for k in HazardKind)


@dataclass(frozen=True)
class CheckOptions:
    """What :func:`check` was asked for; kept on the :class:`Report`."""

    engine: str = "numba"
    max_reports: int | None = None
    kinds: frozenset[int] = ALL_KINDS
    """The hazard kinds reported: ``select`` (default: all) minus ``ignore``."""
    batch_size: int = DEFAULT_BATCH_SIZE
    progress: bool | None = None


def parse_kinds(values: str | Iterable[str] | None) -> frozenset[int]:
    """Hazard kinds from names; an item may hold several, comma-separated (``"raw,waw"``)."""
    if values is None:
        return frozenset()
    if isinstance(values, str):
        values = [values]
    kinds = set()
    for value in values:
        for name in str(value).split(","):
            name = name.strip().lower()
            if not name:
                continue
            try:
                kinds.add(int(HazardKind[name.upper()]))
            except KeyError:
                known = ", ".join(k.label for k in HazardKind)
                raise TraceError(f"unknown hazard kind {name!r} (known: {known})",
                                 path="options", rule="usage") from None
    return frozenset(kinds)


def make_options(*, engine: str = "numba", max_reports: int | None = None,
                 select: str | Iterable[str] | None = None,
                 ignore: str | Iterable[str] | None = None, progress: bool | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE) -> CheckOptions:
    """Validated :class:`CheckOptions`; raises ``TraceError`` (rule ``usage``)."""
    def usage(message: str) -> TraceError:
        return TraceError(message, path="options", rule="usage")

    if engine not in ENGINES:
        raise usage(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    if max_reports is not None and (not isinstance(max_reports, int) or max_reports < 0):
        raise usage(f"max_reports must be a non-negative integer, not {max_reports!r}")
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise usage(f"batch_size must be a positive integer, not {batch_size!r}")
    selected = parse_kinds(select) if select is not None else ALL_KINDS
    return CheckOptions(engine=engine, max_reports=max_reports,
                        kinds=selected - parse_kinds(ignore), batch_size=batch_size,
                        progress=progress)


def check(source: Any, *, engine: str = "numba", max_reports: int | None = None,
          select: str | Iterable[str] | None = None, ignore: str | Iterable[str] | None = None,
          progress: bool | None = None, batch_size: int = DEFAULT_BATCH_SIZE) -> Report:
    """Check a recorded trace for hazards.

    ``source``: a path (``.arrow``, ``.arrows``, ``.parquet``), a ``pa.Table`` or
    a ``pa.RecordBatchReader``. ``engine``: ``"numba"`` (fast) or
    ``"reference"`` (the plain-Python definition). ``select``/``ignore``: hazard
    kind names (``"raw"``, ``"uninit_read"``, ...) to keep / drop.
    ``max_reports`` limits the groups the formats show, never the counts.
    ``progress``: a bar on stderr; None shows one when stderr is a terminal and
    the trace is large or of unknown length.

    Raises :class:`~tracerace.errors.TraceError` on bad options (rule
    ``usage``) and on a trace that breaks the format.
    """
    options = make_options(engine=engine, max_reports=max_reports, select=select, ignore=ignore,
                           progress=progress, batch_size=batch_size)
    path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    try:
        from .reader import decode_pool, open_trace

        with decode_pool():
            reader = open_trace(source, batch_size=options.batch_size)
            try:
                checker = importlib.import_module(ENGINES[options.engine]).check_trace
                result = _run(checker, reader, options.progress)
            finally:
                close = getattr(reader, "close", None)
                if close is not None:
                    close()
    except TraceError as err:
        raise err.with_path(path) from None
    except OSError as err:
        raise TraceError(err.strerror or str(err), path=path, rule="io") from None
    return Report.from_result(result, reader.meta, options)


def _run(checker: Callable[..., Any], reader: Any, progress: bool | None) -> Any:
    total = reader.meta.num_rows
    if progress is None:
        from .formats.text import is_terminal

        progress = is_terminal(sys.stderr) and (total is None or total > PROGRESS_MIN_ROWS)
    if not progress:
        return checker(reader)
    with ProgressBar(total) as advance:
        return checker(reader, progress=advance)


class ProgressBar:
    """A rich bar on stderr: rows done / total and events per second.

    Used as ``with ProgressBar(total) as advance: ... advance(rows_done)``;
    ``rows_done`` counts every row replayed so far. ``total`` None (a stream
    of unknown length) shows a pulsing bar.
    """

    def __init__(self, total: int | None) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, Progress, ProgressColumn, TextColumn,
                                   TimeElapsedColumn)
        from rich.text import Text

        class Rows(ProgressColumn):
            def render(self, task: Any) -> Text:
                of = f"/{int(task.total):,}" if task.total is not None else ""
                return Text(f"{int(task.completed):,}{of} rows")

        class Speed(ProgressColumn):
            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text("" if speed is None else f"{speed:,.0f} events/s")

        self._progress = Progress(TextColumn("checking"), BarColumn(), Rows(), Speed(),
                                  TimeElapsedColumn(), console=Console(stderr=True),
                                  transient=True)
        self._task = self._progress.add_task("check", total=total)

    def __enter__(self) -> Callable[[int], None]:
        self._progress.start()
        return self.advance

    def advance(self, rows_done: int) -> None:
        self._progress.update(self._task, completed=rows_done)

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()
