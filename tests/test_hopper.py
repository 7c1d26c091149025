"""The Hopper/Blackwell ops (trace format section 9): each op's racy and fixed form,
its misuse and bad input, in both checkers, and engine == reference on generated
traces that use them."""

from __future__ import annotations

import pytest
from builders import Trace
from hypothesis import given, settings
from hypothesis import strategies as st
from test_engine_agrees import SETTINGS, TINY, assert_agree, split_rows
from tracegen import traces

from tracerace.checker import reasons as R
from tracerace.errors import TraceError
from tracerace.trace.ops import HazardKind as K
from tracerace.trace.ops import Op

MBAR = 64  # an mbarrier's address
X, Y = 0, 16  # shared-memory words


def findings(t: Trace) -> set[tuple[int, int, int]]:
    """(row, kind, prev_row) of every finding, both checkers agreeing field by field."""
    result = assert_agree(t.events, [])
    assert not isinstance(result, TraceError), result
    return set(result.triples())


def misuses(t: Trace) -> list[int]:
    result = assert_agree(t.events, [])
    f = result.findings
    return f["code"][f["kind"] == int(K.MBARRIER_MISUSE)].tolist()


# -- mbarrier.arrive_drop ---------------------------------------------------
def drop_trace(late_write: bool) -> Trace:
    """Threads 0 and 1 arrive on phase 0 (thread 0 dropping out); phase 1
    then expects thread 1 alone. Thread 2 waits on each phase and reads."""
    t = Trace()
    t.mbar_init(0, 2, obj=MBAR, arg=2)
    t.write(0, 0, space=1, addr=X, size=4)
    t.mbar_arrive_drop(0, 0, obj=MBAR)
    t.mbar_arrive(0, 1, obj=MBAR)
    t.mbar_wait(0, 2, obj=MBAR, arg=0)
    t.read(0, 2, space=1, addr=X, size=4)
    if late_write:  # after its drop, thread 0 orders nothing for phase 1
        t.write(0, 0, space=1, addr=Y, size=4)
    else:
        t.write(0, 1, space=1, addr=Y, size=4)
    t.mbar_arrive(0, 1, obj=MBAR)  # completes phase 1 alone
    t.mbar_wait(0, 2, obj=MBAR, arg=1)
    t.read(0, 2, space=1, addr=Y, size=4)
    return t


def test_arrive_drop_fixed_lowers_the_later_phases_count():
    assert findings(drop_trace(late_write=False)) == set()


def test_arrive_drop_racy_a_dropped_thread_orders_nothing_later():
    t = drop_trace(late_write=True)
    assert findings(t) == {(9, int(K.RAW), 6)}


def test_arrive_drop_below_zero_is_a_misuse():
    t = Trace()
    t.mbar_init(0, 0, obj=MBAR, arg=1)
    t.mbar_arrive_drop(0, 0, obj=MBAR, arg=2)
    assert misuses(t) == [R.MBAR_DROP_UNDERFLOW]


def test_arrive_drop_before_init_is_a_misuse():
    t = Trace()
    t.mbar_arrive_drop(0, 0, obj=MBAR)
    assert misuses(t) == [R.MBAR_BEFORE_INIT]


# -- cluster barriers ---------------------------------------------------------
def bad(t: Trace) -> TraceError:
    """The bad-input error both checkers raise, at the same row with the same words."""
    err = assert_agree(t.events, [])
    assert isinstance(err, TraceError), err
    return err


def cluster_exchange(arrive: Op, wait_first: bool) -> Trace:
    """Block 0 writes into block 1's shared memory (distributed shared
    memory), then both blocks of cluster 7 pass the cluster barrier and
    block 1 reads its own copy."""
    t = Trace()
    if wait_first:  # block 1 arrives and waits before block 0 arrives
        t.cluster_arrive(1, 0, cluster=7, arg=2)
        t.cluster_wait(1, 0, cluster=7)
    t.write(0, 0, cluster=7, space=1, peer=1, addr=X, size=4)
    t.ev(arrive, 0, 0, cluster=7, arg=2)
    if not wait_first:
        t.cluster_arrive(1, 0, cluster=7, arg=2)
        t.cluster_wait(1, 0, cluster=7)
    t.read(1, 0, cluster=7, space=1, addr=X, size=4)
    t.cluster_wait(0, 0, cluster=7)
    return t


@pytest.mark.parametrize("wait_first", [False, True])
def test_cluster_barrier_fixed_orders_a_remote_write(wait_first):
    assert findings(cluster_exchange(Op.CLUSTER_ARRIVE, wait_first)) == set()


@pytest.mark.parametrize("wait_first", [False, True])
def test_cluster_barrier_racy_a_relaxed_arrival_orders_nothing(wait_first):
    t = cluster_exchange(Op.CLUSTER_ARRIVE_RELAXED, wait_first)
    write = 2 if wait_first else 0
    assert findings(t) == {(4, int(K.RAW), write)}


def test_cluster_barrier_racy_without_it():
    t = Trace()
    t.write(0, 0, cluster=7, space=1, peer=1, addr=X, size=4)
    t.read(1, 0, cluster=7, space=1, addr=X, size=4)
    assert findings(t) == {(1, int(K.RAW), 0)}


def mismatches(t: Trace) -> list[tuple[int, int, int]]:
    f = assert_agree(t.events, []).findings
    f = f[f["kind"] == int(K.BARRIER_MISMATCH)]
    return sorted(zip(f["row"].tolist(), f["code"].tolist(), f["obj"].tolist()))


def test_cluster_barrier_arrivals_that_disagree_or_never_complete_are_mismatches():
    t = Trace()
    t.cluster_arrive(0, 0, cluster=7, arg=2)
    t.cluster_arrive(1, 0, cluster=7, arg=3)  # the first arrival's 2 counts
    assert mismatches(t) == [(1, R.BAR_ARG_DISAGREES, 7)]
    t = Trace()
    t.cluster_arrive(0, 0, cluster=7, arg=2)
    t.cluster_wait(0, 0, cluster=7)
    assert mismatches(t) == [(0, R.BAR_INCOMPLETE, 7)]


def test_cluster_barrier_bad_input():
    t = Trace()
    t.cluster_arrive(0, 0, cluster=7, arg=2)
    t.cluster_wait(0, 0, cluster=7)
    t.read(0, 0, cluster=7, space=1, addr=X, size=4)  # still held at the wait
    err = bad(t)
    assert err.rule == "barrier-order" and err.row == 2 and "cluster_wait" in str(err)
    t = Trace()
    t.cluster_wait(0, 0, cluster=7)
    assert bad(t).rule == "cluster-wait"
    t = Trace()
    t.cluster_arrive(0, 0, cluster=7, arg=2)
    t.cluster_arrive_relaxed(0, 0, cluster=7, arg=2)
    err = bad(t)
    assert err.rule == "cluster-wait" and err.row == 1 and "again" in str(err)
    t = Trace()
    t.cluster_arrive(0, 0, cluster=7, arg=0)
    assert bad(t).rule == "barrier-count"


# -- engine == reference on generated traces with the new ops -----------------
@settings(max_examples=400, **SETTINGS)
@given(events=traces(async_ops=True, hopper=True), data=st.data())
def test_engine_matches_reference_with_hopper_ops(events, data):
    assert_agree(events, data.draw(split_rows(events)))


@settings(max_examples=100, **SETTINGS)
@given(events=traces(async_ops=True, hopper=True, max_events=200, max_launches=3), data=st.data())
def test_engine_matches_reference_with_hopper_ops_while_growing(events, data):
    assert_agree(events, data.draw(split_rows(events)), sizes=TINY)


def test_generated_traces_hold_the_hopper_ops():
    """The generator reaches every op it is given, and a cluster_wait that
    holds its thread until another thread's arrival."""
    from hypothesis import Phase, find

    quick = settings(max_examples=2000, phases=[Phase.generate], database=None, **SETTINGS)
    for group in (
        (
            Op.CLUSTER_ARRIVE,
            Op.CLUSTER_ARRIVE_RELAXED,
            Op.CLUSTER_WAIT,
            Op.MBAR_ARRIVE_DROP,
            Op.BULK_COPY_PEER,
            Op.ST_ASYNC,
            Op.RED_ASYNC,
        ),
        (
            Op.BULK_REDUCE,
            Op.BULK_REDUCE_PEER,
            Op.CP_ASYNC_MBAR_ARRIVE,
            Op.CP_ASYNC_MBAR_ARRIVE_NOINC,
        ),
    ):
        ops = {int(o) for o in group}
        find(
            traces(hopper=True), lambda evs, ops=ops: ops <= {e["op"] for e in evs}, settings=quick
        )

    def tracked_then_proxy(evs):
        """Copies made to arrive, a wait on that mbarrier by another thread,
        then an async-proxy access of that thread (rule 7 after the wait)."""
        arrives = (Op.CP_ASYNC_MBAR_ARRIVE, Op.CP_ASYNC_MBAR_ARRIVE_NOINC)
        for i, e in enumerate(evs):
            if e["op"] not in arrives:
                continue
            for j, w in enumerate(evs[i + 1 :], i + 1):
                if w["op"] == Op.MBAR_WAIT and w["obj"] == e["obj"] and w["thread"] != e["thread"]:
                    later = evs[j + 1 :]
                    if any(
                        f["thread"] == w["thread"]
                        and (f["op"] == Op.TMA_STORE or f.get("proxy") == 1)
                        for f in later
                    ):
                        return True
        return False

    find(traces(hopper=True), tracked_then_proxy, settings=quick)

    def reductions_meet(evs):
        """Two bulk reductions, or one and a generic atomic, on one word."""
        reduce = (Op.BULK_REDUCE, Op.BULK_REDUCE_PEER)
        words = [(e["space"], e["addr"]) for e in evs if e["op"] in reduce]
        others = [(e["space"], e["addr"]) for e in evs if e["op"] in reduce + (Op.ATOMIC,)]
        return any(others.count(w) > 1 for w in words)

    find(traces(hopper=True), reductions_meet, settings=quick)

    def held_then_run(evs):
        arrivals = (Op.CLUSTER_ARRIVE, Op.CLUSTER_ARRIVE_RELAXED)
        for w, e in enumerate(evs):
            if e["op"] != Op.CLUSTER_WAIT:
                continue
            me = (e["block"], e["thread"])
            for f in evs[w + 1 :]:
                if (f["block"], f["thread"]) == me:
                    break
                if f["op"] in arrivals:
                    return True
        return False

    find(traces(hopper=True), held_then_run, settings=quick)


# -- bulk copies completing bytes on an mbarrier --------------------------------
def bulk_to_peer(op: Op, wait: bool) -> Trace:
    """Block 0 copies 16 bytes into block 1's shared memory at Y, completing
    them on block 1's mbarrier; a consumer of block 1 reads Y, after a wait
    on the phase or not. (A tma_load reads global memory; bulk_copy_peer
    reads block 0's shared X, written first.)"""
    t = Trace()
    t.mbar_init(1, 0, cluster=7, obj=MBAR, arg=1)
    t.mbar_expect_tx(1, 0, cluster=7, obj=MBAR, arg=16)  # arrive.expect_tx: bytes first
    t.mbar_arrive(1, 0, cluster=7, obj=MBAR)
    if op == Op.BULK_COPY_PEER:
        t.write(0, 0, cluster=7, space=1, addr=X, size=16)
    else:
        t.init(0, 0, cluster=7, space=0, addr=4096, size=16)
    t.fence_proxy_async(0, 0, cluster=7)
    source = dict(space2=1, addr2=X) if op == Op.BULK_COPY_PEER else dict(space2=0, addr2=4096)
    t.ev(op, 0, 0, cluster=7, space=1, peer=1, addr=Y, size=16, obj=MBAR, **source)
    if wait:
        t.mbar_wait(1, 1, cluster=7, obj=MBAR, arg=0)
    t.read(1, 1, cluster=7, space=1, addr=Y, size=4)
    return t


@pytest.mark.parametrize("op", [Op.TMA_LOAD, Op.BULK_COPY_PEER])
def test_bulk_copy_into_a_peer_fixed_by_the_wait(op):
    assert findings(bulk_to_peer(op, wait=True)) == set()


@pytest.mark.parametrize("op", [Op.TMA_LOAD, Op.BULK_COPY_PEER])
def test_bulk_copy_into_a_peer_racy_without_the_wait(op):
    result = assert_agree(bulk_to_peer(op, wait=False).events, [])
    f = result.findings
    assert result.triples() == [(6, int(K.ASYNC_INFLIGHT), 5)]
    assert (f["code"][0], f["obj"][0]) == (R.INFLIGHT_TMA_LOAD, MBAR)


def test_bulk_copy_peer_reads_its_source_by_the_async_proxy():
    """Without fence.proxy.async after the generic write of the source, the
    copy's read of it is a proxy_fence hazard."""
    t = bulk_to_peer(Op.BULK_COPY_PEER, wait=True)
    del t.events[4]  # the fence
    assert findings(t) == {(4, int(K.PROXY_FENCE), 3)}


def multicast(blocks_waiting: tuple[int, ...]) -> Trace:
    """One multicast TMA load by block 0 into blocks 0 and 1 of cluster 7 (a
    tma_load row per destination, format section 9); each block's consumer
    reads its copy, after waiting on its own mbarrier when listed."""
    t = Trace()
    for b in (0, 1):
        t.mbar_init(b, 0, cluster=7, obj=MBAR, arg=1)
        t.mbar_expect_tx(b, 0, cluster=7, obj=MBAR, arg=16)
        t.mbar_arrive(b, 0, cluster=7, obj=MBAR)
    t.init(0, 0, cluster=7, space=0, addr=4096, size=16)
    for b in (0, 1):
        t.events.append(
            dict(
                op=int(Op.TMA_LOAD),
                launch=0,
                block=0,
                thread=0,
                cluster=7,
                ts=len(t.events) and t.events[-1]["ts"],
                peer=b,
                space=1,
                addr=Y,
                size=16,
                space2=0,
                addr2=4096,
                obj=MBAR,
            )
        )
    for b in (0, 1):
        if b in blocks_waiting:
            t.mbar_wait(b, 1, cluster=7, obj=MBAR, arg=0)
        t.read(b, 1, cluster=7, space=1, addr=Y, size=4)
    return t


def test_multicast_fixed_each_block_waits_on_its_own_mbarrier():
    assert findings(multicast((0, 1))) == set()


def test_multicast_racy_a_block_that_does_not_wait():
    assert findings(multicast((0,))) == {(11, int(K.ASYNC_INFLIGHT), 8)}


# -- st.async: a remote store completing bytes on the peer's mbarrier ----------
def st_async_to_peer(wait: bool, expect: int = 8, late_write: bool = False) -> Trace:
    """Thread 0 of block 0 writes X of its own block, then stores 8 bytes at
    block 1's Y by st.async, completing them on block 1's mbarrier (which
    expects ``expect`` bytes and one arrival); a consumer of block 1 reads Y
    and block 0's X, after a wait on the phase or not. ``late_write``: block
    0 writes X again after the store, which the phase does not order."""
    t = Trace()
    t.mbar_init(1, 0, cluster=7, obj=MBAR, arg=1)
    t.mbar_expect_tx(1, 0, cluster=7, obj=MBAR, arg=expect)
    t.mbar_arrive(1, 0, cluster=7, obj=MBAR)
    t.write(0, 0, cluster=7, space=1, addr=X, size=4)
    t.st_async(0, 0, cluster=7, space=1, peer=1, addr=Y, size=8, obj=MBAR)
    if late_write:
        t.write(0, 0, cluster=7, space=1, addr=X, size=4)
    if wait:
        t.mbar_wait(1, 1, cluster=7, obj=MBAR, arg=0)
    t.read(1, 1, cluster=7, space=1, addr=Y, size=4)
    t.read(1, 1, cluster=7, space=1, peer=0, addr=X, size=4)
    return t


def test_st_async_fixed_by_the_wait_orders_the_store_and_what_came_before():
    assert findings(st_async_to_peer(wait=True)) == set()


def test_st_async_racy_without_the_wait():
    result = assert_agree(st_async_to_peer(wait=False).events, [])
    f = result.findings
    assert result.triples() == [(5, int(K.ASYNC_INFLIGHT), 4), (6, int(K.RAW), 3)]
    assert (f["code"][0], f["obj"][0], f["aux"][0]) == (R.INFLIGHT_TMA_LOAD, MBAR, 0)


def test_st_async_racy_a_write_after_the_store_is_not_released():
    assert findings(st_async_to_peer(wait=True, late_write=True)) == {(8, int(K.RAW), 5)}


def test_st_async_is_no_arrival_the_phase_waits_for_its_bytes():
    """Expecting 16 bytes, the 8 stored leave the phase open: the wait on it
    is a misuse and the store stays in flight."""
    t = st_async_to_peer(wait=True, expect=16)
    assert misuses(t) == [R.MBAR_PHASE_NEVER_COMPLETED]
    assert (6, int(K.ASYNC_INFLIGHT), 4) in findings(t)


def st_async_then_tma_store(fencer: int | None) -> Trace:
    """After the wait, thread 1 of block 1 stores the st.async bytes to
    global memory by a TMA store (an async-proxy read); thread ``fencer`` of
    block 1 fences the proxies first, then a block barrier orders it."""
    t = st_async_to_peer(wait=True)
    if fencer is not None:
        t.fence_proxy_async(1, fencer, cluster=7)
    t.bar_sync(1, 0, cluster=7, obj=0, arg=2)
    t.bar_sync(1, 1, cluster=7, obj=0, arg=2)
    t.tma_store(1, 1, cluster=7, space=0, addr=4096, size=8, space2=1, addr2=Y)
    return t


def test_st_async_fixed_the_waiter_fences_after_its_wait():
    assert findings(st_async_then_tma_store(fencer=1)) == set()


@pytest.mark.parametrize("fencer", [None, 0])
def test_st_async_racy_a_generic_write_the_waiter_did_not_fence(fencer):
    """The store is a generic-proxy write, the waiter's at its wait (rule 7):
    no fence, or a fence by another thread, leaves the TMA store's read a
    proxy_fence hazard naming the wait."""
    t = st_async_then_tma_store(fencer)
    result = assert_agree(t.events, [])
    assert result.triples() == [(len(t.events) - 1, int(K.PROXY_FENCE), 4)]
    assert int(result.findings["code"][0]) == R.PROXY_CP_ASYNC_DEST


def test_st_async_never_performed_is_no_write_for_the_proxy_rule():
    """A store on an mbarrier not yet initialized never completes a phase, so
    it is never performed; a wait on a later load's phase makes it happen
    before what follows (its TMA agent's later copy is known), but it is no
    write that a later async-proxy access must see fenced."""
    t = Trace()
    t.st_async(1, 0, space=1, addr=9, size=4, obj=MBAR)  # before the init: a misuse
    t.mbar_init(1, 0, obj=MBAR, arg=1)
    t.mbar_arrive(1, 0, obj=MBAR)
    load = dict(space=1, addr=8, size=16, space2=0, addr2=16, obj=MBAR)
    t.tma_load(1, 0, **load)
    t.mbar_arrive(1, 0, obj=MBAR)
    t.mbar_wait(1, 0, obj=MBAR, arg=1)
    t.tma_load(1, 0, **load)
    assert findings(t) == {
        (0, int(K.MBARRIER_MISUSE), -1),
        (3, int(K.UNINIT_READ), -1),
        (3, int(K.ASYNC_INFLIGHT), 0),
        (4, int(K.MBARRIER_MISUSE), -1),
        (6, int(K.UNINIT_READ), -1),
    }


def test_st_async_explained_as_a_store():
    from tracerace.report.explain import explain
    from tracerace.report.hints import hint

    f = assert_agree(st_async_to_peer(wait=False).events, []).findings[0]
    assert explain(f).startswith("st.async store issued")
    assert "the st.async store issued at" in hint(f).text


def test_op_space_is_checked_by_the_reader(tmp_path):
    from typer.testing import CliRunner

    from tracerace.cli import app
    from tracerace.trace.writer import write_table

    path = tmp_path / "t.arrow"
    write_table(
        path,
        dict(
            ts=[0, 1],
            op=["write", "bulk_copy_peer"],
            launch=0,
            block=0,
            thread=0,
            space=[1, 1],
            space2=[0, 0],
            addr=[0, 16],
            size=4,
            obj=64,
        ),
    )
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    line = result.stderr if result.stderr_bytes else result.output
    assert (
        f"{path}: row 1: op-space: bulk_copy_peer needs space 1 (shared) and space2 1 "
        "(shared); the row has space 1 and space2 0" in line
    )
    assert "Traceback" not in result.output


# -- red.async: a remote relaxed cluster-scope atomic completing bytes -----------
def red_async_pair(second: str, wait: bool = False) -> Trace:
    """Block 0 reduces into block 1's word Y by red.async, completing 4 bytes
    on block 1's mbarrier; then thread 1 of block 1 (``wait``: after waiting
    on the phase) accesses Y: ``second`` is "red" (another red.async, by
    block 2, of the same cluster), "atomic" (a cluster-scope atomic),
    "block_atomic" (a block-scope one) or "read"."""
    t = Trace()
    t.mbar_init(1, 0, cluster=7, obj=MBAR, arg=1)
    t.mbar_expect_tx(1, 0, cluster=7, obj=MBAR, arg=8 if second == "red" else 4)
    t.mbar_arrive(1, 0, cluster=7, obj=MBAR)
    t.init(1, 0, cluster=7, space=1, addr=Y, size=4)
    t.bar_sync(1, 0, cluster=7, obj=0, arg=2)
    t.bar_sync(1, 1, cluster=7, obj=0, arg=2)
    t.cluster_arrive(1, 0, cluster=7, arg=3)  # the init before every reduction
    t.cluster_arrive(0, 0, cluster=7, arg=3)
    t.cluster_arrive(2, 0, cluster=7, arg=3)
    for b in (1, 0, 2):
        t.cluster_wait(b, 0, cluster=7)
    t.red_async(0, 0, cluster=7, space=1, peer=1, addr=Y, size=4, obj=MBAR)
    if second == "red":
        t.red_async(2, 0, cluster=7, space=1, peer=1, addr=Y, size=4, obj=MBAR)
    if wait:
        t.mbar_wait(1, 1, cluster=7, obj=MBAR, arg=0)
    if second in ("atomic", "block_atomic"):
        scope = 3 if second == "atomic" else 2
        t.atomic(1, 1, cluster=7, space=1, addr=Y, size=4, scope=scope)
    elif second == "read":
        t.read(1, 1, cluster=7, space=1, addr=Y, size=4)
    return t


def test_red_async_two_reductions_do_not_race():
    assert findings(red_async_pair("red")) == set()


def test_red_async_and_a_cluster_scope_atomic_do_not_race():
    assert findings(red_async_pair("atomic")) == set()


def test_red_async_racy_with_an_atomic_of_a_narrower_scope():
    t = red_async_pair("block_atomic")
    assert findings(t) == {(len(t.events) - 1, int(K.ASYNC_INFLIGHT), 12)}


def test_red_async_racy_a_read_before_the_wait():
    t = red_async_pair("read")
    assert findings(t) == {(len(t.events) - 1, int(K.ASYNC_INFLIGHT), 12)}


def test_red_async_fixed_a_read_after_the_wait():
    assert findings(red_async_pair("read", wait=True)) == set()


def test_red_async_explained_as_a_reduction():
    from tracerace.report.explain import explain

    f = assert_agree(red_async_pair("read").events, []).findings[0]
    assert explain(f).startswith("red.async reduction issued")


def test_st_async_into_global_memory_is_refused_by_the_reader(tmp_path):
    from typer.testing import CliRunner

    from tracerace.cli import app
    from tracerace.trace.writer import write_table

    path = tmp_path / "t.arrow"
    write_table(
        path,
        dict(
            ts=[0, 1],
            op=["write", "st_async"],
            launch=0,
            block=0,
            thread=0,
            space=[1, 0],
            addr=[0, 16],
            size=4,
            obj=64,
        ),
    )
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        f"{path}: row 1: op-space: st_async needs space 1 (shared); the row has space 0"
        in result.output
    )


@pytest.mark.parametrize(
    "op, size, allowed",
    [
        ("st_async", 2, "4 or 8 or 16"),
        ("st_async", 12, "4 or 8 or 16"),
        ("red_async", 16, "4 or 8"),
    ],
)
def test_st_async_and_red_async_sizes_are_checked_by_the_reader(tmp_path, op, size, allowed):
    from typer.testing import CliRunner

    from tracerace.cli import app
    from tracerace.trace.writer import write_table

    path = tmp_path / "t.arrow"
    columns = dict(ts=[0, 1, 2], launch=0, block=0, thread=0, space=1, addr=0, obj=64)
    write_table(path, dict(columns, op=["st_async", "red_async", op], size=[16, 8, size]))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        f"{path}: row 2: op-size: {op} stores {allowed} bytes; the row has size {size}"
        in result.output
    )


def test_the_format_s_ops_are_all_replayed():
    from tracerace.trace.ops import OP_CODES, UNCHECKED_OPS

    assert not UNCHECKED_OPS and OP_CODES == {int(op) for op in Op}


def test_red_async_in_flight_hides_no_earlier_write():
    """A red.async still in flight has not written yet: the generic write it
    follows is still seen by a later async-proxy read of its thread, which
    needs its fence (rule 7), besides racing the reduction."""
    t = Trace()
    t.mbar_init(0, 0, obj=MBAR, arg=1)
    t.write(0, 0, space=1, addr=Y, size=4)
    t.bar_sync(0, 0, obj=0, arg=2)
    t.bar_sync(0, 1, obj=0, arg=2)
    t.red_async(0, 1, space=1, addr=Y, size=4, obj=MBAR)
    t.read(0, 0, space=1, addr=Y, size=4, proxy=1)
    assert findings(t) == {(5, int(K.ASYNC_INFLIGHT), 4), (5, int(K.PROXY_FENCE), 1)}


def test_red_async_in_flight_hides_no_earlier_atomic_from_a_tma_store():
    """Found by a random run of the generated traces, shrunk to three rows: a
    thread's relaxed atomic, then its red.async on the same bytes (on an
    mbarrier never initialized), then its TMA store reading them through the
    async proxy. The atomic is a generic write the store needs a fence after
    (rule 7), as well as the reduction in flight; both checkers say so."""
    common = {"launch": 0, "block": 0, "thread": 2, "cluster": 0, "ts": 0, "site": 0}
    events = [
        {**common, "op": 2, "space": 1, "addr": 0, "size": 4, "scope": 0, "sem": 0},
        {**common, "op": 107, "space": 1, "addr": 0, "size": 4, "obj": 64},
        {**common, "op": 51, "space": 0, "addr": 0, "space2": 1, "addr2": 0, "size": 4},
    ]
    ref = assert_agree(events, [], sizes=TINY)
    assert (2, int(K.PROXY_FENCE), 0) in ref.triples()
    assert (2, int(K.ASYNC_INFLIGHT), 1) in ref.triples()


# -- bulk reductions -------------------------------------------------------------
G = 4096  # a global word


def bulk_reduce_pair(second: str, wait: bool = False) -> Trace:
    """Thread 0 of block 0 reduces its shared X into global G by
    cp.reduce.async.bulk (after writing X and fencing the proxies); then
    thread 0 of block 1 accesses G (``wait``: after thread 0's bulk wait and
    a signal): ``second`` is "reduce" (its own bulk reduction), "atomic" (a
    device-scope generic atomic) or "read"."""
    t = Trace()
    t.init(0, 0, space=0, addr=G, size=8)
    for b in (0, 1):
        t.write(b, 0, space=1, addr=X, size=8)
        t.fence_proxy_async(b, 0)
    t.bulk_reduce(0, 0, space=0, addr=G, size=8, space2=1, addr2=X)
    if wait:
        t.bulk_commit(0, 0)
        t.bulk_wait(0, 0, arg=0)
        t.signal(0, 0, obj=1)
        t.wait(1, 0, obj=1)
    if second == "reduce":
        t.bulk_reduce(1, 0, space=0, addr=G, size=8, space2=1, addr2=X)
    elif second == "atomic":
        t.atomic(1, 0, space=0, addr=G, size=4, scope=4)
    else:
        t.read(1, 0, space=0, addr=G, size=4)
    return t


def test_bulk_reduce_two_reductions_do_not_race():
    assert findings(bulk_reduce_pair("reduce")) == set()


def test_bulk_reduce_racy_with_a_generic_atomic_of_another_proxy():
    """A device-scope atomicAdd is no reduction of the async proxy: it races
    the reduction in flight, and after the bulk wait without an edge to it."""
    t = bulk_reduce_pair("atomic")
    assert findings(t) == {(len(t.events) - 1, int(K.ASYNC_INFLIGHT), 5)}
    result = assert_agree(t.events, [])
    assert int(result.findings["code"][0]) == R.INFLIGHT_BULK_STORE
    t = Trace()
    t.init(0, 0, space=0, addr=G, size=8)
    t.write(0, 0, space=1, addr=X, size=8)
    t.fence_proxy_async(0, 0)
    t.bulk_reduce(0, 0, space=0, addr=G, size=8, space2=1, addr2=X)
    t.bulk_commit(0, 0)
    t.bulk_wait(0, 0, arg=0)
    t.atomic(1, 0, space=0, addr=G, size=4, scope=4)
    assert findings(t) == {(6, int(K.WAW), 3)}


def test_bulk_reduce_racy_a_read_before_the_bulk_wait():
    t = bulk_reduce_pair("read")
    assert findings(t) == {(len(t.events) - 1, int(K.ASYNC_INFLIGHT), 5)}


def test_bulk_reductions_explained_as_reductions():
    from tracerace.report.explain import explain

    f = assert_agree(bulk_reduce_pair("read").events, []).findings[0]
    assert explain(f).startswith("bulk reduction issued")
    f = assert_agree(bulk_reduce_peer_pair("read").events, []).findings[0]
    assert explain(f).startswith("bulk reduction issued")


def test_bulk_reduce_fixed_a_read_after_the_bulk_wait_and_a_signal():
    assert findings(bulk_reduce_pair("read", wait=True)) == set()
    assert findings(bulk_reduce_pair("atomic", wait=True)) == set()


def test_bulk_reduce_reads_its_source_by_the_async_proxy():
    t = bulk_reduce_pair("reduce")
    del t.events[2]  # block 0's fence after writing X
    assert findings(t) == {(4, int(K.PROXY_FENCE), 1)}


def test_bulk_reduce_reads_its_destination():
    """A reduction is a read-modify-write: into bytes nobody wrote, it reads
    uninitialized memory."""
    t = bulk_reduce_pair("reduce")
    del t.events[0]
    f = assert_agree(t.events, []).findings
    assert (f["kind"].tolist(), f["row"].tolist(), f["space"].tolist()) == (
        [int(K.UNINIT_READ)],
        [4],
        [0],
    )


def bulk_reduce_peer_pair(second: str, wait: bool = False) -> Trace:
    """Block 0 reduces its shared X into block 1's Y, completing 8 bytes on
    block 1's mbarrier; then ``second`` ("reduce": block 2 of the cluster
    does the same; "red": block 2 reduces Y by red.async; "read": thread 1 of
    block 1 reads Y, after a wait on the phase when ``wait``)."""
    t = Trace()
    t.mbar_init(1, 0, cluster=7, obj=MBAR, arg=1)
    t.mbar_expect_tx(1, 0, cluster=7, obj=MBAR, arg=16 if second == "reduce" else 8)
    t.mbar_arrive(1, 0, cluster=7, obj=MBAR)
    t.init(1, 0, cluster=7, space=1, addr=Y, size=8)
    t.bar_sync(1, 0, cluster=7, obj=0, arg=2)
    t.bar_sync(1, 1, cluster=7, obj=0, arg=2)
    for b in (1, 0, 2):
        t.cluster_arrive(b, 0, cluster=7, arg=3)  # the init before every reduction
    for b in (1, 0, 2):
        t.cluster_wait(b, 0, cluster=7)
    for b in (0, 2):
        t.write(b, 0, cluster=7, space=1, addr=X, size=8)
        t.fence_proxy_async(b, 0, cluster=7)
    reduce = dict(cluster=7, space=1, peer=1, addr=Y, size=8, space2=1, addr2=X, obj=MBAR)
    t.bulk_reduce_peer(0, 0, **reduce)
    if second == "reduce":
        t.bulk_reduce_peer(2, 0, **reduce)
    elif second == "red":
        t.red_async(2, 0, cluster=7, space=1, peer=1, addr=Y, size=4, obj=MBAR)
    if wait:
        t.mbar_wait(1, 1, cluster=7, obj=MBAR, arg=0)
    if second == "read":
        t.read(1, 1, cluster=7, space=1, addr=Y, size=4)
    return t


def test_bulk_reduce_peer_two_reductions_of_the_cluster_do_not_race():
    assert findings(bulk_reduce_peer_pair("reduce", wait=True)) == set()


def test_bulk_reduce_peer_racy_with_a_red_async_of_another_proxy():
    t = bulk_reduce_peer_pair("red")
    assert findings(t) == {(len(t.events) - 1, int(K.ASYNC_INFLIGHT), 16)}


def test_bulk_reduce_peer_racy_a_read_before_the_wait():
    t = bulk_reduce_peer_pair("read")
    result = assert_agree(t.events, [])
    assert result.triples() == [(len(t.events) - 1, int(K.ASYNC_INFLIGHT), 16)]
    f = result.findings
    assert (f["code"][0], f["obj"][0], f["aux"][0]) == (R.INFLIGHT_TMA_LOAD, MBAR, 0)


def test_bulk_reduce_peer_fixed_by_the_wait():
    assert findings(bulk_reduce_peer_pair("read", wait=True)) == set()


# -- cp.async tracked by an mbarrier ---------------------------------------------
A, B = 48, 56  # shared destinations of the producer's copies


def cp_tracked(
    noinc: bool = True,
    wait: bool = True,
    commit_between: bool = False,
    late_copy: bool = False,
    late_write: bool = False,
) -> Trace:
    """Thread 0 copies global memory to shared A (and B) by cp.async, then
    makes its copies arrive on mbarrier MBAR (``noinc``: as the phase's one
    expected arrival; else it then arrives itself); thread 1 waits on the
    phase (or not) and reads A and B. ``commit_between``: the copy to B is in
    a second group; ``late_copy``: the copy to B comes after the arrival;
    ``late_write``: thread 0 writes B itself after its copies, before the
    arrival."""
    t = Trace()
    t.mbar_init(0, 0, obj=MBAR, arg=1)
    t.init(0, 0, space=0, addr=G, size=16)
    t.cp_async(0, 0, space=1, addr=A, size=8, space2=0, addr2=G)
    if commit_between:
        t.cp_async_commit(0, 0)
    if not late_copy and not late_write:
        t.cp_async(0, 0, space=1, addr=B, size=8, space2=0, addr2=G + 8)
    if late_write:
        t.write(0, 0, space=1, addr=B, size=8)
    t.ev(Op.CP_ASYNC_MBAR_ARRIVE_NOINC if noinc else Op.CP_ASYNC_MBAR_ARRIVE, 0, 0, obj=MBAR)
    if late_copy:
        t.cp_async(0, 0, space=1, addr=B, size=8, space2=0, addr2=G + 8)
    if not noinc:
        t.mbar_arrive(0, 0, obj=MBAR)
    if wait:
        t.mbar_wait(0, 1, obj=MBAR, arg=0)
    t.read(0, 1, space=1, addr=A, size=8)
    t.read(0, 1, space=1, addr=B, size=8)
    return t


@pytest.mark.parametrize("noinc", [True, False])
@pytest.mark.parametrize("commit_between", [False, True])
def test_cp_async_mbar_arrive_fixed_the_wait_orders_the_copies(noinc, commit_between):
    """Copies of the open group and of committed ones alike arrive."""
    assert findings(cp_tracked(noinc=noinc, commit_between=commit_between)) == set()


def test_cp_async_mbar_arrive_racy_without_the_wait():
    t = cp_tracked(wait=False)
    result = assert_agree(t.events, [])
    n = len(t.events)
    assert result.triples() == [
        (n - 2, int(K.ASYNC_INFLIGHT), 2),
        (n - 1, int(K.ASYNC_INFLIGHT), 3),
    ]
    f = result.findings
    assert (f["code"][0], f["aux"][0]) == (R.INFLIGHT_CP_ASYNC, 1)


def test_cp_async_mbar_arrive_without_noinc_is_no_expected_arrival():
    """Without .noinc the copies' arrival is not one the phase expects: the
    thread's own arrival completes it, and without that the wait is a
    misuse and the copies stay in flight."""
    t = cp_tracked(noinc=False)
    del t.events[5]  # thread 0's own mbar_arrive
    assert misuses(t) == [R.MBAR_PHASE_NEVER_COMPLETED]
    assert (6, int(K.ASYNC_INFLIGHT), 2) in findings(t)


def test_cp_async_mbar_arrive_noinc_counts_an_expected_arrival():
    """With .noinc the arrival is counted at its row: one more than is
    pending (the phase expects none after an arrive-and-drop) is a misuse."""
    t = Trace()
    t.mbar_init(0, 0, obj=MBAR, arg=1)
    t.mbar_arrive_drop(0, 0, obj=MBAR)
    t.cp_async_mbar_arrive_noinc(0, 0, obj=MBAR)
    assert misuses(t) == [R.MBAR_ARRIVAL_UNDERFLOW]
    t.events[2]["op"] = int(Op.CP_ASYNC_MBAR_ARRIVE)
    assert misuses(t) == []


def test_cp_async_mbar_arrive_racy_a_copy_after_the_arrival_is_not_tracked():
    t = cp_tracked(late_copy=True)
    result = assert_agree(t.events, [])
    assert result.triples() == [(len(t.events) - 1, int(K.ASYNC_INFLIGHT), 4)]


def test_cp_async_mbar_arrive_racy_the_thread_s_rows_after_its_copies_are_not_released():
    t = cp_tracked(late_write=True)
    assert findings(t) == {(len(t.events) - 1, int(K.RAW), 3)}


def cp_tracked_then_tma_store(fencer: int | None, issuer_waits: bool = False) -> Trace:
    """After the wait, thread 1 stores A to global memory by a TMA store (an
    async-proxy read); thread ``fencer`` fences the proxies first (after its
    wait; thread 0 then signals thread 1). ``issuer_waits``: thread 0 commits
    its copies and waits for them by cp_async_wait before they arrive. Each
    row's site is its row."""
    t = cp_tracked()
    del t.events[-2:]  # the reads
    if issuer_waits:
        for op in (Op.CP_ASYNC_WAIT, Op.CP_ASYNC_COMMIT):
            t.events.insert(4, dict(op=int(op), launch=0, block=0, thread=0, arg=0))
    if fencer is not None:
        t.fence_proxy_async(0, fencer)
        if fencer == 0:  # then hands A to thread 1
            t.signal(0, 0, obj=1)
            t.wait(0, 1, obj=1)
    t.tma_store(0, 1, space=0, addr=G + 64, size=8, space2=1, addr2=A)
    for i, e in enumerate(t.events):
        e["ts"], e["site"] = i, i
    return t


def test_cp_async_mbar_arrive_fixed_the_waiter_fences_after_its_wait():
    assert findings(cp_tracked_then_tma_store(fencer=1)) == set()


@pytest.mark.parametrize("fencer", [None, 0])
def test_cp_async_mbar_arrive_racy_the_copy_is_the_waiter_s_write(fencer):
    """Retired by the mbar_wait, the copy's destination is a generic write of
    the waiter, performed at the wait (rule 7): a fence by the issuer does
    not cover it."""
    t = cp_tracked_then_tma_store(fencer)
    result = assert_agree(t.events, [])
    assert result.triples() == [(len(t.events) - 1, int(K.PROXY_FENCE), 2)]
    f = result.findings
    assert (f["code"][0], f["aux"][0]) == (R.PROXY_CP_ASYNC_MBAR_DEST, 5)  # the mbar_wait's site


def test_cp_async_mbar_arrive_retired_first_by_the_issuer_s_wait():
    """A cp_async_wait of the issuer before the mbar_wait retires the copies
    first: they are the issuer's writes, and its fence covers them."""
    assert findings(cp_tracked_then_tma_store(fencer=0, issuer_waits=True)) == set()
    t = cp_tracked_then_tma_store(fencer=1, issuer_waits=True)
    result = assert_agree(t.events, [])
    assert result.triples() == [(len(t.events) - 1, int(K.PROXY_FENCE), 2)]
    f = result.findings
    assert (f["code"][0], f["aux"][0]) == (R.PROXY_CP_ASYNC_DEST, 5)  # the cp_async_wait's site


def test_cp_async_mbar_arrive_explained_as_the_waiter_s_write():
    from tracerace.report.explain import explain
    from tracerace.report.hints import hint

    f = assert_agree(cp_tracked_then_tma_store(None).events, []).findings[0]
    assert "arrived on an mbarrier (cp.async.mbarrier.arrive)" in explain(f)
    assert "by the thread of that wait" in hint(f).text


def test_cp_async_mbar_arrive_on_another_block_s_mbarrier_is_refused(tmp_path):
    from typer.testing import CliRunner

    from tracerace.cli import app
    from tracerace.trace.writer import write_table

    path = tmp_path / "t.arrow"
    write_table(
        path,
        dict(
            ts=[0, 1],
            op=["mbar_init", "cp_async_mbar_arrive_noinc"],
            launch=0,
            block=0,
            thread=0,
            peer=[0, 1],
            obj=64,
            arg=[1, 0],
        ),
    )
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        f"{path}: row 1: op-space: cp_async_mbar_arrive_noinc arrives on an mbarrier of its "
        "own block: peer must be the row's block 0, the row has peer 1" in result.output
    )


def test_a_cluster_barrier_mismatch_is_worded_for_the_cluster():
    from tracerace.report.explain import explain
    from tracerace.report.hints import hint

    t = Trace()
    t.cluster_arrive(0, 0, cluster=7, arg=2)
    t.cluster_wait(0, 0, cluster=7)
    f = assert_agree(t.events, []).findings[0]
    assert explain(f).startswith(
        "the barrier of cluster 7 ends the trace with an incomplete generation: only 1 arrival"
    )
    assert "every thread of cluster 7 arrive at the cluster barrier" in hint(f).text


def info_of(**cols):
    """``trace_info`` of two rows by thread 0 of block 0, at times 0 and 1, on
    mbarrier 64 of peer block 1."""
    from tracerace.trace.info import trace_info
    from tracerace.trace.writer import make_table

    return trace_info(
        make_table(dict(ts=[0, 1], launch=0, block=0, thread=0, peer=1, obj=64, **cols))
    )


def test_info_counts_the_bytes_st_async_and_red_async_store():
    info = info_of(op=["st_async", "red_async"], space=1, addr=[32, 8], size=[16, 4])
    shared = info.spaces["shared"]
    assert (shared.accesses, shared.lo, shared.hi) == (2, 8, 48)


def test_info_counts_both_sides_of_bulk_reductions():
    info = info_of(
        op=["bulk_reduce", "bulk_reduce_peer"],
        space=[0, 1],
        addr=[4096, 64],
        space2=1,
        addr2=[0, 32],
        size=16,
    )
    glob, shared = info.spaces["global"], info.spaces["shared"]
    assert (glob.accesses, glob.lo, glob.hi) == (1, 4096, 4112)
    assert (shared.accesses, shared.lo, shared.hi) == (3, 0, 80)
