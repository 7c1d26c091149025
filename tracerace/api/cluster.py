"""Checks on a Dask cluster: the shards of :mod:`tracerace.checker.parallel` as Dask
tasks (``pip install 'tracerace[dask]'``; ``docs/parallel.md``).

    from distributed import Client
    from tracerace.api.cluster import check_on_cluster

    reports = check_on_cluster(["s3://bucket/a.arrow", "/shared/b.arrow"],
                               Client("tcp://scheduler:8786"))

Each trace is given as a path or a pyarrow filesystem URI (``s3://``,
``gs://``, ``hdfs://``, ``file://``) that every worker can read: a worker
reads the trace itself, the client sends only the path. A task replays one
shard of one trace and returns its findings, batch by batch, as int64 rows;
the client merges them (:func:`tracerace.checker.parallel.merge_records`) and groups them
as a local check does, so each report is the one ``tracerace check`` gives.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..checker.options import DEFAULT_BATCH_SIZE, DEFAULT_MAX_REPORTS, make_options, usage
from ..errors import TraceError

DASK_CONNECT_TIMEOUT = 20.0
"""Seconds :func:`client_for` waits for a Dask scheduler to answer."""


def client_for(address: str, timeout: float | None = None) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address``, waiting at most
    ``timeout`` seconds for it (None: :data:`DASK_CONNECT_TIMEOUT`); a usage
    error when Dask is not installed, the address is not one, or the scheduler
    does not answer in time."""
    try:
        from distributed import Client
    except ImportError:
        raise usage("--dask needs Dask: pip install 'tracerace[dask]'") from None
    if timeout is None:
        timeout = DASK_CONNECT_TIMEOUT
    if not timeout > 0:
        raise usage(f"--dask-timeout must be a positive number of seconds, not {timeout:g}")
    try:
        return Client(address, timeout=timeout)
    except ValueError as err:  # an unknown scheme, a port that is not a number
        raise usage(
            f"--dask {address!r} is not a Dask scheduler address: {_one_line(err)}"
        ) from None
    except (OSError, TimeoutError) as err:
        raise usage(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s: {_one_line(err)}"
        ) from None


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def check_on_cluster(
    sources: Iterable[str],
    client: Any,
    *,
    engine: str = "numba",
    max_reports: int | str | None = DEFAULT_MAX_REPORTS,
    select: str | Iterable[str] | None = None,
    ignore: str | Iterable[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    shards: int | None = None,
    keep_findings: bool = False,
    sinks: Sequence[Any] | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    **engine_options: Any,
) -> list[Any]:
    """Check each trace of ``sources`` (paths or pyarrow filesystem URIs every
    worker of ``client``, a ``distributed.Client``, can read) in shards run as
    Dask tasks. ``shards``: per trace (default: the cluster's threads shared
    among the traces, at least one each). Returns per trace its
    :class:`~tracerace.report.Report`, the one :func:`tracerace.api.check`
    gives, or the :class:`~tracerace.errors.TraceError` that stopped it.
    ``progress(rows_done, total_rows)``: called as shards finish. ``sinks``:
    a findings sink (or None) per trace, as :func:`tracerace.api.check_many`.
    ``engine_options``: the engine's test options (``page_shift``, ...)."""
    from distributed import as_completed

    from ..checker.parallel import merge_records, shards_per_trace
    from ..group.groups import GroupBuilder
    from ..report import Report
    from .sharded import consumer

    options = make_options(
        engine=engine, max_reports=max_reports, select=select, ignore=ignore, batch_size=batch_size
    )
    if options.engine != "numba":
        raise usage("--dask: the reference checker runs on one thread (it is the definition)")
    sources = [os.fspath(s) for s in sources]
    sinks = list(sinks) if sinks is not None else [None] * len(sources)
    if shards is None:
        threads = sum(client.nthreads().values()) or 1
        shards = shards_per_trace(threads, len(sources))
    results: list[Any] = [None] * len(sources)
    metas = client.gather([client.submit(_meta_task, s, batch_size, pure=False) for s in sources])
    todo = []
    for t, meta in enumerate(metas):
        if isinstance(meta, tuple):
            results[t] = _error(meta, sources[t])
        else:
            todo.append(t)
    total = sum(metas[t].num_rows or 0 for t in todo)
    if progress is not None:
        progress(0, total)
    submitted = {}
    for t in todo:
        for k in range(shards):
            f = client.submit(
                _shard_task, sources[t], k, shards, batch_size, engine_options, pure=False
            )
            submitted[f.key] = (f, t, k)
    done_rows = 0.0
    parts: dict[tuple[int, int], Any] = {}
    for future in as_completed([f for f, _, _ in submitted.values()]):
        _, t, k = submitted[future.key]
        parts[t, k] = out = future.result()
        if progress is not None and not isinstance(out[0], str):
            done_rows += (metas[t].num_rows or 0) / shards
            progress(round(done_rows), total)
    for t in todo:
        outs = [parts[t, k] for k in range(shards)]
        failed = [o for o in outs if isinstance(o[0], str)]
        if failed:
            results[t] = _error(failed[0], sources[t])
            continue
        builder = GroupBuilder(metas[t], options.kinds, keep_findings=keep_findings)
        if sinks[t] is not None:
            sinks[t].open(metas[t])
        consume = consumer(builder, sinks[t])
        for i in range(len(outs[0][1])):
            consume(merge_records([o[1][i] for o in outs]))
        results[t] = Report(outs[0][0], metas[t], builder.table(), options)
    return results


def open_source(source: str, batch_size: int) -> Any:
    """A reader of ``source``: a path (memory-mapped by the reader), or a
    pyarrow filesystem URI, whose file is read through pyarrow."""
    from ..trace.reader import open_trace

    if "://" not in source or source.startswith("file://"):
        path = source[len("file://") :] if source.startswith("file://") else source
        return open_trace(path, batch_size=batch_size)
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    fs, path = pafs.FileSystem.from_uri(source)
    with fs.open_input_file(path) as f:
        head = f.read(6)
        f.seek(0)
        if head.startswith(b"PAR1"):
            table = pq.read_table(f)
        elif head == b"ARROW1":
            table = ipc.open_file(f).read_all()
        else:
            table = ipc.open_stream(f).read_all()
    if not isinstance(table, pa.Table):
        table = pa.Table.from_batches([table])
    return open_trace(table, batch_size=batch_size)


def _meta_task(source: str, batch_size: int) -> Any:
    """(On a worker.) The trace's metadata, or its error as a tuple."""
    try:
        with open_source(source, batch_size) as reader:
            return reader.meta
    except Exception as err:  # noqa: BLE001 - sent back as plain values
        return _sent(err, source)


def _shard_task(
    source: str, k: int, shards: int, batch_size: int, engine_options: dict
) -> tuple[Any, ...]:
    """(On a worker.) Shard ``k`` of ``shards`` of ``source``: (events, the
    findings rows of each batch), or its error as a tuple."""
    from ..checker.parallel import Cancelled, run_shard

    chunks: list[list[np.ndarray]] = []  # per batch, its rows in chunks
    released = task_released()

    def on_batch(i: int, rows: list[np.ndarray]) -> None:
        if released():
            raise Cancelled  # nobody waits for this shard any more
        chunks.append(rows)

    try:
        events = run_shard(
            lambda: open_source(source, batch_size),
            k,
            shards,
            on_batch,
            batch_size=batch_size,
            **engine_options,
        )
    except Exception as err:  # noqa: BLE001 - sent back as plain values
        return _sent(err, source)
    return events, chunks


def task_released() -> Callable[[], bool]:
    """(In a running task.) A test of whether the scheduler has let go of
    this task: its client left (a Ctrl-C on ``check --dask``) or cancelled
    it. Dask does not stop a running task, so a shard asks at every batch's
    end and stops instead of checking a trace for nobody."""
    from distributed import get_worker

    worker = get_worker()
    key = worker.get_current_task()

    def released() -> bool:
        task = worker.state.tasks.get(key)
        return task is None or task.state == "cancelled"

    return released


def _sent(err: Exception, source: str) -> tuple[Any, ...]:
    """An error as plain values (a TraceError's fields do not survive pickling)."""
    from ..checker.parallel import trace_error

    e = trace_error(err, source)
    return ("error", e.message, e.path, e.row, e.rule)


def _error(sent: tuple[Any, ...], source: str) -> TraceError:
    _, message, path, row, rule = sent
    return TraceError(message, path=path or source, row=row, rule=rule)
