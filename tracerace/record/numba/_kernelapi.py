"""The ``cuda`` module kernel code sees while it is recorded.

The simulator swaps a ``FakeCUDAModule`` into the kernel's globals for the
length of a launch; :class:`RecordingModule` is a subclass that answers
``threadIdx`` and friends from the deterministic scheduler (not from
``threading.current_thread()``) and logs barriers, fences and atomics.
Its ``shared`` and ``local`` allocators give :class:`RecordedArray`\\ s, and
shared arrays are per block, told apart by their allocation site.
``cuda.cg.this_grid().sync()`` is the grid barrier (see ``_sched``).
Warp operations (``syncwarp``, the shuffles, votes and matches), which the
simulator lacks, are meetings of the scheduler (``_warp``). What neither
has raises :class:`Unrecordable` naming the line that used it.
"""

from __future__ import annotations

import sys

import numpy as np
from numba.cuda import types
from numba.cuda.np import numpy_support
from numba.cuda.simulator import kernelapi

from ...trace.ops import BAR_SYNC, FENCE, Scope, Sem, Space
from ..events import pack
from ._limits import Unrecordable, missing_feature
from ._memory import RecordedArray, StaticLayout, assigned_name, recorded
from ._warp import (
    FULL_MASK,
    SHFL_BFLY,
    SHFL_DOWN,
    SHFL_IDX,
    SHFL_UP,
    WARP_SIZE,
    ballot,
    match_all,
    match_any,
    shuffle,
)

_getframe = sys._getframe

ATOMIC_OPS = (
    "add",
    "sub",
    "and_",
    "or_",
    "xor",
    "inc",
    "dec",
    "exch",
    "max",
    "min",
    "nanmax",
    "nanmin",
    "cas",
)
"""Atomics of the form ``op(array, index, *values)`` (``compare_and_swap`` has no index)."""

BARRIER_WORD = pack(BAR_SYNC)
"""A ``bar_sync`` on barrier 0 (its ``arg`` is filled in when the generation completes)."""


class Launch:
    """What one kernel launch shares between its blocks: shared and local layouts."""

    def __init__(self, session, index: int, dynshared_size: int) -> None:
        self.session = session
        self.index = index
        self.dynshared_size = dynshared_size
        self.shared = StaticLayout(Space.SHARED, dynshared_size, self.declare)
        self.local = StaticLayout(Space.LOCAL, 0, self.declare)
        self.dynamic_declared = False

    def declare(self, name: str, space: Space, base: int, shape, itemsize: int) -> None:
        self.session.writer.buffer(name, int(space), base, shape, itemsize, launch=self.index)

    def site_word(self, frame) -> int:
        return self.session.sites.word(frame)


class RecordingModule(kernelapi.FakeCUDAModule):
    """``cuda`` inside a recorded kernel."""

    def __init__(self, grid_dim, block_dim, dynshared_size: int, launch: Launch) -> None:
        super().__init__(grid_dim, block_dim, dynshared_size)
        self._launch = launch
        self._sched = launch.session.sched
        self._log = launch.session.log
        self._rec_shared = RecordingShared(launch)
        self._rec_local = RecordingLocal(launch)
        self._rec_atomic = RecordingAtomic(launch.session)
        self._rec_cg = RecordingCg(self)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)  # probes of private names find nothing, as before
        raise missing_feature(name, self._launch.session.sites.text(_getframe(1)))

    # -- who is running --

    @property
    def threadIdx(self):
        run = self._sched.block
        return run.thread_idx[run.current]

    @property
    def blockIdx(self):
        return self._sched.block.block_idx

    @property
    def laneid(self) -> int:
        return self._sched.block.current % 32

    # -- memory --

    @property
    def shared(self) -> RecordingShared:
        return self._rec_shared

    @property
    def local(self) -> RecordingLocal:
        return self._rec_local

    @property
    def atomic(self) -> RecordingAtomic:
        return self._rec_atomic

    @property
    def cg(self) -> RecordingCg:
        return self._rec_cg

    # -- barriers and fences --

    def syncthreads(self) -> None:
        self.barrier(_getframe(1))

    def syncthreads_count(self, value) -> int:
        return sum(1 for v in self.barrier(_getframe(1), value) if v)

    def syncthreads_and(self, value) -> int:
        return int(all(self.barrier(_getframe(1), value)))

    def syncthreads_or(self, value) -> int:
        return int(any(self.barrier(_getframe(1), value)))

    def barrier(self, frame, vote=None):
        """Arrive at the block barrier (id 0) from ``frame``'s line and wait."""
        if vote is not None:
            vote = bool(vote)
        return self._sched.block.barrier(BARRIER_WORD | self._launch.site_word(frame), vote)

    def threadfence(self) -> None:
        self._fence(Scope.DEVICE, _getframe(1))

    def threadfence_block(self) -> None:
        self._fence(Scope.BLOCK, _getframe(1))

    def threadfence_system(self) -> None:
        self._fence(Scope.SYSTEM, _getframe(1))

    def _fence(self, scope: Scope, frame) -> None:
        word = pack(FENCE, scope=int(scope), sem=int(Sem.ACQ_REL))
        self._log.log(0, word | self._launch.site_word(frame))
        self._sched.sync_point()

    def grid_sync(self, frame) -> None:
        """Arrive at the grid barrier from ``frame``'s line and wait for every thread."""
        self._sched.grid_sync(self._launch.site_word(frame))

    # -- warp operations --

    def _meet(self, name: str, mask, value, frame):
        """The running lane's part in warp operation ``cuda.NAME``: the values
        every lane of the meeting brought, by lane."""
        word = self._launch.site_word(frame)
        return self._sched.block.warp_meet(name, int(mask), value, word).values

    def _lane(self) -> int:
        return self._sched.block.current % WARP_SIZE

    def syncwarp(self, mask=FULL_MASK) -> None:
        self._meet("syncwarp", mask, None, _getframe(1))

    def shfl_sync(self, mask, value, src_lane):
        return self._shuffle("shfl_sync", SHFL_IDX, mask, value, src_lane, _getframe(1))

    def shfl_up_sync(self, mask, value, delta):
        return self._shuffle("shfl_up_sync", SHFL_UP, mask, value, delta, _getframe(1))

    def shfl_down_sync(self, mask, value, delta):
        return self._shuffle("shfl_down_sync", SHFL_DOWN, mask, value, delta, _getframe(1))

    def shfl_xor_sync(self, mask, value, lane_mask):
        return self._shuffle("shfl_xor_sync", SHFL_BFLY, mask, value, lane_mask, _getframe(1))

    def _shuffle(self, name: str, mode: int, mask, value, b, frame):
        values = self._meet(name, mask, value, frame)
        return shuffle(values, mode, self._lane(), b)

    def all_sync(self, mask, predicate) -> bool:
        return all(self._meet("all_sync", mask, bool(predicate), _getframe(1)).values())

    def any_sync(self, mask, predicate) -> bool:
        return any(self._meet("any_sync", mask, bool(predicate), _getframe(1)).values())

    def eq_sync(self, mask, predicate) -> bool:
        return len(set(self._meet("eq_sync", mask, bool(predicate), _getframe(1)).values())) == 1

    def ballot_sync(self, mask, predicate) -> int:
        return _i4(ballot(self._meet("ballot_sync", mask, bool(predicate), _getframe(1))))

    def match_any_sync(self, mask, value) -> int:
        return _i4(match_any(self._meet("match_any_sync", mask, value, _getframe(1)), self._lane()))

    def match_all_sync(self, mask, value) -> tuple[int, bool]:
        lanes, same = match_all(
            self._meet("match_all_sync", mask, value, _getframe(1)), int(mask) & FULL_MASK
        )
        return _i4(lanes), same

    def activemask(self) -> int:
        """Every lane of the caller's warp that the block has: the lanes a
        converged warp runs with (no meeting, and no divergence modelled)."""
        run = self._sched.block
        return run.warp_lanes(run.current // WARP_SIZE)

    def lanemask_lt(self) -> int:
        return (1 << self._lane()) - 1


def _i4(mask: int) -> int:
    """A 32-lane mask as the signed 32-bit number compiled numba-cuda types
    ``ballot_sync``, ``match_any_sync`` and ``match_all_sync`` with (``i4``:
    lane 31 set is negative); ``activemask`` and ``lanemask_lt`` are ``uint32``."""
    return mask - (1 << 32) if mask & 0x80000000 else mask


class RecordingCg:
    """``cuda.cg``: ``this_grid()`` is the grid group; its ``sync()`` waits for
    every thread of the launch (the blocks of the launch run together)."""

    def __init__(self, module: RecordingModule) -> None:
        self._module = module

    def this_grid(self) -> RecordingCg:
        return self

    def sync(self) -> None:
        self._module.grid_sync(_getframe(1))

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        where = self._module._launch.session.sites.text(_getframe(1))
        raise missing_feature(name, where, owner="cuda.cg")


class RecordingShared:
    """``cuda.shared.array``: one array per allocation site and block.

    Static arrays follow the dynamic shared memory (``shape=0``: every such
    array views the same ``dynshared_size`` bytes at offset 0).
    """

    def __init__(self, launch: Launch) -> None:
        self._launch = launch

    def array(self, shape, dtype, alignment=None) -> RecordedArray:
        frame = _getframe(1)
        dtype = _dtype(dtype)
        if isinstance(shape, int) and shape == 0:
            return self._dynamic(dtype, frame)
        arrays = self._launch.session.sched.block.shared
        key = (frame.f_code, frame.f_lasti)
        array = arrays.get(key)
        if array is None:
            offset = self._launch.shared.offset(key, frame, shape, dtype)
            array = arrays[key] = recorded(
                np.zeros(shape, dtype), offset, int(Space.SHARED), self._launch.session
            )
        return array

    def _dynamic(self, dtype: np.dtype, frame) -> RecordedArray:
        """A view of this block's dynamic shared memory; the first view in
        the launch names the buffer."""
        launch = self._launch
        arrays = launch.session.sched.block.shared
        memory = arrays.get("dynamic")
        if memory is None:
            memory = arrays["dynamic"] = np.zeros(launch.dynshared_size, dtype=np.uint8)
        count = len(memory) // dtype.itemsize
        if not launch.dynamic_declared and count:
            launch.dynamic_declared = True
            launch.declare(
                assigned_name(frame) or "dynamic_shared", Space.SHARED, 0, (count,), dtype.itemsize
            )
        view = np.frombuffer(memory.data, dtype=dtype, count=count)
        return recorded(view, 0, int(Space.SHARED), launch.session)


class RecordingLocal:
    """``cuda.local.array``: a fresh array per call, at its site's fixed offset."""

    def __init__(self, launch: Launch) -> None:
        self._launch = launch

    def array(self, shape, dtype, alignment=None) -> RecordedArray:
        frame = _getframe(1)
        dtype = _dtype(dtype)
        offset = self._launch.local.offset((frame.f_code, frame.f_lasti), frame, shape, dtype)
        return recorded(np.zeros(shape, dtype), offset, int(Space.LOCAL), self._launch.session)


class RecordingAtomic(kernelapi.FakeCUDAAtomic):
    """``cuda.atomic``: the simulator's operations, each logged as one atomic
    (device scope, relaxed) on the element it updates. The scheduler may switch
    threads before each (a thread polling a flag with atomics must yield), and
    an atomic that changed memory counts as progress."""

    def __init__(self, session) -> None:
        self._session = session

    def _apply(self, name: str, array, index, args, frame):
        stock = getattr(kernelapi.FakeCUDAAtomic, name)
        if not isinstance(array, RecordedArray):
            where = self._session.sites.text(frame)
            raise Unrecordable(
                f"cuda.atomic.{name}{f' at {where}' if where else ''} updates "
                f"an array the recorder does not follow "
                f"({type(array).__name__}); the kernel must reach it through "
                f"an argument, a global or a closure variable"
            )
        sched = self._session.sched
        sched.sync_point()
        ary = array.ndarray
        key = tuple(index) if isinstance(index, tuple) else index
        before = ary[key].copy()
        result = stock(self, ary, *args)
        array.log_access(array.atomic_tag, index, frame)
        if np.any(ary[key] != before):
            sched.progress += 1
        return result

    def compare_and_swap(self, array, old, val):
        index = (0,) * array.ndim
        return self._apply("compare_and_swap", array, index, (old, val), _getframe(1))


def _atomic_method(name: str):
    def method(self, array, index, *values):
        return self._apply(name, array, index, (index, *values), _getframe(1))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``cuda.atomic.{name}``, logged."
    return method


for _name in ATOMIC_OPS:
    setattr(RecordingAtomic, _name, _atomic_method(_name))
del _name


def _dtype(dtype) -> np.dtype:
    """A NumPy dtype from a NumPy or Numba type."""
    if isinstance(dtype, types.Type):
        return numpy_support.as_dtype(dtype)
    return np.dtype(dtype)
