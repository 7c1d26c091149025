"""Example traces: ``python -m tracerace.examples DIR``.

Writes, for each incident scenario (:mod:`tracerace.scenarios`), the trace of
the buggy schedule (``NAME.arrow``, racy) and of the fixed program
(``NAME-fixed.arrow``, clean) into ``DIR``, and says what a check of each
reports. Needs nothing but the installed package.
"""

from __future__ import annotations

import argparse
import os
import sys

from .errors import TraceError
from .scenarios import SCENARIOS


def write_examples(directory: str | os.PathLike, *, scale: int = 1) -> list[tuple[str, str]]:
    """Write the example traces; returns (path, what a check reports) for each."""
    os.makedirs(directory, exist_ok=True)
    written = []
    for scenario in SCENARIOS.values():
        for fixed in (False, True):
            path = os.path.join(os.fspath(directory), scenario.default_path(fixed))
            scenario.write(path, fixed=fixed, scale=scale)
            outcome = "clean" if fixed else "racy: " + ", ".join(sorted(scenario.expected_kinds))
            written.append((path, outcome))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tracerace.examples",
        description="Write example traces (a racy and a clean one per incident) into DIR.",
    )
    parser.add_argument("directory", metavar="DIR")
    parser.add_argument(
        "--scale",
        type=int,
        default=1,
        help="trace size: a few thousand events at 1 (default), linear",
    )
    args = parser.parse_args(argv)
    try:
        written = write_examples(args.directory, scale=args.scale)
    except (TraceError, OSError) as err:
        print(f"tracerace: error: {err}", file=sys.stderr)
        return 2
    width = max(len(path) for path, _ in written)
    for path, outcome in written:
        print(f"{path:<{width}}  {outcome}")
    racy = next(path for path, outcome in written if outcome != "clean")
    print(f"\nthen: tracerace check {racy}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
