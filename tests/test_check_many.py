"""`tracerace check` of several traces or a directory, and `--jobs`: one report
per trace, a summary table, the worst exit code; the same reports as one by one."""

from __future__ import annotations

import json
import signal
import threading
import time

import numpy as np
import pytest
from test_cli_check import write_trace
from typer.testing import CliRunner

from tracerace import api
from tracerace.checker import parallel
from tracerace.cli import app
from tracerace.trace.writer import write_table


def run(*args: str):
    return CliRunner().invoke(app, ["check", *args])


@pytest.fixture
def traces(tmp_path):
    d = tmp_path / "ci"
    d.mkdir()
    racy = write_trace(d / "racy.arrow", barrier=False)
    clean = write_trace(d / "clean.arrow", barrier=True)
    return d, racy, clean


def test_several_traces_each_reported_then_a_summary(traces):
    _, racy, clean = traces
    result = run(clean, racy, "--jobs", "2", "--no-progress")
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert out.index("no hazards") < out.index("error waw: 1 hazard")  # in the order given
    table = out[out.rindex("\ntrace ") + 1 :].splitlines()
    assert table[0].split() == ["trace", "events", "hazards", "errors", "warnings", "exit"]
    assert table[2].split()[1:] == ["4", "0", "0", "0", "0"]
    assert table[3].split()[1:] == ["2", "1", "1", "0", "1"]


def test_a_directory_is_its_traces_and_bad_input_is_the_worst(traces):
    d, racy, clean = traces
    (d / "bad.arrow").write_text("not a trace")
    (d / "notes.txt").write_text("ignored")
    result = run(str(d), "--no-progress")
    assert result.exit_code == 2, result.output
    assert "bad.arrow: not-arrow" in result.stderr
    rows = [line.split()[0] for line in result.stdout.splitlines() if line.startswith(str(d))]
    assert rows == [str(d / "bad.arrow"), clean, racy]


def test_several_traces_write_one_report_file_each(traces, tmp_path):
    d, racy, clean = traces
    out = tmp_path / "reports"
    result = run(racy, clean, "--format", "json", "--output", str(out), "--no-progress")
    assert result.exit_code == 1, result.output
    files = sorted(p.name for p in out.iterdir())
    assert files == ["clean.json", "racy.json"]
    one = json.loads((out / "racy.json").read_text())
    alone = tmp_path / "alone.json"
    assert run(racy, "--format", "json", "--output", str(alone)).exit_code == 1
    assert one == json.loads(alone.read_text())


def test_several_traces_in_json_on_stdout_is_a_usage_error(traces):
    _, racy, clean = traces
    result = run(racy, clean, "--format", "json")
    assert result.exit_code == 2
    assert "need --output DIRECTORY" in result.stderr


def test_jobs_with_the_reference_checker_is_a_usage_error(traces):
    _, racy, _ = traces
    result = run(racy, "--engine", "reference", "--jobs", "2")
    assert result.exit_code == 2
    assert "reference checker runs on one thread" in result.stderr


def test_check_many_reports_as_check_does(traces):
    _, racy, clean = traces
    many = api.check_many([racy, clean], jobs=2)
    for path, report in zip([racy, clean], many):
        alone = api.check(path)
        assert report.summary == alone.summary
        assert report.exit_code == alone.exit_code


def test_check_many_counts_progress_over_every_trace(traces):
    _, racy, clean = traces
    calls = []
    api.check_many(
        [racy, clean, racy], jobs=2, progress=lambda done, total: calls.append((done, total))
    )
    assert calls[0] == (0, 2 + 4 + 2)
    assert calls[-1] == (8, 8) and all(d <= t for d, t in calls)


def test_an_interrupted_check_of_many_traces_stops_its_shards(tmp_path):
    """Ctrl-C while several traces are checked: the interrupt is raised once
    each running shard has ended its batch, and the traces' other batches are
    never checked (not every trace checked to its end first)."""
    n, batch = 64 * 200, 64
    paths = []
    for name in ("a.arrow", "b.arrow"):
        paths.append(str(tmp_path / name))
        write_table(
            paths[-1],
            dict(
                ts=np.arange(n),
                op=1,
                launch=0,
                block=0,
                thread=np.arange(n) % 32,
                addr=8 * np.arange(n),
                size=8,
            ),
        )
    main = threading.main_thread().ident
    consumed: list = []

    def consume(findings) -> None:
        consumed.append(len(findings))
        if len(consumed) == 1:
            signal.pthread_kill(main, signal.SIGINT)
        time.sleep(0.01)  # every hand-over: 4 s for them all, time to see the interrupt

    assert threading.current_thread() is threading.main_thread()
    with pytest.raises(KeyboardInterrupt):
        parallel.check_traces(paths, 2, [consume, consume], batch_size=batch)
    assert 1 <= len(consumed) < 100  # of 2 x 201 hand-overs
    assert not [t for t in threading.enumerate() if t.name.startswith("tracerace-shard")]
