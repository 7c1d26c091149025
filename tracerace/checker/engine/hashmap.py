"""A small open-addressing hash map in a NumPy array, for jitted code.

Keys are up to three int64 words; rows are ``(k0, k1, k2, value)``. About
five times faster than a typed dict here, and it persists across batches as
a plain array. The owner keeps the count and grows the table (``rehash``)
before it is half full, so a probe always ends at an empty row.
"""

from __future__ import annotations

import numpy as np

from ..jit import jit, jit_inline, jit_leaf, prefetch_row

HM_FIELDS = 4
HM_EMPTY = np.iinfo(np.int64).min


def new_table(cap: int) -> np.ndarray:
    tbl = np.zeros((cap, HM_FIELDS), np.int64)
    tbl[:, 0] = HM_EMPTY
    return tbl


@jit_inline
def _slot(k0, k1, k2, cap):
    h = (
        k0 * np.int64(-7046029254386353131)
        + k1 * np.int64(-4658895280553007687)
        + k2 * np.int64(2654435761)
    )
    h ^= h >> 31
    return h & (cap - 1)


@jit_inline
def hm_prefetch(tbl, k0, k1, k2):
    """Start loading the row a lookup of the key probes first."""
    prefetch_row(tbl, _slot(k0, k1, k2, tbl.shape[0]))


@jit_inline
def hm_get(tbl, k0, k1, k2):
    """The value stored under the key, or -1."""
    cap = tbl.shape[0]
    h = _slot(k0, k1, k2, cap)
    while True:
        if tbl[h, 0] == HM_EMPTY:
            return np.int64(-1)
        if tbl[h, 0] == k0 and tbl[h, 1] == k1 and tbl[h, 2] == k2:
            return tbl[h, 3]
        h = (h + 1) & (cap - 1)


@jit_leaf
def hm_put(tbl, k0, k1, k2, value):
    """Store ``value`` under the key; returns 1 when the key is new."""
    cap = tbl.shape[0]
    h = _slot(k0, k1, k2, cap)
    while True:
        if tbl[h, 0] == HM_EMPTY:
            tbl[h, 0] = k0
            tbl[h, 1] = k1
            tbl[h, 2] = k2
            tbl[h, 3] = value
            return 1
        if tbl[h, 0] == k0 and tbl[h, 1] == k1 and tbl[h, 2] == k2:
            tbl[h, 3] = value
            return 0
        h = (h + 1) & (cap - 1)


@jit
def rehash(old, new):
    for s in range(old.shape[0]):
        if old[s, 0] != HM_EMPTY:
            hm_put(new, old[s, 0], old[s, 1], old[s, 2], old[s, 3])
