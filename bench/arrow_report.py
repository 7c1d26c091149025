"""Size and time of the Arrow report on 10^5 hazards (bench/README.md, "The Arrow report").

``python -m bench.arrow_report [DIR]`` writes two traces of 100,000 ``waw``
hazards into DIR (default a temporary folder), then checks each, writing the
report in each format, and prints per format the median and the fastest of
five checks (in-process, kernels already loaded), the least CPU time, and the
output's size:

- ``repeated``: two threads write the same 100,000 words from 50 lines each:
  50 groups, and each finding repeats its group's sentences;
- ``distinct``: 100,000 pairs of threads write a word each: one group, and
  every finding names its own threads, so every sentence is worded anew.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np

from tracerace import api
from tracerace.report import output as formats
from tracerace.trace.writer import write_table

N = 100_000
RUNS = 5


def repeated(path: str) -> None:
    i = np.arange(N)
    write_table(
        path,
        {
            "op": np.full(2 * N, 1, np.uint8),
            "ts": np.arange(2 * N),
            "launch": 0,
            "block": 0,
            "thread": np.r_[np.zeros(N, np.uint32), np.ones(N, np.uint32)],
            "addr": np.r_[i * 4, i * 4].astype(np.uint64) + 4096,
            "size": 4,
            "site": np.r_[i % 50, i % 50 + 50].astype(np.uint32),
        },
        sites=[f"kernel.cu:{100 + k} st.global.u32 [%rd{k}], %r{k}" for k in range(100)],
        buffers=[{"name": "out", "space": 0, "base": 4096, "shape": [N], "itemsize": 4}],
    )


def distinct(path: str) -> None:
    i = np.arange(N)
    block = (i // 256).astype(np.uint32)
    first = (2 * (i % 256)).astype(np.uint32)
    order = np.argsort(np.r_[2 * i, 2 * i + 1])
    write_table(
        path,
        {
            "op": np.full(2 * N, 1, np.uint8),
            "ts": np.arange(2 * N),
            "launch": 0,
            "block": np.r_[block, block][order],
            "thread": np.r_[first, first + 1][order],
            "addr": (np.r_[i * 4, i * 4].astype(np.uint64) + 4096)[order],
            "size": 4,
            "site": np.r_[np.zeros(N, np.uint32), np.ones(N, np.uint32)][order],
        },
        sites=["kernel.cu:100 st.global.u32", "kernel.cu:101 st.global.u32"],
        buffers=[{"name": "out", "space": 0, "base": 4096, "shape": [N], "itemsize": 4}],
    )


def measure(trace: str, fmt: str, out: str) -> tuple[float, float, float, int]:
    """(median s, fastest s, fastest CPU s, bytes) of checking ``trace`` into ``out``
    as ``fmt`` (CPU time: this process's, all threads; steadier on a shared machine)."""
    times, cpu = [], []
    for _ in range(RUNS):
        start, start_cpu = time.perf_counter(), time.process_time()
        with formats.Output(fmt, out, inputs=[trace]) as output:
            output.write(api.check(trace, sink=output.sink))
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(times), min(times), min(cpu), os.path.getsize(out)


def main(folder: str) -> None:
    for name, build in (("repeated", repeated), ("distinct", distinct)):
        trace = os.path.join(folder, f"{name}.arrow")
        build(trace)
        api.check(trace)  # load (or compile) the kernels first
        for fmt in ("arrow", "json", "text"):
            median, fastest, cpu, size = measure(
                trace, fmt, os.path.join(folder, f"{name}-report.{fmt}")
            )
            print(
                f"{name:9} {fmt:6} median {median:.2f} s, fastest {fastest:.2f} s "
                f"(CPU {cpu:.2f} s), {size / 1e6:.1f} MB"
            )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(folder)
