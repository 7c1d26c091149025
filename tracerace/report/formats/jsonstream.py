"""JSON written piece by piece: a long list is written item by item as it is produced.

:func:`dump` writes what ``json.dump(value, stream, indent=2)`` writes, except
that an :class:`Items` anywhere in ``value`` is a list whose items are
produced (and written) one at a time, so a report of 10^5 groups never holds
one giant document.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from json.encoder import encode_basestring_ascii
from typing import IO, Any

INDENT = "  "


def indented(value: Any, pad: str = "") -> str:
    """``json.dumps(value, indent=2)`` (plain JSON types; ints, not floats), each
    line after the first prefixed by ``pad``. The standard encoder takes its
    pure-Python path whenever it indents; this direct one is faster on report
    groups, and ``tests/test_report_streaming.py`` holds it to
    ``json.dumps``."""
    out: list[str] = []
    _emit(value, "\n" + pad, out)
    return "".join(out)


def _emit(value: Any, newline: str, out: list[str]) -> None:
    leaf = _leaf(value)
    if leaf is not None:
        out.append(leaf)
        return
    inner = newline + INDENT
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        sep = "{" + inner
        for key, item in value.items():
            out.append(sep)
            out.append(encode_basestring_ascii(key if isinstance(key, str) else str(key)))
            out.append(": ")
            # leaves inline: most values of a report are strings and ints
            if item.__class__ is str:
                out.append(encode_basestring_ascii(item))
            elif item.__class__ is int:
                out.append(int.__repr__(item))
            else:
                _emit(item, inner, out)
            sep = "," + inner
        out.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        sep = "[" + inner
        for item in value:
            out.append(sep)
            _emit(item, inner, out)
            sep = "," + inner
        out.append(newline + "]")
    else:  # floats and anything else: the standard encoder's words
        out.append(json.dumps(value))


def _leaf(value: Any) -> str | None:
    """The JSON of a string, int, bool or null; None for anything else."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    return None


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
        for item in value.items if plain else value:
            stream.write(",\n" if n else "\n")
            stream.write(pad + INDENT)
            if plain:
                stream.write(indented(item, pad + INDENT))
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
        stream.write(indented(value, pad))
