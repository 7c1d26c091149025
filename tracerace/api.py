"""The Python API: ``check(trace) -> Report``, ``validate(trace)``. The CLI is a
thin layer over it.

Options are validated first (:mod:`tracerace.checker.options`), before any trace is
read, and a bad one raises :class:`~tracerace.errors.TraceError` with rule
``usage``.

A check hands the checker's findings, a batch at a time, to a
:class:`~tracerace.group.groups.GroupBuilder` (and to a ``sink``, when one streams
them to a file), so memory grows with the groups, not with the findings.
Progress goes to a plain callback; drawing it (the CLI's bar) is the caller's.
"""

from __future__ import annotations

import errno
import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from .checker.engine import check_trace as numba_check
from .errors import TraceError
from .group.groups import GroupBuilder
from .trace.meta import TraceMeta
from .checker.options import (DEFAULT_BATCH_SIZE, DEFAULT_MAX_REPORTS, CheckOptions, make_options,
                      usage)
from .checker.reference import check_trace as reference_check
from .report.model import Report

CHECKERS: dict[str, Callable[..., Any]] = {"numba": numba_check, "reference": reference_check}
"""Engine name (:data:`~tracerace.checker.options.ENGINES`) -> ``check_trace(reader, *,
progress=None, on_findings=None) -> CheckResult``. Both are imported with the
API: after NumPy and Numba, which the grouping needs anyway, the two modules
take about 0.1 s to import, most of it the one a check runs anyway (measured
with ``python -X importtime``; a whole ``tracerace check`` is no slower)."""

Progress = Callable[[int, "int | None"], None]
"""``progress(rows_done, total_rows)``: called with 0 before the replay starts, then
after each batch; ``total_rows`` is None for a stream of unknown length."""


class FindingSink(Protocol):
    """Takes every finding a check keeps, as the checker finds them (the Arrow
    output's :class:`~tracerace.report.formats.arrowfmt.FindingsWriter`)."""

    def open(self, meta: TraceMeta) -> None:
        """The trace is open: its metadata."""

    def write(self, findings: np.ndarray, groups: np.ndarray) -> None:
        """A batch of ``FINDING_DTYPE`` records, in canonical order, and their group ids."""


def check(source: Any, *, engine: str = "numba",
          max_reports: int | str | None = DEFAULT_MAX_REPORTS,
          select: str | Iterable[str] | None = None, ignore: str | Iterable[str] | None = None,
          progress: Progress | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
          keep_findings: bool = False, sink: FindingSink | None = None,
          jobs: int | None = 1) -> Report:
    """Check a recorded trace for hazards.

    ``source``: a path (``.arrow``, ``.arrows``, ``.parquet``), a ``pa.Table`` or
    a ``pa.RecordBatchReader``. ``engine``: ``"numba"`` (fast) or
    ``"reference"`` (the plain-Python definition). ``select``/``ignore``: hazard
    kind names (``"raw"``, ``"uninit_read"``, ...) to keep / drop.
    ``max_reports`` limits the groups the formats show (default
    :data:`DEFAULT_MAX_REPORTS`; 0, None or ``"all"``: every group), never the
    counts. ``progress``: called as the replay goes (see :data:`Progress`).

    Findings are grouped as they are found (:mod:`tracerace.group.groups`): the
    report holds every group with exact counts and each group's first few
    findings. ``keep_findings``: keep every finding in ``Report.findings``
    too (memory grows with them). ``sink``: receives every kept finding as it
    is found (see :class:`FindingSink`).

    ``jobs``: check the trace in that many shards on as many threads
    (``docs/parallel.md``; None: the cores this process may use, one for a
    trace under :data:`~tracerace.checker.parallel.PARALLEL_MIN_ROWS` rows); the
    report is the one a single thread makes. Only a trace file can be
    sharded, by the ``numba`` engine.

    Raises :class:`~tracerace.errors.TraceError` on bad options (rule
    ``usage``), on a trace that breaks the format, and when memory runs out
    (rule ``out-of-memory``).
    """
    options = make_options(engine=engine, max_reports=max_reports, select=select, ignore=ignore,
                           batch_size=batch_size)
    if progress is not None and not callable(progress):
        raise usage(f"progress must be a function of (rows_done, total_rows), not {progress!r}")
    shards = _shards(source, options, jobs)
    if shards > 1:
        [report] = _sharded([source], options, shards, keep_findings=keep_findings,
                            sinks=[sink], progress=progress, shards=[shards])
        if isinstance(report, TraceError):
            raise report
        return report
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

    result, meta = _replay(source, options, start, progress)
    return Report(result.events, meta, builder.table(), options)


def check_many(sources: Iterable[Any], *, engine: str = "numba",
               max_reports: int | str | None = DEFAULT_MAX_REPORTS,
               select: str | Iterable[str] | None = None,
               ignore: str | Iterable[str] | None = None, progress: Progress | None = None,
               batch_size: int = DEFAULT_BATCH_SIZE, jobs: int | None = None,
               keep_findings: bool = False,
               sinks: Iterable[FindingSink | None] | None = None) -> list[Report | TraceError]:
    """Check several traces (paths) at once, as CI does: on ``jobs`` threads
    (None: the cores this process may use), each trace in its share of them
    (``docs/parallel.md``). Returns, per trace, its report (the one
    :func:`check` gives) or the :class:`~tracerace.errors.TraceError` that
    stopped its check. ``progress`` counts the rows of all of them;
    ``sinks``: one :class:`FindingSink` (or None) per trace. Bad options
    raise (rule ``usage``)."""
    options = make_options(engine=engine, max_reports=max_reports, select=select, ignore=ignore,
                           batch_size=batch_size)
    sources = list(sources)
    sinks = list(sinks) if sinks is not None else [None] * len(sources)
    jobs = _jobs(jobs)
    if options.engine != "numba":  # the definition: one trace after the other
        out: list[Report | TraceError] = []
        for source, sink in zip(sources, sinks):
            try:
                out.append(check(source, engine=options.engine, max_reports=max_reports,
                                 select=select, ignore=ignore, batch_size=batch_size,
                                 keep_findings=keep_findings, sink=sink))
            except TraceError as err:
                out.append(err)
        return out
    return _sharded(sources, options, jobs, keep_findings=keep_findings, progress=progress,
                    sinks=sinks)


def _jobs(jobs: int | None) -> int:
    from .checker.parallel import available_cores

    if jobs is None:
        return available_cores()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise usage(f"jobs must be a positive whole number, not {jobs!r}")
    return jobs


def _shards(source: Any, options: CheckOptions, jobs: int | None) -> int:
    """How many shards :func:`check` splits ``source`` into: ``jobs`` when
    given; by default, the cores for a large trace file, else one."""
    n = _jobs(jobs)
    if n == 1:
        return 1
    from .trace.reader import open_trace, reads_once

    path = isinstance(source, (str, os.PathLike)) and not reads_once(os.fspath(source))
    if jobs is not None:
        if options.engine != "numba":
            raise usage("jobs: the reference checker runs on one thread (it is the definition)")
        if not path:
            raise usage("jobs: only a trace file can be checked in shards (not a stream, "
                        "a pipe or a table)")
        return n
    if not path or options.engine != "numba":
        return 1
    from .checker.parallel import PARALLEL_MIN_ROWS

    try:
        with open_trace(source, batch_size=options.batch_size) as reader:
            rows = reader.meta.num_rows
    except TraceError:
        return 1  # the check itself says what is wrong
    return n if rows is not None and rows >= PARALLEL_MIN_ROWS else 1


def _sharded(sources: list[Any], options: CheckOptions, jobs: int, **kw: Any) -> list[Any]:
    from .checker.parallel import check_reports

    return check_reports(sources, options, jobs, **kw)


def validate(source: Any, *, engine: str = "numba",
             batch_size: int = DEFAULT_BATCH_SIZE) -> TraceMeta:
    """Check that ``source`` follows the trace format: every rule :func:`check`
    enforces, the reader's (each row on its own) and the replay's (launch
    order, barrier counts and order, waits without a signal, ...), by the same
    code: the trace is replayed and its findings are dropped. Returns the
    trace's metadata with ``num_rows`` set; raises
    :class:`~tracerace.errors.TraceError` where :func:`check` would."""
    options = make_options(engine=engine, batch_size=batch_size)
    result, meta = _replay(source, options, lambda meta: _drop, None)
    return replace(meta, num_rows=result.events)


def _drop(findings: np.ndarray) -> None:
    """A findings consumer that keeps nothing (``validate``)."""


def _replay(source: Any, options: CheckOptions,
            start: Callable[[TraceMeta], Callable[[np.ndarray], None]],
            progress: Progress | None) -> tuple[Any, TraceMeta]:
    """Open ``source`` and replay it through the options' engine; ``start(meta)``
    gives the consumer of the findings. Returns (the checker's result, meta)."""
    path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    try:
        from .checker.notice import CompileNotice
        from .trace.reader import decode_pool, open_trace

        with CompileNotice() as notice, decode_pool():
            reader = open_trace(source, batch_size=options.batch_size)
            try:
                on_findings = start(reader.meta)
                result = _run(functools.partial(CHECKERS[options.engine],
                                                on_findings=on_findings), reader, progress)
            finally:
                close = getattr(reader, "close", None)
                if close is not None:
                    close()
            if notice.compiled:
                _compile_the_rest(reader.meta)
    except TraceError as err:
        raise err.with_path(path) from None
    except MemoryError:
        raise out_of_memory(path) from None
    except OSError as err:
        if err.errno == errno.ENOMEM:
            raise out_of_memory(path) from None
        raise TraceError(err.strerror or str(err), path=path, rule="io") from None
    return result, reader.meta


def _compile_the_rest(meta: TraceMeta) -> None:
    """Compile the kernels that only findings run (handing them out, grouping
    them), after a check that compiled the others: the notice of that first run
    said compiling happens once, and a trace without findings would leave these
    to the first check that has some."""
    from .checker.engine.races import records
    from .checker.findings import FIELDS

    records(np.zeros((1, len(FIELDS)), dtype=np.int64))
    GroupBuilder(meta).compile_kernels()


def out_of_memory(path: str | None) -> TraceError:
    return TraceError("not enough memory to check this trace", path=path, rule="out-of-memory")


def _run(checker: Callable[..., Any], reader: Any, progress: Progress | None) -> Any:
    if progress is None:
        return checker(reader)
    total = reader.meta.num_rows
    progress(0, total)
    return checker(reader, progress=lambda rows_done: progress(rows_done, total))
