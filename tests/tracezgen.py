"""A writer of Accel-Sim 2.0 ``.tracez`` files and Hopper kernels in them, for tests.

The container follows accel-sim-framework's writer
(``util/tracer_nvbit/tracer_tool/traces-processing/post-traces-processing.cpp``,
``write_tracez``, and ``tracer_tool/tracez_format.h``'s ``write_index``): the
header lines each ended by a newline and then a NUL, ``u32 dict_size``, ``u32
subchunk_insts``, the dictionary, per warp ``u32 inst_count``, ``u32
num_subchunks`` and per sub-chunk ``u32 size`` and one zstd frame of the lines
joined by newlines, the index, and the index's offset as the last ``u64``.

Instruction lines follow the layout the simulator's parser reads
(``gpu-simulator/trace-parser/trace_parser.cc``, ``parse_from_string``) for
tracer version 6: typed registers, TMA fields after the width, an optional
second immediate, ``Val`` and the register values or ``NoVal``.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, field

import zstandard

FULL = 0xFFFFFFFF
LANE0 = 0x1
SHMEM = 0x00007FE000000000
"""The generic shared window's base in these kernels."""
LOCAL = 0x00007FD000000000
WINDOW = 1 << 24
"""The shared window of one block of a cluster: rank r owns [SHMEM + r * WINDOW,
SHMEM + (r + 1) * WINDOW) (tracerace's reading, docs/gpu-traces.md)."""


def slot(rank: int) -> int:
    """The generic address of the shared memory of the block of ``rank``."""
    return SHMEM + rank * WINDOW


@dataclass
class Line:
    pc: int
    opcode: str
    mask: int = FULL
    dst: list[str] = field(default_factory=list)
    src: list[str] = field(default_factory=list)
    addrs: list[int] | None = None  # one per active lane
    width: int = 0
    imm: int = 0
    values: list[int] | None = None  # per register (dst, then src), one value in every lane
    copy: tuple | None = None  # TMA: (mbarrier, bytes, [global addresses])

    def text(self, address_format: int = 2) -> str:
        out = [
            f"{self.pc:04x}",
            f"{self.mask:08x}",
            str(len(self.dst)),
            *self.dst,
            self.opcode,
            str(len(self.src)),
            *self.src,
        ]
        if "GMMA" in self.opcode:
            out.append("0")
        out.append(str(self.width))
        if self.copy is not None:
            mbar, nbytes, rows = self.copy
            out += [
                f"{mbar:x}",
                "0",
                str(nbytes),
                "0",
                "3",
                str(len(rows)),
                *(f"{a:x}" for a in rows),
            ]
        elif self.width:
            out += _addresses(self.addrs, address_format)
        out.append(str(self.imm))
        if self.values is None:
            out.append("NoVal")
        else:
            out.append("Val")
            for v in self.values:
                out += ["1", f"{v:x}"]
        return " ".join(out)


def _addresses(addrs: list[int], fmt: int) -> list[str]:
    if fmt == 0:
        return ["0", *(f"{a:x}" for a in addrs)]
    deltas = [b - a for a, b in itertools.pairwise(addrs)]
    return ["2", f"{addrs[0]:x}", *(str(d) for d in deltas)]


def header(name: str, grid, block, version: int = 6) -> list[str]:
    return [
        f"-kernel name = {name}",
        "-kernel id = 1",
        f"-grid dim = ({grid[0]},{grid[1]},{grid[2]})",
        f"-block dim = ({block[0]},{block[1]},{block[2]})",
        "-shmem = 8192",
        "-nregs = 32",
        "-binary version = 90",
        "-cuda stream id = 0",
        f"-shmem base_addr = 0x{SHMEM:016x}",
        f"-local mem base_addr = 0x{LOCAL:016x}",
        "-nvbit version = 1.7.5",
        f"-accelsim tracer version = {version}",
        "-enable lineinfo = 0",
        "",
        (
            "#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] "
            "mem_width [adrrescompress?] [mem_addresses] immediate [Val reg_vals|NoVal]"
        ),
        "",
    ]


@dataclass
class Block:
    cta: tuple[int, int, int]
    warps: list[list[str]]
    cluster: tuple[int, int, int] | None = None  # default: the block alone
    cluster_cta: tuple[int, int, int] = (0, 0, 0)
    rank: int = 0


def tracez(
    head: list[str], blocks: list[Block], subchunk: int = 2048, dictionary: bytes | None = None
) -> bytes:
    out = bytearray()
    for line in head:
        out += line.encode() + b"\n"
    out += b"\0"
    d = dictionary or b""
    out += struct.pack("<II", len(d), subchunk)
    out += d
    if d:
        cctx = zstandard.ZstdCompressor(
            level=3,
            dict_data=zstandard.ZstdCompressionDict(d, dict_type=zstandard.DICT_TYPE_RAWCONTENT),
        )
    else:
        cctx = zstandard.ZstdCompressor(level=3)
    index = []
    for b in blocks:
        warps = []
        for lines in b.warps:
            ranges = [lines[i : i + subchunk] for i in range(0, len(lines), subchunk or 1)]
            offset = len(out)
            out += struct.pack("<II", len(lines), len(ranges))
            for chunk in ranges:
                comp = cctx.compress("\n".join(chunk).encode())
                out += struct.pack("<I", len(comp)) + comp
            warps.append((len(lines), len(ranges), offset, [len(c) for c in ranges]))
        index.append((b, warps))
    index_offset = len(out)
    out += struct.pack("<I", len(index))
    for b, warps in index:
        cluster = b.cluster if b.cluster is not None else b.cta
        out += struct.pack("<11I", *b.cta, *cluster, *b.cluster_cta, b.rank, len(warps))
        for count, nsub, offset, sizes in warps:
            out += struct.pack("<IIQ", count, nsub, offset)
            out += struct.pack(f"<{nsub}I", *sizes)
    out += struct.pack("<Q", index_offset)
    return bytes(out)


def traceg(head: list[str], blocks: list[Block]) -> str:
    """The text ``.traceg`` of version 6, as ``group_per_block`` writes it without
    ``.tracez``: per block its ids and cluster, per warp its lines."""
    out = [*head]
    for b in blocks:
        cluster = b.cluster if b.cluster is not None else b.cta
        out += [
            "",
            "#BEGIN_TB",
            "",
            "thread block = {},{},{}".format(*b.cta),
            "cluster id = {},{},{}".format(*cluster),
            "cluster cta = {},{},{}".format(*b.cluster_cta),
            f"cluster rank = {b.rank}",
        ]
        for w, lines in enumerate(b.warps):
            out += ["", f"warp = {w}", f"insts = {len(lines)}", *lines]
        out += ["", "#END_TB"]
    return "\n".join(out) + "\n"


def raw_trace(head: list[str], blocks: list[Block]) -> str:
    """The raw ``kernel-N.trace`` of version 6: each line after its CTA, warp and
    cluster fields; warps interleaved one instruction at a time, blocks in turn."""
    out = [*head]
    for b in blocks:
        cluster = b.cluster if b.cluster is not None else b.cta
        prefix = [*b.cta, 0, *cluster, *b.cluster_cta, b.rank]
        for k in range(max(len(lines) for lines in b.warps)):
            for w, lines in enumerate(b.warps):
                if k < len(lines):
                    prefix[3] = w
                    out.append(" ".join(map(str, prefix)) + " " + lines[k])
    return "\n".join(out) + "\n"


# --- SASS lines ---------------------------------------------------------------------------


def lanes(mask: int) -> list[int]:
    return [lane for lane in range(32) if (mask >> lane) & 1]


def sts(pc: int, offset: int, mask: int = FULL, base: int = SHMEM) -> str:
    return Line(
        pc,
        "STS",
        mask,
        src=["R2", "R3"],
        width=4,
        addrs=[base + offset + 4 * lane for lane in lanes(mask)],
        values=[offset, 7],
    ).text()


def lds(pc: int, offset: int, mask: int = FULL, base: int = SHMEM) -> str:
    return Line(
        pc,
        "LDS",
        mask,
        dst=["R4"],
        src=["R2"],
        width=4,
        addrs=[base + offset + 4 * lane for lane in lanes(mask)],
        values=[0, offset],
    ).text()


def bar(pc: int) -> str:
    return Line(pc, "BAR.SYNC.DEFER_BLOCKING", values=[]).text()


def exit_(pc: int) -> str:
    return Line(pc, "EXIT", values=[]).text()


def bra(pc: int) -> str:
    return Line(pc, "BRA", values=[]).text()


def init_word(count: int) -> int:
    """The low word of an mbarrier's initial state as nvcc 13 builds it for sm_90a
    (``UIADD3 UR4, -UR4, 0x100000``; ``USHF.L.U32 UR4, UR4, 0x1``)."""
    return ((0x100000 - count) << 1) & 0xFFFFFFFF


def mbar_init(pc: int, mbar: int, count: int, base: int = SHMEM) -> str:
    return Line(
        pc,
        "SYNCS.EXCH.64",
        LANE0,
        dst=["URZ"],
        src=["UR8", "UR4"],
        width=8,
        addrs=[base + mbar],
        values=[0, mbar, init_word(count)],
    ).text()


def mbar_arrive(
    pc: int, mbar: int, tx: int | None = None, mask: int = LANE0, base: int = SHMEM
) -> str:
    """``mbarrier.arrive`` (``.A1T0 ..., RZ``) or, with ``tx``, ``arrive.expect_tx``
    (no modifier, the bytes in a register), as nvcc 13 writes them for sm_90a."""
    opcode = "SYNCS.ARRIVE.TRANS64.A1T0" if tx is None else "SYNCS.ARRIVE.TRANS64"
    return Line(
        pc,
        opcode,
        mask,
        dst=["RZ"],
        src=["R6", "R3" if tx else "RZ"],
        width=8,
        addrs=[base + mbar] * len(lanes(mask)),
        values=[0, mbar, tx or 0],
    ).text()


def mbar_wait(pc: int, mbar: int, parity: int, mask: int = FULL, base: int = SHMEM) -> str:
    return Line(
        pc,
        "SYNCS.PHASECHK.TRANS64.TRYWAIT",
        mask,
        dst=["P0"],
        src=["R5", "R0"],
        width=8,
        addrs=[base + mbar] * len(lanes(mask)),
        values=[0, mbar, parity],
    ).text()


def tma_load(pc: int, mbar: int, nbytes: int, rows: list[int]) -> str:
    return Line(
        pc,
        "UTMALDG.2D",
        LANE0,
        src=["UR8", "UR4"],
        width=16,
        values=[0, 0],
        copy=(SHMEM + mbar, nbytes, rows),
    ).text()


def cluster_arrive(pc: int, mask: int = FULL, release: bool = True) -> list[str]:
    """``barrier.cluster.arrive`` as nvcc 13 writes it for sm_90a: the release form
    after ``MEMBAR.ALL.GPU; ERRBAR; CGAERRBAR``, ``.relaxed`` bare."""
    fence = [
        Line(pc - 6, "MEMBAR.ALL.GPU", mask, values=[]).text(),
        Line(pc - 4, "ERRBAR", mask, values=[]).text(),
        Line(pc - 2, "CGAERRBAR", mask, values=[]).text(),
    ]
    return [*(fence if release else []), Line(pc, "UCGABAR_ARV", mask, values=[]).text()]


def cluster_wait(pc: int, mask: int = FULL) -> str:
    return Line(pc, "UCGABAR_WAIT", mask, values=[]).text()


def generic_store(pc: int, address: int, mask: int = FULL) -> str:
    return Line(
        pc,
        "ST.E",
        mask,
        src=["R2", "R3"],
        width=4,
        addrs=[address + 4 * lane for lane in lanes(mask)],
        values=[0, 0],
    ).text()


def generic_load(pc: int, address: int, mask: int = FULL) -> str:
    return Line(
        pc,
        "LD.E",
        mask,
        dst=["R4"],
        src=["R2"],
        width=4,
        addrs=[address + 4 * lane for lane in lanes(mask)],
        values=[0, 0],
    ).text()


# --- kernels ------------------------------------------------------------------------------

FULL_BAR, EMPTY_BAR, BUF = 0x1000, 0x1008, 0x0
"""Shared offsets: the "full" and "empty" mbarriers and the staged buffer."""


def producer_consumer(full_wait: bool = True, empty_wait: bool = True, retries: int = 2) -> bytes:
    """:func:`producer_consumer_kernel` as a ``.tracez``."""
    return tracez(*producer_consumer_kernel(full_wait, empty_wait, retries), subchunk=3)


def producer_consumer_kernel(
    full_wait: bool = True, empty_wait: bool = True, retries: int = 2
) -> tuple[list[str], list[Block]]:
    head = header("_Z17producer_consumerPf", (1, 1, 1), (64, 1, 1))
    return head, [Block((0, 0, 0), producer_consumer_warps(full_wait, empty_wait, retries))]


def producer_consumer_warps(
    full_wait: bool = True, empty_wait: bool = True, retries: int = 2, base: int = SHMEM
) -> list[list[str]]:
    """A warp-specialized kernel: warp 0 produces two stages into one shared buffer,
    warp 1 consumes them; "full" hands each stage over, "empty" hands the buffer back.
    ``full_wait=False``: the consumer reads without waiting for the stage;
    ``empty_wait=False``: the producer overwrites the buffer for stage 2 without
    waiting for the consumer to release it."""
    # Every lane of a warp arrives: its own accesses are ordered before its arrival.
    producer = [
        mbar_init(0x10, FULL_BAR, 32, base=base),
        mbar_init(0x20, EMPTY_BAR, 32, base=base),
        bar(0x30),
    ]
    consumer = [bar(0x30)]
    for stage in range(2):
        if empty_wait or stage == 0:
            # Stage 0 waits for parity 1 of a fresh mbarrier: it returns at once.
            producer.append(mbar_wait(0x40, EMPTY_BAR, (stage + 1) % 2, base=base))
        producer += [sts(0x50, BUF, base=base), mbar_arrive(0x60, FULL_BAR, mask=FULL, base=base)]
        if full_wait:
            for _ in range(retries - 1):
                consumer += [mbar_wait(0x100, FULL_BAR, stage % 2, base=base), bra(0x110)]
            consumer.append(mbar_wait(0x100, FULL_BAR, stage % 2, base=base))
        consumer += [
            lds(0x120, BUF, base=base),
            mbar_arrive(0x130, EMPTY_BAR, mask=FULL, base=base),
        ]
    producer.append(exit_(0x70))
    consumer.append(exit_(0x140))
    return [producer, consumer]


def tma_pipeline(consumer_wait: bool = True) -> bytes:
    """Warp 0 loads a 256-byte tile by TMA completing on "full"; warp 1 waits on it
    (or not) and reads the tile."""
    producer = [
        mbar_init(0x10, FULL_BAR, 1),
        bar(0x20),
        mbar_arrive(0x30, FULL_BAR, tx=256),
        tma_load(0x40, FULL_BAR, 256, [0x7F0000000000 + 128 * r for r in range(2)]),
        exit_(0x50),
    ]
    consumer = [bar(0x20)]
    if consumer_wait:
        consumer.append(mbar_wait(0x100, FULL_BAR, 0))
    consumer += [lds(0x110, BUF), exit_(0x120)]
    head = header("_Z12tma_pipelinePK14CUtensorMap_st", (1, 1, 1), (64, 1, 1))
    return tracez(head, [Block((0, 0, 0), [producer, consumer])])


def cluster_exchange(cluster_barrier: bool = True, release: bool = True) -> bytes:
    """:func:`cluster_exchange_kernel` as a ``.tracez``."""
    return tracez(*cluster_exchange_kernel(cluster_barrier, release=release))


def cluster_exchange_kernel(
    cluster_barrier: bool = True,
    closing: tuple[bool, bool] | None = (True, True),
    release: bool = True,
) -> tuple[list[str], list[Block]]:
    """Two blocks of one cluster: each writes its shared buffer through a generic
    address, then (after ``cluster.sync()``, or not) reads its peer's through the
    cluster's window (distributed shared memory); a last ``cluster.sync()`` keeps
    each block's shared memory alive for its peer (block ``r`` arrives at it when
    ``closing[r]``; None: no last sync at all)."""
    blocks = []
    for rank in range(2):
        lines = [generic_store(0x10, slot(rank) + BUF)]
        if cluster_barrier:
            lines += [*cluster_arrive(0x20, release=release), cluster_wait(0x30)]
        lines.append(generic_load(0x40, slot(1 - rank) + BUF))
        if closing is not None:
            if closing[rank]:
                lines += cluster_arrive(0x50)
            lines.append(cluster_wait(0x60))
        lines.append(exit_(0x70))
        blocks.append(
            Block((rank, 0, 0), [lines], cluster=(0, 0, 0), cluster_cta=(rank, 0, 0), rank=rank)
        )
    head = header("_Z16cluster_exchangePf", (2, 1, 1), (32, 1, 1))
    return head, blocks


def cluster_pipeline_kernel(full_wait: bool = True) -> tuple[list[str], list[Block]]:
    """A grid of two clusters of two blocks: every block runs the warp-specialized
    producer / consumer of :func:`producer_consumer_kernel` in its own shared memory
    (its cluster rank's window) and ends with ``cluster.sync()``."""
    blocks = []
    for b in range(4):
        rank = b % 2
        warps = producer_consumer_warps(full_wait, True, 2, base=slot(rank))
        for lines in warps:
            lines[-1:-1] = [*cluster_arrive(0x200), cluster_wait(0x210)]
        blocks.append(
            Block((b, 0, 0), warps, cluster=(b // 2, 0, 0), cluster_cta=(rank, 0, 0), rank=rank)
        )
    return header("_Z16cluster_pipelinePf", (4, 1, 1), (64, 1, 1)), blocks


def write_list(folder, files: dict[str, bytes]) -> str:
    """``kernelslist.g`` naming ``files`` (written beside it) in order."""
    for name, data in files.items():
        (folder / name).write_bytes(data)
    path = folder / "kernelslist.g"
    path.write_text("".join(f"{name}\n" for name in files))
    return str(path)


def ring(
    slots: int, stages: int, retries: list[int], skip_full: set[int], skip_empty: set[int]
) -> tuple[list[str], list[Block]]:
    """A producer warp and a consumer warp passing ``stages`` 128-byte stages
    through a ring of ``slots`` shared buffers, each with a "full" and an "empty"
    mbarrier (32 arrivals each). The consumer's wait for stage k is tried
    ``retries[k]`` times; the waits of the stages in ``skip_full`` (consumer) and
    ``skip_empty`` (producer) are left out."""

    def full(s: int) -> int:
        return 0x1000 + 16 * s

    def empty(s: int) -> int:
        return 0x1008 + 16 * s

    producer = [
        line
        for s in range(slots)
        for line in (mbar_init(0x10, full(s), 32), mbar_init(0x18, empty(s), 32))
    ]
    producer.append(bar(0x30))
    consumer = [bar(0x30)]
    for k in range(stages):
        s, lap = k % slots, k // slots
        if k not in skip_empty:
            producer.append(mbar_wait(0x40, empty(s), (lap + 1) % 2))
        producer += [sts(0x50, 128 * s), mbar_arrive(0x60, full(s), mask=FULL)]
        if k not in skip_full:
            for _ in range(retries[k] - 1):
                consumer += [mbar_wait(0x100, full(s), lap % 2), bra(0x110)]
            consumer.append(mbar_wait(0x100, full(s), lap % 2))
        consumer += [lds(0x120, 128 * s), mbar_arrive(0x130, empty(s), mask=FULL)]
    producer.append(exit_(0x70))
    consumer.append(exit_(0x140))
    return header("_Z4ringPf", (1, 1, 1), (64, 1, 1)), [Block((0, 0, 0), [producer, consumer])]
