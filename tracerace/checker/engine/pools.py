"""Pools: small tables with a free list, their initial sizes, and how far ahead of use
the pages of the memory-mapped ones are faulted in (by :class:`.faulter.Faulter`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..jit import jit_inline
from .layout import (
    AG_FIELDS,
    AR_FIELDS,
    ED_FIELDS,
    FN_FIELDS,
    FQ_FIELDS,
    G_FIELDS,
    GN_FIELDS,
    GR_AGENTS,
    GR_AMAP,
    GR_ARR,
    GR_BMAP,
    GR_ED,
    GR_FEN,
    GR_FIND,
    GR_FMAP,
    GR_FQ,
    GR_GENS,
    GR_GRAN,
    GR_IV,
    GR_LMAP,
    GR_MB,
    GR_MMAP,
    GR_NODES,
    GR_PR,
    GR_RL,
    GR_SIG,
    GR_SNAPS,
    GR_XMAP,
    IV_FIELDS,
    K_FIELDS,
    MB_FIELDS,
    N_FIELDS,
    NF,
    PR_FIELDS,
    RL_FIELDS,
    S_FIELDS,
    SG_FIELDS,
    SN_FIELDS,
    SV_N_AGENTS,
    SV_NODE_TOP,
)

# hash map name -> grow bit
MAPS = {
    "agent_map": GR_AMAP,
    "async_map": GR_AMAP,
    "bar_map": GR_BMAP,
    "mb_map": GR_MMAP,
    "flag_map": GR_FMAP,
    "lock_map": GR_LMAP,
    "atom_map": GR_XMAP,
}


# ---------------------------------------------------------------------------
# Small pools with a free list threaded through column 0.
@jit_inline
def pool_alloc(pool, sv, top_i, free_i, used_i):
    if sv[free_i] >= 0:
        k = sv[free_i]
        sv[free_i] = pool[k, 0]
    else:
        k = sv[top_i]
        sv[top_i] += 1
    sv[used_i] += 1
    pool[k, 0] = -1
    return k


@jit_inline
def pool_free(pool, sv, free_i, used_i, k):
    pool[k, 0] = sv[free_i]
    sv[free_i] = k
    sv[used_i] -= 1


# ---------------------------------------------------------------------------
# The driver.


# pool name -> (grow bit, columns, initial rows, fill)
# pool name -> (grow bit, columns, fill of fresh rows)
POOLS = {
    "ag": (GR_AGENTS, AG_FIELDS, 0),
    "snaps": (GR_SNAPS, SN_FIELDS, 0),
    "nodes": (GR_NODES, N_FIELDS, 0),
    "cold": (GR_NODES, K_FIELDS, 0),
    "shades": (GR_NODES, S_FIELDS, 0),
    "gran": (GR_GRAN, G_FIELDS, -1),
    "gens": (GR_GENS, GN_FIELDS, 0),
    "arr": (GR_ARR, AR_FIELDS, 0),
    "sigs": (GR_SIG, SG_FIELDS, 0),
    "fq": (GR_FQ, FQ_FIELDS, 0),
    "mbs": (GR_MB, MB_FIELDS, 0),
    "rels": (GR_RL, RL_FIELDS, 0),
    "fen": (GR_FEN, FN_FIELDS, 0),
    "find": (GR_FIND, NF + 1, 0),
    "ivs": (GR_IV, IV_FIELDS, 0),
    "pairs": (GR_PR, PR_FIELDS, 0),
    "edges": (GR_ED, ED_FIELDS, 0),
}

_ROWS = {
    "ag": 1 << 10,
    "snaps": 1 << 12,
    "nodes": 1 << 14,
    "cold": 1 << 14,
    "shades": 1 << 14,
    "gran": 1 << 15,
    "gens": 1 << 8,
    "arr": 1 << 10,
    "sigs": 1 << 8,
    "fq": 1 << 6,
    "mbs": 1 << 6,
    "rels": 1 << 8,
    "fen": 1 << 8,
    "find": 1 << 8,
    "ivs": 1 << 6,
    "pairs": 1 << 6,
    "edges": 1 << 6,
}


@dataclass(frozen=True)
class Sizes:
    """Starting sizes of the engine's tables: rows per pool, entries of the clock
    arena (and the slack a compaction leaves), slots of each hash map. Tables
    grow from there; no answer depends on the sizes (:meth:`tiny` makes every
    growth path run on a short trace)."""

    rows: Mapping[str, int] = field(default_factory=lambda: dict(_ROWS))
    arena: int = 1 << 14
    arena_slack: int = 1 << 20  # entries (16 MiB of arena_a and arena_e)
    maps: int = 1 << 8

    @classmethod
    def tiny(cls) -> Sizes:
        """Four rows a pool (sixteen granules), eight arena entries and map slots."""
        return cls(
            rows={name: 16 if name == "gran" else 4 for name in POOLS},
            arena=8,
            arena_slack=0,
            maps=8,
        )


# Pools kept in tracerace.mapped arrays (grown in place, never filled: every
# field of a row is written when it is handed out), with the state-vector
# field that counts their rows in use, and how many rows past that the
# faulter keeps faulted in. The agent table is one: a launch of 10^5 agents
# grew it by copying (and clearing fresh pages for) ~90 MB on the replay
# thread, a quarter of a second of a tiled 10^8 check.
MAPPED = {"nodes": SV_NODE_TOP, "cold": SV_NODE_TOP, "shades": SV_NODE_TOP, "ag": SV_N_AGENTS}
# Mapped pools the faulter leaves alone: only the rows of the few nodes that
# need one are ever written (layout, I_SHADED), so most pages stay untouched.
SPARSE = frozenset({"shades"})

# The faulter (:class:`.faulter.Faulter`) keeps this many rows past the top of the node
# pools and the arena faulted in, a chunk at a time.
FAULT_AHEAD = 1 << 17
FAULT_CHUNK = 1 << 15
# Agents come a wave of blocks at a time; a row is AG_FIELDS words.
AG_FAULT_AHEAD = 1 << 13
# The largest spare granule table (rows) made for a trace of unknown length.
SPARE_BLIND_MAX = 1 << 19
