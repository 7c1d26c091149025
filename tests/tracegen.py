"""Random traces for property tests: every op, many agents, racy and tricky.

The generator plays a small scheduler so that most traces are valid input:
a thread blocked in ``bar_sync`` is not scheduled until its generation
completes, and a ``wait`` is drawn only when signals are pending on its flag
(except, rarely, on purpose). Addresses come from a few small windows so
accesses overlap at odd offsets; objects come from tiny sets so sync objects
are shared, aliased and misused. Counts and objects are now and then at the
edges of their columns' integer types.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tracerace.trace.ops import COPY_OPS, Op

ACCESS_OPS = [Op.READ, Op.WRITE, Op.ATOMIC, Op.INIT]
SYNC_OPS = [
    Op.BAR_SYNC,
    Op.BAR_ARRIVE,
    Op.WARP_SYNC,
    Op.FENCE,
    Op.FENCE_PROXY_ASYNC,
    Op.SIGNAL,
    Op.WAIT,
    Op.ACQUIRE,
    Op.RELEASE,
]
ASYNC_OPS = [
    Op.CP_ASYNC,
    Op.CP_ASYNC_COMMIT,
    Op.CP_ASYNC_WAIT,
    Op.MBAR_INIT,
    Op.MBAR_ARRIVE,
    Op.MBAR_EXPECT_TX,
    Op.MBAR_WAIT,
    Op.MBAR_INVAL,
    Op.TMA_LOAD,
    Op.TMA_STORE,
    Op.BULK_COMMIT,
    Op.BULK_WAIT,
]

# Short sequences by one thread that real kernels use, so the generated
# traces hold the patterns whose rules are subtle: a flag hand-off with mixed
# atomic and fence scopes (fence before a relaxed release, fence after a
# relaxed acquire), a TMA load read with or without a wait, and cp.async
# copies handed to the async proxy with the fence before or after the wait;
# and for the proxy rule's choice of writes (which writes an async-proxy
# access may see), plain writes, atomics, fences and cp.async copies to one
# shared window in any order, some never committed or never waited for, then
# an async-proxy access of it; with several threads doing so, racing writes
# meet before a fence; and a write handed off to copiers over parts of it,
# one of which waits (the newest copy maybe still in flight) and reads by the
# async proxy: copies of two threads, or a later larger group of one thread,
# over one write, the older retired and the newer not.
RELEASE, ACQUIRE, TMA_READ, CP_TO_PROXY = "release", "acquire", "tma_read", "cp_to_proxy"
PROXY_STEPS, PROXY_WRITE, PROXY_GROUPS = "proxy_steps", "proxy_write", "proxy_groups"
# The Hopper/Blackwell ops (format section 9) that the checkers replay, drawn
# only when ``traces(hopper=True)``: cluster barriers (scheduled so that a
# thread held in cluster_wait runs again after the generation's last arrival)
# mbarrier arrive-and-drop, bulk copies between blocks, st.async stores,
# red.async reductions and bulk reductions (on the atomics' words too, in
# global and shared memory), and cp.async copies made to arrive on an
# mbarrier; with them the macro CP_MBAR: a thread's copies to a shared
# window of its own (CP_MBAR_WINDOW), in one or two groups, made to arrive
# (.noinc or not), now and then a copy after the arrival, its own
# cp_async_wait or arrival; another thread of its block waits on the phase
# (or not), maybe fences the proxies, and reads the window by the generic or
# the async proxy.
HOPPER_OPS = [
    Op.CLUSTER_ARRIVE,
    Op.CLUSTER_ARRIVE_RELAXED,
    Op.CLUSTER_WAIT,
    Op.CLUSTER_WAIT,
    Op.MBAR_ARRIVE_DROP,
    Op.BULK_COPY_PEER,
    Op.ST_ASYNC,
    Op.RED_ASYNC,
    Op.BULK_REDUCE,
    Op.BULK_REDUCE_PEER,
    Op.CP_ASYNC_MBAR_ARRIVE,
    Op.CP_ASYNC_MBAR_ARRIVE_NOINC,
]
CP_MBAR = "cp_mbar"
HOPPER_MACROS = [CP_MBAR, CP_MBAR]
SYNC_MACROS = [RELEASE, ACQUIRE]
ASYNC_MACROS = [TMA_READ, CP_TO_PROXY, PROXY_STEPS, PROXY_WRITE, PROXY_GROUPS]
PROXY_WINDOW = 48  # shared [48, 64): CP_TO_PROXY's and the PROXY_* macros'
FLAG = 8  # the hand-off flag's address (atomics also use 0 and 4)
HANDOFF = 5  # PROXY_GROUPS' signal object (SIGNAL draws 0 to 2)
GROUPS_WINDOW = 256  # shared [256, 272): PROXY_GROUPS' own, out of every other access's reach
# shared [288, 304): CP_MBAR's own. Its copies meet no plain write there:
# with one, copies of three threads reach the engine's known limit of rule 7
# (docs/status.md: a write that raced one copy and happens before another).
CP_MBAR_WINDOW = 288

# Counts at the edge of the format's int64 ``arg`` (signals and transaction
# counts whose sums pass it are bad input in both checkers), and a flag past
# 2^63 (the engine keeps sync objects in int64 words).
INT64_MAX, INT64_MIN = (1 << 63) - 1, -(1 << 63)
FLAG_PAST_INT64 = (1 << 64) - 3


def _macro(draw, name: str, base: dict, others: list[int]) -> list[dict]:
    """The events of one macro (``base``: op-less fields of its thread;
    ``others``: the other threads of its block free to run)."""

    def ev(op, **kw):
        return {**base, "op": int(op), **kw}

    scope = st.integers(0, 5)
    if name == RELEASE:
        out = [ev(Op.WRITE, space=0, addr=draw(st.sampled_from([16, 20])), size=4)]
        if draw(st.booleans()):
            out.append(ev(Op.FENCE, sem=draw(st.sampled_from([2, 3])), scope=draw(scope)))
        out.append(
            ev(
                Op.ATOMIC,
                space=0,
                addr=FLAG,
                size=4,
                sem=draw(st.sampled_from([0, 2, 3])),
                scope=draw(scope),
            )
        )
        return out
    if name == ACQUIRE:
        out = [
            ev(
                Op.ATOMIC,
                space=0,
                addr=FLAG,
                size=4,
                sem=draw(st.sampled_from([0, 1, 3])),
                scope=draw(scope),
            )
        ]
        if draw(st.booleans()):
            out.append(ev(Op.FENCE, sem=draw(st.sampled_from([1, 3])), scope=draw(scope)))
        out.append(ev(Op.READ, space=0, addr=draw(st.sampled_from([16, 20])), size=4))
        return out
    if name == TMA_READ:
        obj = draw(st.sampled_from([64, 72]))
        out = [ev(Op.TMA_LOAD, space=1, addr=32, size=16, space2=0, addr2=0, obj=obj)]
        if draw(st.booleans()):
            out.append(ev(Op.MBAR_WAIT, obj=obj, arg=draw(st.integers(0, 1))))
        out.append(ev(Op.READ, space=1, addr=draw(st.sampled_from([32, 40])), size=4))
        return out
    if name == CP_MBAR:
        y = draw(st.sampled_from(others)) if others else base["thread"]
        obj = draw(st.sampled_from([64, 72]))

        def copy():
            return ev(
                Op.CP_ASYNC,
                space=1,
                addr=CP_MBAR_WINDOW + draw(st.sampled_from([0, 4, 8])),
                size=draw(st.sampled_from([4, 8])),
                space2=0,
                addr2=draw(st.integers(0, 8)),
            )

        out = []
        if draw(st.booleans()):
            out.append(ev(Op.MBAR_INIT, obj=obj, arg=draw(st.integers(1, 2))))
        for _ in range(draw(st.integers(1, 2))):
            out.append(copy())
            if draw(st.integers(0, 2)) == 0:
                out.append(ev(Op.CP_ASYNC_COMMIT))
        noinc = draw(st.booleans())
        arrive = Op.CP_ASYNC_MBAR_ARRIVE_NOINC if noinc else Op.CP_ASYNC_MBAR_ARRIVE
        out.append(ev(arrive, obj=obj))
        if draw(st.integers(0, 3)) == 0:
            out.append(copy())
        if draw(st.integers(0, 3)) == 0:
            out.append(ev(Op.CP_ASYNC_WAIT, arg=draw(st.integers(0, 1))))
        if not noinc and draw(st.booleans()):
            out.append(ev(Op.MBAR_ARRIVE, obj=obj))
        if draw(st.integers(0, 4)):
            out.append({**ev(Op.MBAR_WAIT, obj=obj, arg=draw(st.integers(0, 1))), "thread": y})
        if draw(st.booleans()):
            out.append({**ev(Op.FENCE_PROXY_ASYNC), "thread": y})
        addr = CP_MBAR_WINDOW + draw(st.sampled_from([0, 4, 8]))
        if draw(st.integers(0, 2)):
            out.append(
                {
                    **ev(Op.READ, space=1, addr=addr, size=4, proxy=draw(st.integers(0, 1))),
                    "thread": y,
                }
            )
        else:
            tma = ev(Op.TMA_STORE, space=0, addr=draw(st.sampled_from([0, 4096])), size=8)
            out.append({**tma, "space2": 1, "addr2": addr, "thread": y})
        return out
    if name == PROXY_GROUPS:
        # Thread x writes and hands off (a signal of 2, a wait of 1 each) to
        # copiers y and z of its block, where the block has them free; y
        # copies in one or two groups, z maybe in between, over parts of the
        # write; y waits (maybe leaving its newest group in flight), fences
        # (usually) and its async proxy reads part of the window.
        x = base["thread"]
        y, z = (draw(st.sampled_from(others)) if others else x for _ in range(2))

        def on(thread, op, **kw):
            return {**base, "thread": thread, "op": int(op), **kw}

        def copy(thread):
            return [
                on(
                    thread,
                    Op.CP_ASYNC,
                    space=1,
                    addr=GROUPS_WINDOW + draw(st.sampled_from([0, 2])),
                    size=draw(st.sampled_from([2, 4, 8])),
                    space2=0,
                    addr2=draw(st.integers(0, 8)),
                ),
                on(thread, Op.CP_ASYNC_COMMIT),
            ]

        out = [
            on(x, Op.WRITE, space=1, addr=GROUPS_WINDOW, size=draw(st.sampled_from([4, 16]))),
            on(x, Op.SIGNAL, obj=HANDOFF, arg=2),
            on(y, Op.WAIT, obj=HANDOFF, arg=1),
            on(z, Op.WAIT, obj=HANDOFF, arg=1),
        ] + copy(y)
        if draw(st.booleans()):
            out += copy(z)
        if draw(st.booleans()):
            out += copy(y)
        out.append(on(y, Op.CP_ASYNC_WAIT, arg=draw(st.integers(0, 1))))
        if draw(st.integers(0, 3)):
            out.append(on(y, Op.FENCE_PROXY_ASYNC))
        out.append(
            on(
                y,
                Op.READ,
                space=1,
                addr=GROUPS_WINDOW + draw(st.sampled_from([0, 2, 4])),
                size=draw(st.sampled_from([2, 4])),
                proxy=1,
            )
        )
        return out
    if name in (PROXY_STEPS, PROXY_WRITE):

        def write():
            addr = PROXY_WINDOW + draw(st.sampled_from([0, 0, 4, 8]))
            if draw(st.integers(0, 3)) == 0:  # atomics do not race each other
                return ev(
                    Op.ATOMIC, space=1, addr=addr, size=4, scope=draw(st.sampled_from([2, 4]))
                )
            return ev(Op.WRITE, space=1, addr=addr, size=draw(st.sampled_from([4, 16])))

        if name == PROXY_WRITE:
            out = [write()]
            if draw(st.booleans()):
                out.append(ev(Op.FENCE_PROXY_ASYNC))
            return out
        out = []
        for step in draw(
            st.lists(
                st.sampled_from(["write", "fence", "copy", "copy", "commit", "wait", "wait"]),
                min_size=1,
                max_size=7,
            )
        ):
            if step == "write":
                out.append(write())
            elif step == "fence":
                out.append(ev(Op.FENCE_PROXY_ASYNC))
            elif step == "copy":
                # At 2 a copy covers part of a granule: copies of two
                # threads, or a later larger group, over part of one write.
                out.append(
                    ev(
                        Op.CP_ASYNC,
                        space=1,
                        addr=PROXY_WINDOW + draw(st.sampled_from([0, 2, 8])),
                        size=draw(st.sampled_from([4, 8, 16])),
                        space2=0,
                        addr2=draw(st.integers(0, 8)),
                    )
                )
            elif step == "commit":
                out.append(ev(Op.CP_ASYNC_COMMIT))
            else:
                out.append(ev(Op.CP_ASYNC_WAIT, arg=draw(st.integers(0, 1))))
        addr = PROXY_WINDOW + draw(st.sampled_from([0, 4, 8]))
        if draw(st.booleans()):
            out.append(ev(Op.READ, space=1, addr=addr, size=draw(st.sampled_from([4, 8])), proxy=1))
        else:
            out.append(
                ev(
                    Op.TMA_STORE,
                    space=0,
                    addr=draw(st.sampled_from([0, 4096])),
                    size=8,
                    space2=1,
                    addr2=addr,
                )
            )
        return out
    # CP_TO_PROXY: cp.async into shared 48.., then a TMA store (async proxy) of it.
    out = [
        ev(Op.CP_ASYNC, space=1, addr=48, size=16, space2=0, addr2=draw(st.integers(0, 8))),
        ev(Op.CP_ASYNC_COMMIT),
    ]
    fence_at = draw(st.sampled_from(["none", "before", "after", "after"]))
    if fence_at == "before":
        out.append(ev(Op.FENCE_PROXY_ASYNC))
    if draw(st.integers(0, 4)):
        out.append(ev(Op.CP_ASYNC_WAIT, arg=0))
    if fence_at == "after":
        out.append(ev(Op.FENCE_PROXY_ASYNC))
    out.append(
        ev(
            Op.TMA_STORE,
            space=0,
            addr=draw(st.sampled_from([0, 4096])),
            size=16,
            space2=1,
            addr2=draw(st.sampled_from([48, 56])),
        )
    )
    return out


@st.composite
def traces(
    draw,
    *,
    max_events: int = 60,
    async_ops: bool = True,
    max_launches: int = 2,
    large: bool = False,
    hopper: bool = False,
):
    """A trace of ``max_events`` or fewer events over ``max_launches`` or
    fewer launches. ``large``: accesses and copies of up to 160 bytes too,
    spread over 256 bytes (with the engine's pages made 32 or 64 bytes
    long, they cover runs of whole pages, overlap them in part, nest in
    them and split them). ``hopper``: the ops of ``HOPPER_OPS`` too."""
    addrs = st.integers(0, 96) if large else st.integers(0, 24)
    sizes = [1, 2, 4, 4, 8, 3, 16] + ([32, 33, 64, 64, 100, 48, 128, 160] if large else [])
    copy_sizes = [4, 8, 16] + ([32, 64, 96] if large else [])
    n_launch = draw(st.integers(1, max_launches))
    # Barriers that fence only some memory, in about a third of the traces.
    partial_fences = draw(st.integers(0, 2)) == 0
    events: list[dict] = []
    pending_signals: dict[int, int] = {}
    ts = 0
    for launch in range(n_launch):
        n_blocks = draw(st.integers(1, 3))
        n_threads = draw(st.integers(1, 5))
        wide = draw(st.booleans())  # threads 0.. or spread over two warps
        threads = [t * 17 if wide else t for t in range(n_threads)]
        clusters = {b: draw(st.integers(0, 1)) for b in range(n_blocks)}
        blocked: set[tuple[int, int]] = set()
        gens: dict[tuple, list] = {}
        n_events = draw(st.integers(1, max_events // n_launch))
        ops = (
            ACCESS_OPS * 3
            + SYNC_OPS
            + SYNC_MACROS
            + (ASYNC_OPS + ASYNC_MACROS if async_ops else [])
        )
        if hopper:
            ops += HOPPER_OPS * 2 + HOPPER_MACROS
        # Cluster barriers: each thread's arrival not yet waited for
        # ("pending", or "done" once its generation completed), and each
        # cluster's open generation [count, arrivers].
        arrived: dict[tuple[int, int], str] = {}
        cluster_gens: dict[int, list] = {}
        cluster_held: set[tuple[int, int]] = set()  # held in cluster_wait (and in blocked)
        for _ in range(n_events):
            free = [(b, t) for b in range(n_blocks) for t in threads if (b, t) not in blocked]
            if not free:
                break
            block, thread = draw(st.sampled_from(free))
            op = draw(st.sampled_from(ops))
            if isinstance(op, str):
                base = dict(launch=launch, block=block, thread=thread, cluster=clusters[block])
                others = [u for b, u in free if b == block and u != thread]
                for ev in _macro(draw, op, base, others):
                    ev["ts"] = ts
                    ev["site"] = draw(st.integers(0, 3))
                    ts += draw(st.integers(0, 2))
                    events.append(ev)
                continue
            ev = dict(
                op=int(op), launch=launch, block=block, thread=thread, cluster=clusters[block]
            )
            if op in (Op.READ, Op.WRITE, Op.ATOMIC, Op.INIT):
                ev["space"] = draw(st.sampled_from([0, 0, 1, 1, 2]))
                ev["addr"] = draw(addrs)
                ev["size"] = draw(st.sampled_from(sizes))
                if ev["space"] == 1 and n_blocks > 1 and draw(st.integers(0, 4)) == 0:
                    ev["peer"] = draw(st.integers(0, n_blocks - 1))
                if op == Op.ATOMIC:
                    ev["scope"] = draw(st.integers(0, 5))
                    ev["sem"] = draw(st.integers(0, 3))
                    ev["addr"] = draw(st.sampled_from([0, 4, 8]))
                    ev["size"] = 4
                if op in (Op.READ, Op.WRITE):
                    ev["proxy"] = draw(st.sampled_from([0, 0, 0, 1]))
            elif op in (Op.BAR_SYNC, Op.BAR_ARRIVE):
                ev["obj"] = draw(st.sampled_from([0, 0, 1]))
                if partial_fences:  # OpenCL's barrier(CLK_LOCAL_MEM_FENCE) and friends
                    ev["fence_spaces"] = draw(st.sampled_from([7, 7, 3, 1, 2, 0, 6]))
                same = [t for t in threads]
                ev["arg"] = draw(st.sampled_from([len(same), len(same), max(1, len(same) - 1), 2]))
            elif op == Op.WARP_SYNC:
                lanes = [t for t in threads if t // 32 == thread // 32]
                mask = 0
                for t in lanes:
                    mask |= 1 << (t % 32)
                if draw(st.integers(0, 5)) == 0:
                    mask |= 1 << 31
                if draw(st.integers(0, 9)) == 0:
                    mask |= -1 << 32  # bits above the 32 lanes: a negative arg
                ev["arg"] = mask
                if partial_fences:
                    ev["fence_spaces"] = draw(st.sampled_from([7, 2, 1]))
            elif op == Op.FENCE:
                ev["sem"] = draw(st.integers(0, 3))
                ev["scope"] = draw(st.integers(0, 5))
            elif op == Op.SIGNAL:
                ev["obj"] = draw(st.sampled_from([0, 1, 2, 0, 1, 2, FLAG_PAST_INT64]))
                ev["arg"] = draw(st.sampled_from([0, 1, 2] * 6 + [1 << 62, INT64_MAX]))
                pending_signals[ev["obj"]] = pending_signals.get(ev["obj"], 0) + max(ev["arg"], 1)
            elif op == Op.WAIT:
                ready = [o for o, c in pending_signals.items() if c > 0]
                if not ready and draw(st.integers(0, 20)) != 0:
                    continue
                ev["obj"] = draw(st.sampled_from(ready)) if ready else 7
                have = pending_signals.get(ev["obj"], 0)
                ev["arg"] = draw(st.integers(0, max(1, min(have, 2))))
                pending_signals[ev["obj"]] = have - max(ev["arg"], 1)
            elif op in (Op.ACQUIRE, Op.RELEASE):
                ev["obj"] = draw(st.integers(0, 1))
            elif op in (Op.CLUSTER_ARRIVE, Op.CLUSTER_ARRIVE_RELAXED):
                if (block, thread) in arrived and draw(st.integers(0, 20)) != 0:
                    continue  # (now and then on purpose: an arrival before the wait)
                members = sum(
                    len(threads) for b in range(n_blocks) if clusters[b] == clusters[block]
                )
                ev["arg"] = draw(st.sampled_from([members, members, max(1, members - 1), 2]))
                if draw(st.integers(0, 30)) == 0:
                    ev["arg"] = 0
            elif op == Op.CLUSTER_WAIT:
                if (block, thread) not in arrived and draw(st.integers(0, 20)) != 0:
                    continue
            elif op in COPY_OPS:
                ev["size"] = draw(st.sampled_from(copy_sizes))
                reduce = op in (Op.BULK_REDUCE, Op.BULK_REDUCE_PEER)
                # Reductions land on the atomics' words now and then.
                dst = st.sampled_from([0, 4, 8]) if reduce and draw(st.booleans()) else addrs
                if op in (Op.TMA_STORE, Op.BULK_REDUCE):
                    ev.update(space=0, addr=draw(dst), space2=1, addr2=draw(addrs))
                else:
                    ev.update(
                        space=1,
                        addr=draw(dst),
                        space2=int(op in (Op.BULK_COPY_PEER, Op.BULK_REDUCE_PEER)),
                        addr2=draw(addrs),
                    )
                    if n_blocks > 1 and draw(st.integers(0, 3)) == 0:
                        ev["peer"] = draw(st.integers(0, n_blocks - 1))
                if op in (Op.TMA_LOAD, Op.BULK_COPY_PEER, Op.BULK_REDUCE_PEER):
                    ev["obj"] = draw(st.sampled_from([64, 72]))
            elif op in (Op.ST_ASYNC, Op.RED_ASYNC):
                red = op == Op.RED_ASYNC
                ev.update(
                    space=1,
                    addr=draw(st.sampled_from([0, 4, 8]) if red else addrs),
                    size=draw(st.sampled_from([4, 8] if red else [4, 8, 16])),
                    obj=draw(st.sampled_from([64, 72])),
                )
                if n_blocks > 1 and draw(st.integers(0, 1)) == 0:
                    ev["peer"] = draw(st.integers(0, n_blocks - 1))
            elif op in (Op.CP_ASYNC_WAIT, Op.BULK_WAIT):
                ev["arg"] = draw(st.integers(0, 2))
            elif op in (
                Op.MBAR_INIT,
                Op.MBAR_ARRIVE,
                Op.MBAR_EXPECT_TX,
                Op.MBAR_WAIT,
                Op.MBAR_INVAL,
                Op.MBAR_ARRIVE_DROP,
                Op.CP_ASYNC_MBAR_ARRIVE,
                Op.CP_ASYNC_MBAR_ARRIVE_NOINC,
            ):
                ev["obj"] = draw(st.sampled_from([64, 72]))
                if op == Op.MBAR_INIT:
                    ev["arg"] = draw(st.integers(1, 3))
                elif op in (Op.MBAR_ARRIVE, Op.MBAR_ARRIVE_DROP):
                    ev["arg"] = draw(st.integers(0, 2))
                elif op == Op.MBAR_EXPECT_TX:
                    ev["arg"] = draw(st.sampled_from([4, 8, 16, 32] * 4 + [INT64_MAX, INT64_MIN]))
                elif op == Op.MBAR_WAIT:
                    ev["arg"] = draw(st.integers(0, 1))
                own = op in (Op.CP_ASYNC_MBAR_ARRIVE, Op.CP_ASYNC_MBAR_ARRIVE_NOINC)
                if not own and n_blocks > 1 and draw(st.integers(0, 4)) == 0:
                    ev["peer"] = draw(st.integers(0, n_blocks - 1))
            ev["ts"] = ts
            ev["site"] = draw(st.integers(0, 3))
            ts += draw(st.integers(0, 2))
            events.append(ev)
            # Track barrier generations so blocked threads are not scheduled.
            if op in (Op.BAR_SYNC, Op.BAR_ARRIVE, Op.WARP_SYNC):
                if op == Op.WARP_SYNC:
                    key = ("warp", block, thread // 32)
                    need = bin(ev["arg"] & 0xFFFFFFFF).count("1")
                else:
                    key = ("bar", block, ev["obj"])
                    need = ev["arg"]
                gen = gens.setdefault(key, [need, []])
                gen[1].append((block, thread, op != Op.BAR_ARRIVE))
                if op != Op.BAR_ARRIVE:
                    blocked.add((block, thread))
                if len(gen[1]) >= gen[0]:
                    for b, t, _waits in gen[1]:
                        blocked.discard((b, t))
                    del gens[key]
            elif op in (Op.CLUSTER_ARRIVE, Op.CLUSTER_ARRIVE_RELAXED) and ev["arg"] > 0:
                gen = cluster_gens.setdefault(clusters[block], [ev["arg"], []])
                gen[1].append((block, thread))
                arrived[(block, thread)] = "pending"
                if len(gen[1]) >= gen[0]:
                    for arriver in gen[1]:
                        if arriver in cluster_held:
                            cluster_held.discard(arriver)
                            blocked.discard(arriver)
                            del arrived[arriver]
                        else:
                            arrived[arriver] = "done"
                    del cluster_gens[clusters[block]]
            elif op == Op.CLUSTER_WAIT:
                if arrived.get((block, thread)) == "done":
                    del arrived[(block, thread)]
                elif (block, thread) in arrived:
                    blocked.add((block, thread))
                    cluster_held.add((block, thread))
    return events
