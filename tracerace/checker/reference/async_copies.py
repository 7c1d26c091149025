"""When an async agent's writes are retired (``in_flight``, ``retiring_wait``) or
fenced for the generic proxy (``proxy_fenced``, ``on_fence_proxy``) (the twin of
``engine/async_copies.py``).
"""

from __future__ import annotations

from ...trace import ops as O
from .. import reasons as R
from .agents import AgentState
from .clocks import Clock, shared_epoch
from .memory import Access


class AsyncCopies:
    """Retired and fenced async writes (rule 5).

    A part of :class:`~tracerace.checker.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def in_flight(self, x: Access) -> bool:
        """Whether copy access ``x`` is not retired yet: a cp.async or bulk group
        no wait of its issuer retired, or a tma_load whose phase no mbar_wait
        (of any thread) has returned on."""
        if x.copy_kind == R.INFLIGHT_TMA_LOAD:
            return x.phase not in self.waited_phases
        return self.async_retired[x.agent] < x.epoch

    def retiring_wait(self, w: Access) -> tuple:
        """(thread, its epoch, site) of the wait that retired copy ``w``: the
        first mbar_wait that returned on its phase (an st_async store), or
        the first wait that retired a cp.async copy: its issuer's
        cp_async_wait, or the first mbar_wait on a phase that tracked it
        (``cp_async_mbar_arrive``)."""
        if w.copy_kind == R.INFLIGHT_TMA_LOAD:
            return self.waited_phases[w.phase]
        _, epoch, site, thread, _ = self.cp_retirement(w)
        return thread, epoch, site

    def cp_retirement(self, w: Access) -> tuple:
        """The entry of the issuer's ``cp_retire_log`` of the wait that retired
        cp.async copy ``w``: the first whose stamp reaches w's."""
        st = self.agents[w.agent[:4]]
        return next(entry for entry in st.cp_retire_log if entry[0] >= w.epoch)

    def proxy_code(self, w: Access) -> int:
        """The ``proxy_fence`` reason of copy ``w``'s destination write:
        ``PROXY_CP_ASYNC_MBAR_DEST`` for a cp.async copy an mbar_wait retired."""
        if w.copy_kind == R.INFLIGHT_CP_ASYNC and self.cp_retirement(w)[4]:
            return R.PROXY_CP_ASYNC_MBAR_DEST
        return R.PROXY_CP_ASYNC_DEST

    def proxy_fenced(self, w: Access, clock: Clock, space: int) -> bool:
        """A fence_proxy_async by w's thread after w that happens before the
        clock; a copy's write (cp.async or st_async) is the thread's of the
        wait that retired it, and the fence comes after that wait."""
        if w.is_async_agent:
            thread, after, _ = self.retiring_wait(w)
        else:
            thread, after = w.agent[:4], w.epoch
        known = shared_epoch(clock, thread) if space == O.SPACE_SHARED else clock.get(thread, 0)
        return any(after < f <= known for f in self.agents[thread].fences)

    def on_fence_proxy(self, row: int, ev: dict, st: AgentState) -> None:
        st.fences.append(st.epoch)
