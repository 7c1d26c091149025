"""pytest plugin: record the kernels a test launches, check them, fail on hazards.

Off unless asked for: ``pytest --tracerace`` records every test, and
``@pytest.mark.tracerace`` (or ``@pytest.mark.tracerace(backend="triton")``)
records one test. Registered as the ``tracerace`` entry point of ``pytest11``,
so installing tracerace makes the options available.

A recorded test runs in a child pytest (the same node id) under the recorder
of its backend (:func:`tracerace.record.record`: ``numba``, Numba's CUDA
simulator, the default; ``triton``, Triton's interpreter), which writes a
trace of every kernel launch; the parent then checks the trace and

* fails the test when the test itself failed in the child (its own report);
* fails it when the recording failed (the recorder's one-line reason);
* fails it on error-severity hazards, with the text report in the message;
* writes ``<test>.arrow`` (the trace), ``.sarif`` and ``.html`` to the report
  folder (``--tracerace-dir``, default ``tracerace-reports``), source lines
  and file locations only from ``--tracerace-source-root`` (none by default);
* passes it otherwise. A test that launched no kernel of its backend passes
  with a line in the terminal summary saying that nothing was checked.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

CHILD = "TRACERACE_PYTEST_CHILD"
"""Set in the recorded child: the plugin there records outcomes, not kernels."""

MARKER = "tracerace"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tracerace", "race detection of recorded kernels")
    group.addoption(
        "--tracerace",
        action="store_true",
        default=False,
        help="Record and check the kernels every test launches "
        "(@pytest.mark.tracerace does it for one test).",
    )
    group.addoption(
        "--tracerace-dir",
        default="tracerace-reports",
        metavar="DIR",
        help="Folder for each recorded test's trace, SARIF and HTML reports "
        "(default: tracerace-reports).",
    )
    group.addoption(
        "--tracerace-backend",
        default="numba",
        choices=("numba", "triton"),
        help="Recorder for the tests' kernels (default numba; a marker's backend= wins).",
    )
    group.addoption(
        "--tracerace-source-root",
        action="append",
        default=[],
        metavar="DIR",
        help="Directory the HTML report may show source lines from and SARIF "
        "may name files in (repeatable; default: none, no source file is "
        "read).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "tracerace(backend='numba'): record the kernels this test launches, check "
        "them with tracerace and fail on error-severity hazards",
    )
    config._tracerace_notes = []  # type: ignore[attr-defined]


def _wanted(item: pytest.Item) -> str | None:
    """The backend to record ``item`` with, or None when it is not recorded."""
    if os.environ.get(CHILD):
        return None
    marker = item.get_closest_marker(MARKER)
    if marker is None and not item.config.getoption("tracerace"):
        return None
    if marker is not None and "backend" in marker.kwargs:
        return str(marker.kwargs["backend"])
    return item.config.getoption("tracerace_backend")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    backend = _wanted(pyfuncitem)
    if backend is None:
        return None
    _record_and_check(pyfuncitem, backend)
    return True


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In the child: write the test's outcome for the parent."""
    path = os.environ.get(CHILD)
    if not path or (report.when != "call" and report.passed):
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {"when": report.when, "outcome": report.outcome, "text": report.longreprtext}
            )
            + "\n"
        )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    notes = getattr(config, "_tracerace_notes", [])
    if notes:
        terminalreporter.section("tracerace")
        for line in notes:
            terminalreporter.write_line(line)


# -- the parent ---------------------------------------------------------------------------


def _record_and_check(item: pytest.Function, backend: str) -> None:
    import tracerace
    from tracerace.errors import TraceError
    from tracerace.record import record
    from tracerace.report import output

    config = item.config
    folder = Path(config.getoption("tracerace_dir"))
    if not folder.is_absolute():
        folder = Path(config.invocation_params.dir) / folder
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^\w.-]+", "_", item.nodeid).strip("_")
    trace = folder / f"{stem}.arrow"
    command = [
        "python",
        "-m",
        "pytest",
        item.nodeid,
        "-q",
        "--no-header",
        "-p",
        "no:cacheprovider",
        *_plugin_args(config),
    ]
    with tempfile.TemporaryDirectory(prefix="tracerace-pytest-") as tmp:
        outcomes = os.path.join(tmp, "outcomes.jsonl")
        previous = {k: os.environ.get(k) for k in (CHILD,)}
        os.environ[CHILD] = outcomes
        cwd = os.getcwd()
        try:
            os.chdir(config.rootpath)
            result, failure = record(command, str(trace), backend=backend), None
        except TraceError as err:
            result, failure = None, err
        finally:
            os.chdir(cwd)
            for key, value in previous.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        child = _outcomes(outcomes)
    notes = config._tracerace_notes  # type: ignore[attr-defined]
    bad = next((o for o in child if o["outcome"] == "failed"), None)
    if bad is not None:
        pytest.fail(
            f"the test failed under tracerace's {backend} recorder:\n{bad['text']}", pytrace=False
        )
    skipped = next((o for o in child if o["outcome"] == "skipped"), None)
    if skipped is not None:
        pytest.skip(f"skipped under tracerace's recorder: {skipped['text']}")
    if failure is not None:
        if "launched no" in str(failure):
            notes.append(f"{item.nodeid}: launched no {backend} kernel, nothing was checked")
            return
        pytest.fail(f"tracerace could not record this test: {failure}", pytrace=False)
    if not child:
        pytest.fail(
            f"the test did not run under tracerace's recorder (pytest exit status "
            f"{result.exit_code})",
            pytrace=False,
        )
    report = tracerace.check(str(trace))
    written = []
    for fmt in ("sarif", "html"):
        path = folder / f"{stem}.{fmt}"
        try:
            output.render(
                report, fmt, str(path), source_roots=config.getoption("tracerace_source_root")
            )
        except TraceError as err:
            pytest.fail(f"tracerace could not write its {fmt} report: {err}", pytrace=False)
        written.append(str(path))
    where = f"reports: {', '.join(written)}; trace: {trace}"
    notes.append(f"{item.nodeid}: {report.summary_line()} ({where})")
    if report.errors:
        pytest.fail(
            f"tracerace: {report.summary_line()}\n\n{report.to_text()}\n{where}", pytrace=False
        )


def _plugin_args(config: pytest.Config) -> list[str]:
    """``-p tracerace.pytest_plugin`` when this plugin was not loaded by its entry
    point (the child loads entry points itself; naming it twice is an error)."""
    module = sys.modules[__name__]
    name = config.pluginmanager.get_name(module)
    return [] if name == MARKER else ["-p", __name__]


def _outcomes(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except OSError:
        return []
