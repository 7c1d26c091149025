"""What an importer of a GPU tracer's output provides, and the registry that
detection walks.

An importer is one tracer's format. It says whether a path is its own, by the
path's name (:meth:`Importer.claims`) or, for a file no name claims, by one of
its first lines (:meth:`Importer.claims_line`), and it reads the file into a
trace writer (:meth:`Importer.read`). :data:`IMPORTERS` lists them in the
order detection asks them; adding a format is one class and one entry there.
STD text and v1 containers are not importers: :mod:`tracerace.convert` tells
them by extension.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import NamedTuple

from ..errors import TraceError

SNIFF_LINES = 64
"""How many first lines of a file no name claims detection reads."""
NOT_SNIFFED = (".arrow", ".arrows", ".parquet", ".feather", ".std")
"""Extensions detection never reads for a GPU format: v1 containers and STD text."""


class Imported(NamedTuple):
    """What :meth:`Importer.read` read."""

    kernels: list
    """One :class:`~.gpu.kernel.KernelInfo` per launch, in launch order."""
    records: int
    """Records of the input (lines, JSON objects) that became events."""
    order: str
    """The replay order the import chose (``recorded``, ``warp``, ...)."""


class Importer(ABC):
    """One GPU tracer's output format."""

    name: str
    """What ``--from`` names it, and the ``format`` of ``tracerace.import``."""

    def claims(self, path: str) -> bool:
        """Whether ``path`` is this format's by its name (a folder: its files' names)."""
        return False

    def claims_line(self, text: str) -> bool:
        """Whether ``text``, one of the first lines of a file, is this format's."""
        return False

    @abstractmethod
    def read(self, path: str, writer, emitter, options, notes) -> Imported:
        """Import ``path`` through ``emitter`` (a :class:`~.gpu.emit.Emitter`: the
        rows) and ``writer`` (sites, metadata); ``options`` are the
        :class:`~.gpu.ImportOptions`, ``notes`` (:class:`~.gpu.kernel.Notes`)
        collects what the format did not record. A record it cannot follow raises
        :class:`TraceError` naming the file, line and rule."""


class Registry:
    """Importers in the order detection asks them."""

    def __init__(self, importers: tuple[Importer, ...]) -> None:
        names = [i.name for i in importers]
        if len(set(names)) != len(names):
            raise ValueError(f"two importers share a name: {names}")
        self.importers = importers
        self._by_name = {i.name: i for i in importers}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def get(self, name: str) -> Importer:
        """The importer ``--from name`` names; a ``usage`` error for another name."""
        try:
            return self._by_name[name]
        except KeyError:
            raise TraceError(
                f"unknown input format {name!r} (GPU formats: {', '.join(self.names)})",
                path="options",
                rule="usage",
            ) from None

    def detect(self, path: str, lines) -> Importer | None:
        """The importer of ``path``, or None (a v1 container, STD text, another
        file): first by name, then by its first :data:`SNIFF_LINES` lines
        (``lines(path)`` yields ``(lineno, text)``; a file it cannot read is
        nobody's)."""
        for importer in self.importers:
            if importer.claims(path):
                return importer
        if path.lower().endswith(NOT_SNIFFED) or not os.path.isfile(path):
            return None
        try:
            for lineno, text in lines(path):
                for importer in self.importers:
                    if importer.claims_line(text):
                        return importer
                if lineno >= SNIFF_LINES:
                    break
        except TraceError:
            return None
        return None
