"""JSON: the pinned report shape (:meth:`tracerace.report.Report.to_json`)."""

from __future__ import annotations

import json
from typing import IO

from ..report import Report

NAME = "json"
BINARY = False


def write(report: Report, stream: IO[str]) -> None:
    json.dump(report.to_json(), stream, indent=2)
    stream.write("\n")
