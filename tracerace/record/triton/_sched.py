"""The programs of a launch as cooperative tasks, so one can wait for a later one.

Triton's interpreter calls the kernel once per program, in grid order
(``GridExecutor.__call__``). The recorder replaces that kernel function with
:meth:`Programs.function`: each call makes the program a greenlet, and the
call for the last program of the grid runs them all (the interpreter's patches
of ``triton.language`` are still in place, and an exception still leaves
through its loop). Exactly one program runs at a time; it gives way only at an
atomic (:meth:`Programs.atomic_done`) or a volatile load
(:meth:`Programs.read`), and a :class:`Schedule` decides who runs next:

``serial``  (the default) a program runs until it ends or polls: an atomic that
            changed no memory, or a volatile load that read the same addresses
            and values as the program's last one at that line. Then the next
            live program in the interpreter's grid order runs (``z`` fastest).
            A launch whose programs never poll runs exactly in grid order.
``random``  also at every atomic that changed memory, with probability
            ``RANDOM_SWITCH_P``, a live program drawn with the seeded generator;
            after a poll always a drawn one.

Progress is any store or atomic that changed memory. When every live program
has polled and none made progress for ``DEADLOCK_ROUNDS`` rounds, no program
can end (a deadlock, or a wait for a program that already ended): the
recording stops naming each program and the line where it polls.
"""

from __future__ import annotations

import inspect
import random
import types

from greenlet import greenlet

RANDOM_SWITCH_P = 0.125
"""Probability that the random schedule switches programs at an atomic that made progress."""
DEADLOCK_ROUNDS = 64
"""Rounds in which every live program polled without progress, after which the
recording stops (a poll loop may also count its tries and give up)."""
SCHEDULES = ("serial", "random")


class Deadlock(Exception):
    """No program of the launch can make progress."""


class Schedule:
    """Who runs next: the programs' order, or a seeded random pick."""

    def __init__(self, name: str, seed: int) -> None:
        if name not in SCHEDULES:
            raise ValueError(name)
        self.name = name
        self._random = random.Random(seed)

    def switch_on_progress(self) -> bool:
        return self.name == "random" and self._random.random() < RANDOM_SWITCH_P

    def next(self, live: list[int], current: int) -> int:
        """The program to run among ``live`` (sorted), after ``current``."""
        if self.name == "random":
            return self._random.choice(live)
        later = [p for p in live if p > current]
        return later[0] if later else live[0]


class Programs:
    """The programs of one launch at a time (see the module)."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self._enter = None
        self._grid = (1, 1, 1)
        self._tasks: dict[int, tuple[tuple[int, int, int], greenlet]] = {}  # by call order
        self._polls: dict[int, str] = {}  # program -> where it last polled
        self._reads: dict[tuple[int, str], bytes] = {}  # (program, site) -> last volatile read
        self._current = -1
        self._entered = (0, 0, 0)  # the grid index the interpreter set last
        self._main: greenlet | None = None
        self.progress = 0
        """Stores and atomics that changed memory, in the launch so far."""

    def set_enter(self, enter) -> None:
        """``enter(x, y, z)`` makes program ``(x, y, z)`` the running one (the
        interpreter's grid index and the trace's agent)."""
        self._enter = enter

    def function(self, fn):
        """The kernel function the interpreter calls once per program."""

        def program(**args):
            self._spawn(fn, args)

        # The interpreter finds triton.language in the function's globals.
        program = types.FunctionType(
            program.__code__, fn.__globals__, fn.__name__, None, program.__closure__
        )
        program.__signature__ = inspect.signature(fn)
        return program

    def grid(self, dims: tuple[int, int, int]) -> None:
        self._grid = dims
        self._tasks = {}
        self._polls = {}
        self._reads = {}
        self.progress = 0

    def _spawn(self, fn, args: dict) -> None:
        pid = self._entered
        # Programs are numbered in the order the interpreter calls them (its grid order).
        self._tasks[len(self._tasks)] = (pid, greenlet(lambda: fn(**args)))
        nx, ny, nz = self._grid
        if pid == (nx - 1, ny - 1, nz - 1):
            self._run()

    def entered(self, pid: tuple[int, int, int]) -> None:
        """The interpreter set the grid index: the program it calls next."""
        self._entered = pid

    def _run(self) -> None:
        """Run every program to its end, switching at polls (and progress when random)."""
        self._main = greenlet.getcurrent()
        current = min(self._tasks)
        stalled_rounds, seen = 0, set()
        mark = self.progress
        try:
            while self._tasks:
                pid, task = self._tasks[current]
                self._enter(*pid)
                self._current = current
                task.switch()
                if task.dead:
                    del self._tasks[current]
                    self._polls.pop(current, None)
                    stalled_rounds, seen, mark = 0, set(), self.progress
                    if not self._tasks:
                        break
                elif self.progress != mark:
                    stalled_rounds, seen, mark = 0, set(), self.progress
                else:
                    seen.add(current)
                    if seen >= set(self._tasks) and current in self._polls:
                        stalled_rounds, seen = stalled_rounds + 1, set()
                        if stalled_rounds >= DEADLOCK_ROUNDS:
                            raise Deadlock(self._deadlock())
                current = self.schedule.next(sorted(self._tasks), current)
        finally:
            self._main = None
            self._tasks = {}

    def atomic_done(self, changed: bool, site) -> None:
        """A program's atomic ran; ``changed``: it changed memory. ``site()`` gives
        the kernel line (asked only when the program polls)."""
        if changed:
            self.progress += 1
            self._polls.pop(self._current, None)
            if self.schedule.switch_on_progress():
                self._yield()
            return
        self.poll(site())

    def read(self, site: str, seen: bytes) -> None:
        """A volatile load at ``site`` read ``seen`` (its addresses and values): the
        same as this program's last one there is a poll."""
        key = (self._current, site)
        if self._reads.get(key) == seen:
            self.poll(site)
        else:
            self._reads[key] = seen

    def poll(self, site: str) -> None:
        """The running program polls at ``site``: the others run."""
        self._polls[self._current] = site
        self._yield()

    def stored(self) -> None:
        self.progress += 1

    def _yield(self) -> None:
        if self._main is not None:
            self._main.switch()

    def _deadlock(self) -> str:
        waits = ", ".join(
            f"program {self._tasks[p][0]} at {self._polls.get(p, 'an atomic')}"
            for p in sorted(self._tasks)
        )
        return (
            f"no program can go on: {waits} poll memory that no program changes "
            f"(a deadlock, or a wait for a program that has ended)"
        )
