"""The results table (markdown, into bench/README.md) and the scaling plot."""

from __future__ import annotations

from pathlib import Path

BEGIN = "<!-- bench:results:begin (written by python -m bench.run) -->"
END = "<!-- bench:results:end -->"

MiB = 1 << 20
GiB = 1 << 30


def _events(n: int) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= 0.9995 * scale:  # 999,994 is 1M, not 1e+03k
            return f"{n / scale:.3g}{unit}"
    return str(n)


def _rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x / 1e6:.2f} M/s"


def _secs(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.1f}x" if x < 100 else f"{x:,.0f}x"


def _share(x: float | None) -> str:
    """A fraction as a percentage; blank when not measured (older rows)."""
    return "" if x is None else f"{x:.0%}"


def _report(r: dict) -> str:
    """Grouping + text rendering over the replay, for a row with hazards (blank:
    none, or measured before it was recorded)."""
    if not r.get("hazards") or r.get("report_ratio") is None:
        return ""
    return f"{r['report_ratio']:.1%}"


def machine_lines(m: dict) -> list[str]:
    ram = f"{m['ram_bytes'] / GiB:.1f} GiB" if m.get("ram_bytes") else "?"
    load = m.get("load_at_start")
    return [
        f"Machine: {m['nproc']} CPUs (`nproc`), {ram} RAM, {m['cpu']}; "
        f"Python {m['python']}, numba {m['numba']}, numpy {m['numpy']}, "
        f"pyarrow {m['pyarrow']}; {m['platform']}."
        + (f" Load average when the last run started: {load:.2f}." if load is not None else ""),
    ]


def table(results: dict) -> str:
    lines = machine_lines(results["machine"]) + [""]
    st = results.get("startup") or {}
    if st:
        parts = []
        for kind in ("cold", "warm"):
            if kind in st:
                v = st[kind]
                parts.append(
                    f"{kind} start {v['seconds']:.2f} s (import "
                    f"{v['import_seconds']:.2f} s + first check "
                    f"{v['first_check_seconds']:.2f} s, peak RSS "
                    f"{v['peak_rss_bytes'] / MiB:.0f} MiB)"
                )
        lines += ["Numba start-up, whole process: " + "; ".join(parts) + ".", ""]
    lines += [
        "| workload | size | events | agents | check s | events/s | peak RSS | state B/granule | "
        "read s (in check) | check-only s | read floor s | x floor | reference s | "
        "x reference | hazards | report / replay | CPU stolen |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in results["results"]:
        if r.get("seconds") is None:
            lines.append(
                f"| {r['workload']} | {r['size']} | {_events(r.get('events', 0))} | "
                f"{r.get('agents') or ''} | failed: {r.get('error', '?')} "
                "| | | | | | | | | | | | |"
            )
            continue
        hz = (
            "none" if not r["hazards"] else ", ".join(f"{k} {v:,}" for k, v in r["by_kind"].items())
        )
        if not r.get("ok", True):
            hz += " **(unexpected)**"
        lines.append(
            f"| {r['workload']} | {r['size']} | {_events(r['events'])} | "
            f"{r.get('agents') or ''} | {_secs(r['seconds'])} | "
            f"{_rate(r['events_per_second'])} | {r['peak_rss_bytes'] / MiB:,.0f} MiB | "
            f"{_bytes(r.get('live_bytes_per_granule'))} | "
            f"{_secs(r['read_in_check_seconds'])} | {_secs(r['check_only_seconds'])} | "
            f"{_secs(r['read_floor_seconds'])} | {_ratio(r['floor_ratio'])} | "
            f"{_secs(r.get('reference_seconds'))} | {_ratio(r.get('reference_ratio'))} | {hz} | "
            f"{_report(r)} | {_share(r.get('stolen'))} |"
        )
    versions: dict[str, int] = {}
    for r in results["results"]:
        versions[r.get("engine", "?")] = versions.get(r.get("engine", "?"), 0) + 1
    lines += [
        "",
        "Engine kernels measured (hash of the engine, clocks, shadow, hashmap, "
        "_jit and reader modules): "
        + ", ".join(f"`{v}` ({n} rows)" for v, n in versions.items())
        + ".",
    ]
    return "\n".join(lines)


def _bytes(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def write_readme(path: Path, results: dict) -> None:
    """Replace the generated block of ``path`` (appended when it has none)."""
    text = path.read_text() if path.exists() else ""
    block = f"{BEGIN}\n{table(results)}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def write_plot(path: Path, results: dict) -> bool:
    """events/s and peak RSS against events, one line per workload (10^5 and up)."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_wl: dict[str, list] = {}
    for r in results["results"]:
        if r.get("seconds") is not None and r["events"] >= 50_000:
            by_wl.setdefault(r["workload"], []).append(r)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    # More workloads than the palette has colours: the line style and marker
    # change with each round of it, so no two lines look alike.
    styles = [("-", "o"), ("--", "s"), (":", "^")]
    for k, (name, rs) in enumerate(sorted(by_wl.items())):
        rs.sort(key=lambda r: r["events"])
        x = [r["events"] for r in rs]
        line, marker = styles[(k // 10) % len(styles)]
        look = dict(color=f"C{k % 10}", linestyle=line, marker=marker, label=name)
        ax1.plot(x, [r["events_per_second"] for r in rs], **look)
        ax2.plot(x, [r["peak_rss_bytes"] / MiB for r in rs], **look)
    for ax, title, unit in (
        (ax1, "throughput, end to end (warm)", "events/s"),
        (ax2, "peak RSS of the checking process", "MiB"),
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("events in the trace")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    if by_wl:
        ax1.legend(fontsize=7, ncol=2)
    m = results["machine"]
    fig.suptitle(f"tracerace numba engine: {m['nproc']} CPUs, {m['cpu']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
