"""Optional packages a test module needs: the test command installs them
(``pip install '.[test]'``), so a missing one fails the module, never skips it."""

from __future__ import annotations

import importlib.util

import pytest


def require(backend: str, modules: tuple[str, ...]) -> None:
    """Fail the calling test module when any of ``modules`` cannot be imported."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(
            f"the {backend} backend needs {', '.join(missing)}: pip install '.[test]'",
            pytrace=False,
        )
