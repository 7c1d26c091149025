"""tracerace's version: :data:`__version__` (the package's) and :func:`tool_version`
(the installed distribution's, as ``--version``, SARIF and HTML reports give it)."""

from __future__ import annotations

__version__ = "0.1.0"


def tool_version() -> str:
    """The installed distribution's version, else the package's :data:`__version__`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tracerace")
    except PackageNotFoundError:
        return __version__
