"""Findings grouped as they are found (tracerace.group.groups) against a naive grouping.

The naive version below walks every finding in plain Python, keeping every
member of every group; the builder sees the same findings in batches (split
at random places, sometimes out of row order, as a launch's end can hand over
an incomplete barrier generation of an earlier row) and must give the same
groups, counts, spans, examples, locations and totals.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracerace.checker.findings import FINDING_DTYPE, sort_findings
from tracerace.group.groups import (
    EXAMPLES,
    ROLE_COPY,
    ROLE_NONE,
    ROLE_THREAD,
    GroupBuilder,
    group_findings,
)
from tracerace.trace.meta import Buffer, TraceMeta
from tracerace.trace.ops import HazardKind, Op, Severity, Space
from tracerace.trace.schema import SITE_NONE

SITES = ("a.cu:1", "a.cu:2", "a.cu:1", "b.cu:7")  # index 2 repeats index 0's text
BUFFERS = (
    Buffer("x", int(Space.GLOBAL), 64, (4, 4), 4),
    Buffer("t", int(Space.SHARED), 0, (8,), 4, launch=1),
)
META = TraceMeta(sites=SITES, buffers=BUFFERS)
OPS = [int(Op.READ), int(Op.WRITE), int(Op.ATOMIC), int(Op.CP_ASYNC), int(Op.TMA_LOAD)]
COPY = {int(Op.CP_ASYNC), int(Op.TMA_LOAD), int(Op.TMA_STORE)}


def random_findings(rng: np.random.Generator, n: int) -> np.ndarray:
    f = np.zeros(n, dtype=FINDING_DTYPE)
    f["kind"] = rng.integers(0, 4, n)
    f["severity"] = rng.random(n) < 0.2
    f["row"] = np.sort(rng.integers(0, 3 * n + 1, n))
    f["launch"] = rng.integers(0, 2, n)
    f["block"] = rng.integers(0, 3, n)
    f["thread"] = rng.integers(0, 4, n)
    f["op"] = rng.choice(OPS, n)
    f["site"] = rng.choice([0, 1, 2, 3, SITE_NONE], n)
    single = rng.random(n) < 0.3
    f["prev_row"] = np.where(single, -1, np.maximum(f["row"] - rng.integers(1, 5, n), 0))
    f["prev_op"] = rng.choice(OPS, n)
    f["prev_site"] = rng.choice([0, 1, 2, 3, SITE_NONE], n)
    f["prev_async"] = rng.random(n) < 0.1
    f["space"] = rng.integers(0, 2, n)
    f["owner"] = rng.integers(0, 2, n)
    f["addr"] = rng.choice([0, 60, 64, 68, 72, 120, 200], n)
    f["size"] = rng.choice([0, 4, 8], n)
    f["kind"][single] = HazardKind.UNINIT_READ
    # A checker emits one finding per (row, kind).
    _, first = np.unique(f["row"] * 16 + f["kind"], return_index=True)
    return sort_findings(f[first])


def role(op: int, prev_async: int = 0) -> int:
    return ROLE_COPY if prev_async or op in COPY else ROLE_THREAD


def site_key(site: int):
    return SITES[site] if site < len(SITES) else None


def identity(rec) -> tuple:
    """How the report tells byte ranges apart (the naive form of the module's rule)."""
    named = any(
        rec["space"] == b.space and b.base <= rec["addr"] < b.base + b.nbytes_span for b in BUFFERS
    )
    launch_specific = any(b.launch is not None for b in BUFFERS)
    return (
        rec["space"],
        0 if named else rec["owner"],
        rec["addr"],
        rec["size"],
        rec["launch"] if named and launch_specific else 0,
    )


def naive(stream: list[np.ndarray], kinds: set[int]):
    """Groups by walking every finding of every batch, in stream order."""
    groups: dict[tuple, dict] = {}
    by_kind = np.zeros(len(HazardKind), np.int64)
    filtered = np.zeros(len(HazardKind), np.int64)
    racy = set()
    for batch in stream:
        for rec in batch:
            rec = dict(zip(FINDING_DTYPE.names, rec.tolist()))
            if rec["kind"] not in kinds:
                filtered[rec["kind"]] += 1
                continue
            by_kind[rec["kind"]] += 1
            racy.add(rec["row"])
            single = rec["prev_row"] == -1
            key = (
                rec["kind"],
                None if single else ("site", site_key(rec["prev_site"])),
                site_key(rec["site"]),
                ROLE_NONE if single else role(rec["prev_op"], rec["prev_async"]),
                role(rec["op"]),
            )
            g = groups.setdefault(key, {"id": len(groups), "members": [], "identities": []})
            g["members"].append(rec)
            if rec["size"] and identity(rec) not in [i for _, i in g["identities"]]:
                g["identities"].append((rec["row"], identity(rec)))
    return groups, by_kind, filtered, len(racy)


def check_against_naive(stream: list[np.ndarray], kinds: set[int], **options) -> None:
    builder = GroupBuilder(META, kinds, **options)
    for batch in stream:
        builder.add(batch)
    table = builder.table()
    groups, by_kind, filtered, racy = naive(stream, kinds)
    assert len(table) == len(groups)
    assert table.by_kind.tolist() == by_kind.tolist()
    assert table.filtered_by_kind.tolist() == filtered.tolist()
    assert table.racy_rows == racy
    assert table.errors == sum(
        m["severity"] == Severity.ERROR for g in groups.values() for m in g["members"]
    )
    assert table.errors + table.warnings == by_kind.sum()
    for key, g in groups.items():
        gid = g["id"]  # ids are the order of first appearance in the stream
        members = g["members"]
        assert table.kind[gid] == key[0]
        assert (table.earlier_role[gid], table.later_role[gid]) == (key[3], key[4])
        assert table.count[gid] == len(members)
        assert table.severity[gid] == min(m["severity"] for m in members)
        canonical = sorted(members, key=lambda m: (m["row"], m["kind"], m["prev_row"]))
        got = [
            dict(zip(FINDING_DTYPE.names, r))
            for r in table.examples[
                table.example_start[gid] : table.example_start[gid + 1]
            ].tolist()
        ]
        assert got == canonical[:EXAMPLES]
        with_bytes = [m for m in members if m["size"]]
        stats = table.stats
        assert stats["bytes"][gid] == len(with_bytes)
        if with_bytes:
            assert stats["lo"][gid] == min(m["addr"] for m in with_bytes)
            assert stats["last"][gid] == max(m["addr"] + m["size"] - 1 for m in with_bytes)
            for name in ("space", "owner", "launch"):
                assert stats[f"{name}_min"][gid] == min(m[name] for m in with_bytes)
                assert stats[f"{name}_max"][gid] == max(m[name] for m in with_bytes)
        # the first byte ranges found, by the row that first touched them
        locs = table.locators_of(gid)
        first = sorted(g["identities"][:EXAMPLES], key=lambda ri: ri[0])
        assert [(r[0], identity(dict(zip(locs.dtype.names, r)))) for r in locs.tolist()] == first
        assert bool(table.more_locators[gid]) == (len(g["identities"]) > EXAMPLES)


def split(findings: np.ndarray, cuts: list[int]) -> list[np.ndarray]:
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(findings)), len(findings)]
    return [findings[a:b] for a, b in zip(bounds, bounds[1:])]


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    cuts=st.lists(st.integers(0, 300), max_size=6),
    kinds=st.sets(st.sampled_from([int(k) for k in HazardKind]), min_size=1),
    shuffle=st.booleans(),
)
def test_builder_matches_the_naive_grouping(seed, n, cuts, kinds, shuffle):
    rng = np.random.default_rng(seed)
    stream = split(random_findings(rng, n), cuts)
    if shuffle:  # batches out of row order; each still in canonical order
        stream = [stream[i] for i in rng.permutation(len(stream))]
    check_against_naive(stream, kinds)


def test_batches_need_not_be_in_canonical_order():
    rng = np.random.default_rng(5)
    f = random_findings(rng, 200)
    shuffled = f[rng.permutation(len(f))]
    a = group_findings(f, META)
    b = group_findings(shuffled, META)
    assert np.array_equal(a.examples, b.examples) and np.array_equal(a.count, b.count)
    assert np.array_equal(a.findings, b.findings)


def test_many_findings_at_one_pair_keep_a_few_examples_and_exact_counts():
    n = 100_000
    f = np.zeros(n, dtype=FINDING_DTYPE)
    f["kind"] = HazardKind.UNINIT_READ
    f["row"] = np.arange(n)
    f["prev_row"] = -1
    f["prev_site"] = SITE_NONE
    f["site"] = 1
    f["addr"] = 8 * np.arange(n, dtype=np.uint64)
    f["size"] = 8
    builder = GroupBuilder(META)
    for start in range(0, n, 4096):
        builder.add(f[start : start + 4096])
    table = builder.table()
    assert len(table) == 1 and table.count[0] == n and table.racy_rows == n
    assert len(table.examples) == EXAMPLES and table.findings is None
    assert table.examples["row"].tolist() == list(range(EXAMPLES))
    assert (int(table.stats["lo"][0]), int(table.stats["last"][0])) == (0, 8 * n - 1)
    assert len(table.locators) == EXAMPLES and table.more_locators[0]


def test_racy_rows_count_each_row_once_across_batches():
    f = np.zeros(4, dtype=FINDING_DTYPE)
    f["row"] = [5, 5, 9, 1 << 20]
    f["kind"] = [0, 1, 0, 0]
    f["prev_row"] = 0
    builder = GroupBuilder(META)
    builder.add(f[:1])
    builder.add(f[1:3])
    builder.add(f[:2])  # the same rows again (a later batch may name an earlier row)
    builder.add(f[3:])
    assert builder.table().racy_rows == 3


@pytest.mark.parametrize("kinds", [None, {int(HazardKind.RAW)}])
def test_alias_errors_are_kept_for_the_linked_line(kinds):
    f = np.zeros(3, dtype=FINDING_DTYPE)
    f["kind"] = HazardKind.SYNC_ALIAS
    f["row"] = [3, 8, 12]
    f["severity"] = [Severity.ERROR, Severity.WARNING, Severity.ERROR]
    f["block"] = 1
    f["obj"] = [7, 7, 9]
    table = group_findings(f, META, kinds)
    if kinds is not None:  # filtered out: nothing to link to
        assert len(table.aliases) == 0
        return
    assert table.aliases["row"].tolist() == [3, 12]
    assert table.alias_behind(0, 1, 0, 10)["obj"] == 7  # the latest before the row
    assert table.alias_behind(0, 1, 0, 2)["row"] == 3  # else the first after it
    assert table.alias_behind(0, 2, 0, 10) is None


def test_records_from_engine_rows_cast_each_field():
    from tracerace.checker.engine.races import records
    from tracerace.checker.findings import FIELDS

    rng = np.random.default_rng(7)
    rows = rng.integers(-(2**40), 2**40, (300, len(FIELDS)), dtype=np.int64)
    rows[:, FIELDS.index("addr")] = rng.integers(0, 2**62, 300) * 3  # past 2**63 too
    got = records(rows)
    for i, name in enumerate(FIELDS):
        want = rows[:, i].astype(FINDING_DTYPE[name], casting="unsafe")
        assert np.array_equal(got[name], want), name


def test_the_numpy_key_partitions_findings_as_the_fold_does():
    findings = random_findings(np.random.default_rng(9), 400)
    builder = GroupBuilder(META)
    _, gids = builder.add(findings)
    _, by_key = np.unique(builder.keys(findings), return_inverse=True)
    # the same partition: one key per group id and one group id per key
    pairs = set(zip(by_key.tolist(), gids.tolist()))
    assert len(pairs) == len(set(by_key.tolist())) == len(set(gids.tolist()))
    table = builder.table()
    assert np.array_equal(np.sort(table.kind[gids]), np.sort(findings["kind"]))


@pytest.mark.parametrize("limit", [0, 1, 5, 40, 1000])
def test_the_first_groups_in_display_order_without_sorting_all(limit):
    table = group_findings(random_findings(np.random.default_rng(4), 600), META)
    assert len(table) > 40
    full = table.display_order()
    assert sorted(full.tolist()) == list(range(len(table)))
    assert table.display_order(limit).tolist() == full[:limit].tolist()
    errors_first = table.severity[full] != Severity.ERROR
    assert not np.any(errors_first[:-1] > errors_first[1:])
