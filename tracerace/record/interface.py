"""What a recorder backend provides, and the helpers backends share to provide it.

A backend is a subpackage of :mod:`tracerace.record` whose ``BACKEND`` is a
:class:`Backend`: its name, the schedules it can record and its default one,
a check that what it needs is installed, and :meth:`Backend.record`, which
runs a program and writes its trace. What the
backends share lives beside this module: :mod:`.program` (a Python program
in a child interpreter), :mod:`.tool` (a native program under a tool
library), :mod:`.events` (event words and added rows), :mod:`.sites` (site
texts) and :mod:`.build` (a native part built into the cache).

:func:`tracerace.record.load_backend` imports a backend's package on use: the
recorded program's own process imports this package and must not load the
other backends' simulators.
"""

from __future__ import annotations

import importlib.util
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping

from ..errors import TraceError
from .result import RecordResult


class Backend(ABC):
    """One way to run a program and record it."""

    name: str
    """``--backend``'s value, and the subpackage's name."""
    schedules: tuple[str, ...]
    """The schedules it records."""
    default_schedule: str
    own_schedule: str = ""
    """For a backend of one schedule, what that schedule is (``runs Oclgrind's
    own schedule``), said when another is asked for."""

    def check_schedule(self, schedule: str) -> None:
        """A ``usage`` error when this backend cannot record ``schedule``."""
        if schedule in self.schedules:
            return
        if len(self.schedules) == 1:
            message = (
                f"the {self.name} backend {self.own_schedule}; --schedule {schedule} "
                f"is not available (use {self.schedules[0]})"
            )
        else:
            message = (
                f"the {self.name} backend has the schedules "
                f"{' and '.join(self.schedules)}; --schedule {schedule} is not one "
                f"of them"
            )
        raise TraceError(message, path="options", rule="usage")

    @abstractmethod
    def check_installed(self) -> None:
        """Raise a :class:`TraceError` naming what to install when this machine
        lacks what the backend needs."""

    @abstractmethod
    def record(self, command: list[str], out: str, *, schedule: str, seed: int = 0) -> RecordResult:
        """Run ``command`` under this backend and write its trace to ``out``."""


def require_modules(name: str, needs: Mapping[str, str], hint: str) -> None:
    """A ``setup`` error for backend ``name`` when a module of ``needs``
    (module -> the package that provides it) does not import; ``hint`` says
    how to install them."""
    missing = [
        package for module, package in needs.items() if importlib.util.find_spec(module) is None
    ]
    if missing:
        raise TraceError(
            f"the {name} backend needs {' and '.join(missing)}: {hint}",
            path="options",
            rule="setup",
        )


def output_path(out: str) -> str:
    """``out``, absolute; an ``io`` error when its folder does not exist."""
    out = os.path.abspath(out)
    if not os.path.isdir(os.path.dirname(out)):
        raise TraceError(f"the folder of {out} does not exist", path=out, rule="io")
    return out
