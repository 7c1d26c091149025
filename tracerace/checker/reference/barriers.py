"""Block and warp barriers: generations, their arrivals, what a completed generation
gives its waiters, and the incomplete ones at the end of a launch (the twin of
``engine/barriers.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...trace import badinput
from ...trace import ops as O
from .. import reasons as R
from .agents import AgentState
from .clocks import GLOBAL_FENCE, SHARED_FENCE, Clock, join, join_relation, relation

WARP_BARRIER = -2  # bar_obj of a warp_sync generation


@dataclass
class Generation:
    arg: int
    first_row: int
    rows: list = field(default_factory=list)
    clock: Clock = field(default_factory=dict)
    waiters: list = field(default_factory=list)
    mask: int = 0
    # Arrivals whose barrier fences one memory only: that relation's entries.
    global_only: dict = field(default_factory=dict)
    shared_only: dict = field(default_factory=dict)
    waiter_fences: dict = field(default_factory=dict)  # id(agent state) -> its fence_spaces


class Barriers:
    """bar_sync, bar_arrive and warp_sync, and the end of a launch.

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def on_barrier(self, row: int, ev: dict, st: AgentState) -> None:
        op = ev["op"]
        if op == O.WARP_SYNC:
            mask = ev["arg"] & 0xFFFFFFFF
            count = bin(mask).count("1")
            bkey = (ev["launch"], ev["block"], "warp", ev["thread"] // 32)
            bar_obj = WARP_BARRIER
            if count == 0:
                raise self.error(row, badinput.EMPTY_WARP_MASK)
        else:
            count = ev["arg"]
            mask = 0
            bkey = (ev["launch"], ev["block"], "bar", ev["obj"])
            # As the engine keeps it (and a finding's bar_obj holds it): a
            # signed 64-bit word.
            bar_obj = ev["obj"] - (1 << 64) if ev["obj"] >> 63 else ev["obj"]
            if count <= 0:
                raise self.error(row, badinput.BARRIER_COUNT, ev["obj"], count)
        gen = self.generations.get(bkey)
        if gen is None:
            gen = Generation(arg=count, first_row=row, mask=mask)
            self.generations[bkey] = gen
        elif count != gen.arg or mask != gen.mask:
            self.emit(
                O.K_BARRIER_MISMATCH,
                row,
                ev,
                prev_row=gen.first_row,
                prev_ev=gen.first_ev,
                obj=ev["obj"] if op != O.WARP_SYNC else ev["arg"] & badinput.OBJ_MASK,
                code=R.BAR_ARG_DISAGREES,
                aux=gen.arg,
                bar=st.bar,
            )
        if not gen.rows:
            gen.first_ev = ev
        gen.rows.append(row)
        gen.last_ev = ev
        fences = ev["fence_spaces"] & (GLOBAL_FENCE | SHARED_FENCE)
        if fences == GLOBAL_FENCE | SHARED_FENCE:
            join(gen.clock, st.clock)
        elif fences:
            gen_only = gen.global_only if fences == GLOBAL_FENCE else gen.shared_only
            join(gen_only, relation(st.clock, fences))
        number = self.gen_count[bkey]
        if op != O.BAR_ARRIVE:
            gen.waiters.append((st, fences))
            gen.waiter_fences[id(st)] = ev["fence_spaces"]
            st.blocked_on = (bkey, number)
        if len(gen.rows) >= gen.arg:
            if number >= self.bar_gens_max:  # past what the engine's positions hold
                obj = mask if op == O.WARP_SYNC else ev["obj"]
                raise self.error(
                    row, badinput.BAR_GENS_OVERFLOW, ev["block"], obj, self.bar_gens_max
                )
            ev_fences = gen.waiter_fences
            for waiter, fences in gen.waiters:
                # Each relation joins what the arrivals that fence its memory gave.
                if fences == GLOBAL_FENCE | SHARED_FENCE:
                    join(waiter.clock, gen.clock)
                for which in (GLOBAL_FENCE, SHARED_FENCE):
                    if fences & which:
                        if fences != GLOBAL_FENCE | SHARED_FENCE:
                            join_relation(waiter.clock, relation(gen.clock, which), which)
                        join_relation(
                            waiter.clock,
                            gen.global_only if which == GLOBAL_FENCE else gen.shared_only,
                            which,
                        )
                waiter.blocked_on = None
                waiter.bar = (bar_obj, number)
                waiter.bar_fences = ev_fences[id(waiter)]
            self.gen_count[bkey] += 1
            del self.generations[bkey]

    def finish_launch(self) -> None:
        """End of a launch: incomplete barrier generations are mismatches."""
        for bkey, gen in sorted(self.generations.items(), key=lambda kv: kv[1].first_row):
            ev = gen.last_ev
            if bkey[2] == "bar":
                obj = ev["obj"]
            elif bkey[2] == "warp":
                obj = ev["arg"] & badinput.OBJ_MASK
            else:  # a cluster barrier: its cluster
                obj = bkey[3]
            self.emit(
                O.K_BARRIER_MISMATCH,
                gen.rows[-1],
                ev,
                obj=obj,
                code=R.BAR_INCOMPLETE,
                aux=len(gen.rows),
            )
        self.generations.clear()
        for st in self.agents.values():
            st.blocked_on = None
        # Launch order covers every release of this launch: later launches
        # need none of them (and no explanation may name them).
        self.atomic_releases.clear()
