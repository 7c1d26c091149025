"""How the replay finds an event's thread agent without probing the agent
map (agents.thread_agent): the last event's agent plus the difference of the
threads, or twice that when each thread made a copy agent right after
itself. The guesses are checked against the agent's row, so results never
depend on them; these tests pin down that they hit, using an empty agent map
(a miss would fall back to it and answer -1)."""

from tracerace.checker import engine
from tracerace.checker.engine import agents
from tracerace.checker.engine.hashmap import new_table
from tracerace.checker.engine.layout import KIND_CP, KIND_THREAD
from tracerace.checker.jit import from_python

# compiled-code-only functions, through twins with a Python entry
new_agent, thread_agent = from_python(agents.new_agent), from_python(agents.thread_agent)


def _agents(copy_agents: bool):
    """A block of four threads, each followed by its copy agent when
    ``copy_agents``; returns the state and the threads' agents."""
    st = engine.EngineState()
    ag, sv = st.arrays["ag"], st.sv
    threads = []
    for t in range(4):
        threads.append(new_agent(ag, sv, 7, t, 0, KIND_THREAD))
        if copy_agents:
            new_agent(ag, sv, 7, t, 0, KIND_CP)
    return st, threads


def _guess(st, block, thread, last_a, last_block, last_thread):
    return thread_agent(
        st.arrays["ag"], st.sv, new_table(16), block, thread, last_a, last_block, last_thread
    )


def test_consecutive_agents_are_guessed():
    st, a = _agents(copy_agents=False)
    assert _guess(st, 7, 1, a[0], 7, 0) == a[1]
    assert _guess(st, 7, 3, a[1], 7, 1) == a[3]
    assert _guess(st, 7, 0, a[2], 7, 2) == a[0]


def test_agents_two_apart_are_guessed_and_copy_agents_never_taken():
    st, a = _agents(copy_agents=True)
    assert a == [0, 2, 4, 6]
    assert _guess(st, 7, 1, a[0], 7, 0) == a[1]  # a[0] + 1 is thread 0's copy agent
    assert _guess(st, 7, 3, a[2], 7, 2) == a[3]
    assert _guess(st, 7, 0, a[3], 7, 3) == a[0]


def test_another_block_or_an_unknown_thread_asks_the_map():
    st, a = _agents(copy_agents=True)
    assert _guess(st, 8, 1, a[0], 7, 0) == -1  # another block: the (empty) map answers
    assert _guess(st, 7, 9, a[3], 7, 3) == -1  # past the last agent
