"""Accel-Sim 2.0 compressed traces (``.tracez``).

Accel-Sim's post-processing (``traces-processing/post-traces-processing.cpp``
of accel-sim-framework, container layout in ``tracer_tool/tracez_format.h``)
groups a kernel's raw trace by block and warp, as ``.traceg`` does, into one
binary file, all integers little-endian::

    kernel header text (the "-key = value" and "#..." lines), then a NUL byte
    u32 dict_size, u32 subchunk_insts
    dict_size bytes: a zstd dictionary (0 when training it failed)
    per warp: u32 inst_count, u32 num_subchunks,
              per sub-chunk: u32 comp_size, comp_size bytes of one zstd frame
              (with the dictionary when there is one) holding that many
              instruction lines joined by "\\n"
    index: u32 num_tbs, per block: u32 x 3 (block), u32 x 3 (cluster id),
           u32 x 3 (CTA id in the cluster), u32 cluster rank, u32 warp_count,
           per warp: u32 inst_count, u32 num_subchunks, u64 file_offset (of
           its u32 inst_count), u32 x num_subchunks (lines per sub-chunk)
    u64 index_offset (the last 8 bytes)

``kernelslist.g`` names the ``kernel-N.tracez`` files in launch order.

Instruction lines are those of ``.traceg`` (no CTA and warp fields), read as
the simulator's trace parser reads them. Tracer version 6 writes registers
with their kind (``R12``, ``UR4``, ``P0``), a GMMA commit flag after the
source registers of a ``*GMMA`` instruction, a second optional immediate, and
``Val`` followed by the registers' values (per destination then source
register: ``1 v`` for one value in every lane or ``32 v...``) or ``NoVal``::

    [LINE] PC MASK NDST [Rd] OPCODE NSRC [Rs...] [GMMA] WIDTH [MEM] IMM [IMM2] Val|NoVal ...

``MEM`` is as in ``.traceg`` (``0`` list, ``1`` base+stride, ``2``
base+deltas); for TMA and bulk-copy opcodes (``UTMALDG``, ``UTMASTG``,
``UTMAPF``, ``UTMAREDG``, ``UBLKCP``, ``UBLKPF``, ``UBLKRED``) it is the
copy: ``MBAR MULTICAST [CTA_MASK] BYTES OOB_BYTES MODE``, then ``3 N a...``
(a list) or ``4 BASE N d...`` (base and deltas) of its global addresses.

What is imported, and what is not:

* the order: each warp's lines in order, warps of a block interleaved by
  :class:`~tracerace.convert.gpu.phases.PhaseReplay` (barriers and mbarrier phases);
* ``SYNCS`` (mbarriers) from the register values: the mbarrier is the line's
  address; a wait's parity, an expect-tx's bytes, an arrival count and an
  init's count come from the last source register (``RZ``/``URZ`` read 0).
  A try-wait that fails is retried, so a run of waits by one warp on one
  mbarrier and parity is one wait, which returned at the last of them;
* TMA and bulk copies fail the import (rule ``tma-shared-unseen``), naming the
  copy: the line gives the mbarrier, the bytes and the global addresses, not
  the shared-memory side, and tracerace gives no verdict about bytes nobody
  saw;
* a launch in clusters of more than one block: each block's cluster id and
  rank come from the index (which must agree with itself, every cluster
  listing every rank once, rule ``gpu-cluster``) and become the rows'
  ``cluster``; the replay runs a cluster's blocks together
  (:class:`~tracerace.convert.gpu.phases.PhaseReplay`); ``UCGABAR_ARV`` is a
  ``cluster_arrive`` (release) after a ``MEMBAR``, else a
  ``cluster_arrive_relaxed``, ``UCGABAR_WAIT`` a ``cluster_wait``; a generic
  ``LD``/``ST``/``ATOM`` in block rank ``r``'s window (:class:`.emit.Clusters`:
  ``r`` windows past the shared base) is a shared access with ``peer`` that
  block; an mbarrier operation on another block's mbarrier fails;
* as in ``.traceg``, ``LDGSTS`` keeps only its global line and cannot be
  imported.

Every size field is bounded by the file itself; a bad or cut-short file fails
with the file, the warp record (block, warp, instruction) and the rule.
"""

from __future__ import annotations

import bisect
import os
import struct

import numpy as np

from ...errors import TraceError
from ...trace.columns import ADDRESS_END
from ..interface import Imported, Importer
from .accel_v6 import TryWaits, V6LineParser, short
from .accelsim import GROUPED_LDGSTS, _Header, _windows, is_kernel_list
from .emit import Clusters, Emitter
from .kernel import KernelInfo, Launch, Notes
from .phases import PhaseReplay
from .source import MAX_LINE_BYTES, error

RULE = "tracez-format"
SUFFIX = ".tracez"
MAX_HEADER_BYTES = 1 << 20
"""The kernel header text ends with a NUL within this many bytes."""
MAX_DICT_BYTES = 1 << 20
"""A zstd dictionary (the writer trains one of at most 64 KiB)."""
MAX_SUBCHUNK_BYTES = 1 << 30
"""The decompressed text of one sub-chunk."""
TB_RECORD = struct.Struct("<11I")
WARP_RECORD = struct.Struct("<IIQ")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
MIN_VERSION, MAX_VERSION = 3, 6


def claims(path: str) -> bool:
    """A ``.tracez`` file, or a kernel list whose first kernel is one."""
    if path.endswith(SUFFIX):
        return True
    if not is_kernel_list(path) or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16).decode("utf-8", "replace")
    except OSError:
        return False
    entries = [e.strip() for e in head.splitlines() if e.strip().startswith("kernel")]
    return bool(entries) and entries[0].endswith(SUFFIX)


def kernel_files(path: str) -> list[str]:
    if path.endswith(SUFFIX):
        return [path]
    folder = os.path.dirname(path)
    files = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, text in enumerate(f, 1):
            entry = text.strip()
            if not entry or entry.startswith("Memcpy"):
                continue
            if not (entry.startswith("kernel") and entry.endswith(SUFFIX)):
                raise error(
                    path,
                    lineno,
                    RULE,
                    f"{short(entry)!r}: expected a kernel-N.tracez file name or a Memcpy line",
                )
            files.append(os.path.join(folder, entry))
    if not files:
        raise error(path, None, RULE, "names no kernel trace file")
    return files


# --- the container ----------------------------------------------------------------------


class _Block:
    __slots__ = ("cluster", "cluster_cta", "cta", "rank", "warps")

    def __init__(self, fields: tuple) -> None:
        self.cta = fields[0:3]
        self.cluster = fields[3:6]
        self.cluster_cta = fields[6:9]
        self.rank = fields[9]
        self.warps: list[tuple[int, int, int, list[int]]] = []  # (count, subchunks, offset, sizes)


class Container:
    """A ``.tracez`` file's header text, dictionary and index, each size checked
    against the file before it is used."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.f = open(path, "rb")  # noqa: SIM115 - closed by close(), after the import
        except FileNotFoundError:
            raise error(path, None, "no-such-file", "no such file") from None
        except IsADirectoryError:
            raise error(path, None, "usage", "is a directory; name a trace file") from None
        except OSError as exc:
            raise error(path, None, "unreadable", f"cannot read: {exc.strerror}") from None
        self.size = os.fstat(self.f.fileno()).st_size

    def close(self) -> None:
        self.f.close()

    def fail(self, rule: str, message: str):
        raise error(self.path, None, rule, message)

    def read_at(self, offset: int, n: int, what: str) -> bytes:
        if offset < 0 or offset + n > self.size:
            self.fail(
                "truncated",
                f"{what}: {n} bytes at offset {offset} pass the end of the {self.size}-byte file",
            )
        self.f.seek(offset)
        return self.f.read(n)

    def header(self) -> tuple[str, int]:
        """The header text and the offset just past its NUL."""
        head = self.read_at(0, min(self.size, MAX_HEADER_BYTES), "kernel header")
        end = head.find(b"\0")
        if end < 0:
            if self.size < MAX_HEADER_BYTES:
                self.fail(
                    "truncated",
                    "the kernel header has no terminating NUL byte: not a "
                    ".tracez file, or cut short",
                )
            self.fail(
                RULE, f"the kernel header has no NUL byte in its first {MAX_HEADER_BYTES} bytes"
            )
        return head[:end].decode("utf-8", "replace"), end + 1

    def dictionary(self, at: int) -> tuple[bytes, int]:
        dict_size, _ = struct.unpack("<II", self.read_at(at, 8, "compression header"))
        if dict_size > MAX_DICT_BYTES:
            self.fail(RULE, f"dictionary size {dict_size} is more than {MAX_DICT_BYTES} bytes")
        return self.read_at(at + 8, dict_size, "zstd dictionary"), at + 8 + dict_size

    def index(self, data_start: int, info: KernelInfo) -> tuple[list[_Block], int]:
        if self.size < data_start + 8 + U32.size:
            self.fail("truncated", "the file ends before its index")
        (offset,) = U64.unpack(self.read_at(self.size - 8, 8, "index offset"))
        end = self.size - 8
        if not data_start <= offset <= end - U32.size:
            self.fail(
                RULE,
                f"index offset {offset} is outside the data ({data_start} to "
                f"{end - U32.size}): a damaged or cut-short file",
            )
        raw = self.read_at(offset, end - offset, "index")
        (num_tbs,) = U32.unpack_from(raw, 0)
        if num_tbs > info.blocks:
            self.fail(
                RULE, f"the index lists {num_tbs} blocks; the grid {info.grid} has {info.blocks}"
            )
        pos, blocks = U32.size, []
        for t in range(num_tbs):
            if pos + TB_RECORD.size > len(raw):
                self.fail("truncated", f"the index ends inside block record {t}")
            b = _Block(TB_RECORD.unpack_from(raw, pos))
            pos += TB_RECORD.size
            warp_count = TB_RECORD.unpack_from(raw, pos - TB_RECORD.size)[10]
            if warp_count > info.warps:
                self.fail(
                    RULE, f"block {b.cta}: {warp_count} warps in a {info.threads}-thread block"
                )
            for w in range(warp_count):
                if pos + WARP_RECORD.size > len(raw):
                    self.fail("truncated", f"the index ends inside block {b.cta} warp {w}")
                count, nsub, foff = WARP_RECORD.unpack_from(raw, pos)
                pos += WARP_RECORD.size
                if pos + 4 * nsub > len(raw):
                    self.fail(
                        "truncated",
                        f"the index ends inside block {b.cta} warp {w}'s {nsub} sub-chunk counts",
                    )
                sizes = list(struct.unpack_from(f"<{nsub}I", raw, pos))
                pos += 4 * nsub
                if sum(sizes) != count or 0 in sizes:
                    self.fail(
                        RULE,
                        f"block {b.cta} warp {w}: sub-chunks of {sizes} lines "
                        f"do not add up to its {count} instructions",
                    )
                if count and not data_start <= foff < offset:
                    self.fail(
                        RULE,
                        f"block {b.cta} warp {w}: data offset {foff} is outside "
                        f"the data ({data_start} to {offset})",
                    )
                b.warps.append((count, nsub, foff, sizes))
            blocks.append(b)
        if pos != len(raw):
            self.fail(RULE, f"{len(raw) - pos} bytes between the index and its offset")
        return blocks, offset

    def warp_chunks(self, block: _Block, warp: int, limit: int):
        """The compressed sub-chunks of one warp, checked against the index."""
        count, nsub, foff, sizes = block.warps[warp]
        if count == 0:
            return
        where = f"block {block.cta} warp {warp}"
        got = struct.unpack("<II", self.read_at(foff, 8, where))
        if got != (count, nsub):
            self.fail(
                RULE,
                f"{where}: its data says {got[0]} instructions in {got[1]} "
                f"sub-chunks, the index {count} in {nsub}",
            )
        pos = foff + 8
        for k, lines in enumerate(sizes):
            (comp,) = U32.unpack(self.read_at(pos, 4, f"{where} sub-chunk {k}"))
            if pos + 4 + comp > limit:
                self.fail(
                    "truncated",
                    f"{where} sub-chunk {k}: {comp} compressed bytes pass the start of the index",
                )
            yield k, lines, self.read_at(pos + 4, comp, f"{where} sub-chunk {k}")
            pos += 4 + comp


def _decompressor(path: str, dictionary: bytes):
    try:
        import zstandard
    except ImportError:  # pragma: no cover - zstandard is a dependency
        raise error(path, None, "usage", "reading .tracez needs the zstandard package") from None
    if dictionary:
        try:
            d = zstandard.ZstdCompressionDict(dictionary)
            return zstandard.ZstdDecompressor(dict_data=d), zstandard
        except zstandard.ZstdError as exc:
            raise error(path, None, RULE, f"the zstd dictionary is damaged: {exc}") from None
    return zstandard.ZstdDecompressor(), zstandard


# --- one kernel -------------------------------------------------------------------------


class _Where:
    """Record numbers of a kernel file -> (block, warp, instruction) for messages."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.names: list[tuple] = []

    def add(self, first: int, cta: tuple, warp: int) -> None:
        self.starts.append(first)
        self.names.append((cta, warp))

    def name(self, record: int) -> str:
        k = bisect.bisect_right(self.starts, record) - 1
        cta, warp = self.names[k]
        return (
            f"block ({cta[0]},{cta[1]},{cta[2]}) warp {warp} instruction {record - self.starts[k]}"
        )


def import_kernel(
    path: str, launch_id: int, emitter: Emitter, src: int, writer, options, notes: Notes
) -> tuple[KernelInfo, int]:
    box = Container(path)
    where = _Where()
    try:
        return _import(box, where, launch_id, emitter, src, writer, options, notes)
    except TraceError as err:
        raise _located(err, path, where) from None
    finally:
        box.close()


def _located(err: TraceError, path: str, where: _Where) -> TraceError:
    """``err`` with ``path:N`` (a record number) shown as the warp record it names."""
    prefix = f"{path}:"
    if err.path and err.path.startswith(prefix) and err.path[len(prefix) :].isdigit():
        record = int(err.path[len(prefix) :])
        if where.starts:
            return TraceError(
                err.message, path=f"{path}: {where.name(record)}", row=err.row, rule=err.rule
            )
    return err


def _import(
    box: Container,
    where: _Where,
    launch_id: int,
    emitter: Emitter,
    src: int,
    writer,
    options,
    notes: Notes,
) -> tuple[KernelInfo, int]:
    path = box.path
    text, at = box.header()
    header = _Header(path)
    for k, line in enumerate(text.split("\n")):
        if line.startswith("-"):
            header.add(None, line)
        elif line.strip() and not line.startswith("#"):
            raise error(
                path,
                None,
                RULE,
                f"header line {k + 1} {short(line)!r}: expected '-key = value' or a '#' comment",
            )
    version = header.number("accelsim tracer version")
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise error(
            path,
            None,
            RULE,
            f"tracer version {version}: tracerace reads .tracez "
            f"of versions {MIN_VERSION} to {MAX_VERSION}",
        )
    name = header.text("kernel name")
    shared = header.number("shmem base_addr", default=0, base=16)
    local = header.number("local mem base_addr", default=0, base=16)
    for key, base in (("shmem base_addr", shared), ("local mem base_addr", local)):
        if base > ADDRESS_END:
            raise error(
                path, None, "address-overflow", f"-{key} = {base:#x} is not a 64-bit address"
            )
    sw, lw = _windows(shared, local, options)
    extra: dict[str, object] = {"tool": f"accel-sim tracer {version} (.tracez)"}
    if header.get("kernel id", required=False) is not None:
        extra["kernel_id"] = header.number("kernel id")
    info = KernelInfo(name, header.dims("grid dim"), header.dims("block dim"), path, sw, lw, extra)
    problem = info.dims_problem()
    if problem is not None:
        raise error(path, None, RULE, problem)
    lineinfo = header.number("enable lineinfo", default=0) != 0
    dictionary, data_start = box.dictionary(at)
    blocks, index_at = box.index(data_start, info)
    units, clusters = _clusters(path, blocks, info)
    decompressor, zstandard = _decompressor(path, dictionary)
    parser = V6LineParser(path, info, version, lineinfo, writer, RULE)
    launch = Launch(
        launch_id,
        info,
        emitter,
        src,
        explicit_barriers=False,
        notes=notes,
        single_ldgsts=GROUPED_LDGSTS,
        mbarriers=True,
    )
    if clusters is not None:
        emitter.windows[launch_id].clusters = clusters
    replay = PhaseReplay(launch, clusters=clusters is not None)
    if clusters is not None:
        replay.cluster_threads = clusters.threads
    record = 1
    try:
        for unit in units:
            replay.begin_block(unit[0][0], record)
            for block, b in unit:
                for warp in range(len(b.warps)):
                    where.add(record, b.cta, warp)
                    replay.begin_warp(warp, block)
                    waits = TryWaits(replay)
                    for k, lines, comp in box.warp_chunks(b, warp, index_at):
                        for text in _lines(path, decompressor, zstandard, comp, lines, b, warp, k):
                            rec = parser.parse(record, text, block, warp)
                            if rec is not None:
                                waits.record(rec)
                            record += 1
                    waits.flush()
            replay.end_block()
        replay.finish()
    finally:
        replay.close()
    emitter.finish()
    return info, record - 1


def _clusters(
    path: str, blocks: list[_Block], info: KernelInfo
) -> tuple[list[list[tuple[int, _Block]]], Clusters | None]:
    """The replay units (a block alone, or the blocks of one cluster by rank) and the
    launch's :class:`Clusters` (None when every block is alone in its cluster).

    The index gives each block's cluster id, its CTA id in the cluster and its
    rank. The clusters' shape is the largest CTA id plus one on each axis; each
    block's fields must agree with it (its rank ``x + dx * (y + dy * z)`` of its
    CTA id, its block id ``cluster id * shape + CTA id``), and every cluster must
    list every rank once: the blocks of a cluster are replayed together, and an
    address in the shared window names a block by its rank."""
    seen: set[int] = set()
    located = []
    for b in blocks:
        block = info.block_index(b.cta)
        if block is None:
            raise error(path, None, RULE, f"index: block {b.cta} is outside the grid {info.grid}")
        if block in seen:
            raise error(path, None, RULE, f"index: block {b.cta} appears twice")
        seen.add(block)
        located.append((block, b))
    shape = tuple(max((b.cluster_cta[i] for b in blocks), default=0) + 1 for i in range(3))
    size = shape[0] * shape[1] * shape[2]
    if size == 1:
        return [[x] for x in located], None
    units: dict[tuple, list[tuple[int, _Block]]] = {}
    for block, b in located:
        cx, cy, cz = b.cluster_cta
        rank = cx + shape[0] * (cy + shape[1] * cz)
        cta = tuple(b.cluster[i] * shape[i] + b.cluster_cta[i] for i in range(3))
        if b.rank != rank or cta != b.cta:
            raise error(
                path,
                None,
                "gpu-cluster",
                f"index: block {b.cta} says cluster {b.cluster}, CTA {b.cluster_cta} in "
                f"it, rank {b.rank}; in clusters of {shape} that is block {cta}, rank {rank}",
            )
        units.setdefault(b.cluster, []).append((block, b))
    members = np.full((len(units), size), -1, dtype=np.int64)
    cluster = np.zeros(info.blocks, dtype=np.int64)
    for c, (cid, unit) in enumerate(units.items()):
        for block, b in unit:
            if members[c, b.rank] >= 0:
                raise error(
                    path, None, "gpu-cluster", f"index: cluster {cid} lists rank {b.rank} twice"
                )
            members[c, b.rank] = block
            cluster[block] = c
        missing = np.flatnonzero(members[c] < 0)
        if len(missing):
            raise error(
                path,
                None,
                "gpu-cluster",
                f"index: cluster {cid} of {size} blocks {shape} lists no block of rank "
                f"{int(missing[0])}: a cluster's blocks are replayed together",
            )
        unit.sort(key=lambda x: x[1].rank)
    return list(units.values()), Clusters(cluster, members, size * info.threads)


def _lines(
    path: str, decompressor, zstandard, comp: bytes, count: int, b: _Block, warp: int, k: int
) -> list[str]:
    where = f"block {b.cta} warp {warp} sub-chunk {k}"
    limit = min(MAX_SUBCHUNK_BYTES, count * MAX_LINE_BYTES)
    try:
        params = zstandard.get_frame_parameters(comp)
    except zstandard.ZstdError as exc:
        raise error(
            path, None, "truncated" if len(comp) < 6 else RULE, f"{where}: not a zstd frame ({exc})"
        ) from None
    if params.content_size in (0, zstandard.CONTENTSIZE_UNKNOWN) and count:
        raise error(path, None, RULE, f"{where}: the zstd frame does not give its size")
    if params.content_size > limit:
        raise error(
            path,
            None,
            RULE,
            f"{where}: {params.content_size} bytes of text for {count} lines (at most {limit})",
        )
    try:
        text = decompressor.decompress(comp, max_output_size=limit)
    except zstandard.ZstdError as exc:
        raise error(path, None, "truncated", f"{where}: damaged zstd data ({exc})") from None
    out = text.decode("utf-8", "replace").split("\n")
    if len(out) != count:
        raise error(path, None, RULE, f"{where}: {len(out)} lines where the index says {count}")
    return out


def read(path: str, writer, emitter: Emitter, options, notes: Notes):
    """Import ``path`` (a ``.tracez`` or a ``kernelslist.g`` naming them)."""
    kernels, records = [], 0
    for launch_id, file in enumerate(kernel_files(path)):
        emitter.sources.append(file)
        info, count = import_kernel(
            file, launch_id, emitter, len(emitter.sources) - 1, writer, options, notes
        )
        kernels.append(info)
        records += count
    return kernels, records, "reconstructed"


class TracezImporter(Importer):
    """Accel-Sim 2.0's ``.tracez`` files, or a kernel list whose first kernel is one."""

    name = "tracez"

    def claims(self, path: str) -> bool:
        return claims(path)

    def read(self, path: str, writer, emitter: Emitter, options, notes: Notes) -> Imported:
        return Imported(*read(path, writer, emitter, options, notes))


IMPORTER = TracezImporter()
