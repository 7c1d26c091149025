"""tracerace: race detection on recorded GPU and accelerator kernel traces.

``tracerace.check(path) -> Report`` and ``tracerace.validate(path)`` are the
API. ``import tracerace`` stays cheap: the API (NumPy, Numba, the checkers: about 0.3 s) loads on first use of
one of its names, which matters to every pytest run where the tracerace plugin
is installed. Nothing inside the package imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .api import check, validate
    from .report.model import Hazard, HazardGroup, Report

__all__ = ["__version__", "check", "validate", "Report", "HazardGroup", "Hazard"]


def __getattr__(name: str) -> Any:
    if name in ("check", "validate"):
        from . import api

        value = getattr(api, name)
    elif name in ("Report", "HazardGroup", "Hazard"):
        from .report import model as report

        value = getattr(report, name)
    else:
        raise AttributeError(f"module 'tracerace' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
