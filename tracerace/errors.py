"""Errors a user can cause. The CLI prints ``str(err)`` on one line and exits 2."""

from __future__ import annotations

from .shown import shown


class TraceError(Exception):
    """A trace (or an option) that tracerace cannot accept.

    The message names the file, the 0-based row where one applies, and the
    rule that was broken, e.g.
    ``trace.arrow: row 17: unknown-op: op code 99 is not in trace format v1``.
    ``str(err)`` shows control characters as escapes (:func:`~tracerace.shown.shown`),
    so the line stays one line whatever the trace holds.
    """

    def __init__(
        self, message: str, *, path: str | None = None, row: int | None = None, rule: str = "format"
    ) -> None:
        self.message = message
        self.path = path
        self.row = row
        self.rule = rule
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.path or "<trace>"]
        if self.row is not None:
            parts.append(f"row {self.row}")
        parts.append(self.rule)
        parts.append(self.message)
        # Messages quote trace values: what a terminal would obey is shown escaped.
        return shown(": ".join(parts))

    def with_path(self, path: str | None) -> TraceError:
        """The same error, naming ``path`` when it named none."""
        if self.path is None and path is not None:
            return TraceError(self.message, path=path, row=self.row, rule=self.rule)
        return self
