"""CUTracer (facebookresearch/CUTracer) per-kernel NDJSON traces.

CUTracer's ``TraceWriter`` writes one file per kernel launch,
``kernel_<checksum>_iter<i>_<name>.ndjson`` (``CUTRACER_TRACE_FORMAT=ndjson``)
or ``.ndjson.zst`` (``zstd``: one zstd frame per buffer flush). The first line
is a ``kernel_metadata`` object (``mangled_name``, ``unmangled_name``,
``grid``, ``block``, and ``instructions``: opcode id -> ``{"sass": ...}``);
every further line is a record, in the order CUTracer received them from the
GPU, with ``type``, ``grid_launch_id``, ``cta`` ``[x, y, z]``, ``warp`` (the
*global* warp id: ``block * warps_per_block + warp``), ``opcode_id``, ``pc``
(hex offset in the kernel), ``trace_index`` and ``timestamp``:

``mem_addr_trace``  (``CUTRACER_INSTRUMENT=mem_addr_trace``) ``addrs``: one
                    address per lane (32), one record per memory operand;
                    ``LDGSTS`` gives two, destination then source.
``mem_value_trace`` the same with values, ``mem_space``, ``is_load`` and
                    ``access_size`` (captured after the instruction).
``opcode_only``,    one record per executed instruction (``opcode_only`` or
``reg_trace``       ``reg_trace`` modes): barriers, fences, cp.async commits
                    and waits come from these.

What the format does not record: an active mask. A lane counts as active
when its address is not 0 (CUTracer's own convention; see
:meth:`~tracerace.convert.gpu.kernel.Launch.lanes_from_addresses` for shared offset
0), and an instruction record (fence, commit, wait) applies to every lane of
the warp that has not exited. A trace with memory records only (no
``opcode_only``/``reg_trace``) has no barriers or fences: the import says so
in its notes, and every conflict between threads is then reported. A
memory instruction whose instruction record comes without its address
records fails the import, and so does a gap in ``trace_index`` (records lost
while tracing). A file cut at a record boundary (an uncompressed one, or a
zstd one at a frame boundary) cannot be told from a complete one: the format
has no end marker. There are no generic-window bases either
(``--shared-window``/``--local-window``/``--generic-global``).
"""

from __future__ import annotations

import os

from ...errors import TraceError
from ..interface import Imported, Importer
from .emit import Emitter
from .items import A_LANES
from .kernel import KernelInfo, Launch, Notes, Record
from .order import RecordedOrder
from .sass import decode, split_text, sync_operands
from .source import bounded_json, error, lines

RULE = "cutracer-syntax"
SUFFIXES = (".ndjson", ".ndjson.zst", ".ndjson.zstd")
MEM_TYPES = ("mem_addr_trace", "mem_value_trace", "mem_trace")
INSTR_TYPES = ("opcode_only", "reg_trace")
OTHER_TYPES = ("tma_trace",)
MEM_ONLY_NOTE = (
    "the trace has memory records only (no opcode_only or reg_trace records): "
    "barriers, fences and cp.async commits and waits are not in it, so every "
    "conflict between threads is reported, and barrier misuse is not checked"
)


def claims(path: str) -> bool:
    if os.path.isdir(path):
        return any(name.endswith(SUFFIXES) for name in os.listdir(path))
    return path.lower().endswith(SUFFIXES)


def claims_line(text: str) -> bool:
    s = text.lstrip()
    if not s.startswith("{"):
        return False
    try:
        obj = bounded_json("", 0, s, RULE)
    except (ValueError, TraceError):
        return False
    return isinstance(obj, dict) and obj.get("type") in (
        ("kernel_metadata",) + MEM_TYPES + INSTR_TYPES + OTHER_TYPES
    )


def kernel_files(path: str) -> list[str]:
    """One file, or every CUTracer file of a directory in launch order."""
    if not os.path.isdir(path):
        return [path]
    found = []
    for name in os.listdir(path):
        if name.endswith(SUFFIXES):
            file = os.path.join(path, name)
            found.append((_first_launch_id(file), name, file))
    if not found:
        raise error(path, None, "usage", "holds no CUTracer .ndjson or .ndjson.zst file")
    return [file for _, _, file in sorted(found)]


def _first_launch_id(path: str) -> int:
    for lineno, text in lines(path):
        obj = _parse(path, lineno, text)
        if obj is not None and obj.get("type") != "kernel_metadata":
            return _int(path, lineno, obj, "grid_launch_id")
    return -1


def _parse(path: str, lineno: int, text: str) -> dict | None:
    if not text.strip():
        return None
    try:
        obj = bounded_json(path, lineno, text, RULE)
    except ValueError as exc:  # json's own errors say where; a number too long does not
        where = f" at column {exc.colno}" if hasattr(exc, "colno") else ""
        raise error(path, lineno, RULE, f"not JSON ({getattr(exc, 'msg', exc)}{where})") from None
    if not isinstance(obj, dict):
        raise error(path, lineno, RULE, "a record must be a JSON object")
    return obj


def _int(path: str, lineno: int, obj: dict, key: str) -> int:
    value = obj.get(key)
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            pass
    elif isinstance(value, int) and not isinstance(value, bool):
        return value
    raise error(
        path, lineno, RULE, f"{_kind(obj)}: {key!r} must be an integer (got {_shown(value)})"
    )


def _dims(path: str, lineno: int, obj: dict, key: str) -> tuple[int, int, int]:
    value = obj.get(key)
    if (
        not isinstance(value, list)
        or len(value) != 3
        or not all(isinstance(v, int) and v >= 0 for v in value)
    ):
        raise error(
            path,
            lineno,
            RULE,
            f"{_kind(obj)}: {key!r} must be a list "
            f"of three non-negative integers (got {_shown(value)})",
        )
    return tuple(value)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(obj: dict) -> str:
    kind = obj.get("type", "record")
    return _shown(kind) if not isinstance(kind, str) or len(kind) > 40 else kind


class _Kernel:
    """State of one kernel file."""

    def __init__(
        self,
        path: str,
        launch_id: int,
        meta: dict,
        lineno: int,
        writer,
        emitter: Emitter,
        src: int,
        options,
        notes: Notes,
    ) -> None:
        self.path = path
        self.writer = writer
        name = meta.get("unmangled_name") or meta.get("mangled_name")
        if not isinstance(name, str) or not name:
            raise error(path, lineno, RULE, "kernel_metadata: no kernel name")
        grid, block = _dims(path, lineno, meta, "grid"), _dims(path, lineno, meta, "block")
        problem = KernelInfo(name, grid, block, path).dims_problem()
        if problem is not None:
            raise error(path, lineno, RULE, f"kernel_metadata: {problem}")
        table = meta.get("instructions", {})
        if not isinstance(table, dict):
            raise error(path, lineno, RULE, "kernel_metadata: 'instructions' must be an object")
        self.sass: dict[int, str] = {}
        for key, entry in table.items():
            if not (isinstance(entry, dict) and isinstance(entry.get("sass"), str)):
                raise error(
                    path,
                    lineno,
                    RULE,
                    f"kernel_metadata: instruction {_shown(key)} has no 'sass' text",
                )
            try:
                self.sass[int(key)] = entry["sass"]
            except ValueError:
                raise error(
                    path,
                    lineno,
                    RULE,
                    f"kernel_metadata: instruction id {_shown(key)} is not a number",
                ) from None
        extra = {"tool": "CUTracer"}
        if isinstance(meta.get("mangled_name"), str):
            extra["mangled_name"] = meta["mangled_name"]
        self.info = KernelInfo(
            name, grid, block, path, options.shared_window, options.local_window, extra
        )
        self.launch = Launch(launch_id, self.info, emitter, src, notes=notes)
        self.order = RecordedOrder(self.launch)
        self.sites: dict[tuple[int, str], int] = {}
        self.grid_launch: int | None = None
        # Per warp: pc of address records not yet matched by their instruction
        # record, and pc of an instruction record still waiting for its addresses.
        self.mem_seen: dict[tuple[int, int], int] = {}
        self.awaiting: dict[tuple[int, int], tuple[int, int, str]] = {}
        self.instr_records = 0
        self.mem_records = 0
        self.next_index = 0

    def site(self, pc: int, text: str) -> int:
        key = (pc, text)
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = self.writer.site(f"{self.info.name} pc {pc:#06x} {text}")
        return site

    def record(self, lineno: int, obj: dict) -> None:
        path = self.path
        kind = obj.get("type")
        if kind == "kernel_metadata":
            raise error(
                path,
                lineno,
                RULE,
                "a second kernel_metadata line: one file holds one kernel launch",
            )
        if kind not in MEM_TYPES + INSTR_TYPES + OTHER_TYPES:
            raise error(path, lineno, RULE, f"unknown record type {_shown(kind)}")
        index = _int(path, lineno, obj, "trace_index")
        if index != self.next_index:
            raise error(
                path,
                lineno,
                "cutracer-missing",
                f"trace_index {index} where "
                f"{self.next_index} was due: records are missing or out of order "
                f"(CUTracer numbers a launch's records from 0)",
            )
        self.next_index += 1
        gl = _int(path, lineno, obj, "grid_launch_id")
        if self.grid_launch is None:
            self.grid_launch = gl
        elif gl != self.grid_launch:
            raise error(
                path, lineno, RULE, f"grid_launch_id {gl} in the file of launch {self.grid_launch}"
            )
        cta = _dims(path, lineno, obj, "cta")
        block = self.info.block_index(cta)
        if block is None:
            raise error(
                path, lineno, RULE, f"cta {list(cta)} is outside the grid {list(self.info.grid)}"
            )
        gwarp = _int(path, lineno, obj, "warp")
        warp = gwarp - block * self.info.warps
        if not 0 <= warp < self.info.warps:
            raise error(
                path,
                lineno,
                RULE,
                f"warp {gwarp} is not a warp of cta {list(cta)} "
                f"(CUTracer numbers warps across the grid: block * "
                f"{self.info.warps} + warp)",
            )
        opcode_id = _int(path, lineno, obj, "opcode_id")
        pc = _int(path, lineno, obj, "pc")
        text = obj.get("sass") if isinstance(obj.get("sass"), str) else self.sass.get(opcode_id)
        if text is None:
            raise error(
                path,
                lineno,
                RULE,
                f"opcode_id {opcode_id} is not in the kernel_metadata instruction table",
            )
        opcode, operands = split_text(text)
        sass = decode(opcode)
        key = (block, warp)
        waiting = self.awaiting.pop(key, None)
        if kind in MEM_TYPES:
            self.mem_records += 1
            addrs = obj.get("addrs")
            if (
                not isinstance(addrs, list)
                or len(addrs) != 32
                or not all(isinstance(a, int) and a >= 0 for a in addrs)
            ):
                raise error(path, lineno, RULE, f"{kind}: 'addrs' must be 32 non-negative integers")
            if waiting is not None and waiting[0] != pc:
                self._unaddressed(waiting)
            if waiting is None:
                self.mem_seen[key] = pc
            rec = Record(
                lineno, block, warp, opcode, self.site(pc, text), None, (A_LANES, addrs), None, pc
            )
            self.order.record(rec)
            return
        if waiting is not None:
            self._unaddressed(waiting)
        if kind in OTHER_TYPES:
            if sass.followable:
                return  # a TMA record of an instruction handled elsewhere
            raise error(path, lineno, f"sass-{sass.effect.value}", f"{opcode}: {sass.why}")
        self.instr_records += 1
        if sass.effect.is_access:
            if self.mem_seen.pop(key, None) != pc:
                self.awaiting[key] = (pc, lineno, opcode)  # mem_value_trace comes after
            return
        self.mem_seen.pop(key, None)
        rec = Record(
            lineno,
            block,
            warp,
            opcode,
            self.site(pc, text),
            None,
            None,
            sync_operands(sass, operands),
            pc,
        )
        self.order.record(rec)

    def _unaddressed(self, waiting: tuple[int, int, str]):
        pc, lineno, opcode = waiting
        raise error(
            self.path,
            lineno,
            "cutracer-missing",
            f"{opcode} at pc {pc:#x}: a memory "
            f"instruction without its address record (record with "
            f"CUTRACER_INSTRUMENT=mem_addr_trace or mem_value_trace)",
        )

    def finish(self, notes: Notes) -> None:
        if self.awaiting:
            self._unaddressed(min(self.awaiting.values(), key=lambda w: w[1]))
        self.order.finish()
        if self.instr_records == 0:
            notes.add(MEM_ONLY_NOTE)


def read(path: str, writer, emitter: Emitter, options, notes: Notes):
    kernels, records = [], 0
    for launch_id, file in enumerate(kernel_files(path)):
        emitter.sources.append(file)
        src = len(emitter.sources) - 1
        kernel = None
        for lineno, text in lines(file):
            obj = _parse(file, lineno, text)
            if obj is None:
                continue
            if kernel is None:
                if obj.get("type") != "kernel_metadata":
                    raise error(
                        file,
                        lineno,
                        RULE,
                        "the first record must be kernel_metadata "
                        "(the kernel's name, grid, block and instruction table)",
                    )
                kernel = _Kernel(file, launch_id, obj, lineno, writer, emitter, src, options, notes)
                continue
            kernel.record(lineno, obj)
            records += 1
        if kernel is None:
            raise error(file, None, "truncated", "empty: no kernel_metadata line")
        kernel.finish(notes)
        kernels.append(kernel.info)
    return kernels, records, "recorded"


class CUTracerImporter(Importer):
    """CUTracer's NDJSON files (or a folder of them) by name, else by a JSON record line."""

    name = "cutracer"

    def claims(self, path: str) -> bool:
        return claims(path)

    def claims_line(self, text: str) -> bool:
        return claims_line(text)

    def read(self, path: str, writer, emitter: Emitter, options, notes: Notes) -> Imported:
        return Imported(*read(path, writer, emitter, options, notes))


IMPORTER = CUTracerImporter()
