"""The Python API: ``check(trace) -> Report``, ``validate(trace)``. The CLI is a
thin layer over it.

Options are validated here, before any trace is read, and a bad one raises
:class:`~tracerace.errors.TraceError` with rule ``usage``.

A check hands the checker's findings, a batch at a time, to a
:class:`~tracerace.groups.GroupBuilder` (and to a ``sink``, when one streams
them to a file), so memory grows with the groups, not with the findings.
"""

from __future__ import annotations

import errno
import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from .errors import TraceError
from .groups import GroupBuilder
from .meta import TraceMeta
from .ops import HazardKind
from .report import Report

ENGINES = {"numba": "tracerace.engine", "reference": "tracerace.reference"}
"""Engine name -> module with ``check_trace(reader, *, progress=None, on_findings=None)
-> CheckResult``."""

DEFAULT_MAX_REPORTS = 100
"""Groups the formats show unless ``max_reports`` says otherwise (counts stay whole)."""

DEFAULT_BATCH_SIZE = 1 << 20

PROGRESS_MIN_ROWS = 2_000_000
"""Below this many rows a check takes a second or two: no bar unless asked for."""

ALL_KINDS = frozenset(int(k) for k in HazardKind)


@dataclass(frozen=True)
class CheckOptions:
    """What :func:`check` was asked for; kept on the :class:`Report`."""

    engine: str = "numba"
    max_reports: int | None = DEFAULT_MAX_REPORTS
    """Groups the formats show; None (asked for as 0 or ``"all"``): every group."""
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


def parse_max_reports(value: int | str | None) -> int | None:
    """``max_reports`` from a number, a string of digits, or ``"all"`` / 0 / None
    (every group)."""
    if value is None or value == "all":
        return None
    number = value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise TraceError(f"max_reports must be a non-negative integer or 'all', not {value!r}",
                         path="options", rule="usage")
    return number or None  # 0: no cap


def make_options(*, engine: str = "numba", max_reports: int | str | None = DEFAULT_MAX_REPORTS,
                 select: str | Iterable[str] | None = None,
                 ignore: str | Iterable[str] | None = None, progress: bool | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE) -> CheckOptions:
    """Validated :class:`CheckOptions`; raises ``TraceError`` (rule ``usage``)."""
    def usage(message: str) -> TraceError:
        return TraceError(message, path="options", rule="usage")

    if engine not in ENGINES:
        raise usage(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    max_reports = parse_max_reports(max_reports)
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise usage(f"batch_size must be a positive integer, not {batch_size!r}")
    selected = parse_kinds(select) if select is not None else ALL_KINDS
    return CheckOptions(engine=engine, max_reports=max_reports,
                        kinds=selected - parse_kinds(ignore), batch_size=batch_size,
                        progress=progress)


class FindingSink(Protocol):
    """Takes every finding a check keeps, as the checker finds them (the Arrow
    output's :class:`~tracerace.formats.arrowfmt.FindingsWriter`)."""

    def open(self, meta: TraceMeta) -> None:
        """The trace is open: its metadata."""

    def write(self, findings: np.ndarray, groups: np.ndarray) -> None:
        """A batch of ``FINDING_DTYPE`` records, in canonical order, and their group ids."""


def check(source: Any, *, engine: str = "numba",
          max_reports: int | str | None = DEFAULT_MAX_REPORTS,
          select: str | Iterable[str] | None = None, ignore: str | Iterable[str] | None = None,
          progress: bool | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
          keep_findings: bool = False, sink: FindingSink | None = None) -> Report:
    """Check a recorded trace for hazards.

    ``source``: a path (``.arrow``, ``.arrows``, ``.parquet``), a ``pa.Table`` or
    a ``pa.RecordBatchReader``. ``engine``: ``"numba"`` (fast) or
    ``"reference"`` (the plain-Python definition). ``select``/``ignore``: hazard
    kind names (``"raw"``, ``"uninit_read"``, ...) to keep / drop.
    ``max_reports`` limits the groups the formats show (default
    :data:`DEFAULT_MAX_REPORTS`; 0, None or ``"all"``: every group), never the
    counts. ``progress``: a bar on stderr; None shows one when stderr is a
    terminal and the trace is large or of unknown length.

    Findings are grouped as they are found (:mod:`tracerace.groups`): the
    report holds every group with exact counts and each group's first few
    findings. ``keep_findings``: keep every finding in ``Report.findings``
    too (memory grows with them). ``sink``: receives every kept finding as it
    is found (see :class:`FindingSink`).

    Raises :class:`~tracerace.errors.TraceError` on bad options (rule
    ``usage``), on a trace that breaks the format, and when memory runs out
    (rule ``out-of-memory``).
    """
    options = make_options(engine=engine, max_reports=max_reports, select=select, ignore=ignore,
                           progress=progress, batch_size=batch_size)
    builder: GroupBuilder | None = None

    def start(meta: TraceMeta) -> Callable[[np.ndarray], None]:
        nonlocal builder
        builder = GroupBuilder(meta, options.kinds, keep_findings=keep_findings)
        if sink is not None:
            sink.open(meta)

        def on_findings(findings: np.ndarray) -> None:
            kept, groups = builder.add(findings)
            if sink is not None:
                sink.write(kept, groups)
        return on_findings

    result, meta = _replay(source, options, start)
    return Report(result.events, meta, builder.table(), options)


def validate(source: Any, *, engine: str = "numba",
             batch_size: int = DEFAULT_BATCH_SIZE) -> TraceMeta:
    """Check that ``source`` follows the trace format: every rule :func:`check`
    enforces, the reader's (each row on its own) and the replay's (launch
    order, barrier counts and order, waits without a signal, ...), by the same
    code: the trace is replayed and its findings are dropped. Returns the
    trace's metadata with ``num_rows`` set; raises
    :class:`~tracerace.errors.TraceError` where :func:`check` would."""
    options = make_options(engine=engine, batch_size=batch_size, progress=False)
    result, meta = _replay(source, options, lambda meta: _drop)
    return replace(meta, num_rows=result.events)


def _drop(findings: np.ndarray) -> None:
    """A findings consumer that keeps nothing (``validate``)."""


def _replay(source: Any, options: CheckOptions,
            start: Callable[[TraceMeta], Callable[[np.ndarray], None]]) -> tuple[Any, TraceMeta]:
    """Open ``source`` and replay it through the options' engine; ``start(meta)``
    gives the consumer of the findings. Returns (the checker's result, meta)."""
    path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    try:
        from .notice import CompileNotice
        from .reader import decode_pool, open_trace

        with CompileNotice(), decode_pool():
            reader = open_trace(source, batch_size=options.batch_size)
            try:
                checker = importlib.import_module(ENGINES[options.engine]).check_trace
                on_findings = start(reader.meta)
                result = _run(functools.partial(checker, on_findings=on_findings), reader,
                              options.progress)
            finally:
                close = getattr(reader, "close", None)
                if close is not None:
                    close()
    except TraceError as err:
        raise err.with_path(path) from None
    except MemoryError:
        raise out_of_memory(path) from None
    except OSError as err:
        if err.errno == errno.ENOMEM:
            raise out_of_memory(path) from None
        raise TraceError(err.strerror or str(err), path=path, rule="io") from None
    return result, reader.meta


def out_of_memory(path: str | None) -> TraceError:
    return TraceError("not enough memory to check this trace", path=path, rule="out-of-memory")


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
