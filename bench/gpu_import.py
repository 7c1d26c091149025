"""Import speed of ``tracerace convert`` on an Accel-Sim ``.traceg``.

Generates (once, cached) a synthetic post-processed Accel-Sim trace of about
N instruction lines, then times its import into a v1 trace in a fresh process
and prints lines/s and events/s::

    python -m bench.gpu_import --lines 1e7 [--data-dir /tmp/tracerace-bench] [--check]

The kernel is a shared-memory tiled matmul as the tracer sees one: blocks of
8 warps; per k-step each warp loads two global words per lane (``LDG.E``),
stores them to the shared tiles (``STS``), ``BAR.SYNC``, reads 16 shared
words per lane (``LDS``, broadcast and strided), does 32 FFMAs and some
integer work (lines without addresses, as in real traces), ``BAR.SYNC``; it
ends with a global store and ``EXIT``. Address lists use the tracer's three
encodings (base+stride, base+deltas) as its compression picks them.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

WARPS = 8
K_LINES = 2 + 2 + 1 + 16 + 32 + 4 + 1  # per warp per k-step
HEADER = """-kernel name = _Z12tiled_matmulPKfS0_Pfi
-kernel id = 1
-grid dim = ({gx},1,1)
-block dim = (256,1,1)
-shmem = 8192
-nregs = 40
-binary version = 80
-cuda stream id = 0
-shmem base_addr = 0x00007f59dd000000
-local mem base_addr = 0x00007f59db000000
-nvbit version = 1.7.6
-accelsim tracer version = 5
-enable lineinfo = 0

#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] \
mem_width [adrrescompress?] [mem_addresses] immediate

"""


def warp_lines(block: int, warp: int, ksteps: int) -> list[str]:
    out = []
    a = 0x7F0000000000 + block * 0x10000
    b = 0x7F0010000000 + block * 0x10000
    for k in range(ksteps):
        row = a + k * 1024 + warp * 128
        out.append(f"0100 ffffffff 1 R4 LDG.E.SYS 1 R2 4 1 0x{row:x} 4 0 ")
        out.append(f"0110 ffffffff 1 R5 LDG.E.SYS 1 R6 4 1 0x{b + k * 1024 + warp * 128:x} 4 0 ")
        out.append(f"0120 ffffffff 0 STS 2 R7 R4 4 1 0x{warp * 128:x} 4 0 ")
        out.append(f"0130 ffffffff 0 STS 2 R7 R5 4 1 0x{1024 + warp * 128:x} 4 0 ")
        out.append("0140 ffffffff 0 BAR.SYNC.DEFER_BLOCKING 0 0 0 ")
        for i in range(8):  # a row of A: the same word for every lane (base+stride 0)
            out.append(
                f"{0x150 + 16 * i:04x} ffffffff 1 R{8 + i} LDS 1 R7 4 1 "
                f"0x{warp // 2 * 128 + 4 * i:x} 0 0 "
            )
        for i in range(8):  # a column of B: lanes 0-15 and 16-31 read two halves
            deltas = " ".join(["4"] * 15 + ["-60"] + ["4"] * 15)
            out.append(
                f"{0x1D0 + 16 * i:04x} ffffffff 1 R{16 + i} LDS 1 R9 4 2 "
                f"0x{1024 + 64 * i:x} {deltas} 0 "
            )
        for i in range(32):
            out.append(
                f"{0x250 + 16 * i:04x} ffffffff 1 R30 FFMA 3 R{8 + i % 8} R{16 + i % 8} R30 0 0 "
            )
        for i in range(4):
            out.append(f"{0x450 + 16 * i:04x} ffffffff 1 R{2 + i} IADD3 2 R{2 + i} R255 0 1024 ")
        out.append("0490 ffffffff 0 BAR.SYNC.DEFER_BLOCKING 0 0 0 ")
    c = 0x7F0020000000 + block * 0x2000 + warp * 128
    out.append(f"04a0 ffffffff 0 STG.E.SYS 2 R10 R30 4 1 0x{c:x} 4 0 ")
    out.append("04b0 ffffffff 0 EXIT 0 0 0 ")
    return out


def generate(path: Path, lines: int, ksteps: int = 16) -> int:
    """Write a .traceg of about ``lines`` instruction lines; returns the count."""
    per_block = WARPS * (K_LINES * ksteps + 2)
    blocks = max(1, round(lines / per_block))
    tmp = path.with_suffix(".part")
    count = 0
    with open(tmp, "w") as f:
        f.write(HEADER.format(gx=blocks))
        for blk in range(blocks):
            parts = [f"\n#BEGIN_TB\n\nthread block = {blk},0,0\n"]
            for w in range(WARPS):
                body = warp_lines(blk, w, ksteps)
                count += len(body)
                parts.append(f"\nwarp = {w}\ninsts = {len(body)}\n" + "\n".join(body) + "\n")
            parts.append("\n#END_TB\n")
            f.write("".join(parts))
    os.replace(tmp, path)
    return count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", default="1e6", help="instruction lines (1e6, 1e7, ...)")
    ap.add_argument("--data-dir", default="/tmp/tracerace-bench")
    ap.add_argument("--check", action="store_true", help="also check the imported trace")
    ap.add_argument("--compression", default=None, help="of the output: lz4 or zstd")
    args = ap.parse_args(argv)
    n = int(float(args.lines))
    data = Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    src = data / f"gpu-import-{n}.traceg"
    if not src.exists():
        t = time.perf_counter()
        generate(src, n)
        print(f"generated {src} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    count = sum(1 for line in open(src) if line[:1].isdigit() or line[:1] in "abcdef")
    dst = data / f"gpu-import-{n}.arrow"
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "tracerace", "convert", str(src), str(dst)]
    if args.compression:
        cmd += ["--compression", args.compression]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB -> GiB
    if proc.returncode:
        print(proc.stderr, file=sys.stderr)
        return 1
    events = int(proc.stderr.split(" records, ")[1].split(" events")[0].replace(",", ""))
    print(
        f"{count:,} instruction lines, {src.stat().st_size / 2**20:,.0f} MiB -> "
        f"{events:,} events ({dst.stat().st_size / 2**30:.1f} GiB) in {seconds:.1f} s: "
        f"{count / seconds:,.0f} lines/s, {events / seconds:,.0f} events/s, peak RSS "
        f"{rss:.2f} GiB"
    )
    if args.check:
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "tracerace", "check", str(dst)], capture_output=True, text=True
        )
        print(
            f"check: exit {proc.returncode} in {time.perf_counter() - t:.1f} s: "
            f"{proc.stdout.strip().splitlines()[-1]}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
