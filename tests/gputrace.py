"""Writers of the three GPU tracers' output formats, for tests.

Each writer follows the tool's own writer code, not tracerace's parser:

* Accel-Sim: ``util/tracer_nvbit/tracer_tool/tracer_tool.cu`` (``recv_thread_fun``:
  the per-line fields, ``get_datawidth_from_opcode``, ``base_stride_compress``,
  ``base_delta_compress``, tracer version 5's trailing immediate, two lines per
  LDGSTS) and ``traces-processing/post-traces-processing.cpp`` (the ``.traceg``
  grouping, which drops the first, shared, line of each LDGSTS);
* CUTracer: ``src/trace_writer.cpp`` (``kernel_metadata`` first, then
  ``mem_addr_trace`` records per memory operand, then ``opcode_only`` records,
  in the order ``src/cutracer.cu`` inserts the instrumentation; global warp ids);
* NVBit ``tools/mem_trace/mem_trace.cu``: ``MEMTRACE:`` LAUNCH and access lines.

A program is a list of :class:`Ins` in the order the GPU executed them.
"""

from __future__ import annotations

import json
import lzma
from dataclasses import dataclass, field

FULL = 0xFFFFFFFF


@dataclass
class Ins:
    cta: tuple[int, int, int]
    warp: int  # warp within the block
    pc: int
    sass: str  # e.g. "STS [R3], R2 ;"
    mask: int = FULL
    addrs: list[int] | None = None  # one address per active lane, lane order
    src: list[int] | None = None  # LDGSTS: the global source of each active lane
    imm: int = 0  # Accel-Sim: the instruction's last immediate
    nsrc: int = 0  # registers read (Accel-Sim records their numbers)

    @property
    def opcode(self) -> str:
        words = self.sass.strip().rstrip(";").split()
        if words[0].startswith("@"):
            words = words[1:]
        return words[0]


@dataclass
class Kernel:
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    program: list[Ins] = field(default_factory=list)
    shmem_base: int = 0x00007F59DD000000
    local_base: int = 0x00007F59DB000000

    @property
    def warps(self) -> int:
        n = self.block[0] * self.block[1] * self.block[2]
        return (n + 31) // 32

    def linear(self, cta) -> int:
        return cta[0] + self.grid[0] * (cta[1] + self.grid[1] * cta[2])


# --- Accel-Sim -----------------------------------------------------------------------


def _datawidth(opcode: str) -> int:
    for tok in [t for t in opcode.split(".") if t]:
        if tok.isdigit():
            return int(tok) // 8
        if tok[0] == "U" and tok[1:].isdigit():
            return int(tok[1:]) // 8
    return 4


def _full_addrs(ins: Ins, addrs: list[int]) -> list[int]:
    out, it = [0] * 32, iter(addrs)
    for lane in range(32):
        if (ins.mask >> lane) & 1:
            out[lane] = next(it)
    return out


def _compress(addrs: list[int], mask: int, enable: bool = True) -> str:
    bits = [(mask >> s) & 1 for s in range(32)]
    if not enable:
        return "0 " + "".join(f"0x{addrs[s]:016x} " for s in range(32) if bits[s])
    # base_stride_compress
    ok, first, last, base, stride = True, False, False, 0, 0
    for s in range(32):
        if bits[s] and not first:
            first, base = True, addrs[s]
            if s < 31 and bits[s + 1]:
                stride = addrs[s + 1] - addrs[s]
            else:
                ok = False
                break
        elif first and not last:
            if bits[s]:
                if stride != addrs[s] - addrs[s - 1]:
                    ok = False
                    break
            else:
                last = True
        elif last and bits[s]:
            ok = False
            break
    if ok:
        return f"1 0x{base:x} {stride} "
    deltas, found, prev = [], False, 0
    for s in range(32):
        if bits[s] and not found:
            base, found, prev = addrs[s], True, addrs[s]
        elif bits[s]:
            deltas.append(addrs[s] - prev)
            prev = addrs[s]
    return f"2 0x{base:x} " + "".join(f"{d} " for d in deltas)


def _accel_line(ins: Ins, addrs: list[int] | None, compress: bool, version: int) -> str:
    out = f"{ins.pc:04x} {ins.mask:08x} 0 {ins.opcode} {ins.nsrc} "
    out += "".join(f"R{2 + i} " for i in range(ins.nsrc))
    if addrs is not None:
        out += f"{_datawidth(ins.opcode)} " + _compress(_full_addrs(ins, addrs), ins.mask, compress)
    else:
        out += "0 "
    if version >= 5:
        imm = ins.imm if ins.imm < (1 << 31) else ins.imm - (1 << 32)  # "%d" of the value
        out += f"{imm} "
    return out


def _accel_header(k: Kernel, kid: int, version: int) -> str:
    return (
        f"-kernel name = {k.name}\n-kernel id = {kid}\n-grid dim = ({k.grid[0]},"
        f"{k.grid[1]},{k.grid[2]})\n-block dim = ({k.block[0]},{k.block[1]},{k.block[2]})\n"
        f"-shmem = 0\n-nregs = 32\n-binary version = 80\n-cuda stream id = 0\n"
        f"-shmem base_addr = 0x{k.shmem_base:016x}\n"
        f"-local mem base_addr = 0x{k.local_base:016x}\n-nvbit version = 1.7.6\n"
        f"-accelsim tracer version = {version}\n"
        + ("-enable lineinfo = 0\n" if version >= 5 else "")
        + "\n#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num "
        "[reg_srcs] mem_width [adrrescompress?] [mem_addresses] immediate\n\n"
    )


def accel_lines(k: Kernel, compress: bool = True, version: int = 5) -> list[str]:
    """The instruction lines of kernel-N.trace, as the tracer writes them."""
    out = []
    for ins in k.program:
        lead = f"{ins.cta[0]} {ins.cta[1]} {ins.cta[2]} {ins.warp} "
        if ins.src is not None:  # LDGSTS: mref 0 (shared), then mref 1 (global)
            out.append(lead + _accel_line(ins, ins.addrs, compress, version))
            out.append(lead + _accel_line(ins, ins.src, compress, version))
        else:
            out.append(lead + _accel_line(ins, ins.addrs, compress, version))
    return out


def accel_trace(k: Kernel, kid: int = 1, compress: bool = True, version: int = 5) -> str:
    return _accel_header(k, kid, version) + "".join(
        f"{line}\n" for line in accel_lines(k, compress, version)
    )


def accel_traceg(k: Kernel, kid: int = 1, version: int = 5) -> str:
    """post-traces-processing's grouping of accel_trace (``group_per_block``)."""
    text = accel_trace(k, kid, version=version)
    head, body = [], []
    for line in text.split("\n"):
        (head if not line or line[0] in "#-" else body).append(line)
    nblocks = k.grid[0] * k.grid[1] * k.grid[2]
    tbs: dict[int, tuple] = {}
    insts = {}
    flags = {}
    for line in body:
        t = line.split(" ", 4)
        cta, warp, rest = (int(t[0]), int(t[1]), int(t[2])), int(t[3]), t[4]
        tb = k.linear(cta)
        tbs.setdefault(tb, cta)
        lst = insts.setdefault(tb, [[] for _ in range(k.warps)])
        opcode = rest.split()[3]
        if "LDGSTS" in opcode:
            flag = flags.get((tb, warp), True)
            if not flag:
                lst[warp].append(rest)
            flags[(tb, warp)] = not flag
        else:
            lst[warp].append(rest)
    out = "\n".join(head) + "\n"
    for tb in range(nblocks):
        if tb not in tbs:
            continue
        x, y, z = tbs[tb]
        out += f"\n#BEGIN_TB\n\nthread block = {x},{y},{z}\n"
        for w, lines in enumerate(insts[tb]):
            out += f"\nwarp = {w}\ninsts = {len(lines)}\n" + "".join(f"{ln}\n" for ln in lines)
        out += "\n#END_TB\n"
    return out


def write(path, text: str, xz: bool = False) -> str:
    data = text.encode()
    if xz:
        data = lzma.compress(data, preset=1)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


# --- CUTracer --------------------------------------------------------------------------


def cutracer_ndjson(
    k: Kernel,
    *,
    mem: bool = True,
    opcode_only: bool = True,
    launch_id: int = 0,
    values: bool = False,
) -> str:
    """CUTracer's per-kernel NDJSON: mem_addr_trace (or, with ``values``,
    mem_value_trace, captured after the instruction) and/or opcode_only records."""
    table, ids = {}, {}
    for ins in k.program:
        if ins.pc not in ids:
            ids[ins.pc] = len(ids)
            table[str(ids[ins.pc])] = {"sass": ins.sass.strip()}
    meta = {
        "type": "kernel_metadata",
        "mangled_name": f"_Z{len(k.name)}{k.name}v",
        "unmangled_name": f"{k.name}()",
        "kernel_checksum": "1234abcd",
        "func_addr": "0x7f00a0000000",
        "nregs": 32,
        "shmem_static": 0,
        "grid": list(k.grid),
        "block": list(k.block),
        "shmem_dynamic": 0,
        "instructions": table,
    }
    lines = [json.dumps(meta, sort_keys=True)]
    index = 0

    def record(kind: str, ins: Ins, **more) -> None:
        nonlocal index
        rec = {
            "type": kind,
            "ctx": "0x5591abcd",
            "trace_index": index,
            "timestamp": 1700000000000000000 + index,
            "grid_launch_id": launch_id,
            "cta": list(ins.cta),
            "warp": k.linear(ins.cta) * k.warps + ins.warp,
            "opcode_id": ids[ins.pc],
            "pc": f"0x{ins.pc:x}",
            **more,
        }
        lines.append(json.dumps(rec, sort_keys=True))
        index += 1

    for ins in k.program:
        if ins.mask == 0:
            continue  # every lane predicated off: instrument_* return before pushing
        operands = [ins.addrs, ins.src] if ins.src is not None else [ins.addrs]
        if mem and not values and ins.addrs is not None:
            for addrs in operands:
                record("mem_addr_trace", ins, ipoint="B", addrs=_full_addrs(ins, addrs))
        if opcode_only:
            record("opcode_only", ins)
        if mem and values and ins.addrs is not None:  # IPOINT_AFTER: after the opcode record
            name = ins.opcode.split(".")[0]
            space = {"LDG": 3, "STG": 3, "ATOMG": 3, "LDS": 4, "STS": 4, "LDGSTS": 6}[name]
            for addrs in operands:
                record(
                    "mem_value_trace",
                    ins,
                    ipoint="A",
                    addrs=_full_addrs(ins, addrs),
                    mem_space=space,
                    is_load=name.startswith("LD"),
                    access_size=_datawidth(ins.opcode),
                    values=[[0]] * 32,
                )
    return "".join(f"{line}\n" for line in lines)


def write_zstd(path, text: str, frames: int = 2) -> str:
    """zstd as CUTracer writes it: one frame per buffer flush."""
    import zstandard

    data = text.encode()
    cut = len(data) // frames
    pieces = [data[i * cut : (i + 1) * cut if i < frames - 1 else len(data)] for i in range(frames)]
    cctx = zstandard.ZstdCompressor(level=9)
    with open(path, "wb") as f:
        for piece in pieces:
            f.write(cctx.compress(piece))
    return str(path)


# --- NVBit mem_trace -------------------------------------------------------------------


def memtrace_log(kernels: list[Kernel], slot_base: int = 8) -> str:
    """mem_trace's stdout for these launches (with a line of the program's own output)."""
    ctx = 0x5591ABCD0000
    out = [
        "------------------------------------------------------------",
        "NVBit (NVidia Binary Instrumentation Tool v1.7.6) Loaded",
        f"MEMTRACE: STARTING CONTEXT 0x{ctx:x}",
    ]
    for gid, k in enumerate(kernels):
        out.append(
            f"MEMTRACE: CTX 0x{ctx:016x} - LAUNCH - Kernel pc 0x00007f00a0000000 - "
            f"Kernel name {k.name}(float*, int) - grid launch id {gid} - grid size "
            f"{k.grid[0]},{k.grid[1]},{k.grid[2]} - block size {k.block[0]},{k.block[1]},"
            f"{k.block[2]} - nregs 32 - shmem 0 - cuda stream id 0"
        )
        for ins in k.program:
            if ins.addrs is None or ins.mask == 0:
                continue  # instructions without a memory operand are not instrumented
            for addrs in [ins.addrs, ins.src] if ins.src is not None else [ins.addrs]:
                full = _full_addrs(ins, addrs)
                out.append(
                    f"MEMTRACE: CTX 0x{ctx:016x} - grid_launch_id {gid} - CTA "
                    f"{ins.cta[0]},{ins.cta[1]},{ins.cta[2]} - warp "
                    f"{slot_base + ins.warp} - {ins.opcode} - "
                    + "".join(f"0x{a:016x} " for a in full)
                )
    out.append("result: 42 (the program's own output)")
    return "\n".join(out) + "\n"


# --- the scenarios -------------------------------------------------------------------

G_IN = 0x7F0000000000  # global input
G_OUT = 0x7F0000100000  # global output
G_FLAG = 0x7F0000200000


def lanes(mask: int = FULL) -> list[int]:
    return [lane for lane in range(32) if (mask >> lane) & 1]


def tile(barrier: bool) -> Kernel:
    """A 64-thread block stores a shared tile (``s[tid]``, offset 0), then each
    thread reads the element of the other warp: correct with ``BAR.SYNC``
    between the STS and the LDS, a race without."""
    k = Kernel("tile_kernel", (1, 1, 1), (64, 1, 1))
    p = k.program
    for w in (0, 1):
        p.append(
            Ins(
                (0, 0, 0),
                w,
                0x10,
                "LDG.E.SYS R2, [R4.64] ;",
                addrs=[G_IN + 4 * (32 * w + lane) for lane in lanes()],
                nsrc=1,
            )
        )
    for w in (0, 1):
        p.append(
            Ins(
                (0, 0, 0),
                w,
                0x20,
                "STS [R3], R2 ;",
                addrs=[4 * (32 * w + lane) for lane in lanes()],
                nsrc=2,
            )
        )
    if barrier:
        for w in (0, 1):
            p.append(Ins((0, 0, 0), w, 0x30, "BAR.SYNC.DEFER_BLOCKING 0x0 ;", imm=0))
    for w in (0, 1):
        p.append(
            Ins(
                (0, 0, 0),
                w,
                0x40,
                "LDS R5, [R6] ;",
                addrs=[4 * (32 * (1 - w) + lane) for lane in lanes()],
                nsrc=1,
            )
        )
    for w in (0, 1):
        p.append(
            Ins(
                (0, 0, 0),
                w,
                0x50,
                "STG.E.SYS [R8.64], R5 ;",
                addrs=[G_OUT + 4 * (32 * w + lane) for lane in lanes()],
                nsrc=2,
            )
        )
    for w in (0, 1):
        p.append(Ins((0, 0, 0), w, 0x60, "EXIT ;"))
    return k


def pipeline(drain: bool) -> Kernel:
    """A 3-stage cp.async pipeline of one warp (16 bytes per lane per stage at
    shared 0x0, 0x200, 0x400; each thread reads its neighbour's chunk after
    ``DEPBAR.LE SB0, 0x1`` and ``BAR.SYNC``). The last iteration has issued a
    copy into stage 0 ahead of time; the epilogue reuses stage 0 for the output
    tile. Without ``DEPBAR.LE SB0, 0x0`` (and ``BAR.SYNC``) first, that copy is
    still in flight: incident 3, split-K."""
    k = Kernel("splitk_kernel", (1, 1, 1), (32, 1, 1))
    p = k.program
    cta = (0, 0, 0)
    pc = iter(range(0x10, 0x10000, 0x10))

    def cp(stage: int, kk: int) -> None:
        p.append(
            Ins(
                cta,
                0,
                next(pc),
                "LDGSTS.E.BYPASS.LTC128B.128 [R3+0x0], [R4.64] ;",
                addrs=[0x200 * stage + 16 * lane for lane in lanes()],
                src=[G_IN + 0x200 * kk + 16 * lane for lane in lanes()],
                nsrc=2,
            )
        )

    def commit() -> None:
        p.append(Ins(cta, 0, next(pc), "LDGDEPBAR ;"))

    def wait(n: int) -> None:
        p.append(Ins(cta, 0, next(pc), f"DEPBAR.LE SB0, 0x{n:x} ;", imm=n))

    def bar() -> None:
        p.append(Ins(cta, 0, next(pc), "BAR.SYNC.DEFER_BLOCKING 0x0 ;", imm=0))

    cp(0, 0)
    commit()
    cp(1, 1)
    commit()
    for kk in range(3):
        wait(1)
        bar()
        if kk + 2 <= 3:  # issues k-slice 2 into stage 2 and (ahead) 3 into stage 0
            cp((kk + 2) % 3, kk + 2)
        commit()
        p.append(
            Ins(
                cta,
                0,
                next(pc),
                "LDS.128 R8, [R9] ;",
                addrs=[0x200 * kk + 16 * ((lane + 1) % 32) for lane in lanes()],
                nsrc=1,
            )
        )
    if drain:
        wait(0)
        bar()
    p.append(
        Ins(cta, 0, next(pc), "STS.128 [R3], R8 ;", addrs=[16 * lane for lane in lanes()], nsrc=2)
    )
    p.append(Ins(cta, 0, next(pc), "EXIT ;"))
    return k


def flag(scope: str) -> Kernel:
    """Block 0 stores data, then thread 0 publishes a flag (``MEMBAR.SC.GPU``,
    ``ATOMG.E.ADD.STRONG.<scope>``); block 1's thread 0 reads the flag with the
    same atomic (the spin's last iteration), fences, and after ``BAR.SYNC`` every
    thread reads the data. Correct at GPU scope; at CTA scope the release does
    not reach the other block, and the data race is reported."""
    k = Kernel("handoff_kernel", (2, 1, 1), (32, 1, 1))
    p = k.program
    data = [G_IN + 4 * lane for lane in lanes()]
    p.append(Ins((0, 0, 0), 0, 0x10, "STG.E.SYS [R2.64], R5 ;", addrs=data, nsrc=2))
    p.append(Ins((0, 0, 0), 0, 0x20, "BAR.SYNC.DEFER_BLOCKING 0x0 ;", imm=0))
    p.append(Ins((0, 0, 0), 0, 0x30, "MEMBAR.SC.GPU ;", mask=0x1))
    p.append(
        Ins(
            (0, 0, 0),
            0,
            0x40,
            f"ATOMG.E.ADD.STRONG.{scope} PT, R7, [R10.64], R6 ;",
            mask=0x1,
            addrs=[G_FLAG],
            nsrc=2,
        )
    )
    p.append(Ins((0, 0, 0), 0, 0x50, "EXIT ;"))
    p.append(
        Ins(
            (1, 0, 0),
            0,
            0x60,
            f"ATOMG.E.ADD.STRONG.{scope} PT, R7, [R10.64], RZ ;",
            mask=0x1,
            addrs=[G_FLAG],
            nsrc=1,
        )
    )
    p.append(Ins((1, 0, 0), 0, 0x70, "MEMBAR.SC.GPU ;", mask=0x1))
    p.append(Ins((1, 0, 0), 0, 0x80, "BAR.SYNC.DEFER_BLOCKING 0x0 ;", imm=0))
    p.append(Ins((1, 0, 0), 0, 0x90, "LDG.E.SYS R5, [R2.64] ;", addrs=data, nsrc=1))
    p.append(Ins((1, 0, 0), 0, 0xA0, "EXIT ;"))
    return k


def crossblock(shared_address: bool) -> Kernel:
    """Two blocks' warps store to and load from global memory, no synchronisation:
    one word both touch (a race), or each its own (clean)."""
    k = Kernel("cross_kernel", (2, 1, 1), (32, 1, 1))
    for b in (0, 1):
        base = G_OUT if shared_address else G_OUT + 0x1000 * b
        k.program.append(
            Ins(
                (b, 0, 0),
                0,
                0x10,
                "STG.E.SYS [R2.64], R5 ;",
                addrs=[base + 4 * lane for lane in lanes()],
                nsrc=2,
            )
        )
        k.program.append(
            Ins(
                (b, 0, 0),
                0,
                0x20,
                "LDG.E.SYS R6, [R2.64] ;",
                addrs=[base + 4 * lane for lane in lanes()],
                nsrc=1,
            )
        )
        k.program.append(Ins((b, 0, 0), 0, 0x30, "EXIT ;"))
    return k


# --- what an import must give ----------------------------------------------------------

_OPS = {
    "LDG": "read",
    "LDS": "read",
    "STG": "write",
    "STS": "write",
    "ATOMG": "atomic",
    "LDGSTS": "cp_async",
}
_SPACE = {"LDG": 0, "STG": 0, "ATOMG": 0, "LDS": 1, "STS": 1, "LDGSTS": 1}


def expected_accesses(k: Kernel, launch: int = 0) -> set[tuple]:
    """``(launch, op, block, thread, space, addr, size, addr2)`` of every access the
    program makes, from its own description (one per active lane)."""
    out = set()
    for ins in k.program:
        name = ins.opcode.split(".")[0]
        if ins.addrs is None:
            continue
        size = _datawidth(ins.opcode)
        srcs = ins.src if ins.src is not None else [0] * len(ins.addrs)
        for lane, addr, src in zip(lanes(ins.mask), ins.addrs, srcs):
            out.add(
                (
                    launch,
                    _OPS[name],
                    k.linear(ins.cta),
                    32 * ins.warp + lane,
                    _SPACE[name],
                    addr,
                    size,
                    src,
                )
            )
    return out


def imported_accesses(path) -> set[tuple]:
    """The same tuples from an imported v1 trace."""
    from tracerace.trace.ops import Op
    from tracerace.trace.reader import open_trace

    out = set()
    names = {
        int(Op.READ): "read",
        int(Op.WRITE): "write",
        int(Op.ATOMIC): "atomic",
        int(Op.CP_ASYNC): "cp_async",
    }
    with open_trace(str(path)) as trace:
        for b in trace:
            c = b.cols
            for i in range(b.n):
                op = int(c["op"][i])
                if op in names:
                    out.add(
                        (
                            int(c["launch"][i]),
                            names[op],
                            int(c["block"][i]),
                            int(c["thread"][i]),
                            int(c["space"][i]),
                            int(c["addr"][i]),
                            int(c["size"][i]),
                            int(c["addr2"][i]),
                        )
                    )
    return out


def ops_of(path) -> list[tuple]:
    """``(op name, block, thread, obj, arg)`` of every synchronisation row, in order."""
    from tracerace.trace.ops import Op
    from tracerace.trace.reader import open_trace

    out = []
    with open_trace(str(path)) as trace:
        for b in trace:
            c = b.cols
            for i in range(b.n):
                op = Op(int(c["op"][i]))
                if op not in (Op.READ, Op.WRITE, Op.ATOMIC, Op.CP_ASYNC, Op.INIT):
                    out.append(
                        (
                            op.label,
                            int(c["block"][i]),
                            int(c["thread"][i]),
                            int(c["obj"][i]),
                            int(c["arg"][i]),
                        )
                    )
    return out


def named_barrier(arrive: bool) -> Kernel:
    """Warp 0 produces a shared buffer and arrives at barrier 1 (``BAR.ARV 0x1,
    0x40``); warp 1 waits there (``BAR.SYNC 0x1, 0x40``) and reads it. Without the
    arrival the consumer's wait is not in the trace either: a race."""
    k = Kernel("named_barrier_kernel", (1, 1, 1), (64, 1, 1))
    p = k.program
    p.append(
        Ins(
            (0, 0, 0),
            0,
            0x10,
            "STS [R3+0x100], R2 ;",
            addrs=[0x100 + 4 * lane for lane in lanes()],
            nsrc=2,
        )
    )
    if arrive:
        p.append(Ins((0, 0, 0), 0, 0x20, "BAR.ARV 0x1, 0x40 ;", imm=0x40))
        p.append(Ins((0, 0, 0), 1, 0x30, "BAR.SYNC 0x1, 0x40 ;", imm=0x40))
    p.append(
        Ins(
            (0, 0, 0),
            1,
            0x40,
            "LDS R5, [R3+0x100] ;",
            addrs=[0x100 + 4 * lane for lane in lanes()],
            nsrc=1,
        )
    )
    for w in (0, 1):
        p.append(Ins((0, 0, 0), w, 0x50, "EXIT ;"))
    return k


def warp_exchange(sync: bool) -> Kernel:
    """The lanes of one warp swap words through shared memory, with or without
    ``WARPSYNC 0xffffffff`` (``__syncwarp()``) between the store and the load."""
    k = Kernel("warp_exchange_kernel", (1, 1, 1), (32, 1, 1))
    p = k.program
    p.append(
        Ins(
            (0, 0, 0),
            0,
            0x10,
            "STS [R3+0x80], R2 ;",
            addrs=[0x80 + 4 * lane for lane in lanes()],
            nsrc=2,
        )
    )
    if sync:
        p.append(Ins((0, 0, 0), 0, 0x20, "WARPSYNC 0xffffffff ;", imm=0xFFFFFFFF))
    p.append(
        Ins(
            (0, 0, 0),
            0,
            0x30,
            "LDS R5, [R4+0x80] ;",
            addrs=[0x80 + 4 * (lane ^ 1) for lane in lanes()],
            nsrc=1,
        )
    )
    p.append(Ins((0, 0, 0), 0, 0x40, "EXIT ;"))
    return k
