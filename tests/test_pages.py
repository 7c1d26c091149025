"""Pages: an access that covers whole pages records them as runs, one record
per run however many pages it holds (``tracerace.checker.engine.pages``, RUNS;
``access_pages``, ``cut_run``, ``split_page``); a run is cut where another
large access needs only some of its pages, and a page is split into granules
when an access needs them.

The reference checker keeps every byte; the property tests of
``test_engine_agrees`` (``test_engine_matches_reference_with_pages*``) make
pages 32 and 64 bytes long so that short generated traces make, cut and split
runs. Here: the default 4 KiB pages on hand-written traces, the generator
reaching every shape, and memory that does not grow with the bytes an access
claims."""

from __future__ import annotations

import numpy as np
import pytest
from builders import SimpleReader, Trace, columns
from hypothesis import HealthCheck, Phase, find, settings
from test_engine_agrees import assert_agree
from tracegen import traces

from tracerace.checker import engine
from tracerace.checker.engine.check import replay_batch
from tracerace.checker.engine.layout import (
    IV_HI,
    IV_LO,
    IV_REGION,
    N_LINK,
    N_ROW,
    SV_IV_N,
    SV_LAUNCH,
    slot_fields,
)
from tracerace.checker.engine.shadow import PAGE_REGION, PAGE_SHIFT
from tracerace.trace.ops import K_RAW, K_UNINIT_READ, K_WAR, K_WAW, Op, Space

PAGE = 1 << PAGE_SHIFT
GLOBAL, SHARED = int(Space.GLOBAL), int(Space.SHARED)


def replay(events, page_shift=PAGE_SHIFT) -> engine.EngineState:
    """The engine's state after replaying ``events`` (one batch)."""
    st = engine.EngineState(page_shift)
    reader = SimpleReader(columns(events))
    for batch in reader:
        replay_batch(st, batch, None)
    return st


def runs(st: engine.EngineState) -> list[tuple[int, int, int]]:
    """The runs of the current launch: (region, first page, past-last page)."""
    ivs = st.arrays["ivs"][: int(st.sv[SV_IV_N])]
    return [
        (int(r) & ~int(PAGE_REGION), int(lo), int(hi))
        for r, lo, hi in ivs[:, [IV_REGION, IV_LO, IV_HI]]
        if r >= PAGE_REGION
    ]


def run_nodes(st: engine.EngineState, region: int, lo: int) -> list[tuple[int, int]]:
    """(addr, size) of the accesses the lists of the run at ``lo`` hold (their
    rows' in the trace: a node keeps its row)."""
    g, nodes = slot_fields(st.arrays["gran"]), st.arrays["nodes"]
    slot = np.flatnonzero(
        ~g["empty"]
        & (g["region"] == (region | PAGE_REGION))
        & (g["index"] == lo)
        & (g["launch"] == st.sv[SV_LAUNCH])
    )
    rows = []
    for col in ("writes", "reads"):
        x = int(g[col][slot[0]])
        while x >= 0:
            rows.append(int(nodes[x, N_ROW]))
            x = int(nodes[x, N_LINK] >> 32)
    got = st.rows.take(np.array(rows, dtype=np.int64))
    return [(int(a), int(n)) for a, n in zip(got["addr"], got["size"])]


def granules_with_lists(st: engine.EngineState) -> int:
    g = slot_fields(st.arrays["gran"])
    live = ~g["empty"] & (g["region"] < PAGE_REGION) & (g["launch"] == st.sv[SV_LAUNCH])
    return int((live & ((g["writes"] >= 0) | (g["reads"] >= 0))).sum())


def test_a_gib_written_and_read_is_one_run():
    span = 1 << 30
    t = Trace()
    t.write(0, 0, space=GLOBAL, addr=1 << 32, size=span)
    t.read(1, 0, space=GLOBAL, addr=1 << 32, size=span)  # no barrier: races
    st = replay(t.events)
    first = (1 << 32) // PAGE
    assert runs(st) == [(0, first, first + span // PAGE)]
    assert sorted(run_nodes(st, 0, first)) == [(1 << 32, span)] * 2
    assert granules_with_lists(st) == 0
    assert st.nbytes < replay([]).nbytes + (1 << 20)
    found = st.take_findings()
    assert found["kind"].tolist() == [K_RAW]
    assert (int(found["addr"][0]), int(found["size"][0])) == (1 << 32, span)
    assert int(found["prev_row"][0]) == 0


def large_trace(shared: bool) -> Trace:
    """Large unaligned writes and reads around small ones, racy and ordered,
    over about four pages."""
    space = SHARED if shared else GLOBAL
    base = 0 if shared else 1 << 20
    t = Trace()
    t.init(0, 0, space=space, addr=base + 100, size=8)
    t.write(0, 0, space=space, addr=base + 200, size=3 * PAGE + 100)  # 2 whole pages
    t.read(0, 1, space=space, addr=base + PAGE + 12, size=4)  # races, splits page 1
    t.bar_sync(0, 0, obj=0, arg=2)
    t.bar_sync(0, 1, obj=0, arg=2)
    t.read(0, 1, space=space, addr=base, size=4 * PAGE)  # uninit at both ends
    t.write(0, 0, space=space, addr=base + 2 * PAGE, size=PAGE)  # war with the read
    t.read(0, 1, space=space, addr=base + 2 * PAGE + 40, size=8)  # raw, splits page 2
    t.write(0, 1, space=space, addr=base, size=4 * PAGE)  # over pure and split pages
    return t


def test_default_pages_agree_with_the_reference_global():
    ref = assert_agree(large_trace(False).events, [])
    kinds = set(ref.findings["kind"].tolist())
    assert {K_RAW, K_WAR, K_UNINIT_READ} <= kinds


def test_default_pages_agree_with_the_reference_shared():
    ref = assert_agree(large_trace(True).events, [3, 6])
    assert K_UNINIT_READ in set(ref.findings["kind"].tolist())


def test_a_small_access_splits_a_page_out_of_its_run():
    t = Trace()
    t.write(0, 0, space=GLOBAL, addr=0, size=3 * PAGE)
    assert runs(replay(t.events)) == [(0, 0, 3)]
    t.read(0, 1, space=GLOBAL, addr=PAGE + 8, size=4)
    st = replay(t.events)
    assert runs(st) == [(0, 0, 1), (0, 2, 3)]
    assert granules_with_lists(st) == PAGE // 8  # page 1's granules hold its history
    # A large access over a page some granule of the launch holds lists for
    # goes through the granules there, and makes a run of the pages beyond.
    t.write(0, 2, space=GLOBAL, addr=PAGE, size=4 * PAGE)
    st = replay(t.events)
    assert runs(st) == [(0, 0, 1), (0, 2, 3), (0, 3, 5)]
    assert granules_with_lists(st) == PAGE // 8


def test_runs_are_cut_where_large_accesses_overlap_in_part():
    """A write of pages 0-7, a racing write of pages 4-11, a read nested in
    the first: three runs, then five; each run's lists hold the accesses that
    cover it, and the findings name the bytes both accesses touched."""
    t = Trace()
    t.write(0, 0, space=GLOBAL, addr=0, size=8 * PAGE)
    t.write(0, 1, space=GLOBAL, addr=4 * PAGE, size=8 * PAGE)
    st = replay(t.events)
    assert runs(st) == [(0, 0, 4), (0, 4, 8), (0, 8, 12)]
    assert run_nodes(st, 0, 0) == [(0, 8 * PAGE)]
    assert sorted(run_nodes(st, 0, 4)) == [(0, 8 * PAGE), (4 * PAGE, 8 * PAGE)]
    t.read(0, 2, space=GLOBAL, addr=PAGE, size=2 * PAGE)
    st = replay(t.events)
    assert runs(st) == [(0, 0, 1), (0, 1, 3), (0, 3, 4), (0, 4, 8), (0, 8, 12)]
    found = st.take_findings()
    assert sorted(
        (int(k), int(a), int(n)) for k, a, n in zip(found["kind"], found["addr"], found["size"])
    ) == sorted([(K_WAW, 4 * PAGE, 4 * PAGE), (K_RAW, PAGE, 2 * PAGE)])
    assert_agree(t.events, [])


def test_reads_of_uninitialized_runs_name_their_first_and_last_byte():
    """The uninitialized bytes of a run are found from its ends: an init
    interval in the middle and granules an earlier launch initialized near
    the ends are stepped over."""
    t = Trace()
    t.init(0, 0, space=GLOBAL, addr=0, size=16)  # granule bits
    t.init(0, 0, space=GLOBAL, addr=PAGE, size=PAGE)  # an interval
    t.write(0, 0, space=GLOBAL, addr=64 * PAGE - 8, size=8)  # the last granule
    t.launch = 1
    t.read(0, 0, space=GLOBAL, addr=0, size=64 * PAGE)
    assert runs(replay(t.events)) == [(0, 0, 64)]
    ref = assert_agree(t.events, [])
    found = ref.findings
    assert found["kind"].tolist() == [K_UNINIT_READ]
    assert (int(found["addr"][0]), int(found["size"][0])) == (16, 64 * PAGE - 8 - 16)


def page_spans(events, shift):
    """(index, launch, space, first page, past-last page, covers a page) of each
    read, write or atomic."""
    out = []
    for i, e in enumerate(events):
        if Op(e["op"]) in (Op.READ, Op.WRITE, Op.ATOMIC) and e.get("size", 0) > 0:
            addr, size = e["addr"], e["size"]
            p0, p1 = -(-addr >> shift), (addr + size) >> shift
            out.append(
                (
                    i,
                    e.get("launch", 0),
                    e.get("space", 0),
                    p0,
                    p1,
                    p1 > p0,
                    addr >> shift,
                    (addr + size - 1) >> shift,
                )
            )
    return out


def shapes(events, shift=5) -> set[str]:
    """Which shapes of a later access meeting an earlier large one a trace has."""
    found = set()
    spans = page_spans(events, shift)
    for i, li, si, a0, a1, large, _, _ in spans:
        if not large:
            continue
        for j, lj, sj, b0, b1, blarge, first, last in spans:
            if j <= i or (lj, sj) != (li, si):
                continue
            if blarge and b0 < a1 and a0 < b1:
                if a0 <= b0 and b1 <= a1 and (a0, a1) != (b0, b1):
                    found.add("nested")
                elif not (b0 <= a0 and a1 <= b1):
                    found.add("partial")
            elif not blarge and (a0 <= first < a1 or a0 <= last < a1):
                found.add("small inside")
    return found


@pytest.mark.parametrize("shape", ["partial", "nested", "small inside"])
def test_the_generator_cuts_and_splits_runs(shape):
    """The property tests reach large accesses that overlap an earlier one in
    part or nest in it (the run is cut) and small accesses inside a run (a page
    is split), each with findings (with 32-byte pages)."""

    def reaches(events):
        return shape in shapes(events) and len(replay(events, page_shift=5).take_findings()) > 0

    events = find(
        traces(async_ops=True, large=True),
        reaches,
        settings=settings(
            max_examples=2000,
            database=None,
            phases=[Phase.generate],
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
    assert reaches(events)


def test_a_run_s_nodes_copied_to_a_granule_keep_their_shade():
    """Cutting a run of pages copies its nodes to granules (``copy_list``):
    a node's shade row goes with it (its shadow and hidden bytes, hidden
    bytes standing for all the granule's bytes ``m`` as the run's one unit
    stood for them), and an unshaded node's stale row stays unshaded."""
    from tracerace.checker.engine import EngineState
    from tracerace.checker.engine import layout as L
    from tracerace.checker.engine.pages import copy_list
    from tracerace.checker.jit import from_python

    st = EngineState()
    nodes, cold, shades, gran, sv = (
        st.arrays["nodes"],
        st.arrays["cold"],
        st.arrays["shades"],
        st.arrays["gran"],
        st.sv,
    )
    sv[L.SV_NODE_TOP], sv[L.SV_NODE_FREE], sv[L.SV_NODE_USED] = 2, -1, 2
    # Run node 0: a write shadowed by copy agent 7 at epoch 9, one unit hidden;
    # node 1 after it: unshaded, its row left by an earlier node.
    written = L.I_WRITE | L.I_SHADED | (1 << L.I_MASK_SHIFT) | (1 << L.I_SHADOW_SHIFT)
    nodes[0] = [(1 << 32) | 3, 5, written, 100]  # next 1, agent 3, epoch 5, row 100
    nodes[1] = [(-1 << 32) | 4, 6, 1 << L.I_MASK_SHIFT, 101]
    cold[0], cold[1] = np.arange(L.K_FIELDS), np.arange(L.K_FIELDS) + 10
    shades[0] = [7 | (1 << L.KS_HIDDEN_SHIFT), 9]
    shades[1] = [-1, -1]
    gran[5, L.G_HEADS] = -1
    m = np.int64(0xF0)
    from_python(copy_list)(
        nodes, cold, shades, gran, sv, np.int64(0), np.int64(5), L.HEAD_WRITES, m
    )
    first = int(gran[5, L.G_HEADS] << 32 >> 32)
    second = int(nodes[first, L.N_LINK] >> 32)
    assert (first, second) == (2, 3) and nodes[second, L.N_LINK] >> 32 == -1
    assert [int(nodes[n, L.N_LINK]) & L.LINK_AGENT_MASK for n in (2, 3)] == [3, 4]
    assert nodes[[2, 3]][:, [L.N_EPOCH, L.N_ROW]].tolist() == [[5, 100], [6, 101]]
    assert nodes[2, L.N_INFO] & L.I_SHADED and not nodes[3, L.N_INFO] & L.I_SHADED
    assert (nodes[2, L.N_INFO] >> L.I_SHADOW_SHIFT) & L.MASK_ALL == m
    assert shades[2].tolist() == [7 | (int(m) << L.KS_HIDDEN_SHIFT), 9]
    assert cold[2].tolist() == list(range(L.K_FIELDS))
    assert cold[3].tolist() == list(range(10, 10 + L.K_FIELDS))
