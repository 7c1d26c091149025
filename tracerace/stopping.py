"""Stop signals: SIGTERM and SIGHUP end tracerace as Ctrl-C does, leaving no
output half-written.

The command line turns them into :class:`Stopped`, raised where Python was,
so every output being written is discarded on the way out (the ``finally``
and ``except BaseException`` blocks that Ctrl-C's ``KeyboardInterrupt`` runs),
then ends the process by the same signal (:func:`end_by`), so that its parent
sees how it ended. A recorded program's process cannot unwind that way (the
program may catch anything): it discards its trace writer and ends at once
(:func:`discard_on_stop`).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""The signals that stop tracerace (those this system has)."""


class Stopped(BaseException):
    """A stop signal arrived; a ``BaseException``, as ``KeyboardInterrupt`` is, so
    that only cleanup code sees it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def raise_on_stop() -> None:
    """From now on a stop signal raises :class:`Stopped` (once: a second signal
    while cleaning up is ignored, so the cleaning up finishes)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise)


def _raise(signum: int, frame: object) -> None:
    for other in STOP_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    raise Stopped(signum)


def discard_on_stop(discard: Callable[[], None]) -> None:
    """From now on a stop signal calls ``discard()`` and ends the process by it."""

    def handler(signum: int, frame: object) -> None:
        for other in STOP_SIGNALS:
            signal.signal(other, signal.SIG_IGN)
        try:
            discard()
        finally:
            end_by(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, handler)


def end_by(signum: int) -> None:
    """End this process by ``signum`` itself (its default action)."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # where the signal does not end the process
