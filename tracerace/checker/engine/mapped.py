"""Pools that grow in place: int64 arrays in anonymous memory maps.

The node pools and the clock arena are the engine's largest state and grow
by doubling. A NumPy array grows by copying into a new allocation, so every
row is copied once per doubling and the kernel clears the pages of both
copies; here the mapping is enlarged with ``mremap`` (``mmap.resize``),
which moves page tables, copies nothing, and faults a page in only when a
kernel first writes it. Measured on the tiled benchmark at 10^7 events
(kernel only): the same run without any growth of the node pools was ~10-15%
faster than growing them by copying; this gets that back without sizing
pools in advance.

The array handed to kernels is a view of the mapping; a view must not be
held across :meth:`MappedArray.grow` (the driver passes them to kernels
only). Where the mapping cannot be resized in place (a view still held, or
a platform without ``mremap``), growing falls back to a copy.

First touch is slow on some machines (this VM clears pages at ~300 MB/s:
writing a fresh 128 MB took 0.49 s, the same write to populated pages
0.02 s). :meth:`MappedArray.populate` faults rows in ahead of use from
another thread (``madvise(MADV_POPULATE_WRITE)``), and a mapping can
reserve more rows than its array shows, so that the rows the next growth
will add can be populated before it happens.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
import threading

import numpy as np

_ITEM = np.dtype(np.int64).itemsize
_PAGE = mmap.PAGESIZE
# madvise(MADV_POPULATE_WRITE) (Linux >= 5.14) faults pages in as if written,
# without changing what they hold. Called through ctypes, which lets go of
# the GIL for the call.
_MADV_POPULATE_WRITE = 23
_madvise = None
if sys.platform.startswith("linux"):
    try:
        _madvise = ctypes.CDLL(None, use_errno=True).madvise
        _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _madvise.restype = ctypes.c_int
    except (OSError, AttributeError):
        _madvise = None


def _anonymous(nbytes: int) -> mmap.mmap:
    # Private: a shared anonymous mapping is a shmem file of fixed size, and
    # growing it with mremap leaves the new pages beyond the file (SIGBUS).
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    return mmap.mmap(-1, nbytes, flags=flags) if flags else mmap.mmap(-1, nbytes)


class MappedArray:
    """An int64 array of ``rows`` x ``cols`` (``cols=0``: one dimension)
    whose rows can be added in place. Fresh rows read as zero. The mapping
    holds at least ``reserve`` rows (address space only, until touched)."""

    def __init__(self, rows: int, cols: int = 0, reserve: int = 0) -> None:
        self.cols = cols
        self.width = max(cols, 1)
        self.copies = 0  # growths that had to copy (for tests and curiosity)
        # Held by grow and populate: populate runs on another thread.
        self.lock = threading.Lock()
        self.populated = 0  # rows below this are faulted in
        self._map = _anonymous(max(1, rows, reserve) * self.width * _ITEM)
        self._advise()
        self.array = self._view(rows)

    @property
    def capacity(self) -> int:
        """Rows the mapping holds now (the array may show fewer)."""
        return len(self._map) // (self.width * _ITEM)

    def _advise(self) -> None:
        # NumPy asks for transparent huge pages on its large arrays; so do
        # we: random access over a large pool otherwise misses the TLB.
        advice = getattr(mmap, "MADV_HUGEPAGE", None)
        if advice is not None:
            try:
                self._map.madvise(advice)
            except (OSError, ValueError):
                pass

    def _view(self, rows: int) -> np.ndarray:
        flat = np.frombuffer(self._map, np.int64, count=rows * self.width)
        return flat.reshape(rows, self.cols) if self.cols else flat

    def populate(self, stop: int) -> bool:
        """Fault in the rows from ``populated`` up to ``stop`` (clipped to
        the mapping) without changing them, so that the thread that later
        writes them does not pay for the page faults. Meant for a thread
        with time to spare while another fills the array. Returns whether
        it faulted anything (never, where the system cannot: see
        :func:`can_populate`)."""
        global _madvise
        with self.lock:
            start = self.populated
            stop = min(stop, self.capacity)
            if _madvise is None or self.array is None or stop <= start:
                return False
            row = self.width * _ITEM
            base = self.array.__array_interface__["data"][0]
            lo = (base + start * row) & ~(_PAGE - 1)
            if _madvise(lo, base + stop * row - lo, _MADV_POPULATE_WRITE) != 0:
                if ctypes.get_errno() == 22:  # EINVAL: the kernel has no such advice
                    _madvise = None
                return False
            self.populated = stop
            return True

    def grow(self, rows: int, used: int) -> np.ndarray:
        """Room for ``rows`` rows, keeping the first ``used``; returns the new view."""
        with self.lock:
            self.array = None  # drop our view, or the mapping cannot move
            if rows > self.capacity:
                self._resize(rows, used)
            self.array = self._view(rows)
            return self.array

    def _resize(self, rows: int, used: int) -> None:
        # Twice what is asked: room the next growth takes without a resize,
        # which populate may fault in beforehand.
        nbytes = 2 * rows * self.width * _ITEM
        try:
            self._map.resize(nbytes)
        except (BufferError, OSError, SystemError, ValueError):
            old = np.frombuffer(self._map, np.int64, count=used * self.width)
            new_map = _anonymous(nbytes)
            np.frombuffer(new_map, np.int64, count=used * self.width)[:] = old
            self._map = new_map
            self.copies += 1
            self.populated = used
        self._advise()


def can_populate() -> bool:
    """Whether :meth:`MappedArray.populate` works here (Linux >= 5.14; it
    finds out on its first call)."""
    return _madvise is not None
