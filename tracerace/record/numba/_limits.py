"""What the numba recorder cannot follow, and how it says so.

A recording must never present as complete what it did not see. When kernel
code does something the recorder cannot turn into trace rows (a function
of ``cuda`` neither the simulator nor the recorder has, an array reached by a path the recorder does
not wrap, a NumPy call that reads or writes a whole array behind its back) or
when the simulated threads stop making progress, the recorder raises
:class:`Unrecordable`; the launch is then incomplete, no trace is written and
``tracerace record`` exits 2 with the message.
"""

from __future__ import annotations


class Unrecordable(Exception):
    """Kernel code did something the recording cannot show; the message says what and where."""


def missing_feature(name: str, where: str | None, owner: str = "cuda") -> Unrecordable:
    """The error for ``cuda.NAME`` (or ``cuda.cg.NAME``), which the simulator lacks."""
    at = f" at {where}" if where else ""
    return Unrecordable(
        f"numba-cuda's CUDA simulator has no {owner}.{name} (used{at}); "
        f"the recorder cannot run this kernel"
    )
