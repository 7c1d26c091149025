"""The async copies a thread issues and waits for: cp.async and bulk (TMA) stores and
bulk reductions, their commit groups and waits (the reference's ``on_cp_async``,
``on_tma_store`` (also ``bulk_reduce``), ``on_cp_commit``, ``on_bulk_commit``,
``on_cp_wait``, ``on_bulk_wait``).
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from .. import reasons as R
from ..jit import jit_inline, jit_leaf
from .agents import async_agent, join_into, set_base
from .granules import shadow_of
from .layout import (
    AG_BASE,
    AG_BULK_AGENT,
    AG_BULK_OPEN,
    AG_BULK_RET,
    AG_CP_AGENT,
    AG_CP_OPEN,
    AG_CP_RET,
    AG_EPOCH,
    AG_FENCES,
    AG_RETIRED,
    CP_ARRIVE_BITS,
    E_CP_GROUP_OVERFLOW,
    E_WAIT_GROUP,
    FN_AUX,
    FN_EPOCH,
    FN_NEXT,
    FN_VAL,
    I_ATOMIC,
    I_PROXY,
    I_SCOPE_SHIFT,
    KIND_BULK,
    KIND_CP,
    OK,
    SV_CP_GROUP_MAX,
    SV_ERR_A,
    SV_ERR_B,
    SV_ERR_C,
    SV_FEN_TOP,
)
from .memory import CopyOp, copy
from .races import flush_candidates


# ---------------------------------------------------------------------------
# The async agents of a thread: one for its cp.async copies, one for its bulk
# (TMA) stores, made at the first use.
@jit_inline
def agent_of(t, a, col, kind):
    """Thread ``a``'s async agent of ``kind`` (``KIND_CP`` or ``KIND_BULK``), kept in
    its column ``col`` (``AG_CP_AGENT`` or ``AG_BULK_AGENT``)."""
    ca = t.ag[a, col]
    if ca < 0:
        ca = async_agent(t.ag, t.sv, t.async_map, a, kind, 0)
        t.ag[a, col] = ca
    return ca


@jit_inline
def issue_copy(t, c, i, ev, a, ca, group, bits, dst_bits, kind):
    """A copy issued by thread ``a`` into commit group ``group`` of its async
    agent ``ca`` (a cp.async agent's: a stamp): the agent reads the source
    and writes the destination."""
    sv, ag, find, cand = t.sv, t.ag, t.find, t.cand
    if copy(
        shadow_of(t),
        CopyOp(
            a,
            ca,
            group,
            np.int64(bits),
            np.int64(dst_bits),
            np.int64(kind),
            ev.row,
            ev.ts,
            ev.site,
            ev.op,
            np.int64(c.space[i]),
            np.int64(c.addr[i]),
            ev.size,
            np.int64(c.space2[i]),
            np.int64(c.addr2[i]),
            ev.block,
            np.int64(c.peer[i]),
        ),
    ):
        flush_candidates(
            cand,
            find,
            sv,
            t.gens,
            ag,
            a,
            ev.row,
            ev.launch,
            ev.block,
            ev.thread,
            ev.op,
            ev.ts,
            ev.site,
        )


@jit_inline
def on_cp_async(t, c, i, ev, a, epoch):
    """cp.async: a copy into the thread's open cp.async group. Its agent keeps
    the thread's clock at its latest copy, for a cp_async_mbar_arrive (its
    base changes only after a join, so mostly once per group)."""
    ag = t.ag
    ca = agent_of(t, a, AG_CP_AGENT, KIND_CP)
    issue_copy(t, c, i, ev, a, ca, ag[a, AG_CP_OPEN], 0, 0, R.INFLIGHT_CP_ASYNC)
    if ag[ca, AG_BASE] != ag[a, AG_BASE]:
        set_base(ag, t.snaps, t.sv, ca, ag[a, AG_BASE])
    ag[ca, AG_EPOCH] = epoch


@jit_leaf
def on_tma_store(t, c, i, ev, a, epoch):
    """A bulk (TMA) store: a copy by the async proxy into the open bulk group
    (a bulk_reduce: its destination write a relaxed device-scope atomic)."""
    ca = agent_of(t, a, AG_BULK_AGENT, KIND_BULK)
    dst_bits = np.int64(0)
    if ev.op == O.BULK_REDUCE:
        dst_bits = np.int64(I_ATOMIC | (O.SCOPE_DEVICE << I_SCOPE_SHIFT))
    issue_copy(t, c, i, ev, a, ca, t.ag[a, AG_BULK_OPEN], I_PROXY, dst_bits, R.INFLIGHT_BULK_STORE)


@jit_inline
def on_cp_commit(t, c, i, ev, a, epoch):
    """Close the open group: the next copy's stamp is the next group's first."""
    group = t.ag[a, AG_CP_OPEN] >> CP_ARRIVE_BITS
    if group >= t.sv[SV_CP_GROUP_MAX]:
        t.sv[SV_ERR_A] = ev.block
        t.sv[SV_ERR_B] = ev.thread
        t.sv[SV_ERR_C] = t.sv[SV_CP_GROUP_MAX]
        return E_CP_GROUP_OVERFLOW
    t.ag[a, AG_CP_OPEN] = (group + 1) << CP_ARRIVE_BITS
    return OK


@jit_inline
def on_bulk_commit(t, c, i, ev, a, epoch):
    t.ag[a, AG_BULK_OPEN] += 1


@jit_inline
def retire_groups(t, a, ca, upto):
    """The wait of thread ``a`` returned: the groups of its agent ``ca`` up to
    ``upto`` are complete, and their copies happen before what follows."""
    if upto > 0:
        join_into(t.ag, t.snaps, t.arena_a, t.arena_e, t.sv, a, 0, ca, upto)
    t.ag[ca, AG_RETIRED] = max(t.ag[ca, AG_RETIRED], upto)


@jit_inline
def on_cp_wait(t, c, i, ev, a, epoch):
    """cp.async.wait_group N: every group but the newest N is complete (its
    last stamp retired); a wait that retires copies no wait retired before
    is logged for rule 7."""
    sv, ag, fen = t.sv, t.ag, t.fen
    pending = np.int64(c.arg[i])
    if pending < 0:
        sv[SV_ERR_A] = pending
        return E_WAIT_GROUP
    ca = agent_of(t, a, AG_CP_AGENT, KIND_CP)
    upto = ag[a, AG_CP_RET]
    group = (ag[a, AG_CP_OPEN] >> CP_ARRIVE_BITS) - 1 - pending
    if group > 0:
        upto = max(upto, ((group + 1) << CP_ARRIVE_BITS) - 1)
    if upto > ag[ca, AG_RETIRED]:  # a retiring wait: rule 7 fences go after it
        f = sv[SV_FEN_TOP]
        sv[SV_FEN_TOP] += 1
        fen[f, FN_NEXT] = ag[ca, AG_FENCES]
        fen[f, FN_EPOCH] = epoch
        fen[f, FN_VAL] = upto
        fen[f, FN_AUX] = ev.site
        ag[ca, AG_FENCES] = f
    ag[a, AG_CP_RET] = upto
    retire_groups(t, a, ca, upto)
    return OK


@jit_leaf
def on_bulk_wait(t, c, i, ev, a, epoch):
    """The bulk wait: every bulk group but the newest N is complete."""
    sv, ag = t.sv, t.ag
    pending = np.int64(c.arg[i])
    if pending < 0:
        sv[SV_ERR_A] = pending
        return E_WAIT_GROUP
    ca = agent_of(t, a, AG_BULK_AGENT, KIND_BULK)
    upto = max(ag[a, AG_BULK_RET], ag[a, AG_BULK_OPEN] - 1 - pending)
    ag[a, AG_BULK_RET] = upto
    retire_groups(t, a, ca, upto)
    return OK
