"""NVBit's ``mem_trace`` example tool (``tools/mem_trace`` of the NVBit release).

The tool instruments every instruction with a memory operand (not constant
memory) and prints, on the program's standard output, one line per launch::

    MEMTRACE: CTX 0x... - LAUNCH - Kernel pc 0x... - Kernel name NAME - grid launch id N
      - grid size X,Y,Z - block size X,Y,Z - nregs N - shmem N - cuda stream id N

and one line per warp-level memory operand (an ``LDGSTS`` gives two: its
shared destination, then its global source)::

    MEMTRACE: CTX 0x... - grid_launch_id N - CTA X,Y,Z - warp W - OPCODE - 0x... (32 addresses)

in the order the tool received them from the GPU. Other lines (the program's
own output, NVBit's banner, ``MEMTRACE: STARTING CONTEXT``) are skipped; a
``MEMTRACE:`` line of another shape is an error.

What the format does not record, and what the import does about it:

* no barrier, fence or cp.async commit and wait (they have no memory
  operand): every conflict between threads is reported, and barrier misuse
  is not checked (the import's notes say so);
* no active mask: a lane counts as active when its address is not 0 (see
  :meth:`~tracerace.convert.gpu.kernel.Launch.lanes_from_addresses`);
* ``warp`` is the SM's hardware warp slot (``%warpid``), not the warp of the
  block: ``thread = warp * 32 + lane`` tells threads of a block apart but is
  not ``threadIdx``;
* no PC: a site is the kernel and the opcode;
* no generic windows (``--shared-window``/``--local-window``/
  ``--generic-global``).
"""

from __future__ import annotations

import re

from ..interface import Imported, Importer
from .emit import Emitter
from .items import A_LANES
from .kernel import KernelInfo, Launch, Notes, Record
from .order import RecordedOrder
from .source import error, lines

RULE = "memtrace-syntax"
PREFIX = "MEMTRACE: "
_LAUNCH = re.compile(
    r"^MEMTRACE: CTX (0x[0-9a-fA-F]+) - LAUNCH - Kernel pc 0x[0-9a-fA-F]+ - Kernel name (.+?)"
    r" - grid launch id (\d{1,20}) - grid size (\d{1,20}),(\d{1,20}),(\d{1,20})"
    r" - block size (\d{1,20}),(\d{1,20}),(\d{1,20})"
    r" - nregs -?\d+ - shmem -?\d+ - cuda stream id -?\d+\s*$"
)
_ACCESS = re.compile(
    r"^MEMTRACE: CTX (0x[0-9a-fA-F]+) - grid_launch_id (\d{1,20})"
    r" - CTA (\d{1,20}),(\d{1,20}),(\d{1,20}) - warp (\d{1,20})"
    r" - (\S+) - ((?:0x[0-9a-fA-F]+\s*){32})$"
)
_SKIP = re.compile(r"^MEMTRACE: (STARTING CONTEXT|TERMINATING CONTEXT|CTX \S+, Inspecting )")
MAX_HW_WARPS = 64
NOTE = (
    "NVBit mem_trace records memory instructions only: barriers, fences and cp.async "
    "commits and waits are not in it, so every conflict between threads is reported and "
    "barrier misuse is not checked; its warp numbers are hardware warp slots (%warpid), so "
    "thread = slot * 32 + lane tells a block's threads apart but is not threadIdx"
)


def claims_line(text: str) -> bool:
    return text.startswith(PREFIX) and (" - LAUNCH - " in text or " - grid_launch_id " in text)


class _Launch:
    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.order = RecordedOrder(launch)
        self.sites: dict[str, int] = {}


def read(path: str, writer, emitter: Emitter, options, notes: Notes):
    emitter.sources.append(path)
    src = len(emitter.sources) - 1
    launches: dict[tuple[str, int], _Launch] = {}
    kernels: list[KernelInfo] = []
    current: _Launch | None = None
    records = 0
    for lineno, text in lines(path):
        if not text.startswith(PREFIX):
            continue
        m = _ACCESS.match(text)
        if m:
            key = (m.group(1).lower(), int(m.group(2)))
            state = launches.get(key)
            if state is None:
                raise error(
                    path,
                    lineno,
                    RULE,
                    f"grid_launch_id {key[1]} of context {key[0]} has no LAUNCH line before it",
                )
            if state is not current:
                raise error(
                    path,
                    lineno,
                    RULE,
                    f"a record of grid launch {key[1]} after a "
                    f"later launch began (launches must not overlap)",
                )
            info = state.launch.info
            cta = (int(m.group(3)), int(m.group(4)), int(m.group(5)))
            block = info.block_index(cta)
            if block is None:
                raise error(path, lineno, RULE, f"CTA {cta} is outside the grid {info.grid}")
            warp = int(m.group(6))
            if warp >= MAX_HW_WARPS:
                raise error(
                    path, lineno, RULE, f"warp {warp}: a hardware warp slot is below {MAX_HW_WARPS}"
                )
            opcode = m.group(7)
            addrs = [int(a, 16) for a in m.group(8).split()]
            site = state.sites.get(opcode)
            if site is None:
                site = state.sites[opcode] = writer.site(f"{info.name} {opcode}")
            state.order.record(
                Record(lineno, block, warp, opcode, site, None, (A_LANES, addrs), None, None)
            )
            records += 1
            continue
        m = _LAUNCH.match(text)
        if m:
            key = (m.group(1).lower(), int(m.group(3)))
            if key in launches:
                raise error(path, lineno, RULE, f"a second LAUNCH line for grid launch id {key[1]}")
            grid = tuple(int(g) for g in m.group(4, 5, 6))
            block = tuple(int(g) for g in m.group(7, 8, 9))
            info = KernelInfo(
                m.group(2),
                grid,
                block,
                path,
                options.shared_window,
                options.local_window,
                {"tool": "NVBit mem_trace", "grid_launch_id": key[1]},
            )
            problem = info.dims_problem()
            if problem is not None:
                raise error(path, lineno, RULE, problem)
            if current is not None:
                current.order.finish()
            launch = Launch(
                len(kernels),
                info,
                emitter,
                src,
                lanes_per_warp=lambda warp: 0xFFFFFFFF,
                notes=notes,
            )
            current = launches[key] = _Launch(launch)
            kernels.append(info)
            continue
        if _SKIP.match(text):
            continue
        shown = text if len(text) <= 90 else text[:87] + "..."
        raise error(
            path,
            lineno,
            RULE,
            f"{shown!r}: expected a LAUNCH line or 'CTX ... - "
            f"grid_launch_id N - CTA X,Y,Z - warp W - OPCODE - ' and 32 addresses",
        )
    if current is not None:
        current.order.finish()
    if not kernels:
        raise error(path, None, RULE, "no 'MEMTRACE: ... LAUNCH' line: not NVBit mem_trace output")
    notes.add(NOTE)
    return kernels, records, "recorded"


class MemTraceImporter(Importer):
    """NVBit ``mem_trace`` output, by its ``MEMTRACE:`` launch and access lines."""

    name = "memtrace"

    def claims_line(self, text: str) -> bool:
        return claims_line(text)

    def read(self, path: str, writer, emitter: Emitter, options, notes: Notes) -> Imported:
        return Imported(*read(path, writer, emitter, options, notes))


IMPORTER = MemTraceImporter()
