"""One racy and one fixed trace per happens-before rule and hazard kind.

Each case runs through both checkers (which must agree) and asserts the exact
(row, kind, earlier row) triples.
"""

from __future__ import annotations

import pytest
from builders import Trace

from tracerace.checker import engine, reference
from tracerace.errors import TraceError
from tracerace.trace.ops import HazardKind as K
from tracerace.trace.ops import Severity

SH = dict(space=1)


def check(t: Trace):
    ref = reference.check_trace(t.reader())
    eng = engine.check_trace(t.reader([2]))  # split batches too
    assert ref.triples() == eng.triples()
    assert ref.findings.tobytes() == eng.findings.tobytes()
    return {(row, K(kind).label, prev) for row, kind, prev in ref.triples()}, ref


def found(t: Trace):
    return check(t)[0]


# -- rule 1/3: program order and barriers ---------------------------------
def test_barrier_orders_shared_write_then_read():
    racy = Trace().init(0, 0, addr=0, size=8, **SH)
    racy.write(0, 0, addr=0, size=4, **SH).read(0, 1, addr=0, size=4, **SH)
    assert found(racy) == {(2, "raw", 1)}
    fixed = Trace().init(0, 0, addr=0, size=8, **SH)
    fixed.write(0, 0, addr=0, size=4, **SH).bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=2)
    fixed.read(0, 1, addr=0, size=4, **SH)
    assert found(fixed) == set()


def test_named_barrier_partial_count_orders_only_its_arrivals():
    t = Trace().init(0, 0, addr=0, size=16, **SH)
    t.write(0, 0, addr=0, size=4, **SH).write(0, 2, addr=8, size=4, **SH)
    t.bar_arrive(0, 0, obj=1, arg=2).bar_sync(0, 1, obj=1, arg=2)  # producer/consumer
    t.read(0, 1, addr=0, size=4, **SH)  # ordered after thread 0's write
    t.read(0, 1, addr=8, size=4, **SH)  # thread 2 never arrived: race
    assert found(t) == {(6, "raw", 2)}


def test_warp_sync_orders_lanes_in_mask():
    t = Trace().init(0, 0, addr=0, size=8, **SH)
    t.write(0, 0, addr=0, size=4, **SH)
    t.warp_sync(0, 0, arg=0b11).warp_sync(0, 1, arg=0b11).read(0, 1, addr=0, size=4, **SH)
    assert found(t) == set()


def test_shared_memory_is_per_block_and_peer_reaches_another():
    t = Trace().init(0, 0, addr=0, size=8, **SH).init(1, 0, addr=0, size=8, **SH)
    t.write(0, 0, addr=0, size=4, **SH).write(1, 0, addr=0, size=4, **SH)  # different blocks
    assert found(t) == set()
    t.write(1, 1, addr=0, size=4, peer=0, **SH)  # DSMEM write into block 0's memory
    assert found(t) == {(4, "waw", 2)}


def test_unaligned_overlap_is_byte_precise():
    t = Trace().init(0, 0, addr=0, size=16)
    t.write(0, 0, addr=3, size=2).read(0, 1, addr=5, size=4)
    assert found(t) == set()
    t.read(0, 1, addr=4, size=1)
    facts, res = check(t)
    assert facts == {(3, "raw", 1)}
    assert (int(res.findings["addr"][0]), int(res.findings["size"][0])) == (4, 1)


def test_latest_racing_write_is_named_not_just_the_last():
    t = Trace().init(0, 0, addr=0, size=4)
    t.write(0, 0, addr=0, size=4)  # row 1
    t.write(0, 1, addr=0, size=4)  # row 2 races row 1
    t.release(0, 1, obj=9).acquire(0, 2, obj=9)  # 2 -> thread 2
    t.read(0, 2, addr=0, size=4)  # ordered after row 2, not row 1
    assert found(t) == {(2, "waw", 1), (5, "raw", 1)}


# -- rule 2: launch order --------------------------------------------------
def test_launches_are_ordered():
    t = Trace().write(0, 0, addr=0, size=4)
    t.launch = 1
    t.read(5, 7, addr=0, size=4)
    assert found(t) == set()


def test_decreasing_launch_is_bad_input():
    t = Trace().write(0, 0, addr=0, size=4, launch=1).write(0, 0, addr=0, size=4, launch=0)
    with pytest.raises(TraceError) as err:
        check(t)
    assert err.value.rule == "launch-order" and err.value.row == 1


# -- rule 4: release/acquire -----------------------------------------------
def test_lock_orders_critical_sections():
    t = Trace().init(0, 0, addr=0, size=4)
    t.acquire(0, 0, obj=1).write(0, 0, addr=0, size=4).release(0, 0, obj=1)
    t.acquire(1, 0, obj=1).write(1, 0, addr=0, size=4).release(1, 0, obj=1)
    assert found(t) == set()
    racy = Trace().init(0, 0, addr=0, size=4)
    racy.acquire(0, 0, obj=1).write(0, 0, addr=0, size=4).release(0, 0, obj=1)
    racy.acquire(1, 0, obj=2).write(1, 0, addr=0, size=4).release(1, 0, obj=2)
    assert found(racy) == {(5, "waw", 2)}


def test_release_keeps_what_another_thread_released_into_the_lock():
    """A release joins the lock's clock even when the releaser acquired the
    lock before: here thread 1 released it in between (without holding it),
    so thread 0's release must keep thread 1's write in the lock. (The
    engine's shortcut for a release whose lock is unchanged since its
    acquire must not fire.)"""

    def trace(b_releases: bool) -> Trace:
        t = Trace().init(0, 0, addr=0, size=4)
        t.acquire(0, 0, obj=1)
        t.write(1, 0, addr=0, size=4)
        if b_releases:
            t.release(1, 0, obj=1)
        t.release(0, 0, obj=1)
        t.acquire(2, 0, obj=1).read(2, 0, addr=0, size=4)
        return t

    assert found(trace(True)) == set()
    assert found(trace(False)) == {(5, "raw", 2)}


def test_signal_wait_fifo_pairs_with_oldest():
    t = Trace().init(0, 0, addr=0, size=8)
    t.write(0, 0, addr=0, size=4).signal(0, 0, obj=3)  # rows 1, 2
    t.write(1, 0, addr=4, size=4).signal(1, 0, obj=3)  # rows 3, 4
    t.wait(2, 0, obj=3)  # consumes row 2 only
    t.read(2, 0, addr=0, size=4).read(2, 0, addr=4, size=4)
    assert found(t) == {(7, "raw", 3)}


def test_counting_wait_of_a_huge_count_pairs_by_records():
    """A semaphore released 10^12 times at once and acquired in one wait: the
    engine sizes its work by signal records, not by the count (it once
    allocated arrays as long as the count)."""
    big = 10**12
    t = Trace().init(0, 0, addr=0, size=8)
    t.write(0, 0, addr=0, size=4).signal(0, 0, obj=3, arg=big - 1)  # rows 1, 2
    t.write(1, 0, addr=4, size=4).signal(1, 0, obj=3, arg=1)  # rows 3, 4
    t.wait(2, 0, obj=3, arg=big)  # takes both
    t.read(2, 0, addr=0, size=4).read(2, 0, addr=4, size=4)
    assert found(t) == set()
    short = Trace().init(0, 0, addr=0, size=8)
    short.write(0, 0, addr=0, size=4).signal(0, 0, obj=3, arg=big)
    short.write(1, 0, addr=4, size=4).signal(1, 0, obj=3, arg=1)
    short.wait(2, 0, obj=3, arg=big)  # the first only
    short.read(2, 0, addr=0, size=4).read(2, 0, addr=4, size=4)
    assert found(short) == {(7, "raw", 3)}


def test_wait_without_signal_is_bad_input():
    with pytest.raises(TraceError) as err:
        check(Trace().signal(0, 0, obj=1).wait(0, 1, obj=1, arg=2))
    assert err.value.rule == "wait-without-signal" and err.value.row == 1


def test_scoped_atomics_synchronize_only_within_scope():
    def flag(scope):
        t = Trace().init(0, 0, addr=0, size=4).init(0, 0, addr=64, size=4)
        t.write(0, 0, addr=0, size=4)
        t.atomic(0, 0, addr=64, size=4, scope=scope, sem=2)  # release
        t.atomic(1, 0, addr=64, size=4, scope=scope, sem=1)  # acquire
        t.read(1, 0, addr=0, size=4)
        return found(t)

    assert flag(4) == set()  # device scope: ordered
    assert flag(2) == {(5, "raw", 2), (4, "waw", 3)}  # block scope cannot reach block 1


def test_fence_then_relaxed_atomic_is_a_release():
    t = Trace().init(0, 0, addr=0, size=4).init(0, 0, addr=64, size=4)
    t.write(0, 0, addr=0, size=4).fence(0, 0, sem=2).atomic(0, 0, addr=64, size=4, sem=0)
    t.atomic(1, 0, addr=64, size=4, sem=0).fence(1, 0, sem=1).read(1, 0, addr=0, size=4)
    assert found(t) == set()
    t2 = Trace().init(0, 0, addr=0, size=4).init(0, 0, addr=64, size=4)
    t2.write(0, 0, addr=0, size=4).atomic(0, 0, addr=64, size=4, sem=0)
    t2.atomic(1, 0, addr=64, size=4, sem=0).fence(1, 0, sem=1).read(1, 0, addr=0, size=4)
    assert found(t2) == {(6, "raw", 2)}


def test_atomics_of_device_scope_do_not_conflict():
    t = Trace().init(0, 0, addr=0, size=4)
    t.atomic(0, 0, addr=0, size=4).atomic(1, 0, addr=0, size=4)
    assert found(t) == set()
    t.write(2, 0, addr=0, size=4)
    assert found(t) == {(3, "waw", 2)}


# -- uninit and barrier_mismatch --------------------------------------------
def test_uninit_read_and_init():
    t = Trace().write(0, 0, addr=0, size=2).read(0, 0, addr=0, size=4)
    facts, res = check(t)
    assert facts == {(1, "uninit_read", -1)}
    assert (int(res.findings["addr"][0]), int(res.findings["size"][0])) == (2, 2)
    assert found(Trace().init(0, 0, addr=0, size=4).read(0, 0, addr=0, size=4)) == set()


def test_shared_memory_is_uninitialized_in_each_launch():
    t = Trace().write(0, 0, addr=0, size=4, **SH)
    t.launch = 1
    t.read(0, 0, addr=0, size=4, **SH)
    assert found(t) == {(1, "uninit_read", -1)}


def test_a_barrier_obj_past_2_63_is_one_signed_word_in_both_checkers():
    """A bar_sync's obj is the trace's uint64; both checkers keep a thread's
    barrier as a signed 64-bit word (a finding's ``bar_obj``), so an obj of
    2^63 or more is that word's value in both (the reference used to fail
    converting it)."""
    big = (1 << 64) - 5
    t = Trace().init(0, 0, addr=0, size=8, **SH)
    t.bar_sync(0, 0, obj=big, arg=2).bar_sync(0, 1, obj=big, arg=2)
    t.write(0, 0, addr=0, size=4, **SH).read(0, 1, addr=0, size=4, **SH)
    triples, ref = check(t)
    assert triples == {(4, "raw", 3)}
    assert ref.findings["bar_obj"].tolist() == [big - (1 << 64)]
    assert ref.findings["prev_bar_obj"].tolist() == [big - (1 << 64)]


def test_barrier_mismatch_on_count_and_incomplete_generation():
    # The first arrival fixes the count: rows 0-1 complete a generation of 2,
    # row 2 opens one that never completes.
    t = Trace().bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=3).bar_sync(0, 2, arg=2)
    assert found(t) == {(1, "barrier_mismatch", 0), (2, "barrier_mismatch", -1)}
    assert found(Trace().bar_arrive(0, 0, arg=2)) == {(0, "barrier_mismatch", -1)}


def test_event_while_blocked_in_bar_sync_is_bad_input():
    with pytest.raises(TraceError) as err:
        check(Trace().bar_sync(0, 0, arg=2).write(0, 0, addr=0, size=4))
    assert err.value.rule == "barrier-order" and err.value.row == 1


# -- rule 5: async copies -----------------------------------------------------
def cp_pipeline(wait_pending: int) -> Trace:
    t = Trace().init(0, 0, addr=1000, size=64)
    t.cp_async(0, 0, addr=0, size=16, space=1, addr2=1000).cp_async_commit(0, 0)  # group 1
    t.cp_async(0, 0, addr=16, size=16, space=1, addr2=1016).cp_async_commit(0, 0)  # group 2
    t.cp_async_wait(0, 0, arg=wait_pending)
    t.bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=2)
    t.read(0, 1, addr=0, size=4, space=1)  # group 1's bytes
    t.write(0, 1, addr=16, size=4, space=1)  # group 2's bytes
    return t


def test_cp_async_wait_group_retires_older_groups():
    assert found(cp_pipeline(0)) == set()
    facts, res = check(cp_pipeline(1))  # group 2 still in flight
    assert facts == {(9, "async_inflight", 3)}
    assert int(res.findings["aux"][0]) == 2  # its group


def test_syncthreads_alone_does_not_retire_a_copy():
    t = Trace().init(0, 0, addr=1000, size=16)
    t.cp_async(0, 0, addr=0, size=16, space=1, addr2=1000).cp_async_commit(0, 0)
    t.bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=2).write(0, 1, addr=0, size=4, space=1)
    assert found(t) == {(5, "async_inflight", 1)}


def test_write_to_copy_source_before_retire():
    t = Trace().init(0, 0, addr=1000, size=16)
    t.cp_async(0, 0, addr=0, size=16, space=1, addr2=1000).write(0, 0, addr=1000, size=4)
    assert found(t) == {(2, "async_inflight", 1)}


def test_tma_store_source_reuse_needs_bulk_wait():
    t = Trace().init(0, 0, addr=0, size=16, space=1)
    t.fence_proxy_async(0, 0)
    t.tma_store(0, 0, addr=4096, size=16, space2=1, addr2=0).bulk_commit(0, 0)
    t.write(0, 0, addr=0, size=4, space=1)
    assert found(t) == {(4, "async_inflight", 2)}
    ok = Trace().init(0, 0, addr=0, size=16, space=1).fence_proxy_async(0, 0)
    ok.tma_store(0, 0, addr=4096, size=16, space2=1, addr2=0).bulk_commit(0, 0)
    ok.bulk_wait(0, 0, arg=0).write(0, 0, addr=0, size=4, space=1)
    assert found(ok) == set()


# -- rule 6: mbarriers ----------------------------------------------------------
def tma_load(parity: int) -> Trace:
    t = Trace().init(0, 0, addr=4096, size=64)
    t.mbar_init(0, 0, obj=8, arg=1).mbar_expect_tx(0, 0, obj=8, arg=64).mbar_arrive(0, 0, obj=8)
    t.tma_load(0, 0, addr=0, size=64, space=1, addr2=4096, obj=8)
    t.mbar_wait(0, 1, obj=8, arg=parity).read(0, 1, addr=0, size=4, space=1)
    return t


def test_tma_load_completes_on_mbarrier_phase():
    assert found(tma_load(0)) == set()
    # Waiting on the wrong parity returns on no phase: the load's phase
    # completed, but no wait returned on it, so the load is still in flight
    # for the read (the contract's retirement of a tma_load), not a plain raw.
    assert found(tma_load(1)) == {(5, "mbarrier_misuse", -1), (6, "async_inflight", 4)}


def test_tma_load_not_yet_complete_is_in_flight():
    t = Trace().init(0, 0, addr=4096, size=64)
    t.mbar_init(0, 0, obj=8, arg=1).mbar_expect_tx(0, 0, obj=8, arg=128).mbar_arrive(0, 0, obj=8)
    t.tma_load(0, 0, addr=0, size=64, space=1, addr2=4096, obj=8)  # 64 of 128 bytes
    t.read(0, 1, addr=0, size=4, space=1)
    assert found(t) == {(5, "async_inflight", 4)}


def test_mbarrier_misuses():
    t = Trace().mbar_arrive(0, 0, obj=8)  # before init
    t.mbar_init(0, 0, obj=8, arg=1).mbar_init(0, 0, obj=8, arg=1)  # re-init
    t.mbar_arrive(0, 0, obj=8, arg=2)  # arrival underflow
    facts, res = check(t)
    assert facts == {
        (0, "mbarrier_misuse", -1),
        (2, "mbarrier_misuse", 1),
        (3, "mbarrier_misuse", -1),
    }
    assert sorted(res.findings["code"].tolist()) == [1, 2, 3]


# -- rule 7: proxies ---------------------------------------------------------------
def test_generic_write_read_by_async_proxy_needs_fence():
    racy = Trace().write(0, 0, addr=0, size=16, space=1)
    racy.tma_store(0, 0, addr=4096, size=16, space2=1, addr2=0)
    assert found(racy) == {(1, "proxy_fence", 0)}
    fixed = Trace().write(0, 0, addr=0, size=16, space=1).fence_proxy_async(0, 0)
    fixed.tma_store(0, 0, addr=4096, size=16, space2=1, addr2=0)
    assert found(fixed) == set()


def proxy_copy(*steps: str) -> Trace:
    """t0 of block 0 runs ``steps`` on shared [0, 4) after an init of the copy
    source: ``copy`` (cp_async), ``write``, ``fence``, ``commit``, ``wait``
    (wait_group 0), ``tma`` (a read by the async proxy)."""
    t = Trace().init(0, 0, addr=1000, size=4)
    for step in steps:
        if step == "copy":
            t.cp_async(0, 0, addr=0, size=4, space=1, addr2=1000)
        elif step == "write":
            t.write(0, 0, addr=0, size=4, space=1)
        elif step == "fence":
            t.fence_proxy_async(0, 0)
        elif step == "commit":
            t.cp_async_commit(0, 0)
        elif step == "wait":
            t.cp_async_wait(0, 0, arg=0)
        else:
            t.read(0, 0, addr=0, size=4, space=1, proxy=1)
    return t


def test_copy_destination_is_written_at_its_retiring_wait():
    # The only fence comes before the wait that retires the copy: it covers
    # the plain write, not the copy's destination write (performed at the wait).
    t = proxy_copy("copy", "write", "fence", "commit", "wait", "tma")
    assert found(t) == {(2, "async_inflight", 1), (6, "proxy_fence", 1)}
    fixed = proxy_copy("copy", "write", "commit", "wait", "fence", "tma")
    assert found(fixed) == {(2, "async_inflight", 1)}


def test_copy_never_retired_hides_no_earlier_write():
    # A copy no wait retired has written nothing: the plain write before it is
    # the one the async proxy reads, and it was never fenced.
    t = proxy_copy("write", "copy", "tma")
    assert found(t) == {(3, "async_inflight", 2), (3, "proxy_fence", 1)}
    fenced = proxy_copy("write", "fence", "copy", "tma")
    assert found(fenced) == {(4, "async_inflight", 3)}


def test_retired_copy_hides_the_write_it_overwrote():
    # The copy follows the plain write in happens-before and is retired: only
    # the copy's write is checked, and its fence comes after the wait.
    assert found(proxy_copy("write", "copy", "commit", "wait", "fence", "tma")) == set()
    late = proxy_copy("write", "fence", "copy", "commit", "wait", "tma")
    assert found(late) == {(6, "proxy_fence", 3)}


def copies_over_a_write(
    *copies: tuple[int, int], waits: int, read: tuple[int, int] = (0, 4)
) -> Trace:
    """Thread 1 writes shared [0, 4) and never fences; after a barrier thread 0
    copies over it (``copies``: (addr, size) per cp_async, ``commit`` between
    groups as strings), waits until ``waits`` groups are pending, fences, and
    its async proxy reads ``read`` ((addr, size), [0, 4) unless given)."""
    t = Trace().init(0, 0, addr=1000, size=16).write(0, 1, addr=0, size=4, space=1)
    t.bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=2)
    for c in copies:
        if c == "commit":
            t.cp_async_commit(0, 0)
        else:
            t.cp_async(0, 0, addr=c[0], size=c[1], space=1, addr2=1000)
    t.cp_async_wait(0, 0, arg=waits).fence_proxy_async(0, 0)
    return t.read(0, 0, addr=read[0], size=read[1], space=1, proxy=1)


def test_retired_copies_hide_the_write_under_them():
    # Two groups over the same bytes; the first is retired and fenced, the
    # second still in flight: the first hides thread 1's unfenced write.
    two_groups = copies_over_a_write((0, 4), "commit", (0, 4), "commit", waits=1)
    assert found(two_groups) == {(6, "async_inflight", 4), (10, "async_inflight", 6)}
    # One group of two copies, each over half of the write: together they hide it.
    halves = copies_over_a_write((0, 2), (2, 2), "commit", waits=0)
    assert found(halves) == set()


def copies_of_two_threads(first: int, waits: tuple[int, ...], racer: bool = False) -> Trace:
    """Thread 2 writes shared [0, 4) and never fences (after thread 3, which
    syncs with nobody, wrote it too when ``racer``); after a barrier thread
    ``first`` copies [0, 2) and then the other of threads 0 and 1 copies
    [2, 4), each into a group of its own; the threads in ``waits`` retire
    their group and fence; then a barrier, and thread 0's async proxy reads
    [0, 2)."""
    t = Trace().init(0, 0, addr=1000, size=16)
    if racer:
        t.write(0, 3, addr=0, size=4, space=1)
    t.write(0, 2, addr=0, size=4, space=1)
    for th in range(3):
        t.bar_sync(0, th, arg=3)
    for th, addr in ((first, 0), (1 - first, 2)):
        t.cp_async(0, th, addr=addr, size=2, space=1, addr2=1000).cp_async_commit(0, th)
    for th in waits:
        t.cp_async_wait(0, th, arg=0).fence_proxy_async(0, th)
    t.bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=2)
    return t.read(0, 0, addr=0, size=2, space=1, proxy=1)


def test_copies_of_two_threads_each_hide_the_write_under_them():
    # Each thread's copy covers half of thread 2's write. Once the copy over
    # the bytes read is retired (and fenced) the write under them is hidden,
    # whether or not the other copy is, and whichever thread copied first.
    for first in (0, 1):
        assert found(copies_of_two_threads(first, (first,))) == set()
        assert found(copies_of_two_threads(first, (0, 1))) == set()
        # Only the copy over the other half retired: the read sees thread
        # 2's write, and races the copy in flight.
        assert found(copies_of_two_threads(first, (1 - first,))) == {
            (13, "async_inflight", 5),
            (13, "proxy_fence", 1),
        }


def test_copies_that_race_another_write_still_hide_the_write_they_follow():
    # Thread 3's write races thread 2's and both copies (and is no write the
    # read may see: it does not happen before it); thread 2's write still
    # happens before each copy, and the retired one over the bytes read hides it.
    races = {(2, "waw", 1), (6, "waw", 1), (8, "waw", 1), (14, "raw", 1)}
    for first in (0, 1):
        assert found(copies_of_two_threads(first, (first,), racer=True)) == races
        assert found(copies_of_two_threads(first, (1 - first,), racer=True)) == races | {
            (14, "async_inflight", 6),
            (14, "proxy_fence", 2),
        }


def test_older_group_hides_the_write_under_a_later_larger_group():
    # A later group of the same thread covers more of the write (racing the
    # older one), and is still in flight: the retired older group hides the
    # bytes it covers.
    t = copies_over_a_write((0, 2), "commit", (0, 4), "commit", waits=1, read=(0, 2))
    assert found(t) == {(6, "async_inflight", 4), (10, "async_inflight", 6)}
    # Its bytes outside the older group are still the write's.
    t = copies_over_a_write((0, 2), "commit", (0, 4), "commit", waits=1, read=(2, 2))
    assert found(t) == {(6, "async_inflight", 4), (10, "async_inflight", 6), (10, "proxy_fence", 1)}


def racing_atomics(*fenced: int) -> Trace:
    """Threads 1 and 0 each write shared [0, 4) by a block-scope atomic (so they
    do not race), in that order, after an init; then a barrier, and thread 0's async proxy reads."""
    t = Trace().init(0, 0, addr=0, size=4, space=1)
    t.atomic(0, 1, addr=0, size=4, space=1, scope=2)
    if 1 in fenced:
        t.fence_proxy_async(0, 1)
    t.atomic(0, 0, addr=0, size=4, space=1, scope=2)
    if 0 in fenced:
        t.fence_proxy_async(0, 0)
    t.bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=2)
    return t.read(0, 0, addr=0, size=4, space=1, proxy=1)


def test_racing_writes_before_the_access_are_each_checked():
    # Both writes happen before the read and neither before the other: the
    # newer row does not hide the older one, whose thread did not fence.
    assert found(racing_atomics(0)) == {(6, "proxy_fence", 1)}
    assert found(racing_atomics(1)) == {(6, "proxy_fence", 3)}
    assert found(racing_atomics(0, 1)) == set()


def test_async_proxy_atomic_checks_only_writes_before_it():
    # Two device-scope atomics do not race, and the first does not happen
    # before the second: it is no write the second may see, fenced or not.
    t = Trace().init(0, 0, addr=0, size=4).atomic(0, 1, addr=0, size=4, scope=4)
    t.atomic(0, 0, addr=0, size=4, scope=4, proxy=1)
    assert found(t) == set()
    ordered = Trace().init(0, 0, addr=0, size=4).atomic(0, 0, addr=0, size=4, scope=4)
    ordered.atomic(0, 0, addr=0, size=4, scope=4, proxy=1)
    assert found(ordered) == {(2, "proxy_fence", 1)}


def test_write_followed_by_a_later_write_is_not_checked():
    # A write that happens before another write to its bytes, already made,
    # is overwritten: only the later one is checked (here a race with the read).
    t = Trace().write(0, 0, addr=0, size=4, space=1)
    t.bar_sync(0, 0, arg=2).bar_sync(0, 1, arg=2).write(0, 1, addr=0, size=4, space=1)
    t.read(0, 0, addr=0, size=4, space=1, proxy=1)
    assert found(t) == {(4, "raw", 3)}


# -- sync_alias -------------------------------------------------------------------
def test_sync_alias_error_when_protocols_cross():
    t = Trace()
    t.signal(0, 0, obj=3, site=1).wait(0, 1, obj=3, site=2)  # decode: set 1 -> wait 2
    t.signal(1, 0, obj=3, site=1)  # decode set, not yet waited
    t.signal(2, 0, obj=3, site=3)  # reduce set
    t.wait(3, 0, obj=3, site=4).wait(3, 0, obj=3, site=4)  # reduce waits eat both
    facts, res = check(t)
    assert facts == {(5, "sync_alias", 3)}
    assert res.findings["severity"][0] == Severity.ERROR


def test_sync_alias_warning_when_protocols_could_cross():
    t = Trace()
    t.signal(0, 0, obj=3, site=1).wait(0, 1, obj=3, site=2)
    t.signal(1, 0, obj=3, site=3).wait(1, 1, obj=3, site=4)
    facts, res = check(t)
    assert facts == {(3, "sync_alias", 0)}
    assert res.findings["severity"][0] == Severity.WARNING
    ordered = Trace()
    ordered.signal(0, 0, obj=3, site=1).wait(0, 1, obj=3, site=2)
    ordered.signal(0, 1, obj=9).wait(1, 0, obj=9)  # w1 happens before s2
    ordered.signal(1, 0, obj=3, site=3).wait(1, 1, obj=3, site=4)
    assert found(ordered) == set()


def test_text_report_links_a_race_to_the_alias_that_caused_it():
    import io

    import tracerace
    from tracerace.report.formats import text
    from tracerace.trace.writer import make_table

    t = Trace()
    t.init(0, 0, addr=0, size=4)
    t.signal(0, 0, obj=3, site=1).wait(0, 1, obj=3, site=2)  # decode protocol
    t.signal(1, 0, obj=3, site=1)  # decode set, not yet waited
    t.write(2, 0, addr=0, size=4).signal(2, 0, obj=3, site=3)  # partials, then "written"
    t.wait(3, 0, obj=3, site=4).wait(3, 0, obj=3, site=4)  # reduce takes both
    t.read(3, 0, addr=0, size=4, site=5)  # ordered by the 2nd wait
    cols = t.columns()
    sites = [
        "s0",
        "decode.cpp:120 set",
        "decode.cpp:130 wait",
        "reduce.cpp:480 set",
        "reduce.cpp:490 wait",
        "reduce.cpp:500 ld",
    ]
    report = tracerace.check(make_table(cols, sites=sites), engine="reference")
    assert {g.kind for g in report.groups} == {"sync_alias"}  # the read is ordered here
    # Now let the reduce read right after its first (crossed) wait.
    t2 = Trace()
    t2.events = [e for e in t.events]
    t2.events.insert(7, dict(op=0, launch=0, block=3, thread=0, ts=6, addr=0, size=4, site=5))
    report = tracerace.check(make_table(t2.columns(), sites=sites), engine="numba")
    assert {g.kind for g in report.groups} == {"sync_alias", "raw"}
    out = io.StringIO()
    text.write(report, out)
    linked = [line for line in out.getvalue().splitlines() if line.strip().startswith("linked:")]
    assert len(linked) == 1
    assert "wait on flag 3 at reduce.cpp:490 wait (row 8) mixes two protocols" in linked[0]
