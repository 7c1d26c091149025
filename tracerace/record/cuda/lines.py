"""Source lines of recorded CUDA instructions, from the module cubins and ``nvdisasm``.

The tool keeps each loaded module's cubin beside the record stream. A kernel
built with line information (``nvcc -lineinfo`` or ``-G``) carries a line
table; ``nvdisasm -g -c`` prints it as ``//## File "reduce.cu", line 18``
comments above the instructions, each instruction with its offset in its
function (``/*0130*/``), the offset the tool records (``pc`` minus the
function's first PC). :func:`line_namer` turns that into sites
``reduce.cu:18 _Z6reducePKfPfb+0x130`` (``file:line`` first, the file relative
to the working folder when under it, so SARIF and
editors can open it); an instruction without a line, a module without a
cubin, a cubin without line information or a machine without ``nvdisasm``
keeps the offset site ``_Z6reducePKfPfb+0x130``.

``nvdisasm`` comes with every CUDA toolkit (beside ``nvcc``) and in the
``nvidia-cuda-nvdisasm`` wheel.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from .stream import Launch

LineTable = dict[str, dict[int, tuple[str, int]]]
"""function name -> instruction offset -> (file, line)."""

_SECTION = re.compile(r"^\.text\.(?P<name>\S+):\s*$")
_LINE = re.compile(r'^\s*//## File "(?P<file>[^"]*)", line (?P<line>\d+)')
_INSTRUCTION = re.compile(r"^\s*/\*(?P<offset>[0-9a-fA-F]+)\*/")


def parse_nvdisasm(text: str) -> LineTable:
    """The line table of ``nvdisasm -g -c`` output: every instruction after a
    ``//## File`` comment in a function's ``.text`` section has that line."""
    table: LineTable = {}
    function: dict[int, tuple[str, int]] | None = None
    where: tuple[str, int] | None = None
    for raw in text.splitlines():
        section = _SECTION.match(raw)
        if section:
            function = table.setdefault(section["name"], {})
            where = None
            continue
        line = _LINE.match(raw)
        if line:
            where = (line["file"], int(line["line"]))
            continue
        instruction = _INSTRUCTION.match(raw)
        if instruction and function is not None and where is not None:
            function[int(instruction["offset"], 16)] = where
    return table


def find_nvdisasm(env: Mapping[str, str] = os.environ) -> str | None:
    """``nvdisasm`` of the toolkit (``$CUDA_HOME``/``$CUDA_PATH``, PATH,
    ``/usr/local/cuda``), else of the ``nvidia-cuda-nvdisasm`` wheel; None if none."""
    candidates = [
        Path(env[name]) / "bin" / "nvdisasm" for name in ("CUDA_HOME", "CUDA_PATH") if env.get(name)
    ]
    found = shutil.which("nvdisasm", path=env.get("PATH", os.defpath))
    candidates += [Path(found)] if found else []
    candidates.append(Path("/usr/local/cuda/bin/nvdisasm"))
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        candidates += sorted(Path(base).glob("cu*/bin/nvdisasm"), reverse=True)
    return next((str(c) for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def line_table(cubin: str, nvdisasm: str) -> LineTable:
    """The line table of one cubin (empty when ``nvdisasm`` cannot read it)."""
    try:
        done = subprocess.run(
            [nvdisasm, "-g", "-c", cubin], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return parse_nvdisasm(done.stdout) if done.returncode == 0 else {}


def short_path(path: str) -> str:
    """``path`` relative to the working folder when it lies under it, else as given."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def line_namer(
    cubins: Mapping[int, str], fallback: Callable[[Launch, int], str], nvdisasm: str | None
) -> Callable[[Launch, int], str]:
    """A site namer: ``file:line kernel+0xOFFSET`` where the module's cubin
    (``cubins``: module id -> path) has a line for the instruction, else
    ``fallback``. Cubins are read on first use."""
    tables: dict[int, LineTable] = {}

    def name(launch: Launch, pc: int) -> str:
        site = fallback(launch, pc)
        cubin = cubins.get(launch.module)
        if not pc or nvdisasm is None or cubin is None:
            return site
        if launch.module not in tables:
            tables[launch.module] = line_table(cubin, nvdisasm)
        where = tables[launch.module].get(launch.name, {}).get(pc - launch.pc)
        return f"{short_path(where[0])}:{where[1]} {site}" if where else site

    return name
