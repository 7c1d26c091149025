"""Asynchronous copies (cp.async, bulk and TMA): the copy's two sides, and when an
async agent's writes are retired or fenced for the generic proxy.
"""

from __future__ import annotations

import numpy as np

from ..jit import jit_inline, jit_leaf
from .layout import (
    AG_FENCES,
    AG_ISSUER,
    AG_KIND,
    AG_RETIRED,
    FN_AUX,
    FN_EPOCH,
    FN_NEXT,
    FN_VAL,
    KIND_TMA,
    SV_FEN_TOP,
)


@jit_leaf
def proxy_fenced(ag, fen, w, w_epoch, known_epoch):
    """A fence_proxy_async by ``w`` after epoch ``w_epoch`` and at or before
    ``known_epoch`` (what the later access knows of ``w``)."""
    f = ag[w, AG_FENCES]
    while f >= 0:
        e = fen[f, FN_EPOCH]
        if e <= known_epoch:
            return e > w_epoch
        f = fen[f, FN_NEXT]
    return False


@jit_inline
def retiring_wait(ag, fen, ca, group):
    """The log entry of the wait that retired ``group`` of cp.async agent
    ``ca`` (the oldest with FN_VAL >= group), or -1 when none has."""
    found = np.int64(-1)
    f = ag[ca, AG_FENCES]
    while f >= 0 and fen[f, FN_VAL] >= group:
        found = f
        f = fen[f, FN_NEXT]
    return found


@jit_inline
def cp_waiter(ag, fen, ca, f):
    """The thread of log entry ``f`` of cp.async agent ``ca``: its issuer, or
    the thread of the mbar_wait that retired the copies."""
    aux = fen[f, FN_AUX]
    if aux < 0:
        return fen[-aux - 1, FN_VAL]
    return ag[ca, AG_ISSUER]


@jit_inline
def cp_wait_site(fen, f):
    """The site of the wait of log entry ``f`` of a cp.async agent."""
    aux = fen[f, FN_AUX]
    if aux < 0:
        return fen[-aux - 1, FN_AUX]
    return aux


@jit_inline
def phase_entry(ag, fen, ta, k):
    """The log entry of the phase that load ``k`` of TMA agent ``ta`` completes."""
    f = ag[ta, AG_FENCES]
    while f >= 0 and fen[f, FN_EPOCH] > k:
        f = fen[f, FN_NEXT]
    return f


@jit_inline
def copy_retired(ag, fen, u, k):
    """Copy ``k`` of async agent ``u`` is retired: its group retired by a wait
    of its issuer, or (a tma_load) its phase returned by some mbar_wait."""
    if ag[u, AG_RETIRED] >= k:  # (never for a TMA agent: its AG_RETIRED stays 0)
        return True
    if ag[u, AG_KIND] == KIND_TMA:
        f = phase_entry(ag, fen, u, k)
        return f >= 0 and fen[f, FN_AUX] != 0
    return False


@jit_inline
def first_wait(ag, fen, ta, k):
    """The log entry of the first wait that returned on the phase that copy
    or store ``k`` of TMA agent ``ta`` completes, or -1 when none has."""
    f = phase_entry(ag, fen, ta, k)
    if f < 0:
        return np.int64(-1)
    return fen[f, FN_AUX] - 1


# ---------------------------------------------------------------------------
@jit_leaf
def on_fence_proxy(t, c, i, ev, a, epoch):
    """fence.proxy.async: the reference's ``on_fence_proxy``."""
    sv, ag, fen = t.sv, t.ag, t.fen
    f = sv[SV_FEN_TOP]
    sv[SV_FEN_TOP] += 1
    fen[f, FN_NEXT] = ag[a, AG_FENCES]
    fen[f, FN_EPOCH] = epoch
    ag[a, AG_FENCES] = f
