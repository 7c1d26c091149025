"""The report: its model, hazards, explanations, hints, and formats/ (every layout).

:class:`Report` is what a check gives (:func:`tracerace.check`): the model
(:class:`~tracerace.report.model.ReportModel`) with a call to the text, JSON
and Arrow layouts, which the formats own. Where a report is written (files,
streams, colour on a terminal) is :mod:`tracerace.report.output`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .formats import arrowfmt, jsonfmt, text
from .model import ReportModel

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Report"]


class Report(ReportModel):
    """The outcome of one check (:class:`~tracerace.report.model.ReportModel`),
    and its layouts: ``print(report)`` prints the text report."""

    def to_text(self) -> str:
        """The text report, as ``tracerace check`` writes it to a file
        (:mod:`~tracerace.report.formats.text`)."""
        return text.to_text(self)

    def __str__(self) -> str:
        return self.to_text()

    def to_json(self) -> dict[str, Any]:
        """The JSON report as a dict (:mod:`~tracerace.report.formats.jsonfmt`)."""
        return jsonfmt.to_json(self)

    def to_arrow(self) -> pa.Table:
        """One row per finding of :attr:`findings` (not grouped), flat columns
        (:mod:`~tracerace.report.formats.arrowfmt`)."""
        return arrowfmt.to_arrow(self)
