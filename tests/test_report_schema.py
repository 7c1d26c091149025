"""The published report schemas (schemas/report-v1.*) and what the formats write agree."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pyarrow as pa
import pytest

import tracerace
from tracerace.report import arrow_report
from tracerace.report.formats import jsonfmt
from tracerace.scenarios import SCENARIOS

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def load(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = {}
    for name in SCENARIOS:
        path = SCENARIOS[name].write(tmp_path_factory.mktemp(name) / f"{name}.arrow")
        out[name] = tracerace.check(path)
    return out


def test_json_schema_is_a_valid_draft_2020_12_schema():
    doc = load("report-v1.schema.json")
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["properties"]["version"]["const"] == jsonfmt.JSON_VERSION


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_incident_report_follows_the_json_schema(reports, name):
    doc = json.loads(json.dumps(reports[name].to_json()))
    jsonschema.Draft202012Validator(load("report-v1.schema.json")).validate(doc)


def test_the_json_schema_documents_every_field_written(reports):
    schema = load("report-v1.schema.json")
    group = schema["$defs"]["group"]["properties"]
    access = schema["$defs"]["access"]["properties"]
    for report in reports.values():
        doc = report.to_json()
        assert set(doc) <= set(schema["properties"])
        for h in doc["hazards"]:
            assert set(h) == set(group)
            for side in ("first", "second"):
                if h[side] is not None:
                    assert set(h[side]) == set(access)


def test_arrow_schema_file_lists_the_columns_written(reports):
    doc = load("report-v1.arrow-schema.json")
    assert doc["version"] == int(arrow_report.REPORT_VERSION)
    published = [(c["name"], c["nullable"]) for c in doc["columns"]]
    assert published == [(f.name, f.nullable) for f in arrow_report.SCHEMA]
    for c, field in zip(doc["columns"], arrow_report.SCHEMA):
        t = field.type
        written = (
            f"dictionary<values={t.value_type}, indices={t.index_type}>"
            if pa.types.is_dictionary(t)
            else str(t)
        )
        assert c["arrow_type"] == written and c["meaning"].strip()
    keys = {m["key"] for m in doc["metadata"]}
    table = reports["incident3"].to_arrow()
    assert {k.decode() for k in table.schema.metadata} <= keys
