"""Cluster barriers: barrier.cluster.arrive (release or relaxed) and
barrier.cluster.wait, counted off per (launch, cluster) in generations (the twin
of ``engine/clusters.py``).
"""

from __future__ import annotations

from ...trace import badinput
from ...trace import ops as O
from .. import reasons as R
from .agents import AgentState
from .barriers import Generation
from .clocks import copy_clock, join

CLUSTER = "cluster"  # the kind of a cluster barrier's generation key


class Clusters:
    """cluster_arrive, cluster_arrive_relaxed and cluster_wait.

    A thread arrives, then waits for the generation of its arrival: a wait
    after the generation completed takes its clock at once; a wait before
    holds the thread (``blocked_on``) until the last arrival. A release
    arrival gives the generation its clock; a relaxed one only counts.

    A part of :class:`~tracerace.reference.ReferenceChecker`, whose ``__init__``
    (``checker.py``) makes the state these methods use.
    """

    def on_cluster_arrive(self, row: int, ev: dict, st: AgentState) -> None:
        cluster = st.cluster
        if st.cluster_pending is not None or st.cluster_done is not None:
            raise self.error(row, badinput.CLUSTER_ARRIVE_AGAIN, ev["block"], ev["thread"], cluster)
        count = ev["arg"]
        if count <= 0:
            raise self.error(row, badinput.CLUSTER_COUNT, cluster, count)
        bkey = (ev["launch"], -1, CLUSTER, cluster)
        gen = self.generations.get(bkey)
        if gen is None:
            gen = Generation(arg=count, first_row=row)
            gen.first_ev = ev
            self.generations[bkey] = gen
        elif count != gen.arg:
            self.emit(
                O.K_BARRIER_MISMATCH,
                row,
                ev,
                prev_row=gen.first_row,
                prev_ev=gen.first_ev,
                obj=cluster,
                code=R.BAR_ARG_DISAGREES,
                aux=gen.arg,
                bar=st.bar,
            )
        gen.rows.append(row)
        gen.last_ev = ev
        if ev["op"] == O.CLUSTER_ARRIVE:
            join(gen.clock, st.clock)
        gen.waiters.append(st)  # every arrival waits for this generation, now or later
        st.cluster_pending = (bkey, self.gen_count[bkey])
        if len(gen.rows) < gen.arg:
            return
        for arriver in gen.waiters:
            if arriver.blocked_on == arriver.cluster_pending:
                join(arriver.clock, gen.clock)
                arriver.blocked_on = None
            else:
                arriver.cluster_done = copy_clock(gen.clock)
            arriver.cluster_pending = None
        self.gen_count[bkey] += 1
        del self.generations[bkey]

    def on_cluster_wait(self, row: int, ev: dict, st: AgentState) -> None:
        if st.cluster_done is not None:
            join(st.clock, st.cluster_done)
            st.cluster_done = None
        elif st.cluster_pending is not None:
            st.blocked_on = st.cluster_pending
        else:
            raise self.error(
                row, badinput.CLUSTER_WAIT_ALONE, ev["block"], ev["thread"], st.cluster
            )
