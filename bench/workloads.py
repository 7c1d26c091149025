"""Synthetic traces for the benchmark suite, generated with vectorised NumPy.

Each workload models one kind of program a tracer records and is written to
disk once, in chunks, through :class:`tracerace.trace.writer.TraceWriter.extend`,
so generating a 10^9-event trace needs memory for one chunk, not the trace.

Events are laid out the way a recorded schedule looks: threads of a block run
in lockstep (one row per thread per instruction), a few resident blocks are
interleaved, and a ``bar_sync`` generation completes before any of its threads
moves on (the format's rule). ``ts`` is the row number.

Race-free workloads (``tiled``, ``tiled_wide``, ``pipeline``, ``crossblock``,
``cpu``, ``cpu_wide``) must report no hazard at all; the bench and its smoke test
check that, so a generator bug or a checker false positive shows up at once.

Every generator takes ``(writer, emitter, n, rng, **params)`` where ``n`` is
the wanted number of events (the trace gets close to it, never exactly) and
returns a dict describing what was generated (agents, blocks, ...).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tracerace.trace.ops import Op, Scope, Sem, Space
from tracerace.trace.schema import COLUMN_BY_NAME, DEFAULT_BLOCK
from tracerace.trace.writer import TraceWriter

READ, WRITE, ATOMIC, INIT = int(Op.READ), int(Op.WRITE), int(Op.ATOMIC), int(Op.INIT)
BAR_SYNC = int(Op.BAR_SYNC)
CP_ASYNC, CP_COMMIT, CP_WAIT = int(Op.CP_ASYNC), int(Op.CP_ASYNC_COMMIT), int(Op.CP_ASYNC_WAIT)
SIGNAL, WAIT = int(Op.SIGNAL), int(Op.WAIT)
ACQUIRE, RELEASE = int(Op.ACQUIRE), int(Op.RELEASE)
GLOBAL, SHARED = int(Space.GLOBAL), int(Space.SHARED)

CHUNK_ROWS = 1 << 20
"""Rows buffered before they are handed to the writer: bounds generator memory."""


# --- emitting rows -------------------------------------------------------------


class Emitter:
    """Collects pieces of rows (column arrays of any shape, or scalars) and
    hands them to a :class:`TraceWriter` in chunks of about ``CHUNK_ROWS``.

    A piece's arrays are broadcast together and flattened in C order, so an
    array shaped ``(instructions, blocks, threads)`` becomes rows instruction
    by instruction, block by block, thread by thread: lockstep execution.
    ``ts`` is the row number.
    """

    def __init__(self, writer: TraceWriter, chunk_rows: int = CHUNK_ROWS) -> None:
        self.writer = writer
        self.chunk_rows = chunk_rows
        self.rows = 0
        self._pieces: list[tuple[int, dict]] = []
        self._buffered = 0

    def emit(self, **cols) -> int:
        arrays = {k: np.asarray(v) for k, v in cols.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
        n = math.prod(shape)
        if n == 0:
            return 0
        piece = {}
        for name, a in arrays.items():
            piece[name] = a if a.ndim == 0 else np.broadcast_to(a, shape).ravel()
        self._pieces.append((n, piece))
        self._buffered += n
        if self._buffered >= self.chunk_rows:
            self.flush()
        return n

    def flush(self) -> None:
        if not self._buffered:
            return
        names = set()
        for _, piece in self._pieces:
            names.update(piece)
        out = {}
        for name in names:
            col = COLUMN_BY_NAME[name]
            parts = []
            for n, piece in self._pieces:
                value = piece.get(name)
                if value is None:
                    value = piece["block"] if col.default == DEFAULT_BLOCK else col.default
                value = np.asarray(value)
                parts.append(
                    np.full(n, value, dtype=col.dtype)
                    if value.ndim == 0
                    else value.astype(col.dtype, copy=False)
                )
            out[name] = np.concatenate(parts)
        total = self._buffered
        out["ts"] = np.arange(self.rows, self.rows + total, dtype=np.uint64)
        self.writer.extend(**out)
        self.rows += total
        self._pieces, self._buffered = [], 0


def _blocks_threads(blocks: np.ndarray, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """``(block, thread)`` grids shaped (len(blocks), threads)."""
    b = np.asarray(blocks, dtype=np.int64)[:, None]
    t = np.arange(threads, dtype=np.int64)[None, :]
    return b, t


def _clamp(x: float, lo: int, hi: int) -> int:
    return int(max(lo, min(hi, x)))


def _matmul_buffers(w: TraceWriter, M: int, N: int, K: int) -> tuple[int, int, int]:
    """Lay out and declare float32 ``A`` (M x K), ``B`` (K x N) and ``C``
    (M x N), one after another from ``A_BASE``; returns their base addresses."""
    A = A_BASE
    B = A + M * K * 4
    C = B + K * N * 4
    w.buffer("A", GLOBAL, A, (M, K), 4)
    w.buffer("B", GLOBAL, B, (K, N), 4)
    w.buffer("C", GLOBAL, C, (M, N), 4)
    return A, B, C


def _grid(blocks: int) -> tuple[int, int]:
    gx = max(1, math.ceil(math.sqrt(blocks)))
    return gx, math.ceil(blocks / gx)


# --- (a) tiled: the classic shared-memory tiled matmul ------------------------------

TILE = 16
THREADS = TILE * TILE  # 256 threads per block
TILED_STEP = 4 + 1 + 2 * TILE + 1  # events per thread per k-step
A_BASE = 0x1000_0000


def tiled(
    w: TraceWriter,
    em: Emitter,
    n: int,
    rng,
    *,
    blocks: int | None = None,
    wave: int = 8,
    kmax: int = 16,
    kmin: int = 1,
    second_barrier: bool = True,
) -> dict:
    """``C = A @ B`` in 16x16 tiles: per k-step each thread loads one element
    of A and of B from global memory into shared tiles, ``bar_sync``, reads a
    row of the A tile and a column of the B tile (32 shared reads),
    ``bar_sync``; one global store of C at the end. ``wave`` blocks are
    resident at a time and run interleaved. Race-free.

    ``blocks`` fixes the grid (the k-steps then follow from ``n``);
    otherwise up to ``kmax`` k-steps and as many blocks as ``n`` needs.
    ``second_barrier=False`` leaves out the ``bar_sync`` after the reads (the
    classic bug): every tile store of the next k-step races with the reads
    of the one before (``war``).
    """
    if blocks is None:
        ksteps = _clamp(n // (THREADS * TILED_STEP), kmin, kmax)
        blocks = max(1, round(n / (THREADS * (ksteps * TILED_STEP + 1))))
    else:
        ksteps = max(1, round((n / blocks / THREADS - 1) / TILED_STEP))
    gx, gy = _grid(blocks)
    M, N, K = gy * TILE, gx * TILE, ksteps * TILE
    A, B, C = _matmul_buffers(w, M, N, K)
    s_ld_a = w.site("tiled.cu:31 ld.global.f32 A")
    s_st_a = w.site("tiled.cu:31 st.shared.f32 sA")
    s_ld_b = w.site("tiled.cu:32 ld.global.f32 B")
    s_st_b = w.site("tiled.cu:32 st.shared.f32 sB")
    s_bar1 = w.site("tiled.cu:33 bar.sync")
    s_rd = w.site("tiled.cu:35 ld.shared.f32")
    s_bar2 = w.site("tiled.cu:37 bar.sync")
    s_st_c = w.site("tiled.cu:39 st.global.f32 C")
    SB = THREADS * 4  # sB follows sA in shared memory

    # The inputs exist before the kernel runs.
    em.emit(
        op=INIT,
        launch=0,
        block=0,
        thread=0,
        space=GLOBAL,
        addr=np.array([A, B]),
        size=np.array([M * K * 4, K * N * 4]),
    )
    k = np.arange(TILE)[:, None, None, None]  # (k, A|B, block, thread) for the inner loop
    which = np.arange(2)[None, :, None, None]
    for b0 in range(0, blocks, wave):
        blk, t = _blocks_threads(np.arange(b0, min(blocks, b0 + wave)), THREADS)
        by, bx = blk // gx, blk % gx
        ty, tx = t // TILE, t % TILE
        common = dict(launch=0, block=blk, thread=t)
        for s in range(ksteps):
            em.emit(
                op=READ,
                space=GLOBAL,
                size=4,
                site=s_ld_a,
                addr=A + ((by * TILE + ty) * K + s * TILE + tx) * 4,
                **common,
            )
            em.emit(
                op=WRITE, space=SHARED, size=4, site=s_st_a, addr=(ty * TILE + tx) * 4, **common
            )
            em.emit(
                op=READ,
                space=GLOBAL,
                size=4,
                site=s_ld_b,
                addr=B + ((s * TILE + ty) * N + bx * TILE + tx) * 4,
                **common,
            )
            em.emit(
                op=WRITE,
                space=SHARED,
                size=4,
                site=s_st_b,
                addr=SB + (ty * TILE + tx) * 4,
                **common,
            )
            em.emit(op=BAR_SYNC, obj=0, arg=THREADS, site=s_bar1, **common)
            # sA[ty][k] and sB[k][tx], k = 0..15
            addr = np.where(which == 0, (ty * TILE + k) * 4, SB + (k * TILE + tx) * 4)
            em.emit(
                op=READ,
                space=SHARED,
                size=4,
                site=s_rd,
                addr=addr,
                launch=0,
                block=blk[None, None],
                thread=t[None, None],
            )
            if second_barrier:
                em.emit(op=BAR_SYNC, obj=0, arg=THREADS, site=s_bar2, **common)
        em.emit(
            op=WRITE,
            space=GLOBAL,
            size=4,
            site=s_st_c,
            addr=C + ((by * TILE + ty) * N + bx * TILE + tx) * 4,
            **common,
        )
    return {
        "blocks": blocks,
        "threads_per_block": THREADS,
        "agents": blocks * THREADS,
        "ksteps": ksteps,
        "wave": wave,
    }


def tiled_racy(w, em, n, rng) -> dict:
    """``tiled`` without the second ``bar_sync``: GPU-style racy, about one
    ``war`` hazard per shared store after a block's first k-step (5*10^5 at
    10^7 events), at two site pairs."""
    return tiled(w, em, n, rng, kmin=2, second_barrier=False)


def tiled_wide(w, em, n, rng) -> dict:
    """``tiled`` on a 1024-block grid (262,144 agents), all blocks resident at
    once: the most agents and live shadow state per event. Below about
    10^7 events (one k-step per block) the grid shrinks."""
    blocks = _clamp(n // (THREADS * (TILED_STEP + 1)), 1, 1024)
    return tiled(w, em, n, rng, blocks=blocks, wave=1024)


# --- (b) pipeline: cp.async multi-stage matmul ---------------------------------------

PIPE_TILE = 64  # 64x64 output tile per block, 16-deep k-slices
PIPE_K = 16
PIPE_STEP = 37  # wait + bar + 2 cp_async + commit + 32 shared reads


def pipeline(
    w: TraceWriter, em: Emitter, n: int, rng, *, stages: int = 3, wave: int = 8, kmax: int = 32
) -> dict:
    """A ``stages``-deep cp.async software pipeline (the CUTLASS sm80
    mainloop): a prologue issues ``stages - 1`` k-slices (one commit group
    each); iteration ``k`` waits until at most ``stages - 2`` groups are
    pending (slice ``k`` has landed), ``bar_sync`` (everyone's slice ``k`` is
    visible, and everyone is done reading the stage about to be refilled),
    issues slice ``k + stages - 1`` into that stage and commits (an empty
    group near the end), then 32 16-byte shared reads of stage ``k %
    stages``. Epilogue: four 16-byte global stores per thread. Race-free.
    """
    per_thread_fixed = 3 * (stages - 1) + 2 + 4
    ksteps = _clamp(n // (THREADS * PIPE_STEP), 1, kmax)
    blocks = max(1, round(n / (THREADS * (ksteps * PIPE_STEP + per_thread_fixed))))
    gx, gy = _grid(blocks)
    M, N, K = gy * PIPE_TILE, gx * PIPE_TILE, ksteps * PIPE_K
    A, B, C = _matmul_buffers(w, M, N, K)
    s_cp_a = w.site("pipeline.cu:58 cp.async.cg.shared.global [sA], [A], 16")
    s_cp_b = w.site("pipeline.cu:59 cp.async.cg.shared.global [sB], [B], 16")
    s_commit = w.site("pipeline.cu:60 cp.async.commit_group")
    s_wait = w.site("pipeline.cu:64 cp.async.wait_group")
    s_bar = w.site("pipeline.cu:65 bar.sync")
    s_rd = w.site("pipeline.cu:70 ld.shared.v4.f32")
    s_wait0 = w.site("pipeline.cu:75 cp.async.wait_all")
    s_st = w.site("pipeline.cu:80 st.global.v4.f32 C")
    STAGE = 2 * PIPE_TILE * PIPE_K * 4  # sA and sB of one stage: 8 KiB
    SB = STAGE // 2

    em.emit(
        op=INIT,
        launch=0,
        block=0,
        thread=0,
        space=GLOBAL,
        addr=np.array([A, B]),
        size=np.array([M * K * 4, K * N * 4]),
    )
    kk = np.arange(PIPE_K)[:, None, None, None]
    which = np.arange(2)[None, :, None, None]
    i4 = np.arange(4)[:, None, None]
    for b0 in range(0, blocks, wave):
        blk, t = _blocks_threads(np.arange(b0, min(blocks, b0 + wave)), THREADS)
        by, bx = blk // gx, blk % gx
        ty, tx = t // 16, t % 16
        common = dict(launch=0, block=blk, thread=t)

        def issue(kslice: int, t=t, by=by, bx=bx, common=common) -> None:
            stage = (kslice % stages) * STAGE
            em.emit(
                op=CP_ASYNC,
                space=SHARED,
                size=16,
                space2=GLOBAL,
                site=s_cp_a,
                addr=stage + t * 16,
                addr2=A + ((by * PIPE_TILE + t // 4) * K + kslice * PIPE_K + (t % 4) * 4) * 4,
                **common,
            )
            em.emit(
                op=CP_ASYNC,
                space=SHARED,
                size=16,
                space2=GLOBAL,
                site=s_cp_b,
                addr=stage + SB + t * 16,
                addr2=B + ((kslice * PIPE_K + t // 16) * N + bx * PIPE_TILE + (t % 16) * 4) * 4,
                **common,
            )

        for s in range(stages - 1):
            if s < ksteps:
                issue(s)
            em.emit(op=CP_COMMIT, site=s_commit, **common)
        for k in range(ksteps):
            em.emit(op=CP_WAIT, arg=stages - 2, site=s_wait, **common)
            em.emit(op=BAR_SYNC, obj=0, arg=THREADS, site=s_bar, **common)
            if k + stages - 1 < ksteps:
                issue(k + stages - 1)
            em.emit(op=CP_COMMIT, site=s_commit, **common)
            stage = (k % stages) * STAGE
            addr = np.where(
                which == 0,
                stage + (kk * PIPE_TILE + ty * 4) * 4,
                stage + SB + (kk * PIPE_TILE + tx * 4) * 4,
            )
            em.emit(
                op=READ,
                space=SHARED,
                size=16,
                site=s_rd,
                addr=addr,
                launch=0,
                block=blk[None, None],
                thread=t[None, None],
            )
        em.emit(op=CP_WAIT, arg=0, site=s_wait0, **common)
        em.emit(op=BAR_SYNC, obj=0, arg=THREADS, site=s_bar, **common)
        em.emit(
            op=WRITE,
            space=GLOBAL,
            size=16,
            site=s_st,
            addr=C + ((by * PIPE_TILE + ty * 4 + i4) * N + bx * PIPE_TILE + tx * 4) * 4,
            launch=0,
            block=blk[None],
            thread=t[None],
        )
    return {
        "blocks": blocks,
        "threads_per_block": THREADS,
        "agents": blocks * THREADS,
        "ksteps": ksteps,
        "stages": stages,
        "wave": wave,
    }


# --- (c) crossblock: persistent blocks handing data over through global memory -------

FLAG_BASE = 1 << 32


def crossblock(
    w: TraceWriter, em: Emitter, n: int, rng, *, grid: int = 132, reads: int = 8
) -> dict:
    """A persistent kernel of ``grid`` blocks working through tiles in rounds
    (tile ``i`` on block ``i % grid``), with two cross-block protocols:

    * a decoupled look-back chain: thread 0 of tile ``i`` publishes
      ``part[i]``, spins (relaxed atomics) on ``pflag[i-1]``, acquires it
      (device-scope acquire atomic), reads ``pref[i-1]``, writes ``pref[i]``
      and releases ``pflag[i]`` (device-scope release atomic);
    * flags: at the end of a tile, after a ``bar_sync``, thread 0 signals
      flag ``i``; in the next round the tile on the neighbouring block waits
      on it and then (after a ``bar_sync``) every thread reads that tile's
      output.

    Race-free.
    """
    per_tile = THREADS * (reads + 6) + 13
    tiles = max(1, round(n / per_tile))
    grid = _clamp(grid, 1, tiles)
    X = A_BASE
    Y = X + tiles * THREADS * reads * 4
    PART = Y + tiles * THREADS * 4
    PREF = PART + tiles * 8
    PFLAG = PREF + tiles * 8
    w.buffer("X", GLOBAL, X, (tiles, THREADS, reads), 4)
    w.buffer("Y", GLOBAL, Y, (tiles, THREADS), 4)
    w.buffer("part", GLOBAL, PART, (tiles,), 8)
    w.buffer("pref", GLOBAL, PREF, (tiles,), 8)
    w.buffer("pflag", GLOBAL, PFLAG, (tiles,), 4)
    s_ldx = w.site("scan.cu:20 ld.global.f32 X")
    s_sts = w.site("scan.cu:22 st.shared.f32 s")
    s_bar = w.site("scan.cu:23 bar.sync")
    s_lds = w.site("scan.cu:26 ld.shared.f32 s")
    s_part = w.site("scan.cu:28 st.global.f64 part")
    s_spin = w.site("scan.cu:31 atom.relaxed.gpu pflag (spin)")
    s_acq = w.site("scan.cu:32 atom.acquire.gpu pflag")
    s_ldpref = w.site("scan.cu:33 ld.global.f64 pref")
    s_ldpart = w.site("scan.cu:34 ld.global.f64 part")
    s_stpref = w.site("scan.cu:35 st.global.f64 pref")
    s_rel = w.site("scan.cu:36 atom.release.gpu pflag")
    s_wait = w.site("scan.cu:40 flag wait")
    s_bar2 = w.site("scan.cu:41 bar.sync")
    s_ldp = w.site("scan.cu:43 ld.global.f64 pref")
    s_ldy = w.site("scan.cu:44 ld.global.f32 Y (neighbour)")
    s_sty = w.site("scan.cu:45 st.global.f32 Y")
    s_bar3 = w.site("scan.cu:46 bar.sync")
    s_sig = w.site("scan.cu:48 flag signal")

    em.emit(
        op=INIT,
        launch=0,
        block=0,
        thread=0,
        space=GLOBAL,
        addr=np.array([X, PFLAG]),
        size=np.array([tiles * THREADS * reads * 4, tiles * 4]),
    )
    j = np.arange(reads)[:, None, None]
    for r0 in range(0, tiles, grid):
        tile = np.arange(r0, min(tiles, r0 + grid))
        blk, t = _blocks_threads(tile % grid, THREADS)
        ti = tile[:, None]
        common = dict(launch=0, block=blk, thread=t)
        one = dict(launch=0, block=tile % grid, thread=0)  # thread 0 of each tile's block
        em.emit(
            op=READ,
            space=GLOBAL,
            size=4,
            site=s_ldx,
            addr=X + ((ti * THREADS + t) * reads + j) * 4,
            launch=0,
            block=blk[None],
            thread=t[None],
        )
        em.emit(op=WRITE, space=SHARED, size=4, site=s_sts, addr=t * 4, **common)
        em.emit(op=BAR_SYNC, obj=0, arg=THREADS, site=s_bar, **common)
        # Thread 0 of every tile: reduce (8 shared reads), publish, spin once.
        em.emit(
            op=READ,
            space=SHARED,
            size=4,
            site=s_lds,
            addr=np.arange(8)[:, None] * 4,
            launch=0,
            block=(tile % grid)[None],
            thread=0,
        )
        em.emit(op=WRITE, space=GLOBAL, size=8, site=s_part, addr=PART + tile * 8, **one)
        later = tile[tile > 0]
        em.emit(
            op=ATOMIC,
            space=GLOBAL,
            size=4,
            site=s_spin,
            sem=int(Sem.RELAXED),
            scope=int(Scope.DEVICE),
            addr=PFLAG + (later - 1) * 4,
            launch=0,
            block=later % grid,
            thread=0,
        )
        # The look-back chain, tile by tile in replay order.
        chain = np.stack(
            [
                np.full_like(tile, ATOMIC),
                np.full_like(tile, READ),
                np.full_like(tile, READ),
                np.full_like(tile, WRITE),
                np.full_like(tile, ATOMIC),
            ],
            axis=1,
        )
        caddr = np.stack(
            [
                PFLAG + (tile - 1) * 4,
                PREF + (tile - 1) * 8,
                PART + tile * 8,
                PREF + tile * 8,
                PFLAG + tile * 4,
            ],
            axis=1,
        )
        csize = np.array([4, 8, 8, 8, 4])
        csem = np.array([int(Sem.ACQUIRE), 0, 0, 0, int(Sem.RELEASE)])
        csite = np.array([s_acq, s_ldpref, s_ldpart, s_stpref, s_rel])
        keep = np.ones(chain.shape, dtype=bool)
        keep[tile == 0, :2] = False  # the first tile has no predecessor
        em.emit(
            op=chain[keep],
            space=GLOBAL,
            addr=caddr[keep],
            size=np.broadcast_to(csize, chain.shape)[keep],
            sem=np.broadcast_to(csem, chain.shape)[keep],
            scope=int(Scope.DEVICE),
            site=np.broadcast_to(csite, chain.shape)[keep],
            launch=0,
            block=np.broadcast_to((tile % grid)[:, None], chain.shape)[keep],
            thread=0,
        )
        # Flags: wait for the neighbour's tile of the previous round.
        if r0 > 0:
            src = r0 - grid + (tile + 1) % grid
            em.emit(op=WAIT, obj=FLAG_BASE + src, arg=1, site=s_wait, **one)
        em.emit(op=BAR_SYNC, obj=0, arg=THREADS, site=s_bar2, **common)
        em.emit(op=READ, space=GLOBAL, size=8, site=s_ldp, addr=PREF + ti * 8, **common)
        if r0 > 0:
            em.emit(
                op=READ,
                space=GLOBAL,
                size=4,
                site=s_ldy,
                addr=Y + ((r0 - grid + (ti + 1) % grid) * THREADS + t) * 4,
                **common,
            )
        em.emit(
            op=WRITE, space=GLOBAL, size=4, site=s_sty, addr=Y + (ti * THREADS + t) * 4, **common
        )
        em.emit(op=BAR_SYNC, obj=0, arg=THREADS, site=s_bar3, **common)
        em.emit(op=SIGNAL, obj=FLAG_BASE + tile, arg=1, scope=int(Scope.DEVICE), site=s_sig, **one)
    return {"blocks": grid, "threads_per_block": THREADS, "agents": grid * THREADS, "tiles": tiles}


# --- (d) cpu: lock-based threads with fork/join --------------------------------------

VAR_BASE = 0
VAR_SIZE = 8  # one 8-byte global word per variable, as `tracerace convert` maps STD
CS_ACCESSES = 8  # accesses per critical section / private burst
FORK_FLAG = 1 << 40  # + child thread: the parent's signal, the child's first event waits
JOIN_FLAG = 2 << 40  # + child thread: the child's last event, the parent's join waits


def cpu(
    w: TraceWriter,
    em: Emitter,
    n: int,
    rng,
    *,
    threads: int = 32,
    variables: int = 1_000_000,
    locks: int = 256,
    read_fraction: float = 0.7,
    private_fraction: float = 0.25,
    phases: int = 4,
    unlocked: float = 0.0,
    hot: int = 0,
    locations: int = 0,
) -> dict:
    """CPU-style threads: the main thread (thread 0) forks ``threads`` workers
    per phase and joins them at its end (fork/join as signal/wait on
    per-child flags, the way ``tracerace convert`` imports STD traces).
    Workers run critical sections (acquire lock ``l``, 8 accesses to
    variables ``v`` with ``v % locks == l``, release) and bursts of 8
    accesses to their own private variables; ``read_fraction`` of the
    accesses are reads. Shared variables are touched only under their lock:
    race-free. Small traces get fewer variables (down to 2*10^4) and phases.
    ``unlocked``: the share of critical sections that skip their lock (racy)
    and touch the first ``hot`` variables (all of them when 0);
    ``locations``: when not 0, each access's site is one of this many
    program locations drawn at random (``loc:N``), instead of one per line.
    """
    variables = int(min(variables, max(20_000, n // 4)))
    phases = _clamp(n // 2_000_000, 1, phases)
    private_per_thread = 64
    workers = threads * phases
    PRIV = VAR_BASE + variables * VAR_SIZE
    w.buffer("V", GLOBAL, VAR_BASE, (variables,), VAR_SIZE)
    w.buffer("private", GLOBAL, PRIV, (workers + 1, private_per_thread), VAR_SIZE)
    s_fork = w.site("main.c:40 pthread_create")
    s_start = w.site("worker.c:10 thread start")
    s_acq = w.site("worker.c:20 pthread_mutex_lock")
    s_rd = w.site("worker.c:22 load shared")
    s_wr = w.site("worker.c:23 store shared")
    s_rel = w.site("worker.c:25 pthread_mutex_unlock")
    s_prd = w.site("worker.c:30 load private")
    s_pwr = w.site("worker.c:31 store private")
    s_end = w.site("worker.c:35 thread exit")
    s_join = w.site("main.c:48 pthread_join")
    if locations:
        loc_sites = np.array([w.site(f"loc:{i}") for i in range(locations)])

    em.emit(
        op=INIT,
        launch=0,
        block=0,
        thread=0,
        space=GLOBAL,
        addr=np.array([VAR_BASE, PRIV]),
        size=np.array([variables * VAR_SIZE, (workers + 1) * private_per_thread * VAR_SIZE]),
    )
    seg = CS_ACCESSES + 2
    per_phase = max(1, (n - 4 * workers) // phases // seg)
    for p in range(phases):
        kids = 1 + p * threads + np.arange(threads)
        # fork: the parent's signal, then each child's first event, its wait
        em.emit(
            op=np.array([SIGNAL, WAIT])[None, :],
            obj=FORK_FLAG + kids[:, None],
            arg=1,
            site=np.array([s_fork, s_start])[None, :],
            launch=0,
            block=0,
            thread=np.stack([np.zeros_like(kids), kids], axis=1),
        )
        left = per_phase
        while left:
            m = min(left, CHUNK_ROWS // seg)
            left -= m
            who = kids[rng.integers(0, threads, m)]
            private = rng.random(m) < private_fraction
            lock = rng.integers(0, locks, m)
            slots = variables // locks
            v = lock[:, None] + locks * rng.integers(0, slots, (m, CS_ACCESSES))
            pv = rng.integers(0, private_per_thread, (m, CS_ACCESSES))
            bare = private | (rng.random(m) < unlocked) if unlocked else private
            if hot:
                v = np.where((bare & ~private)[:, None], rng.integers(0, hot, (m, CS_ACCESSES)), v)
            addr = np.where(
                private[:, None],
                PRIV + (who[:, None] * private_per_thread + pv) * VAR_SIZE,
                VAR_BASE + v * VAR_SIZE,
            )
            is_read = rng.random((m, CS_ACCESSES)) < read_fraction
            acc_op = np.where(is_read, READ, WRITE)
            acc_site = np.where(
                private[:, None], np.where(is_read, s_prd, s_pwr), np.where(is_read, s_rd, s_wr)
            )
            if locations:
                acc_site = loc_sites[rng.integers(0, locations, (m, CS_ACCESSES))]
            # Private bursts bracket their accesses with two more private reads
            # so every segment has the same shape (seg rows); so do the
            # critical sections that skip their lock (racy).
            edge_op = np.where(bare, READ, ACQUIRE), np.where(bare, READ, RELEASE)
            edge_addr = PRIV + (who * private_per_thread) * VAR_SIZE
            op = np.concatenate([edge_op[0][:, None], acc_op, edge_op[1][:, None]], axis=1)
            ad = np.concatenate([edge_addr[:, None], addr, edge_addr[:, None]], axis=1)
            obj = np.where(bare, 0, lock)[:, None]
            site = np.concatenate(
                [
                    np.where(bare, s_prd, s_acq)[:, None],
                    acc_site,
                    np.where(bare, s_prd, s_rel)[:, None],
                ],
                axis=1,
            )
            is_access = (op == READ) | (op == WRITE)
            em.emit(
                op=op,
                addr=np.where(is_access, ad, 0),
                size=np.where(is_access, VAR_SIZE, 0),
                obj=np.where(is_access, 0, obj),
                site=site,
                launch=0,
                block=0,
                thread=who[:, None],
            )
        # join: each child's last event signals, the parent waits
        em.emit(
            op=np.array([SIGNAL, WAIT])[None, :],
            obj=JOIN_FLAG + kids[:, None],
            arg=1,
            site=np.array([s_end, s_join])[None, :],
            launch=0,
            block=0,
            thread=np.stack([kids, np.zeros_like(kids)], axis=1),
        )
    return {
        "threads": threads,
        "agents": workers + 1,
        "variables": variables,
        "locks": locks,
        "phases": phases,
        "unlocked": unlocked,
        "hot": hot,
        "locations": locations,
    }


def cpu_racy(
    w,
    em,
    n,
    rng,
    *,
    threads: int = 32,
    variables: int = 100_000,
    locks: int = 256,
    unlocked: float = 0.2,
    hot: int = 500,
    locations: int = 1 << 16,
) -> dict:
    """CPU-style racy: ``cpu`` on 10^5 variables where ``unlocked`` of the
    critical sections skip their lock (they read the thread's private word
    instead of acquiring and releasing) and touch the first ``hot``
    variables, and each access names one of ``locations`` program locations
    as its site (``loc:N``, as ``tracerace convert`` imports STD traces):
    about 120k racy rows and 137k hazards, nearly each a group (site pair)
    of its own, at 2*10^6 events."""
    return cpu(
        w,
        em,
        n,
        rng,
        threads=threads,
        variables=variables,
        locks=locks,
        unlocked=unlocked,
        hot=hot,
        locations=locations,
    )


def uninit_reads(
    w: TraceWriter,
    em: Emitter,
    n: int,
    rng,
    *,
    initialized: bool = False,
    blocks: int = 64,
    threads: int = 256,
    words: int = 16,
) -> dict:
    """GPU-style reads of global memory no write or ``init`` covered: ``blocks``
    x ``threads`` threads in lockstep, each reading its own ``words`` 4-byte
    words in turn, at four sites: one ``uninit_read`` per read (10^7 at 10^7
    events). ``initialized=True`` is the same trace after one ``init`` of the
    whole buffer: no finding at all (``uninit_reads_init``)."""
    agents = blocks * threads
    rounds = max(1, (n - 1) // agents)
    w.buffer("data", GLOBAL, A_BASE, (agents, words), 4)
    sites = np.array([w.site(f"gather.cu:{40 + i} ld.global.f32") for i in range(4)])
    if initialized:
        em.emit(
            op=INIT, launch=0, block=0, thread=0, space=GLOBAL, addr=A_BASE, size=agents * words * 4
        )
    blk, t = _blocks_threads(np.arange(blocks), threads)
    agent = blk * threads + t
    for r0 in range(0, rounds, 64):
        r = np.arange(r0, min(rounds, r0 + 64))[:, None, None]
        em.emit(
            op=READ,
            space=GLOBAL,
            size=4,
            launch=0,
            block=blk[None],
            thread=t[None],
            addr=A_BASE + (agent[None] * words + r % words) * 4,
            site=sites[r % 4],
        )
    return {"blocks": blocks, "agents": agents, "rounds": rounds, "initialized": initialized}


def uninit_reads_init(w, em, n, rng) -> dict:
    """``uninit_reads`` after an ``init`` of its buffer: the same replay, no findings."""
    return uninit_reads(w, em, n, rng, initialized=True)


READ_ONCE_THREADS = 64


def read_once(w: TraceWriter, em: Emitter, n: int, rng, *, initialized: bool = False) -> dict:
    """A kernel that reads its input once: one block's 64 threads in lockstep,
    each round reading the next 64 consecutive 4-byte global words, so every
    read is of a word no other event touches (``n`` distinct words, 4n bytes).
    Never written: one ``uninit_read`` per read; ``initialized=True`` puts an
    ``init`` of the whole buffer first (``read_once_init``): no finding.
    What it measures is the engine's state per access that can never race."""
    threads = READ_ONCE_THREADS
    rounds = max(1, (n - 1) // threads)
    words = rounds * threads
    w.buffer("input", GLOBAL, A_BASE, (words,), 4)
    site = w.site("stream.cu:12 ld.global.f32")
    if initialized:
        em.emit(op=INIT, launch=0, block=0, thread=0, space=GLOBAL, addr=A_BASE, size=words * 4)
    t = np.arange(threads)
    step = 1 << 14  # rounds per piece: bounds the generator's memory
    for r0 in range(0, rounds, step):
        r = np.arange(r0, min(rounds, r0 + step))[:, None]
        em.emit(
            op=READ,
            space=GLOBAL,
            size=4,
            launch=0,
            block=0,
            thread=t[None],
            addr=A_BASE + (r * threads + t[None]) * 4,
            site=site,
        )
    return {
        "blocks": 1,
        "agents": threads,
        "rounds": rounds,
        "words": words,
        "initialized": initialized,
    }


def read_once_init(w, em, n, rng) -> dict:
    """``read_once`` after an ``init`` of its input: the same replay, no findings."""
    return read_once(w, em, n, rng, initialized=True)


def cpu_wide(w, em, n, rng) -> dict:
    """``cpu`` with 128 threads on 2*10^4 variables and 64 locks: heavy contention."""
    return cpu(w, em, n, rng, threads=128, variables=20_000, locks=64)


LARGE_SPAN = 1 << 30
LARGE_CHUNKS_MAX = 1 << 14  # 64 KiB accesses at the most events


def large_access(w: TraceWriter, em: Emitter, n: int, rng, *, racy: bool = False) -> dict:
    """Large accesses: a 1 GiB global buffer written in ``k`` equal
    contiguous accesses (one per thread of one block) and read back in ``k``
    more by the threads of another block, ``k`` the power of two nearest
    below n / 2, between 1 (one 1 GiB write and one 1 GiB read) and 2^14
    (64 KiB each): page-aligned, as buffers and their tiles are. Race-free: the reads
    are a later launch; ``racy=True`` reads in the same launch with nothing
    ordering them (a ``raw`` per read)."""
    k = 1 << (_clamp(n // 2, 1, LARGE_CHUNKS_MAX).bit_length() - 1)
    chunk = LARGE_SPAN // k
    w.buffer("big", GLOBAL, A_BASE, (LARGE_SPAN // 4,), 4)
    store = w.site("fill.cu:12 st.global.v4")
    load = w.site("sum.cu:30 ld.global.v4")
    i = np.arange(k)
    em.emit(
        op=WRITE,
        space=GLOBAL,
        launch=0,
        block=0,
        thread=i,
        addr=A_BASE + i * chunk,
        size=chunk,
        site=store,
    )
    em.emit(
        op=READ,
        space=GLOBAL,
        launch=0 if racy else 1,
        block=1,
        thread=i,
        addr=A_BASE + i * chunk,
        size=chunk,
        site=load,
    )
    return {"span": LARGE_SPAN, "accesses": 2 * k, "bytes_each": chunk}


def large_access_racy(w, em, n, rng) -> dict:
    """``large_access`` with the reads in the writes' launch: a ``raw`` each."""
    return large_access(w, em, n, rng, racy=True)


def launches(w: TraceWriter, em: Emitter, n: int, rng, *, one_launch: bool = False) -> dict:
    """``n`` launches of one global write each (a different word each, so
    race-free): what a launch boundary costs. ``one_launch=True``: the same
    writes by the same ``(block, thread)`` agents in one launch, the
    baseline a trace of many launches is judged against."""
    w.buffer("words", GLOBAL, A_BASE, (n,), 8)
    store = w.site("step.cu:7 st.global.u64")
    i = np.arange(n)
    em.emit(
        op=WRITE,
        space=GLOBAL,
        launch=0 if one_launch else i,
        block=i,
        thread=0,
        addr=A_BASE + 8 * i,
        size=8,
        site=store,
    )
    return {"launches": 1 if one_launch else n}


def launches_one(w, em, n, rng) -> dict:
    """``launches``' writes and agents in one launch."""
    return launches(w, em, n, rng, one_launch=True)


# --- (e) incident scenarios from tracerace.scenarios ------------------------------------


def scenarios_module():
    """``tracerace.scenarios`` if it exists (it is written in another issue), else None."""
    try:
        return importlib.import_module("tracerace.scenarios")
    except ImportError:
        return None


def _scenario_generator(scenario, fixed: bool) -> Callable[..., dict]:
    """A generator for one incident scenario: its own vectorised ``generate``,
    at the ``scale`` that gives about ``n`` events (scale 1 is measured once)."""

    def generate(w: TraceWriter, em: Emitter, n: int, rng) -> dict:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            probe = TraceWriter(f"{tmp}/probe.arrow")
            per_scale = scenario.generate(probe, fixed=fixed, scale=1, seed=0)
            probe.abort()
        scale = max(1, round(n / max(1, per_scale)))
        seed = int(rng.integers(0, 1 << 31))
        em.rows += scenario.generate(w, fixed=fixed, scale=scale, seed=seed)
        return {"scenario": scenario.name, "fixed": fixed, "scale": scale}

    return generate


# --- the registry ----------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    name: str
    generate: Callable[..., dict]
    """``generate(writer, emitter, n, rng) -> info``; rows go through either."""
    doc: str
    expect_kinds: frozenset[str] = frozenset()
    """Hazard kinds the trace must report; a workload expecting none must report nothing."""
    reference: bool = True
    """Whether the reference checker, which keeps every byte, can check it."""

    @property
    def race_free(self) -> bool:
        return not self.expect_kinds


BUILTIN: dict[str, Workload] = {
    wl.name: wl
    for wl in (
        Workload(
            "tiled", tiled, "16x16 shared-memory tiled matmul, 256-thread blocks, 8 resident blocks"
        ),
        Workload(
            "tiled_wide",
            tiled_wide,
            "tiled on up to 1024 blocks x 256 threads (262,144 agents), all resident",
        ),
        Workload(
            "pipeline", pipeline, "3-stage cp.async pipelined matmul (commit/wait_group + bar_sync)"
        ),
        Workload(
            "crossblock",
            crossblock,
            "persistent blocks: release/acquire atomic look-back chain + flags",
        ),
        Workload("cpu", cpu, "32 CPU threads, 10^6 variables, 256 locks, fork/join, 70% reads"),
        Workload(
            "cpu_wide",
            cpu_wide,
            "128 CPU threads, 2*10^4 variables, 64 locks, fork/join, 70% reads",
        ),
        Workload(
            "cpu_racy",
            cpu_racy,
            "cpu on 10^5 variables, 4% of critical sections unlocked, 2^16 sites",
            frozenset({"raw", "war", "waw"}),
        ),
        Workload(
            "tiled_racy",
            tiled_racy,
            "tiled without its second bar_sync: a war per shared store",
            frozenset({"war"}),
        ),
        Workload(
            "uninit_reads",
            uninit_reads,
            "16,384 threads reading never-written global words: an uninit_read each",
            frozenset({"uninit_read"}),
        ),
        Workload(
            "uninit_reads_init",
            uninit_reads_init,
            "uninit_reads after an init of its buffer: no findings",
        ),
        Workload(
            "read_once",
            read_once,
            "one block's 64 threads reading n distinct never-written global words once",
            frozenset({"uninit_read"}),
        ),
        Workload(
            "read_once_init", read_once_init, "read_once after an init of its input: no findings"
        ),
        Workload(
            "launches", launches, "n launches of one global write each (one agent, one word each)"
        ),
        Workload(
            "launches_one", launches_one, "launches' n writes by the same agents in one launch"
        ),
        Workload(
            "large_access",
            large_access,
            "a 1 GiB buffer written and read back in n/2 large accesses each (1 to 2^14)",
            reference=False,
        ),
        Workload(
            "large_access_racy",
            large_access_racy,
            "large_access with the reads unordered after the writes: a raw each",
            frozenset({"raw"}),
            reference=False,
        ),
    )
}


def workloads() -> dict[str, Workload]:
    """The built-in workloads, then each incident scenario (buggy, and fixed
    as ``NAME_fixed``) when ``tracerace.scenarios`` exists."""
    out = dict(BUILTIN)
    module = scenarios_module()
    for name, scn in (getattr(module, "SCENARIOS", None) or {}).items():
        out[name] = Workload(
            name,
            _scenario_generator(scn, False),
            f"incident scenario: {scn.title}",
            frozenset(scn.expected_kinds),
        )
        out[f"{name}_fixed"] = Workload(
            f"{name}_fixed",
            _scenario_generator(scn, True),
            f"incident scenario, fixed program: {scn.name}",
        )
    return out


def scenarios_note() -> str | None:
    """A line to print when the incident scenarios cannot be benchmarked."""
    if scenarios_module() is None:
        return "note: tracerace.scenarios does not exist yet; skipping the incident scenarios"
    return None


def write_workload(
    name: str, path: str, n: int, *, seed: int = 0, compression: str | None = "lz4"
) -> dict:
    """Generate workload ``name`` with about ``n`` events into ``path``."""
    wl = workloads()[name]
    rng = np.random.default_rng(seed)
    with TraceWriter(
        path, compression=compression, producer=f"tracerace bench: {name}", batch_size=CHUNK_ROWS
    ) as writer:
        em = Emitter(writer)
        info = wl.generate(writer, em, n, rng)
        em.flush()
        info["events"] = em.rows
    return info
