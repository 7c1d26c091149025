"""Reason codes carried in a finding's ``code`` (and ``aux``) field.

Both checkers set them identically; the report layer turns them into words.
"""

from __future__ import annotations

# uninit_read: no sub-reason.
NONE = 0

# raw / war / waw: the later agent's atomic read a release by the earlier
# agent, made after the earlier access, that did not synchronize with it.
# obj: the atomic's address; aux: weak_sync_aux(...).
RACE_WEAK_SYNC = 1
# raw / war / waw: the earlier access came before the barrier generation the
# later agent passed last, and that barrier does not fence the memory of the
# bytes (fence_spaces). aux: the barrier's fence_spaces.
RACE_UNFENCED_BARRIER = 2

# proxy_fence
PROXY_GENERIC_WRITE = 0  # a thread's generic-proxy store (the fence goes after it)
PROXY_CP_ASYNC_DEST = 1  # a cp.async destination: aux is the site of the cp_async_wait
# that retired it (the fence goes after that wait); an st_async destination: aux is
# the site of the first mbar_wait on its phase (the fence goes after it, by its thread)
PROXY_CP_ASYNC_MBAR_DEST = 2  # a cp.async destination retired by the first mbar_wait
# on a phase that tracked it (cp_async_mbar_arrive): aux is that wait's site (the
# fence goes after it, by the thread of that wait)

# weak_sync_aux's ``how``
WEAK_SCOPE = 0  # a scope (release or acquire side) does not contain both agents
WEAK_RELAXED = 1  # scopes fit, but the atomic was relaxed and no acquire fence of
# the needed scope followed it

# barrier_mismatch
BAR_ARG_DISAGREES = 1  # prev_row: first arrival of the generation; aux: its arg
BAR_INCOMPLETE = 2  # row: last arrival of the open generation; aux: arrivals so far

# async_inflight: which copy was still in flight (aux: the copy's group number;
# for a TMA load, and an st_async store, which a wait on a phase retires too:
# obj is the mbarrier and aux the phase the load or store completes, counted
# from the mbarrier's init)
INFLIGHT_CP_ASYNC = 1
INFLIGHT_BULK_STORE = 2
INFLIGHT_TMA_LOAD = 3

# sync_alias (row: the wait; prev_row: the signal it consumed)
ALIAS_CROSSED = 1  # error
ALIAS_MAY_CROSS = 2  # warning

# mbarrier_misuse
MBAR_BEFORE_INIT = 1
MBAR_REINIT = 2
MBAR_ARRIVAL_UNDERFLOW = 3
MBAR_TX_UNDERFLOW = 4
MBAR_PHASE_NEVER_COMPLETED = 5
MBAR_DROP_UNDERFLOW = 6  # mbar_arrive_drop took the expected arrivals below zero

_RACE_NAMES = {
    RACE_WEAK_SYNC: "release/acquire read without synchronizing",
    RACE_UNFENCED_BARRIER: "barrier does not fence this memory",
}

NAMES = {
    "raw": _RACE_NAMES,
    "war": _RACE_NAMES,
    "waw": _RACE_NAMES,
    "proxy_fence": {
        PROXY_CP_ASYNC_DEST: "cp.async destination not fenced after its wait",
        PROXY_CP_ASYNC_MBAR_DEST: "cp.async destination not fenced after the mbarrier wait",
    },
    "barrier_mismatch": {
        BAR_ARG_DISAGREES: "arrivals disagree on the thread count",
        BAR_INCOMPLETE: "generation never completed",
    },
    "async_inflight": {
        INFLIGHT_CP_ASYNC: "cp.async copy in flight",
        INFLIGHT_BULK_STORE: "bulk/TMA store in flight",
        INFLIGHT_TMA_LOAD: "TMA load or st.async not awaited",
    },
    "sync_alias": {ALIAS_CROSSED: "protocols crossed", ALIAS_MAY_CROSS: "protocols may cross"},
    "mbarrier_misuse": {
        MBAR_BEFORE_INIT: "use before init",
        MBAR_REINIT: "re-init without inval",
        MBAR_ARRIVAL_UNDERFLOW: "arrival underflow",
        MBAR_TX_UNDERFLOW: "transaction-count underflow",
        MBAR_PHASE_NEVER_COMPLETED: "wait on a phase that never completed",
        MBAR_DROP_UNDERFLOW: "arrive-and-drop underflow",
    },
}


def weak_sync_aux(release_scope: int, acquire_scope: int, needed: int, how: int) -> int:
    """``aux`` of a RACE_WEAK_SYNC race: the release's and the acquire's scopes,
    the narrowest scope containing both agents, and WEAK_SCOPE/WEAK_RELAXED."""
    return release_scope | (acquire_scope << 4) | (needed << 8) | (how << 12)


def weak_sync_parts(aux: int) -> tuple[int, int, int, int]:
    """(release scope, acquire scope, needed scope, how) of a RACE_WEAK_SYNC ``aux``."""
    return aux & 15, (aux >> 4) & 15, (aux >> 8) & 15, (aux >> 12) & 15
