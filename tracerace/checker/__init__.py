"""Checking a trace: the jit owner, the engine, the reference checker, findings."""
