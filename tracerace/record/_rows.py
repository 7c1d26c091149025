"""Rows a recorder's converter adds between the rows it maps one to one from
its records (barriers it completes, inits it infers, ...), and the merge of
both into trace columns in replay order."""

from __future__ import annotations

import numpy as np


class Rows:
    """Added rows, each with the sort key that places it among the direct
    rows (``2 i`` is record ``i``'s own row; ``2 i + 1`` comes right after
    it). ``defaults``: the columns, with the values of a row that does not
    set them."""

    def __init__(self, defaults: dict[str, int]) -> None:
        self.defaults = defaults
        self.key: list[int] = []
        self.cols: dict[str, list[int]] = {name: [] for name in defaults}

    def add(self, key: int, **values: int) -> None:
        unknown = set(values) - set(self.defaults)
        if unknown:
            raise TypeError(f"unknown columns {sorted(unknown)}")
        self.key.append(key)
        for name, default in self.defaults.items():
            self.cols[name].append(int(values.get(name, default)))

    def merged(self, direct: dict[str, np.ndarray], key: np.ndarray) -> dict[str, np.ndarray]:
        """``direct`` (columns of rows with sort keys ``key``) and these rows,
        in key order (stable), with ``ts`` the row number."""
        cols = {name: np.concatenate([values, np.asarray(self.cols[name], dtype=values.dtype)])
                for name, values in direct.items()}
        order = np.argsort(np.concatenate([key, np.asarray(self.key, dtype=np.int64)]),
                           kind="stable")
        cols = {name: values[order] for name, values in cols.items()}
        cols["ts"] = np.arange(len(order), dtype=np.uint64)
        return cols
