"""What a check is asked for: :class:`CheckOptions`, validated by :func:`make_options`.

Options are validated before any trace is read; a bad one raises
:class:`~tracerace.errors.TraceError` with rule ``usage``. The options are
kept on the :class:`~tracerace.report.model.ReportModel` (the formats read
``max_reports`` and the kinds it kept).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import TraceError
from ..trace.ops import HazardKind
from ..trace.reader import DEFAULT_BATCH_SIZE

ENGINES = ("numba", "reference")
"""The checkers a check can replay a trace through: the Numba engine (fast) and the
plain-Python reference checker (the definition)."""

DEFAULT_MAX_REPORTS = 100
"""Groups the formats show unless ``max_reports`` says otherwise (counts stay whole)."""

ALL_KINDS = frozenset(int(k) for k in HazardKind)


@dataclass(frozen=True)
class CheckOptions:
    """What :func:`tracerace.api.check` was asked for; kept on the report."""

    engine: str = "numba"
    max_reports: int | None = DEFAULT_MAX_REPORTS
    """Groups the formats show; None (asked for as 0 or ``"all"``): every group."""
    kinds: frozenset[int] = ALL_KINDS
    """The hazard kinds reported: ``select`` (default: all) minus ``ignore``."""
    batch_size: int = DEFAULT_BATCH_SIZE


def usage(message: str) -> TraceError:
    """A bad option: rule ``usage``, reported against ``options``."""
    return TraceError(message, path="options", rule="usage")


def parse_kinds(values: str | Iterable[str] | None) -> frozenset[int]:
    """Hazard kinds from names; an item may hold several, comma-separated (``"raw,waw"``)."""
    if values is None:
        return frozenset()
    if isinstance(values, str):
        values = [values]
    kinds = set()
    for value in values:
        for name in str(value).split(","):
            name = name.strip().lower()
            if not name:
                continue
            try:
                kinds.add(int(HazardKind[name.upper()]))
            except KeyError:
                known = ", ".join(k.label for k in HazardKind)
                raise usage(f"unknown hazard kind {name!r} (known: {known})") from None
    return frozenset(kinds)


def parse_max_reports(value: int | str | None) -> int | None:
    """``max_reports`` from a number, a string of digits, or ``"all"`` / 0 / None
    (every group)."""
    if value is None or value == "all":
        return None
    number = value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise usage(f"max_reports must be a non-negative integer or 'all', not {value!r}")
    return number or None  # 0: no cap


def make_options(
    *,
    engine: str = "numba",
    max_reports: int | str | None = DEFAULT_MAX_REPORTS,
    select: str | Iterable[str] | None = None,
    ignore: str | Iterable[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> CheckOptions:
    """Validated :class:`CheckOptions`; raises ``TraceError`` (rule ``usage``)."""
    if engine not in ENGINES:
        raise usage(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    max_reports = parse_max_reports(max_reports)
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise usage(f"batch_size must be a positive integer, not {batch_size!r}")
    selected = parse_kinds(select) if select is not None else ALL_KINDS
    return CheckOptions(
        engine=engine,
        max_reports=max_reports,
        kinds=selected - parse_kinds(ignore),
        batch_size=batch_size,
    )
