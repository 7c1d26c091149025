"""`tracerace convert`: STD text <-> trace format v1, and between v1 containers.

The property test checks the STD mapping against a plain vector-clock
happens-before detector written here from the STD semantics alone (threads,
locks, fork, join): on random STD traces, ``check --select raw,war,waw``
reports exactly the events that detector calls racy.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pyarrow.ipc as ipc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tracerace
from tracerace.cli import app
from tracerace.convert import convert
from tracerace.convert.std import FORK_FLAG, JOIN_FLAG, NAMED_ID, NAMED_THREAD
from tracerace.errors import TraceError
from tracerace.trace.ops import Op
from tracerace.trace.writer import write_table

ENGINES = ["reference", "numba"]
RACES = "raw,war,waw"

EXAMPLE = """\
T0|w(V1)|10
T0|fork(T1)|11
T0|fork(T2)|12
T1|r(V1)|20
T1|acq(L0)|21
T1|w(V2)|22
T1|rel(L0)|23
T2|acq(L0)|30
T2|r(V2)|31
T2|rel(L0)|32
T2|w(V3)|33
T0|join(T1)|40
T0|join(T2)|41
T0|r(V3)|42
T0|w(V2)|43
T3|w(V1)|50
"""


def write_std(path, text: str) -> str:
    path.write_text(text)
    return str(path)


def rows(path: str) -> dict[str, list]:
    return ipc.open_file(path).read_all().to_pydict()


# --- the detector -------------------------------------------------------------------


def parse(text: str) -> list[tuple[str, str, str, int]]:
    out = []
    for line in text.splitlines():
        if line.strip():
            thread, event, loc = line.strip().split("|")
            op, obj = event[:-1].split("(")
            out.append((thread, op, obj, int(loc)))
    return out


def racy_events(text: str) -> int:
    """Events that conflict with an earlier access not ordered before them.

    Vector clocks over threads; ``acq`` joins everything released on the lock
    so far, ``fork(c)`` hands the parent's clock to ``c``'s first event,
    ``join(c)`` gives the parent ``c``'s clock. Two accesses conflict when they
    touch one variable and one writes.
    """
    clocks: dict[str, dict[str, int]] = defaultdict(dict)
    locks: dict[str, dict[str, int]] = defaultdict(dict)
    forked: dict[str, dict[str, int]] = {}
    history: dict[str, list[tuple[str, int, bool]]] = defaultdict(list)

    def join(into: dict, other: dict) -> None:
        for t, e in other.items():
            if into.get(t, 0) < e:
                into[t] = e

    racy = 0
    for thread, op, obj, _ in parse(text):
        clock = clocks[thread]
        if thread in forked:
            join(clock, forked.pop(thread))
        clock[thread] = clock.get(thread, 0) + 1
        if op in ("r", "w"):
            write = op == "w"
            if any(
                (write or x_write)
                and x_thread != thread
                and clocks[thread].get(x_thread, 0) < x_epoch
                for x_thread, x_epoch, x_write in history[obj]
            ):
                racy += 1
            history[obj].append((thread, clock[thread], write))
        elif op == "acq":
            join(clock, locks[obj])
        elif op == "rel":
            join(locks[obj], clock)
        elif op == "fork":
            forked[obj] = dict(clock)
        elif op == "join":
            child = clocks[obj]
            if obj in forked:  # forked, never ran: its first event is the join signal
                join(child, forked.pop(obj))
            join(clock, child)
    return racy


@st.composite
def std_traces(draw, max_events: int = 40, named: bool = False) -> str:
    """Well-formed STD text: threads start as roots or by a fork, run until
    joined; locks are released by their holder; variables and locks are few
    so accesses collide."""
    n_threads = draw(st.integers(1, 5))
    n_vars = draw(st.integers(1, 4))
    n_locks = draw(st.integers(0, 2))
    roots = {0} | {t for t in range(1, n_threads) if draw(st.booleans())}
    forked: set[int] = set()
    joined: set[int] = set()
    holder: dict[int, int] = {}
    tname = (
        (lambda t: ["main", "worker", "T7x", "t", "pool-1"][t]) if named else (lambda t: f"T{t}")
    )
    vname = (lambda v: ["x", "y", "count", "V01"][v]) if named else (lambda v: f"V{v}")
    lines = []
    for _ in range(draw(st.integers(1, max_events))):
        runnable = [t for t in range(n_threads) if t not in joined and (t in roots or t in forked)]
        t = draw(st.sampled_from(runnable))
        free = [lk for lk in range(n_locks) if lk not in holder]
        mine = [lk for lk, h in holder.items() if h == t]
        unforked = [c for c in range(n_threads) if c not in roots and c not in forked]
        joinable = [
            c
            for c in range(n_threads)
            if c != t
            and c not in joined
            and (c in roots or c in forked)
            and c not in holder.values()
        ]
        kinds = (
            ["r", "r", "w", "w"]
            + ["acq"] * bool(free)
            + ["rel"] * bool(mine)
            + ["fork"] * bool(unforked)
            + ["join"] * bool(joinable)
        )
        kind = draw(st.sampled_from(kinds))
        if kind in ("r", "w"):
            obj = vname(draw(st.integers(0, n_vars - 1)))
        elif kind == "acq":
            lk = draw(st.sampled_from(free))
            holder[lk] = t
            obj = f"L{lk}"
        elif kind == "rel":
            lk = draw(st.sampled_from(mine))
            del holder[lk]
            obj = f"L{lk}"
        elif kind == "fork":
            c = draw(st.sampled_from(unforked))
            forked.add(c)
            obj = tname(c)
        else:
            c = draw(st.sampled_from(joinable))
            joined.add(c)
            obj = tname(c)
        lines.append(f"{tname(t)}|{kind}({obj})|{draw(st.integers(0, 999))}\n")
    return "".join(lines)


def test_detector_on_the_example():
    # T3 (never forked) writes V1 unordered with T0's write: one racy event.
    # T0's r(V3) and w(V2) come after the joins; T2's r(V2) is under L0 after T1's w.
    assert racy_events(EXAMPLE) == 1
    assert racy_events("T0|w(V0)|1\nT1|r(V0)|2\nT1|w(V0)|3\n") == 2
    assert racy_events("T0|w(V0)|1\nT0|fork(T1)|2\nT1|r(V0)|3\n") == 0


# --- import ----------------------------------------------------------------------------


def test_import_maps_the_example(tmp_path):
    src = write_std(tmp_path / "ex.std", EXAMPLE)
    dst = str(tmp_path / "ex.arrow")
    result = convert(src, dst)
    assert (result.rows_in, result.rows_out) == (16, 20)
    d = rows(dst)
    ops = [Op(o).label for o in d["op"]]
    # fork: the parent's signal; the child waits just before its first event
    assert ops[:5] == ["write", "signal", "signal", "wait", "read"]
    assert d["obj"][1] == FORK_FLAG + 1 and d["obj"][3] == FORK_FLAG + 1 and d["thread"][3] == 1
    # join: the child's signal, then the parent's wait, both at the join line
    i = d["site"].index(11)  # loc:40
    assert ops[i : i + 2] == ["signal", "wait"]
    assert (d["thread"][i], d["thread"][i + 1]) == (1, 0)
    assert d["obj"][i] == d["obj"][i + 1] == JOIN_FLAG + 1
    # variables: 8-byte global words; sites keep the location; ts is the line index
    assert (d["addr"][0], d["size"][0], d["space"][0]) == (8, 8, 0)
    assert d["ts"] == sorted(d["ts"])
    meta = ipc.open_file(dst).schema.metadata
    assert json.loads(meta[b"tracerace.sites"])[:3] == ["loc:10", "loc:11", "loc:12"]
    assert json.loads(meta[b"tracerace.buffers"])[0]["name"] == "V"


@pytest.mark.parametrize("engine", ENGINES)
def test_import_checks_like_the_detector_on_the_example(tmp_path, engine):
    src = write_std(tmp_path / "ex.std", EXAMPLE)
    dst = str(tmp_path / "ex.arrow")
    convert(src, dst)
    report = tracerace.check(dst, engine=engine, select=RACES)
    assert report.summary["racy_rows"] == racy_events(EXAMPLE) == 1
    # The racy row is T3's write of V1: waw with T0's write, war with T1's read.
    f = report.findings
    assert set(f["thread"].tolist()) == {3}
    assert sorted(zip(f["kind"].tolist(), f["prev_thread"].tolist())) == [(1, 1), (2, 0)]


def test_cli_check_select_on_imported_std(tmp_path):
    src = write_std(tmp_path / "ex.std", EXAMPLE)
    dst = str(tmp_path / "ex.arrow")
    runner = CliRunner()
    res = runner.invoke(app, ["convert", src, dst])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["check", dst, "--select", RACES, "--format", "json"])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["summary"]["racy_rows"] == 1


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=std_traces())
def test_racy_rows_match_the_detector(tmp_path, text):
    src = write_std(tmp_path / "t.std", text)
    dst = str(tmp_path / "t.arrow")
    convert(src, dst)
    expected = racy_events(text)
    for engine in ENGINES:
        report = tracerace.check(dst, engine=engine, select=RACES)
        assert report.summary["racy_rows"] == expected, (engine, text)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=std_traces(named=True))
def test_named_threads_and_variables(tmp_path, text):
    src = write_std(tmp_path / "t.std", text)
    dst = str(tmp_path / "t.arrow")
    convert(src, dst)
    assert all(t >= NAMED_THREAD for t in rows(dst)["thread"])
    report = tracerace.check(dst, engine="reference", select=RACES)
    assert report.summary["racy_rows"] == racy_events(text)
    # Exported, the names become canonical numbers; the races stay the same.
    again = tmp_path / "again.std"
    convert(dst, str(again))
    assert racy_events(again.read_text()) == racy_events(text)
    assert len(parse(again.read_text())) == len(parse(text))


def test_named_ids_start_at_the_named_bases(tmp_path):
    src = write_std(tmp_path / "n.std", "main|w(x)|1\nmain|acq(mu)|2\nT5|r(x)|3\n")
    dst = str(tmp_path / "n.arrow")
    convert(src, dst)
    d = rows(dst)
    assert d["thread"] == [NAMED_THREAD, NAMED_THREAD, 5]
    assert d["addr"][0] == NAMED_ID * 8 == d["addr"][2]
    assert d["obj"][1] == NAMED_ID


# --- round trips ---------------------------------------------------------------------


@pytest.mark.parametrize("mid", [".arrow", ".arrows", ".parquet"])
def test_round_trip_example(tmp_path, mid):
    src = write_std(tmp_path / "ex.std", EXAMPLE)
    convert(src, str(tmp_path / f"ex{mid}"))
    convert(str(tmp_path / f"ex{mid}"), str(tmp_path / "back.std"))
    assert (tmp_path / "back.std").read_text() == EXAMPLE


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=std_traces(max_events=60))
def test_round_trip_random(tmp_path, text):
    src = write_std(tmp_path / "t.std", text)
    convert(src, str(tmp_path / "t.arrow"))
    convert(str(tmp_path / "t.arrow"), str(tmp_path / "back.std"))
    assert (tmp_path / "back.std").read_text() == text


def test_std_to_std_normalises(tmp_path):
    src = write_std(tmp_path / "a.std", "  T0|w(V1)|3  \r\n\nT1|r(V1)|4")
    convert(src, str(tmp_path / "b.std"))
    assert (tmp_path / "b.std").read_text() == "T0|w(V1)|3\nT1|r(V1)|4\n"


def test_large_import_streams_in_chunks(tmp_path, monkeypatch):
    import tracerace.convert.std as conv

    monkeypatch.setattr(conv, "CHUNK_LINES", 7)
    monkeypatch.setattr(conv, "READ_BYTES", 50)
    lines = []
    for i in range(40):
        lines.append(f"T0|fork(T{i + 1})|{i}\n")
        lines.append(f"T{i + 1}|w(V{i % 3})|{i}\n")
        lines.append(f"T0|join(T{i + 1})|{i}\n")
    text = "".join(lines)
    src = write_std(tmp_path / "big.std", text)
    convert(src, str(tmp_path / "big.arrow"))
    convert(str(tmp_path / "big.arrow"), str(tmp_path / "back.std"))
    assert (tmp_path / "back.std").read_text() == text
    report = tracerace.check(str(tmp_path / "big.arrow"), engine="reference", select=RACES)
    assert report.summary["racy_rows"] == racy_events(text) == 0


# --- bad STD ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("T0|w(V1)|1\nT0 w(V1) 2\n", 2, "expected THREAD|OP(OBJECT)|LOCATION"),
        ("T0|w(V1)|1\nT0|frob(V1)|2\n", 2, "unknown operation 'frob'"),
        ("T0|w(V1)|x\n", 1, "location 'x' is not an integer"),
        ("T0|w(V1)|1\n\nT0|w(V1|3\n", 3, "bad event"),
        ("T0|w(V1)|1234567890123456789012\n", 1, "too large"),
        ("T0|fork(T0)|1\n", 1, "names the thread itself"),
        ("T1|w(V1)|1\nT0|fork(T1)|2\n", 2, "has already run"),
        ("T0|fork(T1)|1\nT0|fork(T1)|2\n", 2, "already forked at line 1"),
        ("T0|fork(T1)|1\nT0|join(T1)|2\nT0|join(T1)|3\n", 3, "already joined at line 2"),
        ("T0|fork(T1)|1\nT0|join(T1)|2\nT1|r(V0)|3\n", 3, "event of T1 after join(T1) at line 2"),
        ("T0|fork(T1)|1\nT0|join(T1)|2\nT1|fork(T2)|3\n", 3, "event of T1 after join(T1)"),
    ],
)
def test_bad_std_lines_name_file_and_line(tmp_path, text, line, words):
    src = write_std(tmp_path / "bad.std", text)
    with pytest.raises(TraceError) as exc:
        convert(src, str(tmp_path / "bad.arrow"))
    assert f"bad.std:{line}:" in str(exc.value)
    assert words in str(exc.value)
    assert not (tmp_path / "bad.arrow").exists()


def test_cli_bad_std_exits_2_with_one_line(tmp_path):
    src = write_std(tmp_path / "bad.std", "T0|w(V1)|1\nT0|frob(V1)|2\n")
    res = CliRunner().invoke(app, ["convert", src, str(tmp_path / "bad.arrow")])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1
    assert "bad.std:2: std-syntax:" in res.output


def test_unknown_extension_is_a_usage_error(tmp_path):
    res = CliRunner().invoke(app, ["convert", str(tmp_path / "a.txt"), str(tmp_path / "b.arrow")])
    assert res.exit_code == 2
    assert "usage" in res.output


def test_missing_std_file(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        convert(str(tmp_path / "nope.std"), str(tmp_path / "x.arrow"))


# --- export ------------------------------------------------------------------------------


def v1(path, **cols) -> str:
    n = len(cols["op"])
    cols.setdefault("ts", list(range(n)))
    cols.setdefault("launch", 0)
    cols.setdefault("block", 0)
    write_table(path, cols)
    return str(path)


@pytest.mark.parametrize(
    "op, extra",
    [
        ("bar_sync", {"arg": 2}),
        ("atomic", {"size": 8}),
        ("init", {"size": 8}),
        ("cp_async", {"size": 16}),
        ("fence", {}),
    ],
)
def test_export_rejects_ops_without_std_equivalent(tmp_path, op, extra):
    cols = {
        "op": ["write", op],
        "thread": [0, 1],
        "size": [8, extra.get("size", 0)],
        "arg": [0, extra.get("arg", 0)],
    }
    src = v1(tmp_path / "t.arrow", **cols)
    res = CliRunner().invoke(app, ["convert", src, str(tmp_path / "t.std")])
    assert res.exit_code == 2
    assert f"row 1: no-std-equivalent: op {op} has no STD equivalent" in res.output
    assert not (tmp_path / "t.std").exists()


def test_export_rejects_other_flags_launches_and_blocks(tmp_path):
    src = v1(tmp_path / "f.arrow", op=["signal", "wait"], thread=[0, 1], obj=5, arg=1)
    with pytest.raises(TraceError, match="row 0: no-std-equivalent: signal on flag 5"):
        convert(src, str(tmp_path / "f.std"))
    src = v1(tmp_path / "l.arrow", op=["write", "write"], thread=0, size=8, launch=[0, 1])
    with pytest.raises(TraceError, match="row 1: .*launch 1 after launch 0"):
        convert(src, str(tmp_path / "l.std"))
    src = v1(tmp_path / "b.arrow", op=["write", "write"], thread=0, size=8, block=[0, 2])
    with pytest.raises(TraceError, match="row 1: .*block 2"):
        convert(src, str(tmp_path / "b.std"))


def test_export_rejects_a_fork_wait_that_is_not_the_first_event(tmp_path):
    src = v1(
        tmp_path / "f.arrow",
        op=["signal", "write", "wait"],
        thread=[0, 1, 1],
        obj=[FORK_FLAG + 1, 0, FORK_FLAG + 1],
        arg=[1, 0, 1],
        size=[0, 8, 0],
    )
    with pytest.raises(TraceError, match="row 2: .*not that thread's first event"):
        convert(src, str(tmp_path / "f.std"))


def test_export_numbers_general_ranges_and_rejects_partial_overlap(tmp_path):
    src = v1(
        tmp_path / "g.arrow",
        op=["write", "read", "write", "read"],
        thread=[0, 1, 1, 0],
        space=[1, 1, 0, 1],
        addr=[0x10, 0x10, 0x10, 0x20],
        size=4,
    )
    # shared 0x10+4 is V0, global 0x10+4 is V1, shared 0x20+4 is V2 (no sites: row numbers)
    convert(src, str(tmp_path / "g.std"))
    assert (tmp_path / "g.std").read_text() == "T0|w(V0)|0\nT1|r(V0)|1\nT1|w(V1)|2\nT0|r(V2)|3\n"
    src = v1(tmp_path / "o.arrow", op=["write", "read"], thread=[0, 1], addr=[0x10, 0x12], size=4)
    with pytest.raises(TraceError, match="row 1: .*overlap without being the same range"):
        convert(src, str(tmp_path / "o.std"))


def test_export_locations_from_sites(tmp_path):
    cols = {
        "op": ["write", "read", "read"],
        "thread": [0, 1, 1],
        "size": 8,
        "site": [0, 1, 0xFFFFFFFF],
    }
    path = tmp_path / "s.arrow"
    write_table(
        path, dict(ts=[0, 1, 2], launch=0, block=0, **cols), sites=["loc:77", "kernel.cu:5"]
    )
    convert(str(path), str(tmp_path / "s.std"))
    # loc:77 -> 77; a site without a number -> its index (1); no site -> the row (2)
    assert (tmp_path / "s.std").read_text() == "T0|w(V0)|77\nT1|r(V0)|1\nT1|r(V0)|2\n"


# --- v1 containers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b", [(".arrow", ".parquet"), (".parquet", ".arrows"), (".arrows", ".arrow")]
)
def test_recontainer_keeps_rows_and_metadata(tmp_path, a, b):
    cols = dict(
        ts=[0, 1, 2],
        op=["write", "bar_sync", "read"],
        launch=0,
        block=0,
        thread=[0, 0, 1],
        space=1,
        addr=[16, 0, 16],
        size=[4, 0, 4],
        arg=[0, 1, 0],
        site=[0, 0xFFFFFFFF, 0],
    )
    src = tmp_path / f"in{a}"
    write_table(
        src,
        cols,
        sites=["k.cu:1", "k.cu:1"],
        producer="me",
        buffers=[{"name": "s", "space": 1, "base": 0, "shape": [8], "itemsize": 4}],
    )
    res = CliRunner().invoke(
        app, ["convert", str(src), str(tmp_path / f"out{b}"), "--compression", "zstd"]
    )
    assert res.exit_code == 0, res.output
    from tracerace.trace.reader import open_trace

    with open_trace(str(src)) as r1, open_trace(str(tmp_path / f"out{b}")) as r2:
        b1, b2 = next(iter(r1)), next(iter(r2))
        assert r2.meta.sites == ("k.cu:1", "k.cu:1") and r2.meta.producer == "me"
        assert r2.meta.buffers == r1.meta.buffers
        for name, values in b1.cols.items():
            assert np.array_equal(values, b2.cols[name]), name


def test_same_input_and_output_is_refused(tmp_path):
    src = write_std(tmp_path / "a.std", EXAMPLE)
    with pytest.raises(TraceError, match="same file"):
        convert(src, src)
