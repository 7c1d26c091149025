"""tracerace: race detection on recorded GPU and accelerator kernel traces.

``tracerace.check(path) -> Report`` is the API; heavy modules (numba, pyarrow,
rich) load on first use, so ``import tracerace`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .api import check
    from .report import Hazard, HazardGroup, Report

_LAZY = {
    "check": "tracerace.api",
    "Report": "tracerace.report",
    "HazardGroup": "tracerace.report",
    "Hazard": "tracerace.report",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracerace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
