"""The benchmark suite: ``python -m bench.run --size 1e5,1e6,1e7`` (see bench/README.md).

For every workload and size, in one run:

1. the trace is generated once into the data directory (``--data-dir``),
   keyed by workload, size and a hash of the generators;
2. ``tracerace.check`` (numba) runs once untimed (Numba cache and page cache
   warm), then ``reps`` times, each in a fresh process (``bench.measure``)
   that reports its own peak RSS; the medians are kept, with the
   part of the call spent producing batches (reading and decoding);
3. the read-only floor: iterating the reader and touching every column;
4. the reference checker, up to ``--reference-max`` events (no extrapolation);
5. race-free workloads must report nothing; scenarios their expected kinds.

Once per run: Numba cold start (empty ``NUMBA_CACHE_DIR``) and warm start.
Results are merged into ``--out`` (JSON, keyed by workload and size) and the
whole table is rewritten into bench/README.md, with the scaling plot.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "results.json"
DEFAULT_README = HERE / "README.md"
DEFAULT_PLOT = HERE / "scaling.png"
DEFAULT_DATA = Path(tempfile.gettempdir()) / "tracerace-bench"

SIZES = {"smoke": 10_000}
"""Named sizes; any other size is a number of events such as ``1e7``."""

REFERENCE_MAX = 100_000
"""Largest trace (events) the reference checker is run on by default."""

WARMUP_MAX = 50_000_000
"""From this many events on, no untimed check first: it would double a long run, and
each timed check warms up on a two-row trace in its process anyway."""


def parse_size(label: str) -> int:
    if label in SIZES:
        return SIZES[label]
    try:
        n = int(float(label))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"size {label!r}: give smoke or a number such as 1e6"
        ) from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"size {label!r} must be positive")
    return n


def default_reps(n: int) -> int:
    """Medians of several runs where a run is short; one run at 10^8 and up."""
    return 5 if n <= 100_000 else 3 if n <= 10_000_000 else 1


def generator_version() -> str:
    """Changes whenever the generators do, so stale cached traces are rebuilt."""
    digest = hashlib.sha256()
    for name in ("workloads.py",):
        digest.update((HERE / name).read_bytes())
    for path in sorted((ROOT / "tracerace" / "scenarios").glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


def engine_version() -> str:
    """A hash of the checker's kernels, so results of different engine versions can be
    told apart."""
    digest = hashlib.sha256()
    for path in [
        *sorted((ROOT / "tracerace" / "checker" / "engine").glob("*.py")),
        ROOT / "tracerace" / "trace" / "reader.py",
    ]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


# --- running children ---------------------------------------------------------------


class ChildFailed(RuntimeError):
    pass


RSS_LIMIT = 12 << 30
"""A child whose resident set passes this is killed (``--rss-limit``): a shared
machine must not swap or meet the OOM killer because a check outgrew it."""


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _watch(proc: subprocess.Popen, limit: int, tripped: list) -> None:
    """Kill ``proc`` when its RSS passes ``limit`` (polls /proc twice a second)."""
    while proc.returncode is None and not tripped:
        rss = _rss(proc.pid)
        if rss > limit:
            tripped.append(rss)
            proc.kill()
            return
        time.sleep(0.5)


def run_child(
    args: list[str],
    *,
    env: dict | None = None,
    timeout: float | None = None,
    rss_limit: int | None = None,
) -> tuple[dict, int, float]:
    """Run ``python -m bench.measure ARGS`` in a fresh process.

    Returns (its JSON result, its peak RSS in bytes, its wall time in seconds). The
    peak RSS is the child's own report (``VmHWM``), not ``wait4``'s ``ru_maxrss``,
    which on Linux includes this parent's resident set at the fork.
    """
    cmd = [sys.executable, "-m", "bench.measure", *args]
    child_env = dict(os.environ if env is None else env)
    child_env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT, env=child_env)
        timer = None
        if timeout is not None:
            timer = threading.Timer(timeout, proc.kill)
            timer.start()
        tripped: list = []
        if rss_limit:
            threading.Thread(target=_watch, args=(proc, rss_limit, tripped), daemon=True).start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if timer is not None:
                timer.cancel()
            tripped.append(0)  # stops the watcher
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if proc.returncode != 0:
        if tripped and tripped[0]:
            why = f"killed: resident set passed {rss_limit / 2**30:.1f} GiB"
        elif proc.returncode == -9 and timeout:
            why = f"killed after {timeout:.0f} s"
        else:
            why = f"exit {proc.returncode}"
        tail = " | ".join((stderr.strip().splitlines() or ["(no output)"])[-3:])
        raise ChildFailed(f"{' '.join(args[:1])} {why}: {tail}")
    result = json.loads(stdout.strip().splitlines()[-1])
    rss = result.get("process_max_rss_bytes") or usage.ru_maxrss * 1024
    return result, rss, wall


def cpu_jiffies() -> tuple[int, int] | None:
    """(stolen, total) CPU time of the whole machine so far, in jiffies, from
    ``/proc/stat``; None where there is no such file. On a VM, "stolen" is
    time the host ran something else while this guest had work: timings
    taken while it is high are slow for reasons outside the code."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 9:
        return None
    ticks = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
    return ticks[7], sum(ticks)


def stolen_fraction(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of CPU time stolen by the host between two ``cpu_jiffies``."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def run_inprocess(args: list[str]) -> tuple[dict, int, float]:
    """The same measurement in this process (tests): RSS is this process's maximum."""
    from . import measure

    t0 = time.perf_counter()
    mode, *rest = args
    if mode == "check":
        engine = rest[rest.index("--engine") + 1] if "--engine" in rest else "numba"
        result = measure.run_check(rest[0], engine)
    elif mode == "read":
        result = measure.run_read(rest[0])
    elif mode == "state":
        result = measure.run_state(rest[0])
    else:
        result = measure.run_startup()
    return result, result["process_max_rss_bytes"], time.perf_counter() - t0


# --- the suite -------------------------------------------------------------------------


def machine() -> dict:
    import numba
    import numpy
    import pyarrow

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {
        "nproc": os.cpu_count(),
        "ram_bytes": ram,
        "cpu": cpu,
        "python": platform.python_version(),
        "numba": numba.__version__,
        "numpy": numpy.__version__,
        "pyarrow": pyarrow.__version__,
        "platform": platform.platform(),
        "load_at_start": load,
    }


def ensure_trace(
    name: str, n: int, label: str, data_dir: Path, compression: str | None, regen: bool, log
) -> tuple[Path, dict]:
    """The cached trace of workload ``name`` at size ``label`` (generated if missing)."""
    from .workloads import write_workload

    data_dir.mkdir(parents=True, exist_ok=True)
    key = f"{name}-{label}-{compression or 'none'}-{generator_version()}"
    path = data_dir / f"{key}.arrow"
    side = data_dir / f"{key}.json"
    if path.exists() and side.exists() and not regen:
        return path, json.loads(side.read_text())
    log(f"  generating {name} at {label} ...")
    t0 = time.perf_counter()
    info = write_workload(name, str(path), n, compression=compression)
    info["gen_seconds"] = time.perf_counter() - t0
    info["file_bytes"] = path.stat().st_size
    if "agents" not in info:
        info["agents"] = most_agents(path)
    side.write_text(json.dumps(info))
    return path, info


def most_agents(path: Path) -> int:
    """The largest number of agents (block, thread) in one launch of a trace."""
    import numpy as np

    from tracerace.trace.reader import open_trace

    per_launch: dict[int, set] = {}
    with open_trace(str(path)) as reader:
        for batch in reader:
            c = batch.cols
            agent = (c["block"].astype(np.uint64) << np.uint64(32)) | c["thread"]
            pairs = np.unique(np.stack([c["launch"].astype(np.uint64), agent]), axis=1)
            for launch, key in zip(*pairs.tolist()):
                per_launch.setdefault(launch, set()).add(key)
    return max((len(v) for v in per_launch.values()), default=0)


def bench_one(name: str, label: str, args, log) -> dict:
    from .workloads import workloads

    wl = workloads()[name]
    n = parse_size(label)
    run = (
        run_inprocess
        if args.no_isolate
        else functools.partial(run_child, rss_limit=int(args.rss_limit * 2**30) or None)
    )
    rec = {
        "workload": name,
        "size": label,
        "target_events": n,
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "engine": engine_version(),
    }
    path, info = ensure_trace(
        name, n, label, Path(args.data_dir), args.compression, args.regen, log
    )
    rec.update(
        events=info["events"],
        agents=info.get("agents"),
        info=info,
        file_bytes=info["file_bytes"],
        gen_seconds=info["gen_seconds"],
    )
    reps = args.reps or default_reps(info["events"])
    rec["reps"] = reps
    try:
        if info["events"] < WARMUP_MAX:
            run(["check", str(path)])  # untimed: warm Numba cache and page cache
        jiffies = cpu_jiffies()
        checks = [run(["check", str(path)]) for _ in range(reps)]
        rec["stolen"] = stolen_fraction(jiffies, cpu_jiffies())
        reads = [run(["read", str(path)]) for _ in range(reps)]
        state = run(["state", str(path)])[0]
    except Exception as exc:  # a child that failed, or (in-process) the check itself
        rec["error"] = str(exc)
        log(f"  {name} {label}: FAILED: {exc}")
        return rec
    first = checks[0][0]
    rec["seconds"] = statistics.median(c[0]["seconds"] for c in checks)
    rec["events_per_second"] = first["events"] / rec["seconds"]
    rec["read_in_check_seconds"] = statistics.median(c[0]["read_seconds"] for c in checks)
    # The engine reads ahead on a thread: what reading costs the check is the
    # time the engine waited for batches (the reference reads inline).
    rec["check_only_seconds"] = statistics.median(
        c[0]["seconds"]
        - (c[0]["read_seconds"] if c[0].get("wait_seconds") is None else c[0]["wait_seconds"])
        for c in checks
    )
    rec["peak_rss_bytes"] = max(c[1] for c in checks)
    rec["base_rss_bytes"] = statistics.median(c[0]["base_rss_bytes"] for c in checks)
    rec["read_floor_seconds"] = statistics.median(r[0]["seconds"] for r in reads)
    rec["read_peak_rss_bytes"] = max(r[1] for r in reads)
    rec["floor_ratio"] = rec["seconds"] / rec["read_floor_seconds"]
    # The engine's state at the end of a kernel-only replay, per live granule.
    rec["granules"] = state["granules"]
    rec["live_bytes_per_granule"] = state["live_bytes_per_granule"]
    rec["table_bytes_per_granule"] = state["table_bytes_per_granule"]
    # The report against the replay: grouping (in the check) and rendering the
    # text report, over the rest of the check.
    if checks[0][0].get("group_seconds") is not None:
        rec["group_seconds"] = statistics.median(c[0]["group_seconds"] for c in checks)
        rec["text_seconds"] = statistics.median(c[0]["text_seconds"] for c in checks)
        rec["json_seconds"] = statistics.median(c[0]["json_seconds"] for c in checks)
        rec["report_ratio"] = statistics.median(
            (c[0]["group_seconds"] + c[0]["text_seconds"])
            / (c[0]["seconds"] - c[0]["group_seconds"])
            for c in checks
        )
        rec["groups"] = first.get("groups")
    rec["hazards"] = first["hazards"]
    rec["racy_rows"] = first["racy_rows"]
    rec["by_kind"] = first["by_kind"]
    rec["isolated"] = not args.no_isolate

    rec["reference_seconds"] = rec["reference_ratio"] = None
    # By the size asked for: a 1e5 run gets its reference.
    if wl.reference and n <= args.reference_max:
        ref_reps = args.reps or (3 if info["events"] <= SIZES["smoke"] else 1)
        try:
            limit = {} if args.no_isolate else {"timeout": args.reference_timeout}
            refs = [
                run(["check", str(path), "--engine", "reference"], **limit) for _ in range(ref_reps)
            ]
        except Exception as exc:
            rec["reference_error"] = str(exc)
        else:
            rec["reference_seconds"] = statistics.median(r[0]["seconds"] for r in refs)
            rec["reference_ratio"] = rec["reference_seconds"] / rec["seconds"]
            rec["reference_hazards"] = refs[0][0]["hazards"]
            rec["reference_racy_rows"] = refs[0][0]["racy_rows"]
            if refs[0][0]["by_kind"] != first["by_kind"]:
                rec["error"] = (
                    f"engines disagree: numba {first['by_kind']}, reference {refs[0][0]['by_kind']}"
                )

    if wl.race_free:
        rec["ok"] = first["hazards"] == 0
    else:
        rec["ok"] = wl.expect_kinds <= set(first["by_kind"])
    if not rec["ok"]:
        rec.setdefault(
            "error", f"expected {sorted(wl.expect_kinds) or 'no hazards'}, got {first['by_kind']}"
        )
    log(
        f"  {name} {label}: {info['events']:,} events, {rec['seconds']:.3f} s, "
        f"{rec['events_per_second'] / 1e6:.2f} M events/s, peak RSS "
        f"{rec['peak_rss_bytes'] / 2**20:,.0f} MiB, floor x{rec['floor_ratio']:.1f}, "
        f"{rec['live_bytes_per_granule']:.0f} B of state per live granule"
        + (f", reference x{rec['reference_ratio']:.0f}" if rec["reference_ratio"] else "")
        + (
            f", report {rec['report_ratio']:.1%} of the replay"
            if rec.get("report_ratio") is not None and rec["hazards"]
            else ""
        )
        + (f", {rec['stolen']:.0%} of the CPU stolen by the host" if rec["stolen"] else "")
        + ("" if rec["ok"] else f"  UNEXPECTED: {rec.get('error')}")
    )
    return rec


def startup(args, log) -> dict:
    """Numba cold start (empty cache) and warm start, each a whole fresh process."""
    out = {}
    if not args.no_cold:
        with tempfile.TemporaryDirectory(prefix="tracerace-numba-cold-") as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            log("  cold start (compiling the engine into an empty cache) ...")
            result, rss, wall = run_child(["startup"], env=env)
            out["cold"] = {
                "seconds": wall,
                "import_seconds": result["import_seconds"],
                "first_check_seconds": result["first_check_seconds"],
                "peak_rss_bytes": rss,
            }
    run_child(["startup"])  # make sure the usual cache is filled
    warm = [run_child(["startup"]) for _ in range(3)]
    out["warm"] = {
        "seconds": statistics.median(w[2] for w in warm),
        "import_seconds": statistics.median(w[0]["import_seconds"] for w in warm),
        "first_check_seconds": statistics.median(w[0]["first_check_seconds"] for w in warm),
        "peak_rss_bytes": max(w[1] for w in warm),
    }
    for kind, v in out.items():
        log(
            f"  {kind} start: {v['seconds']:.2f} s (import {v['import_seconds']:.2f} s, "
            f"first check {v['first_check_seconds']:.2f} s)"
        )
    return out


def merge(path: Path, new: dict) -> dict:
    """Fold this run's results into the results file (by workload and size)."""
    old = json.loads(path.read_text()) if path.exists() else {}
    results = {(r["workload"], r["size"]): r for r in old.get("results", [])}
    for r in new["results"]:
        results[(r["workload"], r["size"])] = r
    startup = {**(old.get("startup") or {}), **(new.get("startup") or {})}  # cold, warm
    merged = {
        "machine": new["machine"],
        "startup": startup or None,
        "results": sorted(results.values(), key=lambda r: (r["workload"], r["target_events"])),
    }
    path.write_text(json.dumps(merged, indent=1) + "\n")
    return merged


def main(argv: list[str] | None = None) -> int:
    from .workloads import scenarios_note, workloads

    known = workloads()
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description="tracerace benchmark suite (bench/README.md)"
    )
    parser.add_argument(
        "--size",
        default="smoke",
        help="comma-separated sizes: smoke, 1e5, 1e6, 1e7, 1e8, 1e9 (events)",
    )
    parser.add_argument(
        "--workload", default="all", help=f"comma-separated workloads, or all: {', '.join(known)}"
    )
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="results JSON (merged)")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA), help="trace cache directory")
    parser.add_argument(
        "--reps",
        type=int,
        default=None,
        help="timed repetitions (default: 5 up to 1e5, 3 up to 1e7, else 1)",
    )
    parser.add_argument(
        "--reference-max",
        type=float,
        default=REFERENCE_MAX,
        help="run the reference checker up to this many events",
    )
    parser.add_argument(
        "--reference-timeout",
        type=float,
        default=900,
        help="give up on a reference run after this many seconds (n/a)",
    )
    parser.add_argument(
        "--rss-limit",
        type=float,
        default=RSS_LIMIT / 2**30,
        help="kill a measurement whose resident set passes this many GiB (0: no limit)",
    )
    parser.add_argument(
        "--compression",
        default="lz4",
        choices=("lz4", "zstd", "none"),
        help="buffer compression of the generated traces",
    )
    parser.add_argument("--regen", action="store_true", help="regenerate cached traces")
    parser.add_argument("--no-cold", action="store_true", help="skip the Numba cold start")
    parser.add_argument("--no-startup", action="store_true", help="skip cold and warm start")
    parser.add_argument(
        "--no-isolate",
        action="store_true",
        help="measure in this process (no per-check RSS; for tests)",
    )
    parser.add_argument(
        "--readme",
        default=str(DEFAULT_README),
        help="rewrite the results table in this markdown file ('' to skip)",
    )
    parser.add_argument(
        "--plot",
        default=str(DEFAULT_PLOT),
        help="scaling plot PNG ('' to skip; needs matplotlib: pip install .[bench])",
    )
    args = parser.parse_args(argv)
    args.compression = None if args.compression == "none" else args.compression
    args.reference_max = int(args.reference_max)

    sizes = [s.strip() for s in args.size.split(",") if s.strip()]
    for s in sizes:
        parse_size(s)
    names = (
        list(known)
        if args.workload == "all"
        else [w.strip() for w in args.workload.split(",") if w.strip()]
    )
    unknown = [w for w in names if w not in known]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)} (known: {', '.join(known)})")
    note = scenarios_note()
    if note and args.workload == "all":
        print(note, flush=True)

    def log(msg: str) -> None:
        print(msg, flush=True)

    run = {"machine": machine(), "results": []}
    if not args.no_startup and not args.no_isolate:
        log("startup:")
        run["startup"] = startup(args, log)
    merged = merge(Path(args.out), run)
    for label in sizes:
        log(f"size {label}:")
        for name in names:
            rec = bench_one(name, label, args, log)
            run["results"].append(rec)
            merged = merge(Path(args.out), {**run, "results": [rec]})  # kept if a later one dies
    from .render import write_plot, write_readme

    if args.readme:
        write_readme(Path(args.readme), merged)
        log(f"table written to {args.readme}")
    if args.plot:
        if write_plot(Path(args.plot), merged):
            log(f"plot written to {args.plot}")
        else:
            log("plot skipped: matplotlib is not installed (pip install '.[bench]')")
    bad = [r for r in run["results"] if r.get("error")]
    for r in bad:
        log(f"problem: {r['workload']} {r['size']}: {r['error']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
