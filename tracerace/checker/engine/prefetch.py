"""Read ahead on a second core: batches are decoded while the engine replays.

The Numba engine releases the GIL (``nogil=True``), and pyarrow releases it
while it decompresses, so a thread that pulls batches from the reader runs
beside the replay. Order is kept: the consumer sees the batches, then the
reader's exception if it raised one, exactly as without the thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


def prefetch(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """Iterate ``items`` in a background thread, at most ``depth`` ahead.

    Leaving the loop early (an error in the consumer, ``break``) stops the
    thread and waits for it, so nothing reads the source after this returns:
    the caller may close the source right away.
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((True, item)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put((False, exc))
            return
        put((True, _DONE))

    worker = threading.Thread(target=produce, name="tracerace-read", daemon=True)
    worker.start()
    try:
        while True:
            ok, item = q.get()
            if not ok:
                raise item
            if item is _DONE:
                return
            yield item
    finally:
        stop.set()
        worker.join()
