"""What N cores give at most: ``python -m bench.ceiling [--threads 1,2]``.

Checks in shards run one nogil Numba replay per thread. Before blaming the
engine for a speedup under N, this times three trivial nogil Numba loops on
1..N threads at once, each thread doing the same work, and prints each
count's throughput over one thread's:

* ``stream``: a sum over a 1 GiB array, read in order (memory bandwidth);
* ``gather``: a sum over random elements of it (one cache miss per step,
  as the shadow memory's lists mostly are);
* ``compute``: a multiply-xor chain in registers (one core's arithmetic).

A virtual machine whose cores share one physical core's pipelines, or
whose host is busy, shows it here; so does a memory bus that two cores
already fill.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def stream(a: np.ndarray, reps: int) -> int:
    s = 0
    for _ in range(reps):
        for i in range(a.shape[0]):
            s += a[i]
    return s


@numba.njit(nogil=True, cache=True)
def gather(a: np.ndarray, idx: np.ndarray) -> int:
    s = 0
    for i in range(idx.shape[0]):
        s += a[idx[i]]
    return s


@numba.njit(nogil=True, cache=True)
def compute(n: int) -> int:
    h = np.int64(1)
    for _ in range(n):
        h = (h * np.int64(-7046029254386353131)) ^ (h >> 29)
    return h


def timed(work: Callable[[], object], threads: int) -> float:
    """Seconds for ``threads`` threads to run ``work`` once each, side by side."""
    pool = [threading.Thread(target=work) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ceiling", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--reps", type=int, default=3, help="timings per point (the best)")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="work per thread (1: a 1 GiB array, ~1 s)"
    )
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.threads.split(",")]
    # 1 GiB at scale 1, shared by the threads (read only)
    big = np.ones(max(16, int(args.scale * (1 << 27))), np.int64)
    idx = np.random.default_rng(0).integers(0, big.shape[0], max(16, int(args.scale * (1 << 24))))
    stream(big[:16], 1), gather(big, idx[:16]), compute(16)  # compile
    steps = max(16, int(args.scale * 400_000_000))
    cases: dict[str, Callable[[], object]] = {
        "stream": lambda: stream(big, 2),
        "gather": lambda: gather(big, idx),
        "compute": lambda: compute(steps),
    }
    print(f"{'loop':<8} " + " ".join(f"{n:>3} threads" for n in counts))
    for name, work in cases.items():
        best = {n: min(timed(work, n) for _ in range(args.reps)) for n in counts}
        # n threads do n times one thread's work: throughput over one thread's.
        ratios = [n * best[counts[0]] / (counts[0] * best[n]) for n in counts]
        print(f"{name:<8} " + " ".join(f"{r:>10.2f}x" for r in ratios), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
