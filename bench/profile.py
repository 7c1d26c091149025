"""Where a check spends its time, per Numba function: ``python -m bench.profile TRACE``.

``perf`` samples the process but cannot name jitted code; Numba registers
its functions with gdb's JIT interface, so the hottest sampled addresses are
resolved with ``gdb -p PID -batch -ex 'info symbol ADDR'`` while the process
still runs, and summed per function. Needs ``perf`` and ``gdb`` (Linux) and
permission to attach (root, or ``kernel.yama.ptrace_scope=0``).

The child checks TRACE in a loop (after a warm-up, so compilation is not
sampled); samples outside jitted code are listed by shared object and symbol
(``clear_page_erms``: the kernel zeroing pages NumPy faults in;
``LZ4_decompress``: reading; ``NRT_incref``/``NRT_decref``: Numba's atomic
reference counts).

``--hot N`` adds the N most sampled instructions of the package's kernels,
each after the instructions leading to it, disassembled by gdb. A sample
mostly lands just after an instruction that waited, so a hot ``cmp`` after a
load says that load missed the caches: that is how session 12 found the
pipeline benchmark waiting on memory (the agent map, agent rows, node lists)
where instruction counts had said it was busy computing.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LOOP = """
import sys, time, tracerace
from tracerace.trace.writer import make_table
tracerace.check(make_table({"ts": [0, 1], "op": ["write", "read"], "launch": 0, "block": 0,
                            "thread": [0, 1], "addr": 0, "size": 4}))
open(sys.argv[2], "w").write("ready")
while True:
    tracerace.check(sys.argv[1], engine=sys.argv[3])
"""


def _function(symbol: str) -> str:
    """``tracerace::engine::access[abi:..]`` -> ``engine.access``; NRT and others as is."""
    if "NRT_incref" in symbol or "NRT_decref" in symbol:
        return "NRT_incref/decref (atomic refcounts)"
    m = re.match(r"(?:cpython::)?((?:\w+::)+)(\w+)", symbol)
    if m:
        parts = m.group(1).split("::")[:-1] + [m.group(2)]
        return ".".join(parts[-2:])
    if symbol.startswith("_ZN"):  # gdb left it mangled: _ZN<len><name><len><name>...
        names, i = [], 3
        while i < len(symbol) and symbol[i].isdigit():
            j = i
            while symbol[j].isdigit():
                j += 1
            names.append(symbol[j : j + int(symbol[i:j])])
            i = j + int(symbol[i:j])
        names = [n for n in names if n != "cpython"]
        if names:
            return ".".join(names[-2:])
    return symbol.split(" in section")[0].strip()[:60]


def _hot_instructions(data: str, pid: int, tmp: str, hot: int, context: int = 10) -> list[str]:
    """The ``hot`` most sampled instructions of jitted code, each with the
    ``context`` instructions before it (a sample usually lands just after
    the instruction that waited: a load that missed the caches). Numbers
    are samples per instruction; offsets are from the function's start."""
    ips = subprocess.run(
        ["perf", "script", "-i", data, "-F", "ip"], capture_output=True, text=True, check=True
    ).stdout.split()
    counts = collections.Counter(int(ip, 16) for ip in ips)
    top = [a for a, _ in counts.most_common(40 * hot)]
    cmds = os.path.join(tmp, "gdb-hot")
    Path(cmds).write_text("".join(f"info symbol {a:#x}\n" for a in top))
    out = subprocess.run(
        ["gdb", "-p", str(pid), "-batch", "-x", cmds], capture_output=True, text=True
    ).stdout
    answers = [ln for ln in out.splitlines() if " in section " in ln or ln.startswith("No symbol")]
    starts: dict[int, str] = {}
    jitted = []
    for a, answer in zip(top, answers):
        m = re.match(r"(.*) \+ (\d+) in section", answer)
        if m and "tracerace" in m.group(1):
            starts.setdefault(a - int(m.group(2)), _function(m.group(1)))
            jitted.append(a)
    lines: dict[int, list[tuple[int, str]]] = {}
    for start in starts:
        text = subprocess.run(
            ["gdb", "-p", str(pid), "-batch", "-ex", f"disassemble {start:#x}"],
            capture_output=True,
            text=True,
        ).stdout
        body = []
        for ln in text.splitlines():
            m = re.match(r"\s*(?:=> )?(0x[0-9a-f]+) <[^>]*\+(\d+)>:\s*(.*)", ln)
            if m:
                ins = re.sub(r"<[^>]*\+(\d+)>", r"<+\1>", m.group(3))
                body.append((int(m.group(1), 16), f"+{m.group(2)}: {ins}"))
        lines[start] = body
    total = max(sum(counts.values()), 1)
    report = []
    for a in jitted[:hot]:
        start = max(s for s in starts if s <= a)
        body = lines[start]
        at = next((k for k, (addr, _) in enumerate(body) if addr == a), None)
        if at is None:
            continue
        report.append(
            f"-- {starts[start]} {body[at][1]}: {counts[a]} samples "
            f"({100 * counts[a] / total:.1f}% of all)"
        )
        for addr, ins in body[max(0, at - context) : at + 1]:
            report.append(f"{counts.get(addr, 0):7d}  {ins}")
    return report


def profile(trace: str, seconds: float, engine: str, top: int, hot: int = 0) -> str:
    for tool in ("perf", "gdb"):
        if shutil.which(tool) is None:
            raise SystemExit(f"bench.profile needs {tool}")
    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ready")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        child = subprocess.Popen(
            [sys.executable, "-c", LOOP, trace, ready, engine], env=env, cwd=ROOT
        )
        try:
            while not os.path.exists(ready):
                if child.poll() is not None:
                    raise SystemExit("the check loop ended early")
                time.sleep(0.2)
            data = os.path.join(tmp, "perf.data")
            subprocess.run(
                [
                    "perf",
                    "record",
                    "-F",
                    "1999",
                    "-p",
                    str(child.pid),
                    "-o",
                    data,
                    "--",
                    "sleep",
                    str(seconds),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            report = subprocess.run(
                ["perf", "report", "-i", data, "--no-children", "--sort", "dso,sym", "-g", "none"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            rows = []
            for line in report.splitlines():
                m = re.match(r"\s*([\d.]+)%\s+(\S.*?)\s+\[[.k]\]\s+(\S+)", line)
                if m:
                    rows.append((float(m.group(1)), m.group(2), m.group(3)))
            jit = [(pct, addr) for pct, dso, addr in rows if dso.startswith("[JIT]")][:400]
            names = {}
            if jit:
                cmds = os.path.join(tmp, "gdb")
                Path(cmds).write_text("".join(f"info symbol {a}\n" for _, a in jit))
                out = subprocess.run(
                    ["gdb", "-p", str(child.pid), "-batch", "-x", cmds],
                    capture_output=True,
                    text=True,
                ).stdout
                answers = [
                    ln
                    for ln in out.splitlines()
                    if " in section " in ln or ln.startswith("No symbol")
                ]
                names = {a: _function(s) for (_, a), s in zip(jit, answers)}
            hot_lines = _hot_instructions(data, child.pid, tmp, hot) if hot else []
        finally:
            child.kill()
            child.wait()
    per_fn: collections.Counter = collections.Counter()
    for pct, addr in jit:
        per_fn[names.get(addr, "jitted code (unresolved)")] += pct
    lines = [f"{pct:6.1f}%  {fn}" for fn, pct in per_fn.most_common(top)]
    lines.append("outside jitted code:")
    lines += [
        f"{pct:6.1f}%  {sym}  ({dso})" for pct, dso, sym in rows if not dso.startswith("[JIT]")
    ][:top]
    if hot_lines:
        lines.append(f"the {hot} hottest instructions of the package's jitted code:")
        lines += hot_lines
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("trace")
    parser.add_argument("--seconds", type=float, default=6.0, help="sampling time")
    parser.add_argument("--engine", default="numba")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument(
        "--hot",
        type=int,
        default=0,
        help="also show the N most sampled instructions, with the ones before",
    )
    args = parser.parse_args(argv)
    print(profile(os.path.abspath(args.trace), args.seconds, args.engine, args.top, args.hot))


if __name__ == "__main__":
    main()
