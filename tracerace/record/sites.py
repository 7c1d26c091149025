"""Source sites as recorders name them: one index per distinct text, and the
paths of the user's source files.

:class:`SiteIndex` numbers site texts in first-use order with one dictionary
lookup per text, whatever the number of sites; a converter whose sites start
from a side table (the Oclgrind plugin's, which may name one text twice)
keeps the table's indexes, and a text it adds later gets the index of its
first occurrence. :func:`shown_path` and :func:`library_roots` say which
frames of a Python program are the user's and how a site names their file.
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Callable, Hashable


class SiteIndex:
    """Site texts by index (:attr:`texts`, what a trace's ``tracerace.sites``
    holds) and indexes by text."""

    def __init__(self, texts: list[str] | None = None) -> None:
        self.texts: list[str] = [] if texts is None else texts
        """The texts in index order; grows as :meth:`add` meets new texts."""
        self._index: dict[str, int] = {}
        for i, text in enumerate(self.texts):
            self._index.setdefault(text, i)
        self._memo: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return len(self.texts)

    def add(self, text: str) -> int:
        """The index of ``text``: its first occurrence, appended when new."""
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.texts)
            self.texts.append(text)
        return index

    def of(self, key: Hashable, text: Callable[[], str]) -> int:
        """The index of the site ``key`` names (a pc, a frame position): ``text()``
        is asked once per key."""
        index = self._memo.get(key)
        if index is None:
            index = self._memo[key] = self.add(text())
        return index

    def text(self, index: int) -> str:
        return self.texts[index]


def shown_path(name: str, library: tuple[str, ...], cwd: str) -> str | None:
    """How a site names source file ``name``: relative to ``cwd`` when inside
    it, else absolute; None for library code and ``<string>``-like names."""
    if name.startswith("<"):
        return None
    path = os.path.abspath(name)
    if path.startswith(library):
        return None
    return os.path.relpath(path, cwd) if path.startswith(os.path.join(cwd, "")) else path


def library_roots() -> tuple[str, ...]:
    """Folders whose code is never the user's: the standard library, installed
    packages and tracerace itself."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return tuple(os.path.join(os.path.abspath(r), "") for r in sorted(roots))
