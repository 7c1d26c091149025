"""The Python API: a :class:`Check` is one trace checked with one set of
options; :func:`check` runs one to its report, :func:`validate` replays a
trace to see that it follows the format. The CLI consumes a :class:`Check`.

A check is a pipeline: the trace is read a batch at a time, replayed by the
options' engine, its findings folded into groups as they are found
(:class:`~tracerace.group.groups.GroupBuilder`, so memory grows with the groups,
not with the findings), and the groups become a
:class:`~tracerace.report.Report`. Iterating a :class:`Check` hands over the
findings as they are found (:class:`Batch`: each with its group ids and how
far the replay has come), for an output that writes every finding and for a
progress bar; :meth:`Check.report` finishes the check and gives its report.

Options are validated first (:mod:`tracerace.checker.options`), before any trace is
read, and a bad one raises :class:`~tracerace.errors.TraceError` with rule
``usage``.
"""

from __future__ import annotations

import errno
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from ..checker.engine import check_trace as numba_check
from ..checker.findings import FINDING_DTYPE
from ..checker.options import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MAX_REPORTS,
    CheckOptions,
    make_options,
    usage,
)
from ..checker.reference import check_trace as reference_check
from ..errors import TraceError
from ..group.groups import GroupBuilder
from ..report import Report
from ..trace.meta import TraceMeta

__all__ = [
    "Batch",
    "Check",
    "FindingSink",
    "Progress",
    "check",
    "check_many",
    "make_options",
    "validate",
]

CHECKERS: dict[str, Callable[..., Any]] = {"numba": numba_check, "reference": reference_check}
"""Engine name (:data:`~tracerace.checker.options.ENGINES`) -> ``check_trace(reader, *,
progress=None, on_findings=None) -> CheckResult``. Both are imported with the
API: after NumPy and Numba, which the grouping needs anyway, the two modules
take about 0.1 s to import, most of it the one a check runs anyway (measured
with ``python -X importtime``; a whole ``tracerace check`` is no slower)."""

Progress = Callable[[int, "int | None"], None]
"""``progress(rows_done, total_rows)``: called with 0 before the replay starts, then
as it goes; ``total_rows`` is None for a stream of unknown length."""

_NO_FINDINGS = np.zeros(0, dtype=FINDING_DTYPE)
_NO_GROUPS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Batch:
    """What a check hands over as it goes (iterating a :class:`Check`).

    ``findings``: the ``FINDING_DTYPE`` records the kind filter kept since the
    last batch, in canonical order, and ``groups`` the group id of each (the
    ids of the report's groups). ``rows_done``: the trace's rows replayed so
    far. The first batch comes when the trace is open, before the replay:
    no findings, ``rows_done`` 0."""

    meta: TraceMeta
    findings: np.ndarray
    groups: np.ndarray
    rows_done: int

    @property
    def total_rows(self) -> int | None:
        """The trace's rows; None for a stream of unknown length."""
        return self.meta.num_rows


class FindingSink(Protocol):
    """Takes every finding a check keeps, as the checker finds them
    (:func:`check`'s ``sink``: the Arrow output's
    :class:`~tracerace.report.formats.arrowfmt.FindingsWriter`)."""

    def open(self, meta: TraceMeta) -> None:
        """The trace is open: its metadata."""

    def write(self, findings: np.ndarray, groups: np.ndarray) -> None:
        """A batch of ``FINDING_DTYPE`` records, in canonical order, and their group ids."""


class Check:
    """One trace checked with one set of options: the trace is read and
    replayed, its findings grouped, and the groups make the report.

    ``source``: a path (``.arrow``, ``.arrows``, ``.parquet``), a ``pa.Table``
    or a ``pa.RecordBatchReader``. ``options``: from :func:`make_options`
    (default: every kind, the numba engine). ``keep_findings``: the report
    keeps every finding (``Report.findings``), not only each group's first few.
    ``jobs``: threads to check on; more than one splits the trace (a file) into
    shards by the bytes each owns (``docs/parallel.md``), with the same findings,
    groups and report as one thread gives. None: the cores this process may use,
    for a trace large enough to gain from it.

    Two ways to run it, once:

    - ``for batch in check:`` hands over the findings as they are found
      (:class:`Batch`), then :meth:`report` gives the report;
    - :meth:`report` alone runs the whole check and gives the report.

    Nothing is read before either. Used as a context manager, leaving the
    block stops a check that is still running. Errors are
    :class:`~tracerace.errors.TraceError`, raised from the iteration or from
    :meth:`report`: the trace breaks the format, it cannot be read (rule
    ``io``), memory runs out (rule ``out-of-memory``).

    While batches are handed over, the replay runs in a worker thread that
    waits for the next ``next()``: the checker and the code that takes a
    batch never run at once, so a batch is handled as if the checker had
    called it back in place.
    """

    def __init__(
        self,
        source: Any,
        options: CheckOptions | None = None,
        *,
        keep_findings: bool = False,
        jobs: int | None = 1,
    ) -> None:
        self.source = source
        self.options = make_options() if options is None else options
        self.keep_findings = keep_findings
        self.jobs = jobs
        """Threads to check on (:func:`shards_for`); 1: this thread, no shards."""
        _jobs(jobs)  # a bad value is a usage error before anything is read
        self.meta: TraceMeta | None = None
        """The trace's metadata, once it is open."""
        self._batches: Iterator[Batch] | None = None
        self._started = False
        self._report: Report | None = None

    def __iter__(self) -> Iterator[Batch]:
        self._start()
        self._batches = self._relayed()
        return self._batches

    def report(self) -> Report:
        """The check's report; runs the check to its end first when needed."""
        if self._report is None:
            if not self._started:
                self._start()
                self._in_place()
            elif self._batches is not None:
                for _ in self._batches:
                    pass
        if self._report is None:
            raise RuntimeError("this check was stopped before it ended")
        return self._report

    def close(self) -> None:
        """Stop the check where it is (nothing, when it ended or never began)."""
        if self._batches is not None:
            self._batches.close()  # type: ignore[attr-defined]

    def __enter__(self) -> Check:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        if self._started:
            raise RuntimeError("a check runs once")
        self._started = True

    def _in_place(self) -> None:
        """The whole check in this thread: the checker calls the grouping back."""
        with _opened(self.source, self.options) as reader:
            self.meta = reader.meta
            builder = self._builder(reader.meta)
            result = self._checker(reader)(reader, on_findings=builder.add)
        self._finish(result.events, builder)

    def _relayed(self) -> Iterator[Batch]:
        with _opened(self.source, self.options) as reader:
            self.meta = meta = reader.meta
            builder = self._builder(meta)
            yield Batch(meta, _NO_FINDINGS, _NO_GROUPS, 0)
            relay = _Relay(meta, builder)
            worker = threading.Thread(
                target=relay.run,
                args=(self._checker(reader), reader),
                name="tracerace-check",
                daemon=True,
            )
            worker.start()
            try:
                yield from relay
            finally:
                relay.stop()
                worker.join()
        self._finish(relay.events, builder)

    def _checker(self, reader: Any) -> Callable[..., Any]:
        """The options' checker, or the sharded one when :func:`shards_for` says so."""
        shards = shards_for(self.source, self.options, self.jobs, reader.meta.num_rows)
        if shards == 1:
            return CHECKERS[self.options.engine]
        from ..checker.parallel import sharded_checker

        return sharded_checker(os.fspath(self.source), shards, self.options.batch_size)

    def _builder(self, meta: TraceMeta) -> GroupBuilder:
        return GroupBuilder(meta, self.options.kinds, keep_findings=self.keep_findings)

    def _finish(self, events: int, builder: GroupBuilder) -> None:
        assert self.meta is not None
        self._report = Report(events, self.meta, builder.table(), self.options)


class _Stop(BaseException):
    """Raised in the worker thread, from a checker's callback, when the
    consumer of the batches has stopped (a ``BaseException``, so that no
    ``except Exception`` in a checker holds it)."""


class _Relay:
    """A checker run in a worker thread, its callbacks handed over as
    :class:`Batch` es, one at a time: the worker waits in each callback until
    the consumer asks for the next batch. The findings of a replay batch and
    the progress after it make one :class:`Batch`."""

    _END = object()

    def __init__(self, meta: TraceMeta, builder: GroupBuilder) -> None:
        self._meta = meta
        self._builder = builder
        self._handed: queue.Queue[Any] = queue.Queue()
        self._next = threading.Semaphore(0)
        self._stopped = False
        self._held: Batch | None = None
        self._rows = 0
        self._error: BaseException | None = None
        self.events = 0
        """Rows the checker replayed (once it ended)."""

    # -- the worker's side

    def run(self, checker: Callable[..., Any], reader: Any) -> None:
        try:
            result = checker(reader, on_findings=self._found, progress=self._progressed)
            if self._held is not None:
                self._hand(self._held)
            self.events = result.events
        except _Stop:
            return
        except BaseException as err:  # handed to the consumer, raised there
            self._error = err
        self._handed.put(self._END)

    def _found(self, findings: np.ndarray) -> None:
        kept, groups = self._builder.add(findings)
        if self._held is not None:
            self._hand(self._held)
        self._held = Batch(self._meta, kept, groups, self._rows)

    def _progressed(self, rows_done: int) -> None:
        held, self._held = self._held, None
        self._rows = rows_done
        if held is None:
            self._hand(Batch(self._meta, _NO_FINDINGS, _NO_GROUPS, rows_done))
        else:
            self._hand(replace(held, rows_done=rows_done))

    def _hand(self, batch: Batch) -> None:
        # Several threads may hand over (a sharded check's shards, one at a
        # time), and ``stop`` releases one of them: the others see the flag.
        if self._stopped:
            raise _Stop
        self._handed.put(batch)
        while not self._next.acquire(timeout=0.05):
            if self._stopped:
                raise _Stop
        if self._stopped:
            raise _Stop

    # -- the consumer's side

    def __iter__(self) -> Iterator[Batch]:
        while True:
            item = self._handed.get()
            if item is self._END:
                if self._error is not None:
                    raise self._error
                return
            yield item
            item = None  # the batch's findings go before the checker makes the next
            self._next.release()

    def stop(self) -> None:
        """Have a worker still waiting for the consumer end (with :class:`_Stop`)."""
        self._stopped = True
        self._next.release()


@contextmanager
def _opened(source: Any, options: CheckOptions) -> Iterator[Any]:
    """``source`` open as a trace reader, for a replay by the options'
    engine; the errors of opening it and of the replay turned into
    :class:`~tracerace.errors.TraceError` naming ``source``."""
    path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    try:
        from ..checker.notice import CompileNotice
        from ..trace.reader import decode_pool, open_trace

        with CompileNotice() as notice, decode_pool():
            reader = open_trace(source, batch_size=options.batch_size)
            try:
                yield reader
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
    except RuntimeError as err:
        if not _no_thread(err):
            raise
        raise out_of_memory(path) from None
    except OSError as err:
        if err.errno == errno.ENOMEM:
            raise out_of_memory(path) from None
        raise TraceError(err.strerror or str(err), path=path, rule="io") from None


def check(
    source: Any,
    *,
    engine: str = "numba",
    max_reports: int | str | None = DEFAULT_MAX_REPORTS,
    select: str | Iterable[str] | None = None,
    ignore: str | Iterable[str] | None = None,
    progress: Progress | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    keep_findings: bool = False,
    sink: FindingSink | None = None,
    jobs: int | None = 1,
) -> Report:
    """Check a recorded trace for hazards: a :class:`Check` run to its report.

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
    is found (see :class:`FindingSink`). ``jobs``: threads (see :class:`Check`).

    Raises :class:`~tracerace.errors.TraceError` on bad options (rule
    ``usage``), on a trace that breaks the format, and when memory runs out
    (rule ``out-of-memory``).
    """
    options = make_options(
        engine=engine, max_reports=max_reports, select=select, ignore=ignore, batch_size=batch_size
    )
    if progress is not None and not callable(progress):
        raise usage(f"progress must be a function of (rows_done, total_rows), not {progress!r}")
    with Check(source, options, keep_findings=keep_findings, jobs=jobs) as run:
        if progress is None and sink is None:
            return run.report()
        for n, batch in enumerate(run):
            if progress is not None:
                progress(batch.rows_done, batch.total_rows)
            if sink is not None:
                if n == 0:
                    sink.open(batch.meta)
                sink.write(batch.findings, batch.groups)
        return run.report()


def check_many(
    sources: Iterable[Any],
    *,
    engine: str = "numba",
    max_reports: int | str | None = DEFAULT_MAX_REPORTS,
    select: str | Iterable[str] | None = None,
    ignore: str | Iterable[str] | None = None,
    progress: Progress | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    jobs: int | None = None,
    keep_findings: bool = False,
    sinks: Iterable[FindingSink | None] | None = None,
) -> list[Report | TraceError]:
    """Check several traces (paths) at once, as CI does: on ``jobs`` threads
    (None: the cores this process may use), each trace in its share of them
    (``docs/parallel.md``). Returns, per trace, its report (the one
    :func:`check` gives) or the :class:`~tracerace.errors.TraceError` that
    stopped its check. ``progress`` counts the rows of all of them;
    ``sinks``: one :class:`FindingSink` (or None) per trace. Bad options
    raise (rule ``usage``)."""
    options = make_options(
        engine=engine, max_reports=max_reports, select=select, ignore=ignore, batch_size=batch_size
    )
    sources = list(sources)
    sinks = list(sinks) if sinks is not None else [None] * len(sources)
    jobs = _jobs(jobs)
    if options.engine != "numba":  # the definition: one trace after the other
        out: list[Report | TraceError] = []
        for source, sink in zip(sources, sinks):
            try:
                out.append(
                    check(
                        source,
                        engine=options.engine,
                        max_reports=max_reports,
                        select=select,
                        ignore=ignore,
                        batch_size=batch_size,
                        keep_findings=keep_findings,
                        sink=sink,
                    )
                )
            except TraceError as err:
                out.append(err)
        return out
    return _sharded(
        sources, options, jobs, keep_findings=keep_findings, progress=progress, sinks=sinks
    )


def _jobs(jobs: int | None) -> int:
    from ..checker.parallel import available_cores

    if jobs is None:
        return available_cores()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise usage(f"jobs must be a positive whole number, not {jobs!r}")
    return jobs


def shards_for(source: Any, options: CheckOptions, jobs: int | None, rows: int | None) -> int:
    """How many shards a check of ``source`` (``rows`` rows) is split into:
    ``jobs`` when given; by default (None), the cores for a large trace file,
    else one."""
    n = _jobs(jobs)
    if n == 1:
        return 1
    from ..trace.reader import reads_once

    path = isinstance(source, (str, os.PathLike)) and not reads_once(os.fspath(source))
    if jobs is not None:
        if options.engine != "numba":
            raise usage("jobs: the reference checker runs on one thread (it is the definition)")
        if not path:
            raise usage(
                "jobs: only a trace file can be checked in shards (not a stream, a pipe or a table)"
            )
        return n
    if not path or options.engine != "numba":
        return 1
    from ..checker.parallel import PARALLEL_MIN_ROWS

    return n if rows is not None and rows >= PARALLEL_MIN_ROWS else 1


def _sharded(sources: list[Any], options: CheckOptions, jobs: int, **kw: Any) -> list[Any]:
    from .sharded import check_reports

    return check_reports(sources, options, jobs, **kw)


def validate(
    source: Any, *, engine: str = "numba", batch_size: int = DEFAULT_BATCH_SIZE
) -> TraceMeta:
    """Check that ``source`` follows the trace format: every rule :func:`check`
    enforces, the reader's (each row on its own) and the replay's (launch
    order, barrier counts and order, waits without a signal, ...), by the same
    code: the trace is replayed and its findings are dropped. Returns the
    trace's metadata with ``num_rows`` set; raises
    :class:`~tracerace.errors.TraceError` where :func:`check` would."""
    options = make_options(engine=engine, batch_size=batch_size)
    with _opened(source, options) as reader:
        result = CHECKERS[options.engine](reader, on_findings=_drop)
    return replace(reader.meta, num_rows=result.events)


def _drop(findings: np.ndarray) -> None:
    """A findings consumer that keeps nothing (``validate``)."""


def _compile_the_rest(meta: TraceMeta) -> None:
    """Compile the kernels that only findings run (handing them out, grouping
    them), after a check that compiled the others: the notice of that first run
    said compiling happens once, and a trace without findings would leave these
    to the first check that has some."""
    from ..checker.engine.races import records
    from ..checker.findings import FIELDS

    records(np.zeros((1, len(FIELDS)), dtype=np.int64))
    GroupBuilder(meta).compile_kernels()


def _no_thread(err: RuntimeError) -> bool:
    """Whether ``err`` is Python's refusal to start a thread (no memory for its
    stack: the shards' and the read-ahead's threads under a memory limit)."""
    return "can't start new thread" in str(err)


def out_of_memory(path: str | None) -> TraceError:
    return TraceError("not enough memory to check this trace", path=path, rule="out-of-memory")
