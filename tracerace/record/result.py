"""What a recording wrote: :class:`RecordResult`, returned by every backend."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RecordResult:
    """What a recording wrote."""

    out: str
    events: int
    launches: int
    seconds: float
    exit_code: int  # the recorded program's own exit status
    warnings: tuple[str, ...] = ()
    """What the recorder had to decide or could not see in a launch (also the
    trace's ``tracerace.warnings``)."""

    def summary_line(self) -> str:
        rate = self.events / self.seconds if self.seconds > 0 else 0.0
        return (
            f"wrote {self.out}: {self.events:,} events, {self.launches} launch"
            f"{'es' if self.launches != 1 else ''} in {self.seconds:.1f} s "
            f"({rate:,.0f} events/s)"
        )
