"""One recording under Triton's interpreter: the writer, the log, the launches.

The hooks (:mod:`._hooks`) hand this session every launch
(:meth:`Session.launch`), every program the interpreter starts
(:meth:`Session.program`) and every memory operation of the interpreter's
builder before it runs (:meth:`Session.access`, :meth:`Session.atomic`,
:meth:`Session.barrier`), and what an atomic or a volatile load returned
(:meth:`Session.atomic_done`, :meth:`Session.volatile_load_done`), where a
program may give way to the others. Each program instance is a block of one agent
(thread 0); its events are in program order, and the trace in the order the
programs ran (:attr:`Session.programs`). A masked vector access becomes
the accesses of its active elements, sorted, duplicates dropped, with runs of
adjacent elements as one event; each active lane of an atomic is one atomic
event of its element.
"""

from __future__ import annotations

import ctypes
import inspect
import os
import sys
import traceback

import numpy as np
import torch

from ...trace.ops import ATOMIC, BAR_SYNC, READ, Scope, Sem, Space
from ..events import FLUSH_ROWS, SITE_SHIFT, SIZE_LIMIT, SIZE_SHIFT, pack
from ..program import Session as Recording
from ._host import HostMemory
from ._memory import Intervals, LaunchMemory, RecordError, StorageMap
from ._sched import Deadlock, Programs, Schedule

GLOBAL = int(Space.GLOBAL)

SEMANTICS = {
    "RELAXED": Sem.RELAXED,
    "ACQUIRE": Sem.ACQUIRE,
    "RELEASE": Sem.RELEASE,
    "ACQUIRE_RELEASE": Sem.ACQ_REL,
}
"""Triton's ``sem`` (``ir.MEM_SEMANTIC`` member names) -> the trace's."""
SCOPES = {"CTA": Scope.BLOCK, "GPU": Scope.DEVICE, "SYSTEM": Scope.SYSTEM}
"""Triton's ``scope`` (``ir.MEM_SYNC_SCOPE``: "cta", "gpu", "sys") -> the trace's."""

BARRIER_ARRIVALS = 1
"""A program is one agent, so ``tl.debug_barrier`` is a barrier of one arrival."""


class Session(Recording):
    """Everything one recorded run owns: the tensors' storage, the host's writes,
    the programs and the kernels' sites besides what every recording holds."""

    def __init__(self, out: str, interpreter: str, schedule: Schedule) -> None:
        super().__init__(out, f"{interpreter} interpreter")
        self.sites = KernelSites(self.writer)
        self.storages = StorageMap()
        self.host = HostMemory()
        self.failure: str | None = None
        """Why the recorder could not follow the program (the first reason)."""
        self.launch_error: str | None = None
        """The first exception a launch raised: its kernel, program and kernel line."""
        self.programs = Programs(schedule)
        """The programs of the launch running now, as cooperative tasks."""
        self._memory: LaunchMemory | None = None
        self._kernel = ""
        self._grid = (1, 1, 1)
        self._pid = (0, 0, 0)

    # -- launches --

    def launch(self, run, kernel, args: tuple, kwargs: dict):
        """Log the launch of ``kernel`` on ``args`` and ``kwargs``, which ``run()`` (the
        interpreter's) runs."""
        if self._memory is not None:
            raise self.fail(
                f"kernel {kernel.__name__} was launched from inside kernel {self._kernel}"
            )
        with self.launch_timer():
            try:
                with self.host.paused():
                    try:
                        self._begin(kernel, args, kwargs)
                    except RecordError as exc:
                        raise self.fail(str(exc)) from None
                    return run()
            except BaseException as exc:
                stuck = _deadlock(exc)
                if stuck is not None:
                    raise self.fail(f"kernel {self._kernel}: {stuck}") from None
                if self.launch_error is None:
                    self.launch_error = self._describe(exc)
                raise
            finally:
                self._memory = None

    def _begin(self, kernel, args: tuple, kwargs: dict) -> None:
        """Place the launch's tensors, log what the host initialized, declare buffers."""
        self._kernel = kernel.__name__
        index = self.launches
        self.log.set_agent(index, 0, 0)
        for storage, span in self.host.take_written():
            virt, _ = self.storages.place(storage)
            self._initialized(virt, span)
        ranges: list[tuple[int, int, int]] = []
        views: dict[tuple, list[str]] = {}
        for name, tensor in kernel_tensors(kernel.fn, args, kwargs):
            storage = tensor.untyped_storage()
            virt, new = self.storages.place(storage)
            if new:
                self._initialized(virt, self.host.declare(storage))
            ranges.append((storage.data_ptr(), storage.nbytes(), virt))
            if tensor.numel():
                base = virt + tensor.data_ptr() - storage.data_ptr()
                strides = None if tensor.is_contiguous() else tuple(tensor.stride())
                key = (base, tuple(tensor.shape) or (1,), tensor.element_size(), strides)
                views.setdefault(key, []).append(name)
        for (base, shape, itemsize, strides), names in views.items():
            # Arguments that are one view of one memory get one buffer: "x=out".
            self.writer.buffer(
                "=".join(names), GLOBAL, base, shape, itemsize, strides=strides, launch=index
            )
        self._memory = LaunchMemory(ranges)

    def _initialized(self, virt: int, span: Intervals) -> None:
        """Log ``init`` over the bytes ``span`` of the storage at ``virt``."""
        for start, end in span.runs():
            self.log_init(virt + start, virt + end)

    def _describe(self, exc: BaseException) -> str:
        """``kernel k, program (x, y, z) raised Error: message at file:line`` of the exception
        a launch raised; the interpreter chains the kernel's own exception to its own."""
        cause = exc
        while cause.__cause__ is not None:
            cause = cause.__cause__
        text = "".join(traceback.format_exception_only(type(cause), cause)).strip()
        first = text.splitlines()[0] if text else type(cause).__name__
        where = self.sites.innermost(cause.__traceback__)
        return f"kernel {self._kernel}, program {self._pid} raised {first}" + (
            f" at {where}" if where else ""
        )

    def grid(self, dims: tuple[int, int, int]) -> None:
        self._grid = dims
        # A program is one agent: a block of one thread, named by its program id.
        self.writer.launch_dims(self.launches, dims, (1, 1, 1), kernel=self._kernel)

    def program(self, x: int, y: int, z: int) -> None:
        """The interpreter starts program ``(x, y, z)``: block ``x + nx * (y + ny * z)``."""
        if len(self.log.addr) >= FLUSH_ROWS:
            self.log.flush()
        nx, ny, _ = self._grid
        self._pid = (x, y, z)
        self.log.set_agent(self.launches, x + nx * (y + ny * z), 0)

    # -- memory operations --

    def access(self, op: int, ptrs, mask) -> None:
        """A load (``READ``) or store (``WRITE``) through the pointer tensor ``ptrs``."""
        itemsize = element_size(ptrs)
        addrs = np.unique(self._active(ptrs, mask))
        if not addrs.size:
            return
        virt = self._translate(addrs, itemsize, "load" if op == READ else "store")
        breaks = np.flatnonzero(np.diff(virt) != np.uint64(itemsize)) + 1
        starts = np.concatenate(([0], breaks))
        sizes = np.diff(np.concatenate((starts, [virt.size]))) * itemsize
        addr, size = virt[starts], sizes.astype(np.uint64)
        if size.max() > SIZE_LIMIT:
            addr, size = _split(addr, size, SIZE_LIMIT - SIZE_LIMIT % itemsize)
        word = np.uint64(pack(op, space=GLOBAL) | self.sites.word())
        self._append(addr, word | (size << np.uint64(SIZE_SHIFT)))
        if op != READ:
            self.programs.stored()

    def atomic(self, ptrs, mask, sem, scope) -> None:
        """An atomic through ``ptrs``: one atomic event per active lane, in lane order."""
        itemsize = element_size(ptrs)
        addrs = self._active(ptrs, mask)
        if not addrs.size:
            return
        virt = self._translate(addrs, itemsize, "atomic")
        word = (
            pack(
                ATOMIC,
                space=GLOBAL,
                size=itemsize,
                sem=int(self._code(SEMANTICS, sem)),
                scope=int(self._code(SCOPES, scope)),
            )
            | self.sites.word()
        )
        self._append(virt, np.full(virt.size, word, dtype=np.uint64))

    def atomic_done(self, ptrs, mask, old) -> None:
        """The atomic through ``ptrs`` ran and returned ``old``: the program gives way
        to the others if it changed no memory (it polls), or as the schedule says."""
        addrs = self._active(ptrs, mask)
        if not addrs.size:
            return
        before = _active_values(old, ptrs, mask)
        itemsize = before.dtype.itemsize
        now = b"".join(ctypes.string_at(int(a), itemsize) for a in addrs.tolist())
        self.programs.atomic_done(now != before.tobytes(), self.sites.text)

    def volatile_load_done(self, ptrs, mask, value) -> None:
        """A volatile load through ``ptrs`` read ``value``: a poll when it read what
        the program's last one at this line read."""
        addrs = self._active(ptrs, mask)
        if addrs.size:
            self.programs.read(
                self.sites.text(), addrs.tobytes() + _active_values(value, ptrs, mask).tobytes()
            )

    def barrier(self) -> None:
        """``tl.debug_barrier``: a barrier of the program (its ``arg`` rides in the address)."""
        self._check_running("barrier")
        self.log.log(BARRIER_ARRIVALS, pack(BAR_SYNC) | self.sites.word())

    def _active(self, ptrs, mask) -> np.ndarray:
        self._check_running("memory operation")
        addrs = np.asarray(ptrs.data, dtype=np.uint64)
        if mask is None:
            return addrs.ravel()
        return addrs[np.broadcast_to(np.asarray(mask.data, dtype=bool), addrs.shape)]

    def _translate(self, addrs: np.ndarray, itemsize: int, what: str) -> np.ndarray:
        try:
            return self._memory.translate(addrs, itemsize)
        except RecordError as exc:
            raise self.fail(
                f"kernel {self._kernel}, program {self._pid}: a {what} at "
                f"{self.sites.text()}: {exc}"
            ) from None

    def _code(self, table: dict, value) -> int:
        """The trace's code for Triton's ``sem`` or ``scope`` ``value``."""
        code = table.get(getattr(value, "name", None))
        if code is None:
            raise self.fail(
                f"kernel {self._kernel}: an atomic at {self.sites.text()} has "
                f"{value!r}, which the recorder does not know"
            )
        return code

    def _append(self, addr: np.ndarray, word: np.ndarray) -> None:
        self.log.addr.frombytes(addr.astype(np.uint64).tobytes())
        self.log.word.frombytes(word.astype(np.uint64).tobytes())

    def _check_running(self, what: str) -> None:
        if self._memory is None:
            raise self.fail(f"a Triton {what} ran outside a kernel launch")

    def refuse(self, message: str) -> RecordError:
        """:meth:`fail` for what the kernel line running now asks of the recorder."""
        return self.fail(
            f"kernel {self._kernel}, program {self._pid}: {message} at {self.sites.text()}"
        )

    def fail(self, message: str) -> RecordError:
        """The error to raise when the recorder cannot follow; the first reason is kept."""
        if self.failure is None:
            self.failure = message
        return RecordError(message)


def _active_values(handle, ptrs, mask) -> np.ndarray:
    """The values of ``handle`` (one per lane of ``ptrs``) of the active lanes."""
    values = np.broadcast_to(np.asarray(handle.data), np.shape(ptrs.data))
    if mask is not None:
        values = values[np.broadcast_to(np.asarray(mask.data, dtype=bool), values.shape)]
    return np.ravel(values)


def _deadlock(exc: BaseException) -> Deadlock | None:
    """The :class:`Deadlock` that ``exc`` is or was raised from, if any."""
    while exc is not None and not isinstance(exc, Deadlock):
        exc = exc.__cause__
    return exc


def _split(addr: np.ndarray, size: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Runs longer than one event holds, cut into pieces of ``limit`` bytes."""
    out_addr, out_size = [], []
    for a, s in zip(addr.tolist(), size.tolist()):
        for offset in range(0, s, limit):
            out_addr.append(a + offset)
            out_size.append(min(limit, s - offset))
    return np.array(out_addr, dtype=np.uint64), np.array(out_size, dtype=np.uint64)


def element_size(ptrs) -> int:
    """Bytes of the elements a pointer tensor points to (``int1`` takes a byte, as in
    the interpreter's pointer arithmetic)."""
    return max(1, ptrs.get_element_ty().primitive_bitwidth // 8)


# --- the launch's tensors ------------------------------------------------------------------


def kernel_tensors(fn, args: tuple, kwargs: dict):
    """(name, tensor) of every tensor a launch passes, as the interpreter binds them:
    keywords it does not take are dropped; tuples give ``name.i``; a tensor
    descriptor gives its base tensor, ``triton.reinterpret`` the tensor it wraps."""
    from triton.runtime.jit import TensorWrapper
    from triton.tools.tensor_descriptor import TensorDescriptor

    names = set(inspect.getfullargspec(fn).args)
    bound = inspect.getcallargs(fn, *args, **{k: v for k, v in kwargs.items() if k in names})

    def walk(name: str, value):
        if isinstance(value, TensorWrapper):
            yield from walk(name, value.base)
        elif isinstance(value, torch.Tensor):
            if value.device.type != "cpu":
                raise RecordError(
                    f"argument {name} of kernel {fn.__name__} is a tensor on "
                    f"{value.device}; the triton backend records CPU tensors"
                )
            yield name, value
        elif isinstance(value, TensorDescriptor):
            yield from walk(name, value.base)
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                yield from walk(f"{name}.{i}", item)
        elif hasattr(value, "data_ptr"):
            raise RecordError(
                f"argument {name} of kernel {fn.__name__} is a "
                f"{type(value).__name__}, not a torch tensor: the recorder "
                f"cannot see its memory"
            )

    for name, value in bound.items():
        yield from walk(name, value)


# --- sites ---------------------------------------------------------------------------------


class KernelSites:
    """Source sites: the ``file:line`` of the innermost kernel frame.

    A kernel frame runs the interpreter's rewrite of a ``@triton.jit`` function
    (a kernel or a device function it calls); the rewrite keeps the function's
    file and line numbers. Paths are relative to the working directory when
    inside it, absolute otherwise (also for kernels of installed packages).
    """

    def __init__(self, writer) -> None:
        from triton.runtime.interpreter import InterpretedFunction

        self.writer = writer
        self.cache: dict[tuple, int] = {}
        self._rewritten = InterpretedFunction.rewritten_fn  # function -> its rewrite
        self._codes: set = set()
        self._known = 0  # rewrites in self._codes
        self._cwd = os.path.join(os.getcwd(), "")

    def word(self) -> int:
        """The site word of the kernel line running now."""
        frame = self._kernel_frame()
        key = (frame.f_code, frame.f_lasti)
        word = self.cache.get(key)
        if word is None:
            word = self.cache[key] = self.writer.site(self._text(frame)) << SITE_SHIFT
        return word

    def text(self) -> str:
        """``file:line`` of the kernel line running now."""
        return self._text(self._kernel_frame())

    def innermost(self, tb) -> str | None:
        """``file:line`` of the innermost kernel frame of traceback ``tb``, if any."""
        codes = self._kernel_codes()
        found = None
        for frame, line in traceback.walk_tb(tb):
            if frame.f_code in codes:
                found = f"{self._path(frame)}:{line}"
        return found

    def _kernel_codes(self) -> set:
        # A device function is rewritten on its first call, inside a launch.
        if self._known != len(self._rewritten):
            self._codes = {getattr(fn, "__code__", None) for fn in self._rewritten.values()}
            self._known = len(self._rewritten)
        return self._codes

    def _kernel_frame(self):
        self._kernel_codes()
        frame = sys._getframe(2)
        while frame is not None and frame.f_code not in self._codes:
            frame = frame.f_back
        if frame is None:
            raise RecordError("cannot find the kernel line of a Triton memory operation")
        return frame

    def _text(self, frame) -> str:
        return f"{self._path(frame)}:{frame.f_lineno}"

    def _path(self, frame) -> str:
        path = os.path.abspath(frame.f_code.co_filename)
        if path.startswith(self._cwd):
            path = os.path.relpath(path, self._cwd)
        return path
