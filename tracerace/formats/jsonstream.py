"""JSON written piece by piece: a long list is written item by item as it is produced.

:func:`dump` writes what ``json.dump(value, stream, indent=2)`` writes, except
that an :class:`Items` anywhere in ``value`` is a list whose items are
produced (and written) one at a time, so a report of 10^5 groups never holds
one giant document.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, Any

INDENT = "  "


class Items:
    """A JSON array whose items come from an iterable, written as they come
    (each item plain JSON: no :class:`Items` inside)."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


def _streams(value: Any) -> bool:
    if isinstance(value, Items):
        return True
    if isinstance(value, dict):
        return any(_streams(v) for v in value.values())
    if isinstance(value, list):
        return any(_streams(v) for v in value)
    return False


def dump(value: Any, stream: IO[str], level: int = 0) -> None:
    """Write ``value`` as indented JSON (no trailing newline)."""
    pad = INDENT * level
    if isinstance(value, Items) or (isinstance(value, list) and _streams(value)):
        n = 0
        stream.write("[")
        plain = isinstance(value, Items)
        for item in (value.items if plain else value):
            stream.write(",\n" if n else "\n")
            stream.write(pad + INDENT)
            if plain:
                stream.write(json.dumps(item, indent=len(INDENT)).replace("\n", "\n" + pad + INDENT))
            else:
                dump(item, stream, level + 1)
            n += 1
        stream.write(f"\n{pad}]" if n else "]")
    elif isinstance(value, dict) and _streams(value):
        stream.write("{")
        for i, (key, item) in enumerate(value.items()):
            stream.write(",\n" if i else "\n")
            stream.write(f"{pad}{INDENT}{json.dumps(key)}: ")
            dump(item, stream, level + 1)
        stream.write(f"\n{pad}}}" if value else "}")
    else:
        text = json.dumps(value, indent=len(INDENT))
        stream.write(text.replace("\n", "\n" + pad) if level else text)
