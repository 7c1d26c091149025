"""Trace text as people see it: control characters shown as escapes, never obeyed.

A trace is untrusted input, and its text (sites, buffer and kernel names, the
producer, warnings) reaches terminals, CI logs and code-scanning pages. Text
that a terminal or an editor would act on instead of showing (a terminal
escape such as ``\\x1b]0;title\\x07``, a newline that starts a forged report
line, a right-to-left override that reorders what follows) is written as an
escape instead: :func:`shown` is the one function every human-readable output
passes trace text through (the text report, ``info``, error and warning
lines, SARIF message texts).

What is escaped (:data:`ODD`): the C0 controls, DEL, the C1 controls, the
Unicode bidirectional controls (U+061C, U+200E, U+200F, U+202A to U+202E,
U+2066 to U+2069), the line and paragraph separators (U+2028, U+2029), and
lone surrogates. Each becomes ``\\n``, ``\\r`` or ``\\t``, else ``\\xNN`` (up to
U+00FF) or ``\\uNNNN``. A backslash is left as it is (Windows paths stay
readable), so :func:`shown` of shown text changes nothing.

Lone surrogates (U+D800 to U+DFFF alone: a JSON ``\\ud800`` escape decodes
to one) are not Unicode text and cannot be written as UTF-8. A trace whose
metadata holds one is refused when it is read (:func:`surrogate_at`), so no
format meets one; :func:`shown` escapes them too, for text that reaches it
some other way.
"""

from __future__ import annotations

import re
from typing import Any

ODD = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ud800-\udfff]"
)
"""The characters :func:`shown` writes as escapes."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def shown(text: str) -> str:
    """``text`` with every character of :data:`ODD` written as its escape
    (``"a\\x1b[2Jb"`` -> ``"a\\\\x1b[2Jb"``); other text unchanged."""
    return ODD.sub(_escape, text)


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def surrogate_at(raw: str, value: Any) -> str | None:
    """Where the JSON value ``value`` (decoded from the text ``raw``) holds a
    string with a lone surrogate: ``""`` for the value itself, ``[3]``,
    ``[0].name``; None when it holds none. A lone surrogate can only come
    from a ``\\uD800``-``\\uDFFF`` escape in ``raw``, so text without one is
    not walked."""
    if _SURROGATE_ESCAPE.search(raw) is None:
        return None
    todo: list[tuple[str, Any]] = [("", value)]  # no recursion: nesting depth is the input's
    while todo:
        where, item = todo.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where
        elif isinstance(item, list):
            todo.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, dict):
            for key, v in reversed(list(item.items())):
                if _SURROGATE.search(key):
                    return f"{where} (a key)"
                todo.append((f"{where}.{key}", v))
    return None


def surrogate_message(key: str, where: str) -> str:
    """The one-line refusal of a metadata value holding a lone surrogate."""
    return (
        f"{key}{where} holds a lone surrogate (a \\ud800-\\udfff escape with no pair): "
        f"trace text must be Unicode"
    )
