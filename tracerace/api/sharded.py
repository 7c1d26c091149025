"""Several traces, or one in shards, checked on a pool of threads and each
made a report: the shards and their merge are :mod:`tracerace.checker.parallel`'s,
the grouping and the report are a single check's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..checker.parallel import check_traces, shards_per_trace, trace_error


def check_reports(
    sources: Sequence[str],
    options: Any,
    jobs: int,
    *,
    keep_findings: bool = False,
    sinks: Sequence[Any] | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    shards: Sequence[int] | None = None,
    **engine_options: Any,
) -> list[Any]:
    """The report of each trace of ``sources`` (paths), checked in shards on
    ``jobs`` threads (:func:`check_traces`), or the
    :class:`~tracerace.errors.TraceError` that stopped it: what
    :func:`tracerace.api.check` gives for each, findings grouped as it groups
    them. ``sinks[t]`` (or None) takes trace ``t``'s findings as they come.
    ``progress(rows_done, total_rows)`` counts the rows of all the traces."""
    from ..checker.notice import CompileNotice
    from ..group.groups import GroupBuilder
    from ..report import Report
    from ..trace.reader import decode_pool, open_trace

    sinks = list(sinks) if sinks is not None else [None] * len(sources)
    if shards is None:
        shards = [shards_per_trace(jobs, len(sources))] * len(sources)
    results: list[Any] = [None] * len(sources)
    builders: dict[int, Any] = {}
    metas: dict[int, Any] = {}
    with CompileNotice(), decode_pool():
        for t, source in enumerate(sources):
            try:
                with open_trace(source, batch_size=options.batch_size) as reader:
                    metas[t] = reader.meta
                builders[t] = GroupBuilder(metas[t], options.kinds, keep_findings=keep_findings)
                if sinks[t] is not None:
                    sinks[t].open(metas[t])
            except Exception as err:  # noqa: BLE001 - the trace's result
                results[t] = trace_error(err, source)
        todo = [t for t in range(len(sources)) if results[t] is None]
        total = sum(metas[t].num_rows or 0 for t in todo)
        weights = {t: 1 / shards[t] for t in todo}
        counter = None
        if progress is not None:
            progress(0, total)
            counter = lambda rows: progress(round(rows), total)  # noqa: E731
        done = check_traces(
            [sources[t] for t in todo],
            jobs,
            [consumer(builders[t], sinks[t]) for t in todo],
            batch_size=options.batch_size,
            shards=[shards[t] for t in todo],
            progress=counter,
            weights=[weights[t] for t in todo],
            **engine_options,
        )
    for t, outcome in zip(todo, done):
        if isinstance(outcome, BaseException):
            results[t] = trace_error(outcome, sources[t])
        else:
            results[t] = Report(outcome, metas[t], builders[t].table(), options)
    return results


def consumer(builder: Any, sink: Any) -> Callable[[np.ndarray], None]:
    def on_findings(findings: np.ndarray) -> None:
        kept, groups = builder.add(findings)
        if sink is not None:
            sink.write(kept, groups)

    return on_findings
