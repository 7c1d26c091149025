"""The thread that works ahead of the fold (tracerace.group.pools.Ahead) changes no answer.

It faults in the records the next batch's groups will take and the larger
hash table the next growth rehashes into, while the checker replays; the
groups must come out as a builder without it makes them, and as the naive
grouping of ``test_groups`` says, whenever the thread happens to finish.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_groups import BUFFERS, OPS, check_against_naive, random_findings, split

from tracerace.checker.engine.mapped import can_populate
from tracerace.checker.findings import FINDING_DTYPE
from tracerace.group.groups import GroupBuilder
from tracerace.trace.meta import TraceMeta
from tracerace.trace.ops import HazardKind


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    cuts=st.lists(st.integers(0, 300), max_size=6),
    kinds=st.sets(st.sampled_from([int(k) for k in HazardKind]), min_size=1),
    shuffle=st.booleans(),
)
def test_builder_working_ahead_after_every_batch_matches_the_naive_grouping(
    seed, n, cuts, kinds, shuffle
):
    rng = np.random.default_rng(seed)
    stream = split(random_findings(rng, n), cuts)
    if shuffle:
        stream = [stream[i] for i in rng.permutation(len(stream))]
    check_against_naive(stream, kinds, ahead_min=1)


def many_groups(rng: np.random.Generator, n: int, sites: int) -> np.ndarray:
    """``n`` findings at random site pairs of ``sites`` sites (most pairs a group
    of their own, some with several members and byte ranges)."""
    f = np.zeros(n, dtype=FINDING_DTYPE)
    f["kind"] = rng.integers(0, 3, n)
    f["row"] = np.arange(n) + 10
    f["prev_row"] = f["row"] - rng.integers(1, 10, n)
    f["site"] = rng.integers(0, sites, n)
    f["prev_site"] = rng.integers(0, sites, n)
    f["op"] = rng.choice(OPS, n)
    f["prev_op"] = rng.choice(OPS, n)
    f["severity"] = rng.random(n) < 0.5
    f["owner"] = rng.integers(0, 3, n)
    f["addr"] = rng.integers(0, 32, n) * 4 + 64
    f["size"] = rng.choice([0, 4, 4, 4], n)
    return f


def test_working_ahead_changes_no_answer():
    """The thread that faults records and the next hash table in ahead (after
    every batch here, waited for) leaves every group as a builder without it."""
    rng = np.random.default_rng(3)
    sites = 400
    meta = TraceMeta(sites=tuple(f"s.cu:{i}" for i in range(sites)), buffers=BUFFERS)
    f = many_groups(rng, 60_000, sites)
    f[30_000:]["site"] = f[:30_000]["site"]  # the later half: the same pairs again
    f[30_000:]["prev_site"] = f[:30_000]["prev_site"]
    plain = GroupBuilder(meta, ahead_min=1 << 62)  # never works ahead
    plain.add(f)
    plain = plain.table()
    builder = GroupBuilder(meta, ahead_min=1)
    for start in range(0, len(f), 2_000):
        builder.add(f[start : start + 2_000])
        builder._ahead.wait()
        if can_populate():  # the next batch's records are faulted in
            assert builder._groups.populated >= builder.groups
    ahead = builder.table()
    assert len(plain) == len(ahead) > 10_000
    if can_populate():  # the table grew into tables made ahead
        assert builder._ahead.spares_used > 0
    for name in (
        "count",
        "severity",
        "kind",
        "earlier_role",
        "later_role",
        "locator_count",
        "more_locators",
    ):
        assert np.array_equal(getattr(plain, name), getattr(ahead, name)), name
    for name, values in plain.stats.items():
        assert np.array_equal(values, ahead.stats[name]), name
    assert np.array_equal(plain.examples, ahead.examples)
    assert np.array_equal(plain.example_start, ahead.example_start)
    assert np.array_equal(plain.locators, ahead.locators)
    assert np.array_equal(plain.by_kind, ahead.by_kind) and plain.racy_rows == ahead.racy_rows
    for g in rng.integers(0, len(plain), 50):
        assert np.array_equal(plain.locators_of(g), ahead.locators_of(g))
        start, stop = plain.locator_start[g], plain.locator_start[g + 1]
        assert np.array_equal(plain.locators_of(g), plain.locators[start:stop])
