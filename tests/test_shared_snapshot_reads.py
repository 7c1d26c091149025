"""Reads by threads that share one base snapshot (the threads of a block
after a barrier). A shortcut that remembered "this snapshot knows every
write of this granule" would be wrong in each of these traces: kept after a
new write, set from what one reader alone knows (its own writes), or
applied to other bytes. Session 10 tried such a stamp (`git show 2f1ed8e:docs/status.md`);
these tests stay for whoever tries again."""

from __future__ import annotations

import pytest

from tracerace.ops import K_RAW, Op, Space

from test_engine_agrees import assert_agree

THREADS = 4


def _trace(steps):
    """Events of block 0 from (thread, op, addr) steps; "bar" is a bar_sync
    of all threads."""
    events = []
    for step in steps:
        if step == "bar":
            for t in range(THREADS):
                events.append(dict(op=Op.BAR_SYNC, block=0, thread=t, obj=0, arg=THREADS))
            continue
        thread, op, addr = step
        events.append(dict(op=op, block=0, thread=thread, space=Space.SHARED, addr=addr,
                           size=4))
    return [dict(ev, ts=i, launch=0) for i, ev in enumerate(events)]


def _raw_rows(steps, splits=()):
    """Rows reported as the later access of a raw hazard, once the engine
    is shown to agree with the reference on the trace."""
    f = assert_agree(_trace(steps), list(splits)).findings
    return sorted(int(r) for r in f["row"][f["kind"] == K_RAW])


R, W = Op.READ, Op.WRITE


@pytest.mark.parametrize("splits", [(), (6,), (7, 8)])
def test_a_write_after_the_readers_races_with_later_readers(splits):
    # rows: 0 write, 1-4 barrier, 5-6 two reads under the barrier's snapshot,
    # 7 a second write by thread 0, 8-9 reads that race with it.
    steps = [(0, W, 0), "bar", (1, R, 0), (2, R, 0), (0, W, 0), (3, R, 0), (1, R, 0)]
    assert _raw_rows(steps, splits) == [8, 9]


def test_what_the_snapshot_knows_is_not_what_one_reader_knows():
    # Thread 1 writes again after the barrier: it knows its own write, but
    # the barrier snapshot it shares with thread 2 does not: thread 2's read
    # races with it.
    steps = [(1, W, 0), "bar", (1, W, 0), (1, R, 0), (2, R, 0)]
    assert _raw_rows(steps) == [7]


def test_a_rewrite_of_one_word_leaves_reads_of_the_other_alone():
    # Thread 0 writes two words; after the barrier thread 1 reads the first.
    # A rewrite of the second word races with the read of it, not with
    # reads of the first word.
    steps = [(0, W, 0), (0, W, 4), "bar", (1, R, 0), (0, W, 4), (2, R, 0), (2, R, 4),
             "bar", (3, R, 4), (3, R, 0)]
    assert _raw_rows(steps) == [9]
