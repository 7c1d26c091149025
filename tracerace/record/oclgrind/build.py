"""Finding Oclgrind and building tracerace's Oclgrind plugin on this machine.

The plugin (``oclgrind_plugin/tracerace_plugin.cpp``, shipped with the package)
is C++ against Oclgrind's plugin API, whose headers expose LLVM types. Building
it needs Oclgrind's headers and library (Debian/Ubuntu: ``liboclgrind-dev``),
the OpenCL headers (``opencl-headers``), the headers of the LLVM that Oclgrind
was built with (``llvm-N-dev``) and a C++ compiler. It is compiled once into
the user's cache, under a name keyed by a hash of the source, the flags and
the Oclgrind library it links (see :mod:`..build`), so an edited source or an
upgraded Oclgrind gives a new library, never a stale one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from glob import glob
from pathlib import Path

from ...errors import TraceError
from ..build import COMPILER_PACKAGE, OUT, cache_dir, first, stamp
from ..build import build as build_into
from ..build import find_compiler as any_compiler

PLUGIN_SOURCE = Path(__file__).with_name("plugin") / "tracerace_plugin.cpp"

CXXFLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-fno-rtti")
"""``-fno-rtti``: Oclgrind and LLVM are built without RTTI, so a plugin class
with RTTI would need ``typeinfo`` for ``oclgrind::Plugin``, which does not exist."""

PACKAGES = "oclgrind liboclgrind-dev opencl-headers"
"""What to install on Debian/Ubuntu (named in the errors)."""

_LLVM_NEEDED = re.compile(rb"libLLVM(?:-|\.so\.)(\d+)")
"""The LLVM major version in liboclgrind's DT_NEEDED entry (libLLVM-14.so.1, libLLVM.so.17)."""


@dataclass(frozen=True)
class Oclgrind:
    """Where this machine's Oclgrind lives."""

    oclgrind: str  # the `oclgrind` launcher (runs host programs)
    kernel_runner: str  # `oclgrind-kernel` (runs .sim files)
    include_dir: str  # holds oclgrind/Plugin.h
    library: str  # liboclgrind.so, the development link


def missing(what: str, install: str) -> TraceError:
    """The error for a missing tool, naming what to install."""
    return TraceError(f"{what}; install {install}", path="oclgrind backend", rule="missing-tool")


def find_oclgrind() -> Oclgrind:
    """This machine's Oclgrind, or a TraceError naming the packages to install."""
    launcher = shutil.which("oclgrind")
    runner = shutil.which("oclgrind-kernel")
    if launcher is None or runner is None:
        raise missing(
            "Oclgrind is not installed (no `oclgrind` command)",
            f"Oclgrind (Debian/Ubuntu: apt-get install {PACKAGES})",
        )
    prefix = Path(os.path.realpath(launcher)).parent.parent
    include = first(
        str(d)
        for d in (prefix / "include", Path("/usr/local/include"), Path("/usr/include"))
        if (d / "oclgrind" / "Plugin.h").is_file()
    )
    library = first(
        glob(str(prefix / "lib*" / "liboclgrind.so"))
        + glob(str(prefix / "lib*" / "*" / "liboclgrind.so"))
    )
    if include is None or library is None:
        raise missing(
            "Oclgrind's plugin headers or library are missing",
            "liboclgrind-dev (Debian/Ubuntu: apt-get install liboclgrind-dev)",
        )
    return Oclgrind(launcher, runner, include, library)


def plugin_path(ocl: Oclgrind) -> Path:
    """Where the plugin built from this source for this Oclgrind is cached."""
    digest = hashlib.sha256()
    digest.update(PLUGIN_SOURCE.read_bytes())
    digest.update(" ".join(CXXFLAGS).encode())
    digest.update(stamp(ocl.library).encode())
    return cache_dir() / f"oclgrind-plugin-{digest.hexdigest()[:16]}.so"


def plugin_library(ocl: Oclgrind) -> str:
    """The plugin for this Oclgrind, built into the cache on first use."""
    path = plugin_path(ocl)
    if not path.is_file():
        build(ocl, path)
    return str(path)


def build(ocl: Oclgrind, path: Path) -> None:
    """Compile the plugin to ``path`` (atomically: a failed build leaves nothing)."""
    compiler = find_compiler()
    llvm_include = find_llvm_include(ocl.library)
    command = [
        compiler,
        *CXXFLAGS,
        "-I",
        ocl.include_dir,
        "-I",
        llvm_include,
        str(PLUGIN_SOURCE),
        "-o",
        OUT,
        "-L",
        str(Path(ocl.library).parent),
        "-loclgrind",
    ]
    build_into(
        command,
        path,
        lambda tail: missing(
            f"building the plugin failed ({compiler}: {tail})",
            f"the OpenCL headers and LLVM headers (Debian/Ubuntu: apt-get install {PACKAGES} "
            f"llvm-dev)",
        ),
    )


def find_compiler() -> str:
    """``$CXX``, else the first of c++, g++, clang++ on PATH."""
    found = any_compiler()
    if found is None:
        raise missing("no C++ compiler found to build the Oclgrind plugin", COMPILER_PACKAGE)
    return found


def find_llvm_include(library: str) -> str:
    """The include folder of the LLVM that ``library`` (liboclgrind) links."""
    major = llvm_major(library)
    candidates = []
    for tool in (f"llvm-config-{major}" if major else None, "llvm-config"):
        version = _llvm_config(tool, "--version")
        if version and (major is None or version.split(".")[0] == major):
            candidates.append(_llvm_config(tool, "--includedir"))
    if major:
        candidates += [f"/usr/lib/llvm-{major}/include", f"/usr/lib/llvm/{major}/include"]
    found = first(
        d
        for d in candidates
        if d and os.path.isfile(os.path.join(d, "llvm", "IR", "Instructions.h"))
    )
    if found is None:
        name = f"llvm-{major}-dev" if major else "llvm-dev"
        raise missing(
            f"the headers of LLVM {major or ''}, which Oclgrind uses, are missing",
            f"{name} (Debian/Ubuntu: apt-get install {name})",
        )
    return found


def _llvm_config(tool: str | None, flag: str) -> str | None:
    """One answer of ``llvm-config``, or None when the tool is absent."""
    if tool is None or shutil.which(tool) is None:
        return None
    done = subprocess.run([tool, flag], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def llvm_major(library: str) -> str | None:
    """LLVM's major version from liboclgrind's dynamic dependencies; None if linked statically."""
    with open(os.path.realpath(library), "rb") as f:
        match = _LLVM_NEEDED.search(f.read())
    return match.group(1).decode() if match else None
