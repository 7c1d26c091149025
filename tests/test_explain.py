"""Explanations: one sentence naming the right agents, generations, sites and objects."""

from __future__ import annotations

import itertools

import pytest

from tracerace.checker import reasons
from tracerace.checker.findings import FINDING_DTYPE, empty_findings
from tracerace.report.explain import explain
from tracerace.trace.meta import TraceMeta
from tracerace.trace.ops import HazardKind, Op, Severity, Space
from tracerace.trace.schema import SITE_NONE

META = TraceMeta(sites=("gemm.cu:104 cp.async", "gemm.cu:120 st.shared", "gemm.cu:130 ld.shared"))


def finding(**fields) -> dict:
    """A finding record as a dict: no site, no barrier generation, no earlier event."""
    rec = {name: 0 for name in FINDING_DTYPE.names}
    rec.update(
        site=SITE_NONE,
        prev_site=SITE_NONE,
        prev_row=-1,
        bar_obj=-1,
        bar_gen=-1,
        prev_bar_obj=-1,
        prev_bar_gen=-1,
    )
    rec.update({k: int(v) for k, v in fields.items()})
    return rec


def race(kind=HazardKind.RAW, **fields) -> dict:
    """A race between (0,5) (earlier, writes) and (0,9) (later, reads) in launch 0."""
    base = dict(
        kind=kind,
        row=22,
        block=0,
        thread=9,
        op=Op.READ,
        prev_row=17,
        prev_block=0,
        prev_thread=5,
        prev_op=Op.WRITE,
        space=Space.SHARED,
        addr=0x1A0,
        size=4,
    )
    base.update(fields)
    return finding(**base)


def test_race_after_a_barrier_generation_names_both_generations():
    text = explain(race(prev_bar_obj=0, prev_bar_gen=3, bar_obj=0, bar_gen=3), META)
    assert text == (
        "no barrier between them: thread (0,5) wrote after generation 3 of barrier 0, "
        "thread (0,9) read before generation 4"
    )


def test_race_in_a_block_without_barriers_says_never_synchronized():
    assert (
        explain(race(), META) == "threads (0,5) and (0,9) never synchronized between the accesses"
    )


def test_race_where_one_side_completed_no_barrier():
    text = explain(race(prev_bar_obj=1, prev_bar_gen=0), META)
    assert "thread (0,5) wrote after generation 0 of barrier 1" in text
    assert "thread (0,9) read before completing any barrier" in text
    text = explain(race(bar_obj=2, bar_gen=5), META)
    assert "thread (0,5) wrote before completing any barrier" in text
    assert "thread (0,9) read after generation 5 of barrier 2" in text


def test_race_where_the_later_agent_passed_a_later_generation():
    text = explain(race(prev_bar_obj=0, prev_bar_gen=2, bar_obj=0, bar_gen=4), META)
    assert "wrote after generation 2 of barrier 0" in text
    assert "read after generation 4 of barrier 0" in text


def test_war_and_waw_use_their_own_verbs():
    war = race(
        kind=HazardKind.WAR,
        op=Op.WRITE,
        prev_op=Op.READ,
        prev_bar_obj=0,
        prev_bar_gen=1,
        bar_obj=0,
        bar_gen=1,
    )
    assert explain(war, META) == (
        "no barrier between them: thread (0,5) read after generation 1 "
        "of barrier 0, thread (0,9) wrote before generation 2"
    )
    waw = race(
        kind=HazardKind.WAW, op=Op.ATOMIC, prev_bar_obj=0, prev_bar_gen=0, bar_obj=0, bar_gen=0
    )
    assert "thread (0,9) did an atomic before generation 1" in explain(waw, META)


def test_race_across_blocks_names_the_blocks_and_the_missing_sync():
    text = explain(race(block=3, prev_block=0, space=Space.GLOBAL), META)
    assert text.startswith("blocks 0 and 3 share no barrier")
    assert "no signal, lock or release/acquire atomic ordered" in text
    assert "the write by thread (0,5) before the read by thread (3,9)" in text


def test_launch_is_named_only_when_not_zero():
    assert "launch" not in explain(race(), META)
    text = explain(race(launch=2, prev_launch=2), META)
    assert text == "threads (0,5) and (0,9) never synchronized between the accesses (launch 2)"


def test_race_with_an_async_copy_names_the_copy():
    text = explain(race(prev_async=1, prev_op=Op.CP_ASYNC), META)
    assert text == (
        "the async copy issued by (0,5) and thread (0,9) never synchronized between the accesses"
    )


def test_uninit_read():
    text = explain(
        finding(
            kind=HazardKind.UNINIT_READ, block=1, thread=4, op=Op.READ, space=Space.GLOBAL, size=4
        ),
        META,
    )
    assert text == "no write or init covered these bytes before the read by thread (1,4)"
    shared = explain(
        finding(
            kind=HazardKind.UNINIT_READ, block=1, thread=4, op=Op.READ, space=Space.SHARED, size=4
        ),
        META,
    )
    assert "shared memory starts uninitialized" in shared


def test_async_inflight_cp_async_names_issue_site_agent_and_group():
    rec = finding(
        kind=HazardKind.ASYNC_INFLIGHT,
        code=reasons.INFLIGHT_CP_ASYNC,
        aux=5,
        row=40,
        block=3,
        thread=4,
        op=Op.WRITE,
        site=1,
        prev_row=12,
        prev_block=3,
        prev_thread=17,
        prev_op=Op.CP_ASYNC,
        prev_async=1,
        prev_site=0,
        space=Space.SHARED,
        size=16,
    )
    assert explain(rec, META) == (
        "cp.async issued at gemm.cu:104 cp.async by (3,17) in group 5 was still in flight: "
        "no cp_async_wait retired its group before the write by thread (3,4)"
    )


def test_async_inflight_bulk_store_and_tma_load():
    store = finding(
        kind=HazardKind.ASYNC_INFLIGHT,
        code=reasons.INFLIGHT_BULK_STORE,
        aux=2,
        prev_row=1,
        prev_thread=1,
        prev_op=Op.TMA_STORE,
        op=Op.WRITE,
    )
    assert "bulk/TMA store issued by (0,1) in bulk group 2" in explain(store, META)
    assert "no bulk_wait retired its group" in explain(store, META)
    load = finding(
        kind=HazardKind.ASYNC_INFLIGHT,
        code=reasons.INFLIGHT_TMA_LOAD,
        obj=0x80,
        aux=3,
        prev_row=1,
        prev_thread=1,
        prev_op=Op.TMA_LOAD,
        op=Op.READ,
    )
    text = explain(load, META)
    assert "TMA load issued by (0,1) completes phase 3 (parity 1) of mbarrier 0x80" in text
    assert "before the read by thread (0,0)" in text
    assert "wait on mbarrier 0x80 with parity 1" in text


def test_proxy_fence_names_the_writer_and_the_missing_fence():
    rec = finding(
        kind=HazardKind.PROXY_FENCE,
        prev_row=3,
        prev_thread=2,
        prev_op=Op.WRITE,
        prev_site=1,
        op=Op.TMA_STORE,
        thread=0,
    )
    text = explain(rec, META)
    assert "generic-proxy write by thread (0,2) at gemm.cu:120 st.shared" in text
    assert "async-proxy tma_store by (0,0)" in text
    assert "no fence.proxy.async by (0,2)" in text


def test_sync_alias_both_severities():
    crossed = finding(
        kind=HazardKind.SYNC_ALIAS,
        code=reasons.ALIAS_CROSSED,
        obj=3,
        op=Op.WAIT,
        block=4,
        site=2,
        prev_row=9,
        prev_block=1,
        prev_op=Op.SIGNAL,
        prev_site=1,
    )
    text = explain(crossed, META)
    assert text.startswith("sync object 3 serves two protocols that crossed in this schedule")
    assert "the wait at gemm.cu:130 ld.shared by (4,0)" in text
    assert "the signal at gemm.cu:120 st.shared by (1,0)" in text
    may = dict(crossed, code=reasons.ALIAS_MAY_CROSS, severity=Severity.WARNING)
    assert "another schedule" in explain(may, META)


def test_barrier_mismatch():
    disagree = finding(
        kind=HazardKind.BARRIER_MISMATCH,
        code=reasons.BAR_ARG_DISAGREES,
        aux=128,
        obj=1,
        block=2,
        thread=7,
        op=Op.BAR_SYNC,
        prev_row=3,
        prev_block=2,
        prev_thread=0,
        prev_op=Op.BAR_SYNC,
    )
    text = explain(disagree, META)
    assert "arrivals at barrier 1 of block 2 disagree on the thread count" in text
    assert "thread (2,7)" in text and "the 128 given by" in text and "thread (2,0)" in text
    incomplete = finding(
        kind=HazardKind.BARRIER_MISMATCH,
        code=reasons.BAR_INCOMPLETE,
        aux=3,
        obj=0,
        block=1,
        thread=2,
        op=Op.BAR_SYNC,
        launch=1,
    )
    text = explain(incomplete, META)
    assert text.startswith("barrier 0 of block 1 in launch 1 ends the trace with an incomplete")
    assert "only 3 arrivals, the last by thread (1,2) of launch 1" in text


@pytest.mark.parametrize(
    "code, words",
    [
        (reasons.MBAR_BEFORE_INIT, "before any mbar_init"),
        (reasons.MBAR_REINIT, "without an mbar_inval"),
        (reasons.MBAR_ARRIVAL_UNDERFLOW, "pending-arrival count went below zero"),
        (reasons.MBAR_TX_UNDERFLOW, "transaction count went below zero"),
        (reasons.MBAR_PHASE_NEVER_COMPLETED, "a phase that never completed"),
        (reasons.MBAR_DROP_UNDERFLOW, "expected-arrival count went below zero"),
    ],
)
def test_mbarrier_misuse(code, words):
    text = explain(
        finding(kind=HazardKind.MBARRIER_MISUSE, code=code, obj=0x1F0, thread=3, op=Op.MBAR_ARRIVE),
        META,
    )
    assert words in text and "mbarrier 0x1f0" in text and "(0,3)" in text


def test_every_kind_and_code_gives_a_sentence_from_a_numpy_record():
    codes = range(0, 7)
    for kind, code, prev in itertools.product(HazardKind, codes, (-1, 4)):
        rec = empty_findings(1)[0]
        rec["kind"], rec["code"], rec["prev_row"], rec["row"] = kind, code, prev, 9
        rec["site"] = rec["prev_site"] = SITE_NONE
        text = explain(rec, META)
        assert text and "None" not in text and "\n" not in text, (kind, code, prev)


def test_explain_all_matches_explain_record_by_record():
    import numpy as np

    from tracerace.report.explain import explain_all

    rng = np.random.default_rng(7)
    f = empty_findings(400)
    f["kind"] = rng.integers(0, len(HazardKind), len(f))
    f["code"] = rng.integers(0, 6, len(f))
    f["row"] = np.arange(len(f)) + 10
    f["prev_row"] = np.where(rng.random(len(f)) < 0.3, -1, rng.integers(0, 9, len(f)))
    for name in ("block", "thread", "prev_block", "prev_thread", "launch", "aux", "obj"):
        f[name] = rng.integers(0, 3, len(f))
    f["prev_launch"] = f["launch"]
    for name in ("bar_gen", "prev_bar_gen", "bar_obj", "prev_bar_obj"):
        f[name] = rng.integers(-1, 3, len(f))
    f["site"] = rng.integers(0, 4, len(f))  # 3 is past the sites: no site
    f["prev_site"] = rng.integers(0, 4, len(f))
    f["op"] = rng.choice([int(Op.READ), int(Op.WRITE), int(Op.ATOMIC), int(Op.CP_ASYNC)], len(f))
    f["addr"] = rng.integers(0, 1 << 20, len(f))  # not worded: memo hits across addresses
    assert explain_all(f, META) == [explain(rec, META) for rec in f]
