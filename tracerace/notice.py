"""A one-line notice on stderr while Numba compiles the checker's kernels.

The first check on a machine compiles the engine (about half a minute); later runs
load the kernels from Numba's on-disk cache in about a second. Without a word
the first run looks hung. :class:`CompileNotice` listens to Numba's
``numba:compile`` event, which Numba raises only for a real compilation (a
kernel loaded from the cache raises none), and prints :data:`NOTICE` once, at
the first compilation of a function of this package.
"""

from __future__ import annotations

import sys
from typing import IO, Any

NOTICE = "tracerace: compiling checker kernels, first run only, ~30 s"

_shown = False
"""The notice was printed by this process (it is said once per process)."""


class CompileNotice:
    """``with CompileNotice():`` prints :data:`NOTICE` to ``stream`` (default
    stderr) when a function whose module starts with ``prefix`` is compiled
    inside the block; once per process unless ``once`` is False."""

    def __init__(self, stream: IO[str] | None = None, prefix: str = "tracerace.",
                 once: bool = True) -> None:
        self.stream = stream
        self.prefix = prefix
        self.once = once
        self.shown = False
        self._listener: Any = None

    def _on_start(self, event: Any) -> None:
        global _shown
        if self.shown or (self.once and _shown):
            return
        data = event.data or {}
        dispatcher = data.get("dispatcher") if isinstance(data, dict) else None
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if not module.startswith(self.prefix):
            return
        self.shown = _shown = True
        stream = self.stream if self.stream is not None else sys.stderr
        print(NOTICE, file=stream, flush=True)

    def __enter__(self) -> "CompileNotice":
        from numba.core import event

        notice = self

        class _Listener(event.Listener):
            def on_start(self, ev: Any) -> None:
                notice._on_start(ev)

            def on_end(self, ev: Any) -> None:
                pass

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc: object) -> None:
        from numba.core import event

        if self._listener is not None:
            event.unregister("numba:compile", self._listener)
            self._listener = None
