"""Memory as kernel code sees it under the recorder: logged arrays and their addresses.

:class:`RecordedArray` stands in for every array a kernel touches (its
arguments, arrays it captures from globals and closures, ``cuda.shared.array``,
``cuda.local.array``): indexing reads and writes the wrapped NumPy array and
logs one event per element, at a deterministic *virtual* address. Views
(slices, ``.view``, ``.reshape``, ``.ravel``, ``.T``, ...) are recorded arrays
over the same addresses; a ufunc with recorded inputs or outputs
(``np.sin(x, out)``) logs a read or write of every element; anything else that
would reach the elements behind the recorder's back (``.sum()``, ``.copy()``,
``np.asarray``) raises :class:`Unrecordable`. Real addresses change from run to run and
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

from ...trace.ops import ATOMIC, READ, WRITE, Space
from ..events import pack
from ._limits import Unrecordable

GLOBAL_BASE = 1 << 32
"""The first virtual global address (far from 0, so a stray 0 stands out)."""
GLOBAL_ALIGN = 256
STATIC_ALIGN = 16
"""Alignment of shared and local arrays (enough for any element type)."""

_getframe = sys._getframe
_READ = object()
"""``value`` of a field access that reads."""

ARRAY_FACTS = frozenset({"ndim", "size", "dtype", "itemsize", "nbytes", "strides", "flags"})
"""Attributes that describe an array without touching its elements."""
VIEW_ATTRIBUTES = frozenset({"real", "imag"})
VIEW_METHODS = frozenset({"view", "reshape", "ravel", "transpose", "swapaxes", "squeeze"})
"""Attributes and methods that give a view of the array: it is recorded like the array."""


class RecordedArray:
    """An array seen by kernel code: element reads and writes are logged.

    ``origin`` is the virtual address of element ``[0, ..., 0]``; element
    ``i`` of a 1-D array lives at ``origin + i * stride``. Indexing that yields
    a sub-array (a row, a slice) returns another ``RecordedArray`` over the
    view and logs nothing: only element accesses are events.
    """

    __slots__ = (
        "_ary",
        "_origin",
        "_space",
        "_session",
        "_shape",
        "_strides",
        "_ndim",
        "_len0",
        "_stride0",
        "_rtag",
        "_wtag",
        "_add_addr",
        "_add_word",
        "_sites",
        "_resolve",
        "_preempt",
    )

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
        frame = _getframe(1)
        site = self._sites.get((frame.f_code, frame.f_lasti))
        if site is None:
            site = self._resolve(frame)
        if type(index) is int and self._ndim == 1:
            self._ary[index] = value  # a recorded array as value fails loudly in __array__
            if index < 0:
                index += self._len0
            self._add_addr(self._origin + index * self._stride0)
            self._add_word(self._wtag | site)
        else:
            if isinstance(value, (RecordedArray, RecordedRecord)):
                value = value.read_all(frame)
            self._ary[index] = value
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
        self._session.log.log(
            self._origin + self._offset(index), tag | self._session.sites.word(frame)
        )

    def preempt(self) -> None:
        """Let the scheduler switch threads before an access made outside indexing."""
        if self._preempt is not None:
            self._preempt()

    def read_all(self, frame) -> np.ndarray:
        """Log a read of every element (the value of ``a[...] = b`` or a ufunc's
        input) and return the wrapped array."""
        self._log_elements(READ, frame)
        return self._ary

    def _log_elements(self, op: int, frame) -> None:
        """One ``op`` event per element (per field of each element of a structured array)."""
        ary = self._ary
        first = self._origin + element_offsets(ary)
        site = self._session.sites.word(frame)
        log = self._session.log
        fields = field_spans(ary.dtype)
        for offset, size in fields:
            log.addr.frombytes((first + offset).astype(np.uint64).tobytes())
            word = pack(op, space=self._space, size=size) | site
            log.word.frombytes(np.full(first.size, word, dtype=np.uint64).tobytes())

    # -- views --

    def _subarray(self, view: np.ndarray) -> RecordedArray:
        self._check_view(view)
        return recorded(view, self._view_origin(view), self._space, self._session)

    def _view_origin(self, view: np.ndarray) -> int:
        return self._origin + data_pointer(view) - data_pointer(self._ary)

    def _check_view(self, view: np.ndarray) -> None:
        if view.size and not np.may_share_memory(view, self._ary):
            raise IndexError(
                "advanced (array) indexing is not supported in CUDA kernels; "
                "the recorder logs plain element and slice indexing only"
            )

    def _view(self, result, what: str, frame) -> RecordedArray:
        """``result`` of ``what`` (``.reshape(...)``, ``.T``) as a recorded view; a
        copy is refused, since accesses to it would not be the array's."""
        if isinstance(result, np.ndarray) and (
            result.size == 0 or np.may_share_memory(result, self._ary)
        ):
            return recorded(result, self._view_origin(result), self._space, self._session)
        raise self.unfollowed(f"{what} (it copies the array)", frame)

    def unfollowed(self, what: str, frame) -> Unrecordable:
        """The error for ``what``, done to this array at ``frame``'s line."""
        where = self._session.sites.text(frame)
        return Unrecordable(
            f"{what} on a kernel array{f' at {where}' if where else ''} "
            "reads or writes its elements where the recorder cannot log "
            "them; index the array element by element"
        )

    # -- the rest of the array interface --

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def T(self) -> RecordedArray:
        return self._subarray(self._ary.T)

    def __len__(self) -> int:
        return len(self._ary)

    def __iter__(self):
        for i in range(len(self._ary)):
            yield self[i]

    def __getattr__(self, name: str):
        if name in ARRAY_FACTS:
            return getattr(self._ary, name)
        if name in VIEW_ATTRIBUTES:
            return self._view(getattr(self._ary, name), f".{name}", _getframe(1))
        if name in VIEW_METHODS:
            method = getattr(self._ary, name)

            def view_method(*args, **kwargs):
                return self._view(method(*args, **kwargs), f".{name}()", _getframe(1))

            return view_method
        if name.startswith("_"):
            # Probes of protocols (__array_interface__, numba's _numba_type_, ...)
            # find nothing: the array is then an opaque object to whoever asked.
            raise AttributeError(name)
        raise self.unfollowed(f".{name}", _getframe(1))

    def __array__(self, *args, **kwargs):
        raise self.unfollowed("converting it to a NumPy array", _getframe(1))

    def __array_function__(self, func, types, args, kwargs):
        raise self.unfollowed(f"np.{func.__name__}", _getframe(1))

    def __array_ufunc__(self, ufunc, method: str, *inputs, **kwargs):
        """``np.sin(x, out)`` and friends: every element of a recorded input is
        read, every element of a recorded output written."""
        frame = _getframe(1)
        if method != "__call__":
            raise self.unfollowed(f"np.{ufunc.__name__}.{method}", frame)
        self.preempt()
        inputs = tuple(x.read_all(frame) if isinstance(x, RecordedArray) else x for x in inputs)
        outs = kwargs.get("out")
        if outs is not None:
            outs = outs if isinstance(outs, tuple) else (outs,)
            kwargs["out"] = tuple(o._ary if isinstance(o, RecordedArray) else o for o in outs)
        result = ufunc(*inputs, **kwargs)
        if outs is None:
            return result  # a new array, private to this thread
        for out in outs:
            if isinstance(out, RecordedArray):
                out._log_elements(WRITE, frame)
        return outs[0] if len(outs) == 1 else outs

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
    field read or write through it is one event of the field's size. Copying
    a whole element (``f[1] = f[0]``, ``sm[t] = x[i]``) reads and writes every field."""

    __slots__ = ()

    def __getitem__(self, index):
        value = self._ary[index]
        if isinstance(value, np.ndarray):
            return self._subarray(value)
        return RecordedRecord(self, value, self._origin + self._offset(index))

    def __setitem__(self, index, value) -> None:
        self.preempt()
        frame = _getframe(1)
        if isinstance(value, (RecordedArray, RecordedRecord)):
            value = value.read_all(frame)
        self._ary[index] = value
        target = self._ary[index]
        if isinstance(target, np.ndarray):
            self._subarray(target)._log_elements(WRITE, frame)
        else:
            self.log_record(WRITE, self._origin + self._offset(index), frame)

    def log_record(self, op: int, addr: int, frame) -> None:
        """One ``op`` event per field of the element at ``addr``."""
        log, site = self._session.log, self._session.sites.word(frame)
        for offset, size in field_spans(self._ary.dtype):
            log.log(addr + offset, pack(op, space=self._space, size=size) | site)

    def access_field(self, record: np.void, addr: int, name: str, frame, value=_READ):
        """Read field ``name`` of ``record`` (at ``addr``), or write ``value`` to it."""
        self.preempt()
        dtype, offset = self._ary.dtype.fields[name][:2]
        if dtype.names:
            raise Unrecordable(
                f"field {name!r} (at {self._session.sites.text(frame)}) is a "
                f"nested record; the recorder follows fields of plain and array "
                f"types only"
            )
        if value is _READ and dtype.subdtype is not None:
            # An array field: the kernel indexes it (rec.garden[0] = x), so it is an array
            # over the field's bytes, whose element accesses are the events.
            view = record[name]
            if not np.may_share_memory(view, self._ary):
                raise Unrecordable(
                    f"field {name!r} at {self._session.sites.text(frame)}: "
                    f"its array is a copy, not the record's memory"
                )
            return recorded(view, addr + offset, self._space, self._session)
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

    def read_all(self, frame) -> np.void:
        """Log a read of every field (the element is copied) and return it."""
        self._array.preempt()
        self._array.log_record(READ, self._addr, frame)
        return self._record


def recorded(ary: np.ndarray, origin: int, space: int, session: Any) -> RecordedArray:
    """The logged stand-in for ``ary`` (structured arrays get field access)."""
    cls = RecordedStructArray if ary.dtype.names else RecordedArray
    return cls(ary, origin, space, session)


def data_pointer(ary: np.ndarray) -> int:
    return ary.__array_interface__["data"][0]


def field_spans(dtype: np.dtype) -> list[tuple[int, int]]:
    """(offset, bytes) of each field of a structured element, or the whole element."""
    if not dtype.names:
        return [(0, dtype.itemsize)]
    return [
        (offset, field.itemsize)
        for field, offset, *_ in (dtype.fields[name] for name in dtype.names)
    ]


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
