"""Vector clocks as plain dicts: agent -> epoch, split in a global and a shared
relation once a barrier fences one memory only (the twin of ``engine/clocks.py``).
"""

from __future__ import annotations

Clock = dict  # agent key -> epoch; SHARED -> {agent key: epoch} (below)

# A barrier whose ``fence_spaces`` leaves out global or shared memory splits
# happens-before in two relations, one per memory; every other edge belongs
# to both. A clock holds the global relation's entries, and under SHARED the
# shared relation's entries that differ from them (none until such a barrier).
SHARED = "shared"
GLOBAL_FENCE, SHARED_FENCE = 1, 2


def shared_epoch(clock: Clock, agent) -> int:
    """What ``clock`` knows of ``agent`` for shared memory."""
    return clock.get(SHARED, {}).get(agent, clock.get(agent, 0))


def set_shared(clock: Clock, agent, epoch: int) -> None:
    """Make the shared relation know ``epoch`` of ``agent`` (stored only where
    it differs from the global one)."""
    if epoch == clock.get(agent, 0):
        shared = clock.get(SHARED)
        if shared is not None:
            shared.pop(agent, None)
            if not shared:
                del clock[SHARED]
    else:
        clock.setdefault(SHARED, {})[agent] = epoch


def join(into: Clock, other: Clock) -> None:
    """into := into joined with other, in both relations."""
    if SHARED not in into and SHARED not in other:
        for agent, epoch in other.items():
            if into.get(agent, -1) < epoch:
                into[agent] = epoch
        return
    agents = [a for a in other if a != SHARED] + list(other.get(SHARED, ()))
    shared = {a: max(shared_epoch(into, a), shared_epoch(other, a)) for a in agents}
    join_relation(into, {a: e for a, e in other.items() if a != SHARED}, GLOBAL_FENCE)
    for agent, epoch in shared.items():
        set_shared(into, agent, epoch)


def copy_clock(clock: Clock) -> Clock:
    out = dict(clock)
    if SHARED in out:
        out[SHARED] = dict(out[SHARED])
    return out


def relation(clock: Clock, which: int) -> dict:
    """One relation's entries of ``clock``, as a plain agent -> epoch dict."""
    if which == GLOBAL_FENCE:
        return {a: e for a, e in clock.items() if a != SHARED}
    agents = [a for a in clock if a != SHARED] + list(clock.get(SHARED, ()))
    return {a: shared_epoch(clock, a) for a in agents}


def join_relation(into: Clock, entries: dict, which: int) -> None:
    """Join plain ``entries`` into one relation of ``into``, leaving the other."""
    for agent, epoch in entries.items():
        if which == GLOBAL_FENCE:
            if into.get(agent, 0) < epoch:
                before = shared_epoch(into, agent)
                into[agent] = epoch
                set_shared(into, agent, before)
        elif shared_epoch(into, agent) < epoch:
            set_shared(into, agent, epoch)


def raise_entry(clock: Clock, agent, epoch: int) -> None:
    """Both relations know at least ``epoch`` of ``agent``."""
    shared = max(shared_epoch(clock, agent), epoch)
    clock[agent] = max(clock.get(agent, 0), epoch)
    set_shared(clock, agent, shared)
