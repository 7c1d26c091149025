"""The published format (schemas/) and the package's own tables must agree exactly."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from tracerace.errors import TraceError
from tracerace.trace.columns import EXTENSION_OP_MIN
from tracerace.trace.header import parse_buffer
from tracerace.trace.meta import Buffer
from tracerace.trace.ops import Op, Proxy, Scope, Sem, Space
from tracerace.trace.schema import (
    COLUMNS,
    FORMAT_VERSION,
    META_BUFFERS,
    META_PRODUCER,
    META_SITES,
    META_VERSION,
    META_WARNINGS,
    arrow_schema,
)

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def load(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def test_columns_match_schema_module():
    doc = load("trace-v1.arrow-schema.json")
    assert doc["version"] == FORMAT_VERSION
    published = [
        (c["name"], c["arrow_type"], c["nullable"], c["required"], c["default"])
        for c in doc["columns"]
    ]
    in_code = [(c.name, str(c.arrow_type), not c.required, c.required, c.default) for c in COLUMNS]
    assert published == in_code
    assert all(c["meaning"].strip() for c in doc["columns"])


def test_published_types_build_the_arrow_schema():
    doc = load("trace-v1.arrow-schema.json")
    fields = [
        pa.field(c["name"], pa.type_for_alias(c["arrow_type"]), nullable=c["nullable"])
        for c in doc["columns"]
    ]
    assert pa.schema(fields).equals(arrow_schema())


def test_ops_match_enum():
    doc = load("ops.json")
    assert doc["version"] == FORMAT_VERSION
    assert [(o["code"], o["name"]) for o in doc["ops"]] == [(int(op), op.label) for op in Op]
    columns = {c.name for c in COLUMNS}
    common = set(doc["common_fields"])
    assert common <= columns
    for o in doc["ops"]:
        assert set(o["fields"]) <= columns - common, o["name"]
        assert o["meaning"].strip()


def test_extension_range_holds_only_extension_ops():
    doc = load("ops.json")
    ext = doc["extension_codes"]
    assert ext["min"] == EXTENSION_OP_MIN
    assert ext["max"] == 255
    for o in doc["ops"]:
        assert (o["code"] >= ext["min"]) == ("extension" in o), o["name"]
        assert o["code"] <= ext["max"]


@pytest.mark.parametrize(
    "column, enum", [("space", Space), ("scope", Scope), ("sem", Sem), ("proxy", Proxy)]
)
def test_value_enums_match(column, enum):
    published = load("ops.json")["enums"][column]
    assert [(e["value"], e["name"]) for e in published] == [(int(m), m.name.lower()) for m in enum]


def test_metadata_keys_match():
    doc = load("metadata.json")
    keys = {k["key"]: k for k in doc["keys"]}
    assert set(keys) == {META_VERSION, META_SITES, META_BUFFERS, META_PRODUCER, META_WARNINGS}
    assert [k for k, v in keys.items() if v["required"]] == [META_VERSION]
    assert keys[META_VERSION]["value"] == str(FORMAT_VERSION)


def test_metadata_extensions_match_what_the_gpu_import_writes():
    from tracerace.convert.gpu import META_IMPORT, META_KERNELS
    from tracerace.convert.gpu.kernel import KernelInfo
    from tracerace.trace.coords import META_LAUNCHES

    ext = {k["key"]: k for k in load("metadata.json")["extensions"]}
    assert set(ext) == {META_KERNELS, META_IMPORT, META_LAUNCHES}
    assert not any(k["required"] for k in ext.values())
    entry = ext[META_KERNELS]["json_schema"]["items"]
    written = KernelInfo("k", (1, 2, 3), (32, 1, 1), "f.traceg", (16, 1024), (0, 64)).to_json(0)
    assert set(entry["required"]) <= set(written) <= set(entry["properties"])
    assert set(ext[META_IMPORT]["json_schema"]["required"]) == {"format", "order", "notes"}


def buffer_schema() -> dict:
    keys = {k["key"]: k for k in load("metadata.json")["keys"]}
    return keys[META_BUFFERS]["json_schema"]["items"]


def test_buffer_shape_matches_dataclass():
    shape = buffer_schema()
    fields = dataclasses.fields(Buffer)
    assert set(shape["properties"]) == {f.name for f in fields}
    no_default = [f.name for f in fields if f.default is dataclasses.MISSING]
    assert shape["required"] == no_default


def test_reader_enforces_published_buffer_shape():
    shape = buffer_schema()
    minimal = {"name": "x", "space": 0, "base": 16, "shape": [2, 3], "itemsize": 4}
    assert set(minimal) == set(shape["required"])
    assert parse_buffer(minimal, "b") == Buffer("x", 0, 16, (2, 3), 4)
    full = dict(minimal, strides=[1, 2], launch=None)
    assert parse_buffer(full, "b").strides == (1, 2)
    for key in shape["required"]:
        broken = {k: v for k, v in minimal.items() if k != key}
        with pytest.raises(TraceError, match=key) as info:
            parse_buffer(broken, "b")
        assert info.value.rule == "metadata"


def test_prose_names_every_column_op_and_rule():
    text = (SCHEMAS / "trace-format-v1.md").read_text()
    for col in COLUMNS:
        assert f"`{col.name}`" in text
    for op in Op:  # written as `name` (code ...), possibly across a line break
        assert re.search(rf"`{op.label}`\s+\({int(op)}\b", text), op.label
    for rule in (
        "no-such-file",
        "not-arrow",
        "version",
        "metadata",
        "missing-column",
        "wrong-type",
        "bad-value",
        "unknown-op",
        "ts-decreasing",
        "site-range",
        "address-overflow",
        "launch-order",
        "barrier-order",
        "barrier-count",
        "wait-without-signal",
        "mbarrier-count",
        "op-space",
        "cluster-wait",
    ):
        assert f"`{rule}`" in text
