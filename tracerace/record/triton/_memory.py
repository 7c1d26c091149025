"""Memory as the ``triton`` backend records it: torch storages at virtual addresses.

A Triton kernel under the interpreter reads and writes the real memory of its
tensor arguments (CPU tensors: the interpreter's "copy to the host" keeps
their storages). Real addresses change from run to run and the same program
must give the same trace, so :class:`StorageMap` gives each storage the next
free *virtual* range in order of first use, and :class:`LaunchMemory`
translates a launch's real addresses into them, refusing any address outside
its tensor arguments.

A storage is known by its Python object: torch keeps one object per storage
for as long as the storage lives, so a weak reference to it dies exactly when
the memory is freed, and a new storage that reuses the address gets a new
range. Two storage objects over the same memory (``torch.from_numpy(t.numpy())``)
share one range: the later one is placed inside the earlier one.

Byte sets (what the host left uninitialized) are :class:`Intervals`.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

GLOBAL_BASE = 1 << 32
"""The first virtual global address (far from 0, so a stray 0 stands out)."""
GLOBAL_ALIGN = 256


class RecordError(Exception):
    """The recorder cannot follow what the program did; the recording fails."""


# --- byte sets -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Intervals:
    """A set of byte offsets as sorted, disjoint, non-adjacent ``[start, end)`` runs."""

    starts: np.ndarray  # int64
    ends: np.ndarray  # int64

    @classmethod
    def span(cls, start: int, end: int) -> Intervals:
        if end <= start:
            return EMPTY
        return cls(np.array([start], dtype=np.int64), np.array([end], dtype=np.int64))

    @classmethod
    def of_elements(cls, offsets: np.ndarray, itemsize: int) -> Intervals:
        """The bytes of elements of ``itemsize`` bytes at ``offsets`` (any order)."""
        starts = np.unique(np.asarray(offsets, dtype=np.int64))
        if starts.size == 0:
            return EMPTY
        ends = starts + itemsize
        new_run = np.concatenate(([True], starts[1:] > ends[:-1]))
        last = np.concatenate((new_run[1:], [True]))
        return cls(starts[new_run], ends[last])

    def __bool__(self) -> bool:
        return bool(self.starts.size)

    def minus(self, other: Intervals) -> Intervals:
        return _combine(self, other, lambda a, b: a & ~b)

    def intersect(self, other: Intervals) -> Intervals:
        return _combine(self, other, lambda a, b: a & b)

    def complement_in(self, start: int, end: int) -> Intervals:
        """The bytes of ``[start, end)`` not in this set."""
        return Intervals.span(start, end).minus(self)

    def runs(self) -> list[tuple[int, int]]:
        return list(zip(self.starts.tolist(), self.ends.tolist()))


EMPTY = Intervals(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def _combine(a: Intervals, b: Intervals, keep) -> Intervals:
    """The runs of elementary segments whose membership (in a, in b) ``keep`` accepts."""
    points = np.unique(np.concatenate((a.starts, a.ends, b.starts, b.ends)))
    if points.size < 2:
        return EMPTY
    lows = points[:-1]
    selected = keep(_member(a, lows), _member(b, lows))
    starts, ends = lows[selected], points[1:][selected]
    if starts.size == 0:
        return EMPTY
    new_run = np.concatenate(([True], starts[1:] != ends[:-1]))
    last = np.concatenate((new_run[1:], [True]))
    return Intervals(starts[new_run], ends[last])


def _member(s: Intervals, points: np.ndarray) -> np.ndarray:
    """Whether each point lies in ``s`` (runs are disjoint: started minus ended)."""
    return (
        np.searchsorted(s.starts, points, "right") - np.searchsorted(s.ends, points, "right")
    ) > 0


def tensor_bytes(tensor) -> Intervals:
    """The bytes of ``tensor``'s elements, as offsets into its storage."""
    itemsize = tensor.element_size()
    start = tensor.storage_offset() * itemsize
    if tensor.numel() == 0:
        return EMPTY
    if tensor.is_contiguous():
        return Intervals.span(start, start + tensor.numel() * itemsize)
    offsets = np.zeros((), dtype=np.int64)
    for n, stride in zip(tensor.shape, tensor.stride()):
        offsets = offsets[..., None] + np.arange(n, dtype=np.int64) * (stride * itemsize)
    return Intervals.of_elements(start + offsets.ravel(), itemsize)


# --- virtual addresses -------------------------------------------------------------------------


@dataclass
class _Range:
    real: int  # data_ptr of the storage
    nbytes: int
    virt: int  # its virtual address
    ref: weakref.ref


class StorageMap:
    """Virtual addresses of the storages kernels received, for the whole run."""

    def __init__(self) -> None:
        self._next = GLOBAL_BASE
        self._ranges: dict[int, _Range] = {}  # id(storage) -> its range while it lives

    def place(self, storage) -> tuple[int, bool]:
        """(virtual address of ``storage``'s first byte, whether its bytes are new to
        the trace). New bytes get the next free range; memory already placed under
        another live storage object keeps its addresses."""
        key = id(storage)
        known = self._ranges.get(key)
        if known is not None and known.ref() is storage:
            return known.virt, False
        real, nbytes = storage.data_ptr(), storage.nbytes()
        host = self._holder(real, nbytes)
        if host is not None:
            virt, new = host.virt + (real - host.real), False
        else:
            virt, new = self._next, True
            self._next += -(-max(nbytes, 1) // GLOBAL_ALIGN) * GLOBAL_ALIGN
        self._ranges[key] = _Range(
            real, nbytes, virt, weakref.ref(storage, lambda _, key=key: self._drop(key))
        )
        return virt, new

    def _holder(self, real: int, nbytes: int) -> _Range | None:
        """The live range holding ``[real, real + nbytes)``; None when the bytes are
        new. A range that overlaps only part of them cannot be followed."""
        for r in self._ranges.values():
            if r.ref() is None or nbytes == 0 or r.nbytes == 0:
                continue
            if r.real <= real and real + nbytes <= r.real + r.nbytes:
                return r
            if real < r.real + r.nbytes and r.real < real + nbytes:
                raise RecordError(
                    f"two tensors' storages overlap in part ({nbytes} bytes at 0x{real:x} and "
                    f"{r.nbytes} bytes at 0x{r.real:x}); the recorder follows one storage "
                    f"inside another, not partial overlaps"
                )
        return None

    def _drop(self, key: int) -> None:
        self._ranges.pop(key, None)


class LaunchMemory:
    """The real-to-virtual address table of one launch: its arguments' storages."""

    def __init__(self, ranges: list[tuple[int, int, int]]) -> None:
        """``ranges``: (real start, bytes, virtual start) of each storage."""
        ranges = sorted(set(ranges))
        outer: list[tuple[int, int, int]] = []
        for real, nbytes, virt in ranges:
            if outer and real + nbytes <= outer[-1][0] + outer[-1][1]:
                continue  # inside the previous storage, at matching addresses
            outer.append((real, nbytes, virt))
        self.real = np.array([r[0] for r in outer], dtype=np.uint64)
        self.end = np.array([r[0] + r[1] for r in outer], dtype=np.uint64)
        self.virt = np.array([r[2] for r in outer], dtype=np.uint64)

    def translate(self, addrs: np.ndarray, size: int) -> np.ndarray:
        """The virtual addresses of accesses of ``size`` bytes at real ``addrs``
        (uint64); raises :class:`RecordError` naming the first outside every storage."""
        which = np.searchsorted(self.real, addrs, "right").astype(np.int64) - 1
        inside = which >= 0
        safe = np.where(inside, which, 0)
        if self.real.size:
            inside &= addrs + np.uint64(size) <= self.end[safe]
        if not inside.all():
            bad = int(addrs[np.argmin(inside)])
            raise RecordError(
                f"an access of {size} bytes at 0x{bad:x} is outside every tensor "
                f"argument of the launch"
            )
        return addrs - self.real[safe] + self.virt[safe]
