"""Arrow: one row per finding (not grouped), flat columns for pandas / duckdb.

To a path: an Arrow IPC file (Feather v2, ``pyarrow.feather.read_table``);
to a stream (stdout): an IPC stream (``pyarrow.ipc.open_stream``).

Columns: ``group`` (position in the report's groups), ``kind``, ``severity``,
the later access ``row, launch, block, thread, op, ts, site, async``, the
earlier one ``first_row ... first_async`` (null for single-access hazards),
the bytes ``space, owner, addr, size, element, location``, ``obj``, ``code``,
``reason``, ``aux``, the barrier generations ``bar_obj, bar_gen,
first_bar_obj, first_bar_gen`` and ``explanation``. Names (kind, severity,
op, space) are dictionary-encoded strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

import numpy as np
import pyarrow as pa

from ..explain import COPY_OPS, explain_all, op_name, reason_text
from ..report import KIND_NAMES, NO_ROW, SEVERITY_NAMES, Report, locate_all, space_name

NAME = "arrow"
BINARY = True

_OP_NAMES = np.array([op_name(code) for code in range(256)], dtype=object)
_SPACE_NAMES = np.array([space_name(code) for code in range(256)], dtype=object)
_IS_COPY = np.isin(np.arange(256), sorted(COPY_OPS))


def write(report: Report, stream: IO[bytes]) -> None:
    table = report_table(report)
    with pa.ipc.new_stream(stream, table.schema) as writer:
        writer.write_table(table)


def write_path(report: Report, path: str) -> None:
    table = report_table(report)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def report_table(report: Report) -> pa.Table:
    f, meta = report.findings, report.meta
    first = f["prev_row"] != NO_ROW
    no_first = ~first
    sites = np.array(list(meta.sites) + [None], dtype=object)

    def site_text(col: np.ndarray) -> np.ndarray:
        return sites[np.minimum(col.astype(np.int64), len(meta.sites))]

    def names(codes: np.ndarray, dictionary: Sequence[str], mask: np.ndarray | None = None,
              ) -> pa.DictionaryArray:
        indices = pa.array(codes.astype(np.int16), pa.int16(), mask=mask)
        return pa.DictionaryArray.from_arrays(indices, pa.array(list(dictionary), pa.string()))

    def earlier(values: np.ndarray, type_: pa.DataType) -> pa.Array:
        return pa.array(values, type_, mask=no_first)

    ops = np.unique(np.concatenate([f["op"], f["prev_op"]]))
    op_index = np.searchsorted(ops, f["op"]), np.searchsorted(ops, f["prev_op"])
    spaces = np.unique(f["space"])
    elements, locations = zip(*locate_all(f, meta)) if len(f) else ((), ())
    explanations = explain_all(f, meta)
    reason = [reason_text(int(k), int(c)) for k, c in zip(f["kind"], f["code"])]

    columns = {
        "group": pa.array(report.group_of(), pa.int32()),
        "kind": names(f["kind"], KIND_NAMES),
        "severity": names(f["severity"], SEVERITY_NAMES),
        "row": pa.array(f["row"], pa.int64()),
        "launch": pa.array(f["launch"], pa.uint32()),
        "block": pa.array(f["block"], pa.uint32()),
        "thread": pa.array(f["thread"], pa.uint32()),
        "op": names(op_index[0], _OP_NAMES[ops]),
        "ts": pa.array(f["ts"], pa.uint64()),
        "site": pa.array(site_text(f["site"]), pa.string()),
        "async": pa.array(_IS_COPY[f["op"]], pa.bool_()),
        "first_row": earlier(f["prev_row"], pa.int64()),
        "first_launch": earlier(f["prev_launch"], pa.uint32()),
        "first_block": earlier(f["prev_block"], pa.uint32()),
        "first_thread": earlier(f["prev_thread"], pa.uint32()),
        "first_op": names(op_index[1], _OP_NAMES[ops], mask=no_first),
        "first_ts": earlier(f["prev_ts"], pa.uint64()),
        "first_site": pa.array(np.where(first, site_text(f["prev_site"]), None), pa.string()),
        "first_async": earlier((f["prev_async"] != 0) | _IS_COPY[f["prev_op"]], pa.bool_()),
        "space": names(np.searchsorted(spaces, f["space"]), _SPACE_NAMES[spaces]),
        "owner": pa.array(f["owner"], pa.uint32()),
        "addr": pa.array(f["addr"], pa.uint64()),
        "size": pa.array(f["size"], pa.uint32()),
        "element": pa.array(list(elements), pa.string()),
        "location": pa.array(list(locations), pa.string()),
        "obj": pa.array(f["obj"], pa.uint64()),
        "code": pa.array(f["code"], pa.uint8()),
        "reason": pa.array(reason, pa.string()),
        "aux": pa.array(f["aux"], pa.int64()),
        "bar_obj": pa.array(f["bar_obj"], pa.int64()),
        "bar_gen": pa.array(f["bar_gen"], pa.int64()),
        "first_bar_obj": earlier(f["prev_bar_obj"], pa.int64()),
        "first_bar_gen": earlier(f["prev_bar_gen"], pa.int64()),
        "explanation": pa.array(explanations, pa.string()),
    }
    metadata = {"tracerace.report.version": "1", "tracerace.events": str(report.events)}
    if meta.path:
        metadata["tracerace.trace"] = meta.path
    return pa.table(columns).replace_schema_metadata(metadata)
