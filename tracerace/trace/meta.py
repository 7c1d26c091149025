"""Trace-level metadata: version, sites, buffers, producer, warnings."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .coords import Coords, LaunchDims


@dataclass(frozen=True)
class Buffer:
    """A named tensor in memory, so reports can say ``out[0, 3, 17]``.

    ``strides`` are in elements (row-major when absent). ``launch`` limits the
    declaration to one launch (None: every launch). For shared memory ``base``
    is an offset into a block's shared memory.
    """

    name: str
    space: int
    base: int
    shape: tuple[int, ...]
    itemsize: int
    strides: tuple[int, ...] | None = None
    launch: int | None = None

    @cached_property
    def element_strides(self) -> tuple[int, ...]:
        if self.strides is not None:
            return self.strides
        out, acc = [], 1
        for dim in reversed(self.shape):
            out.append(acc)
            acc *= dim
        return tuple(reversed(out))

    @cached_property
    def nbytes_span(self) -> int:
        """Bytes from ``base`` to the end of the last element."""
        if not self.shape or any(d == 0 for d in self.shape):
            return 0
        last = sum((d - 1) * s for d, s in zip(self.shape, self.element_strides))
        return (last + 1) * self.itemsize

    def contains(self, space: int, addr: int, launch: int | None = None) -> bool:
        if space != self.space:
            return False
        if self.launch is not None and launch is not None and launch != self.launch:
            return False
        return self.base <= addr < self.base + self.nbytes_span

    @cached_property
    def _walk_order(self) -> tuple[int, ...]:
        """Dimensions from the largest stride down (handles transposed views)."""
        strides = self.element_strides
        return tuple(sorted(range(len(self.shape)), key=lambda i: -strides[i]))

    def element_index(self, addr: int) -> tuple[int, ...] | None:
        """The index of the element holding byte ``addr``, or None."""
        off = addr - self.base
        if off < 0:
            return None
        elem, _ = divmod(off, self.itemsize)
        strides = self.element_strides
        order = self._walk_order
        index = [0] * len(self.shape)
        rest = elem
        for i in order:
            if strides[i] == 0:
                continue
            q, rest = divmod(rest, strides[i])
            if q >= self.shape[i]:
                return None
            index[i] = q
        if rest != 0:
            return None
        return tuple(index)

    def describe(self, addr: int) -> str | None:
        index = self.element_index(addr)
        if index is None:
            return None
        return f"{self.name}[{', '.join(str(i) for i in index)}]"

    def to_json(self) -> dict:
        out: dict = {
            "name": self.name,
            "space": self.space,
            "base": self.base,
            "shape": list(self.shape),
            "itemsize": self.itemsize,
        }
        if self.strides is not None:
            out["strides"] = list(self.strides)
        if self.launch is not None:
            out["launch"] = self.launch
        return out


@dataclass(frozen=True)
class TraceMeta:
    path: str | None = None
    version: int = 1
    sites: tuple[str, ...] = ()
    buffers: tuple[Buffer, ...] = ()
    producer: str | None = None
    warnings: tuple[str, ...] = ()
    """What the producer could not record or had to decide (``tracerace.warnings``),
    one sentence each; a report shows them beside its findings."""
    num_rows: int | None = None
    extra: dict = field(default_factory=dict)
    launches: tuple[LaunchDims, ...] = ()
    """Grid and block dimensions per launch (``tracerace.launches``, or the GPU
    import's ``tracerace.kernels``), for CUDA coordinates in reports."""

    @cached_property
    def coords(self) -> Coords:
        """Names agents by CUDA coordinates where :attr:`launches` gives dimensions."""
        return Coords(self.launches)

    def site_text(self, site: int) -> str | None:
        if 0 <= site < len(self.sites):
            return self.sites[site]
        return None

    def describe_bytes(self, space: int, addr: int, launch: int | None = None) -> str | None:
        """``buf[i, j]`` for the element holding ``addr``, when a buffer declares it."""
        for buf in self.buffers:
            if buf.contains(space, addr, launch):
                text = buf.describe(addr)
                if text is not None:
                    return text
        return None
