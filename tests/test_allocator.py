"""The command line's one malloc arena (``tracerace.allocator``)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from tracerace import allocator, cli, stopping


def test_glibc_takes_one_malloc_arena():
    """Where the C library is glibc the setting is taken; elsewhere nothing
    changes and it says so (a process of its own: the setting is for life)."""
    out = subprocess.run(
        [sys.executable, "-c", "from tracerace.allocator import one_malloc_arena as f; print(f())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == str(platform.libc_ver()[0] == "glibc")


def test_the_command_line_asks_for_one_arena_before_anything_else(monkeypatch):
    calls = []
    monkeypatch.setattr(allocator, "one_malloc_arena", lambda: calls.append(True) or True)
    monkeypatch.setattr(stopping, "raise_on_stop", lambda: None)  # (this process's signals)
    monkeypatch.setattr(sys, "argv", ["tracerace", "--version"])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 0 and calls == [True]
