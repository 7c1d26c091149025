"""CUDA coordinates of agents: ``block (1,0,0) thread (33,0,0)`` instead of ``(1,33)``.

The trace format numbers agents by a flattened block and a flattened thread.
When a trace says the grid and block dimensions of a launch (the optional
``tracerace.launches`` metadata, or the ``tracerace.kernels`` entries of a
trace imported from a GPU tracer), a report names agents by their CUDA
coordinates, as a kernel engineer reads ``blockIdx`` and ``threadIdx``:

* block ``b`` of a grid ``(gx, gy, gz)`` is ``(b % gx, b // gx % gy, b // (gx * gy))``
  (``b = x + gx * (y + gy * z)``), thread ``t`` of a block ``(bx, by, bz)`` the
  same way (x fastest, CUDA's linear thread id);
* warp ``t // 32`` and lane ``t % 32`` when the block has more than one warp;
* a launch of one-thread blocks (Triton's programs) names the block only.

Without dimensions agents stay ``(block,thread)``, and the report says so once
(:data:`FLAT_LEGEND`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..shown import surrogate_at, surrogate_message
from .limits import JSONLimitError, load_json

META_LAUNCHES = "tracerace.launches"
"""Schema metadata key: JSON list of ``{"launch", "grid", "block"[, "kernel"]}``."""

META_KERNELS = "tracerace.kernels"
"""The GPU import's per-launch entries (:mod:`tracerace.convert.gpu`), which carry the same dims."""

WARP_SIZE = 32

FLAT_LEGEND = (
    "agents are (block,thread): the flattened block and thread numbers of the "
    "trace (it gives no grid/block dimensions; see tracerace.launches in "
    "schemas/metadata.json)"
)


@dataclass(frozen=True)
class LaunchDims:
    """The grid and block dimensions of one launch, x first."""

    launch: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    kernel: str | None = None

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def to_json(self) -> dict:
        out: dict = {"launch": self.launch, "grid": list(self.grid), "block": list(self.block)}
        if self.kernel is not None:
            out["kernel"] = self.kernel
        return out


def unflatten(index: int, dims: tuple[int, int, int]) -> tuple[int, int, int]:
    """``(x, y, z)`` of a linear index, x fastest."""
    return index % dims[0], index // dims[0] % dims[1], index // (dims[0] * dims[1])


def _dims(value: object) -> tuple[int, int, int] | None:
    """A ``[x, y, z]`` (or shorter: missing dims are 1) of positive ints, or None."""
    if not isinstance(value, list) or not 1 <= len(value) <= 3:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
        return None
    return tuple(value + [1] * (3 - len(value)))  # type: ignore[return-value]


def parse_launches(
    meta: Mapping[str, str], fail: Callable[..., Exception]
) -> tuple[LaunchDims, ...]:
    """The launch dimensions of a trace's schema metadata (decoded keys and values).

    ``tracerace.launches`` is checked (a malformed one raises ``fail(message)``,
    one past a limit of :func:`tracerace.trace.limits.load_json` ``fail(message, rule)``);
    without it, the grid and block of well-formed ``tracerace.kernels``
    entries are used (that key belongs to the GPU import, which checks it).
    """
    text = meta.get(META_LAUNCHES)
    if text is None:
        return _from_kernels(meta.get(META_KERNELS))
    try:
        entries = load_json(text)
    except JSONLimitError as err:
        raise fail(f"{META_LAUNCHES}: {err}", err.rule) from None
    except ValueError as err:
        raise fail(f"{META_LAUNCHES} is not valid JSON: {err}") from None
    where = surrogate_at(text, entries)
    if where is not None:
        raise fail(surrogate_message(META_LAUNCHES, where))
    if not isinstance(entries, list):
        raise fail(f"{META_LAUNCHES} must be a JSON list of objects")
    out: dict[int, LaunchDims] = {}
    for i, entry in enumerate(entries):
        where = f"{META_LAUNCHES}[{i}]"
        if not isinstance(entry, dict):
            raise fail(f"{where} must be an object")
        launch = entry.get("launch")
        if not isinstance(launch, int) or isinstance(launch, bool) or launch < 0:
            raise fail(f"{where}.launch must be a non-negative integer")
        grid, block = _dims(entry.get("grid")), _dims(entry.get("block"))
        if grid is None or block is None:
            bad = "grid" if grid is None else "block"
            raise fail(f"{where}.{bad} must be a list of 1 to 3 positive integers")
        kernel = entry.get("kernel")
        if kernel is not None and not isinstance(kernel, str):
            raise fail(f"{where}.kernel must be a string")
        if launch in out:
            raise fail(f"{where}: launch {launch} is described twice")
        out[launch] = LaunchDims(launch, grid, block, kernel)
    return tuple(sorted(out.values(), key=lambda d: d.launch))


def _from_kernels(text: str | None) -> tuple[LaunchDims, ...]:
    if text is None:
        return ()
    try:
        entries = load_json(text)
    except ValueError:  # the GPU import's key, which it checks: a damaged one names nothing
        return ()
    out: dict[int, LaunchDims] = {}
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            continue
        launch = entry.get("launch")
        grid, block = _dims(entry.get("grid")), _dims(entry.get("block"))
        if isinstance(launch, int) and launch >= 0 and grid and block:
            name = entry.get("name")
            named = isinstance(name, str) and surrogate_at(text, name) is None
            out.setdefault(launch, LaunchDims(launch, grid, block, name if named else None))
    return tuple(sorted(out.values(), key=lambda d: d.launch))


def launches_json(dims: list[LaunchDims] | tuple[LaunchDims, ...]) -> str:
    """The ``tracerace.launches`` value for these launches."""
    return json.dumps([d.to_json() for d in dims])


class Coords:
    """Names agents of a trace by their coordinates (``agent``), or flat numbers."""

    def __init__(self, launches: tuple[LaunchDims, ...] = ()) -> None:
        self._dims = {d.launch: d for d in launches}

    @property
    def known(self) -> bool:
        """Whether any launch has dimensions."""
        return bool(self._dims)

    def dims(self, launch: int) -> LaunchDims | None:
        return self._dims.get(launch)

    def coords(self, launch: int, block: int, thread: int) -> dict | None:
        """``{"block": [x, y, z], "thread": [x, y, z], "warp", "lane"}`` (JSON), or
        None when the launch has no dimensions or the agent lies outside them."""
        d = self._dims.get(launch)
        if d is None:
            return None
        gx, gy, gz = d.grid
        if block >= gx * gy * gz or thread >= d.threads_per_block:
            return None
        return {
            "block": list(unflatten(block, d.grid)),
            "thread": list(unflatten(thread, d.block)),
            "warp": thread // WARP_SIZE,
            "lane": thread % WARP_SIZE,
        }

    def agent(self, launch: int, block: int, thread: int, warp: bool = True) -> str:
        """``block (1,0,0) thread (33,0,0) (warp 1, lane 1)``; ``block (5,0,0)`` for
        one-thread blocks; ``(1,33)`` without dimensions."""
        c = self.coords(launch, block, thread)
        if c is None:
            return f"({block},{thread})"
        d = self._dims[launch]
        text = f"block ({','.join(map(str, c['block']))})"
        if d.threads_per_block == 1:
            return text
        text += f" thread ({','.join(map(str, c['thread']))})"
        if warp and d.threads_per_block > WARP_SIZE:
            text += f" (warp {c['warp']}, lane {c['lane']})"
        return text
