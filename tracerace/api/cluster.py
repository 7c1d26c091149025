"""Checks on a Dask cluster: the shards of :mod:`tracerace.checker.parallel` as Dask
tasks (``pip install 'tracerace[dask]'``; ``docs/parallel.md``).

    from distributed import Client
    from tracerace.api.cluster import check_on_cluster

    reports = check_on_cluster(["s3://bucket/a.arrow", "/shared/b.arrow"],
                               Client("tcp://scheduler:8786"))

Each trace is given as a path or a pyarrow filesystem URI (``s3://``,
``gs://``, ``hdfs://``, ``file://``) that every worker can read: a worker
reads the trace itself, the client sends only the path. A task replays one
shard of one trace and hands over its findings as it goes, a few batches at
a time (int64 rows kept on its worker, their futures put into a Dask queue
of bounded length: :class:`_TraceStream`); the client merges each batch
(:func:`tracerace.checker.parallel.merge_records`) once every shard has handed it over and
groups the findings as a local check does, so each report is the one
``tracerace check`` gives, and memory follows the live findings.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..checker.options import DEFAULT_BATCH_SIZE, DEFAULT_MAX_REPORTS, make_options, usage
from ..errors import TraceError

DASK_CONNECT_TIMEOUT = 20.0
"""Seconds :func:`client_for` waits for a Dask scheduler to answer."""


QUEUE_ITEMS = 2
"""Hand-overs a shard's Dask queue holds; a shard with a full queue waits
for the client (out of its worker's thread pool) before it goes on."""

HAND_BYTES = 16 << 20
"""A shard hands over its findings once it holds this many bytes of them
(int64 rows), or once a second has passed, whichever is first."""

HAND_SECONDS = 1.0
POLL_SECONDS = 0.05
"""How long the client, or a shard waiting for room, sleeps between two
looks at a Dask queue (a get or put that times out misbehaves: see
:func:`_put` and :meth:`_TraceStream._merge`)."""


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
    queue_items: int = QUEUE_ITEMS,
    hand_bytes: int = HAND_BYTES,
    **engine_options: Any,
) -> list[Any]:
    """Check each trace of ``sources`` (paths or pyarrow filesystem URIs every
    worker of ``client``, a ``distributed.Client``, can read) in shards run as
    Dask tasks. ``shards``: per trace (default: the cluster's threads shared
    among the traces, at least one each). Returns per trace its
    :class:`~tracerace.report.Report`, the one :func:`tracerace.api.check`
    gives, or the :class:`~tracerace.errors.TraceError` that stopped it.
    ``progress(rows_done, total_rows)``: called as the shards hand over.
    ``sinks``: a findings sink (or None) per trace, as
    :func:`tracerace.api.check_many`. ``queue_items`` and ``hand_bytes``: how
    the shards hand over their findings (:data:`QUEUE_ITEMS`,
    :data:`HAND_BYTES`). ``engine_options``: the engine's test options
    (``page_shift``, ...)."""
    from ..checker.parallel import Progress, shards_per_trace

    options = make_options(
        engine=engine, max_reports=max_reports, select=select, ignore=ignore, batch_size=batch_size
    )
    if options.engine != "numba":
        raise usage("--dask: the reference checker runs on one thread (it is the definition)")
    if queue_items < 1 or hand_bytes < 0:
        raise usage("queue_items must be at least 1 and hand_bytes at least 0")
    sources = [os.fspath(s) for s in sources]
    sinks = list(sinks) if sinks is not None else [None] * len(sources)
    threads = sum(client.nthreads().values()) or 1
    if shards is None:
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
    counter = Progress(None if progress is None else lambda rows: progress(round(rows), total))
    stop = threading.Event()
    hand = (batch_size, engine_options, hand_bytes)

    def one(t: int) -> Any:
        return _TraceStream(client, sources[t], shards, queue_items, hand, stop).run(
            metas[t],
            options,
            keep_findings,
            sinks[t],
            [counter.part(t, k, 1 / shards) for k in range(shards)],
        )

    # The traces in flight at once: as many as have all their shards running
    # on the cluster's threads, so that no shard waits on one that has no thread
    # (a shard that must wait secedes from its worker's pool all the same).
    at_once = max(1, min(len(todo), threads // shards))
    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="tracerace-dask") as pool:
        try:
            for t, result in zip(todo, pool.map(one, todo)):
                results[t] = result
        except BaseException:
            stop.set()  # Ctrl-C: the trace threads stop at their next poll
            pool.shutdown(wait=True, cancel_futures=True)  # and no other starts
            raise
    return results


class _TraceStream:
    """One trace's shards as Dask tasks, their findings streamed to the client.

    Shard ``k`` hands over its findings, a few batches at a time, as the
    future of data it keeps on its own worker, put into a Dask queue of
    ``queue_items`` items (``tracerace-<id>-<k>``); the client takes them in
    batch order and merges batch ``i`` of every shard once each has handed it
    over. So the client holds at most a hand-over per shard and a worker its
    queue's: memory follows the live findings, not all a trace's findings."""

    def __init__(
        self,
        client: Any,
        source: str,
        shards: int,
        queue_items: int,
        hand: tuple[int, dict, int],
        stop: threading.Event,
    ) -> None:
        self.client, self.source, self.shards = client, source, shards
        self.queue_items, self.hand, self.stop = queue_items, hand, stop

    def run(self, meta: Any, options: Any, keep_findings: bool, sink: Any, moved: list) -> Any:
        """The trace's report, or its error; ``moved[k]`` (or None): shard
        ``k``'s progress, given the rows it has replayed."""
        import uuid

        from distributed import Queue

        from ..group.groups import GroupBuilder
        from ..report import Report
        from .sharded import consumer

        name = f"tracerace-{uuid.uuid4().hex}"
        queues = [
            Queue(f"{name}-{k}", client=self.client, maxsize=self.queue_items)
            for k in range(self.shards)
        ]
        batch_size, engine_options, hand_bytes = self.hand
        futures = [
            self.client.submit(
                _shard_task,
                self.source,
                k,
                self.shards,
                batch_size,
                engine_options,
                queues[k].name,
                self.queue_items,
                hand_bytes,
                pure=False,
            )
            for k in range(self.shards)
        ]
        try:
            builder = GroupBuilder(meta, options.kinds, keep_findings=keep_findings)
            if sink is not None:
                sink.open(meta)
            outcome = self._merge(queues, futures, consumer(builder, sink), moved)
        finally:
            self.client.cancel([f for f in futures if not f.done()])
            for q in queues:
                q.close()
        if isinstance(outcome, tuple):
            return _error(outcome, self.source)
        return Report(outcome, meta, builder.table(), options)

    def _merge(self, queues: list, futures: list, consume: Any, moved: list) -> Any:
        """The trace's events, or the first error in shard order; each batch
        merged into ``consume`` once every shard has handed it over."""
        import time

        from ..checker.parallel import merge_records

        held: list[deque] = [deque() for _ in queues]  # per shard, batches not merged
        taken = [0] * len(queues)  # per shard, the batches it has handed over
        ended = [False] * len(queues)
        failed = False  # a shard failed: the others' hand-overs are only drained
        events = turn = 0
        while True:
            while not failed and all(held):
                consume(merge_records([h.popleft() for h in held]))
            waiting = [k for k, h in enumerate(held) if not ended[k] and (failed or not h)]
            if not waiting:
                break
            if self.stop.is_set():
                raise KeyboardInterrupt
            k = waiting[turn % len(waiting)] if failed else waiting[0]
            turn += 1
            # A get that times out logs an error on the scheduler: the queue
            # is looked at first instead (this is its one consumer).
            if queues[k].qsize() == 0:
                if not futures[k].done():
                    time.sleep(POLL_SECONDS)
                elif isinstance(futures[k].result(), tuple):  # raises what a task raised
                    failed = ended[k] = True
                elif failed:
                    ended[k] = True
                elif queues[k].qsize() == 0:  # its last put came before its end: look again
                    raise RuntimeError(f"shard {k} ended without its last hand-over")
                continue
            item = queues[k].get()
            first, batches, rows, last = item.result()
            del item  # the worker lets go of the data
            # A task Dask ran again (its worker died) hands over from batch 0.
            fresh = batches[taken[k] - first :] if taken[k] > first else batches
            taken[k] = max(taken[k], first + len(batches))
            if not failed:
                held[k].extend(fresh)
            if moved[k] is not None:
                moved[k](rows)
            if last:
                ended[k] = True
                events = rows
        for f in futures:
            out = f.result()
            if isinstance(out, tuple):
                return out
        if any(held):
            raise RuntimeError("the shards of a trace handed over different numbers of batches")
        return events


def open_source(source: str, batch_size: int) -> Any:
    """A reader of ``source``: a path (memory-mapped by the reader), or a
    pyarrow filesystem URI, whose file is read through pyarrow a batch at a
    time (:func:`~tracerace.trace.reader.open_filesystem_trace`)."""
    from ..trace.reader import open_filesystem_trace, open_trace

    if "://" not in source or source.startswith("file://"):
        path = source[len("file://") :] if source.startswith("file://") else source
        return open_trace(path, batch_size=batch_size)
    import pyarrow as pa
    import pyarrow.fs as pafs

    try:
        fs, path = pafs.FileSystem.from_uri(source)
    except (pa.ArrowException, ValueError, OSError) as err:
        raise TraceError(f"cannot open: {_one_line(err)}", path=source, rule="unreadable") from None
    return open_filesystem_trace(fs, path, batch_size=batch_size, name=source)


def _meta_task(source: str, batch_size: int) -> Any:
    """(On a worker.) The trace's metadata, or its error as a tuple."""
    try:
        with open_source(source, batch_size) as reader:
            return reader.meta
    except Exception as err:  # noqa: BLE001 - sent back as plain values
        return _sent(err, source)


def _shard_task(
    source: str,
    k: int,
    shards: int,
    batch_size: int,
    engine_options: dict,
    queue: str,
    items: int,
    hand: int,
) -> Any:
    """(On a worker.) Shard ``k`` of ``shards`` of ``source``, its findings
    handed over through the Dask queue ``queue`` (of at most ``items``) as
    futures of (the index of the first batch, the int64 rows of each batch
    since the last hand-over, the rows replayed, whether it is the last). Returns
    the events, or its error as a tuple."""
    import time

    from distributed import Queue, get_client, get_worker

    from ..checker.parallel import Cancelled, Found, run_shard

    client = get_client()
    out = Queue(queue, client=client)
    here = [get_worker().address]
    released = task_released()
    pending: list[list[Found]] = []  # per batch, its findings in chunks
    state = {"first": 0, "bytes": 0, "rows": 0, "since": time.monotonic()}

    def hand_over(last: bool) -> None:
        [item] = client.scatter(
            [(state["first"], pending.copy(), state["rows"], last)], workers=here, hash=False
        )
        state["first"] += len(pending)
        pending.clear()
        state["bytes"], state["since"] = 0, time.monotonic()
        _put(out, items, item, released)

    def on_batch(i: int, rows: list[Found]) -> None:
        if released():
            raise Cancelled  # nobody waits for this shard any more
        pending.append(rows)
        state["bytes"] += sum(chunk.nbytes for chunk in rows)

    def batch_done(rows: int) -> None:
        state["rows"] = rows
        if state["bytes"] >= hand or time.monotonic() - state["since"] >= HAND_SECONDS:
            hand_over(False)

    try:
        events = run_shard(
            lambda: open_source(source, batch_size),
            k,
            shards,
            on_batch,
            batch_size=batch_size,
            progress=batch_done,
            **engine_options,
        )
        state["rows"] = events
        hand_over(True)
    except Exception as err:  # noqa: BLE001 - sent back as plain values
        return _sent(err, source)
    finally:
        # The scheduler drops a queue, and lets go of the hand-overs still in
        # it (a check that stopped early), once every handle is closed.
        out.close()
    return events


def _put(queue: Any, items: int, item: Any, released: Callable[[], bool]) -> None:
    """Put ``item`` into ``queue`` (of at most ``items``; this shard is its one
    producer) once it has room, waiting meanwhile out of the worker's thread
    pool, so that a shard the client waits for can have the thread; stop
    with :class:`Cancelled` once nobody wants this shard any more. (A put
    that times out would leave its key held by the queue for ever: room is
    looked for first instead.)"""
    import time

    from distributed import rejoin, secede

    from ..checker.parallel import Cancelled

    if queue.qsize() >= items:
        secede()
        try:
            while queue.qsize() >= items:
                if released():
                    raise Cancelled
                time.sleep(POLL_SECONDS)
        finally:
            rejoin()
    queue.put(item)


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
