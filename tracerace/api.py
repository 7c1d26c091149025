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
          keep_findings: bool = False, sink: FindingSink | None = None) -> Report:
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

    Raises :class:`~tracerace.errors.TraceError` on bad options (rule
    ``usage``), on a trace that breaks the format, and when memory runs out
    (rule ``out-of-memory``).
    """
    options = make_options(engine=engine, max_reports=max_reports, select=select, ignore=ignore,
                           batch_size=batch_size)
    if progress is not None and not callable(progress):
        raise usage(f"progress must be a function of (rows_done, total_rows), not {progress!r}")
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
