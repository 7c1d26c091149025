"""Checks on a Dask cluster (tracerace.cluster): a LocalCluster of two worker
processes gives the report a local check gives, for one trace and several."""

from __future__ import annotations

import io

import pytest

from tracerace import api
from tracerace.report.output import render
from tracerace.errors import TraceError

from test_cli_check import write_trace

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
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


def test_check_dask_on_the_command_line(client, tmp_path):
    from typer.testing import CliRunner

    from tracerace.cli import app

    racy = write_trace(tmp_path / "racy.arrow", barrier=False)
    clean = write_trace(tmp_path / "clean.arrow", barrier=True)
    result = CliRunner().invoke(app, ["check", "--dask", client.scheduler.address, racy, clean,
                                      "--no-progress"])
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith(text(api.check(racy)) + text(api.check(clean)))
    assert "trace " in result.stdout.splitlines()[-4]
