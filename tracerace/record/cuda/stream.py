"""The record stream of the CUDA tool library: the file it writes, read and written here.

The tool library (``cuda_tool/``) writes one stream per process that used
CUDA, ``PREFIX.PID.trc``, and :mod:`.convert` turns it into a v1 trace.
The format is small and fixed so that the C++ side stays simple:

- a 16-byte header: the magic ``b"TRCUDA\\0\\0"``, the format version
  (``u16``, :data:`VERSION`; version 1, written before the tool recorded
  clusters, is read too: its launches carry no cluster dimensions and it has
  none of the cluster kinds), the record size (``u16``, 48) and a ``u32``
  of zero;
- then records of 48 bytes, little-endian (:data:`RECORD_DTYPE`)::

      u8 kind, u8 space, u8 flags, u8 aux, u32 size, u32 block, u32 thread,
      u64 addr, u64 addr2, u64 pc, u64 arg

The host side of the tool writes the *host records* (a launch, its end, the
strings, the memory the host defined, the allocations, the modules); the
device patches write the *device records* into a per-launch device buffer,
which the host copies into the stream after the launch completed, between the
launch's ``LAUNCH`` and ``LAUNCH_END``. Device records of one launch are in
the order the GPU threads reserved their slots (an atomic counter), which
keeps each thread's program order and puts every barrier arrival before the
records of the threads the barrier released.

``block`` is the block's linear index in the grid (``x + gx * (y + gy * z)``)
and ``thread`` the thread's linear index in its block; for host records the
two fields carry the values listed with each :class:`Kind`. A reader rejects
a stream of another version or record size, naming both, and a record of a
kind it does not know.

Shared memory named through the cluster (distributed shared memory, the
shared sides of bulk copies and the mbarriers they complete on) is written as
a *cluster address*: the owning block's rank in its cluster in bits 32-39
(:data:`RANK_SHIFT`), the offset in that block's shared window in bits 0-31.

:class:`StreamWriter` writes a stream from Python: the tests build their
(synthetic) fixtures with it, and it documents the format by example.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ...errors import TraceError

MAGIC = b"TRCUDA\0\0"
VERSION = 2
READS = (1, 2)
"""The stream versions this reader converts."""
RANK_SHIFT = 32
"""Where a cluster address keeps the owning block's rank."""
PEER_MBARRIER = 1
"""MBARRIER flags: the action is on another block's mbarrier (its rank in ``space``)."""
HEADER_DTYPE = np.dtype(
    [("magic", "S8"), ("version", "<u2"), ("record_size", "<u2"), ("reserved", "<u4")]
)
RECORD_DTYPE = np.dtype(
    [
        ("kind", "u1"),
        ("space", "u1"),
        ("flags", "u1"),
        ("aux", "u1"),
        ("size", "<u4"),
        ("block", "<u4"),
        ("thread", "<u4"),
        ("addr", "<u8"),
        ("addr2", "<u8"),
        ("pc", "<u8"),
        ("arg", "<u8"),
    ]
)
"""``struct Record`` of ``cuda_tool/tracerace_cuda.h`` (48 bytes)."""
assert RECORD_DTYPE.itemsize == 48 and HEADER_DTYPE.itemsize == 16


class Kind(IntEnum):
    """Record kinds; mirrors ``enum Kind`` in ``cuda_tool/tracerace_cuda.h``."""

    # host records
    LAUNCH = 1  # block: launch id; thread: module id; size: string id of the kernel
    # name; pc: the function's first PC; addr: grid x | y << 32;
    # addr2: grid z | block x << 32; arg: block y | block z << 32;
    # space, flags, aux: cluster x, y, z (0: not reported)
    LAUNCH_END = 2  # block: launch id; arg: device records the launch produced;
    # addr: how many the device buffer holds
    STRING = 3  # block: string id; size: bytes; the text follows in
    # ceil(size / 48) records of raw bytes
    HOST_INIT = 4  # addr, size: bytes the host defined (a copy, a memset, memory the
    # CPU can write: managed or host-mapped allocations)
    ALLOC = 5  # addr, size: a device allocation (global memory the host can only
    # fill through copies and memsets, which HOST_INIT records)
    MODULE = 6  # thread: module id; size: string id of its cubin file (beside the
    # stream; empty when the tool could not write it)
    ERROR = 7  # size: string id of what the tool could not follow or do; the
    # recording is refused with that message
    # device records
    ACCESS = 16  # space (0 global, 1 shared, 2 local); flags: Sanitizer's
    # (1 read, 2 write, both: atomic, 4 system-scope atomic,
    # 8 prefetch); size; addr (shared, local: offset in the window)
    BARRIER = 17  # addr: barrier index; arg: threads expected (0: every thread
    # of the block); flags: Sanitizer's barrier flags
    SYNCWARP = 18  # arg: the mask
    BLOCK_EXIT = 19  # the thread left the kernel
    CP_ASYNC = 20  # addr: shared destination; addr2: global source (0: zero fill);
    # size
    CP_COMMIT = 21  # cp.async.commit_group / pipeline commit
    CP_WAIT = 22  # arg: groups left pending (0: all complete)
    MBARRIER = 23  # aux: Sanitizer_CudaBarrierInstructionKind; addr: the mbarrier
    # (the offset in its block's shared window); arg: the action's data (init:
    # expected arrivals; arrive: count); flags: PEER_MBARRIER when the mbarrier is
    # another block's of the cluster, space then its rank
    UNFOLLOWED = 24  # aux: Sanitizer_InstructionId of an instruction tracerace cannot
    # express (ldmatrix, wgmma, tcgen05.commit, ...); addr, addr2, arg: its
    # first operands
    CLUSTER_ARRIVE = 25  # barrier.cluster.arrive (the API does not tell .relaxed apart)
    CLUSTER_WAIT = 26  # barrier.cluster.wait
    PEER_ACCESS = 27  # a load, store or atomic through a shared::cluster address:
    # flags, size as ACCESS; addr: offset in the owner's shared window; arg: the
    # owner's rank in the cluster; addr2: the address as the API reported it
    BULK = 28  # aux: the Sanitizer_InstructionId (:data:`BULK_NAMES`); addr: the
    # destination (global address or cluster address); addr2: the source
    # (likewise; 0 for st.async/red.async); size: bytes; arg: cluster address
    # of the mbarrier the bytes complete on (instructions that have one);
    # space | flags << 8: the multicast ctaMask (0: no multicast)


class Space(IntEnum):
    """``space`` of an ACCESS: which callback reported it."""

    GLOBAL = 0
    SHARED = 1
    LOCAL = 2


class AccessFlag(IntEnum):
    """``Sanitizer_DeviceMemoryFlags``."""

    READ = 0x1
    WRITE = 0x2
    ATOMSYS = 0x4
    PREFETCH = 0x8


class BarrierAction(IntEnum):
    """``Sanitizer_CudaBarrierInstructionKind`` (the ``aux`` of an MBARRIER)."""

    INVALID = 0
    INIT = 1
    ARRIVE = 2
    ARRIVE_DROP = 3
    ARRIVE_NOCOMPLETE = 4
    ARRIVE_DROP_NOCOMPLETE = 5
    WAIT = 6
    INVALIDATE = 7


class Bulk(IntEnum):
    """The ``Sanitizer_InstructionId`` in a BULK record's ``aux``."""

    ASYNC_STORE = 26
    ASYNC_REDUCTION = 27
    GLOBAL_TO_SHARED = 30
    SHARED_TO_GLOBAL = 35
    SHARED_TO_SHARED = 36
    REDUCE_TO_GLOBAL = 37
    REDUCE_TO_SHARED = 38


BULK_NAMES = {
    Bulk.ASYNC_STORE: "an asynchronous store (st.async)",
    Bulk.ASYNC_REDUCTION: "an asynchronous reduction (red.async)",
    Bulk.GLOBAL_TO_SHARED: "a bulk copy from global to shared memory (cp.async.bulk)",
    Bulk.SHARED_TO_GLOBAL: "a bulk copy from shared to global memory (cp.async.bulk)",
    Bulk.SHARED_TO_SHARED: "a bulk copy between shared memories (cp.async.bulk)",
    Bulk.REDUCE_TO_GLOBAL: "a bulk reduction into global memory (cp.reduce.async.bulk)",
    Bulk.REDUCE_TO_SHARED: "a bulk reduction into shared memory (cp.reduce.async.bulk)",
}
BULK_MBARRIER = frozenset(
    {
        Bulk.ASYNC_STORE,
        Bulk.ASYNC_REDUCTION,
        Bulk.GLOBAL_TO_SHARED,
        Bulk.SHARED_TO_SHARED,
        Bulk.REDUCE_TO_SHARED,
    }
)
"""The BULK instructions whose bytes complete on an mbarrier."""
BULK_WARP_UNIFORM = frozenset(
    {
        Bulk.GLOBAL_TO_SHARED,
        Bulk.SHARED_TO_GLOBAL,
        Bulk.SHARED_TO_SHARED,
        Bulk.REDUCE_TO_GLOBAL,
        Bulk.REDUCE_TO_SHARED,
    }
)
"""The BULK instructions the API reports once per active lane of the issuing
warp, all lanes with the same operands (``sanitizer_patching.h``)."""


def cluster_address(rank: int, offset: int) -> int:
    """A cluster address: block ``rank`` of the cluster, ``offset`` in its window."""
    return rank << RANK_SHIFT | offset


UNFOLLOWED_NAMES = {
    17: "a remote (distributed) shared memory access",
    19: "a matrix shared memory access (ldmatrix/stmatrix)",
    21: "a cluster barrier arrive",
    22: "a cluster barrier wait",
    23: "a warpgroup MMA (wgmma.mma_async)",
    24: "a warpgroup MMA wait (wgmma.wait_group)",
    26: "an asynchronous store (st.async)",
    27: "an asynchronous reduction (red.async)",
    30: "a bulk copy from global to shared memory (cp.async.bulk)",
    31: "a tensor core barrier (tcgen05.commit)",
    32: "a shared memory bulk set (st.bulk)",
    34: "an mbarrier arrival on cp.async completion (cp.async.mbarrier.arrive)",
    35: "a bulk copy from shared to global memory (cp.async.bulk)",
    36: "a bulk copy between shared memories (cp.async.bulk)",
    37: "a bulk reduction into global memory (cp.reduce.async.bulk)",
    38: "a bulk reduction into shared memory (cp.reduce.async.bulk)",
}
"""What an UNFOLLOWED record's ``aux`` (a ``Sanitizer_InstructionId``) names."""


@dataclass(frozen=True)
class Launch:
    """A LAUNCH record, decoded."""

    launch: int
    module: int
    name: str
    pc: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int] = (0, 0, 0)
    """Blocks per cluster in x, y, z; zeros when the stream does not say."""

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


def stream_error(path: str, message: str, row: int | None = None) -> TraceError:
    return TraceError(message, path=path, row=row, rule="cuda-stream")


def _read_header(f, path: str) -> None:
    head = f.read(HEADER_DTYPE.itemsize)
    if len(head) < HEADER_DTYPE.itemsize or head[:8] != MAGIC:
        raise stream_error(path, "not a tracerace CUDA record stream (bad magic)")
    header = np.frombuffer(head, dtype=HEADER_DTYPE)[0]
    if int(header["version"]) not in READS or int(header["record_size"]) != 48:
        raise stream_error(
            path,
            f"record stream version {int(header['version'])} "
            f"(record size {int(header['record_size'])}); this "
            f"tracerace reads versions {READS[0]} to {READS[-1]} (record size 48)",
        )


def _check_body(path: str, body: int) -> None:
    if body % RECORD_DTYPE.itemsize:
        raise stream_error(
            path,
            f"the stream ends inside a record ({body} bytes after "
            "the header are not a whole number of records): the "
            "recorded process stopped while writing it",
        )


def read_stream(path: str) -> np.ndarray:
    """The records of the stream at ``path`` (header checked, strings left in place)."""
    with open(path, "rb") as f:
        _read_header(f, path)
        body = f.read()
    _check_body(path, len(body))
    return np.frombuffer(body, dtype=RECORD_DTYPE)


MAX_STRING_BYTES = 1 << 20
"""The longest string a stream may hold (kernel names, file names, messages)."""


class StreamBatches:
    """The records of the stream at ``path``, ``batch`` at a time, without its
    strings: iterating yields ``(records, positions in the stream)``, and
    :attr:`texts` holds the strings read so far (string id -> text). A batch
    is extended to the end of a string that starts in it, so memory is bounded
    by the batch (and :data:`MAX_STRING_BYTES`) whatever the stream's length."""

    def __init__(self, path: str, batch: int) -> None:
        self.path = path
        self.batch = batch
        self.texts: dict[int, str] = {}

    def __iter__(self):
        path = self.path
        with open(path, "rb") as f:
            _read_header(f, path)
            _check_body(path, os.fstat(f.fileno()).st_size - HEADER_DTYPE.itemsize)
            first = 0
            while True:
                records = np.fromfile(f, dtype=RECORD_DTYPE, count=self.batch)
                if not len(records):
                    return
                records, keep = self._strings(f, records, first)
                index = np.flatnonzero(keep)
                yield records[index], first + index
                first += len(records)

    def _strings(self, f, records: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
        """(the batch, extended to the end of its last string; a mask of the
        records that are not strings or their payload), collecting the texts."""
        keep = np.ones(len(records), dtype=bool)
        for i in np.flatnonzero(records["kind"] == Kind.STRING).tolist():
            if not keep[i]:
                continue  # payload that happens to start with the STRING byte
            size = int(records["size"][i])
            if size > MAX_STRING_BYTES:
                raise stream_error(
                    self.path,
                    f"a string of {size:,} bytes (the tool writes "
                    f"at most {MAX_STRING_BYTES >> 20} MiB)",
                    row=first + i,
                )
            n = -(-size // RECORD_DTYPE.itemsize)
            if i + 1 + n > len(records):
                more = np.fromfile(f, dtype=RECORD_DTYPE, count=i + 1 + n - len(records))
                records = np.concatenate([records, more])
                keep = np.concatenate([keep, np.ones(len(more), dtype=bool)])
                if i + 1 + n > len(records):
                    raise stream_error(
                        self.path,
                        f"a string of {size} bytes runs past the end of the stream",
                        row=first + i,
                    )
            raw = records[i + 1 : i + 1 + n].view(np.uint8).tobytes()
            self.texts[int(records["block"][i])] = raw[:size].decode("utf-8", errors="replace")
            keep[i : i + 1 + n] = False
        return records, keep


def strings(records: np.ndarray, path: str) -> tuple[dict[int, str], np.ndarray]:
    """(string id -> text, a mask of the records that are not strings or their payload)."""
    texts: dict[int, str] = {}
    keep = np.ones(len(records), dtype=bool)
    raw = records.view(np.uint8).reshape(len(records), RECORD_DTYPE.itemsize)
    for i in np.flatnonzero(records["kind"] == Kind.STRING).tolist():
        if not keep[i]:
            continue  # payload that happens to start with the STRING byte
        size = int(records["size"][i])
        n = -(-size // RECORD_DTYPE.itemsize)
        if i + 1 + n > len(records):
            raise stream_error(
                path, f"a string of {size} bytes runs past the end of the stream", row=i
            )
        texts[int(records["block"][i])] = (
            raw[i + 1 : i + 1 + n].tobytes()[:size].decode("utf-8", errors="replace")
        )
        keep[i : i + 1 + n] = False
    return texts, keep


def decode_launch(rec, texts: dict[int, str]) -> Launch:
    """The :class:`Launch` of a LAUNCH record."""
    addr, addr2, arg = int(rec["addr"]), int(rec["addr2"]), int(rec["arg"])
    lo = 0xFFFFFFFF
    return Launch(
        launch=int(rec["block"]),
        module=int(rec["thread"]),
        name=texts.get(int(rec["size"]), "?"),
        pc=int(rec["pc"]),
        grid=(addr & lo, addr >> 32, addr2 & lo),
        block=(addr2 >> 32, arg & lo, arg >> 32),
        cluster=(int(rec["space"]), int(rec["flags"]), int(rec["aux"])),
    )


class StreamWriter:
    """Write a record stream from Python, as the tool library does.

    ``with StreamWriter(path) as w: w.launch(...); w.access(...); w.launch_end()``.
    Device records go to the launch in progress; :meth:`launch_end` writes the
    count the device would report (``produced`` overrides it, to write a
    stream whose device buffer overflowed).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self._f = open(path, "wb")
        header = np.zeros(1, dtype=HEADER_DTYPE)
        header["magic"], header["version"], header["record_size"] = MAGIC, VERSION, 48
        self._f.write(header.tobytes())
        self._strings: dict[str, int] = {}
        self._launch = -1
        self._device = 0

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._f.close()

    def record(self, kind: int, **fields: int) -> None:
        rec = np.zeros(1, dtype=RECORD_DTYPE)
        rec["kind"] = kind
        for name, value in fields.items():
            rec[name] = value
        self._f.write(rec.tobytes())
        if kind >= Kind.ACCESS:
            self._device += 1

    def device_records(self, records: np.ndarray) -> None:
        """Write many device records of the launch in progress at once."""
        self._f.write(np.ascontiguousarray(records, dtype=RECORD_DTYPE).tobytes())
        self._device += len(records)

    def string(self, text: str) -> int:
        """The id of ``text``, writing it the first time."""
        if text not in self._strings:
            sid = self._strings[text] = len(self._strings)
            data = text.encode()
            self.record(Kind.STRING, block=sid, size=len(data))
            pad = -len(data) % RECORD_DTYPE.itemsize
            self._f.write(data + b"\0" * pad)
        return self._strings[text]

    def module(self, module: int, cubin: str = "") -> None:
        self.record(Kind.MODULE, thread=module, size=self.string(cubin))

    def launch(
        self,
        name: str,
        grid=(1, 1, 1),
        block=(32, 1, 1),
        *,
        module: int = 0,
        pc: int = 0,
        cluster=(0, 0, 0),
    ) -> int:
        gx, gy, gz = grid
        bx, by, bz = block
        self._launch += 1
        self._device = 0
        self.record(
            Kind.LAUNCH,
            space=cluster[0],
            flags=cluster[1],
            aux=cluster[2],
            block=self._launch,
            thread=module,
            size=self.string(name),
            pc=pc,
            addr=gx | gy << 32,
            addr2=gz | bx << 32,
            arg=by | bz << 32,
        )
        return self._launch

    def launch_end(self, *, produced: int | None = None, capacity: int = 1 << 24) -> None:
        self.record(
            Kind.LAUNCH_END,
            block=self._launch,
            arg=self._device if produced is None else produced,
            addr=capacity,
        )

    def host_init(self, addr: int, size: int) -> None:
        self.record(Kind.HOST_INIT, addr=addr, size=size)

    def alloc(self, addr: int, size: int) -> None:
        self.record(Kind.ALLOC, addr=addr, size=size)

    # device records
    def access(
        self, block: int, thread: int, space: int, addr: int, size: int, flags: int, pc: int = 0
    ) -> None:
        self.record(
            Kind.ACCESS,
            block=block,
            thread=thread,
            space=space,
            addr=addr,
            size=size,
            flags=flags,
            pc=pc,
        )

    def read(self, block, thread, addr, size=4, space=Space.GLOBAL, pc=0) -> None:
        self.access(block, thread, space, addr, size, AccessFlag.READ, pc)

    def write(self, block, thread, addr, size=4, space=Space.GLOBAL, pc=0) -> None:
        self.access(block, thread, space, addr, size, AccessFlag.WRITE, pc)

    def atomic(self, block, thread, addr, size=4, space=Space.GLOBAL, pc=0, system=False) -> None:
        flags = AccessFlag.READ | AccessFlag.WRITE | (AccessFlag.ATOMSYS if system else 0)
        self.access(block, thread, space, addr, size, flags, pc)

    def barrier(self, block, thread, index=0, count=0, pc=0) -> None:
        self.record(Kind.BARRIER, block=block, thread=thread, addr=index, arg=count, pc=pc)

    def syncwarp(self, block, thread, mask=0xFFFFFFFF, pc=0) -> None:
        self.record(Kind.SYNCWARP, block=block, thread=thread, arg=mask, pc=pc)

    def exit(self, block, thread, pc=0) -> None:
        self.record(Kind.BLOCK_EXIT, block=block, thread=thread, pc=pc)

    def cp_async(self, block, thread, dst, src, size=16, pc=0) -> None:
        self.record(
            Kind.CP_ASYNC, block=block, thread=thread, addr=dst, addr2=src, size=size, pc=pc
        )

    def cp_commit(self, block, thread, pc=0) -> None:
        self.record(Kind.CP_COMMIT, block=block, thread=thread, pc=pc)

    def cp_wait(self, block, thread, groups=0, pc=0) -> None:
        self.record(Kind.CP_WAIT, block=block, thread=thread, arg=groups, pc=pc)

    def mbarrier(
        self, block, thread, action: int, addr: int, data: int = 0, pc=0, peer: int | None = None
    ) -> None:
        """An mbarrier action; ``peer``: the rank of the block whose mbarrier it is,
        when not the issuer's."""
        self.record(
            Kind.MBARRIER,
            block=block,
            thread=thread,
            aux=action,
            addr=addr,
            arg=data,
            pc=pc,
            flags=0 if peer is None else PEER_MBARRIER,
            space=0 if peer is None else peer,
        )

    def cluster_arrive(self, block, thread, pc=0) -> None:
        self.record(Kind.CLUSTER_ARRIVE, block=block, thread=thread, pc=pc)

    def cluster_wait(self, block, thread, pc=0) -> None:
        self.record(Kind.CLUSTER_WAIT, block=block, thread=thread, pc=pc)

    def peer_access(
        self, block, thread, rank: int, offset: int, size=4, flags=AccessFlag.READ, pc=0
    ) -> None:
        """An access to block ``rank`` of the cluster's shared memory at ``offset``."""
        self.record(
            Kind.PEER_ACCESS,
            block=block,
            thread=thread,
            flags=flags,
            size=size,
            addr=offset,
            arg=rank,
            addr2=cluster_address(rank, offset),
            pc=pc,
        )

    def bulk(
        self,
        block,
        thread,
        instruction: int,
        dst: int,
        src: int,
        size: int,
        mbarrier: int = 0,
        mask: int = 0,
        pc=0,
    ) -> None:
        """A BULK record (shared sides and ``mbarrier`` as :func:`cluster_address`)."""
        self.record(
            Kind.BULK,
            block=block,
            thread=thread,
            aux=instruction,
            addr=dst,
            addr2=src,
            size=size,
            arg=mbarrier,
            space=mask & 0xFF,
            flags=mask >> 8,
            pc=pc,
        )

    def unfollowed(self, block, thread, instruction: int, pc=0) -> None:
        self.record(Kind.UNFOLLOWED, block=block, thread=thread, aux=instruction, pc=pc)
