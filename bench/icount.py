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

``--lines N`` says where the instructions go: the kernels are compiled
again with line tables (``NUMBA_DEBUGINFO=1``, a cache of its own; the
counts come out a few percent higher than without), callgrind counts every
instruction of the replay kernel, and the kernel's object code, read back
from Numba, maps each one to its source line; it prints the N costliest
lines and the costliest functions, per event. The access path that
``replay`` inlines at Numba IR level (``memory.on_access``,
``granules.granule_range``) keeps its own line numbers but is filed under
``replay.py``: such a line is the callee's. ``--lines-out FILE`` also writes
every instruction executed at least once per 20 events, with its count.

Needs ``valgrind`` with its headers (``valgrind/callgrind.h``) and a C
compiler, for the two-function library that switches instrumentation with
callgrind's client requests; ``--lines`` also needs ``objdump`` and ``nm``.
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
if len(sys.argv) > 4:  # --lines: the replay kernel's object code and address
    from tracerace.checker.engine.replay import replay as kernel
    cres = kernel.overloads[kernel.signatures[0]]
    name = cres.fndesc.llvm_func_name
    try:
        code = cres.library._get_compiled_object()
    except RuntimeError:  # loaded from the cache: the copy kept on the way in
        code = OBJECTS[cres.library.name]
    open(sys.argv[4], "wb").write(code)
    print("kernel", name, cres.library.get_pointer_to_function(name))
"""

KEEP_OBJECTS = """
import numba.core.codegen as _codegen
OBJECTS = {}
_set_object = _codegen.CPUCodeLibrary._set_compiled_object
def _keep_object(self, value):  # Numba drops a cached object once loaded
    OBJECTS[self.name] = value
    return _set_object(self, value)
_codegen.CPUCodeLibrary._set_compiled_object = _keep_object
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
    options = ["--cache-sim=yes"] if cache_sim else []
    stdout, text = _callgrind(env, options, CHILD, [trace, str(lib), shard], tmp)
    rows = int(re.search(r"^rows (\d+)", stdout, re.M).group(1))
    names = re.search(r"^events: (.*)$", text, re.M).group(1).split()
    totals = [int(v) for v in re.search(r"^totals: (.*)$", text, re.M).group(1).split()]
    return {"rows": rows, **{name: value / rows for name, value in zip(names, totals)}}


def _callgrind(
    env: dict[str, str], options: list[str], child: str, args: list[str], tmp: Path
) -> tuple[str, str]:
    """Run ``child`` (``python -c``) with ``args`` under callgrind, counting only
    between the toggle library's two calls: its output, and the dump written
    at the second."""
    out_file = tmp / "callgrind.out"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", *options]
    proc = subprocess.run(
        [*cmd, f"--callgrind-out-file={out_file}.%p", sys.executable, "-c", child, *args],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"valgrind failed:\n{proc.stderr[-2000:]}")
    dumps = sorted(tmp.glob("callgrind.out.*.1"))  # the dump at icount_stop
    if not dumps:
        raise SystemExit("callgrind wrote no dump (is the toggle library loaded?)")
    text = dumps[-1].read_text()
    for d in tmp.glob("callgrind.out.*"):
        d.unlink()
    return proc.stdout, text


def lines(trace: str, cache_dir: Path, lib: Path, tmp: Path, top: int, out: str | None) -> None:
    """Print where the replay kernel's instructions go (``--lines``)."""
    import ast
    import collections

    env = dict(
        os.environ,
        NUMBA_CPU_NAME="generic",
        NUMBA_DEBUGINFO="1",
        NUMBA_CACHE_DIR=str(cache_dir.with_name(cache_dir.name + "-lines")),
        PYTHONPATH=str(ROOT),
    )
    child, obj = KEEP_OBJECTS + CHILD, tmp / "replay.o"
    args = [trace, "", "0/1", str(obj)]
    subprocess.run([sys.executable, "-c", child, *args], env=env, check=True, capture_output=True)
    args[1] = str(lib)
    stdout, text = _callgrind(env, ["--dump-instr=yes"], child, args, tmp)
    rows = int(re.search(r"^rows (\d+)", stdout, re.M).group(1))
    name, address = re.search(r"^kernel (\S+) (\d+)", stdout, re.M).groups()
    costs = _instruction_costs(text)
    symbols = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True)
    [offset] = [int(f[0], 16) for f in map(str.split, symbols.stdout.splitlines()) if f[-1] == name]
    base = int(address) - offset
    listing = subprocess.run(
        ["objdump", "-d", "-l", "--no-show-raw-insn", str(obj)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    where: dict[int, str] = {}
    text: dict[int, str] = {}
    line = "?"
    for row in listing.splitlines():
        m = re.match(r"^(/\S+\.py):(\d+)", row)
        if m:
            line = f"{Path(m.group(1)).name}:{m.group(2)}"
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", row)
        if m:
            where[int(m.group(1), 16)] = line
            text[int(m.group(1), 16)] = re.sub(r"<_ZN[^>]*?(\+0x[0-9a-f]+)?>", r"<\1>", m.group(2))
    per_line: collections.Counter[str] = collections.Counter()
    for addr, cost in costs.items():
        if addr - base in where:
            per_line[where[addr - base]] += cost
    engine = ROOT / "tracerace" / "checker" / "engine"
    defs: dict[str, list[tuple[int, int, str]]] = {}

    def function(file_line: str) -> str:
        file, _, number = file_line.partition(":")
        if file not in defs:
            path = engine / file
            tree = ast.parse(path.read_text()) if path.exists() else ast.Module([], [])
            defs[file] = [
                (f.lineno, f.end_lineno or f.lineno, f.name)
                for f in ast.walk(tree)
                if isinstance(f, ast.FunctionDef)
            ]
        inside = [d for d in defs[file] if number.isdigit() and d[0] <= int(number) <= d[1]]
        return f"{file}:{max(inside)[2]}" if inside else file

    per_function: collections.Counter[str] = collections.Counter()
    for file_line, cost in per_line.items():
        per_function[function(file_line)] += cost
    kernel = sum(per_line.values())
    print(f"{Path(trace).name}: {rows} events; replay kernel {kernel / rows:.1f} Ir per event")
    print("per source line:")
    for file_line, cost in per_line.most_common(top):
        print(f"  {cost / rows:8.2f}  {file_line}")
    print("per function (the lines inside it, wherever inlined):")
    for fn, cost in per_function.most_common(top):
        print(f"  {cost / rows:8.2f}  {fn}")
    if out:
        with open(out, "w") as f:
            for offset_ in sorted(where):
                cost = costs.get(offset_ + base, 0)
                if cost * 20 >= rows:
                    f.write(
                        f"{cost / rows:7.2f} {offset_:7x} {where[offset_]:22s} {text[offset_]}\n"
                    )


def _instruction_costs(text: str) -> dict[int, int]:
    """Instructions executed per address, from a callgrind dump written with
    ``--dump-instr=yes`` (positions ``instr line``; a call's inclusive cost,
    the line after ``calls=``, is left out)."""
    costs: dict[int, int] = {}
    positions, last, skip = 1, 0, False
    for row in text.splitlines():
        if row.startswith("positions:"):
            positions = len(row.split()) - 1
        elif row.startswith("calls="):
            skip = True
        elif row and row[0] in "0123456789+-*":
            fields = row.split()
            if skip:
                skip = False
                continue
            pos = fields[0]
            if pos[0] == "+":
                last += int(pos[1:], 0)
            elif pos[0] == "-":
                last -= int(pos[1:], 0)
            elif pos != "*":
                last = int(pos, 0)
            if len(fields) > positions:
                costs[last] = costs.get(last, 0) + int(fields[positions])
    return costs


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
    parser.add_argument(
        "--lines",
        type=int,
        default=0,
        metavar="N",
        help="print the N costliest source lines and functions of the replay kernel",
    )
    parser.add_argument("--lines-out", help="with --lines: every hot instruction, to this file")
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
            if args.lines:
                lines(trace, Path(args.cache_dir), lib, tmp, args.lines, args.lines_out)
                continue
            r = count(trace, args.cache_sim, Path(args.cache_dir), lib, tmp, args.shard)
            figures = "  ".join(f"{k} {v:.2f}" for k, v in r.items() if k != "rows")
            name = Path(trace).name
            shard = "" if args.shard == "0/1" else f" (shard {args.shard})"
            print(f"{name}{shard}: {r['rows']} events, per event: {figures}", flush=True)


if __name__ == "__main__":
    main()
