"""The thread that faults in the pages of the engine's memory-mapped pools
ahead of the replay (how far: :mod:`.pools`)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .mapped import can_populate

if TYPE_CHECKING:
    from .state import EngineState


class Faulter:
    """A thread that faults in the engine's pools ahead of the replay.

    On some machines the first write to a page costs far more than the work
    done on it (this VM: ~3 ms per MB, a third or more of a check at 10^7
    events), and the replay writes fresh node rows all the time. The read
    thread leaves the second core partly idle, so this thread populates the
    rows the replay will take next (``MappedArray.populate``: the contents
    stay as they are, so it never races with the replay's writes). Without
    kernel support it stops at once. ``start`` it once the check is long
    enough to profit; leaving the ``with`` block stops it.
    """

    def __init__(self, st: EngineState) -> None:
        self._st = st
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tracerace-fault", daemon=True)
        self._started = False

    def start(self) -> None:
        """Start the thread; later calls do nothing (the thread may have
        ended already: no kernel support)."""
        if not self._started:
            self._started = True
            self._thread.start()

    def __enter__(self) -> Faulter:
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._started:
            self._thread.join()

    def _run(self) -> None:
        st = self._st
        while can_populate() and not self._stop.is_set():
            try:
                if not st.prefault():
                    self._stop.wait(0.002)
            except Exception:  # a hint only: never the check's problem
                return
