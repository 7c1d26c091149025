"""A check split into shards (tracerace.parallel, engine.shards) gives what one
state gives: every field of every finding, batch by batch, the error of a bad
trace, and the report's bytes in every format."""

from __future__ import annotations

import io
import os
import threading

import numpy as np
import pyarrow as pa
import pytest
from builders import SimpleReader, columns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracegen import traces

from tracerace import api
from tracerace.api import sharded
from tracerace.checker import parallel
from tracerace.checker.engine import check_trace
from tracerace.checker.engine.layout import NF
from tracerace.checker.findings import sort_findings
from tracerace.checker.options import make_options
from tracerace.errors import TraceError
from tracerace.group.fold import scan
from tracerace.report.output import render
from tracerace.trace.writer import write_table

SETTINGS = dict(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
FORMATS = ["text", "json", "sarif", "html", "arrow"]


SCALE = float(os.environ.get("TRACERACE_SCALE", "1"))
"""The scale-marked search looks at 200 x SCALE generated traces (2,000 at 10)."""


def single_chunks(cols, splits, **options):
    chunks = []
    try:
        result = check_trace(SimpleReader(cols, splits), on_findings=chunks.append, **options)
    except TraceError as err:
        return err
    return result.events, [sort_findings(c) for c in chunks], [scan(c)[0] for c in chunks]


def sharded_chunks(cols, splits, shards, threads=False, **options):
    """The shards one after the other, or (``threads``) on a thread each,
    replaying the batches of one shared reader."""
    from concurrent.futures import ThreadPoolExecutor

    chunks = []
    try:
        with ThreadPoolExecutor(max_workers=shards) as pool:
            events = parallel.check_shards(
                lambda: SimpleReader(cols, splits),
                shards,
                chunks.append,
                batch_size=1 << 20,
                pool=pool if threads else None,
                shared_reader=threads,
                **options,
            )
    except TraceError as err:
        return err
    return events, [sort_findings(c) for c in chunks], [scan(c)[0] for c in chunks]


def assert_same(single, sharded):
    if isinstance(single, TraceError) or isinstance(sharded, TraceError):
        assert isinstance(single, TraceError) and isinstance(sharded, TraceError)
        assert str(single) == str(sharded)
        return
    assert single[0] == sharded[0]
    assert len(single[1]) == len(sharded[1])  # one hand-over per batch, and the last
    # A batch is merged in canonical order where one state hands it over so
    # (the grouping would sort it again: ``merge_records``).
    assert all(many or not one for one, many in zip(single[2], sharded[2]))
    for one, many in zip(single[1], sharded[1]):
        assert one.shape == many.shape, (one, many)
        for name in one.dtype.names:
            np.testing.assert_array_equal(one[name], many[name], err_msg=name)


def straddles(events, stretch_shift):
    """Whether some access or copy of ``events`` crosses a stretch boundary."""
    for ev in events:
        size = ev.get("size", 0)
        for key in ("addr", "addr2"):
            addr = ev.get(key)
            if (
                addr is not None
                and size > 0
                and addr >> stretch_shift != (addr + size - 1) >> stretch_shift
            ):
                return True
    return False


@settings(max_examples=120, **SETTINGS)
@given(events=traces(max_events=80, large=True), data=st.data())
def test_shards_find_what_one_state_finds(events, data):
    """Shard counts 1 to 7, pages of 32 or 64 bytes and stretches of one or two
    pages, so that large accesses and copies cross stretches and pages."""
    page_shift = data.draw(st.sampled_from([5, 6]))
    options = dict(page_shift=page_shift, stretch_shift=page_shift + data.draw(st.integers(0, 1)))
    shards = data.draw(st.integers(1, 7))
    splits = data.draw(st.lists(st.integers(0, max(1, len(events))), max_size=3))
    cols = columns(events)
    single = single_chunks(cols, splits, page_shift=page_shift)
    assert_same(single, sharded_chunks(cols, splits, shards, **options))


@settings(max_examples=40, **SETTINGS)
@given(events=traces(max_events=80, large=True), data=st.data())
def test_shards_on_threads_with_one_reader_find_what_one_state_finds(events, data):
    """As above, the shards on a thread each, every batch read once for all."""
    page_shift = data.draw(st.sampled_from([5, 6]))
    shards = data.draw(st.integers(2, 7))
    splits = data.draw(st.lists(st.integers(0, max(1, len(events))), max_size=3))
    cols = columns(events)
    assert_same(
        single_chunks(cols, splits, page_shift=page_shift),
        sharded_chunks(
            cols, splits, shards, threads=True, page_shift=page_shift, stretch_shift=page_shift
        ),
    )


@pytest.mark.parametrize("shared", [False, True])
def test_a_shared_reader_reads_the_trace_once(shared):
    """With a shared reader the trace is opened and read once for all the
    shards; without, once by each."""
    from concurrent.futures import ThreadPoolExecutor

    from builders import Trace

    t = Trace()
    for i in range(40):
        t.write(0, i % 4, addr=4 * i, size=4)
    cols = columns(t.events)
    opened = []

    def source():
        opened.append(1)
        return SimpleReader(cols, [10, 20, 30])

    found = []
    with ThreadPoolExecutor(max_workers=3) as pool:
        events = parallel.check_shards(
            source, 3, found.append, batch_size=1 << 20, pool=pool, shared_reader=shared
        )
    assert events == 40 and len(found) == 5  # four batches and the end
    assert len(opened) == (1 if shared else 3)


def three_writers() -> dict:
    """The columns of 30 writes by three threads, each to its own word."""
    from builders import Trace

    t = Trace()
    for i in range(30):
        t.write(0, i % 3, addr=4 * i, size=4)
    return columns(t.events)


def check_in_three_shards(source, found: list, pool) -> int:
    """``check_shards`` of ``source`` in three shards with one shared reader."""
    return parallel.check_shards(
        source, 3, found.append, batch_size=1 << 20, pool=pool, shared_reader=True
    )


def test_a_shared_reader_hands_its_error_to_every_shard():
    """A reader that fails at its third batch: every shard replays the two
    before it and stops with its error, as with a reader each."""
    from concurrent.futures import ThreadPoolExecutor

    cols = three_writers()

    class Failing(SimpleReader):
        def __iter__(self):
            for k, batch in enumerate(super().__iter__()):
                if k == 2:
                    raise TraceError("broken batch", path="test.arrow", row=20, rule="io")
                yield batch

    found = []
    with ThreadPoolExecutor(max_workers=3) as pool:
        with pytest.raises(TraceError, match="broken batch"):
            check_in_three_shards(lambda: Failing(cols, [10, 20]), found, pool)
    assert len(found) == 2


def test_a_shard_thread_that_cannot_start_stops_the_check():
    """Under a memory limit the pool may start the first shard's thread and
    not the second's: the check raises that refusal (the command makes it its
    out-of-memory line) instead of leaving the first shard waiting for a
    reader that was stopped, and the shard that ran ends."""
    from concurrent.futures import ThreadPoolExecutor

    cols = three_writers()

    class OneThread(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            if submitted:
                raise RuntimeError("can't start new thread")
            submitted.append(fn)
            return super().submit(fn, *args, **kwargs)

    submitted: list = []
    found: list = []
    raised: list = []

    def run() -> None:
        with OneThread(max_workers=3) as pool:
            try:
                check_in_three_shards(lambda: SimpleReader(cols, [10, 20]), found, pool)
            except RuntimeError as err:
                raised.append(err)

    # On a thread of its own, so that a check that hangs fails the test
    checking = threading.Thread(target=run, daemon=True)
    checking.start()
    checking.join(timeout=60)
    assert not checking.is_alive(), "the check waits for ever"
    assert [str(err) for err in raised] == ["can't start new thread"]
    assert len(submitted) == 1 and found == []


def test_shards_in_step_hand_over_one_batch_ahead_at_most():
    """A merger in step keeps a shard that finished batch 1 waiting until
    every shard handed over batch 0, when it holds findings enough (it would
    hold each batch's findings it ran ahead by), and lets it on once they
    have; ``stop`` (a shard failed) lets a waiting shard hand over at once.
    A merger with room for them makes no shard wait."""
    rows = parallel.found_of(np.zeros((1, NF + 1), np.int64))
    consumed: list = []
    merger = parallel.Merger(2, consumed.append, in_step=True, hold=rows.nbytes)
    merger.add(0, 0, [rows])
    ahead = threading.Thread(target=merger.add, args=(0, 1, [rows]), daemon=True)
    ahead.start()
    ahead.join(timeout=0.5)
    assert ahead.is_alive() and consumed == []  # waits for shard 1's batch 0
    merger.add(1, 0, [rows])
    ahead.join(timeout=30)
    assert not ahead.is_alive() and len(consumed) == 1  # batch 0 merged, batch 1 held
    waiting = threading.Thread(target=merger.add, args=(1, 3, [rows]), daemon=True)
    waiting.start()
    waiting.join(timeout=0.5)
    assert waiting.is_alive()
    merger.stop()
    waiting.join(timeout=30)
    assert not waiting.is_alive() and merger._parts[3][1] is not None
    roomy = parallel.Merger(2, consumed.append, in_step=True, hold=4 * rows.nbytes)
    roomy.add(0, 0, [rows])
    roomy.add(0, 1, [rows])  # would wait for ever on this thread if it waited
    roomy.add(1, 0, [rows])
    assert len(consumed) == 2


def test_a_shard_waiting_on_a_closed_shared_reader_raises():
    """A view of a shared reader closed before its first batch raises
    ``ReaderStopped``; it does not wait for ever."""
    shared = parallel.SharedReader(SimpleReader(columns([]), []), 2)
    shared.close()
    with pytest.raises(parallel.ReaderStopped):
        next(iter(shared.view(0)()))


@pytest.mark.scale
@settings(max_examples=max(50, int(200 * SCALE)), **SETTINGS)
@given(events=traces(max_events=200, large=True, max_launches=3), data=st.data())
def test_shards_find_what_one_state_finds_at_length(events, data):
    page_shift = data.draw(st.sampled_from([5, 6]))
    shards = data.draw(st.integers(2, 7))
    splits = data.draw(st.lists(st.integers(0, max(1, len(events))), max_size=5))
    cols = columns(events)
    assert_same(
        single_chunks(cols, splits, page_shift=page_shift),
        sharded_chunks(cols, splits, shards, page_shift=page_shift, stretch_shift=page_shift),
    )


def test_generated_traces_cross_stretches():
    """The property above meets accesses that two shards check in part."""
    from hypothesis import Phase, find

    find(
        traces(max_events=80, large=True),
        lambda evs: straddles(evs, 7),
        settings=settings(max_examples=1000, database=None, phases=[Phase.generate], **SETTINGS),
    )


def rendered(report, fmt):
    if fmt == "arrow":
        buf = io.BytesIO()
        render(report, fmt, buf)
        return buf.getvalue()
    buf = io.StringIO()
    render(report, fmt, buf)
    return buf.getvalue()


def write(path, events):
    write_table(path, pa.table(columns(events)), sites=[f"k.cu:{i}" for i in range(8)])
    return str(path)


@settings(max_examples=25, **SETTINGS)
@given(events=traces(max_events=80, large=True), data=st.data())
def test_sharded_reports_are_the_same_bytes(events, data, tmp_path_factory):
    path = write(tmp_path_factory.mktemp("t") / "t.arrow", events)
    shards = data.draw(st.integers(2, 7))
    options = make_options(max_reports="all")
    one, many = sharded.check_reports(
        [path, path], options, jobs=shards, shards=[1, shards], page_shift=5, stretch_shift=5
    )
    if isinstance(one, TraceError):
        assert str(one) == str(many)
        return
    assert one.exit_code == many.exit_code
    assert one.summary["racy_rows"] == many.summary["racy_rows"]
    for fmt in FORMATS:
        assert rendered(one, fmt) == rendered(many, fmt), fmt


def test_one_shard_is_the_api_check(tmp_path):
    """A check in one shard (the pool's path) reports what ``api.check`` does."""
    from tracerace.scenarios import SCENARIOS

    scenario = next(iter(SCENARIOS.values()))
    path = str(scenario.write(str(tmp_path / "s.arrow"), fixed=False, scale=1, seed=0))
    [report] = sharded.check_reports([path], make_options(), jobs=1)
    direct = api.check(path)
    for fmt in FORMATS:
        assert rendered(direct, fmt) == rendered(report, fmt), fmt
    in_shards = api.check(path, jobs=3)
    for fmt in FORMATS:
        assert rendered(direct, fmt) == rendered(in_shards, fmt), fmt


def ev(op, thread, addr, size, **kw):
    return {
        "op": int(op),
        "launch": 0,
        "block": 0,
        "thread": thread,
        "space": 0,
        "addr": addr,
        "size": size,
        **kw,
    }


def numbered(events):
    return [{**e, "ts": i} for i, e in enumerate(events)]


# Pages of 32 bytes, stretches of one page: the accesses below cross 5 stretches.
SMALL = dict(page_shift=5, stretch_shift=5)


@pytest.mark.parametrize("shards", range(2, 8))
def test_an_uninitialized_read_spans_the_bytes_of_every_shard(shards):
    """A read of 160 bytes, 40..150 never written: the finding spans the first
    and the last uninitialized byte, whichever shards own them."""
    from tracerace.trace.ops import Op

    events = numbered([ev(Op.INIT, 0, 0, 40), ev(Op.INIT, 0, 150, 10), ev(Op.READ, 1, 0, 160)])
    cols = columns(events)
    single = single_chunks(cols, [], page_shift=5)
    [found] = [c for c in single[1] if len(c)]
    assert (found["addr"][0], found["size"][0]) == (40, 110)
    assert_same(single, sharded_chunks(cols, [], shards, **SMALL))


@pytest.mark.parametrize("shards", range(2, 8))
def test_a_race_names_the_latest_earlier_access_of_any_shard(shards):
    """Two writes in two stretches, one read over both: the finding names the
    later write and its bytes, as one state does."""
    from tracerace.trace.ops import Op

    events = numbered(
        [
            ev(Op.WRITE, 0, 0, 32),
            ev(Op.WRITE, 0, 64, 32),
            ev(Op.READ, 1, 0, 96),
            ev(Op.WRITE, 2, 40, 100),
        ]
    )
    cols = columns(events)
    single = single_chunks(cols, [], page_shift=5)
    [found] = [c for c in single[1] if len(c)]
    assert found["prev_row"][0] == 1
    assert_same(single, sharded_chunks(cols, [], shards, **SMALL))


@pytest.mark.parametrize("shards", range(2, 8))
def test_a_copy_between_two_shards(shards):
    """A cp.async from global bytes one shard owns to shared bytes another owns,
    read before its wait: in flight, and racing a write of its source."""
    from tracerace.trace.ops import Op

    events = numbered(
        [
            ev(Op.INIT, 0, 0, 256),
            ev(Op.CP_ASYNC, 0, 160, 64, space=1, space2=0, addr2=40),
            ev(Op.READ, 0, 170, 40, space=1),
            ev(Op.WRITE, 1, 30, 80),
        ]
    )
    cols = columns(events)
    single = single_chunks(cols, [], page_shift=5)
    assert sum(len(c) for c in single[1]) >= 2
    assert_same(single, sharded_chunks(cols, [], shards, **SMALL))


def test_each_shard_checks_only_the_bytes_it_owns():
    """The shards of a read over five stretches each report the uninitialized
    bytes of their own stretches: together, the read's."""
    from tracerace.checker.engine.layout import F_ADDR, F_SIZE
    from tracerace.trace.ops import Op

    events = numbered([ev(Op.READ, 1, 0, 160)])
    cols = columns(events)
    spans = []
    for k in range(3):
        rows = []
        check_trace(SimpleReader(cols), shard=(k, 3), raw=True, on_findings=rows.append, **SMALL)
        found = np.concatenate(rows)
        spans += [(int(r[F_ADDR]), int(r[F_ADDR] + r[F_SIZE])) for r in found]
    assert len(spans) >= 2 and min(s[0] for s in spans) == 0 and max(s[1] for s in spans) == 160
    assert all(hi - lo < 160 for lo, hi in spans)  # none read all of it


def report_of_one_state(path, options, **engine_options):
    """The report of ``path`` checked by one state, as ``api.check`` makes it,
    with the engine's test options."""
    from tracerace.group.groups import GroupBuilder
    from tracerace.report import Report
    from tracerace.trace.reader import open_trace

    with open_trace(path, batch_size=options.batch_size) as reader:
        builder = GroupBuilder(reader.meta, options.kinds)
        result = check_trace(reader, on_findings=builder.add, **engine_options)
        return Report(result.events, reader.meta, builder.table(), options)


def out_of_order_at_a_launch_end():
    """Launch 0 opens a barrier generation at row 0 that never completes, then
    two threads race on twelve words; launch 1 closes launch 0, which then
    reports the barrier at row 0, after every race of later rows."""
    from builders import Trace

    t = Trace().bar_arrive(0, 0, arg=2)
    for i in range(12):
        t.write(0, 1, addr=4 * i, size=4, site=1).write(0, 2, addr=4 * i, size=4, site=2)
    t.launch = 1
    t.write(0, 0, addr=0, size=4, site=3)
    return t.events


@pytest.mark.parametrize("shards", [2, 3])
def test_a_full_findings_pool_hands_over_at_the_batch_end(shards, tmp_path):
    """A findings pool of four rows that fills up mid-batch (``handover_rows``):
    one state hands the batch's findings over at its end, as shards do, so
    group ids and every report format are the same, and the reference's."""
    from tracerace.checker.engine.pools import Sizes

    path = write(tmp_path / "t.arrow", out_of_order_at_a_launch_end())
    options = make_options(max_reports="all")
    small = dict(sizes=Sizes.tiny(), handover_rows=4)
    one = report_of_one_state(path, options, **small)
    [many] = sharded.check_reports([path], options, jobs=shards, shards=[shards], **small)
    definition = api.check(path, engine="reference", max_reports="all")
    assert one.summary["racy_rows"] == many.summary["racy_rows"] > 4
    for fmt in FORMATS:
        assert rendered(one, fmt) == rendered(many, fmt) == rendered(definition, fmt), fmt


@settings(max_examples=60, **SETTINGS)
@given(events=traces(max_events=80, large=True), data=st.data())
def test_one_state_hands_over_per_batch_whatever_its_pool(events, data):
    """Tiny tables and a hand-over at a few findings: still one hand-over per
    batch, and the last, with the findings shards give and the reference
    checker hands over."""
    from tracerace.checker.engine.pools import Sizes

    small = dict(sizes=Sizes.tiny(), handover_rows=data.draw(st.sampled_from([1, 4, 8])))
    shards = data.draw(st.integers(1, 4))
    splits = data.draw(st.lists(st.integers(0, max(1, len(events))), max_size=3))
    cols = columns(events)
    single = single_chunks(cols, splits, **small)
    assert_same(single, sharded_chunks(cols, splits, shards, **small))
    assert_same(single, reference_chunks(cols, splits))


def reference_chunks(cols, splits):
    from tracerace.checker import reference

    chunks = []
    try:
        result = reference.check_trace(SimpleReader(cols, splits), on_findings=chunks.append)
    except TraceError as err:
        return err
    return result.events, [sort_findings(c) for c in chunks], [True] * len(chunks)  # (any order)


@pytest.mark.parametrize("shards", range(1, 8))
def test_stretches_are_dealt_evenly_and_strides_spread(shards):
    """Each deal of consecutive stretches goes to the shards in turn, so a
    dense buffer is split evenly, and so are the blocks' shared memories;
    stretches N apart (the pathology of a plain round-robin) still reach
    every shard about evenly, the hash picking where each deal starts."""
    from tracerace.checker.engine import EngineState
    from tracerace.checker.engine.shards import DEAL_SHIFT, shard_of
    from tracerace.checker.jit import from_python
    from tracerace.trace import ops as O

    sv = EngineState(shard=(0, shards)).sv
    owner = from_python(shard_of)
    deal = 1 << DEAL_SHIFT
    for space in (O.SPACE_GLOBAL, O.SPACE_LOCAL):
        for first in range(5 * deal, 9 * deal, deal):
            dealt = [owner(sv, space, 0, u) for u in range(first, first + deal)]
            counts = np.bincount(dealt, minlength=shards)
            assert counts.max() - counts.min() <= 1, counts
        strided = [owner(sv, space, 0, u) for u in range(0, 400 * shards * deal, shards)]
        counts = np.bincount(strided, minlength=shards)
        assert counts.min() > 0.7 * len(strided) / shards, counts
    dealt = [owner(sv, O.SPACE_SHARED, block, 0) for block in range(6 * shards)]
    assert np.bincount(dealt, minlength=shards).tolist() == [6] * shards


def test_a_shard_skips_the_reads_and_writes_it_does_not_own():
    """A thread does an atomic, then writes eight stretches, one write each:
    a shard of two replays the atomic (whoever owns its bytes: it
    synchronizes) and the four writes it owns, its read-ahead lists only
    theirs, and its agent's epoch counts every event, as one state's does."""
    from tracerace.checker.engine import EngineState
    from tracerace.checker.engine.check import close_launch, replay_batch
    from tracerace.checker.engine.granules import global_accesses
    from tracerace.checker.engine.layout import AG_EPOCH
    from tracerace.checker.engine.shards import shard_of
    from tracerace.checker.jit import from_python
    from tracerace.trace import ops as O
    from tracerace.trace.ops import Op

    owner = from_python(shard_of)
    events = numbered(
        [ev(Op.ATOMIC, 0, 36, 4, sem=0)] + [ev(Op.WRITE, 0, 32 * s + 4, 8) for s in range(8)]
    )
    (batch,) = SimpleReader(columns(events))
    for k in range(2):
        st = EngineState(page_shift=5, shard=(k, 2), stretch_shift=5)
        gpos = global_accesses(batch, st.sv)
        mine = [s for s in range(8) if owner(st.sv, O.SPACE_GLOBAL, 0, s) == k]
        assert gpos.tolist() == [0] + [1 + s for s in mine]
        replay_batch(st, batch, None, gpos)
        assert st.arrays["ag"][0, AG_EPOCH] == 9  # every event counted, as one state does
        close_launch(st)
    single = EngineState(page_shift=5)
    assert global_accesses(batch, single.sv).tolist() == list(range(9))
    replay_batch(single, batch, None)
    assert single.arrays["ag"][0, AG_EPOCH] == 9
