"""The driver: batches in, findings out, bad input turned into one-line errors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...trace import badinput
from ...trace import ops as O
from ...trace.schema import COLUMN_NAMES
from ..findings import CheckResult, empty_findings
from .barriers import finish_launch
from .faulter import Faulter
from .granularity import global_shift_for, shared_shift_for
from .granules import global_accesses
from .layout import (
    F_KIND,
    F_PREV_ROW,
    F_RANK,
    F_ROW,
    GR_FIND,
    NEED_GROW,
    NEW_LAUNCH,
    OK,
    SV_ERR_A,
    SV_ERR_B,
    SV_ERR_C,
    SV_ERR_D,
    SV_GEN_N,
    SV_GROW,
    SV_LAUNCH,
    SV_NFIND,
    SV_SHARDS,
    SV_VIEW,
    VIEW_GLOBAL,
    VIEW_SHARED,
)
from .pools import Sizes
from .prefetch import prefetch
from .races import records
from .replay import Columns, replay, replay_shard
from .shadow import PAGE_SHIFT
from .state import FIND_HANDOVER_ROWS, EngineState


# The kernel's error statuses -> (rule, message) (tracerace.trace.badinput), from
# the four values it leaves in SV_ERR_A..D.
def _raise(status: int, sv: np.ndarray, row: int, path: str | None) -> None:
    """The bad-input error of a kernel's ``status`` (the reference words it the same)."""
    values = (int(sv[k]) for k in (SV_ERR_A, SV_ERR_B, SV_ERR_C, SV_ERR_D))
    raise badinput.error(status, *values, path=path, row=row)


def check_trace(
    reader,
    *,
    progress: Callable[[int], None] | None = None,
    on_findings: Callable[[np.ndarray], None] | None = None,
    page_shift: int = PAGE_SHIFT,
    sizes: Sizes | None = None,
    shared_shift: int | None = None,
    shard: tuple[int, int] = (0, 1),
    stretch_shift: int | None = None,
    raw: bool = False,
    handover_rows: int = FIND_HANDOVER_ROWS,
    cp_limits: tuple[int, int] | None = None,
    bar_gens: int | None = None,
) -> CheckResult:
    """Replay ``reader`` (a TraceReader) through the Numba engine.

    ``on_findings``: called once after each batch with the batch's findings
    (``FINDING_DTYPE``, in the order found), and once more with those the end
    of the trace makes; the result then holds no findings, and memory grows
    with one batch's findings, not all of them. A findings pool that would
    grow past ``handover_rows`` rows is emptied into records held until the
    batch's end: the hand-overs fall at batch ends whatever the pool's size,
    as the reference's and a sharded check's do, so the grouping (whose ids
    follow the order of hand-overs) sees the same input from each.

    A barrier that orders only some memory (``fence_spaces``) splits
    happens-before in two: one relation for global memory, one for shared.
    From the first batch that holds such a barrier on, the state is forked
    and two views replay every batch, one checking global (and local) memory
    and one shared memory, each joining clocks only at the barriers that
    fence its memory; after each batch their findings are merged as one
    checker would have kept them (the reference's shared-memory clock
    entries).

    ``page_shift``: log2 of the pages large accesses are recorded by (see
    ``shadow``, PAGES); no answer depends on it (tests make pages
    small so that short traces use them). ``sizes`` (the tables' starting
    sizes, :class:`.pools.Sizes`) and ``shared_shift`` (one shared granule size
    for every launch) are for tests too: no answer depends on them.

    ``shard``: (k, n), check only the bytes shard k of n owns
    (:mod:`.shards`, in stretches of ``1 << stretch_shift`` bytes;
    :mod:`tracerace.checker.parallel` merges the shards). ``raw``:
    ``on_findings`` (required) gets the pool's int64 rows, with the rank
    that merging needs (``layout.F_RANK``), instead of records, and gets
    them whenever a full pool is emptied too, not joined at the batch's end
    (``progress`` marks each end). ``cp_limits``, ``bar_gens``:
    see :class:`.state.EngineState`."""
    st = EngineState(page_shift, sizes, shared_shift, shard, stretch_shift, cp_limits, bar_gens)
    take = st.take_rows if raw else st.take_findings
    hand = _same if raw else records
    st.rows_total = reader.meta.num_rows
    st.read_rows_from(reader)  # a finding's earlier access (races.add_earlier_rows)
    views = [st]
    merged: list[np.ndarray] = []  # findings of two views, merged per batch
    drained: list[np.ndarray] = []  # a full findings pool's, until the batch ends
    # A full pool's rows go on at once when raw (the merger joins the
    # shards' chunks itself); records are held until the batch ends.
    drain = None if on_findings is None else on_findings if raw else drained.append
    events = 0
    # The read-ahead thread is stopped before returning or raising, so the
    # caller may close the reader at once.
    batches = prefetch(((b, global_accesses(b, st.sv)) for b in reader), depth=1)
    try:
        with Faulter(st) as faulter:
            for batch, gpos in batches:
                if len(views) == 1 and batch.once("fences_some_memory", _fences_some_memory):
                    views.append(st.fork(VIEW_SHARED))
                    st.sv[SV_VIEW] = VIEW_GLOBAL
                if len(views) == 1:
                    replay_batch(st, batch, reader.meta.path, gpos, drain, raw, handover_rows)
                    if on_findings is not None:
                        on_findings(_joined(drained, take()))
                else:
                    # Both views hold the batch's findings until they are merged.
                    for view in views:
                        replay_batch(view, batch, reader.meta.path, gpos)
                    merged.append(hand(_merge_views([v.take_rows() for v in views])))
                    if on_findings is not None:
                        on_findings(merged.pop())
                # From the second batch on: a one-batch check is over before
                # faulting ahead could pay for itself.
                faulter.start()
                events += batch.n
                st.batch_done(events)
                if progress is not None:
                    progress(events)
    finally:
        batches.close()
    for view in views:
        close_launch(view)
    if len(views) > 1:
        merged.append(hand(_merge_views([v.take_rows() for v in views])))
        last = np.concatenate(merged)
        merged.clear()
    else:
        last = take()
    if on_findings is not None:
        on_findings(last)
        last = empty_findings()
    return CheckResult(events, last)


def _joined(held: list[np.ndarray], last: np.ndarray) -> np.ndarray:
    """The batch's findings: ``held`` (emptied, so that its parts are freed
    while the consumer works on the whole) and ``last``."""
    if not held:
        return last
    held.append(last)
    whole = np.concatenate(held)
    held.clear()
    return whole


def _same(rows: np.ndarray) -> np.ndarray:
    return rows


_MEMORY_KINDS = np.array(
    [O.K_RAW, O.K_WAR, O.K_WAW, O.K_UNINIT_READ, O.K_ASYNC_INFLIGHT, O.K_PROXY_FENCE]
)


def _fences_some_memory(cols: dict) -> bool:
    """Whether a barrier of the batch leaves global or shared memory unfenced."""
    op = cols["op"]
    barrier = (op == O.BAR_SYNC) | (op == O.BAR_ARRIVE) | (op == O.WARP_SYNC)
    return bool(np.any(barrier & ((cols["fence_spaces"] & 3) != 3)))


def _merge_views(found: list[np.ndarray]) -> np.ndarray:
    """The findings of one or two views (global first) as one checker keeps
    them: per (row, kind), the candidate of highest (earlier row, rank). Only
    the global view reports what is not about memory, and the views never
    tie (a tie would need one access in both)."""
    if len(found) == 1:
        return found[0]
    g, s = found
    memory = np.isin(g[:, F_KIND], _MEMORY_KINDS)
    both = np.concatenate([g[memory], s[np.isin(s[:, F_KIND], _MEMORY_KINDS)]])
    both = both[np.lexsort((both[:, F_RANK], both[:, F_PREV_ROW], both[:, F_KIND], both[:, F_ROW]))]
    last = np.ones(both.shape[0], bool)
    last[:-1] = (both[1:, F_ROW] != both[:-1, F_ROW]) | (both[1:, F_KIND] != both[:-1, F_KIND])
    return np.concatenate([g[~memory], both[last]])


def replay_batch(
    st: EngineState,
    batch,
    path: str | None,
    gpos: np.ndarray | None = None,
    on_findings: Callable[[np.ndarray], None] | None = None,
    raw: bool = False,
    handover_rows: int = FIND_HANDOVER_ROWS,
) -> None:
    """Run the kernel over one batch, growing pools and closing launches
    whenever it stops to ask. ``gpos``: :func:`global_accesses` of the batch,
    when the read-ahead thread has computed it. ``on_findings``: takes a full
    findings pool instead of its growth past ``handover_rows`` rows (its
    rows when ``raw``, else records)."""
    c = batch.cols
    if st.notes_rows:
        st.rows.note(batch)
    if gpos is None:
        gpos = global_accesses(batch, st.sv)
    cols = Columns(*(c[name] for name in COLUMN_NAMES))
    start = 0
    kernel = replay_shard if st.sv[SV_SHARDS] > 1 else replay
    while True:
        st.kernel_calls += 1
        status, start = kernel(cols, batch.row0, start, st.tables(), gpos)
        if status == OK:
            return
        if status == NEED_GROW:
            mask = int(st.sv[SV_GROW])
            if (
                mask & GR_FIND
                and on_findings is not None
                and st.sv[SV_NFIND] > 0
                and st.arrays["find"].shape[0] >= handover_rows
            ):
                on_findings(st.take_rows() if raw else st.take_findings())
                mask &= ~GR_FIND
            st.grow(mask)
        elif status == NEW_LAUNCH:  # a launch the kernel leaves to the driver (launches)
            close_launch(st)
            shared = st.shared_shift if st.shared_shift is not None else shared_shift_for(c, start)
            st.reset_launch(int(c["launch"][start]), shared, global_shift_for(c, start))
        else:
            _raise(status, st.sv, batch.row0 + start, path)


def close_launch(st: EngineState) -> None:
    if st.sv[SV_LAUNCH] < 0:
        return
    if st.sv[SV_NFIND] + st.sv[SV_GEN_N] + 8 > st.arrays["find"].shape[0]:
        st.grow(GR_FIND)
        while st.sv[SV_NFIND] + st.sv[SV_GEN_N] + 8 > st.arrays["find"].shape[0]:
            st.grow(GR_FIND)
    finish_launch(st.arrays["gens"], st.sv, st.arrays["find"])
