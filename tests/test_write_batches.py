"""``write_batches``: the writer's public way to write a trace batch by batch
(what ``convert`` copies containers with)."""

from __future__ import annotations

import os
import sys

import pytest

from tracerace.trace.writer import write_batches

sys.path.insert(0, os.path.dirname(__file__))
from test_writer import BUFFERS, SITES, assert_same, every_column, read_back  # noqa: E402


@pytest.mark.parametrize("name", ["t.arrow", "t.arrows", "t.parquet"])
def test_batches_are_written_whole_under_their_metadata(tmp_path, name):
    cols = every_column(600)
    parts = [{k: v[i : i + 250] for k, v in cols.items()} for i in range(0, 600, 250)]
    out = tmp_path / name
    rows = write_batches(
        out,
        iter(parts),
        sites=SITES,
        buffers=BUFFERS,
        producer="p",
        extra={"x.note": "kept"},
        warnings=["w"],
        compression="zstd",
    )
    meta, got = read_back(out)
    assert rows == 600
    assert_same(got, cols)
    assert (meta.sites, meta.buffers, meta.producer, meta.warnings) == (
        tuple(SITES),
        tuple(BUFFERS),
        "p",
        ("w",),
    )
    assert meta.extra.get("x.note") == "kept"


def test_a_failed_batch_leaves_no_output(tmp_path):
    cols = every_column(10)

    def batches():
        yield cols
        raise RuntimeError("the input went away")

    out = tmp_path / "t.arrow"
    with pytest.raises(RuntimeError):
        write_batches(out, batches())
    assert os.listdir(tmp_path) == []


def test_an_unknown_codec_is_refused_before_writing(tmp_path):
    with pytest.raises(ValueError, match="compression"):
        write_batches(tmp_path / "t.arrow", [every_column(3)], compression="gzip")
    assert os.listdir(tmp_path) == []
