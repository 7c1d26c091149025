"""A one-line notice on stderr while Numba compiles the checker's kernels.

The first check on a machine compiles the engine (about half a minute); later runs
load the kernels from Numba's on-disk cache in about a second. Without a word
the first run looks hung. :class:`CompileNotice` listens to Numba's
``numba:compile`` event, which Numba raises only for a real compilation (a
kernel loaded from the cache raises none), and prints :data:`NOTICE` at the
first compilation of a function of this package.

It says it once per cache of kernels, not once per run: the engine compiles
some kernels only when a trace needs them (growing its hash tables, say), and
those take a second or two, not the half minute the notice announced. So the
notice is remembered beside the cached kernels (:data:`SAID`, holding the
digest of the sources the kernels were compiled from: when the sources change,
the kernels are dropped and compiled again, and the notice is said again).
The API also compiles, after a run that compiled, the kernels that only
findings run (handing them out, grouping them), which a clean first trace
would otherwise leave to the first check with findings
(:attr:`CompileNotice.compiled`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, Any

NOTICE = "tracerace: compiling checker kernels, first run only, ~30 s"

SAID = "tracerace-notice.sha256"
"""Beside the cached kernels: the sources' digest (``jit.drop_stale_kernels``'s
stamp) of the kernels the notice was said for."""
_STAMP = "tracerace-sources.sha256"

_shown = False
"""The notice was printed by this process (it is said once per process)."""


class CompileNotice:
    """``with CompileNotice():`` prints :data:`NOTICE` to ``stream`` (default
    stderr) when a function whose module starts with ``prefix`` is compiled
    inside the block; once per process and per cache of kernels (see the
    module doc) unless ``once`` is False."""

    def __init__(
        self, stream: IO[str] | None = None, prefix: str = "tracerace.", once: bool = True
    ) -> None:
        self.stream = stream
        self.prefix = prefix
        self.once = once
        self.shown = False
        self.compiled = False
        """A function of this package was compiled inside the block."""
        self._listener: Any = None

    def _on_start(self, event: Any) -> None:
        global _shown
        if self.shown:
            return
        data = event.data or {}
        dispatcher = data.get("dispatcher") if isinstance(data, dict) else None
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if not module.startswith(self.prefix):
            return
        self.compiled = True
        if self.once and (_shown or _said_for(_cache_dir())):
            return
        self.shown = _shown = True
        stream = self.stream if self.stream is not None else sys.stderr
        print(NOTICE, file=stream, flush=True)
        if self.once:
            _remember(_cache_dir())

    def __enter__(self) -> CompileNotice:
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


def _cache_dir() -> Path | None:
    """The folder of the engine's cached kernels (None: this Numba hides it)."""
    from .jit import kernel_cache_dirs

    dirs = kernel_cache_dirs()
    return dirs[0] if dirs else None


def _said_for(folder: Path | None) -> bool:
    """Whether the notice was said for the kernels cached in ``folder`` now."""
    if folder is None:
        return False
    try:
        stamp = (folder / _STAMP).read_text()
        return bool(stamp) and (folder / SAID).read_text() == stamp
    except OSError:
        return False


def _remember(folder: Path | None) -> None:
    """Note in ``folder`` that the notice was said for its kernels (a read-only
    cache: Numba caches nothing there either, and the notice is said again)."""
    if folder is None:
        return
    try:
        (folder / SAID).write_text((folder / _STAMP).read_text())
    except OSError:
        pass
