"""STD text traces: reading them into v1 traces and writing v1 traces as STD.

STD is the line format of CPU race-detection tools (RAPID and others), one
event per line::

    T0|w(V12)|34        thread T0 writes variable V12 at location 34
    T1|r(V12)|35        a read
    T1|acq(L1)|5        lock acquire / release
    T1|rel(L1)|6
    T0|fork(T2)|6       T0 starts thread T2
    T0|join(T2)|7       T0 waits for T2 to finish

Import (STD -> v1), line by line in replay order:

* thread ``T<n>`` -> the agent (launch 0, block 0, thread n);
* ``r``/``w`` -> a global ``read``/``write`` of 8 bytes at ``8 * n`` for
  variable ``V<n>`` (a buffer ``V`` is declared, so reports say ``V[12]``);
* ``acq``/``rel`` -> ``acquire``/``release`` on lock id ``n`` of ``L<n>``;
* ``fork(T<c>)`` -> a ``signal`` by the parent on flag ``FORK_FLAG + c``; the
  child ``wait`` s on it just before its first event;
* ``join(T<c>)`` -> the child ``signal`` s flag ``JOIN_FLAG + c`` and the
  parent ``wait`` s on it, both at the join line: the child's signal is its
  last event (it has no events after the join, which the importer checks)
  and comes before the parent's wait in replay order;
* the location becomes the row's site, ``loc:<location>``; ``ts`` is the
  line's index (extra rows share their line's ``ts``).

Names that are not ``T``/``V``/``L`` followed by a decimal number (without
leading zeros) are numbered in order of first appearance from a high base
(``NAMED_THREAD`` for threads, ``NAMED_ID`` for variables and locks).

Export (v1 -> STD) writes ``read``, ``write``, ``acquire`` and ``release``,
and the fork/join encoding above as ``fork``/``join`` lines; any other op is
an error naming its row. The trace must be one launch of block 0 (STD has no
launch order and no blocks). Variables: when every access is a global,
8-byte-aligned 8-byte word (what import writes), word ``k`` is ``V<k>``;
otherwise each distinct (space, owner, address, size) range is a variable,
numbered in order of first appearance, and two ranges that overlap without
being equal are an error. The location is the number in the row's site
(``loc:34`` or ``34``), else the site index, else the row number.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import TraceError
from ..trace import ops as O
from ..trace.outfile import OutputFile
from ..trace.reader import open_trace
from ..trace.schema import SITE_NONE
from ..trace.writer import TraceWriter

VAR_SIZE = 8
"""Bytes per STD variable: one aligned 8-byte global word."""
FORK_FLAG = 1 << 40
"""Flag ``FORK_FLAG + c``: the parent's fork of thread ``c`` (signal), the child's start (wait)."""
JOIN_FLAG = 2 << 40
"""Flag ``JOIN_FLAG + c``: the end of thread ``c`` (signal), the parent's join (wait)."""
FLAG_SPAN = 1 << 32
NAMED_THREAD = 1 << 31
"""First thread number given to a thread whose name is not ``T<n>`` (n below this)."""
NAMED_ID = 1 << 36
"""First number given to a variable or lock whose name is not ``V<n>`` / ``L<n>``."""

CHUNK_LINES = 1 << 20
READ_BYTES = 1 << 24
MAX_LINE_BYTES = 1 << 20
"""The longest STD line read (1 MiB); a longer one is an error, not a read without end."""

STD_OPS = ("r", "w", "acq", "rel", "fork", "join")
S_R, S_W, S_ACQ, S_REL, S_FORK, S_JOIN = range(6)
_V1_OF_STD = np.array([O.READ, O.WRITE, O.ACQUIRE, O.RELEASE, O.SIGNAL, O.WAIT], dtype=np.uint8)

_NAME = r"[^|\s()]+"
# Lines are trimmed first, and the op is any word here, checked against STD_OPS
# afterwards: an alternation of the six ops makes RE2 three times slower.
_LINE = (
    rf"^(?P<thread>{_NAME})\|(?P<op>[a-z]+)\((?P<obj>{_NAME})\)"
    rf"\|(?P<loc>-?\d{{1,18}})$"
)
_STD_OPS = pa.array(STD_OPS)
_SITE_LOC = re.compile(r"^(?:loc:)?(-?\d{1,18})$")


# --- STD -> v1 ------------------------------------------------------------------------


class _Names:
    """Numbers for one kind of STD name: ``<prefix><n>`` is n, anything else
    is numbered from ``named_base`` in order of first appearance."""

    def __init__(self, prefix: str, limit: int, named_base: int) -> None:
        self.pattern = rf"^{prefix}(?P<n>0|[1-9]\d{{0,17}})$"
        self.limit = limit
        self.named_base = named_base
        self.named: dict[str, int] = {}
        self.max_canonical = -1

    def ids(self, names: pa.Array) -> np.ndarray:
        if len(names) == 0:
            return np.zeros(0, dtype=np.int64)
        m = pc.extract_regex(names, self.pattern)
        ok = m.is_valid().to_numpy(zero_copy_only=False)
        out = np.full(len(names), -1, dtype=np.int64)
        if ok.any():
            digits = pc.struct_field(m.filter(pa.array(ok)), [0])
            values = pc.cast(digits, pa.int64()).to_numpy()
            small = values < self.limit
            idx = np.flatnonzero(ok)
            out[idx[small]] = values[small]
            ok[idx[~small]] = False  # too large to be a number here: a plain name
            if small.any():
                self.max_canonical = max(self.max_canonical, int(values[small].max()))
        if not ok.all():
            rest = np.flatnonzero(~ok)
            texts = names.take(pa.array(rest))
            uniq = pc.unique(texts)  # in order of first appearance
            numbers = []
            for text in uniq.to_pylist():
                number = self.named.get(text)
                if number is None:
                    number = self.named[text] = self.named_base + len(self.named)
                numbers.append(number)
            out[rest] = np.asarray(numbers, dtype=np.int64)[
                pc.index_in(texts, value_set=uniq).to_numpy()
            ]
        return out


class _StdImporter:
    """State of one STD import: names, sites, and who has started, been forked, ended."""

    def __init__(self, path: str, writer: TraceWriter) -> None:
        self.path = path
        self.writer = writer
        self.threads = _Names("T", NAMED_THREAD, NAMED_THREAD)
        self.vars = _Names("V", NAMED_ID, NAMED_ID)
        self.locks = _Names("L", NAMED_ID, NAMED_ID)
        self.sites: dict[int, int] = {}
        self.started: set[int] = set()
        self.forked: dict[int, int] = {}  # child -> line of its fork, until it starts
        self.ended: dict[int, int] = {}  # child -> line of its join
        self.ever_forked: dict[int, int] = {}
        self.lines = 0
        self.rows = 0

    def error(self, lineno: int, message: str, rule: str = "std-syntax") -> TraceError:
        return TraceError(message, path=f"{self.path}:{lineno}", rule=rule)

    def tname(self, t: int) -> str:
        for name, number in self.threads.named.items():
            if number == t:
                return name
        return f"T{t}"

    # -- one chunk of lines --

    def chunk(self, lines: list[str], first_lineno: int) -> None:
        arr = pc.utf8_trim_whitespace(pa.array(lines, pa.string()))
        m = pc.extract_regex(arr, _LINE)
        op_all = pc.index_in(m.field("op"), value_set=_STD_OPS)
        valid = m.is_valid().to_numpy(zero_copy_only=False) & op_all.is_valid().to_numpy(
            zero_copy_only=False
        )
        if not valid.all():
            blank = pc.equal(pc.utf8_length(arr), 0).to_numpy(zero_copy_only=False)
            bad = ~valid & ~blank
            if bad.any():
                i = int(np.argmax(bad))
                raise self.error(first_lineno + i, _diagnose(lines[i]))
            keep = np.flatnonzero(valid)
            m = m.filter(pa.array(valid))
            op_all = op_all.filter(pa.array(valid))
        else:
            keep = np.arange(len(lines))
        n = len(keep)
        if n == 0:
            return
        lineno = first_lineno + keep
        thread_s, _, obj_s, loc_s = (m.field(i) for i in range(4))
        op = op_all.to_numpy().astype(np.int64)
        tid = self.threads.ids(thread_s)
        loc = pc.cast(loc_s, pa.int64()).to_numpy()
        obj = np.zeros(n, dtype=np.int64)
        for kinds, names in (
            ((S_R, S_W), self.vars),
            ((S_ACQ, S_REL), self.locks),
            ((S_FORK, S_JOIN), self.threads),
        ):
            rows = np.flatnonzero(np.isin(op, kinds))
            if len(rows):
                obj[rows] = names.ids(obj_s.take(pa.array(rows)))

        site = self.site_ids(loc)
        ts = (lineno - 1).astype(np.uint64)
        base = {
            "op": _V1_OF_STD[op],
            "thread": tid.astype(np.uint32),
            "site": site,
            "ts": ts,
            "addr": np.where(op <= S_W, obj * VAR_SIZE, 0).astype(np.uint64),
            "size": np.where(op <= S_W, VAR_SIZE, 0).astype(np.uint32),
            "obj": np.select(
                [(op == S_ACQ) | (op == S_REL), op == S_FORK, op == S_JOIN],
                [obj, FORK_FLAG + obj, JOIN_FLAG + obj],
                0,
            ).astype(np.uint64),
            "arg": np.where(op >= S_FORK, 1, 0).astype(np.int64),
        }
        extras: list[tuple[int, int, int, int]] = []  # (position, op, thread, obj)
        special = np.flatnonzero(op >= S_FORK)
        lo = 0
        for s in special.tolist() + [n]:
            self.segment(tid, lineno, lo, s, extras)
            if s < n:
                self.fork_join(int(op[s]), int(tid[s]), int(obj[s]), int(lineno[s]), s, extras)
            lo = s + 1
        cols = _merge(base, extras)
        self.writer.extend(launch=0, block=0, **cols)
        self.rows += len(cols["op"])

    def segment(self, tid, lineno, lo: int, hi: int, extras: list) -> None:
        """Rows lo..hi-1 hold no fork or join: the thread states are constant."""
        if lo >= hi:
            return
        th = tid[lo:hi]
        uniq, first = np.unique(th, return_index=True)
        if self.ended:
            done = np.isin(th, np.fromiter(self.ended, dtype=np.int64))
            if done.any():
                i = int(np.argmax(done))
                t = int(th[i])
                raise self.error(
                    int(lineno[lo + i]),
                    f"event of {self.tname(t)} after join({self.tname(t)}) at line {self.ended[t]}",
                    "std-after-join",
                )
        if self.forked:
            for t, f in zip(uniq.tolist(), first.tolist()):
                if t in self.forked:
                    del self.forked[t]
                    extras.append((lo + f, O.WAIT, t, FORK_FLAG + t))
        self.started.update(uniq.tolist())

    def fork_join(self, op: int, p: int, c: int, lineno: int, pos: int, extras: list) -> None:
        """A fork or join line by thread ``p`` naming child ``c`` (the row at ``pos``)."""
        what = f"{STD_OPS[op]}({self.tname(c)})"
        if p in self.ended:
            raise self.error(
                lineno,
                f"event of {self.tname(p)} after join({self.tname(p)}) at line {self.ended[p]}",
                "std-after-join",
            )
        if p in self.forked:
            del self.forked[p]
            extras.append((pos, O.WAIT, p, FORK_FLAG + p))
        self.started.add(p)
        if c == p:
            raise self.error(
                lineno, f"{self.tname(p)}: {what} names the thread itself", "std-fork-join"
            )
        if op == S_FORK:
            if c in self.ever_forked:
                raise self.error(
                    lineno,
                    f"{what}: {self.tname(c)} was already forked at line {self.ever_forked[c]}",
                    "std-fork-join",
                )
            if c in self.started or c in self.ended:
                raise self.error(
                    lineno, f"{what}: {self.tname(c)} has already run", "std-fork-join"
                )
            self.forked[c] = self.ever_forked[c] = lineno
        else:
            if c in self.ended:
                raise self.error(
                    lineno,
                    f"{what}: {self.tname(c)} was already joined at line {self.ended[c]}",
                    "std-fork-join",
                )
            if c in self.forked:
                del self.forked[c]
                extras.append((pos, O.WAIT, c, FORK_FLAG + c))
            extras.append((pos, O.SIGNAL, c, JOIN_FLAG + c))
            self.ended[c] = lineno
            self.started.add(c)

    def site_ids(self, loc: np.ndarray) -> np.ndarray:
        uniq, inverse = np.unique(loc, return_inverse=True)
        ids = np.empty(len(uniq), dtype=np.uint32)
        for i, value in enumerate(uniq.tolist()):
            site = self.sites.get(value)
            if site is None:
                site = self.sites[value] = self.writer.site(f"loc:{value}")
            ids[i] = site
        return ids[inverse]


def _merge(base: dict, extras: list) -> dict:
    """Base rows with the extra rows inserted before their positions (in order)."""
    if not extras:
        return base
    n = len(base["op"])
    pos = np.array([e[0] for e in extras], dtype=np.int64)
    extra = {
        "op": np.array([e[1] for e in extras], dtype=np.uint8),
        "thread": np.array([e[2] for e in extras], dtype=np.uint32),
        "obj": np.array([e[3] for e in extras], dtype=np.uint64),
        "arg": np.ones(len(extras), dtype=np.int64),
        "addr": np.zeros(len(extras), dtype=np.uint64),
        "size": np.zeros(len(extras), dtype=np.uint32),
        "site": base["site"][pos],
        "ts": base["ts"][pos],
    }
    key = np.concatenate([2 * np.arange(n) + 1, 2 * pos])
    order = np.argsort(key, kind="stable")
    return {name: np.concatenate([base[name], extra[name]])[order] for name in base}


def _diagnose(line: str) -> str:
    """Why an STD line does not parse, in words."""
    text = line.strip()
    shown = text if len(text) <= 60 else text[:57] + "..."
    parts = text.split("|")
    expect = "expected THREAD|OP(OBJECT)|LOCATION, e.g. T0|w(V12)|34"
    if len(parts) != 3:
        return f"{shown!r}: {expect}"
    thread, event, loc = parts
    if not re.fullmatch(_NAME, thread):
        return f"{shown!r}: bad thread name {thread!r}; {expect}"
    m = re.fullmatch(rf"(\w*)\(({_NAME})\)", event)
    if m is None:
        return f"{shown!r}: bad event {event!r}; {expect}"
    if m.group(1) not in STD_OPS:
        return f"{shown!r}: unknown operation {m.group(1)!r} (known: {', '.join(STD_OPS)})"
    if not re.fullmatch(r"-?\d+", loc):
        return f"{shown!r}: location {loc!r} is not an integer"
    return f"{shown!r}: location {loc} is too large (at most 18 digits)"


def _std_lines(path: str):
    """(lines, number of the first) in chunks of about ``CHUNK_LINES`` lines."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise TraceError("no such file", path=path, rule="no-such-file") from None
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror}", path=path, rule="unreadable") from None
    lineno = 1
    rest = b""
    with f:
        while True:
            data = f.read(READ_BYTES)
            if not data:
                break
            data = rest + data
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                if len(rest) > MAX_LINE_BYTES:
                    raise TraceError(
                        f"line {lineno}: longer than {MAX_LINE_BYTES >> 20} MiB "
                        f"(an STD line is one event)",
                        path=path,
                        rule="line-too-long",
                    )
                continue
            rest = data[cut + 1 :]
            lines = data[:cut].decode("utf-8", errors="replace").split("\n")
            for i in range(0, len(lines), CHUNK_LINES):
                part = lines[i : i + CHUNK_LINES]
                yield part, lineno
                lineno += len(part)
        if rest:
            yield [rest.decode("utf-8", errors="replace")], lineno


def import_std(src: str, dst: str, *, compression: str | None = None) -> tuple[int, int]:
    """STD text ``src`` -> v1 trace ``dst`` (see the module doc for the mapping):
    (lines read, rows written)."""
    with TraceWriter(
        dst, compression=compression, producer="tracerace convert (STD)", batch_size=1 << 20
    ) as writer:
        imp = _StdImporter(src, writer)
        for lines, first in _std_lines(src):
            imp.chunk(lines, first)
            imp.lines = first + len(lines) - 1
        if imp.rows == 0:
            raise TraceError(
                "no events: the file is empty or blank (an STD trace has one event per line)",
                path=src,
                rule="empty",
            )
        if imp.vars.max_canonical >= 0:
            writer.buffer("V", O.SPACE_GLOBAL, 0, (imp.vars.max_canonical + 1,), VAR_SIZE)
    return imp.lines, imp.rows


# --- v1 -> STD ------------------------------------------------------------------------

_STD_OF_V1 = {O.READ: S_R, O.WRITE: S_W, O.ACQUIRE: S_ACQ, O.RELEASE: S_REL}
_EXPORTABLE = np.zeros(256, dtype=bool)
_EXPORTABLE[[O.READ, O.WRITE, O.ACQUIRE, O.RELEASE, O.SIGNAL, O.WAIT]] = True


class _ExportPlan:
    """First pass of an export: check every row has an STD equivalent and name the variables."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.launch: int | None = None
        self.canonical = True
        self.ranges: dict[tuple, tuple[int, int]] = {}  # (space, owner, addr, size) -> (row, id)
        self.seen: set[int] = set()
        self.ended: dict[int, int] = {}  # thread -> row of its join signal

    def error(self, row: int, message: str, rule: str = "no-std-equivalent") -> TraceError:
        return TraceError(message, path=self.path, row=row, rule=rule)

    def batch(self, b) -> None:
        c = b.cols
        op, th = c["op"], c["thread"].astype(np.int64)
        bad = ~_EXPORTABLE[op]
        if bad.any():
            i = int(np.argmax(bad))
            raise self.error(
                b.row0 + i,
                f"op {O.Op(int(op[i])).label} has no STD equivalent "
                f"(STD has read, write, acquire, release, fork, join)",
            )
        if self.launch is None:
            self.launch = int(c["launch"][0])
        other = c["launch"] != self.launch
        if other.any():
            i = int(np.argmax(other))
            raise self.error(
                b.row0 + i,
                f"launch {int(c['launch'][i])} after launch "
                f"{self.launch}: STD has no launch order (export one launch)",
            )
        blocked = c["block"] != 0
        if blocked.any():
            i = int(np.argmax(blocked))
            raise self.error(
                b.row0 + i, f"block {int(c['block'][i])}: STD threads are the threads of block 0"
            )
        self.flags(b, op, th)
        if self.canonical:
            acc = (op == O.READ) | (op == O.WRITE)
            if not (
                (c["space"][acc] == O.SPACE_GLOBAL).all()
                and (c["size"][acc] == VAR_SIZE).all()
                and not (c["addr"][acc] % VAR_SIZE).any()
            ):
                self.canonical = False

    def flags(self, b, op, th) -> None:
        c = b.cols
        if self.ended:
            done = np.isin(th, np.fromiter(self.ended, dtype=np.int64))
            if done.any():
                i = int(np.argmax(done))
                raise self.error(
                    b.row0 + i,
                    f"thread {int(th[i])} has an event after the "
                    f"join signal of row {self.ended[int(th[i])]}: no STD "
                    f"equivalent",
                    "no-std-equivalent",
                )
        sync = np.flatnonzero((op == O.SIGNAL) | (op == O.WAIT))
        if len(sync) == 0:
            self.seen.update(np.unique(th).tolist())
            return
        uniq, first = np.unique(th, return_index=True)
        first_of = dict(zip(uniq.tolist(), first.tolist()))
        r_uniq, r_last = np.unique(th[::-1], return_index=True)
        last_of = dict(zip(r_uniq.tolist(), (len(th) - 1 - r_last).tolist()))
        for i in sync.tolist():
            obj, t, kind = int(c["obj"][i]), int(th[i]), int(op[i])
            row = b.row0 + i
            if c["arg"][i] > 1:
                raise self.error(
                    row, f"{O.Op(kind).label} of count {int(c['arg'][i])}: no STD equivalent"
                )
            if FORK_FLAG <= obj < FORK_FLAG + FLAG_SPAN:
                child = obj - FORK_FLAG
                if kind == O.WAIT and (child != t or first_of[t] != i or t in self.seen):
                    raise self.error(
                        row,
                        f"wait on fork flag of thread {child} is not that "
                        f"thread's first event: no STD equivalent",
                    )
                if kind == O.SIGNAL and child == t:
                    raise self.error(row, f"thread {t} signals its own fork flag")
            elif JOIN_FLAG <= obj < JOIN_FLAG + FLAG_SPAN:
                child = obj - JOIN_FLAG
                if kind == O.SIGNAL:
                    if child != t or last_of[t] != i:
                        raise self.error(
                            row,
                            f"signal on join flag of thread {child} is not "
                            f"that thread's last event: no STD equivalent",
                        )
                    self.ended[t] = row
                elif child == t:
                    raise self.error(row, f"thread {t} waits on its own join flag")
            else:
                raise self.error(
                    row,
                    f"{O.Op(kind).label} on flag {obj}: STD has only fork "
                    f"and join (flags {FORK_FLAG:#x} + thread and "
                    f"{JOIN_FLAG:#x} + thread)",
                )
        self.seen.update(uniq.tolist())

    def ranges_of(self, b) -> None:
        """Collect the distinct (space, owner, address, size) ranges of a batch."""
        c = b.cols
        acc = np.flatnonzero((c["op"] == O.READ) | (c["op"] == O.WRITE))
        if len(acc) == 0:
            return
        keys = _range_keys(c, acc)
        uniq, first = np.unique(keys, axis=0, return_index=True)
        for key, f in zip(map(tuple, uniq.tolist()), first.tolist()):
            if key not in self.ranges:
                self.ranges[key] = (b.row0 + int(acc[f]), -1)

    def finish(self, reader) -> None:
        """Unless every access is a canonical word: number the ranges (first
        appearance) and reject partial overlaps; this reads the trace again."""
        if self.canonical:
            return
        for b in reader:
            self.ranges_of(b)
        items = sorted(self.ranges.items(), key=lambda kv: kv[1][0])
        self.ranges = {key: (row, i) for i, (key, (row, _)) in enumerate(items)}
        end, end_key = -1, None
        for key, (row, _) in sorted(self.ranges.items()):
            region = key[:2]
            if end_key is not None and region == end_key[:2] and key[2] < end:
                other_row = self.ranges[end_key][0]
                raise self.error(
                    max(row, other_row),
                    f"bytes {key[2]:#x}+{key[3]} and {end_key[2]:#x}+{end_key[3]} "
                    f"(rows {min(row, other_row)} and {max(row, other_row)}) "
                    f"overlap without being the same range: STD variables "
                    f"cannot overlap",
                )
            if end_key is None or region != end_key[:2] or key[2] + key[3] > end:
                end, end_key = key[2] + key[3], key

    def var_ids(self, b, acc: np.ndarray) -> np.ndarray:
        c = b.cols
        if self.canonical:
            return (c["addr"][acc] // VAR_SIZE).astype(np.int64)
        keys = map(tuple, _range_keys(c, acc).tolist())
        return np.fromiter((self.ranges[k][1] for k in keys), dtype=np.int64, count=len(acc))


def _range_keys(c: dict, acc: np.ndarray) -> np.ndarray:
    """(space, owner, addr, size) of the accesses ``acc``; owner as in findings."""
    space = c["space"][acc]
    owner = np.where(
        space == O.SPACE_SHARED,
        c["peer"][acc],
        np.where(space == O.SPACE_LOCAL, c["thread"][acc], 0),
    )
    return np.stack(
        [
            space.astype(np.uint64),
            owner.astype(np.uint64),
            c["addr"][acc],
            c["size"][acc].astype(np.uint64),
        ],
        axis=1,
    )


def export_std(src: str, dst: str) -> tuple[int, int]:
    """v1 trace ``src`` -> STD text ``dst`` (two passes: check and name, then write):
    (rows read, lines written)."""
    with open_trace(src) as reader:
        plan = _ExportPlan(reader.meta.path or src)
        for b in reader:
            plan.batch(b)
        plan.finish(reader)
        site_loc = np.array(
            [_site_location(i, s) for i, s in enumerate(reader.meta.sites)], dtype=np.int64
        )
        output = OutputFile(dst)
        rows = lines = 0
        try:
            out = output.open()
            for b in reader:
                data, k = _std_text(b, plan, site_loc)
                out.write(data)
                rows += b.n
                lines += k
            output.commit()
        except BaseException:
            output.discard()
            raise
    return rows, lines


def _site_location(index: int, text: str) -> int:
    m = _SITE_LOC.match(text.strip())
    return int(m.group(1)) if m else index


def _std_text(b, plan: _ExportPlan, site_loc: np.ndarray) -> tuple[bytes, int]:
    """The STD lines of one batch as bytes, and how many."""
    c = b.cols
    op, obj = c["op"], c["obj"]
    std_op = np.full(b.n, -1, dtype=np.int64)
    for v1, s in _STD_OF_V1.items():
        std_op[op == v1] = s
    is_fork = (op == O.SIGNAL) & (obj >= FORK_FLAG) & (obj < FORK_FLAG + FLAG_SPAN)
    is_join = (op == O.WAIT) & (obj >= JOIN_FLAG) & (obj < JOIN_FLAG + FLAG_SPAN)
    std_op[is_fork] = S_FORK
    std_op[is_join] = S_JOIN
    keep = np.flatnonzero(std_op >= 0)  # the child's fork wait and join signal drop out
    if len(keep) == 0:
        return b"", 0
    sop = std_op[keep]
    number = np.zeros(len(keep), dtype=np.int64)
    acc = np.flatnonzero(sop <= S_W)
    number[acc] = plan.var_ids(b, keep[acc])
    lk = np.flatnonzero((sop == S_ACQ) | (sop == S_REL))
    number[lk] = obj[keep[lk]].astype(np.int64)
    fk = np.flatnonzero(sop == S_FORK)
    number[fk] = (obj[keep[fk]] - np.uint64(FORK_FLAG)).astype(np.int64)
    jn = np.flatnonzero(sop == S_JOIN)
    number[jn] = (obj[keep[jn]] - np.uint64(JOIN_FLAG)).astype(np.int64)
    prefix = np.array(["V", "V", "L", "L", "T", "T"])[sop]
    site = c["site"][keep]
    loc = b.row0 + keep.astype(np.int64)  # no site: the row number
    named = site != SITE_NONE
    loc[named] = site_loc[site[named]]
    s = lambda a: pc.cast(pa.array(a), pa.string())  # noqa: E731
    text = pc.binary_join_element_wise(
        "T",
        s(c["thread"][keep]),
        "|",
        pa.array(np.array(STD_OPS)[sop]),
        "(",
        pa.array(prefix),
        s(number),
        ")|",
        s(loc),
        "\n",
        "",
    )
    _, offsets, data = text.buffers()  # the lines, back to back, in the data buffer
    bounds = np.frombuffer(offsets, dtype=np.int32)[text.offset : text.offset + len(text) + 1]
    return data.to_pybytes()[bounds[0] : bounds[-1]], len(keep)
