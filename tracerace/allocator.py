"""The C allocator of the command's process: one malloc arena for all threads.

glibc gives a thread that allocates while another holds the main arena an
arena of its own (up to eight per core), and memory freed in an arena is
reused by that arena only. A sharded check's threads (the shards, the shared
reader, the faulters, the read-ahead) each allocate NumPy arrays a batch in
size, and what one arena freed was not reused by the next batch's arrays in
another: a read-once kernel checked in two shards peaked ~55 MiB higher, and
spent more time in the kernel faulting in fresh pages. The replay kernels
allocate nothing and the threads allocate few, large arrays, so sharing one
arena costs no waiting (``bench/README.md``, "Findings handed over as
records").

Only the command line calls :func:`one_malloc_arena`: a library leaves its
host process's allocator alone. Where the C library has no ``mallopt`` (not
glibc), nothing changes.
"""

from __future__ import annotations

import ctypes

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter for the most arenas (``malloc.h``)."""


def one_malloc_arena() -> bool:
    """Make every thread of this process allocate from one malloc arena;
    whether the C library took the setting. Call it before starting threads."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(M_ARENA_MAX, 1) == 1
