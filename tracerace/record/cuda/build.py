"""Finding the CUDA toolkit and the Compute Sanitizer API, and building the CUDA tool library.

The tool library (``cuda_tool/``, shipped with the package) is two parts: the
host side (``tracerace_cuda_tool.cpp``, a shared library linked against
``libsanitizer-public.so``) and the device patches
(``tracerace_cuda_patches.cu``, a fatbin compiled with ``nvcc
--compile-as-tools-patch``). Building them needs ``nvcc``, a C++ compiler, the
CUDA headers (``cuda.h``) and the Compute Sanitizer API's headers and library.
Those come with every CUDA toolkit (``$CUDA_HOME/compute-sanitizer``) and in
the ``nvidia-cuda-sanitizer-api`` wheel (``nvidia/cu13``); set
``TRACERACE_SANITIZER_DIR`` to a folder holding ``include/sanitizer.h`` and
``libsanitizer-public.so`` (or ``lib/libsanitizer-public.so``) to choose one.

Both parts are built once into the user's cache (see
:func:`..build.cache_dir`), under names keyed by a hash of the
sources, the flags and the toolkit, so an edited source or another toolkit
gives a new build, never a stale one.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from glob import glob
from pathlib import Path

from ...errors import TraceError
from ..build import COMPILER_PACKAGE, OUT, build, cache_dir, find_compiler, stamp

TOOL_DIR = Path(__file__).with_name("tool")
HOST_SOURCE = TOOL_DIR / "tracerace_cuda_tool.cpp"
PATCH_SOURCE = TOOL_DIR / "tracerace_cuda_patches.cu"
HEADER = TOOL_DIR / "tracerace_cuda.h"

CXXFLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared")
PATCH_ARCHS = (75, 80, 86, 89, 90, 100, 120)
"""GPU architectures the patches are compiled for (those the toolkit knows),
plus PTX of the newest, which the driver compiles for newer GPUs."""

SANITIZER_WHEEL = "nvidia-cuda-sanitizer-api"


@dataclass(frozen=True)
class Toolkit:
    """Where this machine's CUDA toolkit and Compute Sanitizer API live."""

    nvcc: str
    cuda_include: str  # holds cuda.h
    sanitizer_include: str  # holds sanitizer.h
    sanitizer_lib: str  # holds libsanitizer-public.so


@dataclass(frozen=True)
class ToolLibrary:
    """The built tool: the injection library and the patches it loads."""

    library: str
    patches: str


def missing(what: str, install: str) -> TraceError:
    """The error for something missing, naming what to install."""
    return TraceError(f"{what}; {install}", path="cuda backend", rule="missing-tool")


def find_toolkit(env: Mapping[str, str] = os.environ) -> Toolkit:
    """The CUDA toolkit (``$CUDA_HOME`` or ``$CUDA_PATH`` when set, else ``nvcc`` on
    PATH, else ``/usr/local/cuda``) and a Compute Sanitizer API beside it."""
    nvcc = find_nvcc(env)
    root = toolkit_root(nvcc)
    include = next(
        (
            str(d)
            for d in [root / "include", *map(Path, glob(str(root / "targets" / "*" / "include")))]
            if (d / "cuda.h").is_file()
        ),
        None,
    )
    if include is None:
        raise missing(
            f"the CUDA toolkit of {nvcc} has no cuda.h",
            "install the CUDA toolkit's headers (cuda-cudart-dev)",
        )
    san_include, san_lib = find_sanitizer(root, env)
    return Toolkit(nvcc, include, san_include, san_lib)


def find_nvcc(env: Mapping[str, str]) -> str:
    for name in ("CUDA_HOME", "CUDA_PATH"):
        home = env.get(name)
        if home:
            nvcc = Path(home) / "bin" / "nvcc"
            if not nvcc.is_file():
                raise missing(
                    f"{name}={home} holds no bin/nvcc", "point it at a CUDA toolkit, or unset it"
                )
            return str(nvcc)
    found = shutil.which("nvcc", path=env.get("PATH", os.defpath))
    if found:
        return found
    if Path("/usr/local/cuda/bin/nvcc").is_file():
        return "/usr/local/cuda/bin/nvcc"
    raise missing(
        "nvcc, the CUDA compiler, was not found (not on PATH, no CUDA_HOME, no /usr/local/cuda)",
        "install the CUDA toolkit or set CUDA_HOME",
    )


def toolkit_root(nvcc: str) -> Path:
    """The toolkit folder, as ``nvcc`` itself reports it (``TOP``): ``nvcc`` on PATH may
    be a wrapper script elsewhere."""
    done = subprocess.run(
        [nvcc, "-v", "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
        capture_output=True,
        text=True,
    )
    top = re.search(r"^#\$ TOP=(.*)$", done.stdout + done.stderr, re.MULTILINE)
    if top:
        return Path(os.path.realpath(top.group(1).strip()))
    return Path(os.path.realpath(nvcc)).parent.parent


def find_sanitizer(root: Path, env: Mapping[str, str]) -> tuple[str, str]:
    """(include dir, library dir) of the Compute Sanitizer API."""
    candidates: list[Path] = []
    explicit = env.get("TRACERACE_SANITIZER_DIR")
    if explicit:
        candidates.append(Path(explicit))
    else:
        candidates += [root / "compute-sanitizer", root / "extras" / "compute-sanitizer"]
        spec = importlib.util.find_spec("nvidia")
        for base in (spec.submodule_search_locations or []) if spec else []:
            candidates += sorted(Path(base).glob("cu*"), reverse=True)
    for d in candidates:
        lib = next(
            (p for p in (d, d / "lib", d / "lib64") if (p / "libsanitizer-public.so").is_file()),
            None,
        )
        if (d / "include" / "sanitizer.h").is_file() and lib is not None:
            return str(d / "include"), str(lib)
    where = explicit or f"{root}/compute-sanitizer or the {SANITIZER_WHEEL} wheel"
    raise missing(
        f"the Compute Sanitizer API (sanitizer.h, libsanitizer-public.so) was not found in {where}",
        f"install it with the CUDA toolkit or pip install {SANITIZER_WHEEL}",
    )


def tool_library(kit: Toolkit) -> ToolLibrary:
    """The tool for this toolkit, built into the cache on first use."""
    digest = hashlib.sha256()
    for source in (HOST_SOURCE, PATCH_SOURCE, HEADER):
        digest.update(source.read_bytes())
    for path in (kit.nvcc, os.path.join(kit.sanitizer_lib, "libsanitizer-public.so")):
        digest.update(stamp(path).encode())
    digest.update(" ".join(CXXFLAGS).encode())
    key = digest.hexdigest()[:16]
    library = cache_dir() / f"cuda-tool-{key}.so"
    patches = cache_dir() / f"cuda-patches-{key}.fatbin"
    if not patches.is_file():
        _build(patch_command(kit), patches, "the device patches")
    if not library.is_file():
        _build(host_command(kit), library, "the tool library")
    return ToolLibrary(str(library), str(patches))


def patch_command(kit: Toolkit) -> list[str]:
    """``nvcc`` command for the patches; :data:`..build.OUT` stands for the output."""
    archs = known_archs(kit.nvcc)
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    gencode.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
    return [
        kit.nvcc,
        "--fatbin",
        "--compile-as-tools-patch",
        "-I",
        kit.sanitizer_include,
        "-I",
        str(TOOL_DIR),
        *gencode,
        "-o",
        OUT,
        "-c",
        str(PATCH_SOURCE),
    ]


def host_command(kit: Toolkit) -> list[str]:
    """The C++ compiler's command for the tool library."""
    compiler = find_compiler()
    if compiler is None:
        raise missing(
            "no C++ compiler found to build the CUDA tool library", f"install {COMPILER_PACKAGE}"
        )
    return [
        compiler,
        *CXXFLAGS,
        "-I",
        kit.cuda_include,
        "-I",
        kit.sanitizer_include,
        "-I",
        str(TOOL_DIR),
        str(HOST_SOURCE),
        "-o",
        OUT,
        "-L",
        kit.sanitizer_lib,
        "-lsanitizer-public",
        f"-Wl,-rpath,{kit.sanitizer_lib}",
    ]


def known_archs(nvcc: str) -> list[int]:
    """The :data:`PATCH_ARCHS` this ``nvcc`` can compile for."""
    done = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True)
    listed = {int(m) for m in re.findall(r"sm_(\d+)\b", done.stdout)}
    archs = [a for a in PATCH_ARCHS if a in listed]
    if not archs:
        raise missing(
            f"{nvcc} compiles for none of sm_{', sm_'.join(map(str, PATCH_ARCHS))}",
            "install a CUDA toolkit of version 12 or newer",
        )
    return archs


def _build(command: list[str], path: Path, what: str) -> None:
    """Run ``command`` into ``path`` (a failed build leaves nothing)."""
    build(
        command,
        path,
        lambda tail: missing(
            f"building {what} failed ({os.path.basename(command[0])}: {tail})",
            "check the CUDA toolkit and the Compute Sanitizer API",
        ),
    )


CUDA_SUCCESS = 0


def check_gpu(library: str = "libcuda.so.1") -> None:
    """Refuse, before running anything, on a machine without an NVIDIA driver or GPU."""
    try:
        cuda = ctypes.CDLL(library)
    except OSError:
        raise TraceError(
            f"no NVIDIA GPU driver on this machine ({library} cannot be "
            "loaded): the cuda backend records on a GPU",
            path="cuda backend",
            rule="no-gpu",
        ) from None
    result = cuda.cuInit(0)
    count = ctypes.c_int(0)
    if result == CUDA_SUCCESS:
        result = cuda.cuDeviceGetCount(ctypes.byref(count))
    if result != CUDA_SUCCESS or count.value == 0:
        raise TraceError(
            f"the NVIDIA driver finds no usable GPU (cuInit: error {result}): "
            "the cuda backend records on a GPU",
            path="cuda backend",
            rule="no-gpu",
        )
