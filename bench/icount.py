"""Instructions per event of the replay: ``python -m bench.icount TRACE [TRACE ...]``.

This VM's speed drifts by up to 2x within minutes, so timings cannot tell a
5% change from noise. Instruction counts can: this runs one kernel-only
replay of each trace (batches decoded beforehand, as in ``bench.kernel``)
under valgrind's callgrind, with instrumentation switched on only around
the replay, and prints instructions (and data reads and writes) per event.
Two runs of the same code agree to the instruction; compare engine versions
by their counts, then confirm with ``bench.kernel`` or ``bench.run``.

Kernels are compiled for a generic x86-64 (``NUMBA_CPU_NAME=generic``) into
their own cache, natively and before valgrind starts: valgrind's simulated
CPU has other features than the host, so the usual cache would not match and
everything would compile under valgrind (an hour). ``--cache-sim`` adds
simulated first-level cache misses (slower; the simulated last level is the
host's, which on this VM holds every benchmark's working set, so its misses
say little).

Needs ``valgrind`` with its headers (``valgrind/callgrind.h``) and a C
compiler, for the two-function library that switches instrumentation with
callgrind's client requests.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TOGGLE_C = """
#include <valgrind/callgrind.h>
void icount_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void icount_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS; }
"""

CHILD = """
import ctypes, sys
try:
    from tracerace.checker.engine import EngineState
    from tracerace.checker.engine.check import close_launch, replay_batch
    from tracerace.checker.engine.granules import global_accesses
    from tracerace.trace.reader import open_trace
except ImportError:  # the layout before the stage folders (to compare with older versions)
    try:
        from tracerace.engine import EngineState
        from tracerace.engine.check import close_launch, replay_batch
        from tracerace.engine.granules import global_accesses
    except ImportError:  # an engine before the package
        from tracerace.engine import EngineState, global_accesses
        from tracerace.engine import _close_launch as close_launch, _replay_batch as replay_batch
    from tracerace.reader import open_trace
with open_trace(sys.argv[1]) as reader:
    batches = list(reader)
shard = tuple(int(v) for v in sys.argv[3].split("/")) if len(sys.argv) > 3 else (0, 1)
try:  # a shard's read-ahead lists only the global accesses it replays
    sv = EngineState(shard=shard).sv
    plans = [(global_accesses(b, sv),) for b in batches]
except TypeError:  # an engine without shards
    plans = [(global_accesses(b),) for b in batches]

def replay(k):
    st = EngineState(shard=shard)
    for b, p in list(zip(batches, plans))[:k]:
        replay_batch(st, b, None, *p)
    close_launch(st)

replay(2)  # load the kernels; first-call work is not counted
lib = ctypes.CDLL(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else None
if lib is not None:
    lib.icount_start()
replay(len(batches))
if lib is not None:
    lib.icount_stop()
print("rows", sum(b.n for b in batches))
"""


def _toggle_library(tmp: Path) -> Path:
    src, lib = tmp / "toggle.c", tmp / "libicount.so"
    src.write_text(TOGGLE_C)
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("bench.icount needs a C compiler (cc)")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


def count(
    trace: str, cache_sim: bool, cache_dir: Path, lib: Path, tmp: Path, shard: str = "0/1"
) -> dict[str, float]:
    env = dict(
        os.environ, NUMBA_CPU_NAME="generic", NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT)
    )
    # Natively first: compiles into (or loads) the generic cache.
    subprocess.run(
        [sys.executable, "-c", CHILD, trace, "", shard],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    out_file = tmp / "callgrind.out"
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out_file}.%p",
    ]
    if cache_sim:
        cmd.append("--cache-sim=yes")
    proc = subprocess.run(
        cmd + [sys.executable, "-c", CHILD, trace, str(lib), shard],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"valgrind failed:\n{proc.stderr[-2000:]}")
    rows = int(re.search(r"^rows (\d+)", proc.stdout, re.M).group(1))
    dumps = sorted(tmp.glob("callgrind.out.*.1"))  # the dump at icount_stop
    if not dumps:
        raise SystemExit("callgrind wrote no dump (is the toggle library loaded?)")
    text = dumps[-1].read_text()
    for d in tmp.glob("callgrind.out.*"):
        d.unlink()
    names = re.search(r"^events: (.*)$", text, re.M).group(1).split()
    totals = [int(v) for v in re.search(r"^totals: (.*)$", text, re.M).group(1).split()]
    return {"rows": rows, **{name: value / rows for name, value in zip(names, totals)}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.icount", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("traces", nargs="+")
    parser.add_argument(
        "--cache-sim",
        action="store_true",
        help="also simulate the caches (D1mr/D1mw: first-level misses)",
    )
    parser.add_argument(
        "--cache-dir",
        default=str(Path(tempfile.gettempdir()) / "tracerace-icount-numba"),
        help="Numba cache for the generic build (kept between runs)",
    )
    parser.add_argument(
        "--shard",
        default="0/1",
        metavar="K/N",
        help="replay as shard K of N (docs/parallel.md): the instructions one shard spends",
    )
    args = parser.parse_args(argv)
    k, _, n = args.shard.partition("/")
    if not (k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        raise SystemExit(f"--shard {args.shard}: expected K/N with 0 <= K < N")
    if shutil.which("valgrind") is None:
        raise SystemExit("bench.icount needs valgrind")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        lib = _toggle_library(tmp)
        for trace in args.traces:
            r = count(trace, args.cache_sim, Path(args.cache_dir), lib, tmp, args.shard)
            figures = "  ".join(f"{k} {v:.2f}" for k, v in r.items() if k != "rows")
            name = Path(trace).name
            shard = "" if args.shard == "0/1" else f" (shard {args.shard})"
            print(f"{name}{shard}: {r['rows']} events, per event: {figures}", flush=True)


if __name__ == "__main__":
    main()
