"""Read-ahead keeps order, hands the reader's error over in place, and stops
its thread when the consumer leaves early."""

from __future__ import annotations

import threading

import pytest

from tracerace.checker.engine.prefetch import prefetch


def test_order_and_completion():
    assert list(prefetch(range(1000), depth=1)) == list(range(1000))


def test_error_arrives_after_the_items_before_it():
    def source():
        yield 1
        yield 2
        raise ValueError("row 3 is bad")

    seen = []
    with pytest.raises(ValueError, match="row 3"):
        for item in prefetch(source()):
            seen.append(item)
    assert seen == [1, 2]


def test_leaving_early_stops_the_reader():
    pulled = []

    def source():
        for i in range(10_000):
            pulled.append(i)
            yield i

    before = threading.active_count()
    for item in prefetch(source(), depth=1):
        if item == 5:
            break
    # The generator's cleanup ran at ``break``: the thread has been joined,
    # and it pulled at most a couple of items past the last one taken.
    assert threading.active_count() == before
    assert len(pulled) <= 5 + 3
