"""The record pools the fold of findings writes into, and the thread that
faults their pages in ahead of it.

A pool (:class:`Records`) holds one kind of record (a group's state, a
locator: :mod:`tracerace.group.fold`) in a :class:`~tracerace.checker.engine.mapped.MappedArray`,
grown in place. :class:`Ahead` faults in, on a thread of its own, the pages the
next batch's new groups will take and the larger hash table the next growth
will rehash into (:class:`tracerace.group.groups.GroupBuilder` posts the job after
each batch).
"""

from __future__ import annotations

import threading

import numpy as np

from ..checker.engine.mapped import MappedArray, can_populate


class Records:
    """Records of ``dtype`` in a MappedArray of int64 rows: grown in place."""

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype
        self._pool = MappedArray(0, dtype.itemsize // 8)

    @property
    def array(self) -> np.ndarray:
        return self._pool.array.view(self.dtype).reshape(-1)

    def room(self, rows: int, used: int) -> None:
        have = self._pool.array.shape[0]
        if rows > have:
            self._pool.grow(max(rows, 2 * have), used)

    @property
    def populated(self) -> int:
        return self._pool.populated

    def populate(self, stop: int) -> bool:
        return self._pool.populate(stop)


# A batch that made fewer new groups than this is not worth working ahead for.
AHEAD_MIN = 1 << 12
# Bytes faulted in per call (the pool is locked meanwhile).
AHEAD_CHUNK = 1 << 20
# A thread with nothing to do for this long ends.
AHEAD_IDLE_SECONDS = 1.0


class Ahead:
    """Faults in, on a thread of its own, the memory the next batch's new groups
    will take while the checker replays that batch (the fold runs between
    batches, on the replay's thread): the records, and the larger hash table
    the next growth will rehash into. On a machine that clears fresh pages
    slowly, their page faults cost the fold as much as its own work
    (bench/README.md, the racy rows). The next batch is guessed to be like
    the last. The fold's thread does not wait for this one (at most for the
    chunk it is faulting in, when a pool must grow meanwhile): faulting a
    page in never changes what it holds, and a table not ready in time is
    made by the fold's thread as without this, so a wrong guess or a late
    thread costs memory or time, never an answer."""

    def __init__(self, pools: tuple[Records, ...], min_new: int = AHEAD_MIN) -> None:
        self._pools = pools
        self._min_new = min_new  # fewer new groups in a batch: no work ahead
        self._cv = threading.Condition()
        self._job: tuple | None = None  # posted, not yet taken by the worker
        self._busy = False  # a job posted and not finished
        self._closing = False
        self._worker: threading.Thread | None = None  # while it runs
        self._spare: MappedArray | None = None  # a table, faulted in
        self.spares_used = 0  # tables the fold's thread took (for tests and curiosity)

    def after(self, used: tuple[int, ...], grown: tuple[int, ...], slots: int, have: int) -> None:
        """The pools hold ``used`` records, ``grown`` of them new with the last
        batch; the next batch will likely need a table of ``slots`` slots (it
        has ``have``)."""
        if grown[0] < self._min_new or self._busy or self._closing or not can_populate():
            return
        stops = [u + 2 * d for u, d in zip(used, grown)]
        for pool, u, stop in zip(self._pools, used, stops):
            pool.room(stop, u)  # address space, on this thread: no race with the fold
        with self._cv:
            spare = self._spare
            table = slots if slots > have and (spare is None or spare.capacity < slots) else 0
            self._busy = True
            self._job = (table, stops)
            if self._worker is not None:
                self._cv.notify()
                return
            # One thread while batches keep coming (starting one waits until
            # it runs, which takes a while on a busy machine).
            self._worker = threading.Thread(
                target=self._serve, name="tracerace-groups-ahead", daemon=True
            )
            try:
                self._worker.start()
            except RuntimeError:  # no thread to be had (a memory limit, say): do without
                self._worker = None
                self._job = None
                self._busy = False
                self._closing = True

    def spare(self, slots: int) -> np.ndarray | None:
        """A zeroed, faulted-in table of at least ``slots`` slots, if one is ready."""
        with self._cv:
            spare = self._spare
            if spare is None or spare.capacity < slots:
                return None
            self._spare = None
        self.spares_used += 1
        return spare.array.view(np.uint64)

    def _serve(self) -> None:
        while True:
            with self._cv:
                # Idle for a while (a check that raised, say): the thread ends.
                ready = self._cv.wait_for(
                    lambda: self._job is not None or self._closing, timeout=AHEAD_IDLE_SECONDS
                )
                if not ready or self._closing:
                    self._worker = None
                    self._job = None
                    self._busy = False
                    return
                job, self._job = self._job, None
            try:
                self._run(*job)
            except Exception:  # a head start only: never the check's problem
                pass
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()

    def _run(self, slots: int, stops: list[int]) -> None:
        if slots:
            table = MappedArray(slots)
            _populate(table, slots, 8)
            with self._cv:
                self._spare = table
        for pool, stop in zip(self._pools, stops):
            _populate(pool, stop, pool.dtype.itemsize)

    def wait(self) -> None:
        """Until the job posted last is done (tests: to know what it made)."""
        with self._cv:
            self._cv.wait_for(lambda: not self._busy)

    def stop(self) -> None:
        """Lets the thread end (after the job under way: it changes no record)."""
        with self._cv:
            self._closing = True
            self._cv.notify()
        self._spare = None


def _populate(pool: Records | MappedArray, stop: int, row_bytes: int) -> None:
    """Faults in ``pool``'s rows up to ``stop``, a chunk at a time (the pool is
    locked meanwhile, and the fold's thread may need it to grow)."""
    rows = max(1, AHEAD_CHUNK // row_bytes)
    while pool.populate(min(stop, pool.populated + rows)):
        pass
