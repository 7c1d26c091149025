"""Items: one event for a set of lanes of one warp, kept compact until the end.

:class:`~tracerace.convert.gpu.kernel.Launch` adds items to an :class:`ItemBuffer`
(plain lists); :meth:`ItemBuffer.freeze` turns them into :class:`Items`
(column arrays), which the replay orders (:mod:`tracerace.convert.gpu.order`) cut and
reorder and the :class:`~tracerace.convert.gpu.emit.Emitter` expands lane by lane
(``thread = warp * 32 + lane``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...trace import ops as O

WARP = 32
FULL_MASK = 0xFFFFFFFF

# Address modes of an item.
A_NONE, A_STRIDE, A_ACTIVE, A_LANES = 0, 1, 2, 3

ITEM_FIELDS = (
    ("op", np.uint8),
    ("launch", np.uint32),
    ("block", np.uint32),
    ("warp", np.uint32),
    ("lanes", np.uint32),
    ("space", np.uint8),
    ("size", np.uint32),
    ("amode", np.uint8),
    ("a0", np.uint64),
    ("a1", np.int64),
    ("space2", np.uint8),
    ("bmode", np.uint8),
    ("b0", np.uint64),
    ("b1", np.int64),
    ("obj", np.uint64),
    ("arg", np.int64),
    ("scope", np.uint8),
    ("sem", np.uint8),
    ("proxy", np.uint8),
    ("site", np.uint32),
    ("lineno", np.int64),
    ("src", np.uint32),
)
FIELD_NAMES = tuple(name for name, _ in ITEM_FIELDS)


class ItemBuffer:
    """Items being collected, as plain lists; :meth:`freeze` makes a :class:`Items`."""

    __slots__ = ("cols", "flat")

    def __init__(self) -> None:
        self.cols: dict[str, list] = {name: [] for name in FIELD_NAMES}
        self.flat: list[int] = []

    def __len__(self) -> int:
        return len(self.cols["op"])

    def add(
        self,
        op: int,
        launch: int,
        block: int,
        warp: int,
        lanes: int,
        site: int,
        lineno: int,
        src: int,
        *,
        space: int = 0,
        size: int = 0,
        addrs: tuple | None = None,
        space2: int = 0,
        addrs2: tuple | None = None,
        obj: int = 0,
        arg: int = 0,
        scope: int = int(O.Scope.DEVICE),
        sem: int = 0,
        proxy: int = 0,
    ) -> None:
        c = self.cols
        c["op"].append(op)
        c["launch"].append(launch)
        c["block"].append(block)
        c["warp"].append(warp)
        c["lanes"].append(lanes)
        c["space"].append(space)
        c["size"].append(size)
        self._addr(addrs, "amode", "a0", "a1")
        c["space2"].append(space2)
        self._addr(addrs2, "bmode", "b0", "b1")
        c["obj"].append(obj)
        c["arg"].append(arg)
        c["scope"].append(scope)
        c["sem"].append(sem)
        c["proxy"].append(proxy)
        c["site"].append(site)
        c["lineno"].append(lineno)
        c["src"].append(src)

    def _addr(self, spec: tuple | None, mode: str, k0: str, k1: str) -> None:
        c = self.cols
        if spec is None:
            c[mode].append(A_NONE)
            c[k0].append(0)
            c[k1].append(0)
        elif spec[0] == A_STRIDE:
            c[mode].append(A_STRIDE)
            c[k0].append(spec[1])
            c[k1].append(spec[2])
        else:
            c[mode].append(spec[0])
            c[k0].append(len(self.flat))
            c[k1].append(0)
            self.flat.extend(spec[1])

    def freeze(self) -> Items:
        cols = {name: np.array(self.cols[name], dtype=dtype) for name, dtype in ITEM_FIELDS}
        flat = np.array(self.flat, dtype=np.uint64)
        self.cols = {name: [] for name in FIELD_NAMES}
        self.flat = []
        return Items(cols, flat)


@dataclass
class Items:
    """Frozen items: column arrays, and the addresses that A_ACTIVE/A_LANES index."""

    cols: dict[str, np.ndarray]
    flat: np.ndarray

    def __len__(self) -> int:
        return len(self.cols["op"])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.cols.values()) + self.flat.nbytes

    def take(self, index: np.ndarray) -> Items:
        """The items at ``index``, in that order (their addresses stay in ``flat``)."""
        return Items({name: a[index] for name, a in self.cols.items()}, self.flat)

    @staticmethod
    def concat(parts: list[Items]) -> Items:
        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0] + [len(p.flat) for p in parts[:-1]])
        cols = {}
        for name in FIELD_NAMES:
            arrays = [p.cols[name] for p in parts]
            if name in ("a0", "b0"):
                mode = "amode" if name == "a0" else "bmode"
                arrays = [
                    np.where(p.cols[mode] >= A_ACTIVE, a + np.uint64(off), a)
                    for p, a, off in zip(parts, arrays, offsets)
                ]
            cols[name] = np.concatenate(arrays)
        return Items(cols, np.concatenate([p.flat for p in parts]))
