"""Scenarios: traces of the five incidents tracerace exists for.

Each incident is a module (its docstring retells the incident and says what
the trace holds) with a generator::

    generate(target, *, fixed=False, scale=1, seed=0) -> int   # rows written

``target`` is a path (the file is written and closed) or an open
:class:`~tracerace.trace.writer.TraceWriter` holding no events yet (pick the format
and compression there: uncompressed, 10^8 events take about 7 GB).
``fixed=False`` records the buggy schedule, ``fixed=True`` the fixed program
under the same load. ``scale=1`` gives a trace of a thousand to twelve
thousand events, small enough for the reference checker; events grow linearly
with ``scale`` (:meth:`Scenario.scale_for` picks the scale for a size),
generated with vectorised NumPy in chunks, in bounded memory. ``seed``
picks the details of the schedule (which core is late, the permutation, ...).

:data:`SCENARIOS` maps each name to a :class:`Scenario` that also says which
hazard kinds the buggy trace must report (the fixed one reports nothing).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import TraceError
from ..trace.outfile import destination, refuse_non_trace
from . import (
    incident1_flag_alias,
    incident2_ring_slot,
    incident3_cp_async,
    incident4_alias_permute,
    incident5_multicast_uninit,
)


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    expected_kinds: frozenset[str]
    """Hazard kinds the buggy trace reports (as errors); the fixed trace reports none."""
    generate: Callable[..., int]
    """``generate(target, *, fixed=False, scale=1, seed=0) -> rows written``."""
    pending_kinds: frozenset[str] = frozenset()
    """Kinds the buggy trace should also report once the checkers detect them."""
    expected_sites: tuple[tuple[str, str | None, str], ...] = ()
    """(kind, earlier site, later site) of groups the buggy trace must show
    (earlier site None: a single-access hazard such as ``uninit_read``)."""
    events_per_scale: int = 0
    """Events of the buggy trace at ``scale=1``; about proportional above."""

    def scale_for(self, events: int) -> int:
        """The scale whose trace has about ``events`` events (at least 1)."""
        return max(1, round(events / self.events_per_scale))

    def write(
        self,
        path: str | os.PathLike | None = None,
        *,
        fixed: bool = False,
        scale: int = 1,
        seed: int = 0,
    ) -> str:
        """Write the trace to ``path`` (default :meth:`default_path`); returns the path.
        An existing file there that is not a trace is a ``usage`` error."""
        if not isinstance(scale, int) or scale < 1:
            raise TraceError(
                f"scale must be a positive integer, not {scale!r}", path="options", rule="usage"
            )
        path = os.fspath(path) if path is not None else self.default_path(fixed)
        refuse_non_trace(destination(path))
        try:
            self.generate(path, fixed=fixed, scale=scale, seed=seed)
        except OSError as err:
            raise TraceError(err.strerror or str(err), path=path, rule="io") from None
        return path

    def default_path(self, fixed: bool = False) -> str:
        """``NAME.arrow``, or ``NAME-fixed.arrow`` for the fixed program."""
        return f"{self.name}{'-fixed' if fixed else ''}.arrow"


def _scenario(module) -> Scenario:
    return Scenario(
        module.NAME,
        module.TITLE,
        module.EXPECTED_KINDS,
        module.generate,
        getattr(module, "PENDING_KINDS", frozenset()),
        module.EXPECTED_SITES,
        module.EVENTS_PER_SCALE,
    )


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in map(
        _scenario,
        (
            incident1_flag_alias,
            incident2_ring_slot,
            incident3_cp_async,
            incident4_alias_permute,
            incident5_multicast_uninit,
        ),
    )
}


def get(name: str) -> Scenario:
    """The scenario called ``name``; an unknown name is a usage error."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise TraceError(
            f"unknown scenario {name!r} (known: {', '.join(SCENARIOS)})",
            path="options",
            rule="usage",
        ) from None
