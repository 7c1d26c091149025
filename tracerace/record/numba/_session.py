"""One recording under Numba's CUDA simulator: the writer, the log, the launches.

:meth:`Session.launch` replaces the simulator's kernel launch (see
``_hooks``). It converts the arguments as the simulator does (host
arrays are copied to simulated device memory and back), but hands the kernel
:class:`RecordedArray`\\ s, and runs the blocks under the deterministic
:class:`Scheduler` instead of one OS thread per CUDA thread.

Every array the kernel can reach is recorded: its arguments (also inside
tuple arguments), a single record (``np.void``) argument (a one-element array
in global memory, copied back afterwards, as CUDA passes it), and the arrays
it reaches by name: globals and closure variables of the kernel and of the
device functions it calls, and array attributes (two levels deep) of the
modules, objects and classes it names, swapped for recorded arrays for the
length of the launch. A device array reached any other way (inside a list or
a dict) fails the recording (see ``_hooks``).
"""

from __future__ import annotations

import inspect
import types
from math import prod

import numpy as np
from numba.cuda.simulator import kernel as simkernel
from numba.cuda.simulator import kernelapi
from numba.cuda.simulator.args import ArgHint, InOut
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray, FakeWithinKernelCUDAArray

from ...trace.ops import Space
from ..program import Session as Recording
from ._kernelapi import Launch, RecordingModule
from ._limits import Unrecordable
from ._memory import GlobalMemory, RecordedArray, RecordedRecord, recorded
from ._sched import Scheduler
from ._sites import SiteTable

ATTRIBUTE_DEPTH = 2
"""How many attribute levels below a global name the recorder looks for arrays
(``CONFIG.table``, ``module.holder.table``)."""

OPAQUE = (
    simkernel.FakeCUDAKernel,
    RecordingModule,
    types.FunctionType,
    np.ndarray,
    FakeCUDAArray,
    int,
    float,
    complex,
    str,
    bytes,
    bool,
    type(None),
)
"""Globals whose attributes are never searched for arrays."""

FORALL_BLOCK = 1024
"""Threads per block of ``kernel.forall(n)`` without ``tpb``: the most CUDA allows.
CUDA picks the size by occupancy on the device, which the simulator cannot know."""


class Session(Recording):
    """Everything one recorded run owns: the simulator's memory, the scheduler
    and the user's source sites besides what every recording holds."""

    def __init__(self, out: str, schedule: str, seed: int, simulator: str) -> None:
        super().__init__(out, f"{simulator} simulator, schedule {schedule}, seed {seed}")
        self.sites = SiteTable(self.writer)
        self.sched = Scheduler(self.log, self.sites, schedule, seed)
        self.memory = GlobalMemory()
        self.unrecordable: Unrecordable | None = None
        """Why the recorder had to stop a launch (the program may have caught it)."""
        self.running = False
        """Kernel code is running (a device array reached outside the recorder fails)."""
        self._params: dict[object, list[str]] = {}

    # -- launching --

    def launch(self, kernel, args: tuple) -> None:
        """Run ``kernel`` (a configured ``FakeCUDAKernel``) on ``args`` and log it."""
        with self.launch_timer():
            try:
                self._run_launch(kernel, args, self.launches)
            except Unrecordable as exc:
                self.unrecordable = self.unrecordable or exc
                raise
            finally:
                self.running = False

    def forall(self, kernel, ntasks: int, tpb: int, stream, sharedmem: int):
        """``kernel.forall(ntasks, tpb)``: ``ntasks`` threads in blocks of ``tpb`` (the
        configuration CUDA's ForAll launches), ``FORALL_BLOCK`` when ``tpb`` is 0."""
        if ntasks < 0:
            raise ValueError(f"Can't create ForAll with negative task count: {ntasks}")

        def launch(*args):
            if ntasks == 0:
                return None
            block = tpb or FORALL_BLOCK
            grid = -(-ntasks // block)
            if not tpb:
                self.warn(
                    f"launch {self.launches}: {kernel.fn.__name__}.forall({ntasks}) left "
                    f"the block size to CUDA, which picks it by occupancy on the device; "
                    f"recorded as {grid} block(s) of {block} threads (give tpb= to "
                    f"record another size)"
                )
            return kernel[grid, block, stream, sharedmem](*args)

        return launch

    def _run_launch(self, kernel, args: tuple, index: int) -> None:
        grid_dim, block_dim = simkernel.normalize_kernel_dimensions(
            kernel.grid_dim, kernel.block_dim
        )
        launch = Launch(self, index, kernel.dynshared_size)
        self.writer.launch_dims(index, grid_dim, block_dim, kernel=kernel.fn.__name__)
        module = RecordingModule(grid_dim, block_dim, kernel.dynshared_size, launch)
        accesses = self.log.accesses()
        with simkernel._push_kernel_context(module):
            writebacks: list = []
            self.log.set_agent(index, 0, 0)
            names = self._param_names(kernel.fn, len(args))
            kernel_args = [
                self._argument(kernel, launch, name, arg, writebacks)
                for name, arg in zip(names, args)
            ]
            with kernelapi.swapped_cuda_module(kernel.fn, module):
                undo = self._capture(kernel.fn, index)
                try:
                    self.running = True
                    self.sched.run_launch(kernel.fn, kernel_args, index, grid_dim, block_dim)
                finally:
                    self.running = False
                    for restore in reversed(undo):
                        restore()
            for writeback in writebacks:
                writeback()
        self.memory.end_launch()
        if self.log.accesses() == accesses:
            self.warn(
                f"launch {index} ({kernel.fn.__name__}, {prod(grid_dim)} block(s) of "
                f"{prod(block_dim)} threads): no memory access was recorded"
            )

    def _param_names(self, fn, count: int) -> list[str]:
        names = self._params.get(fn)
        if names is None:
            params = inspect.signature(fn).parameters.values()
            names = self._params[fn] = [
                p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
        return names + [f"arg{i}" for i in range(len(names), count)]

    # -- what the kernel gets --

    def _argument(self, kernel, launch: Launch, name: str, arg, writebacks: list):
        """What the kernel gets for ``arg``: arrays in global memory become
        :class:`RecordedArray`\\ s, anything else is passed as the simulator would."""
        kind, value = None, arg
        for extension in kernel.extensions:
            kind, value = extension.prepare_args(kind, value, stream=0, retr=writebacks)
        if isinstance(value, tuple):
            items = [
                self._tuple_item(item, f"{name}[{i}]", launch.index) for i, item in enumerate(value)
            ]
            return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
        if isinstance(value, np.ndarray) and value.ndim > 0:
            device, temporary = InOut(value).to_device(writebacks), True
        elif isinstance(value, ArgHint):
            device = value.to_device(writebacks)
            temporary = device is not value.value
        elif isinstance(value, np.void):
            return self._record_argument(value, name, launch.index, writebacks)
        else:
            device, temporary = value, False
        if not isinstance(device, FakeCUDAArray):
            return device
        if isinstance(device._ary, np.void):
            return self._record_argument(device._ary, name, launch.index, writebacks)
        if not isinstance(device._ary, np.ndarray):
            return FakeWithinKernelCUDAArray(device)
        return self._global_array(device._ary, name, launch.index, temporary)

    def _tuple_item(self, item, name: str, launch: int):
        """An element of a tuple argument: the simulator passes the tuple as it is,
        so its arrays are used in place."""
        if isinstance(item, tuple):
            items = [self._tuple_item(x, f"{name}[{i}]", launch) for i, x in enumerate(item)]
            return type(item)(*items) if hasattr(item, "_fields") else tuple(items)
        array = self._array_of(item)
        if array is None:
            return item
        return self._global_array(array, name, launch, not isinstance(item, FakeCUDAArray))

    def _record_argument(
        self, value: np.void, name: str, launch: int, writebacks: list
    ) -> RecordedRecord:
        """A record passed by value: CUDA copies it to device memory and back."""
        device = np.empty(1, dtype=value.dtype)
        device[0] = value

        def writeback() -> None:
            for field in value.dtype.names or ():
                value[field] = device[0][field]

        writebacks.append(writeback)
        return self._global_array(device, name, launch, True)[0]

    def _global_array(
        self, ary: np.ndarray, name: str, launch: int, temporary: bool
    ) -> RecordedArray:
        origin, new = self.memory.origin(ary, temporary=temporary)
        if new is not None:
            self._initialized(*new)
        self._declare(name, ary, origin, launch)
        return recorded(ary, origin, int(Space.GLOBAL), self)

    @staticmethod
    def _array_of(value) -> np.ndarray | None:
        """The memory of a device array or host array ``value`` (None for anything else)."""
        if isinstance(value, FakeCUDAArray) and isinstance(value._ary, np.ndarray):
            return value._ary
        if isinstance(value, np.ndarray) and value.ndim > 0:
            return value
        return None

    def _capture(self, fn, launch: int) -> list:
        """Swap the arrays ``fn`` (and the device functions it calls) reach by name
        for recorded arrays; the returned actions undo the swaps."""
        undo: list = []
        visited: set[int] = set()

        def swap(value, name: str, put) -> bool:
            array = self._array_of(value)
            if array is None:
                return False
            put(self._global_array(array, name, launch, False))
            undo.append(lambda: put(value))
            return True

        def attributes(owner, path: str, names: list[str], depth: int) -> None:
            """Arrays among ``owner``'s attributes (a module's, an object's, a
            class's) that the code names, ``depth`` attribute levels down."""
            key = (id(owner), id(names))
            if depth == 0 or key in visited or isinstance(owner, OPAQUE):
                return
            visited.add(key)
            try:
                namespace = vars(owner)
            except TypeError:  # no __dict__
                return
            for attribute in names:
                if attribute not in namespace:
                    continue
                value, where = namespace[attribute], f"{path}.{attribute}"
                if not swap(value, where, lambda v, o=owner, a=attribute: setattr(o, a, v)):
                    attributes(value, where, names, depth - 1)

        def visit(function) -> None:
            if id(function) in visited:
                return
            visited.add(id(function))
            code, namespace = function.__code__, function.__globals__
            names = sorted(code_names(code))  # sorted: addresses follow the order
            for name in names:
                if name not in namespace:
                    continue
                value = namespace[name]
                if swap(value, name, lambda v, n=name: namespace.__setitem__(n, v)):
                    continue
                if isinstance(value, simkernel.FakeCUDAKernel):
                    visit(value.fn)
                else:
                    attributes(value, name, names, ATTRIBUTE_DEPTH)
            for name, cell in zip(code.co_freevars, function.__closure__ or ()):
                try:
                    value = cell.cell_contents
                except ValueError:  # not bound yet
                    continue
                if swap(value, name, lambda v, c=cell: setattr(c, "cell_contents", v)):
                    continue
                if isinstance(value, simkernel.FakeCUDAKernel):
                    visit(value.fn)
                else:
                    attributes(value, name, names, ATTRIBUTE_DEPTH)

        visit(fn)
        return undo

    def _declare(self, name: str, ary: np.ndarray, origin: int, launch: int) -> None:
        """Declare a kernel argument as a buffer of its launch (skipped when its
        strides are not whole, non-negative elements: a buffer cannot say so)."""
        if any(s < 0 or s % ary.itemsize for s in ary.strides):
            return
        strides = None if ary.flags.c_contiguous else [s // ary.itemsize for s in ary.strides]
        self.writer.buffer(
            name, int(Space.GLOBAL), origin, ary.shape, ary.itemsize, strides=strides, launch=launch
        )

    def _initialized(self, start: int, nbytes: int) -> None:
        """Log ``init`` over global bytes the host filled before the launch."""
        self.log_init(start, start + nbytes)


def code_names(code) -> set[str]:
    """The global and attribute names ``code`` and the code nested in it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return names
