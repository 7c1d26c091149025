"""A deterministic block scheduler for Numba's CUDA simulator.

The stock simulator runs one OS thread per CUDA thread and lets the GIL pick
the interleaving, so no two runs agree. Here each simulated thread is a
greenlet, exactly one runs at a time, and a :class:`Policy` alone decides who
runs next, so a schedule name and a seed fix the whole interleaving:

``serial``       a thread runs until it waits at a barrier or ends; then the
                 next ready thread in thread order.
``round-robin``  the next ready thread in thread order at every access.
``random``       at each access, with probability ``RANDOM_SWITCH_P``, a
                 ready thread drawn with the seeded generator; at a barrier or
                 the end of a thread, always a drawn one.

Blocks run one after another, in linear block order. A barrier releases
when every thread still running has arrived (threads that ended do not count,
as in the simulator); its ``bar_sync`` events then get the number of arrivals
as their ``arg``.
"""

from __future__ import annotations

import random
from math import prod

from greenlet import greenlet

from ._numba_events import FLUSH_ROWS

READY, WAITING, DONE = 0, 1, 2
"""The states of a simulated thread (the running one is READY)."""

RANDOM_SWITCH_P = 0.125
"""Probability that the random schedule switches threads at an access."""


class Dim3:
    """``threadIdx`` / ``blockIdx`` / ``blockDim``: x, y, z."""

    __slots__ = ("x", "y", "z")

    def __init__(self, x: int, y: int, z: int) -> None:
        self.x, self.y, self.z = x, y, z

    def __iter__(self):
        yield from (self.x, self.y, self.z)

    def __str__(self) -> str:
        return f"({self.x}, {self.y}, {self.z})"

    def __repr__(self) -> str:
        return f"Dim3({self.x}, {self.y}, {self.z})"


def unlinear(i: int, dims: tuple[int, int, int]) -> Dim3:
    """The (x, y, z) of linear index ``i``, x fastest (CUDA's linear ids)."""
    return Dim3(i % dims[0], i // dims[0] % dims[1], i // (dims[0] * dims[1]))


# --- policies ----------------------------------------------------------------------

class Serial:
    """Run each thread until it blocks; then the next ready thread in order."""

    preempts = False

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def first(self, run: "BlockRun") -> int:
        return 0

    def after_block(self, run: "BlockRun", t: int) -> int | None:
        return run.next_ready(t)

    def at_access(self, run: "BlockRun", t: int) -> int:
        return t


class RoundRobin(Serial):
    """Switch to the next ready thread, in order, at every access."""

    preempts = True

    def at_access(self, run: "BlockRun", t: int) -> int:
        return run.next_ready(t)


class Random(Serial):
    """Seeded random choices at accesses (with ``RANDOM_SWITCH_P``) and at blocks."""

    preempts = True

    def first(self, run: "BlockRun") -> int:
        return self.rng.randrange(len(run.states))

    def after_block(self, run: "BlockRun", t: int) -> int | None:
        return run.random_ready(self.rng)

    def at_access(self, run: "BlockRun", t: int) -> int:
        if self.rng.random() < RANDOM_SWITCH_P:
            return run.random_ready(self.rng)
        return t


POLICIES = {"serial": Serial, "round-robin": RoundRobin, "random": Random}


# --- running blocks ------------------------------------------------------------------

class Scheduler:
    """Runs the blocks of every launch under one policy and one seeded generator."""

    def __init__(self, log, schedule: str, seed: int) -> None:
        self.log = log
        self.policy = POLICIES[schedule](random.Random(seed))
        self.block: BlockRun | None = None
        """The block running now (kernel API calls ask it who is running)."""
        self.preempt = self._preempt if self.policy.preempts else None
        """Called before each access; None when the policy never switches there."""

    def run_block(self, fn, args, launch: int, block: int, grid_dim, block_dim) -> None:
        """Run block ``block`` (linear id) of a launch to its end."""
        self.block = BlockRun(self, fn, args, launch, block, grid_dim, block_dim)
        try:
            self.block.run()
        finally:
            self.block = None

    def _preempt(self) -> None:
        run = self.block
        nxt = self.policy.at_access(run, run.current)
        if nxt != run.current:
            run.switch(nxt)


class BlockRun:
    """One thread block: its threads (greenlets), their states and its barrier.

    The launching code is the parent greenlet: it starts the first thread and
    gets control back each time a thread ends (or raises). Threads hand
    control to each other directly at accesses and barriers.
    """

    def __init__(self, sched: Scheduler, fn, args, launch: int, block: int, grid_dim,
                 block_dim) -> None:
        n = prod(block_dim)
        self.sched, self.log, self.policy = sched, sched.log, sched.policy
        self.launch, self.block = launch, block
        self.block_idx = unlinear(block, grid_dim)
        self.thread_idx = [unlinear(t, block_dim) for t in range(n)]
        self.states = [READY] * n
        self.live = n
        self.arrived = 0
        self.open_rows: list[int] = []  # buffer rows of the open generation's bar_syncs
        self.votes: list | None = None  # syncthreads_count/and/or values of this generation
        self.outcome: list | None = None  # the votes of the last completed generation
        self.current = -1
        self.shared: dict = {}  # allocation site -> this block's RecordedArray
        self._launcher: greenlet | None = None
        self._greenlets = [greenlet(self._body(fn, args)) for _ in range(n)]

    # -- the launching side --

    def run(self) -> None:
        # Start every thread from here: a greenlet begins at the stack depth of
        # whoever first switches to it, and threads starting each other would
        # pile up Python's recursion depth (thread 140 of 256 hit the limit).
        self._launcher = greenlet.getcurrent()
        for g in self._greenlets:
            g.switch()
        nxt = self.policy.first(self)
        try:
            while nxt is not None:
                self.switch(nxt)  # returns when some thread has ended
                nxt = self.policy.after_block(self, self.current)
        except BaseException as exc:
            exc.add_note(f"in simulated CUDA thread threadIdx={self.thread_idx[self.current]} "
                         f"blockIdx={self.block_idx}")
            self._abandon()
            raise
        if self.live:
            raise RuntimeError("scheduler stopped with threads still running")

    def _body(self, fn, args):
        def body():
            self._launcher.switch()  # parked until the policy first picks this thread
            fn(*args)
            self._end(self.current)
        return body

    def _end(self, t: int) -> None:
        self.states[t] = DONE
        self.live -= 1
        if self.live and self.arrived == self.live:
            self._release()

    def _abandon(self) -> None:
        """Unwind the threads left suspended by an exception."""
        for g in self._greenlets:
            if g:
                g.throw()

    # -- the threads' side --

    def switch(self, t: int) -> None:
        """Run thread ``t`` now; return when this greenlet is resumed."""
        self.current = t
        self.log.set_agent(self.launch, self.block, t)
        if not self.open_rows and len(self.log.addr) >= FLUSH_ROWS:
            self.log.flush()
        self._greenlets[t].switch()

    def barrier(self, word: int, vote=None):
        """The running thread arrives at barrier 0 and waits for the block.

        ``vote`` (syncthreads_count/and/or) is collected; the votes of the
        whole generation come back once it completes.
        """
        t = self.current
        self.open_rows.append(self.log.log(0, word))
        if vote is not None:
            if self.votes is None:
                self.votes = [None] * len(self.states)
            self.votes[t] = vote
        self.states[t] = WAITING
        self.arrived += 1
        if self.arrived == self.live:
            self._release()
        nxt = self.policy.after_block(self, t)
        if nxt != t:
            self.switch(nxt)
        return self.outcome

    def _release(self) -> None:
        for row in self.open_rows:
            self.log.set_arg(row, len(self.open_rows))
        self.open_rows.clear()
        self.states = [READY if s == WAITING else s for s in self.states]
        self.arrived = 0
        self.outcome = [v for v in self.votes if v is not None] if self.votes else None
        self.votes = None

    # -- choosing --

    def next_ready(self, t: int) -> int | None:
        """The first ready thread after ``t`` in cyclic thread order (``t`` last)."""
        states, n = self.states, len(self.states)
        for i in range(t + 1, t + 1 + n):
            if states[i % n] == READY:
                return i % n
        return None

    def random_ready(self, rng: random.Random) -> int | None:
        """A ready thread drawn with ``rng``: a few blind draws, then among all ready."""
        states = self.states
        for _ in range(4):
            i = rng.randrange(len(states))
            if states[i] == READY:
                return i
        ready = [i for i, s in enumerate(states) if s == READY]
        return rng.choice(ready) if ready else None
