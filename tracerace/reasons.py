"""Reason codes carried in a finding's ``code`` (and ``aux``) field.

Both checkers set them identically; the report layer turns them into words.
"""

from __future__ import annotations

# raw / war / waw / uninit_read / proxy_fence: no sub-reason.
NONE = 0

# barrier_mismatch
BAR_ARG_DISAGREES = 1   # prev_row: first arrival of the generation; aux: its arg
BAR_INCOMPLETE = 2      # row: last arrival of the open generation; aux: arrivals so far

# async_inflight: which copy was still in flight (aux: the copy's group number)
INFLIGHT_CP_ASYNC = 1
INFLIGHT_BULK_STORE = 2
INFLIGHT_TMA_LOAD = 3

# sync_alias (row: the wait; prev_row: the signal it consumed)
ALIAS_CROSSED = 1       # error
ALIAS_MAY_CROSS = 2     # warning

# mbarrier_misuse
MBAR_BEFORE_INIT = 1
MBAR_REINIT = 2
MBAR_ARRIVAL_UNDERFLOW = 3
MBAR_TX_UNDERFLOW = 4
MBAR_PHASE_NEVER_COMPLETED = 5

NAMES = {
    "barrier_mismatch": {BAR_ARG_DISAGREES: "arrivals disagree on the thread count",
                         BAR_INCOMPLETE: "generation never completed"},
    "async_inflight": {INFLIGHT_CP_ASYNC: "cp.async copy in flight",
                       INFLIGHT_BULK_STORE: "bulk/TMA store in flight",
                       INFLIGHT_TMA_LOAD: "TMA load not awaited"},
    "sync_alias": {ALIAS_CROSSED: "protocols crossed", ALIAS_MAY_CROSS: "protocols may cross"},
    "mbarrier_misuse": {MBAR_BEFORE_INIT: "use before init", MBAR_REINIT: "re-init without inval",
                        MBAR_ARRIVAL_UNDERFLOW: "arrival underflow",
                        MBAR_TX_UNDERFLOW: "transaction-count underflow",
                        MBAR_PHASE_NEVER_COMPLETED: "wait on a phase that never completed"},
}
