"""The importers' registry: each importer claims its own traces and no other's,
detection walks the registry in order, and input nobody claims is one line, exit 2."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerace.cli import app
from tracerace.convert import gpu
from tracerace.convert.gpu.source import lines
from tracerace.convert.interface import SNIFF_LINES, Imported, Importer, Registry
from tracerace.errors import TraceError

sys.path.insert(0, os.path.dirname(__file__))
import gputrace as g  # noqa: E402
import tracezgen as z  # noqa: E402

FIXTURES = Path(__file__).parent / "gpu_fixtures"


def traces(tmp_path: Path) -> dict[str, list[str]]:
    """Format name -> traces of that format: the stored fixtures and files the
    tools' own writers (tests/gputrace.py) produce."""
    kernel = g.tile(True)
    accel = tmp_path / "accel"
    accel.mkdir()
    raw = g.write(accel / "kernel-1.trace", g.accel_trace(kernel))
    g.write(accel / "kernelslist", "kernel-1.trace\n")
    (tmp_path / "kernel-9.tracez").write_bytes(z.producer_consumer())
    cut = tmp_path / "cut"
    cut.mkdir()
    g.write(cut / "kernel_1_iter0_tile.ndjson", g.cutracer_ndjson(kernel))
    return {
        "accelsim": [
            str(next((FIXTURES / "accelsim_real").iterdir())),
            raw,
            str(accel / "kernelslist"),
            g.write(accel / "kernel-2.traceg.xz", g.accel_traceg(kernel, 2), xz=True),
        ],
        "cutracer": [
            str(FIXTURES / "cutracer_sample" / "reg_trace_sample.ndjson"),
            str(FIXTURES / "cutracer_sample" / "reg_trace_sample.ndjson.zst"),
            str(cut),
            # no CUTracer name: claimed by its first line
            str(shutil.copy(cut / "kernel_1_iter0_tile.ndjson", tmp_path / "tile.log")),
        ],
        "tracez": [str(tmp_path / "kernel-9.tracez")],
        "memtrace": [
            g.write(tmp_path / "run.log", g.memtrace_log([kernel])),
            g.write(tmp_path / "run.txt", "banner\n" + g.memtrace_log([kernel])),
        ],
    }


def claimers(path: str) -> set[str]:
    """The importers that claim ``path`` by its name or by one of its first lines."""
    found = {i.name for i in gpu.REGISTRY.importers if i.claims(path)}
    if os.path.isfile(path):
        for lineno, text in lines(path):
            found |= {i.name for i in gpu.REGISTRY.importers if i.claims_line(text)}
            if lineno >= SNIFF_LINES:
                break
    return found


def test_the_registry_is_the_formats_in_detection_order():
    names = gpu.REGISTRY.names
    assert gpu.FORMATS == names == tuple(i.name for i in gpu.REGISTRY.importers)
    assert all(isinstance(i, Importer) for i in gpu.REGISTRY.importers)
    # a path both claim (a folder named *.trace holding .ndjson files) is Accel-Sim's
    assert names.index("accelsim") < names.index("cutracer")
    assert {"accelsim", "cutracer", "memtrace"} <= set(names)
    # a kernelslist.g naming .tracez files is Accel-Sim 2.0's, not the text tracer's
    assert names.index("tracez") < names.index("accelsim")


def test_each_importer_claims_its_own_traces_and_no_others(tmp_path):
    for name, paths in traces(tmp_path).items():
        for path in paths:
            assert claimers(path) == {name}, path
            assert gpu.detect(path) == name, path


def test_other_inputs_are_nobodys(tmp_path):
    plain = g.write(tmp_path / "notes.log", 'hello\n{"type": "unknown"}\n')
    std = g.write(tmp_path / "t.std", "T0|w(V1)|1\n")
    for path in (plain, std, str(tmp_path / "missing.log"), str(tmp_path)):
        assert gpu.detect(path) is None, path
    # a v1 or STD name is never read, whatever it holds
    renamed = g.write(tmp_path / "run.std", g.memtrace_log([g.tile(True)]))
    assert claimers(renamed) == {"memtrace"} and gpu.detect(renamed) is None


def test_a_named_format_is_taken_without_detection(tmp_path):
    plain = g.write(tmp_path / "notes.log", "hello\n")
    assert gpu.detect(plain, "cutracer") == "cutracer"
    with pytest.raises(TraceError) as err:
        gpu.detect(plain, "nsight")
    assert err.value.rule == "usage" and ", ".join(gpu.FORMATS) in str(err.value)


class _Toy(Importer):
    """An importer of ``.toy`` files whose lines start with ``TOY``."""

    name = "toy"

    def claims(self, path: str) -> bool:
        return path.endswith(".toy")

    def claims_line(self, text: str) -> bool:
        return text.startswith("TOY ")

    def read(self, path, writer, emitter, options, notes) -> Imported:
        return Imported([], 0, "recorded")


def test_detection_walks_the_registry_it_is_given(tmp_path):
    registry = Registry((*gpu.REGISTRY.importers, _Toy()))
    by_name = g.write(tmp_path / "a.toy", "anything\n")
    by_line = g.write(tmp_path / "b.log", "banner\nTOY 1 2 3\n")
    assert registry.detect(by_name, lines).name == "toy"
    assert registry.detect(by_line, lines).name == "toy"
    assert gpu.REGISTRY.detect(by_line, lines) is None
    assert registry.get("toy").name == "toy"
    with pytest.raises(ValueError, match="share a name"):
        Registry((_Toy(), _Toy()))


@pytest.mark.parametrize(
    "name,text",
    [
        ("mystery.bin", "\x00\x01"),
        ("notes.log", "hello\n"),
        ("noext", "MEMTRACE: nothing to see\n"),
    ],
)
def test_input_nobody_claims_exits_2_naming_the_file(tmp_path, name, text):
    src = tmp_path / name
    src.write_text(text)
    result = CliRunner().invoke(app, ["convert", str(src), str(tmp_path / "out.arrow")])
    assert result.exit_code == 2
    out = result.output.strip().splitlines()
    assert len(out) == 1 and str(src) in out[0] and "Traceback" not in result.output
    assert not (tmp_path / "out.arrow").exists()


def test_a_path_two_importers_claim_is_the_first_ones(tmp_path):
    folder = tmp_path / "run.trace"
    folder.mkdir()
    g.write(folder / "kernel_1_iter0_tile.ndjson", g.cutracer_ndjson(g.tile(True)))
    assert claimers(str(folder)) == {"accelsim", "cutracer"}
    assert gpu.detect(str(folder)) == "accelsim"
    # a kernelslist.g naming .tracez files: both Accel-Sim importers claim it
    tz = tmp_path / "tz"
    tz.mkdir()
    listing = z.write_list(tz, {"kernel-1.tracez": z.producer_consumer()})
    assert claimers(listing) == {"tracez", "accelsim"}
    assert gpu.detect(listing) == "tracez"
