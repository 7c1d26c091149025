"""Accel-Sim tracer output (``util/tracer_nvbit`` of accel-sim-framework).

The NVBit tool writes, per kernel launch, ``kernel-N.trace`` (``.trace.xz``
with ``TRACE_FILE_COMPRESS=1``): a header of ``-key = value`` lines (kernel
name, grid and block dims, shared and local window bases, tracer version,
line info), a ``#traces format`` comment, then one line per warp-level
instruction in the order the tool received them::

    cta_x cta_y cta_z warp [line] PC mask ndst [Rd] opcode nsrc [Rs...] width [fmt addrs] [imm]

``mask`` is the active-and-predicate-true lane mask; ``width`` is 0 for an
instruction without addresses, else the bytes per lane, followed by the
addresses in one of three forms: ``0 a a a...`` (one per active lane),
``1 base stride`` (consecutive active lanes), ``2 base d d...`` (deltas from
the previous active lane). Tracer version 5 appends the instruction's last
immediate operand. ``LDGSTS`` gets two lines: its shared destination, then
its global source. ``kernelslist`` names the trace files in launch order
(and ``MemcpyHtoD,addr,bytes`` lines, which are not needed: global memory
counts as initialized).

Post-processing groups each file by block and warp into ``kernel-N.traceg``
(``kernelslist.g``): ``#BEGIN_TB``, ``thread block = x,y,z``, per warp
``warp = w`` / ``insts = n`` and its lines without the CTA and warp fields,
``#END_TB``. It drops the order between warps, and keeps only the second
(global) line of each ``LDGSTS``: a ``.traceg`` with ``LDGSTS`` cannot be
imported (the raw ``.trace`` can).

Tracer version 6 (Accel-Sim 2.0) starts each raw line with the cluster id,
the CTA's id in its cluster and its rank after the warp, writes the same as
``cluster id =``, ``cluster cta =`` and ``cluster rank =`` lines in each
``.traceg`` block, and changes the instruction part (register values, TMA
fields: :mod:`.accel_v6`). Its ``.traceg`` is replayed keeping mbarrier phases
(:mod:`.phases`), so its ``SYNCS`` import; a raw version 6 trace refuses them
(a try-wait's record may come before the arrival that let it return). A launch
in clusters of more than one block is refused in both.

Operands (versions 3 to 5): the trace records register numbers, not values, and
(version 5) one immediate. So a barrier's id is known when the immediate is below 16 and
no register is read (``BAR.SYNC 0x0``: id 0, count every live thread); a
barrier with a count or a register id, ``DEPBAR`` before version 5, and a
``WARPSYNC`` with a register mask cannot be imported. ``DEPBAR.LE``'s
scoreboard is not recorded: it is taken as ``SB0`` (the cp.async groups), as
Accel-Sim's simulator itself reads it.
"""

from __future__ import annotations

import os
import re

from ...trace.columns import ADDRESS_END
from ...trace.schema import SITE_NONE
from ..interface import Imported, Importer
from .accel_v6 import RawV6LineParser, TryWaits, V6LineParser, operands, short
from .emit import DEFAULT_WINDOW_SIZE, Emitter
from .items import A_ACTIVE, A_STRIDE
from .kernel import KernelInfo, Launch, Notes, Record, cluster_error
from .order import CtaReplay, RecordedOrder
from .phases import PhaseReplay
from .sass import Effect, decode
from .source import error, lines

RULE = "accelsim-syntax"
_DIMS = re.compile(r"^\(\s*(\d{1,20})\s*,\s*(\d{1,20})\s*,\s*(\d{1,20})\s*\)$")
_TB = re.compile(r"^thread block\s*=\s*(\d{1,20})\s*,\s*(\d{1,20})\s*,\s*(\d{1,20})\s*$")
_WARP = re.compile(r"^warp\s*=\s*(\d{1,20})\s*$")
_INSTS = re.compile(r"^insts\s*=\s*(\d{1,20})\s*$")
_MEMCPY = re.compile(r"^Memcpy(HtoD|DtoH|DtoD),0x[0-9a-fA-F]+,\d+$")
_CLUSTER = re.compile(
    r"^cluster (id|cta|rank)\s*=\s*(\d{1,10})(?:\s*,\s*(\d{1,10})\s*,\s*"
    r"(\d{1,10}))?\s*$"
)
V6 = 6
"""Tracer version 6: register values, cluster fields (raw lines, ``.traceg``
block headers), TMA copy fields (:mod:`.accel_v6`)."""
MAX_VERSION = 6
GROUPED_LDGSTS = (
    "the post-processed .traceg keeps only the global source of each LDGSTS, "
    "not its shared destination: import the raw kernel-N.trace (kernelslist) "
    "instead"
)

TRACE_SUFFIXES = (".trace", ".trace.xz", ".traceg", ".traceg.xz")
LIST_NAMES = ("kernelslist", "kernelslist.g")
_CTX_LIST = re.compile(r"kernelslist_ctx_0x[0-9a-fA-F]+")
"""The raw kernel list of one CUDA context, as newer tracers name it."""


def is_kernel_list(path: str) -> bool:
    """Whether ``path`` is named as a kernel list: ``kernelslist``,
    ``kernelslist.g`` or a context's ``kernelslist_ctx_0x<context>``."""
    base = os.path.basename(path)
    return base in LIST_NAMES or _CTX_LIST.fullmatch(base) is not None


def claims(path: str) -> bool:
    return is_kernel_list(path) or path.endswith(TRACE_SUFFIXES)


def kernel_files(path: str) -> list[str]:
    """The per-kernel trace files of ``path`` (a kernelslist, or one trace file)."""
    if not is_kernel_list(path):
        return [path]
    folder = os.path.dirname(path)
    files = []
    for lineno, text in lines(path):
        entry = text.strip()
        if not entry or _MEMCPY.match(entry):
            continue
        if not entry.startswith("kernel") or not entry.endswith(TRACE_SUFFIXES):
            raise error(
                path,
                lineno,
                RULE,
                f"{entry!r}: expected a kernel trace file name "
                f"(kernel-N.trace[g][.xz]) or a MemcpyHtoD,0xADDR,BYTES line",
            )
        files.append(os.path.join(folder, entry))
    if not files:
        raise error(path, None, RULE, "names no kernel trace file")
    return files


class _Header:
    def __init__(self, path: str) -> None:
        self.path = path
        self.values: dict[str, tuple[int | None, str]] = {}

    def add(self, lineno: int | None, text: str) -> None:
        key, sep, value = text[1:].partition("=")
        if not sep:
            raise error(self.path, lineno, RULE, f"header line {text!r}: expected -key = value")
        self.values[" ".join(key.split())] = (lineno, value.strip())

    def text(self, key: str) -> str:
        """The value of a line the header must have."""
        return self.values[key][1] if key in self.values else self._missing(key)

    def _missing(self, key: str) -> str:
        raise error(self.path, None, RULE, f"the header has no '-{key} =' line")

    def get(self, key: str, required: bool = True) -> tuple[int | None, str] | None:
        if key not in self.values:
            if required:
                raise error(self.path, None, RULE, f"the header has no '-{key} =' line")
            return None
        return self.values[key]

    def number(self, key: str, default: int | None = None, base: int = 10) -> int:
        entry = self.get(key, required=default is None)
        if entry is None:
            return default
        lineno, value = entry
        try:
            return int(value, base)
        except ValueError:
            raise error(
                self.path, lineno, RULE, f"-{key} = {short(value)!r} is not a number"
            ) from None

    def dims(self, key: str) -> tuple[int, int, int]:
        lineno, value = self.get(key)
        m = _DIMS.match(value)
        if not m or 0 in (d := tuple(int(g) for g in m.groups())):
            raise error(
                self.path,
                lineno,
                RULE,
                f"-{key} = {short(value)!r}: expected (x,y,z), each at least 1",
            )
        return d


def _windows(shared: int, local: int, options) -> tuple:
    """(shared window, local window) from the header bases and the options."""
    sw = options.shared_window or ((shared, _window_size(shared)) if shared else None)
    lw = options.local_window or ((local, _window_size(local)) if local else None)
    if sw and lw and not options.shared_window and not options.local_window:
        # Two windows closer than the default size: each ends where the other starts.
        if sw[0] < lw[0] < sw[0] + sw[1]:
            sw = (sw[0], lw[0] - sw[0])
        elif lw[0] < sw[0] < lw[0] + lw[1]:
            lw = (lw[0], sw[0] - lw[0])
    return sw, lw


def _window_size(base: int) -> int:
    """The default window size, cut short where the 64-bit address space ends."""
    return min(DEFAULT_WINDOW_SIZE, ADDRESS_END + 1 - base)


class _LineParser:
    """Parses the instruction lines of one kernel file."""

    def __init__(
        self, path: str, info: KernelInfo, version: int, lineinfo: bool, writer, raw: bool
    ) -> None:
        self.path = path
        self.info = info
        self.version = version
        self.lineinfo = lineinfo
        self.writer = writer
        self.raw = raw
        self.sites: dict[tuple, int] = {}
        self.lead = (4 if raw else 0) + (1 if lineinfo else 0)
        self.has_imm = version >= 5

    def fail(self, lineno: int, message: str):
        raise error(self.path, lineno, RULE, message)

    def site(self, pc: int, opcode: str, line: int | None) -> int:
        key = (pc, opcode, line)
        site = self.sites.get(key)
        if site is None:
            if decode(opcode).effect in (Effect.NONE, Effect.EXIT):
                return SITE_NONE  # no event will name it
            where = f" line {line}" if line is not None else ""
            site = self.sites[key] = self.writer.site(
                f"{self.info.name}{where} pc {pc:#06x} {opcode}"
            )
        return site

    def parse(self, lineno: int, text: str, block: int, warp: int) -> Record | None:
        """One instruction line (for a raw .trace, ``block``/``warp`` come from it);
        None for an instruction without an effect (checked all the same)."""
        t = text.split()
        try:
            i = self.lead
            if self.raw:
                cta = (int(t[0]), int(t[1]), int(t[2]))
                warp = int(t[3])
                block = self.info.block_index(cta)
                if block is None:
                    self.fail(lineno, f"CTA {cta} is outside the grid {self.info.grid}")
                if not 0 <= warp < self.info.warps:
                    self.fail(lineno, f"warp {warp} is outside a {self.info.threads}-thread block")
            line = int(t[i - 1]) if self.lineinfo else None
            pc = int(t[i], 16)
            mask = int(t[i + 1], 16)
            ndst = int(t[i + 2])
            i += 3 + ndst
            opcode = t[i]
            nsrc = int(t[i + 1])
            i += 2 + nsrc
            width = int(t[i])
            i += 1
            addrs = None
            if width:
                fmt = int(t[i])
                n = bin(mask).count("1")
                if fmt == 0:
                    addrs = (A_ACTIVE, [int(a, 16) for a in t[i + 1 : i + 1 + n]])
                    if len(addrs[1]) != n:
                        raise IndexError
                    i += 1 + n
                elif fmt == 1:
                    addrs = (A_STRIDE, int(t[i + 1], 16), int(t[i + 2]))
                    i += 3
                elif fmt == 2:
                    base = int(t[i + 1], 16)
                    deltas = t[i + 2 : i + 1 + n] if n else []
                    if len(deltas) != max(n - 1, 0):
                        raise IndexError
                    out, acc = [base], base
                    for d in deltas:
                        acc += int(d)
                        out.append(acc)
                    addrs = (A_ACTIVE, out[:n])
                    i += 1 + max(n - 1, 0) + 1
                else:
                    self.fail(
                        lineno,
                        f"address format {fmt} (known: 0 list, 1 base+stride, 2 base+deltas)",
                    )
            imm = None
            if self.has_imm:
                imm = int(t[i])
                if not -(1 << 63) <= imm < 1 << 63:
                    self.fail(lineno, f"immediate {imm} is not a 64-bit integer")
                i += 1
            if i != len(t):
                raise IndexError
        except (IndexError, ValueError):
            self.fail(
                lineno,
                f"{short(text)!r}: expected "
                f"{'CTA_X CTA_Y CTA_Z WARP ' if self.raw else ''}"
                f"{'LINE ' if self.lineinfo else ''}PC MASK NDST [Rd] OPCODE NSRC "
                f"[Rs...] WIDTH [FORMAT ADDRESSES]{' IMM' if self.has_imm else ''} "
                f"(tracer version {self.version})",
            )
        if decode(opcode).effect is Effect.NONE:
            return None
        return Record(
            lineno,
            block,
            warp,
            opcode,
            self.site(pc, opcode, line),
            mask,
            addrs,
            operands(opcode, nsrc, imm),
            pc,
        )


def import_kernel(
    path: str, launch_id: int, emitter: Emitter, src: int, writer, options, notes: Notes
) -> tuple[KernelInfo, int, str]:
    """Import one kernel trace file as launch ``launch_id``; returns
    ``(kernel, instruction lines, order)``."""
    grouped = path.endswith((".traceg", ".traceg.xz"))
    it = lines(path)
    header = _Header(path)
    fmt_line = None
    for lineno, text in it:
        if text.startswith("-"):
            header.add(lineno, text)
        elif text.startswith("#traces format"):
            fmt_line = lineno
            break
        elif text.strip():
            raise error(
                path,
                lineno,
                RULE,
                f"{short(text)!r} before the '#traces format' "
                f"line: expected a '-key = value' header line",
            )
    if fmt_line is None:
        raise error(
            path,
            None,
            "truncated" if header.values else RULE,
            "no '#traces format' line: not an Accel-Sim trace, or cut short",
        )
    version = header.number("accelsim tracer version")
    if not 3 <= version <= MAX_VERSION:
        raise error(
            path,
            header.get("accelsim tracer version")[0],
            RULE,
            f"tracer version {version}: tracerace reads versions 3 to {MAX_VERSION}",
        )
    name = header.get("kernel name")[1]
    shared = header.number("shmem base_addr", default=0, base=16)
    local = header.number("local mem base_addr", default=0, base=16)
    for key, base in (("shmem base_addr", shared), ("local mem base_addr", local)):
        if base > ADDRESS_END:
            raise error(
                path,
                header.get(key)[0],
                "address-overflow",
                f"-{key} = {base:#x} is not a 64-bit address",
            )
    sw, lw = _windows(shared, local, options)
    extra = {"tool": f"accel-sim tracer {version}"}
    kid = header.get("kernel id", required=False)
    if kid is not None:
        extra["kernel_id"] = header.number("kernel id")
    info = KernelInfo(name, header.dims("grid dim"), header.dims("block dim"), path, sw, lw, extra)
    problem = info.dims_problem()
    if problem is not None:
        raise error(path, header.get("grid dim")[0], RULE, problem)
    lineinfo = header.number("enable lineinfo", default=0) != 0
    v6 = version >= V6
    if v6:
        parser = (
            V6LineParser(path, info, version, lineinfo, writer, RULE)
            if grouped
            else RawV6LineParser(path, info, version, lineinfo, writer, RULE)
        )
    else:
        parser = _LineParser(path, info, version, lineinfo, writer, raw=not grouped)
    # mbarriers need the phase-keeping replay of a grouped trace: in a raw trace a
    # try-wait's record may come before the arrival that let it return.
    launch = Launch(
        launch_id,
        info,
        emitter,
        src,
        explicit_barriers=False,
        notes=notes,
        single_ldgsts=GROUPED_LDGSTS if grouped else None,
        mbarriers=v6 and grouped,
    )
    if grouped:
        count = _grouped(path, it, parser, launch, v6)
        return info, count, "reconstructed"
    order = RecordedOrder(launch)
    count = 0
    clusters: dict[tuple, tuple] = {}
    for lineno, text in it:
        if not text.strip():
            continue
        if text.startswith(("#", "-")):
            raise error(path, lineno, RULE, f"{short(text)!r} among instruction lines")
        if v6:
            rec, cta, cluster = parser.parse_raw(lineno, text)
            other = clusters.setdefault(cluster, cta)
            if other != cta:
                raise cluster_error(path, lineno, other, cta, cluster)
        else:
            rec = parser.parse(lineno, text, 0, 0)
        if rec is not None:
            order.record(rec)
        count += 1
    order.finish()
    return info, count, "recorded"


def _grouped(path: str, it, parser, launch: Launch, v6: bool) -> int:
    """The body of a ``.traceg``: blocks of warps, replayed by :class:`CtaReplay`
    (version 6: :class:`~tracerace.convert.gpu.phases.PhaseReplay`, which keeps mbarrier
    phases, and a try-wait loop read as one wait)."""
    info = launch.info
    if v6:
        replay = PhaseReplay(launch)
        into = TryWaits(replay)
    else:
        replay = into = CtaReplay(launch)
    clusters: dict[tuple, tuple] = {}
    cta = None
    state = "between"  # between blocks, in a block, in a warp's lines
    block = warp = None
    remaining = 0
    warp_line = 0
    seen: set[int] = set()
    count = 0
    last = 0
    try:
        for lineno, text in it:
            last = lineno
            s = text.strip()
            if not s:
                continue
            if state == "warp" and remaining > 0:
                if s.startswith("#") or s.startswith(("warp", "insts", "thread block")):
                    raise error(
                        path,
                        lineno,
                        "truncated",
                        f"warp {warp} of block {block}: 'insts' announced {remaining} more lines",
                    )
                rec = parser.parse(lineno, s, block, warp)
                if rec is not None:
                    into.record(rec)
                remaining -= 1
                count += 1
                continue
            if s == "#BEGIN_TB":
                if state != "between":
                    raise error(path, lineno, RULE, "#BEGIN_TB inside a block (no #END_TB)")
                state = "block"
                block = None
            elif s == "#END_TB":
                if state == "between" or block is None:
                    raise error(path, lineno, RULE, "#END_TB without a block")
                if v6:
                    into.flush()
                replay.end_block()
                state = "between"
            elif m := _TB.match(s):
                if state != "block" or block is not None:
                    raise error(path, lineno, RULE, "'thread block =' outside #BEGIN_TB")
                cta = tuple(int(g) for g in m.groups())
                block = info.block_index(cta)
                if block is None:
                    raise error(
                        path, lineno, RULE, f"thread block {cta} is outside the grid {info.grid}"
                    )
                if block in seen:
                    raise error(path, lineno, RULE, f"thread block {cta} appears twice")
                seen.add(block)
                replay.begin_block(block, lineno)
            elif m := _WARP.match(s):
                if block is None:
                    raise error(path, lineno, RULE, "'warp =' outside a thread block")
                warp = int(m.group(1))
                if warp >= info.warps:
                    raise error(
                        path, lineno, RULE, f"warp {warp} is outside a {info.threads}-thread block"
                    )
                state, warp_line, remaining = "warp", lineno, -1
                if v6:
                    into.flush()
                replay.begin_warp(warp)
            elif v6 and (m := _CLUSTER.match(s)):
                if block is None or state != "block":
                    raise error(path, lineno, RULE, f"{short(s)!r} outside a thread block's header")
                if (m.group(1) == "rank") != (m.group(3) is None):
                    raise error(
                        path,
                        lineno,
                        RULE,
                        f"{short(s)!r}: expected 'cluster id = "
                        f"x,y,z', 'cluster cta = x,y,z' or 'cluster rank = n'",
                    )
                if m.group(1) == "id":
                    cluster = tuple(int(g) for g in m.group(2, 3, 4))
                    other = clusters.setdefault(cluster, cta)
                    if other != cta:
                        raise cluster_error(path, lineno, other, cta, cluster)
            elif m := _INSTS.match(s):
                if state != "warp" or remaining != -1:
                    raise error(path, lineno, RULE, "'insts =' without a 'warp =' line")
                remaining = int(m.group(1))
            elif state == "warp" and remaining == 0:
                raise error(
                    path,
                    lineno,
                    RULE,
                    f"warp {warp} (line {warp_line}): more "
                    f"instruction lines than its 'insts =' line announced",
                )
            else:
                raise error(
                    path,
                    lineno,
                    RULE,
                    f"{short(s)!r}: expected #BEGIN_TB, "
                    f"'thread block =', 'warp =', 'insts =', an instruction or #END_TB",
                )
        if state != "between":
            raise error(path, last, "truncated", "the file ends inside a thread block (no #END_TB)")
        replay.finish()
    finally:
        replay.close()
    return count


def read(path: str, writer, emitter: Emitter, options, notes: Notes):
    """Import ``path`` (one kernel trace file or a kernelslist); every kernel is a launch."""
    kernels, records, orders = [], 0, set()
    for launch_id, file in enumerate(kernel_files(path)):
        emitter.sources.append(file)
        info, count, order = import_kernel(
            file, launch_id, emitter, len(emitter.sources) - 1, writer, options, notes
        )
        kernels.append(info)
        records += count
        orders.add(order)
    return kernels, records, "/".join(sorted(orders))


class AccelSimImporter(Importer):
    """Accel-Sim's tracer output: a kernel trace file or a ``kernelslist``, by name."""

    name = "accelsim"

    def claims(self, path: str) -> bool:
        return claims(path)

    def read(self, path: str, writer, emitter: Emitter, options, notes: Notes) -> Imported:
        return Imported(*read(path, writer, emitter, options, notes))


IMPORTER = AccelSimImporter()
