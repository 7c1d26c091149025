"""The check object the CLI consumes (:class:`tracerace.api.Check`): its batches
hand over what the one-shot call keeps, the command line writes what the API's
report formats to, and a check stopped or failed half-way leaves no worker
behind."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest
from typer.testing import CliRunner

import tracerace
from tracerace.api import Check, make_options
from tracerace.checker.options import ENGINES
from tracerace.cli import app
from tracerace.errors import TraceError
from tracerace.report.output import render
from tracerace.scenarios import SCENARIOS

BATCH = 256
"""Rows per batch: the incident traces take a few dozen."""


@pytest.fixture(scope="module")
def incident(tmp_path_factory) -> str:
    """A racy incident trace with findings in many batches (raw and war)."""
    return SCENARIOS["incident4"].write(str(tmp_path_factory.mktemp("check") / "i4.arrow"))


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tracerace-check"]


@pytest.mark.parametrize("engine", ENGINES)
def test_batches_hand_over_every_finding_the_one_shot_check_keeps(incident, engine):
    options = make_options(engine=engine, batch_size=BATCH, max_reports="all")
    whole = tracerace.check(
        incident, engine=engine, batch_size=BATCH, max_reports="all", keep_findings=True
    )
    run = Check(incident, options, keep_findings=True)
    batches = list(run)
    report = run.report()
    assert batches[0].rows_done == 0 and len(batches[0].findings) == 0
    assert batches[0].meta is run.meta and batches[0].total_rows == whole.events
    done = [b.rows_done for b in batches]
    assert done == sorted(done) and done[-1] == whole.events
    assert len(batches) > 3  # the trace's findings came over several batches
    findings = np.concatenate([b.findings for b in batches])
    groups = np.concatenate([b.groups for b in batches])
    assert findings.tobytes() == whole.findings.tobytes()
    assert groups.tolist() == whole.group_of().tolist()
    assert report.to_json() == whole.to_json()
    assert report.findings.tobytes() == whole.findings.tobytes()


def test_a_check_without_iterating_is_the_one_shot_call(incident):
    report = Check(incident, make_options(batch_size=BATCH)).report()
    assert report.to_text() == tracerace.check(incident, batch_size=BATCH).to_text()


def test_report_finishes_a_check_begun_by_iterating(incident):
    options = make_options(batch_size=BATCH)
    run = Check(incident, options)
    batches = iter(run)
    next(batches)
    next(batches)
    assert run.report().to_json() == tracerace.check(incident, batch_size=BATCH).to_json()
    assert _workers() == []


def test_a_check_runs_once(incident):
    run = Check(incident)
    run.report()
    with pytest.raises(RuntimeError, match="runs once"):
        iter(run)


def test_leaving_a_check_half_way_stops_its_worker(incident):
    with Check(incident, make_options(batch_size=BATCH)) as run:
        for batch in run:
            if batch.rows_done >= 4 * BATCH:
                break
    assert _workers() == []
    with pytest.raises(RuntimeError, match="stopped before it ended"):
        run.report()


def test_leaving_a_check_in_shards_half_way_stops_every_shard(incident):
    """Each shard hands its batches over in turn; leaving the loop (Ctrl-C, a
    stop signal) wakes the one waiting, and every other shard stops at its
    next hand-over instead of waiting for a consumer that is gone."""
    left: list = []

    def leave_half_way() -> None:
        with Check(incident, make_options(batch_size=BATCH), jobs=2) as run:
            for batch in run:
                if batch.rows_done >= 4 * BATCH:
                    break
        left.append(run)

    # On a thread of its own, so that a check that hangs fails the test
    leaving = threading.Thread(target=leave_half_way, daemon=True)
    leaving.start()
    leaving.join(timeout=120)
    assert not leaving.is_alive(), "a shard waits for ever"
    assert left and _workers() == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_bad_row_past_the_first_batches_is_raised_to_the_consumer(tmp_path, engine):
    n, bad = 4 * BATCH, 3 * BATCH + 5
    op = np.zeros(n, np.uint8)
    op[bad] = 200  # no such op
    table = pa.table(
        {
            "ts": np.arange(n, dtype=np.uint64),
            "op": op,
            "launch": np.zeros(n, np.uint32),
            "block": np.zeros(n, np.uint32),
            "thread": np.arange(n, dtype=np.uint32),
        },
        metadata={"tracerace.version": "1"},
    )
    path = str(tmp_path / "bad.arrow")
    feather.write_feather(table, path)
    seen = []
    with pytest.raises(TraceError) as raised:
        with Check(path, make_options(engine=engine, batch_size=BATCH)) as run:
            for batch in run:
                seen.append(batch.rows_done)
    assert raised.value.path == path and raised.value.row == bad
    assert seen[0] == 0 and max(seen) < bad
    assert _workers() == []


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "html"])
def test_the_cli_writes_what_the_api_report_formats_to(incident, tmp_path, fmt):
    cli_out, api_out = tmp_path / f"cli.{fmt}", tmp_path / f"api.{fmt}"
    result = CliRunner().invoke(app, ["check", incident, "-f", fmt, "-o", str(cli_out)])
    assert result.exit_code == 1, result.output
    # the HTML heatmaps count every finding, as the CLI's streamed batches do
    render(tracerace.check(incident, keep_findings=True), fmt, api_out)
    assert cli_out.read_bytes() == api_out.read_bytes()


def test_the_cli_arrow_output_holds_the_api_findings(incident, tmp_path):
    out = tmp_path / "cli.arrow"
    result = CliRunner().invoke(app, ["check", incident, "-f", "arrow", "-o", str(out)])
    assert result.exit_code == 1, result.output
    written = feather.read_table(str(out))
    assert written.equals(tracerace.check(incident, keep_findings=True).to_arrow())
