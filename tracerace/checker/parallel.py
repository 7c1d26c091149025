"""One trace checked by several engine states side by side, and several traces
at once (``docs/parallel.md``).

A shard (:func:`run_shard`) is a whole replay of the trace by a state that
owns some of the bytes (:mod:`tracerace.checker.engine.shards`): every shard replays
every synchronization event, and checks only the accesses, or the parts of
accesses, whose bytes it owns. The shards of a trace hand over their findings
per batch, as records with the rank of the earlier access (:class:`Found`); a
:class:`Merger` joins batch ``i`` of every shard into the findings a single
check hands over for batch ``i`` (:func:`merge_records`) and passes them on in
batch order, so grouping and every report see what a single check gives them.

:func:`check_shards` runs the shards of one trace, :func:`check_traces` the
shards of many, on a thread pool: the replay kernels release the GIL, so the
threads share one compiled engine and the trace file's mapped pages.
:mod:`tracerace.api.cluster` runs the same shards as Dask tasks.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from ..trace import ops as O
from .engine import check_trace
from .engine.layout import F_RANK
from .engine.races import records
from .findings import FINDING_DTYPE, empty_findings

MEMORY_KINDS = np.array(
    [O.K_RAW, O.K_WAR, O.K_WAW, O.K_UNINIT_READ, O.K_ASYNC_INFLIGHT, O.K_PROXY_FENCE]
)
"""The kinds a shard finds only for its own bytes; every shard finds the others."""

HOLD_BYTES = 16 << 20
"""The findings a :class:`Merger` in step holds for shards that are ahead
before it makes the next one wait."""

PARALLEL_MIN_ROWS = 1 << 20
"""With the default number of jobs, a trace of fewer rows is checked by one
state: below this a check takes about a second, less than starting shards."""


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


class Found(NamedTuple):
    """Findings a shard hands over: ``FINDING_DTYPE`` records, and per record
    the rank of its earlier access (``layout.F_RANK``), which merging needs.
    :func:`found_of` makes them on the shard's thread from the engine's int64
    rows as soon as its pool is emptied: a record is 135 bytes, a row 240,
    and a merger holds a batch's findings until every shard has handed it
    over (``bench/README.md``, "Findings handed over as records")."""

    records: np.ndarray
    rank: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.records.nbytes + self.rank.nbytes


def found_of(rows: np.ndarray) -> Found:
    """:class:`Found` of the engine's int64 rows (``layout.F_*``, with F_RANK)."""
    return Found(records(rows), rows[:, F_RANK].astype(np.int8))


def merge_records(parts: list[list[Found]]) -> np.ndarray:
    """The findings (``FINDING_DTYPE`` records) that one check makes for a
    stretch of the replay, from those that shards ``0..n-1`` made for it,
    each shard's in chunks (``parts[k]``). ``parts`` is emptied: the chunks
    are freed once joined, where the caller keeps no other reference to them.

    Every shard finds what is not about memory: shard 0's are kept. A race
    is kept per (row, kind) as one check keeps it, the candidate of highest
    (earlier row, rank): its bytes are the overlap of the two whole accesses
    in every shard that found it. An uninitialized read spans the first to
    the last uninitialized byte of all shards."""
    first = sum(chunk.records.shape[0] for chunk in parts[0])
    chunks = [chunk for part in parts for chunk in part]
    shards = len(parts)
    for part in parts:
        part.clear()
    parts.clear()
    if not chunks:
        return empty_findings()
    if shards == 1:
        if len(chunks) == 1:
            return chunks[0].records
        pieces = [c.records.view(np.uint8).reshape(-1, FINDING_DTYPE.itemsize) for c in chunks]
        return np.concatenate(pieces).view(FINDING_DTYPE).reshape(-1)

    # The fields that decide, joined; the records are gathered once, chunk by
    # chunk, into the answer (a batch of a read-once kernel holds a finding
    # per row, and each whole copy of them costs that much).
    def joined(field: str) -> np.ndarray:
        return np.concatenate([c.records[field] for c in chunks])

    row, kind = joined("row"), joined("kind")
    memory = np.isin(kind, MEMORY_KINDS)
    keep = ~memory
    keep[first:] = False  # what is not about memory: shard 0's
    uninit = memory & (kind == O.K_UNINIT_READ)
    races = np.flatnonzero(memory & ~uninit)
    if races.shape[0]:
        rank = np.concatenate([c.rank for c in chunks])
        races = races[np.lexsort((rank[races], joined("prev_row")[races], kind[races], row[races]))]
        last = np.ones(races.shape[0], bool)
        r, k = row[races], kind[races]
        last[:-1] = (r[1:] != r[:-1]) | (k[1:] != k[:-1])
        keep[races[last]] = True
    uninit = np.flatnonzero(uninit)
    if uninit.shape[0]:
        # Kept: the first of each row's (by address), spanning to the last byte of all.
        addr = joined("addr")[uninit]
        order = np.lexsort((addr, row[uninit]))
        uninit, addr = uninit[order], addr[order]
        r = row[uninit]
        start = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
        end = np.maximum.reduceat(addr + joined("size")[uninit], start)
        uninit = uninit[start]
        keep[uninit] = True
        span = np.zeros(kind.shape[0], np.uint64)
        span[uninit] = end
    # In canonical order (row, kind; each shard's chunks are), which the
    # grouping would otherwise sort again; gathered as raw bytes (NumPy
    # copies records field by field, several times slower).
    taken = np.flatnonzero(keep)
    taken = taken[np.argsort((row[taken] << 8) | kind[taken], kind="stable")]
    merged = np.empty(taken.shape[0], FINDING_DTYPE)
    raw = merged.view(np.uint8).reshape(taken.shape[0], FINDING_DTYPE.itemsize)
    base = 0
    chunks.reverse()
    while chunks:
        chunk = chunks.pop()  # freed once gathered from
        n = chunk.records.shape[0]
        at = np.flatnonzero((taken >= base) & (taken < base + n))
        whole = chunk.records.view(np.uint8).reshape(n, FINDING_DTYPE.itemsize)
        raw[at] = whole[taken[at] - base]
        base += n
    if uninit.shape[0]:
        spans = span[taken]
        wide = np.flatnonzero(spans)
        merged["size"][wide] = spans[wide] - merged["addr"][wide]
    return merged


class Merger:
    """Joins the shards' findings of one trace batch by batch and hands each
    batch's merged findings (``FINDING_DTYPE`` records) to ``consume`` in
    batch order. Shards may call :meth:`add` from any thread.

    ``in_step``: every shard runs on a thread of its own at once (a shared
    reader's shards). A shard whose findings would bring those the merger
    holds past ``hold`` bytes then hands over batch ``i`` only once every
    batch before it is merged, waiting meanwhile: a shard that ran ahead
    would hold the findings of each batch it is ahead by (a read-once kernel:
    a quarter of a GB per batch), while shards with few findings keep the
    slack that evens out their pace. It cannot wait for ever: the shards
    behind it already have the batches they need (a shared reader hands
    each batch to every shard before the next), and when a shard ends in an
    error :meth:`stop` lets every shard on without waiting, so that each
    hands over what it found before the error, as a single check does."""

    def __init__(
        self,
        shards: int,
        consume: Callable[[np.ndarray], None],
        in_step: bool = False,
        hold: int = HOLD_BYTES,
    ) -> None:
        self.shards = shards
        self.consume = consume
        self._parts: dict[int, list[list[Found] | None]] = {}
        self._next = 0
        self._in_step = in_step
        self._hold = hold
        self._held = 0  # bytes of the findings in _parts
        self._stopped = False
        self._lock = threading.Condition()

    def stop(self) -> None:
        """No shard waits to hand over from now on (those waiting go on)."""
        with self._lock:
            self._stopped = True
            self._lock.notify_all()

    def add(self, shard: int, index: int, chunks: list[Found]) -> None:
        """Shard ``shard``'s findings of batch ``index``, in chunks (the list
        is the merger's from now on)."""
        size = sum(chunk.nbytes for chunk in chunks)
        with self._lock:
            while (
                self._in_step
                and self._next < index
                and self._held + size > self._hold
                and not self._stopped
            ):
                self._lock.wait()
            slot = self._parts.setdefault(index, [None] * self.shards)
            slot[shard] = chunks
            self._held += size
            while self._next in self._parts and all(p is not None for p in self._parts[self._next]):
                parts = [part or [] for part in self._parts.pop(self._next)]
                self._held -= sum(chunk.nbytes for part in parts for chunk in part)
                found = merge_records(parts)
                del parts
                self.consume(found)
                self._next += 1
                self._lock.notify_all()


def run_shard(
    source: Any,
    shard: int,
    shards: int,
    on_batch: Callable[[int, list[Found]], None],
    *,
    batch_size: int,
    progress: Callable[[int], None] | None = None,
    **engine_options: Any,
) -> int:
    """Replay ``source`` as shard ``shard`` of ``shards`` (its own reader over
    the file; ``source`` may also be a function that opens a fresh reader
    each call); ``on_batch(i, chunks)`` gets the findings of batch ``i`` (in
    chunks, :class:`Found`) and, last, those the end of the trace makes. Returns the
    events replayed.
    ``engine_options``: ``check_trace``'s test options (``page_shift``, ...)."""
    from ..trace.reader import open_trace

    pending: list[Found] = []
    index = 0

    def flush() -> None:
        nonlocal index
        chunks = pending.copy()
        pending.clear()
        on_batch(index, chunks)
        index += 1

    def batch_done(events: int) -> None:  # after each batch's findings
        flush()
        if progress is not None:
            progress(events)

    reader = source() if callable(source) else open_trace(source, batch_size=batch_size)
    try:
        result = check_trace(
            reader,
            shard=(shard, shards),
            raw=True,
            on_findings=lambda rows: pending.append(found_of(rows)),
            progress=batch_done,
            **engine_options,
        )
    finally:
        close = getattr(reader, "close", None)
        if close is not None:
            close()
    flush()
    return result.events


def check_shards(
    source: Any,
    shards: int,
    on_findings: Callable[[np.ndarray], None],
    *,
    batch_size: int,
    pool: Executor | None = None,
    shared_reader: bool = False,
    progress: Callable[[float], None] | None = None,
    **engine_options: Any,
) -> int:
    """Check the trace at ``source`` (a path, or a function that opens a
    fresh reader) in ``shards`` shards on ``pool`` (None: one after the
    other, on this thread), handing ``on_findings`` the findings a single
    check would, batch by batch. ``shared_reader``: the shards replay the
    batches of one :class:`SharedReader` (``pool`` must run every shard at
    once); else each reads the trace itself. ``progress(rows)``: the rows
    replayed by all shards together. Returns the trace's events."""
    shared = None
    in_step = shared_reader and pool is not None and shards > 1
    merger = Merger(shards, on_findings, in_step=in_step)
    counter = Progress(progress)
    if in_step:
        from ..trace.reader import open_trace

        shared = SharedReader(
            source() if callable(source) else open_trace(source, batch_size=batch_size), shards
        )
    tasks = [
        _shard_task(
            source if shared is None else shared.view(k),
            k,
            shards,
            merger,
            counter.part(0, k),
            batch_size,
            engine_options,
        )
        for k in range(shards)
    ]
    if pool is None:
        events = [task() for task in tasks]
    else:
        futures: list[Future] = []
        try:
            if shared is not None:
                shared.start()
            for task in tasks:
                futures.append(pool.submit(task))
            events = [f.result() for f in _first_error(futures)]
        finally:
            if shared is not None:
                # Also where a shard's thread or the reader's could not start
                # (a memory limit): the shards already waiting for batches
                # are told the reader stopped, and end.
                shared.close()
            merger.stop()  # a shard waiting to hand over a batch, the same
            for f in futures:
                f.exception()
    return events[0]


class SharedReader:
    """One reader of a trace for all of its shards: a thread reads each batch
    (its columns converted and its rows checked, ``TraceReader``) once and
    hands the same read-only batch to every shard, each through a queue of
    ``depth`` batches; :meth:`view` is shard ``k``'s reader. Without it every
    shard's own reader converts and checks every row, a per-row cost paid
    once per shard (``docs/parallel.md``, cost model).

    Every shard must run at the same time (a shard that waits for a thread
    while the others fill its queue would stop them all), so only a pool
    with a thread per shard uses it (:func:`check_shards`). A shard whose
    replay stopped closes its view and gets no more batches. An error of
    the reader is raised by every view where the reader raised it, after the
    batches before it, as each shard's own reader would."""

    def __init__(self, reader: Any, shards: int, depth: int = 2) -> None:
        self.reader = reader
        self.meta = reader.meta
        self.rows = reader.rows
        self.rows.keep()  # before the thread reads the first batch
        self._queues: list[queue.Queue] = [queue.Queue(maxsize=depth) for _ in range(shards)]
        self._open = [True] * shards
        self._stop = threading.Event()
        self._first = threading.Event()  # the first batch read, or the end
        self._thread = threading.Thread(target=self._read, name="tracerace-reader", daemon=True)

    def start(self) -> None:
        """Start the thread and wait until it has read the first batch (or
        met the end or an error), before the shards allocate their state.
        Reading a batch allocates thread-local data in libraries pyarrow
        loads, and under a memory limit (``ulimit -v``) a thread that cannot
        get it ends the process, which no ``except`` can turn into the
        one-line out-of-memory error."""
        self._thread.start()
        self._first.wait()

    def view(self, shard: int) -> Callable[[], _SharedView]:
        return lambda: _SharedView(self, shard)

    def close(self) -> None:
        """Stop the thread and close the reader. A shard still waiting for a
        batch then raises :class:`ReaderStopped`."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        close = getattr(self.reader, "close", None)
        if close is not None:
            close()

    def _read(self) -> None:
        try:
            for batch in self.reader:
                if self._stop.is_set() or not any(self._open):
                    return  # every shard stopped: nothing more to read
                for k in range(len(self._queues)):
                    self._put(k, (True, batch))
                self._first.set()
            last: tuple[bool, Any] = (True, None)
        except BaseException as err:  # noqa: BLE001 - raised by every shard's view
            last = (False, err)
        finally:
            self._first.set()
        for k in range(len(self._queues)):
            self._put(k, last)

    def _put(self, k: int, item: tuple[bool, Any]) -> None:
        while self._open[k] and not self._stop.is_set():
            try:
                self._queues[k].put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def _batches(self, k: int) -> Any:
        while True:
            try:
                ok, item = self._queues[k].get(timeout=0.05)
            except queue.Empty:
                if self._stop.is_set():
                    raise ReaderStopped from None
                continue
            if not ok:
                raise item
            if item is None:
                return
            yield item


class Cancelled(Exception):
    """Raised in a shard whose caller stopped waiting: a shard of
    :func:`check_traces` after Ctrl-C or a stop signal, a Dask shard whose
    client left (``api.cluster.task_released``)."""


class ReaderStopped(Exception):
    """Raised in a shard that waits for a batch of a :class:`SharedReader`
    that was closed first: the check stopped for another reason (another
    shard's error, or a thread that could not start), which is the one
    raised to the caller."""


class _SharedView:
    """Shard ``k``'s reader of a :class:`SharedReader`: its batches, once."""

    def __init__(self, shared: SharedReader, k: int) -> None:
        self.meta = shared.meta
        self.rows = shared.rows
        self._shared = shared
        self._k = k

    def __iter__(self) -> Any:
        return self._shared._batches(self._k)

    def close(self) -> None:
        self._shared._open[self._k] = False


class ShardedResult:
    """What :func:`sharded_checker`'s checker returns: the events replayed."""

    def __init__(self, events: int) -> None:
        self.events = events


def sharded_checker(path: str, shards: int, batch_size: int) -> Callable[..., ShardedResult]:
    """A checker with the engine's shape (``checker(reader, *, on_findings,
    progress=None)``) that checks the trace at ``path`` in ``shards`` shards on
    as many threads (:func:`check_shards`; ``reader``, opened by the caller,
    is the trace's header). The callbacks come one at a time, from whichever
    shard thread got there, and ``progress`` counts the trace's rows (each
    shard's share of them)."""

    def run(
        reader: Any,
        *,
        on_findings: Callable[[np.ndarray], None],
        progress: Callable[[int], None] | None = None,
    ) -> ShardedResult:
        lock = threading.Lock()

        def found(findings: np.ndarray) -> None:
            with lock:
                on_findings(findings)

        def moved(rows: float) -> None:
            with lock:
                progress(round(rows / shards))  # type: ignore[misc]

        with ThreadPoolExecutor(max_workers=shards, thread_name_prefix="tracerace-shard") as pool:
            events = check_shards(
                path,
                shards,
                found,
                batch_size=batch_size,
                pool=pool,
                shared_reader=True,  # the pool has a thread per shard
                progress=None if progress is None else moved,
            )
        return ShardedResult(events)

    return run


def _shard_task(source, k, shards, merger, progress, batch_size, engine_options, cancelled=None):
    """Shard ``k``'s replay as a pool's task; once ``cancelled`` is set it
    stops at its next batch's end with :class:`Cancelled`."""

    def hand_over(i: int, chunks: list[Found]) -> None:
        if cancelled is not None and cancelled.is_set():
            raise Cancelled
        merger.add(k, i, chunks)

    def task() -> int:
        try:
            return run_shard(
                source,
                k,
                shards,
                hand_over,
                batch_size=batch_size,
                progress=progress,
                **engine_options,
            )
        except BaseException:
            merger.stop()  # no shard waits for this one's findings
            raise

    return task


def _first_error(futures: list[Future]) -> list[Future]:
    """``futures`` once all are done; the error of the one that failed first
    in shard order is raised (every shard of a trace meets the same bad row),
    a shard's :class:`ReaderStopped` only when no shard has another."""
    errors = [f.exception() for f in futures]
    for err in sorted(
        (e for e in errors if e is not None), key=lambda e: isinstance(e, ReaderStopped)
    ):
        raise err
    return futures


class Progress:
    """Sums the rows of many shards for one ``progress(rows)`` callback, a
    shard's rows weighted (``1 / shards``: the trace's rows over its shards)."""

    def __init__(self, progress: Callable[[float], None] | None) -> None:
        self.progress = progress
        self.done: dict[tuple[int, int], float] = {}
        self.lock = threading.Lock()

    def part(self, trace: int, shard: int, weight: float = 1.0) -> Callable[[int], None] | None:
        report = self.progress
        if report is None:
            return None

        def update(rows: int) -> None:
            with self.lock:  # one call at a time: the counts only grow
                self.done[trace, shard] = rows * weight
                report(sum(self.done.values()))

        return update


def shards_per_trace(jobs: int, traces: int) -> int:
    """The shards each of ``traces`` traces gets from ``jobs`` workers: all of
    them for one trace; with several, each trace a share, at least one."""
    return max(1, jobs // max(1, traces))


def check_traces(
    sources: Sequence[Any],
    jobs: int,
    consumers: Sequence[Callable[[np.ndarray], None]],
    *,
    batch_size: int,
    shards: Sequence[int] | None = None,
    progress: Callable[[float], None] | None = None,
    weights: Sequence[float] | None = None,
    **engine_options: Any,
) -> list[int | BaseException]:
    """Check every trace of ``sources`` (paths) on a pool of ``jobs`` threads,
    trace ``t`` in ``shards[t]`` shards (default :func:`shards_per_trace`),
    its findings handed to ``consumers[t]`` as a single check hands them.
    ``progress(rows)``: the rows replayed by every shard of every trace,
    trace ``t``'s weighted by ``weights[t]`` (default 1). Returns per trace
    its events, or the error that stopped it."""
    if shards is None:
        shards = [shards_per_trace(jobs, len(sources))] * len(sources)
    if weights is None:
        weights = [1.0] * len(sources)
    counter = Progress(progress)
    cancelled = threading.Event()
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="tracerace-shard") as pool:
        try:
            futures = []
            for t, (source, n, consume) in enumerate(zip(sources, shards, consumers)):
                merger = Merger(n, consume)
                futures.append(
                    [
                        pool.submit(
                            _shard_task(
                                source,
                                k,
                                n,
                                merger,
                                counter.part(t, k, weights[t]),
                                batch_size,
                                engine_options,
                                cancelled,
                            )
                        )
                        for k in range(n)
                    ]
                )
            out: list[int | BaseException] = []
            for per_trace in futures:
                try:
                    out.append(_first_error(per_trace)[0].result())
                except Exception as err:  # noqa: BLE001 - handed to the caller per trace
                    out.append(err)
        except BaseException:
            # Ctrl-C or a stop signal while waiting: the shards that run stop
            # at their next batch's end and the others never start, instead
            # of the pool checking every trace to its end first.
            cancelled.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return out


def trace_error(err: BaseException, source: Any) -> Any:
    """``err`` as the one-line :class:`~tracerace.errors.TraceError` a check
    of ``source`` raises (bad input, memory, IO); anything else is raised."""
    import errno

    from ..errors import TraceError

    path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    if isinstance(err, TraceError):
        return err.with_path(path)
    if isinstance(err, MemoryError) or (isinstance(err, OSError) and err.errno == errno.ENOMEM):
        return TraceError("not enough memory to check this trace", path=path, rule="out-of-memory")
    if isinstance(err, OSError):
        return TraceError(err.strerror or str(err), path=path, rule="io")
    raise err
