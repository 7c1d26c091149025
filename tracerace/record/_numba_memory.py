"""Memory as kernel code sees it under the recorder: logged arrays and their addresses.

:class:`RecordedArray` stands in for every array a kernel touches (its
arguments, ``cuda.shared.array``, ``cuda.local.array``): indexing reads and
writes the wrapped NumPy array and logs one event per element, at a
deterministic *virtual* address. Real addresses change from run to run and
the same seed must give the same trace, so :class:`GlobalMemory` hands out
global ranges in order of first use, and :class:`StaticLayout` places shared
and local arrays at offsets in order of their first allocation in a launch.
"""

from __future__ import annotations

import dis
import operator
import sys
from typing import Any

import numpy as np

from ..ops import ATOMIC, READ, WRITE, Space
from ._numba_events import pack

GLOBAL_BASE = 1 << 32
"""The first virtual global address (far from 0, so a stray 0 stands out)."""
GLOBAL_ALIGN = 256
STATIC_ALIGN = 16
"""Alignment of shared and local arrays (enough for any element type)."""

_getframe = sys._getframe
_READ = object()
"""``value`` of a field access that reads."""


class RecordedArray:
    """An array seen by kernel code: element reads and writes are logged.

    ``origin`` is the virtual address of element ``[0, ..., 0]``; element
    ``i`` of a 1-D array lives at ``origin + i * stride``. Indexing that yields
    a sub-array (a row, a slice) returns another ``RecordedArray`` over the
    view and logs nothing: only element accesses are events.
    """

    __slots__ = ("_ary", "_origin", "_space", "_session", "_shape", "_strides", "_ndim",
                 "_len0", "_stride0", "_rtag", "_wtag", "_add_addr", "_add_word", "_sites",
                 "_resolve", "_preempt")

    def __init__(self, ary: np.ndarray, origin: int, space: int, session: Any) -> None:
        self._ary = ary
        self._origin = origin
        self._space = space
        self._session = session
        self._shape = ary.shape
        self._strides = ary.strides
        self._ndim = ary.ndim
        self._len0 = ary.shape[0] if ary.ndim else 0
        self._stride0 = ary.strides[0] if ary.ndim else 0
        self._rtag = pack(READ, space=space, size=ary.itemsize)
        self._wtag = pack(WRITE, space=space, size=ary.itemsize)
        # Bound once: the per-access path below is the recorder's hot loop.
        self._add_addr = session.log.addr.append
        self._add_word = session.log.word.append
        self._sites = session.sites.cache
        self._resolve = session.sites.resolve
        self._preempt = session.sched.preempt

    # -- element access (hot: SiteTable.word and EventLog.log are inlined) --

    def __getitem__(self, index):
        if self._preempt is not None:
            self._preempt()
        value = self._ary[index]
        if isinstance(value, np.ndarray):
            return self._subarray(value)
        frame = _getframe(1)
        site = self._sites.get((frame.f_code, frame.f_lasti))
        if site is None:
            site = self._resolve(frame)
        if type(index) is int:
            if index < 0:
                index += self._len0
            self._add_addr(self._origin + index * self._stride0)
        else:
            self._add_addr(self._origin + self._offset(index))
        self._add_word(self._rtag | site)
        return value

    def __setitem__(self, index, value) -> None:
        if self._preempt is not None:
            self._preempt()
        self._ary[index] = value
        frame = _getframe(1)
        site = self._sites.get((frame.f_code, frame.f_lasti))
        if site is None:
            site = self._resolve(frame)
        if type(index) is int and self._ndim == 1:
            if index < 0:
                index += self._len0
            self._add_addr(self._origin + index * self._stride0)
            self._add_word(self._wtag | site)
        else:
            self._log_region(index, self._wtag | site)

    # -- element access (helpers) --

    def _offset(self, index) -> int:
        """Byte offset of the element at a full integer ``index``."""
        if not isinstance(index, tuple):
            index = (index,)
        offset = 0
        for i, n, stride in zip(index, self._shape, self._strides):
            i = operator.index(i)
            offset += (i + n if i < 0 else i) * stride
        return offset

    def _log_region(self, index, word: int) -> None:
        """Log one event per element that ``self[index] = ...`` wrote."""
        target = self._ary[index]
        log = self._session.log
        if not isinstance(target, np.ndarray):
            log.log(self._origin + self._offset(index), word)
            return
        self._check_view(target)
        addrs = self._view_origin(target) + element_offsets(target)
        log.addr.frombytes(addrs.astype(np.uint64).tobytes())
        log.word.frombytes(np.full(addrs.size, word, dtype=np.uint64).tobytes())

    def log_access(self, tag: int, index, frame) -> None:
        """Log an access with word ``tag`` (an atomic, say) to the element at ``index``."""
        self._session.log.log(self._origin + self._offset(index),
                              tag | self._session.sites.word(frame))

    def preempt(self) -> None:
        """Let the scheduler switch threads before an access made outside indexing."""
        if self._preempt is not None:
            self._preempt()

    # -- views --

    def _subarray(self, view: np.ndarray) -> "RecordedArray":
        self._check_view(view)
        return recorded(view, self._view_origin(view), self._space, self._session)

    def _view_origin(self, view: np.ndarray) -> int:
        return self._origin + data_pointer(view) - data_pointer(self._ary)

    def _check_view(self, view: np.ndarray) -> None:
        if view.size and not np.may_share_memory(view, self._ary):
            raise IndexError("advanced (array) indexing is not supported in CUDA kernels; "
                             "the recorder logs plain element and slice indexing only")

    # -- the rest of the array interface --

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def T(self) -> "RecordedArray":
        return self._subarray(self._ary.T)

    def __len__(self) -> int:
        return len(self._ary)

    def __iter__(self):
        for i in range(len(self._ary)):
            yield self[i]

    def __getattr__(self, name: str):
        return getattr(self._ary, name)

    def __repr__(self) -> str:
        return f"RecordedArray({self._ary!r}, origin=0x{self._origin:x})"

    @property
    def atomic_tag(self) -> int:
        return pack(ATOMIC, space=self._space, size=self._ary.itemsize)

    @property
    def ndarray(self) -> np.ndarray:
        """The wrapped array (accesses through it are not logged)."""
        return self._ary


class RecordedStructArray(RecordedArray):
    """A structured array: an element is a :class:`RecordedRecord`, and each
    field read or write through it is one event of the field's size."""

    __slots__ = ()

    def __getitem__(self, index):
        value = self._ary[index]
        if isinstance(value, np.ndarray):
            return self._subarray(value)
        return RecordedRecord(self, value, self._origin + self._offset(index))

    def access_field(self, record: np.void, addr: int, name: str, frame, value=_READ):
        """Read field ``name`` of ``record`` (at ``addr``), or write ``value`` to it."""
        self.preempt()
        dtype, offset = self._ary.dtype.fields[name][:2]
        if value is _READ:
            result = record[name]
        else:
            record[name] = result = value
        op = READ if value is _READ else WRITE
        tag = pack(op, space=self._space, size=dtype.itemsize)
        self._session.log.log(addr + offset, tag | self._session.sites.word(frame))
        return result


class RecordedRecord:
    """One element of a structured array, with ``rec.x`` / ``rec["x"]`` field access
    (as the simulator allows)."""

    __slots__ = ("_array", "_record", "_addr")

    def __init__(self, array: RecordedStructArray, record: np.void, addr: int) -> None:
        object.__setattr__(self, "_array", array)
        object.__setattr__(self, "_record", record)
        object.__setattr__(self, "_addr", addr)

    def __getitem__(self, name: str):
        return self._array.access_field(self._record, self._addr, name, _getframe(1))

    def __setitem__(self, name: str, value) -> None:
        self._array.access_field(self._record, self._addr, name, _getframe(1), value)

    def __getattr__(self, name: str):
        if name not in (self._record.dtype.names or ()):
            raise AttributeError(name)
        return self._array.access_field(self._record, self._addr, name, _getframe(1))

    def __setattr__(self, name: str, value) -> None:
        self._array.access_field(self._record, self._addr, name, _getframe(1), value)


def recorded(ary: np.ndarray, origin: int, space: int, session: Any) -> RecordedArray:
    """The logged stand-in for ``ary`` (structured arrays get field access)."""
    cls = RecordedStructArray if ary.dtype.names else RecordedArray
    return cls(ary, origin, space, session)


def data_pointer(ary: np.ndarray) -> int:
    return ary.__array_interface__["data"][0]


def element_offsets(ary: np.ndarray) -> np.ndarray:
    """Byte offsets of every element of ``ary`` from its first, in C order (int64)."""
    offsets = np.zeros((), dtype=np.int64)
    for n, stride in zip(ary.shape, ary.strides):
        offsets = offsets[..., None] + np.arange(n, dtype=np.int64) * stride
    return offsets.ravel()


def byte_span(ary: np.ndarray) -> tuple[int, int]:
    """(lowest byte, one past the highest byte) ``ary`` covers, as offsets from its pointer."""
    if ary.size == 0:
        return 0, 0
    low = sum(min(0, (n - 1) * s) for n, s in zip(ary.shape, ary.strides))
    high = sum(max(0, (n - 1) * s) for n, s in zip(ary.shape, ary.strides))
    return low, high + ary.itemsize


def root_of(ary: np.ndarray) -> np.ndarray:
    """The array that owns ``ary``'s memory (the end of its chain of bases)."""
    while isinstance(ary.base, np.ndarray):
        ary = ary.base
    return ary


class GlobalMemory:
    """Deterministic virtual addresses for the arrays kernels see in global memory.

    Each root allocation gets the next free range, in order of first use; a
    view's address is its root's range plus its byte offset. Device arrays
    (``cuda.to_device``, ``cuda.device_array``) keep their range for the
    whole run: their roots are held, so their ids cannot be reused. The
    simulator's per-launch copies of host arrays are dropped when their launch
    ends (``temporary``), and a later copy gets a new range.
    """

    def __init__(self) -> None:
        self._next = GLOBAL_BASE
        self._roots: dict[int, tuple[np.ndarray, int, bool]] = {}  # id -> (root, start, temporary)

    def origin(self, ary: np.ndarray, *, temporary: bool) -> tuple[int, tuple[int, int] | None]:
        """(virtual address of ``ary``'s first element, new range or None).

        The new range (start, bytes) is returned the first time a root is
        seen, so the caller can mark its bytes initialized.
        """
        root = root_of(ary)
        entry = self._roots.get(id(root))
        new = None
        if entry is None:
            low, high = byte_span(root)
            start = self._next
            self._next += -(-max(high - low, 1) // GLOBAL_ALIGN) * GLOBAL_ALIGN
            entry = self._roots[id(root)] = (root, start - low, temporary)
            new = (start, high - low)
        return entry[1] + data_pointer(ary) - data_pointer(root), new

    def end_launch(self) -> None:
        """Forget the per-launch copies."""
        self._roots = {key: entry for key, entry in self._roots.items() if not entry[2]}


class StaticLayout:
    """Offsets of one launch's shared (or local) arrays, by allocation site.

    An allocation site is a call instruction (code object, offset): every
    thread of a block executing it gets the same array, as in CUDA, and two
    calls on one line are still two arrays. The first block to reach a site
    fixes its offset and declares its buffer; later blocks reuse both.
    """

    def __init__(self, space: Space, start: int, declare) -> None:
        self.space = space
        self.next = start
        self.declare = declare
        self.offsets: dict[tuple, int] = {}

    def offset(self, key: tuple, frame, shape, dtype: np.dtype) -> int:
        offset = self.offsets.get(key)
        if offset is None:
            offset = -(-self.next // STATIC_ALIGN) * STATIC_ALIGN
            shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
            self.next = offset + int(np.prod(shape)) * dtype.itemsize
            self.offsets[key] = offset
            name = assigned_name(frame) or f"{self.space.name.lower()}@{frame.f_lineno}"
            self.declare(name, self.space, offset, shape, dtype.itemsize)
        return offset


def assigned_name(frame) -> str | None:
    """The variable the call running in ``frame`` is assigned to: ``s`` in
    ``s = cuda.shared.array(...)``; None when it is not a plain assignment."""
    for ins in dis.get_instructions(frame.f_code):
        if ins.offset > frame.f_lasti:
            if ins.opname in ("STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"):
                return ins.argval
            return None
    return None
