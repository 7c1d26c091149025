"""What the recorder backends share: the backend interface and its registry,
site interning, the native build, and running a native program under a tool."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracerace.errors import TraceError
from tracerace.record import BACKENDS, build, interface, load_backend
from tracerace.record.cuda import build as cuda_build
from tracerace.record.events import Rows
from tracerace.record.sites import SiteIndex
from tracerace.record.tool import run_tool
from tracerace.trace.ops import Op

# --- the interface -------------------------------------------------------------------


@pytest.mark.parametrize("name", BACKENDS)
def test_every_backend_provides_the_interface(name):
    backend = load_backend(name)
    assert isinstance(backend, interface.Backend) and backend.name == name
    assert backend.default_schedule in backend.schedules


def test_an_unknown_backend_is_a_usage_error():
    with pytest.raises(TraceError) as err:
        load_backend("vulkan")
    assert err.value.rule == "usage" and "numba, oclgrind, triton, cuda" in str(err.value)


@pytest.mark.parametrize(
    "name,schedule,words",
    [
        (
            "oclgrind",
            "random",
            "the oclgrind backend runs Oclgrind's own schedule; --schedule "
            "random is not available (use serial)",
        ),
        (
            "cuda",
            "round-robin",
            "the cuda backend records the GPU's own schedule; --schedule "
            "round-robin is not available (use serial)",
        ),
        (
            "triton",
            "round-robin",
            "the triton backend has the schedules serial and random; "
            "--schedule round-robin is not one of them",
        ),
    ],
)
def test_a_schedule_a_backend_cannot_record_is_refused(name, schedule, words):
    backend = load_backend(name)
    with pytest.raises(TraceError) as err:
        backend.record(["python", "x.py"], "x.arrow", schedule=schedule)
    assert err.value.rule == "usage" and err.value.message == words


def test_numba_records_every_schedule():
    backend = load_backend("numba")
    for schedule in ("serial", "round-robin", "random"):
        backend.check_schedule(schedule)


def test_the_native_backends_check_their_tools(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-toolkit"))
    monkeypatch.setenv("PATH", str(tmp_path))
    for name, words in (("cuda", "holds no bin/nvcc"), ("oclgrind", "Oclgrind is not installed")):
        with pytest.raises(TraceError) as err:
            load_backend(name).check_installed()
        assert err.value.rule == "missing-tool" and words in err.value.message


def test_missing_modules_name_their_packages():
    interface.require_modules("numba", {"sys": "python"}, "hint")
    with pytest.raises(TraceError) as err:
        interface.require_modules(
            "toy",
            {"no_such_module_xyz": "no-such", "sys": "python", "no_such_either": "either"},
            "pip install toy",
        )
    assert err.value.rule == "setup"
    assert err.value.message == "the toy backend needs no-such and either: pip install toy"


# --- site interning ------------------------------------------------------------------


def interned_by_scanning(texts: list[str], added: list[str]) -> list[int]:
    """The ids a list scan gives: the first occurrence, appended when new."""
    texts = list(texts)
    ids = []
    for text in added:
        if text not in texts:
            texts.append(text)
        ids.append(texts.index(text))
    return ids


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from("abcdef"), max_size=8),
    st.lists(st.sampled_from("abcdefgh"), max_size=30),
)
def test_site_ids_are_those_of_a_list_scan(seed, added):
    """Also when the starting table names a text twice (a side table may)."""
    texts = list(seed)
    index = SiteIndex(texts)
    assert [index.add(t) for t in added] == interned_by_scanning(seed, added)
    assert index.texts is texts and texts[: len(seed)] == seed
    assert texts[len(seed) :] == [t for t in dict.fromkeys(added) if t not in seed]


class _CountingList(list):
    """A list that counts the times it is searched or walked."""

    scans = 0

    def __contains__(self, item):
        self.scans += 1
        return super().__contains__(item)

    def index(self, *args):
        self.scans += 1
        return super().index(*args)

    def __iter__(self):
        self.scans += 1
        return super().__iter__()


def test_interning_does_not_search_the_table():
    texts = _CountingList(f"k.cl:{i}" for i in range(1000))
    index = SiteIndex(texts)
    texts.scans = 0
    ids = [index.add(f"k.cl:{i}") for i in range(0, 2000, 3)]
    assert texts.scans == 0
    assert ids[:3] == [0, 3, 6] and index.text(ids[-1]) == "k.cl:1998"


def test_keyed_sites_ask_for_their_text_once():
    index = SiteIndex()
    asked = []

    def text(pc: int):
        return lambda: asked.append(pc) or f"kernel+0x{pc:x}"

    assert [index.of((0, pc), text(pc)) for pc in (16, 32, 16, 16)] == [0, 1, 0, 0]
    assert index.of((1, 16), text(16)) == 0  # another key, the same text
    assert asked == [16, 32, 16] and len(index) == 2


def test_missing_arrivals_are_rows_in_thread_order():
    rows = Rows({"op": 0, "thread": 0, "arg": 0, "site": 0})
    rows.arrive(7, {5, 2, 9}, arg=3, site=4)
    assert rows.key == [7, 7, 7]
    assert rows.cols == {
        "op": [Op.BAR_ARRIVE] * 3,
        "thread": [2, 5, 9],
        "arg": [3] * 3,
        "site": [4] * 3,
    }


# --- the native build ----------------------------------------------------------------


def test_a_build_appears_whole_or_not_at_all(tmp_path):
    target = tmp_path / "cache" / "tool.so"
    ok = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write('built')", build.OUT]
    build.build(ok, target, lambda tail: TraceError(tail, path="x", rule="missing-tool"))
    assert target.read_text() == "built" and sorted(target.parent.iterdir()) == [target]
    bad = [
        sys.executable,
        "-c",
        "import sys; open(sys.argv[1], 'w').write('half'); sys.exit('error: no such header')",
        build.OUT,
    ]
    again = tmp_path / "cache" / "other.so"
    with pytest.raises(TraceError, match="error: no such header"):
        build.build(bad, again, lambda tail: TraceError(tail, path="x", rule="missing-tool"))
    assert sorted(target.parent.iterdir()) == [target]


def test_a_build_key_changes_with_the_file(tmp_path):
    lib = tmp_path / "lib.so"
    lib.write_bytes(b"1")
    before = build.stamp(str(lib))
    lib.write_bytes(b"22")
    assert build.stamp(str(lib)) != before and str(lib) in before


def test_the_cuda_tool_without_a_compiler_names_its_own_build(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CXX", raising=False)
    kit = cuda_build.Toolkit("nvcc", "inc", "san-inc", "san-lib")
    with pytest.raises(TraceError) as err:
        cuda_build.host_command(kit)
    assert err.value.path == "cuda backend" and err.value.rule == "missing-tool"
    assert "CUDA tool library" in err.value.message and "g++" in err.value.message


# --- a native program under a tool ---------------------------------------------------

PROGRAM = (
    "import os, sys; open(os.environ['TOY_OUT'] + '.log', 'w').write(sys.argv[1]); "
    "sys.exit(int(sys.argv[2]))"
)


def test_a_tool_run_converts_what_the_tool_wrote(tmp_path):
    seen = []

    def convert(folder: str, prefix: str):
        seen.append(Path(prefix + ".log").read_text())
        assert Path(prefix).parent == Path(folder)
        return 5, 1, ("a warning",)

    command = [sys.executable, "-c", PROGRAM, "hello", "0"]
    result = run_tool(
        command,
        str(tmp_path / "t.arrow"),
        command,
        output_env="TOY_OUT",
        under="under the toy tool",
        convert=convert,
    )
    assert seen == ["hello"]
    assert (result.events, result.launches, result.warnings) == (5, 1, ("a warning",))
    assert result.exit_code == 0 and result.seconds > 0


def test_a_failed_program_is_not_converted(tmp_path):
    command = [sys.executable, "-c", PROGRAM, "hello", "3"]
    with pytest.raises(TraceError) as err:
        run_tool(
            command,
            "t.arrow",
            command,
            output_env="TOY_OUT",
            under="under the toy tool",
            convert=lambda folder, prefix: pytest.fail("converted"),
        )
    assert err.value.rule == "program-failed"
    assert err.value.message.endswith(
        "exited with status 3 under the toy tool; nothing was written"
    )


def test_a_program_that_cannot_start_is_named(tmp_path):
    command = [str(tmp_path / "no-such-program")]
    with pytest.raises(TraceError) as err:
        run_tool(
            command,
            "t.arrow",
            ["toy-launcher", *command],
            shown=command,
            output_env="TOY_OUT",
            under="under the toy tool",
            convert=lambda folder, prefix: pytest.fail("converted"),
        )
    assert err.value.rule == "record" and err.value.path == command[0]
    assert err.value.message.startswith(f"cannot run {command[0]}: ")


# --- what a backend package imports --------------------------------------------------

RECORD = Path(__file__).parent.parent / "tracerace" / "record"


def test_a_backend_imports_no_other_backend():
    """A backend subpackage imports its own modules, the shared modules of
    ``record/`` and the earlier stages; never another backend's."""
    import ast

    backends = {p.name for p in RECORD.iterdir() if (p / "__init__.py").is_file()}
    assert backends == set(BACKENDS)
    found = []
    for name in sorted(backends):
        for path in sorted((RECORD / name).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ImportFrom) or node.level < 2:
                    continue
                target = (node.module or "").split(".")[0] if node.level == 2 else ""
                names = [a.name for a in node.names] if node.module is None else [target]
                if any(n in backends for n in names):
                    found.append(f"{path.relative_to(RECORD)}:{node.lineno}")
    assert found == []
