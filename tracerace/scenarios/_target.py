"""Where a scenario writes: a path (a writer of our own) or a caller's TraceWriter."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from ..trace.writer import TraceWriter

WRITER_BATCH = 1 << 18
"""Record batch rows of the files scenarios write: large batches read and write faster."""


@contextmanager
def open_writer(target, producer: str) -> Iterator[TraceWriter]:
    """A writer for ``target``. A path gets a writer (uncompressed Arrow IPC file,
    or what the suffix says) that is closed, making the file appear, on success
    and aborted on error. A ``TraceWriter`` (any format or compression) is used
    as is and left open for its owner; it should hold no events yet, since
    the scenario numbers its launches from 0."""
    if isinstance(target, TraceWriter):
        yield target
        return
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"write a scenario to a path or a TraceWriter, not {type(target).__name__}")
    with TraceWriter(target, producer=producer, batch_size=WRITER_BATCH) as writer:
        yield writer


def register_sites(writer: TraceWriter, sites: Mapping[str, str]) -> dict[str, int]:
    """Each site's index in ``writer`` (a shared writer may already hold others)."""
    return {name: writer.site(text) for name, text in sites.items()}
