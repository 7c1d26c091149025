"""Pages: an access that covers whole pages is recorded once per page
(``tracerace.engine.shadow``, PAGES; ``engine.pages.access_pages``, ``split_pages``), and
splits into granules only when another access needs them.

The reference checker keeps every byte; the property tests of
``test_engine_agrees`` (``test_engine_matches_reference_with_pages*``) make
pages 32 and 64 bytes long so that short generated traces make, use and split
them. Here: the default 4 KiB pages on hand-written traces, the generator
reaching every page state, and memory that does not grow with the bytes one
access touches."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, Phase, find, settings

from tracerace import engine
from tracerace.engine.check import replay_batch
from tracerace.engine.layout import SV_LAUNCH
from tracerace.ops import K_RAW, K_UNINIT_READ, K_WAR, Op, Space
from tracerace.engine.shadow import G_INIT, G_LAUNCH, G_REGION, PAGE_REGION, PAGE_SHIFT, PAGE_SPLIT

from builders import SimpleReader, Trace, columns
from test_engine_agrees import assert_agree
from tracegen import traces

PAGE = 1 << PAGE_SHIFT
GLOBAL, SHARED = int(Space.GLOBAL), int(Space.SHARED)


def replay(events, page_shift=PAGE_SHIFT) -> engine.EngineState:
    """The engine's state after replaying ``events`` (one batch)."""
    st = engine.EngineState(page_shift)
    reader = SimpleReader(columns(events))
    for batch in reader:
        replay_batch(st, batch, None)
    return st


def page_slots(st: engine.EngineState) -> tuple[int, int]:
    """(pure, split) page slots of the current launch."""
    gran = st.arrays["gran"]
    live = (gran[:, G_REGION] >= PAGE_REGION) & (gran[:, G_LAUNCH] == st.sv[SV_LAUNCH])
    return int((live & (gran[:, G_INIT] != PAGE_SPLIT)).sum()), \
        int((live & (gran[:, G_INIT] == PAGE_SPLIT)).sum())


def test_a_gib_written_and_read_is_one_node_per_page():
    span = 1 << 30
    t = Trace()
    t.write(0, 0, space=GLOBAL, addr=1 << 32, size=span)
    t.read(1, 0, space=GLOBAL, addr=1 << 32, size=span)  # no barrier: races
    st = replay(t.events)
    pure, split = page_slots(st)
    assert (pure, split) == (span // PAGE, 0)
    # Two nodes per page and a slot per page: about 150 bytes a page, where
    # granules would take ~190 bytes a byte.
    assert st.nbytes < 160 * (span // PAGE) + (64 << 20)
    found = st.take_findings()
    assert found["kind"].tolist() == [K_RAW]
    assert (int(found["addr"][0]), int(found["size"][0])) == (1 << 32, span)
    assert int(found["prev_row"][0]) == 0


def large_trace(shared: bool) -> Trace:
    """Large unaligned writes and reads around small ones, racy and ordered,
    over about four pages."""
    space = SHARED if shared else GLOBAL
    base = 0 if shared else 1 << 20
    t = Trace()
    t.init(0, 0, space=space, addr=base + 100, size=8)
    t.write(0, 0, space=space, addr=base + 200, size=3 * PAGE + 100)  # 2 whole pages
    t.read(0, 1, space=space, addr=base + PAGE + 12, size=4)         # races, splits page 1
    t.bar_sync(0, 0, obj=0, arg=2)
    t.bar_sync(0, 1, obj=0, arg=2)
    t.read(0, 1, space=space, addr=base, size=4 * PAGE)              # uninit at both ends
    t.write(0, 0, space=space, addr=base + 2 * PAGE, size=PAGE)      # war with the read
    t.read(0, 1, space=space, addr=base + 2 * PAGE + 40, size=8)     # raw, splits page 2
    t.write(0, 1, space=space, addr=base, size=4 * PAGE)             # over pure and split pages
    return t


def test_default_pages_agree_with_the_reference_global():
    ref = assert_agree(large_trace(False).events, [])
    kinds = set(ref.findings["kind"].tolist())
    assert {K_RAW, K_WAR, K_UNINIT_READ} <= kinds


def test_default_pages_agree_with_the_reference_shared():
    ref = assert_agree(large_trace(True).events, [3, 6])
    assert K_UNINIT_READ in set(ref.findings["kind"].tolist())


def test_a_small_access_splits_a_pure_page_into_granules():
    t = Trace()
    t.write(0, 0, space=GLOBAL, addr=0, size=2 * PAGE)
    assert page_slots(replay(t.events)) == (2, 0)
    t.read(0, 1, space=GLOBAL, addr=PAGE + 8, size=4)
    assert page_slots(replay(t.events)) == (1, 1)
    # A large access over a page some granule of the launch already holds
    # lists for uses the granules too.
    t.write(0, 2, space=GLOBAL, addr=PAGE, size=2 * PAGE)
    assert page_slots(replay(t.events)) == (2, 1)


def test_the_generator_makes_and_splits_pages():
    """The property tests reach pure pages, split pages, and findings on
    both (with 32-byte pages)."""
    def reaches(events):
        st = replay(events, page_shift=5)
        pure, split = page_slots(st)
        return pure > 0 and split > 0 and len(st.take_findings()) > 0

    events = find(traces(async_ops=True, large=True), reaches,
                  settings=settings(max_examples=2000, database=None, phases=[Phase.generate],
                                    derandomize=True, suppress_health_check=list(HealthCheck)))
    assert reaches(events)
