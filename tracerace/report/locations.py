"""Bytes named as a kernel engineer reads them: the element of a declared buffer
(``out[1, 2]``), element slices (``out[3, 0:64]``), or the raw byte range
(``shared[block 3] 0x1a0..0x1a4``). The report names a finding's bytes and a
group's byte ranges with these; ``tracerace.report.arrow_report`` words whole columns
the same way (these are the definition).
"""

from __future__ import annotations

import numpy as np

from ..trace.meta import Buffer, TraceMeta
from ..trace.ops import Space

BYTES_KEY = ("space", "owner", "addr", "size", "launch")
"""The fields that say which bytes a finding is about (the arguments of :func:`locate`)."""


def space_name(space: int) -> str:
    try:
        return Space(space).name.lower()
    except ValueError:
        return f"space{space}"


def byte_range(space: int, owner: int, addr: int, size: int) -> str:
    """``shared[block 3] 0x1a0..0x1a4``: the bytes ``[addr, addr + size)``."""
    if space == Space.SHARED:
        where = f"shared[block {owner}]"
    elif space == Space.LOCAL:
        where = f"local[thread {owner}]"
    else:
        where = space_name(space)
    return f"{where} 0x{addr:x}..0x{addr + size:x}"


def locate(
    meta: TraceMeta, space: int, owner: int, addr: int, size: int, launch: int
) -> tuple[str | None, str | None]:
    """(element, location) of a finding's bytes.

    ``element`` names the tensor element holding the first byte (``out[1, 2]``)
    when a buffer declares it; ``location`` is the element span
    (``out[1, 2]..out[1, 5]``) or else the raw byte range. Both are None for a
    finding without bytes (barriers, sync objects).
    """
    if size == 0:
        return None, None
    element = meta.describe_bytes(space, addr, launch)
    if element is None:
        return None, byte_range(space, owner, addr, size)
    last = meta.describe_bytes(space, addr + size - 1, launch) if size > 1 else None
    if last is not None and last != element:
        return element, f"{element}..{last}"
    return element, element


def _row_major(buf: Buffer) -> bool:
    strides = buf.element_strides
    expect, acc = [], 1
    for dim in reversed(buf.shape):
        expect.append(acc)
        acc *= dim
    return tuple(strides) == tuple(reversed(expect))


def element_range(buf: Buffer, lo: int, end: int) -> str | None:
    """The elements holding bytes ``[lo, end)`` of ``buf`` as NumPy-style slices:
    ``out[3, 0:64]``, ``ring[0:8, :]``, ``x[5]``; None when the bytes are not in
    ``buf`` or are no such block of a row-major buffer."""
    first = buf.element_index(lo)
    last = buf.element_index(end - 1)
    if first is None or last is None:
        return None
    if first == last:
        return f"{buf.name}[{', '.join(map(str, first))}]"
    if not _row_major(buf):
        return None
    n = len(first)
    p = next(i for i in range(n) if first[i] != last[i])
    rest = range(p + 1, n)
    if not all(first[i] == 0 and last[i] == buf.shape[i] - 1 for i in rest):
        return None
    parts = [str(first[i]) for i in range(p)] + [f"{first[p]}:{last[p] + 1}"]
    parts += [":"] * len(rest)
    return f"{buf.name}[{', '.join(parts)}]"


def name_range(
    meta: TraceMeta, space: int, owner: int, lo: int, end: int, launch: int | None
) -> str:
    """Bytes ``[lo, end)`` named as compactly as the trace allows: an element or
    element slices (:func:`element_range`), ``first..last`` elements, or the raw
    byte range."""
    for buf in meta.buffers:
        if buf.contains(space, lo, launch):
            text = element_range(buf, lo, end)
            if text is not None:
                return text
            break
    first = meta.describe_bytes(space, lo, launch)
    if first is None:
        return byte_range(space, owner, lo, end - lo)
    last = meta.describe_bytes(space, end - 1, launch) if end - lo > 1 else None
    return first if last is None or last == first else f"{first}..{last}"


def merge_ranges(locators: np.ndarray) -> list[tuple[int, int, int, int, int | None]]:
    """(space, owner, lo, end, launch) of the byte ranges of ``locators``
    (``LOCATOR_DTYPE``) with adjacent and overlapping ranges of the same memory
    merged, in the order their first range was found. Ranges in a declared
    buffer (``named``) merge across owners, as the report names them by element."""
    runs: dict[tuple, list[list[int]]] = {}
    order: list[tuple] = []
    cols = [
        locators[name].tolist()
        for name in ("space", "owner", "addr", "size", "launch", "row", "named")
    ]
    for space, owner, addr, size, launch, row, named in zip(*cols):
        if size == 0:
            continue
        key = (space, 0, launch) if named else (space, owner, None)
        if key not in runs:
            runs[key] = []
            order.append(key)
        runs[key].append([addr, addr + size, row])
    if len(order) == 1 and len(runs[order[0]]) == 1:  # most groups: one range
        space, owner, launch = order[0]
        ((lo, end, _),) = runs[order[0]]
        return [(space, owner, lo, end, launch)]
    out = []
    for key in order:
        merged: list[list[int]] = []
        for lo, end, row in sorted(runs[key]):
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
                merged[-1][2] = min(merged[-1][2], row)
            else:
                merged.append([lo, end, row])
        space, owner, launch = key
        out += [(row, space, owner, lo, end, launch) for lo, end, row in merged]
    out.sort(key=lambda r: r[0])
    return [r[1:] for r in out]


def locate_all(
    findings: np.ndarray, meta: TraceMeta, indices: np.ndarray | None = None
) -> list[tuple[str | None, str | None]]:
    """:func:`locate` for each finding (or those at ``indices``), once per distinct bytes."""
    if indices is not None:
        findings = findings[indices]
    memo: dict[tuple[int, ...], tuple[str | None, str | None]] = {}
    cols = [findings[name].tolist() for name in BYTES_KEY]
    out = []
    for key in zip(*cols):
        if key not in memo:
            memo[key] = locate(meta, *key)
        out.append(memo[key])
    return out
