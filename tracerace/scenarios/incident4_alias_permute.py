"""Incident 4: a permutation kernel whose input and output share one buffer (Triton under XLA).

A Triton kernel moves rows: program ``pid`` loads its destination row index
``dst[pid]``, loads row ``pid`` of ``x`` and stores it as row ``dst[pid]`` of
``out``. Each program runs four warps (threads 0, 32, 64, 96), one per eight
columns. Programs run in waves of ``RESIDENT`` resident blocks; within a wave
the blocks run in lockstep.

Buggy: XLA's buffer assignment gave ``out`` the memory of ``x``. A block that
stores row ``d`` races with the block that loads row ``d`` as its input: a
``raw`` race when the store came in an earlier wave, a ``war`` race when the
load came first (same or earlier wave). Autotuning runs the kernel several
times on the same buffer (each launch sees the previous launch's output; launch
order keeps launches apart). Fixed: ``out`` is a buffer of its own (the
explicit input/output alias keeps XLA from picking ``x``).

``scale`` multiplies the rows (up to ``MAX_ROWS`` per launch) and then the
launches.
"""

from __future__ import annotations

import math

import numpy as np

from ..trace.ops import Op, Space
from ._build import Launch, write_launches
from ._target import open_writer, register_sites

NAME = "incident4"
TITLE = "row permutation with input and output aliased: blocks overwrite rows not yet read"
EXPECTED_KINDS = frozenset({"raw", "war"})
EVENTS_PER_SCALE = 12_292  # events of the buggy trace at scale 1

ROWS = 512  # rows per launch at scale 1
MAX_ROWS = ROWS * 64
D = 32  # fp32 columns per row
WARPS = 4
RESIDENT = 128  # blocks per wave
LAUNCHES = 2  # autotuning runs per unit of launches

FP32, INT32 = 4, 4
COLS = D // WARPS
X_BASE, DST_BASE, OUT_BASE = 0x1000_0000, 0x2000_0000, 0x3000_0000

SITES = {
    "init_x": "permute_host.py:17 copy x",
    "init_dst": "permute_host.py:18 copy dst",
    "load_dst": "permute.py:24 tl.load(dst_ptr + pid)",
    "load_row": "permute.py:27 tl.load(x_ptr + pid * D + cols)",
    "store_row": "permute.py:28 tl.store(out_ptr + dst * D + cols)",
}

EXPECTED_SITES = (
    ("raw", SITES["store_row"], SITES["load_row"]),
    ("war", SITES["load_row"], SITES["store_row"]),
)


def declare_buffers(w, rows: int, *, fixed: bool) -> None:
    g = int(Space.GLOBAL)
    w.buffer("x", g, X_BASE, [rows, D], FP32)
    w.buffer("dst", g, DST_BASE, [rows], INT32)
    if fixed:
        w.buffer("out", g, OUT_BASE, [rows, D], FP32)


def destinations(rows: int, seed: int) -> np.ndarray:
    """``dst``: where each row goes (a permutation drawn from ``seed``)."""
    return np.random.default_rng(seed).permutation(rows)


def build_launch(site: dict[str, int], *, fixed: bool, dst: np.ndarray) -> dict[str, np.ndarray]:
    L = Launch()
    rows = len(dst)
    out_base = OUT_BASE if fixed else X_BASE
    pid = np.arange(rows)[:, None]
    warp = np.arange(WARPS)[None, :]
    wave, slot = pid // RESIDENT, pid % RESIDENT
    cols = warp * COLS

    L.add(-1, Op.INIT, 0, 0, addr=X_BASE, size=rows * D * FP32, site=site["init_x"])
    L.add(-1, Op.INIT, 0, 0, addr=DST_BASE, size=rows * INT32, site=site["init_dst"])

    def key(step):
        return ((wave * 3 + step) * RESIDENT + slot) * WARPS + warp

    thread = warp * 32
    L.add(
        key(0), Op.READ, pid, thread, addr=DST_BASE + pid * INT32, size=INT32, site=site["load_dst"]
    )
    L.add(
        key(1),
        Op.READ,
        pid,
        thread,
        addr=X_BASE + (pid * D + cols) * FP32,
        size=COLS * FP32,
        site=site["load_row"],
    )
    L.add(
        key(2),
        Op.WRITE,
        pid,
        thread,
        addr=out_base + (dst[:, None] * D + cols) * FP32,
        size=COLS * FP32,
        site=site["store_row"],
    )
    return L.columns()


def generate(target, *, fixed: bool = False, scale: int = 1, seed: int = 0) -> int:
    """Write the permutation of ``512 * scale`` rows (at most 32,768 per launch,
    about 12 events per row) run ``2 * ceil(scale / 64)`` times; returns the rows written."""
    with open_writer(target, f"tracerace.scenarios {NAME}") as w:
        site = register_sites(w, SITES)
        rows = min(ROWS * scale, MAX_ROWS)
        declare_buffers(w, rows, fixed=fixed)
        dst = destinations(rows, seed)
        launch = build_launch(site, fixed=fixed, dst=dst)
        count = LAUNCHES * math.ceil(ROWS * scale / rows)
        for i in range(count):  # a program per row, WARPS warps each
            w.launch_dims(i, grid=(rows,), block=(WARPS * 32,), kernel="permute_rows")
        return write_launches(w, [launch] * count)
