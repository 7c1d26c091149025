"""One recording under Numba's CUDA simulator: the writer, the log, the launches.

:meth:`Session.launch` replaces the simulator's kernel launch (see
``_numba_hooks``). It converts the arguments as the simulator does (host
arrays are copied to simulated device memory and back), but hands the kernel
:class:`RecordedArray`\\ s, and runs the blocks under the deterministic
:class:`Scheduler` instead of one OS thread per CUDA thread.
"""

from __future__ import annotations

import inspect
from math import prod
from time import perf_counter

import numpy as np
from numba.cuda.simulator import kernel as simkernel
from numba.cuda.simulator import kernelapi
from numba.cuda.simulator.args import ArgHint, InOut
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray, FakeWithinKernelCUDAArray

from .. import __version__
from ..ops import INIT, Space
from ..writer import TraceWriter
from ._numba_events import NO_SITE_WORD, SIZE_LIMIT, EventLog, SiteTable, pack
from ._numba_kernelapi import Launch, RecordingModule
from ._numba_memory import GlobalMemory, RecordedArray, recorded
from ._numba_sched import Scheduler


class Session:
    """Everything one recorded run owns; :meth:`finish` writes the trace."""

    def __init__(self, out: str, schedule: str, seed: int, simulator: str) -> None:
        self.writer = TraceWriter(out, producer=f"tracerace {__version__} record: {simulator} "
                                                f"simulator, schedule {schedule}, seed {seed}")
        self.log = EventLog(self.writer)
        self.sites = SiteTable(self.writer)
        self.sched = Scheduler(self.log, schedule, seed)
        self.memory = GlobalMemory()
        self.launches = 0
        self.seconds = 0.0
        """Time spent in launches and writing the trace (the host code excluded)."""
        self.incomplete = False
        """A launch ended in an exception: its events are partial, no trace is written."""
        self._params: dict[object, list[str]] = {}

    # -- launching --

    def launch(self, kernel, args: tuple) -> None:
        """Run ``kernel`` (a configured ``FakeCUDAKernel``) on ``args`` and log it."""
        start = perf_counter()
        try:
            self._run_launch(kernel, args, self.launches)
        except BaseException:
            self.incomplete = True
            raise
        finally:
            self.launches += 1
            self.seconds += perf_counter() - start

    def _run_launch(self, kernel, args: tuple, index: int) -> None:
        grid_dim, block_dim = simkernel.normalize_kernel_dimensions(kernel.grid_dim,
                                                                    kernel.block_dim)
        launch = Launch(self, index, kernel.dynshared_size)
        module = RecordingModule(grid_dim, block_dim, kernel.dynshared_size, launch)
        with simkernel._push_kernel_context(module):
            writebacks: list = []
            self.log.set_agent(index, 0, 0)
            names = self._param_names(kernel.fn, len(args))
            kernel_args = [self._argument(kernel, launch, name, arg, writebacks)
                           for name, arg in zip(names, args)]
            with kernelapi.swapped_cuda_module(kernel.fn, module):
                for block in range(prod(grid_dim)):
                    self.sched.run_block(kernel.fn, kernel_args, index, block, grid_dim,
                                         block_dim)
            for writeback in writebacks:
                writeback()
        self.memory.end_launch()

    def _param_names(self, fn, count: int) -> list[str]:
        names = self._params.get(fn)
        if names is None:
            params = inspect.signature(fn).parameters.values()
            names = self._params[fn] = [p.name for p in params
                                        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return names + [f"arg{i}" for i in range(len(names), count)]

    def _argument(self, kernel, launch: Launch, name: str, arg, writebacks: list):
        """What the kernel gets for ``arg``: arrays in global memory become
        :class:`RecordedArray`\\ s, anything else is passed as the simulator would."""
        kind, value = None, arg
        for extension in kernel.extensions:
            kind, value = extension.prepare_args(kind, value, stream=0, retr=writebacks)
        if isinstance(value, np.ndarray) and value.ndim > 0:
            device, temporary = InOut(value).to_device(writebacks), True
        elif isinstance(value, ArgHint):
            device = value.to_device(writebacks)
            temporary = device is not value.value
        elif isinstance(value, np.void):
            return FakeWithinKernelCUDAArray(FakeCUDAArray(value))
        else:
            device, temporary = value, False
        if not isinstance(device, FakeCUDAArray):
            return device
        if not isinstance(device._ary, np.ndarray):
            return FakeWithinKernelCUDAArray(device)
        return self._global_array(device._ary, name, launch.index, temporary)

    def _global_array(self, ary: np.ndarray, name: str, launch: int,
                      temporary: bool) -> RecordedArray:
        origin, new = self.memory.origin(ary, temporary=temporary)
        if new is not None:
            self._initialized(*new)
        self._declare(name, ary, origin, launch)
        return recorded(ary, origin, int(Space.GLOBAL), self)

    def _declare(self, name: str, ary: np.ndarray, origin: int, launch: int) -> None:
        """Declare a kernel argument as a buffer of its launch (skipped when its
        strides are not whole, non-negative elements: a buffer cannot say so)."""
        if any(s < 0 or s % ary.itemsize for s in ary.strides):
            return
        strides = None if ary.flags.c_contiguous else [s // ary.itemsize for s in ary.strides]
        self.writer.buffer(name, int(Space.GLOBAL), origin, ary.shape, ary.itemsize,
                           strides=strides, launch=launch)

    def _initialized(self, start: int, nbytes: int) -> None:
        """Log ``init`` over global bytes the host filled before the launch."""
        for offset in range(0, nbytes, SIZE_LIMIT):
            size = min(SIZE_LIMIT, nbytes - offset)
            self.log.log(start + offset, pack(INIT, space=int(Space.GLOBAL), size=size)
                         | NO_SITE_WORD)

    # -- finishing --

    def finish(self, keep: bool) -> bool:
        """Write the trace when ``keep`` (else discard it); True when written."""
        if not keep:
            self.writer.abort()
            return False
        start = perf_counter()
        self.log.flush()
        self.writer.close()
        self.seconds += perf_counter() - start
        return True

