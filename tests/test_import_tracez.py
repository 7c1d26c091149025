"""Importing Accel-Sim 2.0 .tracez files: the container, tracer v6 lines, mbarriers."""

from __future__ import annotations

import os
import struct
import sys
from collections import Counter

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tracerace
from tracerace.cli import app
from tracerace.convert.gpu import detect, import_trace
from tracerace.convert.gpu.sass import Effect, decode, mbar_init_count
from tracerace.errors import TraceError

sys.path.insert(0, os.path.dirname(__file__))
import gputrace as g  # noqa: E402, RUF100
import tracezgen as z  # noqa: E402, RUF100


def kinds(path, engine) -> Counter:
    by_kind = tracerace.check(str(path), engine=engine).summary["by_kind"]
    return Counter({kind: n for kind, n in by_kind.items() if n})


def imported(tmp_path, data: bytes, name: str = "kernel-1.tracez"):
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / (name + ".arrow")
    import_trace(src, out)
    return out


def convert_fails(tmp_path, data: bytes, name: str = "kernel-1.tracez") -> str:
    """The one line ``convert`` prints for ``data``, which it must refuse (exit 2)."""
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / "out.arrow"
    res = CliRunner().invoke(app, ["convert", str(src), str(out)])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tracerace: error: {src}"), lines
    assert not out.exists()
    return lines[0]


# --- the SASS rows ------------------------------------------------------------------------


def test_mbarrier_init_count_from_the_state_word():
    # nvcc 13, sm_90a: mbarrier.init(count) exchanges (2^20 - count) << 1 (low word).
    assert [mbar_init_count(z.init_word(n)) for n in (1, 32, 128, (1 << 20) - 1)] == [
        1,
        32,
        128,
        (1 << 20) - 1,
    ]
    assert mbar_init_count(0) == 0


def test_syncs_rows():
    assert decode("SYNCS.EXCH.64").effect is Effect.MBAR_INIT
    arrive = decode("SYNCS.ARRIVE.TRANS64.RED.A1T0")
    assert arrive.effect is Effect.MBAR_ARRIVE and (arrive.arrivals, arrive.tx) == ("1", "0")
    expect = decode("SYNCS.ARRIVE.TRANS64.A0TR")
    assert (expect.arrivals, expect.tx) == ("0", "R")
    plain = decode("SYNCS.ARRIVE.TRANS64")  # arrive.expect_tx, bytes in the register
    assert (plain.arrivals, plain.tx) == ("1", "R")
    assert decode("SYNCS.PHASECHK.TRANS64.TRYWAIT").effect is Effect.MBAR_WAIT
    assert decode("SYNCS.PHASECHK.TRANS64").effect is Effect.MBAR_WAIT
    assert decode("SYNCS.CCTL.IV").effect is Effect.MBAR_INVAL
    assert decode("FENCE.VIEW.ASYNC.S").effect is Effect.FENCE_PROXY_ASYNC
    for opcode in ("UTMALDG.2D", "UBLKCP.S.G", "UCGABAR_ARV", "UCGABAR_WAIT"):
        assert not decode(opcode).followable, opcode


# --- kernels ------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["reference", "numba"])
@pytest.mark.parametrize(
    "full_wait, empty_wait, expected",
    [
        (True, True, {}),
        (False, True, {"raw": 64}),  # the consumer reads both stages before they are full
        (True, False, {"war": 32}),  # the producer refills the buffer before it is empty
    ],
)
def test_producer_consumer(tmp_path, engine, full_wait, empty_wait, expected):
    out = imported(tmp_path, z.producer_consumer(full_wait, empty_wait))
    assert kinds(out, engine) == Counter(expected)


def test_mbarrier_rows_and_the_replay_order(tmp_path):
    out = imported(tmp_path, z.producer_consumer(retries=3))
    rows = [r for r in g.ops_of(out) if r[0].startswith("mbar")]
    # Two inits by lane 0 (32 expected arrivals each), from the register value.
    assert [r for r in rows if r[0] == "mbar_init"] == [
        ("mbar_init", 0, 0, z.FULL_BAR, 32),
        ("mbar_init", 0, 0, z.EMPTY_BAR, 32),
    ]
    waits = Counter((r[2] // 32, r[3], r[4]) for r in rows if r[0] == "mbar_wait")
    # Three try-waits per stage are one wait; the producer's first wait (parity 1 of a
    # fresh mbarrier) returns at once and orders nothing: it is left out.
    assert waits == {(1, z.FULL_BAR, 0): 32, (1, z.FULL_BAR, 1): 32, (0, z.EMPTY_BAR, 0): 32}
    # Each wait comes after the 32 arrivals that complete the phase it waits for.
    seq = [(r[0], r[3]) for r in rows]
    first_wait = seq.index(("mbar_wait", z.FULL_BAR))
    assert seq[:first_wait].count(("mbar_arrive", z.FULL_BAR)) == 32


def test_a_wait_no_phase_completes_is_refused(tmp_path):
    head = z.header("k", (1, 1, 1), (32, 1, 1))
    warp = [z.mbar_init(0x10, z.FULL_BAR, 32), z.mbar_wait(0x20, z.FULL_BAR, 0), z.exit_(0x30)]
    line = convert_fails(tmp_path, z.tracez(head, [z.Block((0, 0, 0), [warp])]))
    assert "block (0,0,0) warp 0 instruction 1: gpu-mbarrier:" in line
    assert "mbarrier 0x1000 for parity 0" in line


@pytest.mark.parametrize("consumer_wait", [True, False])
def test_tma_copy_without_its_shared_side_is_refused(tmp_path, consumer_wait):
    line = convert_fails(tmp_path, z.tma_pipeline(consumer_wait))
    assert "block (0,0,0) warp 0 instruction 3: tma-shared-unseen: UTMALDG.2D:" in line
    assert "256 bytes" in line and "global 0x7f0000000000" in line
    assert f"mbarrier {z.SHMEM + z.FULL_BAR:#x}" in line


def table(path) -> dict[str, list[int]]:
    import pyarrow.ipc as ipc

    return ipc.open_file(str(path)).read_all().to_pydict()


@pytest.mark.parametrize("engine", ["reference", "numba"])
@pytest.mark.parametrize(
    "cluster_barrier, expected",
    [
        (True, {}),
        # Each block reads its peer's buffer with nothing ordering the peer's write: the
        # replay runs block 0 first, so its read comes before block 1's write (war, and
        # bytes nobody wrote yet), block 1's after block 0's (raw).
        (False, {"raw": 32, "war": 32, "uninit_read": 32}),
    ],
)
def test_cluster_exchange(tmp_path, engine, cluster_barrier, expected):
    out = imported(tmp_path, z.cluster_exchange(cluster_barrier))
    assert kinds(out, engine) == Counter(expected)


@pytest.mark.parametrize("engine", ["reference", "numba"])
def test_a_relaxed_cluster_arrival_orders_nothing(tmp_path, engine):
    """``barrier.cluster.arrive.relaxed`` (a bare ``UCGABAR_ARV``, no ``MEMBAR`` before
    it) then ``wait``: the peer's write is not ordered before the read."""
    out = imported(tmp_path, z.cluster_exchange(True, release=False))
    assert kinds(out, engine) == Counter({"raw": 64})
    names = [r[0] for r in g.ops_of(out) if r[0].startswith("cluster_arrive")]
    assert names.count("cluster_arrive_relaxed") == 64 and names.count("cluster_arrive") == 64


def test_cluster_rows_name_the_cluster_and_the_owner_of_shared_bytes(tmp_path):
    out = imported(tmp_path, z.cluster_exchange(True))
    t = table(out)
    assert set(t["cluster"]) == {0}
    shared = [
        (op, block, peer, addr)
        for op, block, peer, addr, space in zip(
            t["op"], t["block"], t["peer"], t["addr"], t["space"]
        )
        if space == 1 and op in (0, 1)
    ]
    lanes = range(32)
    assert sorted(shared) == sorted(
        [(1, b, b, z.BUF + 4 * lane) for b in range(2) for lane in lanes]
        + [(0, b, 1 - b, z.BUF + 4 * lane) for b in range(2) for lane in lanes]
    )
    rows = g.ops_of(out)
    arrivals = [r for r in rows if r[0] == "cluster_arrive"]
    assert len(arrivals) == 4 * 32 and {r[4] for r in arrivals} == {64}
    # Every thread's k-th wait comes after the 64 (k + 1)-th arrival of the cluster.
    seen, waits = 0, Counter()
    for name, block, thread, _, _ in rows:
        if name == "cluster_arrive":
            seen += 1
        elif name == "cluster_wait":
            waits[block, thread] += 1
            assert seen >= 64 * waits[block, thread]
    assert set(waits.values()) == {2} and len(waits) == 64


@pytest.mark.parametrize("engine", ["reference", "numba"])
@pytest.mark.parametrize("full_wait, expected", [(True, {}), (False, {"raw": 4 * 64})])
def test_cluster_of_warp_specialized_blocks(tmp_path, engine, full_wait, expected):
    """Two clusters of two blocks, each block a producer/consumer pair on mbarriers in
    its own rank's window: the mbarriers and buffers of each block are its own."""
    out = imported(tmp_path, z.tracez(*z.cluster_pipeline_kernel(full_wait)))
    assert kinds(out, engine) == Counter(expected)
    t = table(out)
    assert {(b, c) for b, c in zip(t["block"], t["cluster"])} == {(0, 0), (1, 0), (2, 1), (3, 1)}
    assert all(p == b for p, b in zip(t["peer"], t["block"]))
    inits = [r for r in g.ops_of(out) if r[0] == "mbar_init"]
    assert {(r[1], r[3]) for r in inits} == {
        (b, bar) for b in range(4) for bar in (z.FULL_BAR, z.EMPTY_BAR)
    }


def test_a_cluster_barrier_no_order_completes_is_refused(tmp_path):
    head, blocks = z.cluster_exchange_kernel(True, closing=(True, False))
    line = convert_fails(tmp_path, z.tracez(head, blocks))
    assert "block (0,0,0) warp 0 instruction 11: gpu-cluster: block 0: warp 0 waits at a " in line
    assert "(96 of the 128 arrivals it needs;" in line


def test_index_fields_that_disagree_on_the_cluster_are_refused(tmp_path):
    head, blocks = z.cluster_exchange_kernel(True)
    blocks[1].rank = 0
    line = convert_fails(tmp_path, z.tracez(head, blocks))
    assert ": gpu-cluster: index: block (1, 0, 0) says cluster (0, 0, 0), CTA (1, 0, 0)" in line
    assert "that is block (1, 0, 0), rank 1" in line


def test_a_cluster_missing_a_rank_is_refused(tmp_path):
    head, blocks = z.cluster_exchange_kernel(True)
    head = z.header("_Z16cluster_exchangePf", (4, 1, 1), (32, 1, 1))
    line = convert_fails(
        tmp_path,
        z.tracez(
            head,
            blocks[:1]
            + [z.Block((3, 0, 0), [[]], cluster=(1, 0, 0), cluster_cta=(1, 0, 0), rank=1)],
        ),
    )
    assert (
        ": gpu-cluster: index: cluster (0, 0, 0) of 2 blocks (2, 1, 1) lists no block of rank 1"
        in line
    )


def test_another_blocks_mbarrier_is_refused(tmp_path):
    head, blocks = z.cluster_exchange_kernel(True)
    blocks[0].warps[0].insert(0, z.mbar_init(0x8, z.FULL_BAR, 1, base=z.slot(1)))
    line = convert_fails(tmp_path, z.tracez(head, blocks))
    assert "block (0,0,0) warp 0 instruction 0: gpu-cluster: SYNCS.EXCH.64: an mbarrier" in line
    assert "of block rank 1 of the cluster (this block is rank 0)" in line


def test_a_cut_short_cluster_trace_is_refused_naming_the_warp(tmp_path):
    """Block (1,0,0)'s warp says its sub-chunk runs past the data (a file cut and
    mended, or damaged): the import names that warp and the rule."""
    data = bytearray(z.cluster_exchange(True))
    (index,) = struct.unpack_from("<Q", data, len(data) - 8)
    second = index + 4 + 44 + 16 + 4  # block 0's record: 11 u32, one warp, one sub-chunk
    (offset,) = struct.unpack_from("<Q", data, second + 44 + 8)
    struct.pack_into("<I", data, offset + 8, 1 << 20)
    line = convert_fails(tmp_path, bytes(data))
    assert line.endswith(
        ": truncated: block (1, 0, 0) warp 0 sub-chunk 0: 1048576 compressed bytes pass "
        "the start of the index"
    )


def test_kernelslist_dictionary_and_subchunks(tmp_path):
    plain = z.producer_consumer()
    head = z.header("k2", (1, 1, 1), (64, 1, 1))
    racy = z.producer_consumer(full_wait=False)
    sample = "\n".join([z.lds(0x120, z.BUF), z.sts(0x50, z.BUF)] * 8).encode()
    dictionary = sample + b"\0" * 8
    with_dict = z.tracez(
        head,
        [
            z.Block(
                (0, 0, 0),
                [
                    [z.sts(0x10, 0), z.bar(0x20), z.exit_(0x30)],
                    [z.bar(0x20), z.lds(0x40, 0), z.exit_(0x50)],
                ],
            )
        ],
        subchunk=1,
        dictionary=dictionary,
    )
    src = z.write_list(
        tmp_path, {"kernel-1.tracez": plain, "kernel-2.tracez": racy, "kernel-3.tracez": with_dict}
    )
    assert detect(src) == "tracez" and detect(str(tmp_path / "kernel-1.tracez")) == "tracez"
    out = tmp_path / "all.arrow"
    result = import_trace(src, out)
    assert result.launches == 3 and result.format == "tracez"
    rep = tracerace.check(str(out), engine="reference")
    assert {h.second.launch for h in rep.hazards} == {1}


def test_register_values_are_needed(tmp_path):
    data = z.producer_consumer()
    head = z.header("k", (1, 1, 1), (32, 1, 1))
    noval = z.Line(
        0x10,
        "SYNCS.EXCH.64",
        z.LANE0,
        dst=["URZ"],
        src=["UR8", "UR4"],
        width=8,
        addrs=[z.SHMEM + z.FULL_BAR],
    ).text()
    line = convert_fails(tmp_path, z.tracez(head, [z.Block((0, 0, 0), [[noval]])]))
    assert "instruction 0: sass-unfollowable: SYNCS.EXCH.64:" in line
    assert data  # the same kernel with values imports (test_producer_consumer)


# --- bad input ----------------------------------------------------------------------------


def _good() -> bytes:
    return z.producer_consumer()


def _index_offset(data: bytes) -> int:
    return struct.unpack("<Q", data[-8:])[0]


def _patch(data: bytes, offset: int, fmt: str, value) -> bytes:
    return data[:offset] + struct.pack(fmt, value) + data[offset + struct.calcsize(fmt) :]


def broken() -> dict[str, tuple[bytes, str, str]]:
    """name -> (file bytes, rule, words the message must hold)."""
    good = _good()
    nul = good.index(b"\0")
    index = _index_offset(good)
    first_warp = index + 4 + 44  # the first block's first warp record
    data_start = nul + 1 + 8
    cases = {
        "no-nul": (good[:nul], "truncated", "NUL"),
        "cut-in-compression-header": (good[: nul + 3], "truncated", "compression header"),
        "huge-dictionary": (
            _patch(good, nul + 1, "<I", 1 << 30),
            "tracez-format",
            "dictionary size",
        ),
        "index-offset-outside": (
            _patch(good, len(good) - 8, "<Q", len(good) + 5),
            "tracez-format",
            "index offset",
        ),
        "too-many-blocks": (_patch(good, index, "<I", 7), "tracez-format", "lists 7 blocks"),
        "too-many-warps": (_patch(good, index + 4 + 40, "<I", 9), "tracez-format", "9 warps"),
        "counts-do-not-add-up": (
            _patch(good, first_warp, "<I", 99),
            "tracez-format",
            "do not add up",
        ),
        "warp-offset-outside": (
            _patch(good, first_warp + 8, "<Q", index + 3),
            "tracez-format",
            "data offset",
        ),
        "warp-header-disagrees": (
            _patch(good, data_start, "<I", 5),
            "tracez-format",
            "its data says 5 instructions",
        ),
        "subchunk-past-index": (
            _patch(good, data_start + 8, "<I", 1 << 20),
            "truncated",
            "sub-chunk 0",
        ),
        "damaged-zstd": (
            good[: data_start + 12] + b"\xff" * 8 + good[data_start + 20 :],
            "tracez-format",
            "sub-chunk 0",
        ),
        "cut-in-index": (good[: index + 30] + good[-8:], "truncated", "block record"),
        "cut-in-data": (good[: index - 10], "tracez-format", "index offset"),
        "version-7": (
            z.tracez(
                z.header("k", (1, 1, 1), (32, 1, 1), version=7),
                [z.Block((0, 0, 0), [[z.exit_(0x10)]])],
            ),
            "tracez-format",
            "tracer version 7",
        ),
        "bad-line": (
            z.tracez(
                z.header("k", (1, 1, 1), (64, 1, 1)),
                [z.Block((0, 0, 0), [[z.bar(0x10), "0020 ffffffff 0 STS 1"], [z.bar(0x10)]])],
            ),
            "tracez-format",
            "block (0,0,0) warp 0 instruction 1",
        ),
        "block-outside-grid": (
            z.tracez(z.header("k", (1, 1, 1), (32, 1, 1)), [z.Block((3, 0, 0), [[z.exit_(0x10)]])]),
            "tracez-format",
            "outside the grid",
        ),
        "lines-disagree": (_lines_disagree(), "tracez-format", "lines where the index says"),
    }
    return cases


def _lines_disagree() -> bytes:
    head = z.header("k", (1, 1, 1), (32, 1, 1))
    data = bytearray(
        z.tracez(head, [z.Block((0, 0, 0), [[z.exit_(0x10), z.exit_(0x20)]])], subchunk=2)
    )
    # Replace the one sub-chunk's frame by a frame of three lines, the same length budget.
    nul = data.index(b"\0")
    at = nul + 1 + 8 + 8
    (size,) = struct.unpack_from("<I", data, at)
    frame = zstandard.ZstdCompressor().compress(b"a\nb\nc")
    new = bytes(data[:at]) + struct.pack("<I", len(frame)) + frame
    rest = bytes(data[at + 4 + size :])
    shift = len(new) - (at + 4 + size)
    index = struct.unpack("<Q", rest[-8:])[0] + shift
    return new + rest[:-8] + struct.pack("<Q", index)


@pytest.mark.parametrize("name", sorted(broken()))
def test_bad_input_is_one_line_naming_file_record_and_rule(tmp_path, name):
    data, rule, words = broken()[name]
    line = convert_fails(tmp_path, data)
    assert f": {rule}: " in line and words in line, line


def test_every_cut_short_file_is_refused(tmp_path):
    good = _good()
    for cut in range(0, len(good), max(1, len(good) // 40)):
        line = convert_fails(tmp_path, good[:cut])
        assert ": truncated: " in line or ": tracez-format: " in line, (cut, line)


# --- the text forms of tracer version 6 ---------------------------------------------------


@pytest.mark.parametrize(
    "full_wait, empty_wait, expected",
    [(True, True, {}), (False, True, {"raw": 64}), (True, False, {"war": 32})],
)
def test_traceg_of_version_6_keeps_mbarrier_phases(tmp_path, full_wait, empty_wait, expected):
    src = tmp_path / "kernel-1.traceg"
    src.write_text(z.traceg(*z.producer_consumer_kernel(full_wait, empty_wait)))
    out = tmp_path / "out.arrow"
    assert import_trace(src, out).format == "accelsim"
    assert kinds(out, "reference") == Counter(expected)


def test_raw_trace_of_version_6(tmp_path):
    head = z.header("k", (1, 1, 1), (64, 1, 1))
    tile = [
        z.Block(
            (0, 0, 0),
            [
                [z.sts(0x10, 0), z.bar(0x20), z.exit_(0x30)],
                [z.bar(0x20), z.lds(0x40, 0), z.exit_(0x50)],
            ],
        )
    ]
    src = tmp_path / "kernel-1.trace"
    src.write_text(z.raw_trace(head, tile))
    out = tmp_path / "out.arrow"
    assert import_trace(src, out).order == "recorded"
    assert kinds(out, "reference") == Counter()
    # mbarriers need the grouped forms: a try-wait's record may precede the arrival.
    sub = tmp_path / "sub"
    sub.mkdir()
    line = convert_fails(sub, z.raw_trace(*z.producer_consumer_kernel()).encode(), "kernel-1.trace")
    assert "sass-unfollowable: SYNCS.EXCH.64:" in line and ".traceg" in line


@pytest.mark.parametrize("form", [z.traceg, z.raw_trace])
def test_text_cluster_launch_is_refused(tmp_path, form):
    name = "kernel-1.traceg" if form is z.traceg else "kernel-1.trace"
    # Without the cluster barrier (which fails on its own, as an unfollowed opcode), the
    # second block's cluster fields refuse the launch.
    line = convert_fails(
        tmp_path, form(*z.cluster_exchange_kernel(False, closing=None)).encode(), name
    )
    assert ": gpu-cluster: blocks (0,0,0) and (1,0,0) share cluster (0,0,0)" in line


# --- generated rings ----------------------------------------------------------------------


@st.composite
def rings(draw):
    slots = draw(st.integers(1, 3))
    stages = draw(st.integers(1, 6))
    retries = draw(st.lists(st.integers(1, 3), min_size=stages, max_size=stages))
    skip_full = draw(st.sets(st.integers(0, stages - 1), max_size=2))
    skip_empty = draw(
        st.sets(st.integers(slots, max(slots, stages - 1)), max_size=2)
        if stages > slots
        else st.just(set())
    )
    return slots, stages, retries, skip_full, skip_empty


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(rings())
def test_generated_rings(tmp_path, ring):
    """A ring with every wait checks clean, its replay never lets a wait return on a
    phase that did not complete, and engine == reference; leaving a wait out is
    never clean (a race, or, where no order of the warps completes a phase the
    other warp waits for, a refusal naming that wait)."""
    slots, stages, retries, skip_full, skip_empty = ring
    data = z.tracez(*z.ring(slots, stages, retries, skip_full, skip_empty))
    src = tmp_path / "kernel-1.tracez"
    src.write_bytes(data)
    out = tmp_path / "ring.arrow"
    try:
        import_trace(src, out)
    except TraceError as err:
        assert (skip_full or skip_empty) and err.rule == "gpu-mbarrier", str(err)
        return
    ref, eng = kinds(out, "reference"), kinds(out, "numba")
    assert ref == eng
    assert "mbarrier_misuse" not in ref
    if not (skip_full or skip_empty):
        assert ref == Counter()
    else:
        assert ref, ring


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_damaged_files_fail_as_bad_input(tmp_path, data):
    """Any byte of a .tracez changed, or the file cut anywhere: the import succeeds or
    fails with a TraceError (one line, exit 2), never another exception."""
    good = bytearray(z.producer_consumer())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(good) - 1))
        good[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(good)))
    src = tmp_path / "kernel-1.tracez"
    src.write_bytes(bytes(good[:cut]) if data.draw(st.booleans()) else bytes(good))
    try:
        import_trace(src, tmp_path / "out.arrow")
    except TraceError as err:
        assert "\n" not in str(err)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_damaged_version_6_lines_fail_as_bad_input(tmp_path, data):
    """A version 6 .traceg with a few characters of its lines changed: imported, or a
    TraceError, never another exception."""
    text = list(z.traceg(*z.producer_consumer_kernel()))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text) - 1))
        text[at] = data.draw(st.sampled_from("0 1f-xRUPVal\n"))
    src = tmp_path / "kernel-1.traceg"
    src.write_text("".join(text))
    try:
        import_trace(src, tmp_path / "out.arrow")
    except TraceError as err:
        assert "\n" not in str(err)
