"""The limits tracerace enforces on a trace, which it treats as untrusted input.

A trace's metadata is JSON a producer wrote, and its values come from
whoever sent the file. Every limit a trace can break is here, with the rule
an error names when it does (``docs/security.md`` lists them as a table).

:func:`load_json` is the one JSON parser for text taken from a trace (the
schema metadata, and the lines of GPU tracers' files): it bounds the text's
size and nesting depth before parsing, so that a hostile value fails with one
line naming the rule instead of a ``RecursionError`` deep in ``json``.
"""

from __future__ import annotations

import json
import re

import numpy as np

MAX_JSON_BYTES = 16 << 20
"""The longest JSON value read from a trace, in UTF-8 bytes (rule ``json-too-large``).
What reading one costs is measured in ``bench/README.md`` ("Untrusted input")."""

MAX_JSON_DEPTH = 64
"""The deepest nesting of lists and objects in such a value (rule ``json-too-deep``);
the format's own keys need 3."""

MAX_VERSION_DIGITS = 18
"""The longest ``tracerace.version`` read as a number (rule ``version``)."""

ADDRESS_LIMIT = 1 << 64
"""Addresses are 64-bit: a buffer's bytes end at or below this (rule ``buffer``)."""

MAX_BUFFER_DIMS = 32
"""The most dimensions a declared buffer may have (rule ``buffer``)."""

MAX_ITEMSIZE = (1 << 32) - 1
"""The largest element a declared buffer may have, in bytes (the format's ``size``)."""


class JSONLimitError(ValueError):
    """JSON from a trace that is too large or too deeply nested to read.

    ``rule`` names the limit broken (``json-too-large`` or ``json-too-deep``);
    the message says the limit and by how much it was passed.
    """

    def __init__(self, message: str, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


# A JSON string literal, unrolled so the regex engine does not backtrack.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)


def json_depth(text: str) -> int:
    """How deeply lists and objects nest in ``text`` (0 for a scalar), without
    parsing it: brackets inside strings do not count. For text that is not
    JSON the figure is meaningless, but it is computed in linear time and
    constant stack all the same."""
    bare = np.frombuffer(_STRING.sub("", text).encode("utf-8", "surrogatepass"), np.uint8)
    if not bare.size:
        return 0
    step = ((bare == ord("[")) | (bare == ord("{"))).astype(np.int32)
    step -= (bare == ord("]")) | (bare == ord("}"))
    return int(np.cumsum(step, dtype=np.int64).max(initial=0))


def load_json(
    text: str | bytes, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH
):
    """``json.loads(text)`` for text from a trace, within the limits.

    Raises :class:`JSONLimitError` (a ``ValueError``) when ``text`` is longer
    than ``max_bytes`` or nests deeper than ``max_depth``, and
    ``json.JSONDecodeError`` (also a ``ValueError``) when it is not JSON.
    """
    if isinstance(text, (bytes, bytearray)):
        size = len(text)
        if size <= max_bytes:
            text = bytes(text).decode("utf-8")
    else:
        size = len(text)  # characters: at most the bytes, so check the bytes only when near
        if size <= max_bytes < 4 * size:
            size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise JSONLimitError(
            f"{size:,} bytes of JSON: more than the {max_bytes:,} tracerace reads", "json-too-large"
        )
    depth = json_depth(text)
    if depth > max_depth:
        raise JSONLimitError(
            f"JSON nested {depth} deep: deeper than the {max_depth} tracerace reads",
            "json-too-deep",
        )
    return json.loads(text)
