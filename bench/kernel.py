"""Kernel-only replay rate: ``python -m bench.kernel TRACE [--reps N]``.

Decodes every batch into memory first (with the list of its global-memory
accesses, which a check computes on its read-ahead thread), then times only
the engine's replay (fresh state per repetition) and prints the minimum and
median over the repetitions. For comparing engine changes on a noisy machine: the end-to-end
figures come from ``bench.run``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from tracerace.checker.engine import EngineState
from tracerace.checker.engine.check import close_launch, replay_batch
from tracerace.checker.engine.granules import global_accesses
from tracerace.checker.engine.layout import SV_NFIND, SV_NODE_TOP
from tracerace.trace.reader import open_trace


def replay_all(batches, path, plans=None):
    """Replay ``batches``; ``plans``: their ``global_accesses`` (else
    computed here, on this thread)."""
    st = EngineState()
    for k, b in enumerate(batches):
        replay_batch(st, b, path, None if plans is None else plans[k])
    close_launch(st)
    return st


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kernel")
    parser.add_argument("trace")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    with open_trace(args.trace) as reader:
        batches = list(reader)
    plans = [global_accesses(b) for b in batches]
    n = sum(b.n for b in batches)
    replay_all(batches[:1], args.trace)  # compile / load the cache
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        st = replay_all(batches, args.trace, plans)
        times.append(time.perf_counter() - t0)
    print(
        f"{n} events  min {min(times):.3f} s ({n / min(times) / 1e6:.2f} M/s)  "
        f"median {statistics.median(times):.3f} s  nodes {int(st.sv[SV_NODE_TOP])}  "
        f"findings {int(st.sv[SV_NFIND])}"
    )


if __name__ == "__main__":
    main()
