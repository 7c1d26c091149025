"""What the host program wrote: which bytes of the kernels' tensors hold data.

A trace marks global bytes initialized with ``init`` events; a kernel reading
bytes that nothing initialized is an ``uninit_read``. The host's memory
starts initialized, except what torch allocated without writing it:
``torch.empty`` and its kin (:data:`EMPTY_OPS`). From then on every torch
operation that writes a tensor (an in-place op, ``out=``, ``copy_``,
indexing assignment, the autotuner's ``zero_``) initializes the bytes of that
tensor's elements. :class:`HostMemory` sees them all as a
``TorchDispatchMode`` active for the whole program, paused during launches
(the kernel's own writes are trace events, and the interpreter's copies
are not the program's).

What it cannot follow counts as initialized, so it never reports an
uninitialized read that did not happen: a tensor whose memory is handed to
NumPy or DLPack (``t.numpy()``, ``np.asarray(t)``, ``t.__dlpack__()``) is
initialized from then on, since writes through the other library are not
torch operations; memory that NumPy allocated (``torch.from_numpy(np.empty(n))``)
is initialized; torch operations of other Python threads are not seen (a
dispatch mode belongs to its thread), so a program that fills tensors from
another thread must not use ``torch.empty`` for them.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ._memory import EMPTY, Intervals, tensor_bytes

EMPTY_OPS = frozenset(
    {
        "aten::empty",
        "aten::empty_like",
        "aten::new_empty",
        "aten::empty_strided",
        "aten::new_empty_strided",
        "aten::empty_permuted",
    }
)
"""Operations whose result holds no data."""

METADATA_OPS = frozenset({"aten::set_", "aten::as_strided_"})
"""Operations that mark an argument written but change only its view (with the
ops tagged ``inplace_view``: ``transpose_``, ``squeeze_``, ...)."""


class HostMemory(TorchDispatchMode):
    """The bytes of torch storages that hold no data yet, and the host writes
    that filled bytes the trace had already declared uninitialized."""

    def __init__(self) -> None:
        super().__init__()
        self._uninit: dict[int, tuple[weakref.ref, Intervals]] = {}  # id(storage) -> bytes
        self._declared: set[int] = set()
        """Storages the trace holds: host writes there become ``init`` events."""
        self._written: list[tuple[weakref.ref, Intervals]] = []
        self._paused = 0

    # -- what the recorder asks --

    def declare(self, storage) -> Intervals:
        """The initialized bytes of ``storage``, which the trace now holds."""
        uninit = self._uninit_of(storage)
        if uninit:
            self._declared.add(id(storage))
        return uninit.complement_in(0, storage.nbytes())

    def take_written(self) -> list[tuple[object, Intervals]]:
        """(storage, bytes) the host initialized in declared storages since the last call."""
        written = [(ref(), span) for ref, span in self._written]
        self._written = []
        return [(storage, span) for storage, span in written if storage is not None]

    @contextmanager
    def paused(self):
        """Do not follow torch operations (a launch runs)."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    # -- following the program --

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if not self._paused:
            self._follow(func, args, kwargs, result)
        return result

    def _follow(self, func, args, kwargs, result) -> None:
        name = func._schema.name
        if name in EMPTY_OPS:
            if isinstance(result, torch.Tensor):
                self._allocated(result.untyped_storage())
            return
        if not self._uninit or name in METADATA_OPS or torch.Tag.inplace_view in func.tags:
            return
        for i, argument in enumerate(func._schema.arguments):
            alias = argument.alias_info
            if alias is None or not alias.is_write:
                continue
            value = args[i] if i < len(args) else kwargs.get(argument.name)
            for tensor in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(tensor, torch.Tensor):
                    self.wrote(tensor)

    def _allocated(self, storage) -> None:
        key = id(storage)
        self._uninit[key] = (
            weakref.ref(storage, lambda _, key=key: self._forget(key)),
            Intervals.span(0, storage.nbytes()),
        )
        self._declared.discard(key)

    def wrote(self, tensor) -> None:
        """The host wrote every element of ``tensor``."""
        self.wrote_bytes(tensor.untyped_storage(), tensor_bytes(tensor))

    def wrote_bytes(self, storage, span: Intervals) -> None:
        key = id(storage)
        entry = self._uninit.get(key)
        if entry is None or entry[0]() is not storage:
            return
        ref, uninit = entry
        filled = uninit.intersect(span)
        if not filled:
            return
        self._uninit[key] = (ref, uninit.minus(span))
        if key in self._declared:
            self._written.append((ref, filled))

    def exported(self, tensor) -> None:
        """``tensor``'s memory went to another library: count all of it written."""
        if self._paused:
            return
        storage = tensor.untyped_storage()
        self.wrote_bytes(storage, Intervals.span(0, storage.nbytes()))

    def _uninit_of(self, storage) -> Intervals:
        entry = self._uninit.get(id(storage))
        return entry[1] if entry is not None and entry[0]() is storage else EMPTY

    def _forget(self, key: int) -> None:
        self._uninit.pop(key, None)
        self._declared.discard(key)


def follow_exports(host: HostMemory) -> None:
    """Make the ways a tensor's memory leaves torch count as writes (see the module)."""
    for name in ("numpy", "__dlpack__"):
        stock = getattr(torch.Tensor, name)

        def export(self, *args, _stock=stock, **kwargs):
            host.exported(self)
            return _stock(self, *args, **kwargs)

        setattr(torch.Tensor, name, export)
