"""The reference checker: the definition of tracerace's semantics.

Plain Python, one event at a time, with explicit vector clocks (dicts) and the
full per-byte access history: nothing is pruned, nothing is clever. The Numba
engine (``tracerace.checker.engine``) must produce exactly the same findings on every
trace; ``docs/semantics.md`` states the rules in prose.

Vocabulary (ThreadSanitizer's): an *agent* is a (launch, block, thread) triple
or one of its asynchronous copy agents; each agent counts its events in an
*epoch*; a *clock* maps agents to the epoch of theirs known to happen before;
``x`` happens before ``e`` when ``clock(e)[agent(x)] >= epoch(x)``, or when
``x`` is in an earlier launch.

Asynchronous copies run on agents of their own, so an in-flight copy is
concurrent with everything, its issuer included, until something retires it:

* ``(t, CP)``: the cp.async copies of thread ``t``; a copy's epoch is its group
  number, and ``clock[(t, CP)]`` is the number of groups known retired.
* ``(t, BULK)``: the same for tma_store bulk groups.
* ``(t, TMA, mbarrier)``: the tma_loads of ``t`` that complete bytes on one
  mbarrier; epoch ``k`` is the k-th such load. Phases complete in order, so a
  phase's clock naming ``k`` also covers loads ``1..k-1``.

A copy's own clock is its issuer's clock at the issue, without an entry for
the copy agent itself: two in-flight copies are never ordered.

Scopes (the PTX memory model's *morally strong*): ``reach(x, y)`` is the
narrowest scope that contains both agents; an operation of scope ``s``
contains both when ``s >= reach``. A release/acquire pair synchronizes only
when every scope involved (each atomic's, and a fence's that supplies a
half) reaches.

The checker is one class, :class:`ReferenceChecker` (``checker.py``), made of one
mixin per concern; each module is the twin of the engine module of the same name
(``docs/engine.md`` maps every rule to both):

* ``checker.py``: the state of a replay, ``step`` and ``HANDLERS`` (``engine/replay.py``);
* ``clocks.py``: vector clocks and their two relations;
* ``agents.py``: agents, their state, ``reach``;
* ``memory.py``: ``on_access``, ``on_init``, ``copy`` and each byte's history;
* ``races.py``: happens-before, the race check's candidates and findings;
* ``async_copies.py``: ``on_fence_proxy``, retired and fenced async writes;
* ``copies.py``: cp.async and bulk groups and their waits;
* ``atomics.py``: ``on_fence`` and the two sides of an atomic;
* ``mbarriers.py``: ``on_mbar_*`` and ``on_tma_load``;
* ``locks.py``, ``signals.py``, ``barriers.py``: the handlers of the same names.
"""

from __future__ import annotations

from .checker import HANDLERS, ReferenceChecker, check_trace

__all__ = ["HANDLERS", "ReferenceChecker", "check_trace"]
