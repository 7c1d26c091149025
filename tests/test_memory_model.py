"""The PTX memory-model points of the contract, racy and fixed, in both checkers.

Morally strong scopes on both sides of a release/acquire pair, the scope of a
fence that supplies a half, a TMA load read before any wait on its phase, and
cp.async destinations handed to the async proxy. Each case asserts the exact
(row, kind, earlier row) triples (``check`` makes both checkers agree on every
field) and the reason the finding carries, which names the missing piece.
"""

from __future__ import annotations

import pytest
from builders import Trace
from test_rules import check

from tracerace.checker import reasons as R
from tracerace.report.explain import explain
from tracerace.trace.ops import HazardKind as K
from tracerace.trace.ops import Scope

BLOCK, DEVICE = int(Scope.BLOCK), int(Scope.DEVICE)
RELAXED, ACQUIRE, RELEASE, ACQ_REL = 0, 1, 2, 3
FLAG, DATA = 64, 0


def findings(t: Trace):
    facts, res = check(t)
    return facts, res.findings


def one(res_findings, kind: str):
    [f] = [f for f in res_findings if K(int(f["kind"])).label == kind]
    return f


# -- morally strong: both atomics' scopes must contain both agents ----------
def flagged() -> Trace:
    """A trace whose flag holds a value (row 0)."""
    return Trace().init(0, 0, addr=FLAG, size=4)


def flag_handoff(release_scope: int, acquire_scope: int) -> Trace:
    t = flagged().write(0, 0, addr=DATA, size=4)
    t.atomic(0, 0, addr=FLAG, size=4, sem=RELEASE, scope=release_scope)
    t.atomic(1, 0, addr=FLAG, size=4, sem=ACQUIRE, scope=acquire_scope)
    return t.read(1, 0, addr=DATA, size=4)


def test_block_scope_acquire_of_a_flag_released_by_another_block_races():
    facts, found = findings(flag_handoff(DEVICE, BLOCK))
    # The two atomics are not morally strong: they race with each other too.
    assert facts == {(3, "waw", 2), (4, "raw", 1)}
    f = one(found, "raw")
    assert int(f["code"]) == R.RACE_WEAK_SYNC
    assert int(f["obj"]) == FLAG
    assert R.weak_sync_parts(int(f["aux"])) == (DEVICE, BLOCK, DEVICE, R.WEAK_SCOPE)
    text = explain(f)
    assert "acquire" in text and "block scope" in text and "device" in text


def test_block_scope_release_read_by_another_block_races():
    facts, found = findings(flag_handoff(BLOCK, DEVICE))
    assert facts == {(3, "waw", 2), (4, "raw", 1)}
    assert R.weak_sync_parts(int(one(found, "raw")["aux"])) == (BLOCK, DEVICE, DEVICE, R.WEAK_SCOPE)
    assert "release" in explain(one(found, "raw"))


def test_device_scope_on_both_sides_synchronizes():
    assert findings(flag_handoff(DEVICE, DEVICE))[0] == set()


def test_block_scope_on_both_sides_is_enough_within_a_block():
    t = flagged().write(0, 0, addr=DATA, size=4)
    t.atomic(0, 0, addr=FLAG, size=4, sem=RELEASE, scope=BLOCK)
    t.atomic(0, 1, addr=FLAG, size=4, sem=ACQUIRE, scope=BLOCK).read(0, 1, addr=DATA, size=4)
    assert findings(t)[0] == set()
    t.atomic(0, 40, addr=FLAG, size=4, sem=ACQUIRE, scope=int(Scope.WARP))  # another warp
    t.read(0, 40, addr=DATA, size=4)
    assert findings(t)[0] == {(5, "waw", 3), (6, "raw", 1)}


def test_cluster_scope_reaches_another_block_of_the_cluster_only():
    t = flagged().write(0, 0, addr=DATA, size=4, cluster=0)
    t.atomic(0, 0, addr=FLAG, size=4, sem=RELEASE, scope=int(Scope.CLUSTER), cluster=0)
    t.atomic(1, 0, addr=FLAG, size=4, sem=ACQUIRE, scope=int(Scope.CLUSTER), cluster=0)
    t.read(1, 0, addr=DATA, size=4, cluster=0)
    t.atomic(2, 0, addr=FLAG, size=4, sem=ACQUIRE, scope=int(Scope.CLUSTER), cluster=1)
    t.read(2, 0, addr=DATA, size=4, cluster=1)
    assert findings(t)[0] == {(5, "waw", 3), (6, "raw", 1)}


# -- fence scope: the fence that supplies a half must reach too --------------
def last_block_reduction(fence_scope: int) -> Trace:
    """Each block writes its partial sum, fences, and bumps a device-scope
    counter (relaxed); the block that sees the last count fences and reads
    every partial sum: CUDA's threadFenceReduction sample."""
    t = flagged()
    for b in (0, 1):
        t.write(b, 0, addr=DATA + 4 * b, size=4)
        t.fence(b, 0, sem=ACQ_REL, scope=fence_scope)
        t.atomic(b, 0, addr=FLAG, size=4, sem=RELAXED, scope=DEVICE)
    t.fence(1, 0, sem=ACQ_REL, scope=fence_scope)
    return t.read(1, 0, addr=DATA, size=8)


def test_threadfence_block_in_a_last_block_reduction_races():
    facts, found = findings(last_block_reduction(BLOCK))
    assert facts == {(8, "raw", 1)}
    f = one(found, "raw")
    assert int(f["code"]) == R.RACE_WEAK_SYNC
    # Block 0's release reaches only its block (the narrower of fence and atomic).
    assert R.weak_sync_parts(int(f["aux"]))[::2] == (BLOCK, DEVICE)


def test_threadfence_in_a_last_block_reduction_is_clean():
    assert findings(last_block_reduction(DEVICE))[0] == set()


def test_acquire_fence_narrower_than_the_pair_leaves_the_relaxed_read_unsynchronized():
    t = flagged().write(0, 0, addr=DATA, size=4).fence(0, 0, sem=RELEASE, scope=DEVICE)
    t.atomic(0, 0, addr=FLAG, size=4, sem=RELAXED, scope=DEVICE)
    t.atomic(1, 0, addr=FLAG, size=4, sem=RELAXED, scope=DEVICE)
    t.fence(1, 0, sem=ACQUIRE, scope=BLOCK).read(1, 0, addr=DATA, size=4)
    facts, found = findings(t)
    assert facts == {(6, "raw", 1)}
    f = one(found, "raw")
    assert R.weak_sync_parts(int(f["aux"])) == (DEVICE, DEVICE, DEVICE, R.WEAK_RELAXED)
    assert "acquire fence" in explain(f)
    # A later, wide enough acquire fence still completes the pattern.
    t.fence(1, 0, sem=ACQUIRE, scope=DEVICE).read(1, 0, addr=DATA, size=4)
    assert findings(t)[0] == {(6, "raw", 1)}


def test_a_wide_release_fence_before_a_narrow_one_still_releases_to_other_blocks():
    t = flagged().write(0, 0, addr=DATA, size=4).fence(0, 0, sem=RELEASE, scope=DEVICE)
    t.write(0, 0, addr=DATA + 4, size=4).fence(0, 0, sem=RELEASE, scope=BLOCK)
    t.atomic(0, 0, addr=FLAG, size=4, sem=RELAXED, scope=DEVICE)
    t.atomic(1, 0, addr=FLAG, size=4, sem=ACQUIRE, scope=DEVICE)
    t.read(1, 0, addr=DATA, size=8)
    # The device fence released the first write; only the second races.
    facts, found = findings(t)
    assert facts == {(7, "raw", 3)}
    assert int(one(found, "raw")["code"]) == R.RACE_WEAK_SYNC


# -- TMA load read before any wait on its phase: async_inflight --------------
def tma(waits: list[int], *, phases: int = 1) -> Trace:
    t = Trace().init(0, 0, addr=4096, size=64)
    t.mbar_init(0, 0, obj=8, arg=1)
    for phase in range(phases):
        t.mbar_expect_tx(0, 0, obj=8, arg=64).mbar_arrive(0, 0, obj=8)
        t.tma_load(0, 0, addr=0, size=64, space=1, addr2=4096, obj=8)
        if phase in waits:
            t.mbar_wait(0, 1, obj=8, arg=phase & 1)
    return t.read(0, 1, addr=0, size=4, space=1)


def test_tma_load_read_without_a_wait_is_in_flight_naming_mbarrier_and_phase():
    facts, found = findings(tma(waits=[]))
    assert facts == {(5, "async_inflight", 4)}
    f = one(found, "async_inflight")
    assert (int(f["code"]), int(f["obj"]), int(f["aux"])) == (R.INFLIGHT_TMA_LOAD, 8, 0)
    text = explain(f)
    assert "mbarrier 0x8" in text and "phase 0" in text and "parity 0" in text


def test_tma_load_read_after_a_wait_on_its_phase_is_clean():
    assert findings(tma(waits=[0]))[0] == set()


def test_a_wait_on_an_earlier_phase_does_not_retire_a_later_load():
    facts, found = findings(tma(waits=[0], phases=2))
    # (The second load also overwrites the first, which its issuer never
    # waited for: a race between the two copies.)
    assert facts == {(8, "waw", 4), (9, "async_inflight", 8)}
    assert int(one(found, "async_inflight")["aux"]) == 1  # the second phase


def test_a_wait_by_another_thread_retires_the_load_but_does_not_order_this_reader():
    t = tma(waits=[0])
    t.read(0, 2, addr=0, size=4, space=1)  # thread 2 never waited
    facts, found = findings(t)
    assert facts == {(7, "raw", 4)}  # retired: a plain race, no longer in flight


# -- cp.async destinations and the async proxy ------------------------------
def cp_then_tma_store(fence: str) -> Trace:
    t = Trace().init(0, 0, addr=0, size=16)
    t.cp_async(0, 0, addr=0, size=16, space=1, addr2=0).cp_async_commit(0, 0)
    if fence == "before":
        t.fence_proxy_async(0, 0)
    t.cp_async_wait(0, 0, arg=0, site=2)
    if fence == "after":
        t.fence_proxy_async(0, 0)
    return t.tma_store(0, 0, addr=4096, size=16, space2=1, addr2=0)


def test_fence_proxy_async_after_the_retiring_wait_is_clean():
    assert findings(cp_then_tma_store("after"))[0] == set()


@pytest.mark.parametrize("fence", ["none", "before"])
def test_cp_async_destination_read_by_the_async_proxy_needs_a_fence_after_the_wait(fence):
    t = cp_then_tma_store(fence)
    row = len(t.events) - 1
    facts, found = findings(t)
    assert facts == {(row, "proxy_fence", 1)}
    f = one(found, "proxy_fence")
    assert (int(f["code"]), int(f["aux"])) == (R.PROXY_CP_ASYNC_DEST, 2)
    assert "after the cp_async_wait" in explain(f)


def test_cp_async_destination_not_yet_retired_is_in_flight_not_proxy_fence():
    t = Trace().init(0, 0, addr=0, size=16)
    t.cp_async(0, 0, addr=0, size=16, space=1, addr2=0).cp_async_commit(0, 0)
    t.fence_proxy_async(0, 0).tma_store(0, 0, addr=4096, size=16, space2=1, addr2=0)
    assert findings(t)[0] == {(4, "async_inflight", 1)}


# -- barriers that fence only some memory (fence_spaces) ---------------------
GLOBAL_ONLY, SHARED_ONLY, BOTH, NONE = 1, 2, 3, 0


def across_barrier(fences: int, space: int, *, second_fences: int | None = None) -> Trace:
    """Thread 0 writes, both threads pass barrier 0, thread 1 reads."""
    t = Trace().write(0, 0, addr=0, size=4, space=space)
    t.bar_sync(0, 0, arg=2, fence_spaces=fences)
    t.bar_sync(0, 1, arg=2, fence_spaces=fences if second_fences is None else second_fences)
    return t.read(0, 1, addr=0, size=4, space=space)


@pytest.mark.parametrize(
    "fences, space, racy",
    [
        (SHARED_ONLY, 0, True),  # OpenCL barrier(CLK_LOCAL_MEM_FENCE), then global memory
        (SHARED_ONLY, 1, False),
        (GLOBAL_ONLY, 1, True),  # barrier(CLK_GLOBAL_MEM_FENCE), then local (shared) memory
        (GLOBAL_ONLY, 0, False),
        (BOTH, 0, False),
        (BOTH, 1, False),
        (NONE, 0, True),
        (NONE, 1, True),  # an execution barrier only
    ],
)
def test_a_barrier_orders_only_the_memory_it_fences(fences, space, racy):
    t = across_barrier(fences, space)
    if space == 1:
        t.events.insert(0, dict(t.events[0], op=3, thread=0))  # init the shared bytes
        for k, ev in enumerate(t.events):
            ev["ts"] = k
    want = {(len(t.events) - 1, "raw", len(t.events) - 4)} if racy else set()
    assert findings(t)[0] == want


def test_an_arrival_that_does_not_fence_gives_nothing_even_to_a_waiter_that_does():
    assert findings(across_barrier(SHARED_ONLY, 0, second_fences=BOTH))[0] == {(3, "raw", 0)}
    assert findings(across_barrier(BOTH, 0, second_fences=SHARED_ONLY))[0] == {(3, "raw", 0)}


def test_a_local_only_barrier_does_not_carry_global_order_to_a_later_full_barrier():
    t = Trace().write(0, 0, addr=0, size=4)
    t.bar_sync(0, 0, arg=2, fence_spaces=SHARED_ONLY).bar_sync(
        0, 1, arg=2, fence_spaces=SHARED_ONLY
    )
    t.bar_sync(0, 1, obj=1, arg=2).bar_sync(0, 2, obj=1, arg=2)  # thread 1 and 2, full
    t.read(0, 2, addr=0, size=4)
    assert findings(t)[0] == {(5, "raw", 0)}
    # Other synchronization orders both memories.
    t = Trace().write(0, 0, addr=0, size=4)
    t.bar_sync(0, 0, arg=2, fence_spaces=SHARED_ONLY).bar_sync(
        0, 1, arg=2, fence_spaces=SHARED_ONLY
    )
    t.signal(0, 0, obj=3).wait(0, 1, obj=3).read(0, 1, addr=0, size=4)
    assert findings(t)[0] == set()


def test_the_two_memories_are_checked_side_by_side_from_the_first_partial_barrier_on():
    # A copy from global to shared memory races in both memories at once; the
    # partial barrier comes in a later batch than the first race.
    t = Trace().init(0, 0, addr=64, size=16).write(0, 1, addr=64, size=4)
    t.cp_async(0, 0, addr=0, size=16, space=1, addr2=64)  # raw (global, source)
    t.write(0, 1, addr=0, size=4, space=1)  # async_inflight (shared)
    t.bar_sync(0, 0, arg=2, fence_spaces=GLOBAL_ONLY).bar_sync(
        0, 1, arg=2, fence_spaces=GLOBAL_ONLY
    )
    t.cp_async(0, 1, addr=8, size=8, space=1, addr2=64)  # war on shared row 3, raw on 1
    facts, _ = findings(t)
    assert facts == {(2, "raw", 1), (3, "async_inflight", 2), (6, "async_inflight", 2)}


def test_a_race_across_a_barrier_that_does_not_fence_its_memory_says_so():
    facts, found = findings(across_barrier(SHARED_ONLY, 0))
    f = one(found, "raw")
    assert (int(f["code"]), int(f["aux"])) == (R.RACE_UNFENCED_BARRIER, SHARED_ONLY)
    text = explain(f)
    assert "fences only shared memory, not global memory" in text
    assert "CLK_GLOBAL_MEM_FENCE" in text
