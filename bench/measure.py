"""One measurement, meant to run in a fresh process: ``python -m bench.measure MODE ...``.

Modes (the result is one JSON object on the last line of stdout):

* ``check PATH [--engine numba|reference]``: ``tracerace.check(PATH)`` after a
  warm-up check of a two-row trace (so Numba's cached kernels are loaded and
  the timed call measures the trace, not the import). ``read_seconds`` is
  the time spent producing batches (reading, decoding and validating), on
  the engine's read-ahead thread, so it overlaps the replay;
  ``wait_seconds`` is the time the engine waited for a batch, and
  ``seconds - wait_seconds`` is checking and building the report.
  ``group_seconds`` is the part of the check spent grouping the findings
  (``tracerace.group.groups``), and ``text_seconds`` / ``json_seconds`` the
  rendering of the report as text and as JSON (default ``max_reports``) to
  ``/dev/null`` afterwards, each from a fresh ``Report`` of the same groups.
* ``read PATH``: the read-only floor: iterate ``open_trace(PATH)`` and touch
  every column of every batch.
* ``state PATH``: a kernel-only replay of PATH (findings dropped as they are
  handed over) and the engine state it leaves: live granules, nodes in use,
  ``live_bytes_per_granule`` (the granule rows and node rows in use, per
  granule) and ``table_bytes_per_granule`` (every table as allocated, per
  granule).
* ``startup``: import tracerace and check a two-row trace; with an empty
  ``NUMBA_CACHE_DIR`` this is the cold start (the kernels compile), with the
  usual cache the warm start. The parent times the whole process.

Every mode reports the process's peak RSS (``process_max_rss_bytes``, from
``VmHWM``), which ``bench.run`` takes as the check's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Iterator


def _tiny():
    from tracerace.trace.writer import make_table

    return make_table(
        {
            "ts": [0, 1],
            "op": ["write", "read"],
            "launch": 0,
            "block": 0,
            "thread": [0, 1],
            "addr": 0,
            "size": 4,
        }
    )


def _max_rss_bytes() -> int:
    """This process's peak resident set: ``VmHWM`` of ``/proc/self/status``.

    Not ``ru_maxrss``: Linux carries the parent's resident set at the fork
    over the exec into the child's ``ru_maxrss`` (and so into what ``wait4``
    reports), so a child of a 400 MiB parent would never report less.
    ``VmHWM`` belongs to the child's own address space.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # elsewhere: best effort


class TimedReader:
    """A TraceReader whose batch production is timed (the engine sees the same batches)."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.seconds = 0.0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __iter__(self) -> Iterator:
        it = iter(self._inner)
        clock = time.perf_counter
        while True:
            t0 = clock()
            try:
                batch = next(it)
            except StopIteration:
                self.seconds += clock() - t0
                return
            self.seconds += clock() - t0
            yield batch

    def close(self) -> None:
        self._inner.close()


class TimedBatches:
    """The engine's read-ahead iterator, timing how long the engine waits."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.seconds = 0.0

    def __iter__(self):
        return self

    def __next__(self):
        t0 = time.perf_counter()
        try:
            return next(self._inner)
        finally:
            self.seconds += time.perf_counter() - t0

    def close(self) -> None:
        self._inner.close()


def run_check(path: str, engine: str = "numba") -> dict:
    import tracerace
    import tracerace.trace.reader as reader_module

    t0 = time.perf_counter()
    tracerace.check(_tiny(), engine=engine)
    warmup = time.perf_counter() - t0
    base_rss = _max_rss_bytes()

    opened: list[TimedReader] = []
    original = reader_module.open_trace

    def timed_open(*args, **kwargs):
        reader = TimedReader(original(*args, **kwargs))
        opened.append(reader)
        return reader

    import tracerace.checker.engine as engine_module

    waits: list[TimedBatches] = []
    original_prefetch = engine_module.prefetch

    def timed_prefetch(*args, **kwargs):
        batches = TimedBatches(original_prefetch(*args, **kwargs))
        waits.append(batches)
        return batches

    import tracerace.group.groups as groups_module

    grouping = [0.0]
    originals = {
        name: getattr(groups_module.GroupBuilder, name) for name in ("__init__", "add", "table")
    }

    def timed(method):
        def run(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                grouping[0] += time.perf_counter() - t0

        return run

    reader_module.open_trace = timed_open  # api.check imports it at call time
    engine_module.prefetch = timed_prefetch
    for name, method in originals.items():
        setattr(groups_module.GroupBuilder, name, timed(method))
    try:
        t0 = time.perf_counter()
        report = tracerace.check(path, engine=engine)
        seconds = time.perf_counter() - t0
    finally:
        reader_module.open_trace = original
        engine_module.prefetch = original_prefetch
        for name, method in originals.items():
            setattr(groups_module.GroupBuilder, name, method)
    rendering = {fmt: _render_seconds(report, fmt) for fmt in ("text", "json")}
    summary = report.summary
    return {
        "mode": "check",
        "engine": engine,
        "seconds": seconds,
        "read_seconds": sum(r.seconds for r in opened),
        "wait_seconds": sum(w.seconds for w in waits) if waits else None,
        "group_seconds": grouping[0],
        "text_seconds": rendering["text"],
        "json_seconds": rendering["json"],
        "events": report.events,
        "hazards": report.total,
        "groups": report.group_count,
        "errors": report.errors,
        "racy_rows": summary["racy_rows"],
        "by_kind": {k: v for k, v in summary["by_kind"].items() if v},
        "warmup_seconds": warmup,
        "base_rss_bytes": base_rss,
        "process_max_rss_bytes": _max_rss_bytes(),
    }


def _render_seconds(report, fmt: str) -> float:
    """Seconds to write ``report`` as ``fmt`` to /dev/null, from a fresh Report."""
    import os

    from tracerace.report import Report, output

    fresh = Report(report.events, report.meta, report.table, report.options)
    with open(os.devnull, "w") as out:
        t0 = time.perf_counter()
        output.render(fresh, fmt, out)
        return time.perf_counter() - t0


def run_read(path: str) -> dict:
    from tracerace.trace.reader import open_trace

    for _ in open_trace(_tiny()):  # first-use costs, as the check's warm-up pays them
        pass
    t0 = time.perf_counter()
    events = 0
    touched = 0
    with open_trace(path) as reader:
        for batch in reader:
            for values in batch.cols.values():
                touched ^= int(values.max())  # reads every byte of the column
            events += batch.n
    seconds = time.perf_counter() - t0
    return {
        "mode": "read",
        "seconds": seconds,
        "events": events,
        "process_max_rss_bytes": _max_rss_bytes(),
    }


def run_state(path: str) -> dict:
    import numpy as np

    from tracerace.checker.engine.check import close_launch, replay_batch
    from tracerace.checker.engine.layout import (
        G_FIELDS,
        I_SHADED,
        K_FIELDS,
        N_FIELDS,
        N_INFO,
        S_FIELDS,
        SV_GRAN_COUNT,
        SV_NODE_TOP,
        SV_NODE_USED,
    )
    from tracerace.checker.engine.state import EngineState
    from tracerace.trace.reader import open_trace

    st = EngineState()
    dropped = [0]

    def drop(rows) -> None:
        dropped[0] += len(rows)

    events = 0
    with open_trace(path) as reader:
        st.read_rows_from(reader)  # not every batch kept for its rows
        for batch in reader:
            replay_batch(st, batch, path, None, drop)
            events += batch.n
    close_launch(st)
    granules = int(st.sv[SV_GRAN_COUNT])
    nodes = int(st.sv[SV_NODE_USED])
    # A node's shade row only once it is shaded (layout, I_SHADED): counted by
    # the rows below the pool's top that are (free rows keep their info).
    top = int(st.sv[SV_NODE_TOP])
    shaded = int(np.count_nonzero(st.arrays["nodes"][:top, N_INFO] & I_SHADED))
    live = 8 * (granules * G_FIELDS + nodes * (N_FIELDS + K_FIELDS) + shaded * S_FIELDS)
    tables = int(st.nbytes)
    per = max(granules, 1)
    return {
        "mode": "state",
        "events": events,
        "granules": granules,
        "nodes": nodes,
        "live_bytes": live,
        "table_bytes": tables,
        "live_bytes_per_granule": live / per,
        "table_bytes_per_granule": tables / per,
        "process_max_rss_bytes": _max_rss_bytes(),
    }


def run_startup() -> dict:
    t0 = time.perf_counter()
    import tracerace
    import tracerace.checker.engine  # noqa: F401  (numba and the kernels' module)

    imported = time.perf_counter()
    tracerace.check(_tiny())
    done = time.perf_counter()
    return {
        "mode": "startup",
        "import_seconds": imported - t0,
        "first_check_seconds": done - imported,
        "process_max_rss_bytes": _max_rss_bytes(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.measure")
    parser.add_argument("mode", choices=("check", "read", "state", "startup"))
    parser.add_argument("path", nargs="?")
    parser.add_argument("--engine", default="numba")
    args = parser.parse_args(argv)
    if args.mode != "startup" and not args.path:
        parser.error(f"{args.mode} needs a trace path")
    if args.mode == "check":
        result = run_check(args.path, args.engine)
    elif args.mode == "read":
        result = run_read(args.path)
    elif args.mode == "state":
        result = run_state(args.path)
    else:
        result = run_startup()
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
