"""A deterministic scheduler for Numba's CUDA simulator.

The stock simulator runs one OS thread per CUDA thread and lets the GIL pick
the interleaving, so no two runs agree. Here each simulated thread is a
greenlet, exactly one runs at a time, and a :class:`Policy` alone decides who
runs next, so a schedule name and a seed fix the whole interleaving:

``round-robin``  (the default) the next ready thread of the block, in thread
                 order, at every access: the block advances in lockstep, as
                 a warp does.
``serial``       a thread runs until it waits at a barrier, ends, or reaches
                 an atomic or a fence; then the next ready thread in order.
``random``       at each access, atomic or fence, with probability
                 ``RANDOM_SWITCH_P``, a ready thread drawn with the seeded
                 generator; at a barrier or the end of a thread, always a
                 drawn one.

Blocks run one after another, in linear block order, except where a block
cannot go on: when all its threads wait at the grid barrier (``grid.sync()``
of cooperative groups) or make no progress, the next block runs, and the
waiting block resumes later. A block barrier releases when every thread of
the block still running has arrived (threads that ended do not count, as in
the simulator); its ``bar_sync`` events then get the number of arrivals as
their ``arg``.

The grid barrier cannot be a ``bar_sync`` (a barrier belongs to one block).
It is written with flags at device scope: every arriving thread signals flag
F once; when the last thread has arrived, that thread (the coordinator) waits
for all the signals on F and signals flag G once per arrival; every thread
leaving the barrier waits for one signal on G. So everything any thread did
before the barrier happens before everything every thread does after it, and
nothing more. Each generation has its own pair of flags.

Progress: every ``WINDOW`` accesses the scheduler looks at what was logged.
Accesses that write, read something not read since the last progress, or
pass a barrier, and threads that end, are progress (a warp operation is not:
a warp may poll a flag with a vote). A window without any
makes the serial schedule switch thread, ``STALL_WINDOWS`` of them in a row
let another block run, and after ``ABORT_WINDOWS`` (with every block tried)
the recording stops with :class:`Unrecordable` naming the lines the threads
were polling: a spin-wait that nothing will end.

Warp operations (``_warp``) are meetings of the lanes their mask names:
a lane that arrives waits (``WARP_WAITING``) until the last one comes, and
that one writes a ``warp_sync`` over the mask for every lane of the meeting,
in the order they arrived, so a generation's rows stand together in the trace
and no lane has an event between its ``warp_sync`` and the meeting's end. A
lane of the mask that ends without joining, a calling lane outside its own
mask, or lanes of one mask making different operations stop the recording
with :class:`Unrecordable` naming the line; lanes that wait for a lane that
waits elsewhere are a deadlock, named the same way.
"""

from __future__ import annotations

import random
from math import prod

import numpy as np
from greenlet import greenlet

from ...trace.ops import INIT, SIGNAL, WAIT, WARP_SYNC, WRITE, Scope
from ..events import FLUSH_ROWS, OP_MASK, SITE_SHIFT, pack
from ._limits import Unrecordable
from ._warp import FULL_MASK, WARP_SIZE, lanes

READY, WAITING, GRID_WAITING, DONE, WARP_WAITING = 0, 1, 2, 3, 4
"""The states of a simulated thread (the running one is READY)."""

RANDOM_SWITCH_P = 0.125
"""Probability that the random schedule switches threads at an access."""

WINDOW = 4096
"""Accesses (element reads and writes, atomics, fences) between progress checks."""
STALL_WINDOWS = 4
"""Windows without progress after which another block gets to run, if one can."""
ABORT_WINDOWS = 64
"""Windows without progress, every block tried, after which the recording stops."""

GRID_FLAGS = 1 << 40
"""Flag objects of the grid barrier: generation g uses GRID_FLAGS + 2g (arrivals) and
GRID_FLAGS + 2g + 1 (departures)."""

WARP_SYNC_WORD = pack(WARP_SYNC)
"""A ``warp_sync`` (its lane mask travels in the address slot, see ``..events``)."""

_MIX = np.uint64(0x9E3779B97F4A7C15)
"""Mixes an address into a (address, word) key of the progress check."""


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
    """Run each thread until it blocks or synchronises; then the next ready thread."""

    preempts = False

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def first(self, run: BlockRun) -> int:
        return 0

    def after_block(self, run: BlockRun, t: int) -> int | None:
        return run.next_ready(t)

    def at_access(self, run: BlockRun, t: int) -> int | None:
        return t

    def at_sync(self, run: BlockRun, t: int) -> int | None:
        """At an atomic or a fence: let the next thread run (a spin-wait must yield)."""
        return run.next_ready(t)


class RoundRobin(Serial):
    """Switch to the next ready thread, in order, at every access."""

    preempts = True

    def at_access(self, run: BlockRun, t: int) -> int | None:
        return run.next_ready(t)

    at_sync = at_access


class Random(Serial):
    """Seeded random choices at accesses (with ``RANDOM_SWITCH_P``) and at blocks."""

    preempts = True

    def first(self, run: BlockRun) -> int:
        return self.rng.randrange(len(run.states))

    def after_block(self, run: BlockRun, t: int) -> int | None:
        return run.random_ready(self.rng)

    def at_access(self, run: BlockRun, t: int) -> int | None:
        if self.rng.random() < RANDOM_SWITCH_P:
            return run.random_ready(self.rng)
        return t

    at_sync = at_access


POLICIES = {"serial": Serial, "round-robin": RoundRobin, "random": Random}
DEFAULT_SCHEDULE = "round-robin"


# --- the scheduler ---------------------------------------------------------------------


class Scheduler:
    """Runs every launch under one policy and one seeded generator."""

    def __init__(self, log, sites, schedule: str, seed: int) -> None:
        self.log = log
        self.sites = sites
        self.policy = POLICIES[schedule](random.Random(seed))
        self.block: BlockRun | None = None
        """The block running now (kernel API calls ask it who is running)."""
        self.launch: LaunchRun | None = None
        self.progress = 0
        """Bumped by what the log does not show as progress: barrier releases,
        thread ends, atomics that changed memory."""
        self.grid_generations = 0
        """Grid barrier generations of the whole recording (each has its own flags)."""
        self.countdown = WINDOW
        self.preempt = self._preempt if self.policy.preempts else self._tick
        """Called before each element access."""

    def run_launch(self, fn, args, launch: int, grid_dim, block_dim) -> None:
        """Run every block of a launch to its end."""
        self.launch = LaunchRun(self, fn, args, launch, grid_dim, block_dim)
        try:
            self.launch.run()
        finally:
            self.launch = None
            self.block = None

    def _tick(self) -> None:
        self.countdown -= 1
        if self.countdown <= 0:
            self.launch.check_progress()

    def _preempt(self) -> None:
        self.countdown -= 1  # _tick, inlined: this runs at every access
        if self.countdown <= 0:
            self.launch.check_progress()
        run = self.block
        nxt = self.policy.at_access(run, run.current)
        if nxt is not None and nxt != run.current:
            run.switch(nxt)

    def sync_point(self) -> None:
        """Before an atomic and after a fence: the policy may switch threads."""
        self._tick()
        run = self.block
        nxt = self.policy.at_sync(run, run.current)
        if nxt is not None and nxt != run.current:
            run.switch(nxt)

    def grid_sync(self, site: int) -> None:
        """The running thread arrives at the grid barrier (from site word ``site``)."""
        self.launch.grid_sync(site)


class LaunchRun:
    """One launch: its blocks (started in order, as they are reached), the grid
    barrier, and the progress check.

    The launching code is the parent greenlet of every thread: it starts a
    block's threads, and gets control back each time a thread ends or a block
    cannot go on; it then picks the block to run next.
    """

    def __init__(self, sched: Scheduler, fn, args, launch: int, grid_dim, block_dim) -> None:
        self.sched, self.log, self.policy = sched, sched.log, sched.policy
        self.fn, self.args = fn, args
        self.launch = launch
        self.grid_dim, self.block_dim = grid_dim, block_dim
        self.blocks: list[BlockRun | None] = [None] * prod(grid_dim)
        self.live = prod(grid_dim) * prod(block_dim)
        """Threads of the launch that have not ended, started or not."""
        self.grid_arrivals: list[tuple[BlockRun, int, int]] = []  # (block, thread, site)
        self.launcher: greenlet | None = None
        # The progress check.
        self.idle = 0
        self.seen = np.zeros(0, dtype=np.uint64)
        self.checked_rows = self.log.rows
        self.progress_mark = sched.progress
        self.stalled: set[int] = set()

    # -- the launching side --

    def run(self) -> None:
        self.launcher = greenlet.getcurrent()
        index = 0
        try:
            while self.live:
                block = self.pick(index)
                if block is None:
                    raise Unrecordable(self.deadlock())
                index = block.block
                try:
                    block.resume()  # returns when a thread ended or the block cannot go on
                except BaseException as exc:
                    run = self.sched.block
                    exc.add_note(
                        f"in simulated CUDA thread threadIdx="
                        f"{run.thread_idx[run.current]} blockIdx={run.block_idx}"
                    )
                    raise
        except BaseException:
            self._abandon()
            raise

    def pick(self, index: int) -> BlockRun | None:
        """The block to run: from ``index`` on in cyclic order, the first that
        can run and has not stalled (a block not started yet can); if every
        block that can run has stalled, the first of those."""
        order = [(index + k) % len(self.blocks) for k in range(len(self.blocks))]
        for b in order:
            run = self.blocks[b]
            if run is None:
                return self.start(b)
            if run.ready() and b not in self.stalled:
                return run
        return next((self.blocks[b] for b in order if self.blocks[b].ready()), None)

    def start(self, b: int) -> BlockRun:
        run = self.blocks[b] = BlockRun(self, b)
        # Start every thread from here: a greenlet begins at the stack depth of
        # whoever first switches to it, and threads starting each other would
        # pile up Python's recursion depth (thread 140 of 256 hit the limit).
        for g in run.greenlets:
            g.switch()
        return run

    def _abandon(self) -> None:
        """Unwind the threads left suspended by an exception."""
        for run in self.blocks:
            for g in run.greenlets if run is not None else ():
                if g:
                    g.throw()

    def deadlock(self) -> str:
        """Why no thread can run: where the threads wait."""
        block_sites, grid_sites, warp_sites = set(), set(), set()
        waiting = grid = warp = 0
        absent = []
        for run in self.blocks:
            for t, state in enumerate(run.states if run is not None else ()):
                if state == WAITING:
                    waiting += 1
                    block_sites.add(run.wait_site[t])
                elif state == GRID_WAITING:
                    grid += 1
                    grid_sites.add(run.wait_site[t])
                elif state == WARP_WAITING:
                    warp += 1
                    warp_sites.add(run.wait_site[t])
            absent += run.absent_lanes() if run is not None else []
        parts = [
            f"{waiting} at a block barrier ({self._sites(block_sites)})" if waiting else "",
            f"{grid} at the grid barrier ({self._sites(grid_sites)})" if grid else "",
            f"{warp} at a warp operation ({self._sites(warp_sites)}) that lacks "
            f"{'; '.join(absent[:3])}{'; ...' if len(absent) > 3 else ''}"
            if warp
            else "",
        ]
        return (
            f"deadlock: simulated threads wait where no thread can go on: "
            f"{', '.join(p for p in parts if p)}"
        )

    def _sites(self, words) -> str:
        texts = sorted({self.sched.sites.text_of(w) or "an unknown line" for w in words})
        return ", ".join(texts[:3]) + (", ..." if len(texts) > 3 else "")

    # -- the grid barrier --

    def grid_sync(self, site: int) -> None:
        run = self.sched.block
        t = run.current
        generation = self.sched.grid_generations
        arrive, leave = GRID_FLAGS + 2 * generation, GRID_FLAGS + 2 * generation + 1
        self.log.log(arrive, pack(SIGNAL, size=1, scope=int(Scope.DEVICE)) | site)
        self.grid_arrivals.append((run, t, site))
        run.states[t] = GRID_WAITING
        run.wait_site[t] = site
        if len(self.grid_arrivals) == self.live:
            self.grid_release()
        else:
            run.wait(t)
        self.log.log(leave, pack(WAIT, size=1, scope=int(Scope.DEVICE)) | site)

    def grid_release(self) -> None:
        """Every live thread has arrived: the last one to arrive coordinates."""
        generation = self.sched.grid_generations
        arrive, leave = GRID_FLAGS + 2 * generation, GRID_FLAGS + 2 * generation + 1
        n = len(self.grid_arrivals)
        coordinator, thread, site = self.grid_arrivals[-1]
        running = self.sched.block
        self.log.set_agent(self.launch, coordinator.block, thread)
        self.log.log(arrive, pack(WAIT, size=n, scope=int(Scope.DEVICE)) | site)
        self.log.log(leave, pack(SIGNAL, size=n, scope=int(Scope.DEVICE)) | site)
        self.log.set_agent(self.launch, running.block, running.current)
        for run, t, _ in self.grid_arrivals:
            run.states[t] = READY
        self.grid_arrivals = []
        self.sched.grid_generations += 1
        self.sched.progress += 1

    def thread_ended(self) -> None:
        self.live -= 1
        self.sched.progress += 1
        if self.grid_arrivals and len(self.grid_arrivals) == self.live:
            self.grid_release()

    # -- progress --

    def check_progress(self) -> None:
        """Look at the accesses since the last check (see the module's doc)."""
        sched, log = self.sched, self.log
        sched.countdown = WINDOW
        start = self.checked_rows - log.flushed
        self.checked_rows = log.rows
        if sched.progress != self.progress_mark:
            self.progress_mark = sched.progress
            self._progressed(np.zeros(0, dtype=np.uint64))
            return
        if start < 0:
            return  # rows went to the writer since the last check: judge the next window
        words = np.frombuffer(log.word[start:], dtype=np.uint64)
        if np.isin(words & np.uint64(OP_MASK), (WRITE, INIT)).any():
            self._progressed(np.zeros(0, dtype=np.uint64))
            return
        addrs = np.frombuffer(log.addr[start:], dtype=np.uint64)
        keys = np.unique((addrs * _MIX) ^ words)
        new = np.setdiff1d(keys, self.seen, assume_unique=True)
        if new.size:
            self.idle = 0
            self.seen = np.union1d(self.seen, new)
            return
        self.idle += 1
        self._no_progress(words)

    def _progressed(self, seen: np.ndarray) -> None:
        self.idle = 0
        self.seen = seen
        self.stalled.clear()

    def _no_progress(self, words: np.ndarray) -> None:
        run = self.sched.block
        others = [
            b
            for b, other in enumerate(self.blocks)
            if b != run.block and (other is None or (other.ready() and b not in self.stalled))
        ]
        if self.idle >= ABORT_WINDOWS and not others:
            sites = {int(w) for w in np.unique(words & ~np.uint64((1 << SITE_SHIFT) - 1))}
            raise Unrecordable(
                f"no progress: the last {self.idle * WINDOW:,} accesses wrote nothing, read "
                f"nothing new and passed no barrier (a spin-wait that nothing will end?), "
                f"polling at {self._sites(sites)}; the recording stops"
            )
        if self.idle % STALL_WINDOWS == 0 and others:
            self.stalled.add(run.block)
            self.launcher.switch()  # another block runs; this one resumes later
        elif not self.policy.preempts:
            nxt = run.next_ready(run.current)
            if nxt is not None and nxt != run.current:
                run.switch(nxt)


class BlockRun:
    """One thread block: its threads (greenlets), their states and its barrier."""

    def __init__(self, launch: LaunchRun, block: int) -> None:
        n = prod(launch.block_dim)
        self.launch, self.sched = launch, launch.sched
        self.log, self.policy = launch.log, launch.policy
        self.block = block
        self.block_idx = unlinear(block, launch.grid_dim)
        self.thread_idx = [unlinear(t, launch.block_dim) for t in range(n)]
        self.states = [READY] * n
        self.wait_site = [0] * n  # site word of the barrier each waiting thread is at
        self.live = n
        self.arrived = 0
        self.open_rows: list[int] = []  # trace rows of the open generation's bar_syncs
        self.votes: list | None = None  # syncthreads_count/and/or values of this generation
        self.outcome: list | None = None  # the votes of the last completed generation
        self.current = -1
        self.started = False
        self.shared: dict = {}  # allocation site -> this block's RecordedArray
        self.meetings: dict[int, list[Meeting]] = {}  # warp -> its open warp operations
        self.greenlets = [greenlet(self._body(launch.fn, launch.args)) for _ in range(n)]

    def _body(self, fn, args):
        def body():
            self.launch.launcher.switch()  # parked until the policy first picks this thread
            fn(*args)
            self._end(self.current)

        return body

    def ready(self) -> bool:
        return READY in self.states

    def resume(self) -> None:
        """Run a ready thread of this block (the launcher's side)."""
        t = self.policy.after_block(self, self.current) if self.started else self.policy.first(self)
        self.started = True
        self.switch(t)

    def _end(self, t: int) -> None:
        warp, lane = divmod(t, WARP_SIZE)
        self.states[t] = DONE
        # An exited lane is let off the warp operations its mask names (CUDA
        # asks only the lanes that have not exited to make them).
        for meeting in list(self.meetings.get(warp, ())):
            if meeting.required >> lane & 1:
                meeting.required &= ~(1 << lane)
                if meeting.arrived == meeting.required:
                    self._meet(warp, meeting)
        self.live -= 1
        if self.live and self.arrived == self.live:
            self._release()
        self.launch.thread_ended()

    # -- the threads' side --

    def switch(self, t: int) -> None:
        """Run thread ``t`` now; return when this greenlet is resumed."""
        self.current = t
        self.sched.block = self
        self.log.set_agent(self.launch.launch, self.block, t)
        if len(self.log.addr) >= FLUSH_ROWS:
            self.log.flush()
        self.greenlets[t].switch()

    def wait(self, t: int) -> None:
        """Thread ``t`` cannot go on: run another thread of the block, or, when
        none can run, go back to the launcher."""
        nxt = self.policy.after_block(self, t)
        if nxt is None:
            self.launch.launcher.switch()
        elif nxt != t:
            self.switch(nxt)

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
        self.wait_site[t] = word
        self.arrived += 1
        if self.arrived == self.live:
            self._release()
        self.wait(t)
        return self.outcome

    def _release(self) -> None:
        for row in self.open_rows:
            self.log.set_arg(row, len(self.open_rows))
        self.open_rows.clear()
        self.states = [READY if s == WAITING else s for s in self.states]
        self.arrived = 0
        self.outcome = [v for v in self.votes if v is not None] if self.votes else None
        self.votes = None
        self.sched.progress += 1

    # -- warp operations --

    def warp_meet(self, name: str, mask: int, value, word: int) -> Meeting:
        """The running lane makes warp operation ``cuda.NAME`` over ``mask``
        (from site word ``word``), bringing ``value``; returns the meeting once
        every lane of the mask the block has has come, each with its value."""
        t = self.current
        warp, lane = divmod(t, WARP_SIZE)
        mask &= FULL_MASK
        if not mask >> lane & 1:
            raise Unrecordable(
                f"cuda.{name} at {self._site(word)} is made by lane {lane} "
                f"({self._who(t)}), which its mask 0x{mask:08x} leaves out; "
                f"CUDA requires every calling lane in its mask"
            )
        open_meetings = self.meetings.setdefault(warp, [])
        meeting = next((m for m in open_meetings if m.mask == mask), None)
        fresh = meeting is None
        if fresh:
            meeting = Meeting(
                name, mask, mask & self.warp_lanes(warp) & ~self.ended_lanes(warp), word
            )
            open_meetings.append(meeting)
        elif meeting.name != name:
            raise Unrecordable(
                f"lane {lane} ({self._who(t)}) makes cuda.{name} at {self._site(word)} while "
                f"lanes {lanes(meeting.arrived)} of its warp wait at cuda.{meeting.name} "
                f"({self._site(meeting.word)}) with the same mask 0x{mask:08x}; CUDA requires "
                f"the lanes of a mask to make the same warp operation"
            )
        meeting.values[lane] = value
        meeting.words[lane] = word
        meeting.arrived |= 1 << lane
        if meeting.arrived == meeting.required:
            self._meet(warp, meeting)
        else:
            self.states[t] = WARP_WAITING
            self.wait_site[t] = word
            self.wait(t)
        return meeting

    def _meet(self, warp: int, meeting: Meeting) -> None:
        """The last lane has come: one ``warp_sync`` per lane, in arrival order
        (the running lane's last), and the waiting lanes go on."""
        self.meetings[warp].remove(meeting)
        launch, log = self.launch.launch, self.log
        for lane, word in meeting.words.items():
            thread = warp * WARP_SIZE + lane
            log.set_agent(launch, self.block, thread)
            log.log(meeting.required, WARP_SYNC_WORD | word)
            self.states[thread] = READY
        log.set_agent(launch, self.block, self.current)
        # Not progress: a warp polling a flag with a vote meets on every turn.

    def ended_lanes(self, warp: int) -> int:
        """The lanes of ``warp`` whose threads have ended (returned)."""
        first = warp * WARP_SIZE
        return sum(
            1 << lane
            for lane, state in enumerate(self.states[first : first + WARP_SIZE])
            if state == DONE
        )

    def warp_lanes(self, warp: int) -> int:
        """The lanes of ``warp`` this block has (a last warp may be partial)."""
        count = min(WARP_SIZE, len(self.states) - warp * WARP_SIZE)
        return (1 << count) - 1

    def absent_lanes(self) -> list[str]:
        """For a deadlock message: each open warp operation and the lanes it lacks."""
        return [
            f"lane(s) {lanes(m.required & ~m.arrived)} of warp {warp} in block "
            f"{self.block_idx} at cuda.{m.name} ({self._site(m.word)})"
            for warp, meetings in self.meetings.items()
            for m in meetings
        ]

    def _who(self, t: int) -> str:
        return f"threadIdx={self.thread_idx[t]} blockIdx={self.block_idx}"

    def _site(self, word: int) -> str:
        return self.sched.sites.text_of(word) or "an unknown line"

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


class Meeting:
    """An open warp operation: the lanes that have come, with their values."""

    __slots__ = ("name", "mask", "required", "word", "arrived", "values", "words")

    def __init__(self, name: str, mask: int, required: int, word: int) -> None:
        self.name = name
        self.mask = mask
        self.required = required
        """The lanes of the mask that the block has: the meeting's ``warp_sync`` mask."""
        self.word = word
        """The site word of the first arrival (what messages name)."""
        self.arrived = 0
        self.values: dict[int, object] = {}  # lane -> value, in arrival order
        self.words: dict[int, int] = {}  # lane -> site word of its call
