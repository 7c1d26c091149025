"""Incident 1: two handoffs share hardware flag 3 (split-KV paged-attention decode).

An AI-accelerator decode kernel splits every head's KV cache over all cores.
Each core (block) has a cube unit (thread ``AIC``) and a vector unit (thread
``AIV``) that hand data over through per-core flags, saturating counters
with no identity (signal = set, wait = consume):

* decode, per head: the cube loads q and its K tile, stores the QK scores in a
  two-slot workspace and sets flag 3 of its core ("QK ready"); the vector
  waits on it, frees the slot (flag 2), loads its V tile, stores its partial
  output and log-sum-exp, and sets the head's reducer's flag ("partials
  written": flag 3 in the buggy kernel, flag 4 in the fixed one);
* CombineScale reduce, per head, on core ``head % CORES``: the vector waits for
  one "partials written" per core, reads every core's partial and writes the
  head's output.

The recorded schedule is one of full load: the cube runs one head ahead of
the vector, and one core (chosen per head) sets "partials written" late. In
the buggy kernel the reducer's wait then consumes its own cube's "QK ready"
for the next head instead of the late core's set, and reads that core's
partial with nothing ordering the write before it: a ``raw`` race on
``partials[head, core, :]`` and ``lse[head, core]`` for every head but the
last, whose reducer's cube has nothing left to set. (The stolen set is repaid
when the late set releases the vector's next "QK ready" wait.) The fixed
kernel's reduce waits on flag 4, which only the partials protocol uses.

Flags are per core: ``obj = FLAGS_PER_CORE * core + flag``. One launch is one
decode step; ``scale`` counts pairs of steps.
"""

from __future__ import annotations

import numpy as np

from ..trace.ops import Op, Space
from ._build import Launch, variants, write_launches
from ._target import open_writer, register_sites

NAME = "incident1"
TITLE = "paged-attention decode: flag 3 serves two handoffs, the reduce reads partials early"
EXPECTED_KINDS = frozenset({"raw", "sync_alias"})
EVENTS_PER_SCALE = 3_718  # events of the buggy trace at scale 1

CORES = 4  # blocks; every head is split over all of them
HEADS = 32
HEAD_DIM = 64
KEYS_PER_SPLIT = 8
CONTEXT = CORES * KEYS_PER_SPLIT
FLAGS_PER_CORE = 16  # hardware flag ids 0..15 of each core
AIC, AIV = 0, 1  # thread ids: cube and vector unit of a core
F_QK_FREE, F_QK_READY, F_PARTIALS_FIXED = 2, 3, 4
STEPS_PER_SCALE = 2  # decode steps (launches) per unit of scale
POOL = 8  # distinct schedules a long trace cycles through

FP16, FP32 = 2, 4
BASE = {
    name: 0x1000_0000 * (i + 1)
    for i, name in enumerate(("q", "k_cache", "v_cache", "qk_ws", "partials", "lse", "out"))
}

SITES = {
    "init_q": "decode_host.py:41 copy q",
    "init_k": "decode_host.py:44 copy k_cache",
    "init_v": "decode_host.py:45 copy v_cache",
    "aic_wait_free": "decode.cpp:88 WaitFlag(QK_FREE)",
    "aic_load_q": "decode.cpp:92 DataCopy q",
    "aic_load_k": "decode.cpp:93 DataCopy k_cache tile",
    "aic_store_qk": "decode.cpp:97 Fixpipe qk_ws",
    "aic_set_qk": "decode.cpp:98 CrossCoreSetFlag(3) QK ready",
    "aic_drain": "decode.cpp:120 WaitFlag(QK_FREE) drain",
    "aiv_wait_qk": "decode.cpp:141 CrossCoreWaitFlag(3) QK ready",
    "aiv_load_qk": "decode.cpp:143 DataCopy qk_ws",
    "aiv_set_free": "decode.cpp:145 SetFlag(QK_FREE)",
    "aiv_load_v": "decode.cpp:150 DataCopy v_cache tile",
    "aiv_store_o": "decode.cpp:158 DataCopy partials",
    "aiv_store_lse": "decode.cpp:159 DataCopy lse",
    "aiv_set_partials": "decode.cpp:161 CrossCoreSetFlag(3) partials written",
    "aiv_set_partials_fixed": "decode.cpp:161 CrossCoreSetFlag(4) partials written",
    "red_wait": "combine_scale.cpp:40 CrossCoreWaitFlag(3) partials written",
    "red_wait_fixed": "combine_scale.cpp:40 CrossCoreWaitFlag(4) partials written",
    "red_load_lse": "combine_scale.cpp:44 DataCopy lse",
    "red_load_o": "combine_scale.cpp:47 DataCopy partials",
    "red_store_out": "combine_scale.cpp:52 DataCopy out",
}

EXPECTED_SITES = (
    # The reduce's wait consumed the decode pipeline's "QK ready" set.
    (
        "sync_alias",
        "decode.cpp:98 CrossCoreSetFlag(3) QK ready",
        "combine_scale.cpp:40 CrossCoreWaitFlag(3) partials written",
    ),
    ("raw", SITES["aiv_store_o"], SITES["red_load_o"]),
    ("raw", SITES["aiv_store_lse"], SITES["red_load_lse"]),
)

# Phases of a schedule step, in replay order. Step h + 1 runs the vector's
# decode of head h, the cube's QK of head h + 1 and the reduce of head h.
PH_DECODE, PH_CUBE, PH_REDUCE_EARLY, PH_LATE_SET, PH_REDUCE, PH_DRAIN = range(6)
_SUBS = 16


def flag(core, number):
    return FLAGS_PER_CORE * np.asarray(core, dtype=np.int64) + number


def reducer(head):
    return np.asarray(head) % CORES


def _key(step, phase, sub, core):
    return ((np.asarray(step, np.int64) * 8 + phase) * _SUBS + sub) * CORES + core


def declare_buffers(w) -> None:
    g = int(Space.GLOBAL)
    w.buffer("q", g, BASE["q"], [1, HEADS, HEAD_DIM], FP16)
    w.buffer("k_cache", g, BASE["k_cache"], [HEADS, CONTEXT, HEAD_DIM], FP16)
    w.buffer("v_cache", g, BASE["v_cache"], [HEADS, CONTEXT, HEAD_DIM], FP16)
    w.buffer("qk_ws", g, BASE["qk_ws"], [CORES, 2, KEYS_PER_SPLIT], FP32)
    w.buffer("partials", g, BASE["partials"], [HEADS, CORES, HEAD_DIM], FP32)
    w.buffer("lse", g, BASE["lse"], [HEADS, CORES], FP32)
    w.buffer("out", g, BASE["out"], [1, HEADS, HEAD_DIM], FP16)


def late_cores(rng: np.random.Generator) -> np.ndarray:
    """For each head, the core whose "partials written" comes late (-1: none).
    Never the head's reducer (its own partial is in program order), never for
    the last head (the reducer's cube has no next head to set flag 3 for)."""
    heads = np.arange(HEADS)
    late = (reducer(heads) + rng.integers(1, CORES, size=HEADS)) % CORES
    late[-1] = -1
    return late


def build_step(site: dict[str, int], *, fixed: bool, late: np.ndarray) -> dict[str, np.ndarray]:
    """One decode step (launch) with the given late cores."""
    L = Launch()
    h = np.arange(HEADS)[:, None]
    c = np.arange(CORES)[None, :]
    qk_bytes = KEYS_PER_SPLIT * FP32
    tile_bytes = KEYS_PER_SPLIT * HEAD_DIM * FP16
    row_bytes = HEAD_DIM * FP16

    # Inputs written before the step by kernels that are not traced.
    L.add(-1, Op.INIT, 0, AIC, addr=BASE["q"], size=HEADS * row_bytes, site=site["init_q"])
    for name in ("k", "v"):
        L.add(
            -1,
            Op.INIT,
            0,
            AIC,
            addr=BASE[f"{name}_cache"],
            size=HEADS * CONTEXT * row_bytes,
            site=site[f"init_{name}"],
        )

    # Cube, head h at step h: wait for a free QK slot, load q and the K tile,
    # store the scores, set flag 3.
    slot = BASE["qk_ws"] + (c * 2 + h % 2) * qk_bytes
    k_tile = BASE["k_cache"] + ((h * CONTEXT + c * KEYS_PER_SPLIT) * HEAD_DIM) * FP16

    def cube(sub):
        return _key(h, PH_CUBE, sub, c)

    L.add(cube(0)[2:], Op.WAIT, c, AIC, obj=flag(c, F_QK_FREE), arg=1, site=site["aic_wait_free"])
    L.add(
        cube(1),
        Op.READ,
        c,
        AIC,
        addr=BASE["q"] + h * row_bytes,
        size=row_bytes,
        site=site["aic_load_q"],
    )
    L.add(cube(2), Op.READ, c, AIC, addr=k_tile, size=tile_bytes, site=site["aic_load_k"])
    L.add(cube(3), Op.WRITE, c, AIC, addr=slot, size=qk_bytes, site=site["aic_store_qk"])
    L.add(
        cube(4), Op.SIGNAL, c, AIC, obj=flag(c, F_QK_READY), arg=1, scope=4, site=site["aic_set_qk"]
    )
    # The vector frees a slot after every head, the cube reuses all but the last
    # two: it consumes those at the end, so the next step starts with flag 2 at 0.
    L.add(
        _key(HEADS + 1, PH_DRAIN, np.arange(2)[:, None], c),
        Op.WAIT,
        c,
        AIC,
        obj=flag(c, F_QK_FREE),
        arg=1,
        site=site["aic_drain"],
    )

    # Vector, head h at step h + 1.
    def vec(sub):
        return _key(h + 1, PH_DECODE, sub, c)

    v_tile = BASE["v_cache"] + ((h * CONTEXT + c * KEYS_PER_SPLIT) * HEAD_DIM) * FP16
    partial = BASE["partials"] + (h * CORES + c) * HEAD_DIM * FP32
    lse = BASE["lse"] + (h * CORES + c) * FP32
    L.add(vec(0), Op.WAIT, c, AIV, obj=flag(c, F_QK_READY), arg=1, site=site["aiv_wait_qk"])
    L.add(vec(1), Op.READ, c, AIV, addr=slot, size=qk_bytes, site=site["aiv_load_qk"])
    L.add(
        vec(2), Op.SIGNAL, c, AIV, obj=flag(c, F_QK_FREE), arg=1, scope=2, site=site["aiv_set_free"]
    )
    L.add(vec(3), Op.READ, c, AIV, addr=v_tile, size=tile_bytes, site=site["aiv_load_v"])
    L.add(vec(4), Op.WRITE, c, AIV, addr=partial, size=HEAD_DIM * FP32, site=site["aiv_store_o"])
    L.add(vec(5), Op.WRITE, c, AIV, addr=lse, size=FP32, site=site["aiv_store_lse"])
    is_late = c == late[:, None]
    partials_flag = F_PARTIALS_FIXED if fixed else F_QK_READY
    L.add(
        _key(h + 1, np.where(is_late, PH_LATE_SET, PH_DECODE), 6, c),
        Op.SIGNAL,
        c,
        AIV,
        obj=flag(reducer(h), partials_flag),
        arg=1,
        scope=4,
        site=site["aiv_set_partials_fixed" if fixed else "aiv_set_partials"],
    )

    # Reduce of head hr on its reducer's vector, after the decode of hr. A wait
    # returns when its flag counts enough sets: the fixed kernel's only once the
    # late core's set is in; the buggy kernel's already with the cube's QK set.
    hr = np.arange(HEADS)
    r = reducer(hr)
    early = (late >= 0) & (not fixed)
    phase = np.where(early, PH_REDUCE_EARLY, PH_REDUCE)

    def red(sub):
        return _key(hr + 1, phase, sub, r)

    L.add(
        red(0),
        Op.WAIT,
        r,
        AIV,
        obj=flag(r, partials_flag),
        arg=CORES,
        site=site["red_wait_fixed" if fixed else "red_wait"],
    )
    s = np.arange(CORES)[None, :]
    h2, r2 = hr[:, None], r[:, None]
    L.add(
        _key(h2 + 1, phase[:, None], 1 + 2 * s, r2),
        Op.READ,
        r2,
        AIV,
        addr=BASE["lse"] + (h2 * CORES + s) * FP32,
        size=FP32,
        site=site["red_load_lse"],
    )
    L.add(
        _key(h2 + 1, phase[:, None], 2 + 2 * s, r2),
        Op.READ,
        r2,
        AIV,
        addr=BASE["partials"] + (h2 * CORES + s) * HEAD_DIM * FP32,
        size=HEAD_DIM * FP32,
        site=site["red_load_o"],
    )
    L.add(
        red(1 + 2 * CORES),
        Op.WRITE,
        r,
        AIV,
        addr=BASE["out"] + hr * row_bytes,
        size=row_bytes,
        site=site["red_store_out"],
    )
    return L.columns()


def generate(target, *, fixed: bool = False, scale: int = 1, seed: int = 0) -> int:
    """Write ``2 * scale`` decode steps (about 1,900 events each) to ``target``
    (a path or a TraceWriter); returns the rows written."""
    with open_writer(target, f"tracerace.scenarios {NAME}") as w:
        site = register_sites(w, SITES)
        declare_buffers(w)
        rng = np.random.default_rng(seed)
        steps = STEPS_PER_SCALE * scale

        def build(rng):
            return build_step(site, fixed=fixed, late=late_cores(rng))

        return write_launches(w, variants(rng, steps, POOL, build))
