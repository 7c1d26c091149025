"""Checks on a Dask cluster (tracerace.cluster): a LocalCluster of two worker
processes gives the report a local check gives, for one trace and several."""

from __future__ import annotations

import io

import pytest
from test_cli_check import write_trace

from tracerace import api
from tracerace.errors import TraceError
from tracerace.report.output import render
from tracerace.trace.ops import Space

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def text(report):
    buf = io.StringIO()
    render(report, "text", buf)
    return buf.getvalue()


def test_one_trace_on_the_cluster_is_the_local_report(client, tmp_path):
    from tracerace.api.cluster import check_on_cluster
    from tracerace.scenarios import SCENARIOS

    scenario = next(iter(SCENARIOS.values()))
    path = str(scenario.write(str(tmp_path / "s.arrow"), fixed=False, scale=1, seed=0))
    [report] = check_on_cluster([path], client)
    local = api.check(path)
    assert text(report) == text(local)
    for fmt in ("json", "sarif"):
        a, b = io.StringIO(), io.StringIO()
        render(report, fmt, a)
        render(local, fmt, b)
        assert a.getvalue() == b.getvalue()


def test_several_traces_on_the_cluster(client, tmp_path):
    from tracerace.api.cluster import check_on_cluster

    racy = write_trace(tmp_path / "racy.arrow", barrier=False)
    clean = write_trace(tmp_path / "clean.arrow", barrier=True)
    bad = tmp_path / "bad.arrow"
    bad.write_text("no")
    sources = [racy, "file://" + clean, str(bad)]
    reports = check_on_cluster(sources, client, shards=2)
    assert text(reports[0]) == text(api.check(racy))
    assert text(reports[1]) == text(api.check(clean))
    assert isinstance(reports[2], TraceError) and reports[2].rule == "not-arrow"


def many_findings(path, n=4096) -> str:
    """``n - 64`` 4-byte global reads by the 64 threads of one block, of
    bytes nothing wrote (each an uninitialized read), then 64 writes of one
    word by two threads in turn, with no synchronization (races)."""
    from tracerace.trace.writer import write_table

    reads = n - 64
    ops = ["read"] * reads + ["write"] * 64
    thread = [i % 64 for i in range(reads)] + [i % 2 for i in range(64)]
    addr = [0x1000 + 4 * i for i in range(reads)] + [0x100] * 64
    write_table(
        path,
        dict(
            ts=list(range(n)),
            op=ops,
            launch=0,
            block=0,
            thread=thread,
            space=int(Space.GLOBAL),
            addr=addr,
            size=4,
            arg=0,
            site=[0] * reads + [1] * 64,
        ),
        sites=["k.cu:3 ld.global", "k.cu:7 st.global"],
    )
    return str(path)


def test_findings_stream_from_the_shards_as_they_run(client, tmp_path):
    """A shard hands over its findings a few batches at a time, through a
    queue of bounded length, and the client merges each batch once every
    shard has handed it over: progress moves batch by batch, not per
    finished shard, and the report is the local one."""
    from tracerace.api.cluster import check_on_cluster

    path = many_findings(tmp_path / "many.arrow")
    seen = []
    [report] = check_on_cluster(
        [path],
        client,
        shards=2,
        batch_size=64,
        queue_items=1,
        hand_bytes=0,
        progress=lambda done, total: seen.append(done),
    )
    local = api.check(path, batch_size=64)
    assert text(report) == text(local)
    assert len(report.groups) == len(local.groups) >= 2
    # 64 batches of each shard, handed over one at a time: far more steps
    # than the shards' two ends.
    assert len(set(seen)) > 20 and seen == sorted(seen) and seen[-1] == 4096
    assert no_queues_left(client)


def test_more_shards_than_threads_each_waiting_on_a_full_queue(client, tmp_path):
    """Three shards on the cluster's two threads, each queue one hand-over
    long: the two shards that run fill their queues while the client waits
    for the third. A shard waiting on a full queue leaves its worker's
    thread pool, so the third runs and the check ends with the local report
    (were the two to hold their threads, it would never end)."""
    import threading

    from tracerace.api.cluster import check_on_cluster

    path = many_findings(tmp_path / "many.arrow")
    out = []
    check = threading.Thread(
        target=lambda: out.extend(
            check_on_cluster([path], client, shards=3, batch_size=64, queue_items=1, hand_bytes=0)
        ),
        daemon=True,  # not waited for if it never ends
    )
    check.start()
    check.join(timeout=120)
    assert not check.is_alive(), "the shards waited on each other for ever"
    assert text(out[0]) == text(api.check(path, batch_size=64))


def test_a_bad_row_deep_in_the_trace_is_the_local_error(client, tmp_path):
    """The shards hand over the findings of 46 batches before they meet an
    unknown op at row 3,000: the check on the cluster ends with the error a
    local check gives (file, row, rule), not a report of the rows before it,
    and no shard is left waiting on a full queue."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from tracerace.api.cluster import check_on_cluster

    table = ipc.open_file(many_findings(tmp_path / "good.arrow")).read_all()
    op = table.column("op").to_numpy().copy()
    op[3000] = 99
    field = table.schema.get_field_index("op")
    table = table.set_column(field, table.schema.field(field), pa.array(op))
    path = str(tmp_path / "bad.arrow")
    with ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)
    [result] = check_on_cluster(
        [path], client, shards=2, batch_size=64, queue_items=1, hand_bytes=0
    )
    with pytest.raises(TraceError) as local:
        api.check(path, batch_size=64)
    assert isinstance(result, TraceError)
    assert (result.row, result.rule) == (3000, "unknown-op")
    assert str(result) == str(local.value)
    assert idle_within(client, 30)
    assert no_queues_left(client)


def no_queues_left(client, seconds: float = 10) -> bool:
    """Whether the scheduler holds none of the shards' queues (each with the
    hand-overs left in it) within ``seconds``."""
    import time

    def queues(dask_scheduler):
        return [n for n in dask_scheduler.extensions["queues"].queues if n.startswith("tracerace-")]

    deadline = time.monotonic() + seconds
    while client.run_on_scheduler(queues):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def idle_within(client, seconds: float) -> bool:
    """Whether every worker of ``client`` runs no task (seceded ones too)
    within ``seconds``."""
    import time

    def running(dask_worker):
        return len(dask_worker.state.executing) + len(dask_worker.state.long_running)

    deadline = time.monotonic() + seconds
    while any(client.run(running).values()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_traces_named_by_filesystem_uris(client, tmp_path):
    """A trace given as a pyarrow filesystem URI (here ``local://``, which
    pyarrow reads through its filesystem layer as it reads ``s3://``) is
    read by each worker a batch at a time and gives the local report, in
    every container; one that is not there, or a scheme pyarrow does not
    know, is that trace's one-line error."""
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    from tracerace.api.cluster import check_on_cluster

    arrow = many_findings(tmp_path / "many.arrow")
    table = ipc.open_file(arrow).read_all()
    stream, parquet = tmp_path / "many.arrows", tmp_path / "many.parquet"
    with ipc.new_stream(str(stream), table.schema) as writer:
        writer.write_table(table, max_chunksize=500)
    pq.write_table(table, parquet, row_group_size=500)
    sources = ["local://" + str(p) for p in (arrow, stream, parquet, tmp_path / "none.arrow")]
    reports = check_on_cluster(sources + ["nosuchscheme://b/t.arrow"], client, shards=2)
    local = text(api.check(arrow))
    assert [text(r) for r in reports[:3]] == [local] * 3
    assert (reports[3].rule, reports[3].path) == ("no-such-file", sources[3])
    assert (reports[4].rule, reports[4].path) == ("unreadable", "nosuchscheme://b/t.arrow")


def test_check_dask_on_the_command_line(client, tmp_path):
    from typer.testing import CliRunner

    from tracerace.cli import app

    racy = write_trace(tmp_path / "racy.arrow", barrier=False)
    clean = write_trace(tmp_path / "clean.arrow", barrier=True)
    result = CliRunner().invoke(
        app, ["check", "--dask", client.scheduler.address, racy, clean, "--no-progress"]
    )
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith(text(api.check(racy)) + text(api.check(clean)))
    assert "trace " in result.stdout.splitlines()[-4]


def closed_port() -> int:
    """A local port nothing listens on (bound for a moment, then let go)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_with_dask(address, trace, *extra):
    import time

    from typer.testing import CliRunner

    from tracerace.cli import app

    start = time.monotonic()
    result = CliRunner().invoke(app, ["check", "--dask", address, trace, "--no-progress", *extra])
    return result, time.monotonic() - start


def test_dask_scheduler_out_of_reach_is_one_line_in_bounded_time(tmp_path):
    """No scheduler at the address: exit 2 and one line after ``--dask-timeout``
    seconds, not the default wait."""
    racy = write_trace(tmp_path / "racy.arrow", barrier=False)
    address = f"tcp://127.0.0.1:{closed_port()}"
    result, took = check_with_dask(address, racy, "--dask-timeout", "1")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        f"tracerace: error: options: usage: cannot reach the Dask "
        f"scheduler at {address} within 1 s: "
    ), lines[0]
    assert result.stdout == ""
    assert took < 10


@pytest.mark.parametrize("address", ["foo://scheduler:8786", "tcp://127.0.0.1:port"])
def test_a_dask_address_that_is_none_is_one_line(address, tmp_path):
    racy = write_trace(tmp_path / "racy.arrow", barrier=False)
    result, _ = check_with_dask(address, racy, "--dask-timeout", "1")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"--dask {address!r} is not a Dask scheduler address" in lines[0], lines[0]


def test_dask_timeout_must_be_positive(tmp_path):
    racy = write_trace(tmp_path / "racy.arrow", barrier=False)
    result, _ = check_with_dask(f"tcp://127.0.0.1:{closed_port()}", racy, "--dask-timeout", "0")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        "tracerace: error: options: usage: --dask-timeout must be a positive number of "
        "seconds, not 0"
    ], result.stderr


def _wait_for_release(started: str, released: str) -> None:
    """(A task.) Mark ``started``, then ``released`` once the scheduler has let
    go of this task, as a shard asks at each batch's end."""
    import pathlib
    import time

    from tracerace.api.cluster import task_released

    gone = task_released()
    pathlib.Path(started).touch()
    deadline = time.monotonic() + 60
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.05)
    if gone():
        pathlib.Path(released).touch()


def test_a_running_shard_learns_that_its_client_left(client, tmp_path):
    """Dask does not stop a running task when its client leaves (a Ctrl-C on
    ``check --dask``): a shard asks ``task_released`` at every batch's end,
    and must see the client gone, not go on checking for nobody."""
    import time

    from distributed import Client

    started, released = tmp_path / "started", tmp_path / "released"
    leaving = Client(client.scheduler.address)
    future = leaving.submit(_wait_for_release, str(started), str(released), pure=False)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists() and not released.exists()
    del future
    leaving.close()
    deadline = time.monotonic() + 30
    while not released.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert released.exists()


def test_bench_dask_measures_a_check_on_a_cluster(tmp_path):
    """``python -m bench.dask`` (bench/README.md, "Checks on Dask") runs a
    check on a cluster of its own and reports the client's and the workers'
    peak memory."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    racy = write_trace(tmp_path / "racy.arrow", barrier=False)
    out = subprocess.run(
        [sys.executable, "-m", "bench.dask", "--trace", racy, "--reps", "1", "--tree", str(root)],
        cwd=root,
        env=dict(os.environ, PYTHONPATH=str(root)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    last = out.stdout.splitlines()[-1]
    client, largest, every = map(
        int, re.search(r"client (\d+) MiB, workers (\d+) MiB .* / (\d+) MiB", last).groups()
    )
    assert last.startswith("median of 1 (racy.arrow") and 50 < client and 50 < largest <= every
