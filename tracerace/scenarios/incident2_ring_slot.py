"""Incident 2: a ring slot overwritten before it was consumed (mesh decode, PE simulator).

Eight processing elements (blocks) exchange activation chunks with their
neighbours in both directions (offsets +-1, +-2, +-3, +4), six chunks per
neighbour: 42 receives per PE per panel. Each PE has two agents, a math unit
(thread ``MATH``) and a receive DMA engine (thread ``DMA``); ordering is by
queue send/receive (``signal``/``wait`` on per-PE queue ids):

* at the start of a panel the math unit stores its six outgoing chunks in its
  ``xfer`` buffer and sends a descriptor per (chunk, neighbour) to the
  neighbour's receive queue;
* the DMA engine receives each descriptor, copies the chunk from the sender's
  memory into its ring slot ``tail % 8`` and notifies the math unit;
* the math unit receives the notification and reads the slot.

With 42 receives on 8 slots the ring wraps five times a panel. In the buggy
program nothing tells the DMA engine that the math unit has read a slot, so
receive ``t`` overwrites the slot of receive ``t - 8`` unordered with the math
read of it: a ``war`` race for every receive from the ninth on (in the
recorded schedule the math unit keeps up, so each read still comes first). The
fixed program's math unit sends a "slot free" credit after each read and the
DMA engine waits for one before reusing a slot.

The math unit lags the DMA engine by one to six receives, a lag that only grows
within a panel (a stall is never made up). One launch is one panel; ``scale``
counts groups of three panels.
"""

from __future__ import annotations

import numpy as np

from ..trace.ops import Op, Space
from ._build import Launch, variants, write_launches
from ._target import open_writer, register_sites

NAME = "incident2"
TITLE = "mesh decode on 8 PEs: a ring receive overwrites a slot the math unit has not read"
EXPECTED_KINDS = frozenset({"war"})
EVENTS_PER_SCALE = 7_224  # events of the buggy trace at scale 1

PES = 8
MATH, DMA = 0, 1  # thread ids: math unit, receive DMA engine
OFFSETS = np.array([1, -1, 2, -2, 3, -3, 4])  # neighbours, in the order chunks fan out
CHUNKS_PER_PEER = 6
RECEIVES = CHUNKS_PER_PEER * len(OFFSETS)  # 42 per PE per panel
SLOTS = 8
CHUNK = 32  # fp32 elements per chunk
MAX_LAG = 6  # receives the math unit trails the DMA by, at most
PANELS_PER_SCALE = 3
POOL = 8

FP32 = 4
CHUNK_BYTES = CHUNK * FP32
RING = 0x0  # shared-memory offsets in each PE
XFER = 0x1000
OUT = 0x1000_0000  # global
SEND_QUEUE, READY_QUEUE, FREE_QUEUE = 0x100, 0x200, 0x300  # + PE

SITES = {
    "store_xfer": "mesh_decode.py:88 pe.store(xfer[chunk])",
    "send": "mesh_decode.py:91 queue.send(peer, xfer[chunk])",
    "dma_wait_free": "mesh_decode.py:129 dma.wait(slot_free)",
    "dma_recv": "mesh_decode.py:130 dma.recv(queue)",
    "dma_read": "mesh_decode.py:133 dma.read(peer.xfer[chunk])",
    "dma_write": "mesh_decode.py:134 dma.write(ring[tail % 8])",
    "dma_notify": "mesh_decode.py:136 dma.notify(math)",
    "math_wait": "mesh_decode.py:160 math.wait(ring_ready)",
    "math_read": "mesh_decode.py:162 math.matmul(ring[head % 8])",
    "math_free": "mesh_decode.py:165 math.signal(slot_free)",
    "store_out": "mesh_decode.py:180 pe.store(out)",
}

EXPECTED_SITES = (("war", SITES["math_read"], SITES["dma_write"]),)

_SUBS = 64
T_PRODUCE, T_SEND, T_RECEIVE = 0, 1, 10  # ticks of the schedule; a receive takes 2


def _key(tick, sub, pe):
    return (np.asarray(tick, np.int64) * _SUBS + sub) * PES + pe


def declare_buffers(w) -> None:
    w.buffer("ring", int(Space.SHARED), RING, [SLOTS, CHUNK], FP32)
    w.buffer("xfer", int(Space.SHARED), XFER, [CHUNKS_PER_PEER, CHUNK], FP32)
    w.buffer("out", int(Space.GLOBAL), OUT, [PES, CHUNK], FP32)


def math_lags(rng: np.random.Generator) -> np.ndarray:
    """(PES, RECEIVES): receives the math unit trails the DMA engine by, never shrinking."""
    return np.maximum.accumulate(rng.integers(1, MAX_LAG + 1, size=(PES, RECEIVES)), axis=1)


def build_panel(site: dict[str, int], *, fixed: bool, lag: np.ndarray) -> dict[str, np.ndarray]:
    L = Launch()
    shared = int(Space.SHARED)
    p = np.arange(PES)[:, None]
    c = np.arange(CHUNKS_PER_PEER)

    # Producer side: store the outgoing chunks, then one send per (chunk, neighbour),
    # in fan-out order, so every receive queue fills in its receiver's order.
    L.add(
        _key(T_PRODUCE, c, p),
        Op.WRITE,
        p,
        MATH,
        space=shared,
        addr=XFER + c * CHUNK_BYTES,
        size=CHUNK_BYTES,
        site=site["store_xfer"],
    )
    t = np.arange(RECEIVES)
    dest = (p + OFFSETS[t % len(OFFSETS)]) % PES
    L.add(
        _key(T_SEND, t, p),
        Op.SIGNAL,
        p,
        MATH,
        obj=SEND_QUEUE + dest,
        arg=1,
        scope=4,
        site=site["send"],
    )

    # Receive t of PE p: chunk t // 7 from the neighbour at offset OFFSETS[t % 7].
    src = (p - OFFSETS[t % len(OFFSETS)]) % PES
    chunk = t // len(OFFSETS)
    slot = RING + (t % SLOTS) * CHUNK_BYTES

    def dma(sub):
        return _key(T_RECEIVE + 2 * t, sub, p)

    if fixed:
        L.add(
            dma(0)[:, SLOTS:],
            Op.WAIT,
            p,
            DMA,
            obj=FREE_QUEUE + p,
            arg=1,
            site=site["dma_wait_free"],
        )
    L.add(dma(1), Op.WAIT, p, DMA, obj=SEND_QUEUE + p, arg=1, site=site["dma_recv"])
    L.add(
        dma(2),
        Op.READ,
        p,
        DMA,
        space=shared,
        peer=src,
        addr=XFER + chunk * CHUNK_BYTES,
        size=CHUNK_BYTES,
        site=site["dma_read"],
    )
    L.add(
        dma(3), Op.WRITE, p, DMA, space=shared, addr=slot, size=CHUNK_BYTES, site=site["dma_write"]
    )
    L.add(dma(4), Op.SIGNAL, p, DMA, obj=READY_QUEUE + p, arg=1, scope=2, site=site["dma_notify"])

    # The math unit handles receive t right after the DMA engine's receive t + lag:
    # its read of slot t % 8 comes before receive t + 8 overwrites it (lag < 8).
    def compute(sub):
        return _key(T_RECEIVE + 2 * (t + lag) + 1, sub, p)

    L.add(compute(0), Op.WAIT, p, MATH, obj=READY_QUEUE + p, arg=1, site=site["math_wait"])
    L.add(
        compute(1),
        Op.READ,
        p,
        MATH,
        space=shared,
        addr=slot,
        size=CHUNK_BYTES,
        site=site["math_read"],
    )
    if fixed:
        L.add(
            compute(2)[:, : RECEIVES - SLOTS],
            Op.SIGNAL,
            p,
            MATH,
            obj=FREE_QUEUE + p,
            arg=1,
            scope=2,
            site=site["math_free"],
        )
    end = T_RECEIVE + 2 * (RECEIVES + MAX_LAG) + 2
    L.add(
        _key(end, 0, p),
        Op.WRITE,
        p,
        MATH,
        addr=OUT + p * CHUNK_BYTES,
        size=CHUNK_BYTES,
        site=site["store_out"],
    )
    return L.columns()


def generate(target, *, fixed: bool = False, scale: int = 1, seed: int = 0) -> int:
    """Write ``3 * scale`` panels (2,400 events each; 3,000 in the fixed program) to
    ``target``; returns the rows written."""
    with open_writer(target, f"tracerace.scenarios {NAME}") as w:
        site = register_sites(w, SITES)
        declare_buffers(w)
        rng = np.random.default_rng(seed)

        def build(rng):
            return build_panel(site, fixed=fixed, lag=math_lags(rng))

        return write_launches(w, variants(rng, PANELS_PER_SCALE * scale, POOL, build))
