"""A trace's header: its schema and metadata, checked when the trace is opened.

:func:`check_schema` checks the columns (required ones present, each at most
once, integer-typed); :func:`parse_metadata` reads the format version, sites,
buffers, producer, warnings and launch dimensions into a
:class:`~tracerace.trace.meta.TraceMeta`. Errors name the file and the rule broken.
The metadata is untrusted: its JSON goes through
:func:`tracerace.trace.limits.load_json`, and the version and buffers are held to
the limits of :mod:`tracerace.trace.limits` before anything uses them.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import TraceError
from ..shown import surrogate_at, surrogate_message
from .coords import parse_launches
from .limits import (
    ADDRESS_LIMIT,
    MAX_BUFFER_DIMS,
    MAX_ITEMSIZE,
    MAX_VERSION_DIGITS,
    JSONLimitError,
    load_json,
)
from .meta import Buffer, TraceMeta
from .ops import Space
from .schema import (
    COLUMNS,
    FORMAT_VERSION,
    META_BUFFERS,
    META_PRODUCER,
    META_SITES,
    META_VERSION,
    META_WARNINGS,
    REQUIRED,
)

OLDEST_VERSION = 1
"""The oldest trace-format version this package reads."""


def check_schema(schema: pa.Schema, path: str | None) -> None:
    """Required columns present, each v1 column at most once and integer-typed.

    Unknown columns are ignored: the format may grow optional columns.
    """
    names = schema.names
    for col in COLUMNS:
        count = names.count(col.name)
        if count == 0:
            if col.required:
                raise TraceError(
                    f"required column '{col.name}' is absent (required: {', '.join(REQUIRED)})",
                    path=path,
                    rule="missing-column",
                )
            continue
        if count > 1:
            raise TraceError(
                f"column '{col.name}' appears {count} times", path=path, rule="duplicate-column"
            )
        kind = schema.field(col.name).type
        if not (pa.types.is_integer(kind) or (pa.types.is_null(kind) and not col.required)):
            raise TraceError(
                f"column '{col.name}' has type {kind}; it must be an integer "
                f"type whose values fit {col.arrow_type}",
                path=path,
                rule="wrong-type",
            )


def parse_metadata(schema: pa.Schema, path: str | None) -> TraceMeta:
    """The trace's version, sites, buffers and producer from the schema metadata."""

    def fail(message: str, rule: str = "metadata") -> TraceError:
        return TraceError(message, path=path, rule=rule)

    raw = schema.metadata or {}
    meta: dict[str, str] = {}
    for key, value in raw.items():
        try:
            meta[key.decode()] = value.decode()
        except UnicodeDecodeError:
            raise fail(f"metadata key or value is not utf-8: {key[:40]!r}") from None

    version = _parse_version(meta.get(META_VERSION), fail)
    sites = _parse_json(meta, META_SITES, fail)
    if sites is None:
        sites = []
    if not isinstance(sites, list) or not all(isinstance(s, str) for s in sites):
        raise fail(f"{META_SITES} must be a JSON list of strings")
    entries = _parse_json(meta, META_BUFFERS, fail)
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise fail(f"{META_BUFFERS} must be a JSON list of objects")
    buffers = tuple(
        parse_buffer(entry, f"{META_BUFFERS}[{i}]", fail) for i, entry in enumerate(entries)
    )
    warnings = _parse_json(meta, META_WARNINGS, fail)
    if warnings is None:
        warnings = []
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise fail(f"{META_WARNINGS} must be a JSON list of strings")
    known = {META_VERSION, META_SITES, META_BUFFERS, META_PRODUCER, META_WARNINGS}
    return TraceMeta(
        path=path,
        version=version,
        sites=tuple(sites),
        buffers=buffers,
        producer=meta.get(META_PRODUCER),
        warnings=tuple(warnings),
        extra={k: v for k, v in meta.items() if k not in known},
        launches=parse_launches(meta, fail),
    )


def _parse_version(text: str | None, fail) -> int:
    if text is None:
        raise fail(
            f"the schema metadata has no {META_VERSION}; this is not a tracerace "
            f"trace (this tracerace reads version {FORMAT_VERSION})",
            "version",
        )
    digits = text.strip()
    if len(digits) > MAX_VERSION_DIGITS:
        raise fail(
            f"trace format version of {len(digits):,} characters is not a version "
            f"number (this tracerace reads version {FORMAT_VERSION})",
            "version",
        )
    if not (digits.isascii() and digits.isdigit()):
        raise fail(
            f"trace format version {text!r} is not a version number "
            f"(this tracerace reads version {FORMAT_VERSION})",
            "version",
        )
    version = int(digits)
    if version > FORMAT_VERSION:
        raise fail(
            f"trace format version {version} is newer than the newest this "
            f"tracerace reads ({FORMAT_VERSION})",
            "version",
        )
    if version < OLDEST_VERSION:
        raise fail(
            f"trace format version {version} is older than the oldest this "
            f"tracerace reads ({OLDEST_VERSION})",
            "version",
        )
    return version


def _parse_json(meta: dict[str, str], key: str, fail):
    if key not in meta:
        return None
    try:
        value = load_json(meta[key])
    except JSONLimitError as exc:
        raise fail(f"{key}: {exc}", exc.rule) from None
    except ValueError as exc:
        raise fail(f"{key} is not valid JSON: {one_line(exc)}") from None
    where = surrogate_at(meta[key], value)
    if where is not None:
        raise fail(surrogate_message(key, where))
    return value


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_list(value) -> bool:
    return isinstance(value, list) and all(_is_int(v) and v >= 0 for v in value)


def parse_buffer(entry, where: str, fail=None) -> Buffer:
    """A :class:`Buffer` from its JSON object; ``fail(message)`` makes the error."""
    if fail is None:

        def fail(message: str, rule: str = "metadata") -> TraceError:
            return TraceError(message, rule=rule)

    if not isinstance(entry, dict):
        raise fail(f"{where} must be a JSON object")
    for key in ("name", "space", "base", "shape", "itemsize"):
        if key not in entry:
            raise fail(f"{where} has no '{key}'")
    name, space, base = entry["name"], entry["space"], entry["base"]
    shape, itemsize = entry["shape"], entry["itemsize"]
    strides, launch = entry.get("strides"), entry.get("launch")
    if not isinstance(name, str) or not name:
        raise fail(f"{where}: 'name' must be a non-empty string")
    if not _is_int(space) or not 0 <= space <= max(Space):
        raise fail(f"{where}: 'space' must be 0 (global), 1 (shared) or 2 (local)")
    if not _is_int(base) or base < 0:
        raise fail(f"{where}: 'base' must be a non-negative integer")
    if not _int_list(shape):
        raise fail(f"{where}: 'shape' must be a list of non-negative integers")
    if not _is_int(itemsize) or itemsize < 1:
        raise fail(f"{where}: 'itemsize' must be a positive integer")
    if strides is not None and (not _int_list(strides) or len(strides) != len(shape)):
        raise fail(
            f"{where}: 'strides' must be a list of non-negative integers, "
            f"one per dimension of 'shape'"
        )
    if launch is not None and (not _is_int(launch) or launch < 0):
        raise fail(f"{where}: 'launch' must be a non-negative integer or null")
    buffer = Buffer(
        name=name,
        space=space,
        base=base,
        shape=tuple(shape),
        itemsize=itemsize,
        strides=None if strides is None else tuple(strides),
        launch=launch,
    )
    _check_buffer_limits(buffer, where, fail)
    return buffer


def _check_buffer_limits(buffer: Buffer, where: str, fail) -> None:
    """A declared buffer lies in the 64-bit address space, with at most
    :data:`MAX_BUFFER_DIMS` dimensions, elements of at most ``size``'s
    2^32-1 bytes, and strides and dimensions a signed 64-bit element count
    holds (the reports index elements with those). Rule ``buffer-limit``."""

    def limit(message: str) -> TraceError:
        return fail(f"{where}: {message}", "buffer-limit")

    if len(buffer.shape) > MAX_BUFFER_DIMS:
        raise limit(
            f"{len(buffer.shape):,} dimensions: more than the {MAX_BUFFER_DIMS} tracerace reads"
        )
    if buffer.base >= ADDRESS_LIMIT:
        raise limit(f"'base' {buffer.base:#x} is past the 64-bit address space")
    if buffer.itemsize > MAX_ITEMSIZE:
        raise limit(f"'itemsize' {buffer.itemsize:,} is more than {MAX_ITEMSIZE:,} bytes")
    for key, values in (("shape", buffer.shape), ("strides", buffer.element_strides)):
        if any(v > _I64_MAX for v in values):
            raise limit(f"'{key}' holds a value past 2^63-1 elements")
    if buffer.base + buffer.nbytes_span > ADDRESS_LIMIT:
        raise limit(
            f"its {buffer.nbytes_span:,} bytes from 'base' {buffer.base:#x} pass the "
            f"end of the 64-bit address space"
        )


_I64_MAX = (1 << 63) - 1


def one_line(exc: BaseException) -> str:
    """An exception's message on one line; its type's name when it has none."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
