"""Incident 5: TMA multicast leaves part of a tile unwritten; a TMA store skips the proxy fence.

A warp-specialized GEMM runs clusters of four CTAs along M (a cluster
column): they share one B tile (``BK x 96`` fp16) per k-step, which the lead
CTA loads once and multicasts. Each CTA has a producer warpgroup and two
consumer warpgroups; each warpgroup is recorded as one agent (its first
thread: 0, 128, 256). Per k-step, two pipeline stages:

* every producer waits until the stage is free (its CTA's ``empty`` mbarrier;
  the lead's collects the arrivals of all the cluster's consumers, since the
  lead writes into every CTA), arms its own ``full`` mbarrier (expect_tx +
  arrive) and TMA-loads its A tile;
* the lead's producer then multicasts the B tile: one ``tma_load`` per box and
  destination CTA (``peer``), completing bytes on that CTA's ``full`` barrier.
  A 128-byte-swizzled box is at most 64 fp16 columns wide, so the 96 columns
  take two boxes (``sB_box0``: columns 0-63, ``sB_box1``: columns 64-95);
* consumers wait on ``full``, read A and both B boxes (wgmma operands: the
  async proxy), arrive on their own CTA's ``empty`` and, outside the lead, on
  the lead's (a remote arrive).

The epilogue stores each consumer's C rows to shared memory (generic proxy),
meets the producer at a named barrier, and the producer TMA-stores the tile.

Buggy: the box count is ``96 // 64 = 1`` (and ``expect_tx`` counts what is
sent, so every phase completes): ``sB_box1`` is never written, and each
consumer read of it is an ``uninit_read``. The consumers also skip
``fence.proxy.async`` before the named barrier, so the TMA store (async
proxy) reads their generic writes unfenced: ``proxy_fence``. Fixed: two boxes
(``ceil``), and a fence after the C stores.

``scale`` multiplies the clusters per launch (two at scale 1, up to 32) and
then the launches (two at scale 1).
"""

from __future__ import annotations

import math

import numpy as np

from ..trace.ops import Op, Space
from ._build import Launch, write_launches
from ._target import open_writer, register_sites

NAME = "incident5"
TITLE = "TMA multicast GEMM: a B-tile box is never loaded, a TMA store reads unfenced writes"
EXPECTED_KINDS = frozenset({"uninit_read", "proxy_fence"})
EVENTS_PER_SCALE = 1_316  # events of the buggy trace at scale 1

CLUSTER = 4  # CTAs per cluster; rank 0 is the lead
PRODUCER = 0  # thread ids: the first thread of each warpgroup
CONSUMERS = (128, 256)
BM, BK, BN = 16, 16, 96  # per-CTA A tile BM x BK, shared B tile BK x BN
BOX_COLS = 64  # widest box a 128-byte swizzle allows (fp16)
STAGES = 2
K_TILES = 4
CLUSTERS = 2  # per launch at scale 1
MAX_CLUSTERS = 32
LAUNCHES = 2
RESIDENT = 4  # clusters interleaved at a time

FP16 = 2
K = K_TILES * BK
A_TILE = BM * BK * FP16  # 512 bytes
BOX_WIDTHS = (BOX_COLS, BN - BOX_COLS)  # 64, 32 columns
BOX_BYTES = tuple(BK * w * FP16 for w in BOX_WIDTHS)  # 2048, 1024
SA = 0x0  # shared-memory layout of a CTA
SB = (SA + STAGES * A_TILE, SA + STAGES * A_TILE + STAGES * BOX_BYTES[0])
SC = SB[1] + STAGES * BOX_BYTES[1]
MBAR = SC + BM * BN * FP16
FULL = tuple(MBAR + 8 * s for s in range(STAGES))  # in every CTA
EMPTY = tuple(MBAR + 8 * (STAGES + s) for s in range(STAGES))  # in every CTA
A_BASE, B_BASE, C_BASE = 0x1000_0000, 0x2000_0000, 0x3000_0000

SITES = {
    "init_a": "gemm_host.py:52 copy A",
    "init_b": "gemm_host.py:53 copy B",
    "mbar_init_full": "gemm_mcast.cu:140 mbarrier.init full[stage]",
    "mbar_init_empty": "gemm_mcast.cu:142 mbarrier.init empty[stage]",
    "prod_wait_empty": "gemm_mcast.cu:171 mbarrier.try_wait.parity empty[stage]",
    "prod_expect": "gemm_mcast.cu:173 mbarrier.expect_tx full[stage]",
    "prod_arrive": "gemm_mcast.cu:174 mbarrier.arrive full[stage]",
    "tma_a": "gemm_mcast.cu:176 cp.async.bulk.tensor A",
    "tma_b": "gemm_mcast.cu:181 cp.async.bulk.tensor.multicast B box",
    "cons_wait_full": "gemm_mcast.cu:205 mbarrier.try_wait.parity full[stage]",
    "wgmma_a": "gemm_mcast.cu:209 wgmma.mma_async A",
    "wgmma_b0": "gemm_mcast.cu:209 wgmma.mma_async B cols 0-63",
    "wgmma_b1": "gemm_mcast.cu:209 wgmma.mma_async B cols 64-95",
    "cons_arrive_empty": "gemm_mcast.cu:213 mbarrier.arrive empty[stage]",
    "cons_arrive_lead": "gemm_mcast.cu:215 mbarrier.arrive.shared::cluster lead empty[stage]",
    "st_c": "gemm_mcast.cu:240 st.shared C",
    "fence": "gemm_mcast.cu:242 fence.proxy.async.shared::cta",
    "bar_epi": "gemm_mcast.cu:243 bar.sync 1",
    "tma_store": "gemm_mcast.cu:250 cp.async.bulk.tensor.store C",
    "bulk_commit": "gemm_mcast.cu:251 cp.async.bulk.commit_group",
    "bulk_wait": "gemm_mcast.cu:252 cp.async.bulk.wait_group 0",
}

EXPECTED_SITES = (
    ("uninit_read", None, SITES["wgmma_b1"]),
    ("proxy_fence", SITES["st_c"], SITES["tma_store"]),
)


def declare_buffers(w, m: int) -> None:
    g, s = int(Space.GLOBAL), int(Space.SHARED)
    w.buffer("A", g, A_BASE, [m, K], FP16)
    w.buffer("B", g, B_BASE, [K, BN], FP16)
    w.buffer("C", g, C_BASE, [m, BN], FP16)
    w.buffer("sA", s, SA, [STAGES, BM, BK], FP16)
    for j, width in enumerate(BOX_WIDTHS):
        w.buffer(f"sB_box{j}", s, SB[j], [STAGES, BK, width], FP16)
    w.buffer("sC", s, SC, [BM, BN], FP16)


def pipeline_order() -> list[tuple[str, int]]:
    """The producer runs one stage ahead: P0 P1 C0 P2 C1 ... C(K-1)."""
    order = [("P", kt) for kt in range(STAGES - 1)]
    for kt in range(K_TILES):
        if kt + STAGES - 1 < K_TILES:
            order.append(("P", kt + STAGES - 1))
        order.append(("C", kt))
    return order


def build_launch(site: dict[str, int], *, fixed: bool, clusters: int) -> dict[str, np.ndarray]:
    L = Launch()
    shared, glob = int(Space.SHARED), int(Space.GLOBAL)
    boxes = math.ceil(BN / BOX_COLS) if fixed else BN // BOX_COLS
    tx_bytes = A_TILE + sum(BOX_BYTES[:boxes])
    # block = cluster * CLUSTER + rank, shaped to broadcast against roles
    blk = np.arange(clusters * CLUSTER)[:, None]
    cl, rank = blk // CLUSTER, blk % CLUSTER
    lead = cl * CLUSTER
    wave, slot = cl // RESIDENT, cl % RESIDENT
    cons = np.array(CONSUMERS)[None, :]
    role = np.arange(1, 1 + len(CONSUMERS))[None, :]
    m_row = blk * BM  # first row of A and C of a CTA
    is_lead = rank[:, 0] == 0  # rows of the lead CTAs: shape (clusters, 1)

    def key(pos, sub, r=0):
        return ((((wave * 64 + pos) * 32 + sub) * RESIDENT + slot) * CLUSTER + rank) * 3 + r

    L.add(
        -1, Op.INIT, 0, 0, addr=A_BASE, size=clusters * CLUSTER * BM * K * FP16, site=site["init_a"]
    )
    L.add(-1, Op.INIT, 0, 0, addr=B_BASE, size=K * BN * FP16, site=site["init_b"])

    # Prologue: barriers. full[s]: one arrival, the producer's. empty[s]: one per
    # consumer of the CTA, or, in the lead, of the cluster.
    empty_arrivals = np.where(is_lead[:, None], CLUSTER, 1) * len(CONSUMERS)
    for s in range(STAGES):
        L.add(
            key(0, s),
            Op.MBAR_INIT,
            blk,
            PRODUCER,
            cluster=cl,
            space=shared,
            obj=FULL[s],
            arg=1,
            site=site["mbar_init_full"],
        )
        L.add(
            key(0, STAGES + s),
            Op.MBAR_INIT,
            blk,
            PRODUCER,
            cluster=cl,
            space=shared,
            obj=EMPTY[s],
            arg=empty_arrivals,
            site=site["mbar_init_empty"],
        )

    for pos, (who, kt) in enumerate(pipeline_order(), start=1):
        s, use = kt % STAGES, kt // STAGES
        if who == "P":
            if use >= 1:
                L.add(
                    key(pos, 0),
                    Op.MBAR_WAIT,
                    blk,
                    PRODUCER,
                    cluster=cl,
                    obj=EMPTY[s],
                    arg=(use - 1) & 1,
                    site=site["prod_wait_empty"],
                )
            L.add(
                key(pos, 1),
                Op.MBAR_EXPECT_TX,
                blk,
                PRODUCER,
                cluster=cl,
                obj=FULL[s],
                arg=tx_bytes,
                site=site["prod_expect"],
            )
            L.add(
                key(pos, 2),
                Op.MBAR_ARRIVE,
                blk,
                PRODUCER,
                cluster=cl,
                obj=FULL[s],
                arg=1,
                site=site["prod_arrive"],
            )
            L.add(
                key(pos, 3),
                Op.TMA_LOAD,
                blk,
                PRODUCER,
                cluster=cl,
                space=shared,
                addr=SA + s * A_TILE,
                size=A_TILE,
                space2=glob,
                addr2=A_BASE + (m_row * K + kt * BK) * FP16,
                obj=FULL[s],
                site=site["tma_a"],
            )
            # The lead multicasts B: a box to every CTA of its cluster (rank 0's key).
            d = np.arange(CLUSTER)[None, :]
            for j in range(boxes):
                L.add(
                    key(pos, 4 + j * CLUSTER + d)[is_lead],
                    Op.TMA_LOAD,
                    blk[is_lead],
                    PRODUCER,
                    cluster=cl[is_lead],
                    space=shared,
                    peer=lead[is_lead] + d,
                    addr=SB[j] + s * BOX_BYTES[j],
                    size=BOX_BYTES[j],
                    space2=glob,
                    addr2=B_BASE + (kt * BK * BN + j * BOX_COLS) * FP16,
                    obj=FULL[s],
                    site=site["tma_b"],
                )
        else:
            L.add(
                key(pos, 0, role),
                Op.MBAR_WAIT,
                blk,
                cons,
                cluster=cl,
                obj=FULL[s],
                arg=use & 1,
                site=site["cons_wait_full"],
            )
            half = BM // len(CONSUMERS)
            L.add(
                key(pos, 1, role),
                Op.READ,
                blk,
                cons,
                cluster=cl,
                space=shared,
                proxy=1,
                addr=SA + s * A_TILE + (role - 1) * half * BK * FP16,
                size=half * BK * FP16,
                site=site["wgmma_a"],
            )
            for j in range(len(BOX_WIDTHS)):
                L.add(
                    key(pos, 2 + j, role),
                    Op.READ,
                    blk,
                    cons,
                    cluster=cl,
                    space=shared,
                    proxy=1,
                    addr=SB[j] + s * BOX_BYTES[j],
                    size=BOX_BYTES[j],
                    site=site[f"wgmma_b{j}"],
                )
            L.add(
                key(pos, 4, role),
                Op.MBAR_ARRIVE,
                blk,
                cons,
                cluster=cl,
                obj=EMPTY[s],
                arg=1,
                site=site["cons_arrive_empty"],
            )
            L.add(
                key(pos, 5, role)[~is_lead],
                Op.MBAR_ARRIVE,
                blk[~is_lead],
                cons,
                cluster=cl[~is_lead],
                peer=lead[~is_lead],
                obj=EMPTY[s],
                arg=1,
                site=site["cons_arrive_lead"],
            )

    # Epilogue: consumers store their rows of C (two rows per store), the named
    # barrier, then the producer's TMA store of the tile.
    pos = len(pipeline_order()) + 1
    half = BM // len(CONSUMERS)
    row_bytes = BN * FP16
    for i in range(half // 2):
        row = (role - 1) * half + 2 * i
        L.add(
            key(pos, i, role),
            Op.WRITE,
            blk,
            cons,
            cluster=cl,
            space=shared,
            addr=SC + row * row_bytes,
            size=2 * row_bytes,
            site=site["st_c"],
        )
    if fixed:
        L.add(key(pos, 8, role), Op.FENCE_PROXY_ASYNC, blk, cons, cluster=cl, site=site["fence"])
    L.add(
        key(pos, 9, role),
        Op.BAR_SYNC,
        blk,
        cons,
        cluster=cl,
        obj=1,
        arg=1 + len(CONSUMERS),
        site=site["bar_epi"],
    )
    L.add(
        key(pos, 9),
        Op.BAR_SYNC,
        blk,
        PRODUCER,
        cluster=cl,
        obj=1,
        arg=1 + len(CONSUMERS),
        site=site["bar_epi"],
    )
    L.add(
        key(pos, 10),
        Op.TMA_STORE,
        blk,
        PRODUCER,
        cluster=cl,
        space=glob,
        addr=C_BASE + m_row * row_bytes,
        size=BM * row_bytes,
        space2=shared,
        addr2=SC,
        site=site["tma_store"],
    )
    L.add(key(pos, 11), Op.BULK_COMMIT, blk, PRODUCER, cluster=cl, site=site["bulk_commit"])
    L.add(key(pos, 12), Op.BULK_WAIT, blk, PRODUCER, cluster=cl, arg=0, site=site["bulk_wait"])
    return L.columns()


def generate(target, *, fixed: bool = False, scale: int = 1, seed: int = 0) -> int:
    """Write ``2 * scale`` clusters (at most 32 per launch; about 330 events each) in
    ``2 * ceil(scale / 16)`` launches to ``target``; returns the rows written. The
    schedule is deterministic: ``seed`` is accepted for the common interface."""
    with open_writer(target, f"tracerace.scenarios {NAME}") as w:
        site = register_sites(w, SITES)
        clusters = min(CLUSTERS * scale, MAX_CLUSTERS)
        declare_buffers(w, clusters * CLUSTER * BM)
        launch = build_launch(site, fixed=fixed, clusters=clusters)
        count = LAUNCHES * math.ceil(CLUSTERS * scale / clusters)
        for i in range(count):  # three warpgroups per CTA
            w.launch_dims(i, grid=(clusters * CLUSTER,), block=(3 * 128,), kernel="gemm_mcast")
        return write_launches(w, [launch] * count)
