"""A check on a Dask cluster: wall time, the client's peak RSS and the workers'.

    python -m bench.dask --workload read_once --size 1e7 --reps 3
    python -m bench.dask --trace some.arrow --tree ../old-checkout

Starts a ``LocalCluster`` of ``--workers`` worker processes (one thread
each) in a process of its own, then runs ``tracerace check --dask ADDRESS
TRACE --format json`` ``--reps`` times, each in a fresh process, while it
samples the RSS of every worker process every 0.1 s. Per run and as medians:
the wall time, the client's peak RSS (its ``ru_maxrss``) and the workers'
(the largest one, and the largest sum over all of them at one sample).
``--tree DIR``: the checkout whose ``tracerace`` the cluster and the client
import (default: this one), to pair a change against the code before it.
The trace comes from ``bench.run``'s cache (``--workload``, ``--size``) or
``--trace``. See docs/parallel.md (Dask) for how the findings travel.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .run import DEFAULT_DATA, ROOT, ensure_trace, parse_size

CLUSTER = """
import sys, time
from distributed import LocalCluster
with LocalCluster(n_workers=int(sys.argv[2]), threads_per_worker=1, processes=True,
                  dashboard_address=None) as cluster:
    open(sys.argv[1] + ".tmp", "w").write(cluster.scheduler_address)
    import os; os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        time.sleep(1)
"""


class Workers:
    """Samples the RSS of every process below ``pid`` (the cluster's workers
    and nannies) on a thread of its own until :meth:`stop`."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.max = self.sum = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                rss = [p.memory_info().rss for p in self.root.children(recursive=True)]
            except psutil.Error:
                continue
            if rss:
                self.max, self.sum = max(self.max, max(rss)), max(self.sum, sum(rss))
            time.sleep(0.1)

    def stop(self) -> tuple[int, int]:
        self._stop.set()
        self._thread.join()
        return self.max, self.sum


def one_check(address: str, trace: str, env: dict, cluster_pid: int) -> dict:
    workers = Workers(cluster_pid)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "tracerace", "check", "--dask", address, trace]
        + ["--format", "json", "--no-progress"],
        env=env,
        cwd=env["PYTHONPATH"],  # a ``-m`` module puts its working directory first on the path
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    peak_max, peak_sum = workers.stop()
    if run.returncode not in (0, 1):
        raise SystemExit(f"check --dask failed ({run.returncode}): {run.stderr.strip()}")
    client = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if client <= before:  # ru_maxrss of children is their largest so far
        client = before
    return dict(
        wall_s=wall,
        client_mib=client / 1024,
        worker_max_mib=peak_max / 2**20,
        worker_sum_mib=peak_sum / 2**20,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--workload", default="read_once")
    ap.add_argument("--size", default="1e6")
    ap.add_argument("--trace", help="a trace to check instead of a generated one")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tree", default=str(ROOT), help="the checkout whose tracerace runs")
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    args = ap.parse_args(argv)
    if args.trace:
        trace = args.trace
    else:
        path, _ = ensure_trace(
            args.workload,
            parse_size(args.size),
            args.size,
            Path(args.data),
            "lz4",
            False,
            lambda msg: print(msg, file=sys.stderr),
        )
        trace = str(path)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(args.tree))
    with tempfile.TemporaryDirectory() as tmp:
        addr_file = os.path.join(tmp, "address")
        cluster = subprocess.Popen(
            [sys.executable, "-c", CLUSTER, addr_file, str(args.workers)],
            env=env,
            cwd=env["PYTHONPATH"],  # ``-c`` puts the working directory first on the path
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while not os.path.exists(addr_file):
                if cluster.poll() is not None:
                    raise SystemExit("the LocalCluster did not start")
                time.sleep(0.1)
            address = Path(addr_file).read_text()
            runs = []
            for rep in range(args.reps):
                # A fresh process per run; ru_maxrss of children only grows,
                # so each run is measured in a process of its own below.
                out = subprocess.run(
                    [sys.executable, "-m", "bench.dask", "--one", address, trace, str(cluster.pid)],
                    env=dict(os.environ, PYTHONPATH=str(ROOT), TRACERACE_TREE=env["PYTHONPATH"]),
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs.append(dict(zip(FIELDS, map(float, out.stdout.split()))))
                print(f"run {rep + 1}: " + row(runs[-1]), flush=True)
        finally:
            cluster.terminate()
            cluster.wait()
    median = {k: statistics.median(r[k] for r in runs) for k in FIELDS}
    print(f"median of {len(runs)} ({Path(trace).name}, tree {args.tree}): " + row(median))
    return 0


FIELDS = ("wall_s", "client_mib", "worker_max_mib", "worker_sum_mib")


def row(r: dict) -> str:
    return (
        f"{r['wall_s']:.2f} s, client {r['client_mib']:.0f} MiB, "
        f"workers {r['worker_max_mib']:.0f} MiB (largest) / {r['worker_sum_mib']:.0f} MiB (all)"
    )


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        _, _, address, trace, pid = sys.argv
        env = dict(os.environ, PYTHONPATH=os.environ["TRACERACE_TREE"])
        r = one_check(address, trace, env, int(pid))
        print(" ".join(str(r[k]) for k in FIELDS))
        sys.exit(0)
    sys.exit(main())
