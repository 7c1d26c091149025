"""The Numba engine: the reference checker's semantics, fast and streaming.

:func:`check_trace` (in :mod:`.check`) feeds a trace's batches to the replay
kernel (:mod:`.replay`), which walks each batch's NumPy columns and keeps all
state in arrays that persist across batches (:mod:`.state`), so memory is
bounded by what may still race, not by the trace. Every rule has the name of
its twin in the reference checker (:mod:`tracerace.checker.reference`): the replay
dispatches each op to its ``on_*`` handler; ``docs/engine.md`` maps each
module to the rules it implements, its reference twin and its tests.

Representation:

* agents get dense indices per launch; clocks are shared sparse snapshots
  (:mod:`.clocks`) plus the agent's own epoch (:mod:`.agents`);
* shadow memory is the granule table of :mod:`.shadow`, walked by
  :mod:`.granules`, with whole pages for large accesses (:mod:`.pages`);
* everything of a launch is dropped when the next launch starts: launch order
  makes it happen before everything that follows. Only the ``init`` state of
  global memory and the pending counts of flags survive.

When a pool is about to run out, the kernel stops *before* touching the event
that needs the room (:mod:`.room`) and returns ``NEED_GROW`` with a bit mask
of pools; the driver grows them (:mod:`.pools`, :mod:`.state`) and resumes at
that row. So no event is ever half applied.
"""

from .check import check_trace
from .state import EngineState

__all__ = ["check_trace", "EngineState"]
