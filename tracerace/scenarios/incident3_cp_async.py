"""Incident 3: a cp.async still in flight when the epilogue reuses shared memory (split-K matmul).

A generated split-K matmul (``C += A @ B``, fp16 in, fp32 out) runs a
three-stage ``cp.async`` pipeline per block: every thread copies 16-byte
chunks of the A and B tiles of k-tile ``kt + 2`` while the block computes on
k-tile ``kt`` (``cp.async.wait_group 1`` + ``__syncthreads`` at the top of each
iteration). Like any software-pipelined loop with masked loads, the last
iterations still issue copies for k-tiles past the split's end: masked,
zero-filling copies (recorded reading the clamped source pointer, the split's
last k-tile). The epilogue then reuses the pipeline buffer: each thread stores
its accumulator fragment into an fp32 C tile at shared offset 0, the block
synchronizes, and each thread reads a row segment back and adds it into global
C with ``red.global.add`` (split-K reduction).

Buggy: the epilogue is guarded by ``__syncthreads`` only. Two zero-fill groups
are still pending, one of them writing stage 0, which the C tile overlaps:
``async_inflight`` at the epilogue's stores and loads. Fixed:
``cp.async.wait_group 0`` before that ``__syncthreads``.

A launch is one GEMM of ``TILES_PER_LAUNCH`` (at most) 32x32 output tiles times
two K splits, eight resident blocks at a time, each block's threads in
lockstep. ``scale`` counts output tiles.
"""

from __future__ import annotations

import math

import numpy as np

from ..trace.ops import Op, Space
from ._build import Launch, write_launches
from ._target import open_writer, register_sites

NAME = "incident3"
TITLE = "split-K matmul: an in-flight cp.async lands in the shared-memory epilogue buffer"
EXPECTED_KINDS = frozenset({"async_inflight"})
EVENTS_PER_SCALE = 11_523  # events of the buggy trace at scale 1

BM = BN = BK = 32
THREADS = 64
STAGES = 3
K_TILES = 6  # per split; the pending zero-fill groups write stages 0 and 1
SPLIT_K = 2
K = SPLIT_K * K_TILES * BK
TILES_PER_LAUNCH = 16
RESIDENT = 8  # blocks interleaved at a time (one wave)

FP16, FP32 = 2, 4
CHUNK = 16  # bytes per cp.async
TILE_CHUNKS = BM * BK * FP16 // CHUNK  # 128 per operand tile
COPIES = TILE_CHUNKS // THREADS  # 2 per operand per thread
A_SMEM, B_SMEM = 0, BM * BK * FP16  # offsets inside a stage
STAGE_BYTES = 2 * BM * BK * FP16  # 4 KiB
C_SMEM = 0  # the epilogue reuses the pipeline buffer
ROW_CHUNKS = BK * FP16 // CHUNK  # 16-byte chunks per tile row (4)
A_BASE, B_BASE, C_BASE = 0x1000_0000, 0x2000_0000, 0x3000_0000

SITES = {
    "init_a": "matmul_host.py:30 copy A",
    "init_b": "matmul_host.py:31 copy B",
    "init_c": "matmul_host.py:32 zero C",
    "cp_a": "matmul_splitk.cu:71 cp.async.cg.shared.global A",
    "cp_b": "matmul_splitk.cu:72 cp.async.cg.shared.global B",
    "commit": "matmul_splitk.cu:74 cp.async.commit_group",
    "wait": "matmul_splitk.cu:80 cp.async.wait_group 1",
    "sync_loop": "matmul_splitk.cu:81 __syncthreads",
    "ld_a": "matmul_splitk.cu:85 ldmatrix A",
    "ld_b": "matmul_splitk.cu:86 ldmatrix.trans B",
    "wait_all": "matmul_splitk.cu:101 cp.async.wait_group 0",
    "sync_epi": "matmul_splitk.cu:102 __syncthreads",
    "st_c": "matmul_splitk.cu:105 st.shared.v4.f32 C",
    "sync_epi2": "matmul_splitk.cu:107 __syncthreads",
    "ld_c": "matmul_splitk.cu:109 ld.shared.v4.f32 C",
    "red_c": "matmul_splitk.cu:110 red.global.add.v4.f32 C",
}

EXPECTED_SITES = tuple(
    ("async_inflight", SITES[copy], SITES[use])
    for copy in ("cp_a", "cp_b")
    for use in ("st_c", "ld_c")
)


def declare_buffers(w, n: int) -> None:
    g, s = int(Space.GLOBAL), int(Space.SHARED)
    w.buffer("A", g, A_BASE, [BM, K], FP16)
    w.buffer("B", g, B_BASE, [K, n], FP16)
    w.buffer("C", g, C_BASE, [BM, n], FP32)
    # The epilogue's view of the pipeline buffer first: reports name its elements.
    w.buffer("c_tile", s, C_SMEM, [BM, BN], FP32)
    stage = STAGE_BYTES // FP16
    w.buffer("sA", s, A_SMEM, [STAGES, BM, BK], FP16, strides=[stage, BK, 1])
    w.buffer("sB", s, B_SMEM, [STAGES, BK, BN], FP16, strides=[stage, BN, 1])


def build_launch(site: dict[str, int], *, fixed: bool, tiles: int) -> dict[str, np.ndarray]:
    """One GEMM launch: ``tiles`` output tiles (along N) times SPLIT_K blocks."""
    L = Launch()
    n = tiles * BN
    blocks = tiles * SPLIT_K
    b = np.arange(blocks)[:, None]  # block = tile * SPLIT_K + split
    tile, split = b // SPLIT_K, b % SPLIT_K
    t = np.arange(THREADS)[None, :]
    wave, slot = b // RESIDENT, b % RESIDENT
    shared = int(Space.SHARED)
    step = 0

    def ins(op, **cols) -> None:
        """One instruction of every thread of every block, threads in lockstep."""
        nonlocal step
        key = ((wave * 1024 + step) * RESIDENT + slot) * THREADS + t
        L.add(key, op, b, t, **cols)
        step += 1

    # Inputs, written by the host before the launch.
    for name, base, size in (
        ("a", A_BASE, BM * K * FP16),
        ("b", B_BASE, K * n * FP16),
        ("c", C_BASE, BM * n * FP32),
    ):
        L.add(-1, Op.INIT, 0, 0, addr=base, size=size, site=site[f"init_{name}"])

    def issue(kt: int) -> None:
        """Copies of k-tile ``kt`` into its stage; past the split's end, zero-fill
        copies from the clamped (last valid) k-tile."""
        src_kt = min(kt, K_TILES - 1)
        k0 = split * K_TILES * BK + src_kt * BK
        stage = (kt % STAGES) * STAGE_BYTES
        for j in range(COPIES):
            chunk = t + j * THREADS
            row, col = chunk // ROW_CHUNKS, (chunk % ROW_CHUNKS) * (CHUNK // FP16)
            ins(
                Op.CP_ASYNC,
                space=shared,
                addr=stage + A_SMEM + chunk * CHUNK,
                size=CHUNK,
                space2=0,
                addr2=A_BASE + (row * K + k0 + col) * FP16,
                site=site["cp_a"],
            )
        for j in range(COPIES):
            chunk = t + j * THREADS
            row, col = chunk // ROW_CHUNKS, (chunk % ROW_CHUNKS) * (CHUNK // FP16)
            ins(
                Op.CP_ASYNC,
                space=shared,
                addr=stage + B_SMEM + chunk * CHUNK,
                size=CHUNK,
                space2=0,
                addr2=B_BASE + ((k0 + row) * n + tile * BN + col) * FP16,
                site=site["cp_b"],
            )
        ins(Op.CP_ASYNC_COMMIT, site=site["commit"])

    for kt in range(STAGES - 1):
        issue(kt)
    for kt in range(K_TILES):
        ins(Op.CP_ASYNC_WAIT, arg=STAGES - 2, site=site["wait"])
        ins(Op.BAR_SYNC, obj=0, arg=THREADS, site=site["sync_loop"])
        stage = (kt % STAGES) * STAGE_BYTES
        # Each thread reads chunks another thread copied (the barrier is what orders them).
        for j in range(COPIES):
            chunk = (t + THREADS // 2) % THREADS + j * THREADS
            ins(
                Op.READ,
                space=shared,
                addr=stage + A_SMEM + chunk * CHUNK,
                size=CHUNK,
                site=site["ld_a"],
            )
        for j in range(COPIES):
            chunk = (t + THREADS // 2) % THREADS + j * THREADS
            ins(
                Op.READ,
                space=shared,
                addr=stage + B_SMEM + chunk * CHUNK,
                size=CHUNK,
                site=site["ld_b"],
            )
        issue(kt + STAGES - 1)

    # Epilogue: accumulator fragments (4 rows x 4 columns per thread) into the C tile,
    # then a row segment per thread back out and into global C.
    if fixed:
        ins(Op.CP_ASYNC_WAIT, arg=0, site=site["wait_all"])
    ins(Op.BAR_SYNC, obj=0, arg=THREADS, site=site["sync_epi"])
    for i in range(4):
        row, col = (t // 8) * 4 + i, (t % 8) * 4
        ins(
            Op.WRITE,
            space=shared,
            addr=C_SMEM + (row * BN + col) * FP32,
            size=4 * FP32,
            site=site["st_c"],
        )
    ins(Op.BAR_SYNC, obj=0, arg=THREADS, site=site["sync_epi2"])
    for i in range(4):
        row, col = t // 2, (t % 2) * 16 + 4 * i
        ins(
            Op.READ,
            space=shared,
            addr=C_SMEM + (row * BN + col) * FP32,
            size=4 * FP32,
            site=site["ld_c"],
        )
        ins(
            Op.ATOMIC,
            addr=C_BASE + (row * n + tile * BN + col) * FP32,
            size=4 * FP32,
            scope=4,
            sem=0,
            site=site["red_c"],
        )
    return L.columns()


def generate(target, *, fixed: bool = False, scale: int = 1, seed: int = 0) -> int:
    """Write ``scale`` output tiles (about 11,500 events each) to ``target``, at most
    ``TILES_PER_LAUNCH`` per launch; returns the rows written. The schedule is
    deterministic: ``seed`` is accepted for the common interface."""
    with open_writer(target, f"tracerace.scenarios {NAME}") as w:
        site = register_sites(w, SITES)
        per_launch = min(scale, TILES_PER_LAUNCH)
        declare_buffers(w, per_launch * BN)
        launches = math.ceil(scale / per_launch)
        last = scale - (launches - 1) * per_launch
        full = build_launch(site, fixed=fixed, tiles=per_launch)
        tail = full if last == per_launch else build_launch(site, fixed=fixed, tiles=last)
        for i in range(launches):  # block = tile * SPLIT_K + split: blockIdx (split, tile)
            tiles = per_launch if i < launches - 1 else last
            w.launch_dims(i, grid=(SPLIT_K, tiles), block=(THREADS,), kernel="matmul_splitk")
        return write_launches(w, [full] * (launches - 1) + [tail])
