"""Checks in shards: events/s of ``tracerace.check(path, jobs=N)`` for each N.

    python -m bench.jobs --size 1e7,1e8 --workload tiled,pipeline,cpu --jobs 1,2

For every workload and size the trace is generated once (cached as by
``bench.run``; uncompressed by default, so that every shard maps the file
rather than decoding it), read once into the page cache and checked once
untimed (what the warm-up below does not compile), then for each N a
fresh process warms Numba on a two-row trace (checked in N shards too: a shard
has its own replay kernel) and times one check with ``jobs=N`` (``--reps``: the
median of several), reporting events/s, its speedup over the first N given and
the process's peak RSS. The results go to stdout as a table and, with
``--out``, merged into a JSON file keyed by workload, size and N. See docs/parallel.md
for what each shard reads and replays.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .run import DEFAULT_DATA, ROOT, ensure_trace, parse_size


def child(path: str, jobs: int, batch_size: int | None = None) -> dict:
    """(In a fresh process.) One timed check of ``path`` in ``jobs`` shards
    (``batch_size``: rows a batch, else the reader's default)."""
    import tracerace
    from tracerace.trace.writer import write_table

    from .measure import _max_rss_bytes, _tiny

    # A file, checked in as many shards as the timed check: a mapped file's
    # read-only columns are kernels of their own (and so are the shards'), and
    # their first use loads (or compiles) them.
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny.arrow"
        write_table(tiny, _tiny())
        tracerace.check(str(tiny), jobs=jobs)
    sampler = ThreadTimes()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    sampler.start()
    options = {} if batch_size is None else {"batch_size": batch_size}
    report = tracerace.check(path, jobs=jobs, **options)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    busiest = sampler.stop()
    return {
        "seconds": seconds,
        "events": report.events,
        "findings": int(report.total),
        "process_max_rss_bytes": _max_rss_bytes(),
        "cores_busy": cpu / seconds,
        "busiest_thread": busiest / seconds if busiest is not None else None,
    }


class ThreadTimes(threading.Thread):
    """The CPU seconds of the process's busiest thread during a check, from
    ``/proc/self/task/*/stat`` read every 50 ms (Linux; None elsewhere). With
    ``cores_busy`` it tells a serial stage (one thread near 1.0, the others
    waiting) from work spread over every shard."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.done = threading.Event()

    def read(self) -> dict[str, float]:
        times = {}
        for task in Path("/proc/self/task").glob("*"):
            try:
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # the thread ended
            times[task.name] = (int(fields[11]) + int(fields[12])) / self.tick
        return times

    def run(self) -> None:
        while not self.done.wait(0.05):
            self.last.update(self.read())  # a thread started since counts from 0

    def start(self) -> None:
        if Path("/proc/self/task").is_dir():
            self.first = self.read()
            super().start()

    def stop(self) -> float | None:
        if not self.is_alive():
            return None
        self.done.set()
        self.join()
        return max((t - self.first.get(tid, 0.0) for tid, t in self.last.items()), default=0.0)


def run_one(path: Path, jobs: int, batch_size: int | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    with tempfile.TemporaryFile() as out:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.jobs", "--child", str(path), str(jobs)]
            + ([] if batch_size is None else [str(batch_size)]),
            stdout=out,
            env=env,
            check=False,
        )
        out.seek(0)
        text = out.read().decode()
    if proc.returncode != 0:
        raise SystemExit(
            f"bench.jobs: the check of {path} with jobs={jobs} failed (exit {proc.returncode})"
        )
    return json.loads(text.strip().splitlines()[-1])


def read_through(path: Path) -> None:
    """Reads the file once, so that every point finds it in the page cache: the
    first point would otherwise pay the disk for all the others."""
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 24):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.jobs", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--size", default="1e7,1e8", help="comma-separated event counts")
    parser.add_argument("--workload", default="tiled,pipeline,cpu", help="comma-separated")
    parser.add_argument("--jobs", default="1,2", help="comma-separated shard counts")
    parser.add_argument("--reps", type=int, default=1, help="timed checks per point (median)")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA), help="trace cache directory")
    parser.add_argument("--compression", default="none", choices=("lz4", "zstd", "none"))
    parser.add_argument("--out", default=None, help="results JSON to merge into")
    parser.add_argument(
        "--plot", default=None, help="speedup curve PNG of the --out file (needs matplotlib)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, help="rows a batch (default: the reader's)"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        batch = int(args.child[2]) if len(args.child) > 2 else None
        print(json.dumps(child(args.child[0], int(args.child[1]), batch)))
        return 0
    sizes = [(label, parse_size(label)) for label in args.size.split(",")]
    names = args.workload.split(",")
    jobs = [int(j) for j in args.jobs.split(",")]
    compression = None if args.compression == "none" else args.compression
    results: dict = {}

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    print(
        f"{'workload':<10} {'size':>6} {'jobs':>4} {'events/s':>12} {'speedup':>8} {'peak RSS':>10}"
        f" {'cores':>6} {'busiest':>7}"
    )
    for name in names:
        for label, n in sizes:
            path, info = ensure_trace(name, n, label, Path(args.data_dir), compression, False, log)
            read_through(path)
            # Untimed: a first check may compile what the two-row warm-up does
            # not reach (a pool's growth, a table's rehash), and with an empty
            # Numba cache the first point paid for it (tiled 10^7: 4.3 M
            # events/s, then 18 M at the next point).
            run_one(path, jobs[0], args.batch_size)
            base = None
            for j in jobs:
                runs = [run_one(path, j, args.batch_size) for _ in range(max(1, args.reps))]
                seconds = statistics.median(r["seconds"] for r in runs)
                events = runs[0]["events"]
                rate = events / seconds
                base = base or rate
                rss = max(r["process_max_rss_bytes"] for r in runs)
                cores = statistics.median(r["cores_busy"] for r in runs)
                busiest = [r["busiest_thread"] for r in runs if r["busiest_thread"] is not None]
                top = statistics.median(busiest) if busiest else None
                results.setdefault(name, {}).setdefault(label, {})[str(j)] = {
                    "events": events,
                    "seconds": seconds,
                    "events_per_s": rate,
                    "speedup": rate / base,
                    "peak_rss_bytes": rss,
                    "findings": runs[0]["findings"],
                    "cores_busy": cores,
                    "busiest_thread": top,
                }
                shown = "-" if top is None else f"{top:.2f}"
                print(
                    f"{name:<10} {label:>6} {j:>4} {rate:>12,.0f} {rate / base:>7.2f}x "
                    f"{rss / 2**20:>8.0f}Mi {cores:>6.2f} {shown:>7}",
                    flush=True,
                )
    if args.out:
        out = Path(args.out)
        old = json.loads(out.read_text()) if out.exists() else {}
        for name, by_size in results.items():
            for label, by_jobs in by_size.items():
                old.setdefault(name, {}).setdefault(label, {}).update(by_jobs)
        out.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
        if args.plot:
            plot(old, Path(args.plot))
    return 0


def plot(results: dict, path: Path) -> None:
    """Speedup over the fewest jobs against jobs, one line per workload and size,
    with the ideal line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    most = 1
    for name, by_size in sorted(results.items()):
        for label, by_jobs in sorted(by_size.items()):
            points = sorted((int(j), r["speedup"]) for j, r in by_jobs.items())
            most = max(most, points[-1][0])
            ax.plot(*zip(*points), marker="o", label=f"{name} {label}")
    ax.plot([1, most], [1, most], color="grey", linestyle=":", label="ideal")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("--jobs (shards)")
    ax.set_ylabel("events/s over --jobs 1")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
