"""The cuda backend's Hopper records without a GPU: cluster barriers, distributed
shared memory, bulk copies and reductions, async stores, and what the converter
refuses because the Compute Sanitizer API does not report it.

Every stream here is SYNTHETIC: written by :class:`StreamWriter` as the tool
library (``tracerace_cuda_patches.cu``) would write the records of the kernel
each test describes, not recorded on a GPU (``docs/cuda.md`` lists what a GPU
session must still confirm).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow.ipc as ipc
import pytest

import tracerace
from tracerace.errors import TraceError
from tracerace.record.cuda.convert import (
    BULK_GROUP_WARNING,
    CLUSTER_ARRIVE_WARNING,
    TENSOR_WARNING,
    convert,
)
from tracerace.record.cuda.stream import (
    RECORD_DTYPE,
    AccessFlag,
    BarrierAction,
    Bulk,
    Space,
    StreamWriter,
    cluster_address,
)
from tracerace.trace.ops import Op, Scope

A = 0x7F00_0000_0000  # a device allocation of the synthetic kernels
N = 8  # threads per block
CLUSTER = (2, 1, 1)


def stream(tmp_path: Path) -> tuple[StreamWriter, str]:
    prefix = str(tmp_path / "run")
    return StreamWriter(f"{prefix}.4242.trc"), prefix


def table(path: str) -> dict[str, list[int]]:
    return ipc.open_file(path).read_all().to_pydict()


def converted(tmp_path: Path, write) -> tuple[str, tuple[str, ...]]:
    w, prefix = stream(tmp_path)
    with w:
        write(w)
    out = str(tmp_path / "out.arrow")
    _, _, warnings = convert(prefix, out)
    return out, warnings


def errors(trace: str) -> set[str]:
    kinds = [
        {g.kind for g in tracerace.check(trace, engine=e).groups if g.severity == "error"}
        for e in ("numba", "reference")
    ]
    assert kinds[0] == kinds[1]
    return kinds[0]


def refused(tmp_path: Path, write, pattern: str, rule: str = "record") -> TraceError:
    w, prefix = stream(tmp_path)
    with w:
        write(w)
    with pytest.raises(TraceError) as err:
        convert(prefix, str(tmp_path / "out.arrow"))
    assert re.search(pattern, str(err.value)), str(err.value)
    assert err.value.rule == rule and err.value.path.endswith(".trc")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out.arrow").exists()
    return err.value


def exchange(w: StreamWriter, *, barrier: bool, cluster=CLUSTER) -> None:
    """A two-block cluster: each thread writes its word of its block's shared
    memory, then reads the same word of the other block's through the cluster
    (mapa), with ``cluster.sync()`` between (arrive, then wait) or without."""
    w.launch("exchange", grid=(2, 1, 1), block=(N, 1, 1), pc=0x100, cluster=cluster)
    for b in range(2):
        for t in range(N):
            w.write(b, t, 4 * t, space=Space.SHARED, pc=0x110)
    if barrier:
        for b in range(2):
            for t in range(N):
                w.cluster_arrive(b, t, pc=0x120)
        for b in range(2):
            for t in range(N):
                w.cluster_wait(b, t, pc=0x128)
    for b in range(2):
        for t in range(N):
            w.peer_access(b, t, rank=1 - b, offset=4 * t, pc=0x130)
    # the closing cluster.sync keeps each block's shared memory alive for its peer
    for b in range(2):
        for t in range(N):
            w.cluster_arrive(b, t, pc=0x140)
    for b in range(2):
        for t in range(N):
            w.cluster_wait(b, t, pc=0x148)
            w.exit(b, t, pc=0x150)
    w.launch_end()


@pytest.mark.parametrize("barrier, expected", [(True, set()), (False, {"raw"})])
def test_a_cluster_exchange_needs_its_cluster_barrier(tmp_path, barrier, expected):
    out, warnings = converted(tmp_path, lambda w: exchange(w, barrier=barrier))
    assert errors(out) == expected
    t = table(out)
    reads = [
        (b, peer, addr)
        for op, b, peer, addr, space in zip(t["op"], t["block"], t["peer"], t["addr"], t["space"])
        if op == Op.READ and space == Space.SHARED
    ]
    assert sorted(reads) == sorted((b, 1 - b, 4 * th) for b in range(2) for th in range(N))
    assert set(t["cluster"]) == {0}
    arrivals = [arg for op, arg in zip(t["op"], t["arg"]) if op == Op.CLUSTER_ARRIVE]
    assert arrivals and set(arrivals) == {2 * N}
    assert t["op"].count(Op.CLUSTER_WAIT) == len(arrivals)
    assert CLUSTER_ARRIVE_WARNING.format(launch=0, kernel="exchange") in warnings
    assert TENSOR_WARNING in warnings


def test_blocks_of_a_grid_of_clusters_get_their_cluster_and_peers(tmp_path):
    """A 4 x 2 grid in clusters of 2 x 2: block 5 is (1, 1), in cluster (0, 0) (id 0);
    its rank 2 is block (0, 1) = 4. Block 6 (2, 1) is in cluster (1, 0) (id 1), whose
    rank 1 is block (3, 0) = 3."""

    def write(w):
        w.launch("grid", grid=(4, 2, 1), block=(1, 1, 1), cluster=(2, 2, 1))
        w.peer_access(5, 0, rank=2, offset=0x40, flags=AccessFlag.READ | AccessFlag.WRITE)
        w.peer_access(6, 0, rank=1, offset=0x80, flags=AccessFlag.WRITE)
        for b in range(8):
            w.exit(b, 0)
        w.launch_end()

    out, _ = converted(tmp_path, write)
    t = table(out)
    rows = {
        b: (op, peer, cluster, scope)
        for op, b, peer, cluster, scope in zip(
            t["op"], t["block"], t["peer"], t["cluster"], t["scope"]
        )
        if op in (Op.ATOMIC, Op.WRITE)
    }
    assert rows == {5: (Op.ATOMIC, 4, 0, Scope.CLUSTER), 6: (Op.WRITE, 3, 1, Scope.DEVICE)}


def test_a_cluster_barrier_without_the_launchs_cluster_dims_is_refused(tmp_path):
    refused(
        tmp_path,
        lambda w: exchange(w, barrier=True, cluster=(0, 0, 0)),
        r"launch 0 \(exchange\): a cluster barrier arrive at exchange\+0x20 "
        r"\(block 0, thread 0\), but the launch record gives no cluster dimensions",
    )


def test_a_peer_outside_the_cluster_is_refused(tmp_path):
    def write(w):
        w.launch("k", grid=(2, 1, 1), block=(1, 1, 1), cluster=CLUSTER)
        w.peer_access(0, 0, rank=2, offset=0)
        w.launch_end()

    refused(
        tmp_path,
        write,
        r"names block rank 2 for the memory, outside its cluster of 2 blocks \(2, 1, 1\)",
        rule="cuda-stream",
    )


def test_clusters_that_do_not_tile_the_grid_are_refused(tmp_path):
    def write(w):
        w.launch("k", grid=(3, 1, 1), block=(1, 1, 1), cluster=CLUSTER)
        w.launch_end()

    refused(tmp_path, write, r"grid \(3, 1, 1\) in clusters of \(2, 1, 1\)", rule="cuda-stream")


def bulk_store(
    w: StreamWriter, *, lanes: int, overwrite: bool, cluster=(1, 1, 1), rank: int = 0
) -> None:
    """Each thread of a warp writes 16 bytes of a shared tile, ``__syncthreads``,
    then the warp issues one 512-byte bulk store of the tile to global memory
    (reported by ``lanes`` lanes); with ``overwrite`` thread 1 then refills its
    part of the tile while the store may still read it. ``rank``: the block rank
    the store's source names."""
    w.alloc(A, 4096)
    w.launch("store", block=(32, 1, 1), pc=0x200, cluster=cluster)
    for t in range(32):
        w.write(0, t, 16 * t, size=16, space=Space.SHARED, pc=0x210)
    for t in range(32):
        w.barrier(0, t, pc=0x220)
    for t in range(lanes):
        w.bulk(0, t, Bulk.SHARED_TO_GLOBAL, A, cluster_address(rank, 0), 512, pc=0x230)
    if overwrite:
        w.write(0, 1, 16, size=16, space=Space.SHARED, pc=0x240)
    for t in range(32):
        w.exit(0, t, pc=0x250)
    w.launch_end()


def test_a_bulk_store_is_one_row_per_warp_issue_and_stays_in_flight(tmp_path):
    out, warnings = converted(tmp_path, lambda w: bulk_store(w, lanes=32, overwrite=True))
    t = table(out)
    stores = [
        (addr, size, addr2, space2, thread)
        for op, addr, size, addr2, space2, thread in zip(
            t["op"], t["addr"], t["size"], t["addr2"], t["space2"], t["thread"]
        )
        if op == Op.TMA_STORE
    ]
    assert stores == [(A, 512, 0, Space.SHARED, 0)]
    assert BULK_GROUP_WARNING.format(launch=0, kernel="store") in warnings
    assert "async_inflight" in errors(out)


def test_a_launch_without_clusters_may_hold_bulk_stores_from_its_own_memory(tmp_path):
    """On an H200 the driver reports cluster dimensions 0 for a launch without
    clusters (hopper_bulk_ring.cu, `bench/gpu_machine.sh`): a bulk store that names
    only rank 0, the issuer's own memory, converts as in a cluster of one block."""
    out, _ = converted(
        tmp_path, lambda w: bulk_store(w, lanes=32, overwrite=True, cluster=(0, 0, 0))
    )
    t = table(out)
    assert t["op"].count(Op.TMA_STORE) == 1
    assert set(t["peer"]) == {0} and set(t["cluster"]) == {0}
    assert "async_inflight" in errors(out)


def test_a_bulk_store_naming_another_rank_needs_the_cluster_dims(tmp_path):
    refused(
        tmp_path,
        lambda w: bulk_store(w, lanes=1, overwrite=False, cluster=(0, 0, 0), rank=1),
        r"launch 0 \(store\): a bulk copy from shared to global memory \(cp\.async\.bulk\) "
        r"at store\+0x30 \(block 0, thread 0\), but the launch record gives no cluster "
        r"dimensions",
    )


def test_an_action_on_a_peers_mbarrier_is_refused(tmp_path):
    def write(w):
        w.launch("remote", grid=(2, 1, 1), block=(1, 1, 1), cluster=CLUSTER)
        w.mbarrier(0, 0, BarrierAction.INIT, 0x40, 1)
        w.mbarrier(1, 0, BarrierAction.ARRIVE, 0x40, 1, pc=0x18, peer=0)
        w.launch_end()

    refused(
        tmp_path,
        write,
        r"launch 0 \(remote\) executed an mbarrier action on the mbarrier of block rank 0 "
        r"of its cluster \(a shared::cluster mbarrier\) at remote\+0x18 \(block 1, thread 0\)",
    )


def test_a_lane_that_issues_again_is_a_second_bulk_copy(tmp_path):
    def write(w):
        w.alloc(A, 4096)
        w.launch("again", block=(32, 1, 1), cluster=(1, 1, 1))
        for _ in range(2):
            w.bulk(0, 0, Bulk.SHARED_TO_GLOBAL, A, cluster_address(0, 0), 64, pc=0x30)
            w.bulk(0, 1, Bulk.SHARED_TO_GLOBAL, A, cluster_address(0, 0), 64, pc=0x30)
        w.launch_end()

    out, _ = converted(tmp_path, write)
    assert table(out)["op"].count(Op.TMA_STORE) == 2


def test_a_bulk_reduction_into_global_memory_is_a_bulk_reduce_row(tmp_path):
    def write(w):
        w.alloc(A, 4096)
        w.launch("reduce", block=(32, 1, 1), cluster=(1, 1, 1))
        w.bulk(0, 0, Bulk.REDUCE_TO_GLOBAL, A + 64, cluster_address(0, 0x100), 128)
        w.launch_end()

    out, _ = converted(tmp_path, write)
    t = table(out)
    (i,) = [i for i, op in enumerate(t["op"]) if op == Op.BULK_REDUCE]
    assert (t["addr"][i], t["space"][i], t["addr2"][i], t["space2"][i], t["size"][i]) == (
        A + 64,
        Space.GLOBAL,
        0x100,
        Space.SHARED,
        128,
    )


def test_a_bulk_store_from_another_blocks_shared_memory_is_refused(tmp_path):
    def write(w):
        w.launch("k", grid=(2, 1, 1), block=(1, 1, 1), cluster=CLUSTER)
        w.bulk(0, 0, Bulk.SHARED_TO_GLOBAL, A, cluster_address(1, 0), 16)
        w.launch_end()

    refused(
        tmp_path,
        write,
        r"reads the shared memory of block rank 1 of its cluster, not its own \(rank 0\)",
        rule="cuda-stream",
    )


@pytest.mark.parametrize(
    "instruction, what",
    [
        (Bulk.GLOBAL_TO_SHARED, r"a bulk copy from global to shared memory \(cp.async.bulk\)"),
        (Bulk.SHARED_TO_SHARED, r"a bulk copy between shared memories"),
        (Bulk.REDUCE_TO_SHARED, r"a bulk reduction into shared memory"),
        (Bulk.ASYNC_STORE, r"an asynchronous store \(st.async\)"),
        (Bulk.ASYNC_REDUCTION, r"an asynchronous reduction \(red.async\)"),
    ],
)
def test_bytes_completing_on_an_mbarrier_are_refused_naming_expect_tx(tmp_path, instruction, what):
    """The API reports which mbarrier the bytes complete on but not the bytes its
    phases expect: the phase a wait returns on is unknown, so nothing is guessed."""

    def write(w):
        w.launch("tma", grid=(2, 1, 1), block=(32, 1, 1), pc=0x100, cluster=CLUSTER)
        w.bulk(
            0,
            0,
            instruction,
            cluster_address(1, 0x400),
            A if instruction == Bulk.GLOBAL_TO_SHARED else cluster_address(0, 0x800),
            16,
            mbarrier=cluster_address(1, 0x600),
            pc=0x180,
        )
        w.launch_end()

    refused(
        tmp_path,
        write,
        rf"launch 0 \(tma\): {what}.*? at tma\+0x80 \(block 0, thread 0\) completes 16 "
        r"bytes on the mbarrier at shared offset 0x600 of block rank 1 of the cluster, "
        r"but .* does not report .* \(mbarrier.expect_tx\)",
    )


def test_a_record_of_an_unknown_kind_is_refused_naming_its_row(tmp_path):
    def write(w):
        w.launch("k", block=(1, 1, 1))
        w.read(0, 0, A)
        w.record(99, block=0, thread=0)
        w.launch_end()

    err = refused(
        tmp_path, write, r"a record of kind 99, which this tracerace does not know", "cuda-stream"
    )
    assert err.row == 4  # after the name string, its payload, the launch and the read


def test_a_stream_cut_inside_a_bulk_record_is_refused(tmp_path):
    w, prefix = stream(tmp_path)
    with w:
        w.launch("k", block=(32, 1, 1), cluster=(1, 1, 1))
        w.bulk(0, 0, Bulk.SHARED_TO_GLOBAL, A, 0, 64)
    path = Path(f"{prefix}.4242.trc")
    path.write_bytes(path.read_bytes()[: -RECORD_DTYPE.itemsize // 2])
    with pytest.raises(TraceError, match="ends inside a record"):
        convert(prefix, str(tmp_path / "out.arrow"))


def test_a_version_1_stream_still_converts(tmp_path):
    """Streams recorded before clusters (the GPU fixtures of tests/data/cuda) are
    version 1: their launches carry no cluster dimensions and need none."""
    w, prefix = stream(tmp_path)
    with w:
        w.alloc(A, 64)
        w.host_init(A, 64)
        w.launch("old", block=(2, 1, 1))
        w.read(0, 0, A)
        w.read(0, 1, A)
        w.launch_end()
    path = Path(f"{prefix}.4242.trc")
    raw = bytearray(path.read_bytes())
    raw[8:10] = (1).to_bytes(2, "little")
    path.write_bytes(bytes(raw))
    out = str(tmp_path / "out.arrow")
    convert(prefix, out)
    t = table(out)
    assert t["cluster"] == t["block"] and t["peer"] == t["block"]


def test_batches_of_any_size_give_the_same_cluster_trace(tmp_path):
    def write(w):
        exchange(w, barrier=True)
        bulk_store(w, lanes=32, overwrite=False)

    w, prefix = stream(tmp_path)
    with w:
        write(w)
    outs = []
    for batch in (1, 5, 33, 1 << 18):
        out = str(tmp_path / f"out{batch}.arrow")
        convert(prefix, out, batch_records=batch)
        outs.append(table(out))
    assert all(o == outs[0] for o in outs[1:])
    assert np.count_nonzero(np.array(outs[0]["op"]) == Op.TMA_STORE) == 1


def test_a_bulk_store_past_64_bits_is_refused_naming_the_record(tmp_path):
    def write(w):
        w.launch("k", block=(32, 1, 1), cluster=(1, 1, 1))
        w.bulk(0, 0, Bulk.SHARED_TO_GLOBAL, 0xFFFF_FFFF_FFFF_FFF0, 0, 64)
        w.launch_end()

    refused(tmp_path, write, "a BULK record's bytes pass the end of the 64-bit", "cuda-stream")
