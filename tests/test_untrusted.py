"""A trace is untrusted input (issue 35): whatever its metadata and values,
``check`` (both checkers, every report format), ``validate`` and ``info`` give
a report or one bad-input line with exit 2, never a traceback, in memory and
time bounded by the trace's real content.

The limits are :mod:`tracerace.trace.limits` (``docs/security.md`` lists them). The
examples of the issue are tests here; the fuzz tests at the end draw metadata
and column values at random.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tracerace.checker.engine import EngineState
from tracerace.checker.engine.layout import GR_AGENTS
from tracerace.cli import app
from tracerace.errors import TraceError
from tracerace.trace import limits
from tracerace.trace.limits import JSONLimitError, json_depth, load_json
from tracerace.trace.ops import Op
from tracerace.trace.schema import COLUMNS
from tracerace.trace.writer import make_table, write_table

ROOT = Path(__file__).resolve().parent.parent
SCALE = float(os.environ.get("TRACERACE_SCALE", "1"))
ENGINES = ["numba", "reference"]
FORMATS = ["text", "json", "sarif", "html", "arrow"]
SUFFIX = {"text": "txt", "json": "json", "sarif": "sarif", "html": "html", "arrow": "arrow"}


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def racy_table() -> pa.Table:
    """Two threads write the same 4 bytes: one waw."""
    return make_table(
        dict(
            ts=[0, 1],
            op=["write", "write"],
            launch=0,
            block=0,
            thread=[0, 1],
            addr=16,
            size=4,
            site=[0, 1],
        ),
        sites=["k.cu:5", "k.cu:9"],
    )


def with_metadata(path: Path, table: pa.Table, **changes: str) -> str:
    """``table`` written to ``path`` with metadata keys (dots as ``__``) replaced."""
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
    meta.update({k.replace("__", "."): v for k, v in changes.items()})
    table = table.replace_schema_metadata(meta)
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)
    return str(path)


def assert_bad_input(result, rule: str) -> str:
    """Exit 2 with one line naming ``rule``, no traceback; the line."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracerace: error: "), result.stderr
    assert f": {rule}: " in lines[0], lines[0]
    return lines[0]


def every_command(path: str, tmp_path: Path):
    """Each way a trace is read: (name, CLI result)."""
    for engine in ENGINES:
        yield f"check {engine}", cli("check", path, "--engine", engine, "--no-progress")
    for fmt in ("html", "arrow"):
        out = tmp_path / f"report.{SUFFIX[fmt]}"
        yield f"check {fmt}", cli("check", path, "--format", fmt, "-o", str(out), "--no-progress")
    yield "validate", cli("validate", path)
    yield "info", cli("info", path)


# -- metadata ------------------------------------------------------------------------------

NESTED = "[" * 100_000 + "]" * 100_000


def buffers(**entry) -> str:
    return json.dumps([dict(dict(name="x", space=0, base=0, shape=[4], itemsize=4), **entry)])


BAD_METADATA = {
    # name: (metadata changes, the rule the error names)
    "nested-sites": (dict(tracerace__sites=NESTED), "json-too-deep"),
    "nested-buffers": (dict(tracerace__buffers=NESTED), "json-too-deep"),
    "nested-launches": (dict(tracerace__launches=NESTED), "json-too-deep"),
    "nested-warnings": (dict(tracerace__warnings=NESTED), "json-too-deep"),
    "huge-launches": (
        dict(tracerace__launches="[" + " " * limits.MAX_JSON_BYTES + "]"),
        "json-too-large",
    ),
    "version-of-5000-digits": (dict(tracerace__version="1" * 5000), "version"),
    "version-of-other-digits": (dict(tracerace__version="\u00b2"), "version"),
    "buffer-base-2^70": (dict(tracerace__buffers=buffers(base=1 << 70)), "buffer-limit"),
    "buffer-itemsize-2^70": (dict(tracerace__buffers=buffers(itemsize=1 << 70)), "buffer-limit"),
    "buffer-shape-2^70": (dict(tracerace__buffers=buffers(shape=[1 << 70])), "buffer-limit"),
    "buffer-strides-2^63": (
        dict(tracerace__buffers=buffers(shape=[4, 4], strides=[1 << 63, 1])),
        "buffer-limit",
    ),
    "buffer-100001-dims": (dict(tracerace__buffers=buffers(shape=[1] * 100_001)), "buffer-limit"),
    "buffer-past-2^64": (
        dict(tracerace__buffers=buffers(base=(1 << 64) - 8, shape=[4])),
        "buffer-limit",
    ),
}


@pytest.mark.parametrize("case", list(BAD_METADATA))
def test_bad_metadata_is_one_line_everywhere(tmp_path, case):
    changes, rule = BAD_METADATA[case]
    path = with_metadata(tmp_path / "t.arrow", racy_table(), **changes)
    for name, result in every_command(path, tmp_path):
        line = assert_bad_input(result, rule)
        assert len(line) < 400, (name, line)


def test_a_buffer_that_ends_at_the_last_byte_is_read(tmp_path):
    path = with_metadata(
        tmp_path / "t.arrow",
        racy_table(),
        tracerace__buffers=buffers(base=(1 << 64) - 16, shape=[2, 2], itemsize=4),
        tracerace__version="0001",
    )
    assert cli("validate", path).exit_code == 0
    assert (
        cli(
            "check", path, "--format", "arrow", "-o", str(tmp_path / "r.arrow"), "--no-progress"
        ).exit_code
        == 1
    )


def test_the_gpu_imports_kernels_key_nested_deep_is_ignored(tmp_path):
    """``tracerace.kernels`` belongs to the GPU import; a damaged one names nothing."""
    path = with_metadata(tmp_path / "t.arrow", racy_table(), tracerace__kernels=NESTED)
    for name, result in every_command(path, tmp_path):
        assert result.exit_code in (0, 1), (name, result.output)


def test_load_json_bounds_depth_and_size():
    assert load_json("[" * 64 + "]" * 64) is not None
    with pytest.raises(JSONLimitError) as err:
        load_json("[" * 65 + "]" * 65)
    assert err.value.rule == "json-too-deep"
    assert load_json(json.dumps(["[" * 1000, '{\\"[['])) == ["[" * 1000, '{\\"[[']
    assert load_json(b'{"a": [1]}') == {"a": [1]}
    with pytest.raises(JSONLimitError) as err:
        load_json("[1, 2]", max_bytes=5)
    assert err.value.rule == "json-too-large"
    with pytest.raises(JSONLimitError):
        load_json("\u00e9" * 4, max_bytes=7)  # 4 characters, 8 bytes
    with pytest.raises(ValueError):
        load_json("[1,")
    assert json_depth('{"a": [[1]], "b": "]]]]"}') == 3


# -- values that overflow ----------------------------------------------------------------------
# (signal and transaction counts, warp_sync arg=-1: tests/test_badinput.py, both checkers)


def count_trace(path: Path) -> str:
    write_table(
        path,
        dict(
            ts=[0, 1, 2],
            op=["signal", "signal", "wait"],
            launch=0,
            block=0,
            thread=[0, 0, 1],
            obj=5,
            arg=[1 << 62, 1 << 62, 0],
        ),
    )
    return str(path)


@pytest.mark.parametrize("engine", ENGINES)
def test_signal_counts_past_int64_are_bad_input_from_the_command_line(tmp_path, engine):
    result = cli("check", count_trace(tmp_path / "t.arrow"), "--engine", engine, "--no-progress")
    line = assert_bad_input(result, "count-overflow")
    assert ": row 1: " in line


# -- damaged compressed buffers ----------------------------------------------------------------


def lz4_trace(path: Path, *, stream: bool, claim: int) -> str:
    """A small LZ4 trace whose first compressed buffer (column ``ts``) claims
    ``claim`` bytes uncompressed."""
    n = 64
    table = make_table(
        dict(
            ts=np.arange(n),
            op=["write"] * n,
            launch=0,
            block=0,
            thread=np.arange(n),
            addr=np.arange(n) * 4,
            size=4,
        )
    )
    options = ipc.IpcWriteOptions(compression="lz4")
    sink = pa.BufferOutputStream()
    opener = ipc.new_stream if stream else ipc.new_file
    with opener(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    data = bytearray(sink.getvalue().to_pybytes())
    frame = data.index(bytes.fromhex("04224d18"))  # the first LZ4 frame: ts's values
    data[frame - 8 : frame] = struct.pack("<q", claim)
    path.write_bytes(bytes(data))
    return str(path)


_UNDER_A_LIMIT = textwrap.dedent("""
    import resource, sys
    sys.path.insert(0, {root!r})
    {before}
    size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
                if line.startswith("VmSize:"))
    limit = size + ({extra_mib} << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    {after}
""")


def run_limited(extra_mib: int, before: str, after: str) -> subprocess.CompletedProcess:
    """Python ``before``, then ``after`` under an address-space limit
    ``extra_mib`` above what the interpreter took by then (each one line)."""
    script = _UNDER_A_LIMIT.format(root=str(ROOT), extra_mib=extra_mib, before=before, after=after)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=600
    )


def under_a_limit(extra_mib: int, *args: str) -> subprocess.CompletedProcess:
    """The command line run with an address-space limit ``extra_mib`` above what
    the interpreter and the loaded kernels take."""
    kernels_loaded = (
        "from tracerace import api; from tracerace.trace.writer import make_table; "
        'api.check(make_table({"ts": [0, 1], "op": ["write", "read"], "launch": 0, '
        '"block": 0, "thread": [0, 1], "addr": 0, "size": 4}))'
    )
    cli = f"from tracerace.cli import main; sys.argv = ['tracerace', *{list(args)!r}]; main()"
    return run_limited(extra_mib, kernels_loaded, cli)


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_a_buffer_claiming_a_terabyte_names_the_buffer_not_out_of_memory(tmp_path, stream):
    path = lz4_trace(tmp_path / ("t.arrows" if stream else "t.arrow"), stream=stream, claim=1 << 40)
    out = under_a_limit(512, "check", path, "--no-progress")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert (
        ": damaged-buffer: record batch 0, column 'ts': a compressed buffer claims "
        "1,099,511,627,776 bytes" in lines[0]
    )


def test_without_a_limit_the_claim_is_a_damaged_column(tmp_path):
    """Where the allocation succeeds, decompression finds too few bytes: the
    error names the column too."""
    path = lz4_trace(tmp_path / "t.arrow", stream=False, claim=1 << 20)
    line = assert_bad_input(cli("check", path, "--no-progress"), "not-arrow")
    assert "cannot read column 'ts' of record batch 0" in line


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_on_a_filesystem_a_buffer_claiming_a_terabyte_names_the_buffer(tmp_path, stream):
    """A trace an object store holds (``open_filesystem_trace``, a Dask
    worker's reader) gets the same bound as a local file: its size."""
    path = lz4_trace(tmp_path / "t", stream=stream, claim=1 << 40)
    imports = (
        "import pyarrow.fs as pafs; from tracerace.errors import TraceError; "
        "from tracerace.trace.reader import open_filesystem_trace"
    )
    read = (
        "try: list(open_filesystem_trace(pafs.LocalFileSystem(), "
        f"{path!r}, name='s3://b/t'))\nexcept TraceError as err: print(err)"
    )
    out = run_limited(512, imports, read)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.stdout.startswith("s3://b/t: row 0: damaged-buffer: record batch 0, column 'ts': ")
    assert "claims 1,099,511,627,776 bytes" in out.stdout


def test_on_a_filesystem_a_damaged_column_is_named(tmp_path):
    import pyarrow.fs as pafs

    from tracerace.trace.reader import open_filesystem_trace

    path = lz4_trace(tmp_path / "t", stream=False, claim=1 << 20)
    with pytest.raises(TraceError) as err:
        with open_filesystem_trace(pafs.LocalFileSystem(), path, name="s3://b/t") as reader:
            list(reader)
    assert (err.value.path, err.value.rule, err.value.row) == ("s3://b/t", "not-arrow", 0)
    assert "cannot read column 'ts' of record batch 0" in str(err.value)


# -- memory and time bounded by the content ------------------------------------------------------


def one_row_records(path: Path, n: int) -> str:
    table = make_table(
        dict(
            ts=np.arange(n),
            op=np.ones(n, np.uint8),
            launch=0,
            block=0,
            thread=np.arange(n) % 64,
            addr=(np.arange(n) % 64) * 4,
            size=4,
        )
    )
    with ipc.new_stream(str(path), table.schema) as writer:
        for record in table.to_batches(max_chunksize=1):
            writer.write_batch(record)
    return str(path)


def test_a_million_launch_entries_are_refused_before_they_are_parsed(tmp_path):
    """Parsing them ran out of memory under this limit; their JSON is refused by size."""
    entries = ",".join(
        f'{{"launch": {i}, "grid": [1, 1, 1], "block": [2, 1, 1]}}' for i in range(1_000_000)
    )
    path = with_metadata(tmp_path / "t.arrow", racy_table(), tracerace__launches=f"[{entries}]")
    out = under_a_limit(512, "validate", path)
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.count("\n") == 1 and ": json-too-large: tracerace.launches: " in out.stderr


def test_a_launch_does_not_cost_the_agents_of_the_widest_launch_before_it():
    """Each launch remade the joins' scratch arrays at the size of the agent
    table, so after a wide launch every later launch cost that launch's agents.
    The scratch is all -1 after every join, so it is kept."""
    st = EngineState()
    for _ in range(6):
        st.grow(GR_AGENTS)
    scratch, touched = st.scratch, st.touched
    assert scratch.shape[0] >= 1 << 14
    for launch in range(3):
        st.reset_launch(launch)
        assert st.scratch is scratch and st.touched is touched
    assert (scratch == -1).all()


def test_a_stream_of_one_row_records_is_read_in_bounded_memory(tmp_path):
    """All the records of a batch were glued at once, and Arrow died in
    ``std::bad_alloc`` under this limit. Now they are glued 1024 at a time."""
    path = one_row_records(tmp_path / "t.arrows", 50_000)
    out = under_a_limit(256, "check", path, "--no-progress")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "no hazards in 50,000 events" in out.stdout + out.stderr


def huge_accesses(path: Path) -> str:
    """Eight threads write 2^32-1 bytes each, every write overlapping the next
    by half; a read of 2^32-1 bytes no one wrote; an init of 2^32-1 bytes
    and a read of them; a read over the first writes."""
    n = (1 << 32) - 1
    base = 1 << 40
    table = make_table(
        dict(
            ts=np.arange(12),
            op=["write"] * 8 + ["read", "init", "read", "read"],
            launch=0,
            block=0,
            thread=list(range(8)) + [8] * 4,
            addr=[base + k * (1 << 31) + k for k in range(8)]
            + [1 << 44, 1 << 45, 1 << 45, base + 100],
            size=n,
        )
    )
    write_table(str(path), table)
    return str(path)


def test_huge_accesses_cost_their_boundaries_not_their_bytes(tmp_path):
    """Each 4 KiB page these accesses cover cost a slot and a node: eight
    writes of 2^32-1 bytes took gigabytes. Now a run of pages is one record,
    cut where another access needs part of it."""
    path = huge_accesses(tmp_path / "t.arrow")
    started = time.monotonic()
    out = under_a_limit(256, "check", path, "--no-progress")
    took = time.monotonic() - started
    assert out.returncode == 1, out.stderr[-2000:]
    report = out.stdout + out.stderr
    assert "error waw: 7 hazards" in report
    assert "error uninit_read: 1 hazard" in report
    assert "global 0x100000000000..0x1000ffffffff" in report  # the unwritten read, whole
    assert "global 0x200000000000" not in report  # the init covered its read
    assert "error raw: 1 hazard" in report
    assert took < 120, took


# -- fuzzing -------------------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "space",
                    "base",
                    "shape",
                    "itemsize",
                    "strides",
                    "launch",
                    "grid",
                    "block",
                    "kernel",
                ]
            ),
            inner,
            max_size=6,
        )
    ),
    max_leaves=12,
)


def _metadata_value(key: str):
    texts = st.text(max_size=20)
    nested = st.integers(1, 300).map(lambda d: "[" * d + "]" * d)
    if key == "tracerace.version":
        return st.sampled_from(["1", "0", "2", "01", " 1 ", "1" * 40, "", "x", "\u0661"]) | texts
    json_text = _JSON.map(json.dumps)
    if key == "tracerace.buffers":
        entry = st.fixed_dictionaries(
            {
                "name": st.text(min_size=1, max_size=4),
                "space": st.integers(-1, 3),
                "base": st.integers(-1, 1 << 65),
                "itemsize": st.integers(0, 1 << 33),
                "shape": st.lists(st.integers(0, 1 << 64), max_size=40),
            },
            optional={
                "strides": st.lists(st.integers(0, 1 << 64), max_size=4),
                "launch": st.integers(-1, 3) | st.none(),
            },
        )
        json_text = json_text | st.lists(entry, max_size=3).map(json.dumps)
    if key == "tracerace.launches":
        dims = st.lists(st.integers(-1, 1 << 40), min_size=0, max_size=4)
        entry = st.fixed_dictionaries({"launch": st.integers(-1, 3), "grid": dims, "block": dims})
        json_text = json_text | st.lists(entry, max_size=3).map(json.dumps)
    return json_text | nested | texts


_KEYS = [
    "tracerace.sites",
    "tracerace.buffers",
    "tracerace.launches",
    "tracerace.warnings",
    "tracerace.kernels",
    "tracerace.producer",
]


@st.composite
def metadata(draw) -> dict[str, str]:
    meta = {"tracerace.version": draw(st.just("1") | _metadata_value("tracerace.version"))}
    for key in _KEYS:
        if draw(st.booleans()):
            meta[key] = draw(_metadata_value(key))
    return meta


@st.composite
def columns(draw) -> dict[str, np.ndarray]:
    """Every v1 column, values drawn over the whole of each column's type, with
    the small values that make a trace mostly valid drawn more often."""
    n = draw(st.integers(1, 12))
    out = {}
    for col in COLUMNS:
        info = np.iinfo(col.dtype)
        edge = st.sampled_from(
            [info.min, info.max, info.max - 1, 0, 1 << 31, (1 << 31) - 1]
            if info.max > (1 << 31)
            else [info.min, info.max, 0]
        )
        small = st.integers(max(info.min, 0), min(info.max, 70))
        if col.name == "ts":
            values = sorted(draw(st.lists(small | edge, min_size=n, max_size=n)))
        elif col.name == "op":
            values = draw(
                st.lists(st.sampled_from([int(op) for op in Op]) | small, min_size=n, max_size=n)
            )
        else:
            values = draw(st.lists(small | small | edge, min_size=n, max_size=n))
        out[col.name] = np.array(values, dtype=col.dtype)
    return out


def fuzz_trace(path: Path, meta: dict[str, str], cols: dict[str, np.ndarray]) -> str:
    schema = pa.schema([(c.name, c.arrow_type) for c in COLUMNS], metadata=meta)
    table = pa.table({c.name: pa.array(cols[c.name], c.arrow_type) for c in COLUMNS}, schema=schema)
    with ipc.new_file(str(path), schema) as writer:
        writer.write_table(table)
    return str(path)


def assert_report_or_one_line(name: str, result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        name,
        repr(result.exception),
    )
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tracerace: error: "), (name, result.stderr)
    else:
        assert result.exit_code in (0, 1), (name, result.output)


def fuzz_once(tmp_path: Path, meta: dict[str, str], cols: dict[str, np.ndarray]) -> None:
    path = fuzz_trace(tmp_path / "fuzz.arrow", meta, cols)
    outcomes = {}
    for name, result in every_command(path, tmp_path):
        assert_report_or_one_line(name, result)
        outcomes[name] = result.exit_code
    # The two checkers agree on whether the trace is bad input or racy.
    assert outcomes["check numba"] == outcomes["check reference"], outcomes


FUZZ = dict(
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


@settings(max_examples=25, **FUZZ)
@given(meta=metadata(), cols=columns())
def test_fuzzed_traces_give_a_report_or_one_line(tmp_path, meta, cols):
    fuzz_once(tmp_path, meta, cols)


@pytest.mark.scale
@settings(max_examples=max(25, int(400 * SCALE)), **FUZZ)
@given(meta=metadata(), cols=columns())
def test_fuzzed_traces_give_a_report_or_one_line_at_scale(tmp_path, meta, cols):
    fuzz_once(tmp_path, meta, cols)


def _distinct_reads(n):  # a node each
    return dict(op=["read"] * n, thread=np.arange(n) % 64, addr=8 * np.arange(n, dtype=np.uint64))


def _one_barrier_each(n):  # one-thread barriers, each of its own obj: a slot each
    return dict(op=["bar_sync"] * n, thread=0, obj=np.arange(n), arg=1)


def _a_thread_each(n):  # an agent each
    return dict(op=["read"] * n, thread=np.arange(n), addr=0)


@pytest.mark.parametrize(
    "bound, limit, events",
    [
        # a granule slot holds its lists' heads in 32 bits
        ("NODES_MAX", (1 << 15) - 1, _distinct_reads),
        # a thread's barrier position names its barrier by a slot of the
        # launch's barrier table (whose starting rows are 2^8)
        ("GENS_MAX", 1 << 8, _one_barrier_each),
        # a node holds its agent in 32 bits
        ("AGENTS_MAX", 1 << 12, _a_thread_each),
    ],
)
def test_more_than_a_packed_field_can_name_is_out_of_memory(monkeypatch, bound, limit, events):
    """A check that would need more nodes, barrier slots or agents than the
    engine's packed fields can name stops as out of memory, never wraps a
    field around; the same trace passes under the real bound."""
    import tracerace.checker.engine.state as state
    from tracerace import api
    from tracerace.trace.writer import make_table

    monkeypatch.setattr(state, bound, limit)
    n = 2 * (limit + 1)
    table = make_table(dict(ts=np.arange(n), launch=0, block=0, size=4, **events(n)))
    with pytest.raises(TraceError) as err:
        api.check(table, jobs=1)
    assert err.value.rule == "out-of-memory"
    monkeypatch.undo()
    assert api.check(table, jobs=1).events == n
