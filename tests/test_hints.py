"""Fix hints: one for every hazard kind and reason, worded from what the trace shows.

Rule traces (as in test_rules / test_memory_model) give each row a site
``k.cu:<10 + row>``, so a hint naming the right lines names the right rows;
the incident scenarios check the hints a kernel engineer reads on the five
incidents, in every format that carries them.
"""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pytest
from builders import Trace
from hypothesis import given
from hypothesis import strategies as st

import tracerace
from tracerace.checker import reasons as R
from tracerace.report.formats import sarif
from tracerace.report.hints import hint, line_of
from tracerace.report.output import Output, render
from tracerace.scenarios import SCENARIOS
from tracerace.trace.meta import TraceMeta
from tracerace.trace.ops import Scope
from tracerace.trace.writer import make_table

SH = dict(space=1)
BLOCK, DEVICE = int(Scope.BLOCK), int(Scope.DEVICE)
RELAXED, ACQUIRE, RELEASE = 0, 1, 2


def line(row: int) -> str:
    return f"k.cu:{10 + row}"


def report_of(t: Trace, engine: str = "numba") -> tracerace.Report:
    """The report of ``t``, every row at site ``k.cu:<10 + row> <op>``."""
    for row, ev in enumerate(t.events):
        ev.setdefault("site", row)
    sites = [f"{line(row)} op{ev['op']}" for row, ev in enumerate(t.events)]
    return tracerace.check(make_table(t.columns(), sites=sites), engine=engine, max_reports="all")


def hints(t: Trace) -> dict[tuple[str, int], str]:
    """(kind, later row) -> hint text, of every group, both checkers agreeing."""
    out = {}
    for engine in ("reference", "numba"):
        found = {
            (g.kind, g.example.row): g.hint.text if g.hint else None
            for g in report_of(t, engine).groups
        }
        assert not out or found == out
        out = found
    return out


def only(t: Trace, kind: str) -> str:
    [text] = [h for (k, _), h in hints(t).items() if k == kind]
    return text


# -- races ---------------------------------------------------------------------------


def test_race_in_a_block_without_barriers_asks_for_a_barrier_or_a_signal():
    t = Trace().init(0, 0, addr=0, size=8, **SH)
    t.write(0, 0, addr=0, size=4, **SH).read(0, 1, addr=0, size=4, **SH)
    text = only(t, "raw")
    assert text.startswith(f"order {line(1)} before {line(2)}: a barrier both threads reach")
    assert "a signal after k.cu:11 (the data is written) that thread (0,1) waits for" in text


def test_race_in_a_block_that_uses_a_barrier_names_that_barrier():
    t = Trace().init(0, 0, addr=0, size=16, **SH)
    t.write(0, 0, addr=0, size=4, **SH).write(0, 2, addr=8, size=4, **SH)
    t.bar_arrive(0, 0, obj=1, arg=2).bar_sync(0, 1, obj=1, arg=2)
    t.read(0, 1, addr=8, size=4, **SH)  # thread 2 never arrived at barrier 1
    text = only(t, "raw")
    assert text.startswith(f"add a barrier between {line(2)} and {line(5)}: barrier 1")
    assert "`bar.sync 1`" in text


def test_race_between_blocks_asks_for_a_device_scope_release_and_acquire():
    t = Trace().init(0, 0, addr=0, size=4).write(0, 0, addr=0, size=4).read(1, 0, addr=0, size=4)
    text = only(t, "raw")
    assert text.startswith("blocks 0 and 1 must be ordered: a release after k.cu:11")
    assert "acquire of the same flag before k.cu:12" in text


def flag_handoff(release_scope: int, acquire_scope: int, acquire_sem: int = ACQUIRE) -> Trace:
    t = Trace().init(0, 0, addr=64, size=4).init(0, 0, addr=0, size=4)
    t.write(0, 0, addr=0, size=4)
    t.atomic(0, 0, addr=64, size=4, sem=RELEASE, scope=release_scope)
    t.atomic(1, 0, addr=64, size=4, sem=acquire_sem, scope=acquire_scope)
    if acquire_sem == RELAXED:
        t.fence(1, 0, sem=ACQUIRE, scope=BLOCK)
    return t.read(1, 0, addr=0, size=4)


def test_weak_acquire_is_widened_to_device_scope():
    text = only(flag_handoff(DEVICE, BLOCK), "raw")
    assert text == (
        f"widen the acquire on flag 0x40 before {line(5)} to device scope: the "
        f"release it reads, by thread (0,0), is in another block"
    )


def test_weak_release_is_widened_to_device_scope():
    text = only(flag_handoff(BLOCK, DEVICE), "raw")
    assert text.startswith(f"widen the release on flag 0x40 after {line(2)} to device scope")


def test_relaxed_read_of_a_release_is_made_an_acquire():
    text = only(flag_handoff(DEVICE, DEVICE, RELAXED), "raw")
    assert text.startswith(
        "make the atomic on flag 0x40 that thread (1,0) does before k.cu:16 "
        "an acquire of device scope"
    )


def test_barrier_that_does_not_fence_the_memory_is_made_to():
    t = Trace().write(0, 0, addr=0, size=4)
    t.bar_sync(0, 0, arg=2, fence_spaces=2).bar_sync(0, 1, arg=2, fence_spaces=2)
    t.read(0, 1, addr=0, size=4)
    raw = [g for g in report_of(t).groups if g.kind == "raw"][0]
    assert raw.hint.text.startswith("make barrier 0 fence global memory too")
    assert "CLK_GLOBAL_MEM_FENCE" in raw.hint.text and raw.hint.site is None


def test_race_with_an_async_copy_waits_for_the_copy():
    t = Trace().init(0, 0, addr=64, size=16).write(0, 1, addr=64, size=4)
    t.cp_async(0, 0, addr=0, size=16, space=1, addr2=64)  # reads global 64.. : raw
    text = only(t, "raw")
    assert (
        text == f"put a barrier between {line(1)} and the copy issued at {line(2)}: the copy "
        f"starts when it is issued"
    )


# -- single-access and async kinds -------------------------------------------------


def test_uninit_read_names_the_buffer_to_initialize():
    t = Trace().read(0, 0, addr=0x1008, size=4, site=0)
    table = make_table(
        t.columns(),
        sites=["k.cu:10 ld"],
        buffers=[{"name": "out", "space": 0, "base": 0x1000, "shape": [4], "itemsize": 4}],
    )
    (group,) = tracerace.check(table).groups
    assert group.hint.text.startswith("initialize out before k.cu:10: write it from the host")
    shared = only(Trace().read(0, 0, addr=0, size=4, **SH), "uninit_read")
    assert shared.startswith(f"initialize this shared memory before {line(0)}")


def cp_pipeline() -> Trace:
    t = Trace().init(0, 0, addr=1000, size=64)
    t.cp_async(0, 0, addr=0, size=16, space=1, addr2=1000).cp_async_commit(0, 0)  # group 1
    t.cp_async(0, 0, addr=16, size=16, space=1, addr2=1016).cp_async_commit(0, 0)  # group 2
    t.cp_async_wait(0, 0, arg=1)
    t.bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=2)
    return t.write(0, 1, addr=16, size=4, space=1)  # group 2's bytes


def test_cp_async_in_flight_asks_for_wait_group_and_a_barrier_for_another_thread():
    text = only(cp_pipeline(), "async_inflight")
    assert text.startswith(
        f"`cp.async.wait_group 0` (or `cp.async.wait_all`) before {line(8)}: "
        f"group 2 issued at {line(3)} is still in flight"
    )
    assert "follow it with a barrier before thread (0,1)" in text


def test_bulk_store_in_flight_asks_for_bulk_wait():
    t = Trace().init(0, 0, addr=0, size=16, space=1).fence_proxy_async(0, 0)
    t.tma_store(0, 0, addr=4096, size=16, space2=1, addr2=0).bulk_commit(0, 0)
    t.write(0, 0, addr=0, size=4, space=1)
    assert only(t, "async_inflight").startswith(
        f"`cp.async.bulk.wait_group.read 0` before {line(4)}: bulk group"
    )


def test_tma_load_in_flight_asks_for_the_mbarrier_phase():
    t = Trace().init(0, 0, addr=4096, size=64)
    t.mbar_init(0, 0, obj=8, arg=1).mbar_expect_tx(0, 0, obj=8, arg=128).mbar_arrive(0, 0, obj=8)
    t.tma_load(0, 0, addr=0, size=64, space=1, addr2=4096, obj=8)
    t.read(0, 1, addr=0, size=4, space=1)
    assert only(t, "async_inflight") == (
        f"`mbarrier` wait on 0x8 phase 0 (parity 0) before {line(5)}: the TMA load issued at "
        f"{line(4)} completes that phase"
    )


def test_generic_write_read_by_the_async_proxy_asks_for_a_fence_after_the_write():
    t = Trace().write(0, 0, addr=0, size=16, space=1)
    t.tma_store(0, 0, addr=4096, size=16, space2=1, addr2=0)
    (group,) = report_of(t).groups
    assert group.hint.text.startswith(f"`fence.proxy.async` after {line(0)} (the generic write)")
    assert group.hint.site == f"{line(0)} op1"


def test_cp_async_destination_asks_for_a_fence_after_the_retiring_wait():
    t = Trace().init(0, 0, addr=0, size=16)
    t.cp_async(0, 0, addr=0, size=16, space=1, addr2=0).cp_async_commit(0, 0)
    t.cp_async_wait(0, 0, arg=0)
    t.tma_store(0, 0, addr=4096, size=16, space2=1, addr2=0)
    (group,) = report_of(t).groups
    assert (group.example.code, group.kind) == (R.PROXY_CP_ASYNC_DEST, "proxy_fence")
    assert group.hint.text.startswith(f"`fence.proxy.async` after {line(3)} (the retiring wait)")


def test_sync_alias_asks_for_a_flag_per_hand_off():
    t = Trace()
    t.signal(0, 0, obj=3).wait(0, 1, obj=3).signal(1, 0, obj=3).signal(2, 0, obj=3)
    t.wait(3, 0, obj=3, site=4).wait(3, 0, obj=3, site=4)
    assert only(t, "sync_alias").startswith(
        f"give each hand-off its own flag: flag 3 carries the signal at {line(0)} and the wait "
        f"at {line(4)} of another protocol"
    )


def test_barrier_mismatches():
    t = Trace().bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=3).bar_sync(0, 2, arg=2)
    found = hints(t)
    assert found[("barrier_mismatch", 1)] == (
        f"pass the same thread count to every arrival at barrier 0: {line(1)} passes another "
        f"than the 2 of {line(0)}"
    )
    assert found[("barrier_mismatch", 2)].startswith(
        f"make every thread of block 0 reach barrier 0 at {line(2)} (only 1 arrived)"
    )


def test_mbarrier_misuses():
    t = Trace().mbar_arrive(0, 0, obj=8)
    t.mbar_init(0, 0, obj=8, arg=1).mbar_init(0, 0, obj=8, arg=1)
    t.mbar_arrive(0, 0, obj=8, arg=2)
    found = hints(t)
    assert found[("mbarrier_misuse", 0)].startswith(f"`mbarrier.init` on 0x8 before {line(0)}")
    assert (
        found[("mbarrier_misuse", 2)] == f"`mbarrier.inval` on 0x8 before re-initializing "
        f"it at {line(2)}"
    )
    assert found[("mbarrier_misuse", 3)].startswith("initialize 0x8 with the number of arrivals")
    wrong_parity = Trace().mbar_init(0, 0, obj=8, arg=1).mbar_arrive(0, 0, obj=8)
    wrong_parity.mbar_wait(0, 1, obj=8, arg=1)
    assert only(wrong_parity, "mbarrier_misuse").startswith(
        f"make the arrivals and transaction bytes on 0x8 reach what its init and expect_tx set "
        f"before the wait at {line(2)}"
    )
    tx = Trace().init(0, 0, addr=4096, size=64)
    tx.mbar_init(0, 0, obj=8, arg=1).mbar_expect_tx(0, 0, obj=8, arg=32).mbar_arrive(0, 0, obj=8)
    tx.tma_load(0, 0, addr=0, size=64, space=1, addr2=4096, obj=8)  # 64 bytes of 32
    assert hints(tx) == {
        ("mbarrier_misuse", 4): f"`mbarrier.expect_tx` on 0x8 for every byte "
        f"the copies complete, before {line(4)}"
    }


def test_cross_launch_pair_gets_no_hint():
    # explain calls such a pair a checker bug; there is nothing to change in the kernel
    rec = {
        name: 0
        for name in (
            "kind",
            "severity",
            "row",
            "launch",
            "block",
            "thread",
            "op",
            "ts",
            "site",
            "prev_row",
            "prev_launch",
            "prev_block",
            "prev_thread",
            "prev_op",
            "prev_ts",
            "prev_site",
            "prev_async",
            "space",
            "owner",
            "addr",
            "size",
            "obj",
            "bar_obj",
            "bar_gen",
            "prev_bar_obj",
            "prev_bar_gen",
            "code",
            "aux",
        )
    }
    rec.update(row=5, launch=1, prev_row=1, prev_launch=0, op=0, prev_op=1)
    assert hint(rec, TraceMeta()) is None


def test_line_of_a_site():
    assert line_of("matmul.cu:104 LDGSTS.E.128", "x") == "matmul.cu:104"
    assert line_of("kernel.py:88:5 tl.store", "x") == "kernel.py:88"
    assert line_of("loc:7", "x") == "loc:7"
    assert line_of("decode", "x") == "decode" and line_of(None, "row 3") == "row 3"


# -- the incidents, in every format ---------------------------------------------------

INCIDENT_HINTS = {
    "incident1": [
        (
            "sync_alias",
            "give each hand-off its own flag: flag 3 carries the signal at "
            "decode.cpp:98 and the wait at combine_scale.cpp:40",
        ),
        ("raw", "blocks 3 and 0 must be ordered: a release after decode.cpp:159"),
    ],
    "incident2": [
        (
            "war",
            "order mesh_decode.py:162 before mesh_decode.py:134: a barrier both "
            "threads reach between them (`__syncthreads()`), or a signal after "
            "mesh_decode.py:162 (the read is done)",
        )
    ],
    "incident3": [
        (
            "async_inflight",
            "`cp.async.wait_group 0` (or `cp.async.wait_all`) before "
            "matmul_splitk.cu:105: group 7 issued at matmul_splitk.cu:71 "
            "is still in flight",
        )
    ],
    "incident4": [
        ("war", "blocks 63 and 0 must be ordered: a release after permute.py:27"),
        ("raw", "blocks 56 and 133 must be ordered: a release after permute.py:28"),
    ],
    "incident5": [
        ("uninit_read", "initialize sB_box1 before gemm_mcast.cu:209"),
        (
            "proxy_fence",
            "`fence.proxy.async` after gemm_mcast.cu:240 (the generic "
            "write), before the barrier or release that orders it with the "
            "async-proxy access at gemm_mcast.cu:250",
        ),
    ],
}


@pytest.fixture(scope="module")
def incidents(tmp_path_factory):
    out = {}
    for name in INCIDENT_HINTS:
        path = SCENARIOS[name].write(tmp_path_factory.mktemp(name) / f"{name}.arrow")
        out[name] = path
    return out


@pytest.mark.parametrize("name", list(INCIDENT_HINTS))
def test_incident_hints_in_text_json_sarif_and_arrow(incidents, name):
    report = tracerace.check(incidents[name])
    text = report.to_text().replace("\n" + " " * 11, " ")
    doc = report.to_json()
    results = sarif.to_sarif(report)["runs"][0]["results"]
    table = report.to_arrow()
    arrow_hints = set(table.column("hint").to_pylist())
    for kind, words in INCIDENT_HINTS[name]:
        groups = [g for g in report.shown_groups if g.kind == kind]
        assert any(g.hint.text.startswith(words) for g in groups), (kind, words)
        assert f"fix:     {words}" in text
        assert any(h["hint"] and h["hint"]["text"].startswith(words) for h in doc["hazards"])
        assert any(f"Fix: {words}" in r["message"]["text"] for r in results)
        assert any(
            r.get("fixes") and r["fixes"][0]["description"]["text"].startswith(words)
            for r in results
        )
        assert any(h is not None and h.startswith(words) for h in arrow_hints)


class NoReadBack(io.BytesIO):
    """A stream that cannot be read back, as stdout into a pipe."""

    def readable(self) -> bool:
        return False


def arrow_outputs(path, tmp_path) -> dict[str, pa.Table]:
    """The Arrow report of ``path`` as ``to_arrow()`` gives it, and as a check
    streams it to a file and to a stream that cannot be read back."""
    tables = {"to_arrow": tracerace.check(path, keep_findings=True).to_arrow()}
    out = tmp_path / "report.arrow"
    with Output("arrow", str(out)) as output:
        output.write(tracerace.check(path, sink=output.sink, batch_size=64))
    tables["file"] = pa.ipc.open_file(str(out)).read_all()
    stream = NoReadBack()
    with Output("arrow", stream) as output:
        output.write(tracerace.check(path, sink=output.sink, batch_size=64))
    tables["stream"] = pa.ipc.open_stream(stream.getvalue()).read_all()
    return tables


def test_incident1_race_is_linked_to_the_crossed_flag_in_every_format(incidents, tmp_path):
    report = tracerace.check(incidents["incident1"])
    races = [g for g in report.groups if g.kind in ("raw", "war", "waw")]
    link = races[0].linked
    assert (link.row, link.obj) == (62, 3) and link.site.startswith("combine_scale.cpp:40")
    assert link.hint.text.startswith(
        "give each hand-off its own flag: the wait on flag 3 at combine_scale.cpp:40"
    )
    linked = {g.id for g in races}
    assert {g.id for g in report.groups if g.linked == link} == linked == set(report.links)
    # text
    text = report.to_text().replace("\n" + " " * 11, " ")
    assert text.count(f"linked:  {link.text}\n  fix:     {link.hint.text}\n") == len(linked)
    # JSON
    hazards = report.to_json()["hazards"]
    assert {h["group"] for h in hazards if h["linked"] is not None} == linked
    assert all(
        h["linked"]
        == {
            "kind": "sync_alias",
            "row": 62,
            "obj": 3,
            "site": link.site,
            "text": link.text,
            "hint": link.hint.to_json(),
        }
        for h in hazards
        if h["group"] in linked
    )
    # SARIF
    results = sarif.to_sarif(report)["runs"][0]["results"]
    with_link = [r for r in results if "linked" in r["properties"]]
    assert {r["properties"]["group"] for r in with_link} == linked
    for r in with_link:
        assert r["properties"]["linked"] == {"row": 62, "obj": 3, "hint": link.hint.text}
        assert [loc["id"] for loc in r["relatedLocations"]] == [1, 2]
        assert r["relatedLocations"][1]["physicalLocation"]["region"]["startLine"] == 40
    # HTML
    page = io.StringIO()
    render(report, "html", page)
    from markupsafe import escape  # as Jinja escapes the page

    assert page.getvalue().count(f"<dt>linked</dt><dd>{escape(link.text)}</dd>") == len(linked)
    # Arrow: every finding of a linked group carries the link, the others none
    for how, table in arrow_outputs(incidents["incident1"], tmp_path).items():
        rows = table.select(
            ["group", "linked_row", "linked_obj", "linked_site", "linked", "linked_hint"]
        ).to_pylist()
        assert {r["group"] for r in rows} == {g.id for g in report.groups}, how
        for r in rows:
            want = (
                (62, 3, link.site, link.text, link.hint.text)
                if r["group"] in linked
                else (None,) * 5
            )
            assert (
                r["linked_row"],
                r["linked_obj"],
                r["linked_site"],
                r["linked"],
                r["linked_hint"],
            ) == want, how


def test_a_link_found_after_its_race_reaches_the_streamed_arrow_report(tmp_path):
    """The crossed wait is seen after the race (row 8 after row 7): the race's
    rows were already written when the link became known."""
    t = Trace()
    t.init(0, 0, addr=0, size=4)
    t.signal(0, 0, obj=3, site=1).wait(0, 1, obj=3, site=2)
    t.signal(1, 0, obj=3, site=1)
    t.write(2, 0, addr=0, size=4).signal(2, 0, obj=3, site=3)
    t.read(3, 0, addr=0, size=4, site=5)
    t.wait(3, 0, obj=3, site=4).wait(3, 0, obj=3, site=4)
    path = tmp_path / "t.arrow"
    from tracerace.trace.writer import write_table

    write_table(path, t.columns(), sites=[f"k.cu:{10 + i}" for i in range(6)])
    report = tracerace.check(str(path))
    (race,) = [g for g in report.groups if g.kind == "raw"]
    assert race.linked is not None and race.linked.row > race.example.row
    for how, table in arrow_outputs(str(path), tmp_path).items():
        linked = table.filter(pa.compute.equal(table["group"], race.id))["linked_row"]
        assert linked.to_pylist() == [race.linked.row] * race.count, how


def test_sarif_fix_points_at_the_line_the_change_goes(incidents):
    report = tracerace.check(incidents["incident3"])
    result = sarif.to_sarif(report)["runs"][0]["results"][0]
    (change,) = result["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "matmul_splitk.cu"
    assert change["replacements"][0]["deletedRegion"]["startLine"] == 105
    assert json.loads(json.dumps(result))  # plain JSON


def test_arrow_hints_stream_with_the_findings(incidents, tmp_path):
    out = tmp_path / "r.arrow"
    render(tracerace.check(incidents["incident5"], keep_findings=True), "arrow", str(out))
    table = pa.ipc.open_file(str(out)).read_all()
    uninit = table.filter(pa.compute.equal(table["kind"].cast(pa.string()), "uninit_read"))
    assert set(uninit["hint"].to_pylist()) == {
        next(
            g for g in tracerace.check(incidents["incident5"]).groups if g.kind == "uninit_read"
        ).hint.text
    }
    assert set(uninit["hint_site"].to_pylist()) == {
        "gemm_mcast.cu:209 wgmma.mma_async B cols 64-95"
    }


# -- read-modify-writes, the producer's language, flags by name ------------------------

HIST = [{"name": "h", "space": 1, "base": 0, "shape": [4], "itemsize": 4}]


def histogram(
    tmp_path,
    sites,
    reads_own: bool = True,
    producer: str | None = None,
    batch_size: int | None = None,
):
    """Four threads of block 0 each read a shared bin, then write it (``h[0] += 1``)
    with no barrier; with ``reads_own`` False each thread reads its left
    neighbour's element and writes its own (a stencil: not an update)."""
    t = Trace().init(0, 0, addr=0, size=16, space=1)
    for thread in range(4):
        addr = 0 if reads_own else 4 * thread
        t.read(0, thread, addr=(addr - 4) % 16 if not reads_own else addr, size=4, space=1, site=0)
        t.write(0, thread, addr=addr, size=4, space=1, site=sites)
    path = tmp_path / "hist.arrow"
    from tracerace.trace.writer import write_table

    write_table(
        path,
        t.columns(),
        sites=["hist.cu:12 ld.shared", "hist.cu:12 st.shared", "hist.cu:13 st.shared"],
        buffers=HIST,
        producer=producer,
    )
    return str(path)


@pytest.mark.parametrize(
    "write_site, where", [(1, "at hist.cu:12"), (2, "read at hist.cu:12 and written at hist.cu:13")]
)
def test_a_read_modify_write_by_many_threads_gets_an_atomic(tmp_path, write_site, where):
    path = histogram(tmp_path, write_site)
    texts = set()
    for engine in ("reference", "numba"):
        report = tracerace.check(path, engine=engine)
        races = [g for g in report.groups if g.kind in ("raw", "war", "waw")]
        assert {g.kind for g in races} >= {"war", "waw"}
        assert report.updates == {g.id for g in races}
        texts |= {g.hint.text for g in races}
    assert len(texts) == 1
    (text,) = texts
    assert text.startswith(f"make the read-modify-write of `h` {where} one atomic update")
    assert "`atomicAdd(&h[i], v)`" in text and "barrier both threads" not in text
    for how, table in arrow_outputs(path, tmp_path).items():
        races = pa.compute.is_in(table["kind"].cast(pa.string()), pa.array(["raw", "war", "waw"]))
        assert set(table.filter(races)["hint"].to_pylist()) == {text}, how
    doc = report.to_json()
    assert {h["hint"]["text"] for h in doc["hazards"]} == {text}


def test_a_stencil_is_not_an_update(tmp_path):
    report = tracerace.check(histogram(tmp_path, 1, reads_own=False))
    assert report.groups and not report.updates
    assert all("atomic" not in g.hint.text for g in report.groups if g.hint)


@pytest.mark.parametrize(
    "producer, want, never",
    [
        (None, "`__syncthreads()`", "cuda.syncthreads"),
        (
            "tracerace 0.1.0 record: numba-cuda 0.20 simulator, schedule serial, seed 0",
            "`cuda.syncthreads()`",
            "__syncthreads",
        ),
        ("tracerace oclgrind plugin", "`barrier(CLK_LOCAL_MEM_FENCE)`", "__syncthreads"),
        (
            "tracerace 0.1.0 record: triton 3.8.0 interpreter",
            "`tl.debug_barrier()`",
            "__syncthreads",
        ),
    ],
)
def test_barrier_hints_speak_the_producers_language(producer, want, never):
    t = Trace().init(0, 0, addr=0, size=8, **SH)
    t.write(0, 0, addr=0, size=4, **SH).read(0, 1, addr=0, size=4, **SH)
    for row, ev in enumerate(t.events):
        ev["site"] = row
    table = make_table(t.columns(), sites=[line(r) for r in range(3)], producer=producer)
    (group,) = tracerace.check(table).groups
    assert want in group.hint.text and never not in group.hint.text
    t = Trace().init(0, 0, addr=0, size=16, **SH)
    t.write(0, 0, addr=0, size=4, **SH).bar_sync(0, 0, obj=0, arg=1)
    t.read(0, 1, addr=0, size=4, **SH)
    table = make_table(t.columns(), producer=producer)
    assert never not in tracerace.check(table).groups[0].hint.text


@pytest.mark.parametrize(
    "producer, want",
    [
        (
            "tracerace 0.1.0 record: triton 3.8.0 interpreter",
            [
                "programs 0 and 1 must be ordered",
                'tl.atomic_xchg(flag, 1, sem="release", scope="gpu")',
                'sem="acquire"',
            ],
        ),
        (
            "tracerace 0.1.0 record: numba-cuda 0.20 simulator",
            ["blocks 0 and 1", "cuda.threadfence()"],
        ),
        ("tracerace oclgrind plugin", ["work-groups 0 and 1", "memory_order_release"]),
        ("tracerace cuda tool (Compute Sanitizer API)", ["`st.release.gpu`", "`__threadfence()`"]),
    ],
)
def test_cross_block_hints_speak_the_producers_language(producer, want):
    t = Trace().init(0, 0, addr=0, size=4).write(0, 0, addr=0, size=4).read(1, 0, addr=0, size=4)
    (group,) = tracerace.check(make_table(t.columns(), producer=producer)).groups
    for words in want:
        assert words in group.hint.text
    if "cuda tool" not in producer:
        assert "__threadfence" not in group.hint.text and "st.release" not in group.hint.text


def test_a_flag_in_a_declared_buffer_is_named_by_its_element():
    t = flag_handoff(DEVICE, BLOCK)
    for row, ev in enumerate(t.events):
        ev["site"] = row
    counter = {"name": "counter", "space": 0, "base": 64, "shape": [1], "itemsize": 4}
    table = make_table(
        t.columns(), sites=[line(r) for r in range(len(t.events))], buffers=[counter]
    )
    (group,) = [g for g in tracerace.check(table).groups if g.kind == "raw"]
    assert group.hint.text.startswith(f"widen the acquire on flag `counter[0]` before {line(5)}")
    assert "0x40" not in group.hint.text


def test_a_weak_acquire_names_the_other_agent_in_the_producers_word():
    t = flag_handoff(DEVICE, BLOCK)
    table = make_table(t.columns(), producer="tracerace 0.1.0 record: triton 3.8.0 interpreter")
    (group,) = [g for g in tracerace.check(table).groups if g.kind == "raw"]
    assert group.hint.text.endswith("is in another program")


def test_a_read_modify_write_across_triton_programs_gets_tl_atomic_add(tmp_path):
    path = histogram(tmp_path, 1, producer="tracerace 0.1.0 record: triton 3.8.0 interpreter")
    texts = {g.hint.text for g in tracerace.check(path).groups}
    assert len(texts) == 1 and "many programs read and write" in texts.pop()


@given(st.lists(st.text(alphabet="k.cu:0129 \t\n\v\x1b٣é/", max_size=12), max_size=8))
def test_site_lines_reads_lines_as_line_of_does(sites):
    from tracerace.report.hints import site_lines

    names, ids = site_lines(tuple(sites))
    assert [names[i] for i in ids[:-1]] == [line_of(s, "") or s for s in sites]
    assert ids[-1] == -1 and len(set(names)) == len(names)
