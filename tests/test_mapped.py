"""MappedArray: growth in place keeps the rows in use; the engine's pools use it."""

import threading

import numpy as np

from tracerace.checker.engine import EngineState, check_trace, faulter
from tracerace.checker.engine.check import replay_batch
from tracerace.checker.engine.layout import GR_GRAN, SV_GRAN_COUNT
from tracerace.checker.engine.mapped import MappedArray, can_populate
from tracerace.checker.engine.pools import AG_FAULT_AHEAD, FAULT_AHEAD, MAPPED, Sizes
from tracerace.checker.engine.shadow import GRAN_DENSE_MIN, gran_limit
from tracerace.trace.ops import Op, Space
from tracerace.trace.writer import make_table


def granules(rows: int) -> Sizes:
    """The default sizes with a granule table of ``rows``."""
    default = Sizes()
    return Sizes(rows={**default.rows, "gran": rows})


def test_grow_in_place_keeps_rows_and_zero_fills():
    m = MappedArray(4, 3)
    m.array[:] = np.arange(12).reshape(4, 3)
    grown = m.grow(1 << 16, used=4)
    assert grown.shape == (1 << 16, 3)
    assert grown[:4].tolist() == np.arange(12).reshape(4, 3).tolist()
    assert not grown[4:].any()
    assert m.copies == 0


def test_grow_with_a_view_held_copies_the_used_rows():
    m = MappedArray(8)
    m.array[:] = np.arange(8)
    held = m.array[2:5]  # a view the mapping cannot move under
    grown = m.grow(64, used=6)
    assert m.copies == 1
    assert grown[:6].tolist() == list(range(6))
    assert held.tolist() == [2, 3, 4]


def test_engine_pools_grow_without_copying():
    """Many nodes and clocks from tiny starting pools: every growth is a resize."""
    default = Sizes()
    sizes = Sizes(rows={**default.rows, **{name: 4 for name in MAPPED}}, arena=16)
    # Rounds of one shared read per thread (distinct addresses: nodes) and
    # a bar_sync of all 64 threads (clock snapshots in the arena).
    rounds, threads = 60, 64
    op = np.tile(np.repeat([int(Op.READ), int(Op.BAR_SYNC)], threads), rounds)
    thread = np.tile(np.arange(threads), 2 * rounds)
    addr = np.arange(2 * rounds * threads) * 4
    n = op.size
    table = make_table(
        {
            "ts": np.arange(n),
            "op": op,
            "launch": 0,
            "block": 0,
            "thread": thread,
            "space": int(Space.SHARED),
            "addr": addr,
            "size": 4,
            "obj": 0,
            "arg": threads,
        }
    )
    from tracerace.trace.reader import open_trace

    st = EngineState(sizes=sizes)
    with open_trace(table) as reader:
        for batch in reader:
            replay_batch(st, batch, None)
    assert st.arrays["nodes"].shape[0] > 4
    assert st.arena_a.shape[0] > 16
    assert all(m.copies == 0 for m in st.mapped.values())


def test_populate_keeps_contents_and_stops_at_the_mapping():
    m = MappedArray(64, 2, reserve=1 << 12)
    assert m.capacity == 1 << 12
    m.array[:] = 5
    faulted = m.populate(1 << 20)  # asks for more than the mapping holds
    if can_populate():
        assert faulted and m.populated == m.capacity
        assert not m.populate(1 << 20)  # nothing left to do
    else:  # no MADV_POPULATE_WRITE here: a no-op
        assert not faulted and m.populated == 0
    assert (m.array == 5).all()
    grown = m.grow(1 << 11, used=64)  # within the reservation: no resize, no copy
    assert grown.shape == (1 << 11, 2) and (grown[:64] == 5).all() and not grown[64:].any()
    assert m.copies == 0


def test_engine_prefault_runs_ahead_of_the_pools():
    st = EngineState()
    while st.prefault():
        pass
    for name in ("nodes", "cold", "arena_a", "arena_e", "ag"):  # not "shades": sparse
        m = st.mapped[name]
        ahead = AG_FAULT_AHEAD if name == "ag" else FAULT_AHEAD
        expect = min(m.capacity, ahead) if can_populate() else 0
        assert m.populated == expect


def _shared_reads(n_granules: int):
    """One thread writing ``n_granules`` distinct shared granules."""
    return make_table(
        {
            "ts": np.arange(n_granules),
            "op": int(Op.WRITE),
            "launch": 0,
            "block": 0,
            "thread": 0,
            "space": int(Space.SHARED),
            "addr": np.arange(n_granules) * 4,
            "size": 4,
        }
    )


def _replay_with_prefault(rows_total, batch_size=64):
    """Replay a trace that fills a tiny granule table many times, running
    ``prefault`` (as the faulter would) between batches."""
    from tracerace.trace.reader import open_trace

    table = _shared_reads(4096)
    st = EngineState(sizes=granules(64))
    st.rows_total = rows_total
    with open_trace(table, batch_size=batch_size) as reader:
        for batch in reader:
            replay_batch(st, batch, None)
            st.batch_done(st.rows_done + batch.n)
            while st.prefault():
                pass
    return st


def test_spare_granule_table_is_taken_by_the_next_growth():
    st = _replay_with_prefault(rows_total=4096)
    # 4,096 granules from a 64-row table: eight doublings (a table grows
    # before an access could fill it past half). The last four go into a
    # table the faulter had filled; the first ones pass from 40% to half
    # full within one batch of 64 rows, before the faulter could look.
    assert st.arrays["gran"].shape[0] == 1 << 14
    assert st.spares_taken >= 4
    assert int(st.sv[SV_GRAN_COUNT]) == 4096
    # No spare is left: the last table is a quarter full and the trace is over.
    assert st.spare_gran is None


def test_a_large_granule_table_fills_to_three_quarters():
    """From GRAN_DENSE_MIN slots on, the table grows only past three quarters
    full (a smaller one, at half): 60% of a table of that size stays in it."""
    from tracerace.trace.reader import open_trace

    n = GRAN_DENSE_MIN * 3 // 5
    assert GRAN_DENSE_MIN // 2 < n < gran_limit(GRAN_DENSE_MIN)
    assert gran_limit(GRAN_DENSE_MIN // 2) == GRAN_DENSE_MIN // 4
    st = EngineState(sizes=granules(GRAN_DENSE_MIN))
    with open_trace(_shared_reads(n)) as reader:
        for batch in reader:
            replay_batch(st, batch, None)
    assert int(st.sv[SV_GRAN_COUNT]) == n
    assert st.arrays["gran"].shape[0] == GRAN_DENSE_MIN


def test_a_growth_waits_for_the_spare_being_filled_and_takes_it():
    """The faulter fills a spare holding the table's lock; a growth that
    comes meanwhile waits for it and takes it, so no second table of the
    new size is ever made (the two of them were a check's peak of memory)."""
    st = EngineState(sizes=granules(64))
    old = st.arrays["gran"]
    grown = threading.Event()

    def grow():
        st.grow(GR_GRAN)
        grown.set()

    with st._gran_lock:  # as the faulter holds it while it fills a spare
        worker = threading.Thread(target=grow)
        worker.start()
        assert not grown.wait(0.2)  # the growth waits for the lock
        st.spare_gran = spare = np.full((128, old.shape[1]), -1, np.int64)
    worker.join()
    assert st.arrays["gran"] is spare and st.spares_taken == 1 and st.spare_gran is None


def test_no_spare_when_the_trace_ends_before_the_table_fills():
    """A trace said to be long gets a spare; told it is as long as what was
    replayed, the engine expects no growth and makes none, and drops a
    spare made before."""
    from tracerace.trace.reader import open_trace

    st = EngineState(sizes=granules(1024))
    with open_trace(_shared_reads(450), batch_size=225) as reader:  # 44%: over 40%, under half
        for batch in reader:
            replay_batch(st, batch, None)
            st.batch_done(st.rows_done + batch.n)
    st.rows_total = st.rows_done
    while st.prefault():
        pass
    assert st.spare_gran is None
    st.rows_total = 10 * st.rows_done
    st.prefault()
    assert st.spare_gran is not None and st.spare_gran.shape[0] == 2048
    assert (st.spare_gran == -1).all()
    st.rows_total = st.rows_done
    st.prefault()
    assert st.spare_gran is None


def test_check_of_many_batches_without_populate_support(monkeypatch):
    """Where the kernel cannot populate, the faulter ends at once; a check of
    many batches (each one starts it again) still runs to the same answer."""
    from tracerace.trace.reader import open_trace

    n = 4000
    table = make_table(
        {
            "ts": np.arange(n),
            "op": int(Op.WRITE),
            "launch": 0,
            "block": 0,
            "thread": np.arange(n) % 2,
            "addr": (np.arange(n) // 2 % 64) * 4,
            "size": 4,
        }
    )

    def run():
        with open_trace(table, batch_size=500) as reader:
            return check_trace(reader)

    expected = run()
    monkeypatch.setattr(faulter, "can_populate", lambda: False)
    got = run()
    assert got.events == expected.events == n
    assert len(got.findings) == len(expected.findings) > 0
    assert (got.findings == expected.findings).all()


def test_no_spare_when_granules_stop_coming():
    """The same 450 granules written over and over (the cpu benchmark's
    variables, all touched in its first phase): however long the trace,
    the pace of the last batches says the table will not grow."""
    from tracerace.trace.reader import open_trace

    n = 450 * 8
    table = make_table(
        {
            "ts": np.arange(n),
            "op": int(Op.WRITE),
            "launch": 0,
            "block": 0,
            "thread": 0,
            "space": int(Space.SHARED),
            "addr": np.arange(n) % 450 * 4,
            "size": 4,
        }
    )
    st = EngineState(sizes=granules(1024))
    st.rows_total = 100 * n
    with open_trace(table, batch_size=450) as reader:
        for batch in reader:
            replay_batch(st, batch, None)
            st.batch_done(st.rows_done + batch.n)
            while st.prefault():
                pass
    assert int(st.sv[SV_GRAN_COUNT]) == 450
    assert st.spare_gran is None
