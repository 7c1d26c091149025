"""Source sites of a recording under Numba's CUDA simulator: the user's
``file:line`` of each event, as the site field of its event word."""

from __future__ import annotations

import os

from ..events import NO_SITE, NO_SITE_WORD, SITE_SHIFT
from ..sites import library_roots, shown_path


class SiteTable:
    """Source sites (``file:line``) of the user's code, as site words.

    ``cache`` maps (code object, instruction offset) of a user frame to its
    site word; hot callers look it up themselves and call :meth:`resolve` on
    a miss. A frame in library code (NumPy, the simulator, tracerace) is not
    the user's line: :meth:`resolve` walks out to the nearest user frame and
    does not cache, since the answer depends on the caller.
    """

    def __init__(self, writer) -> None:
        self.writer = writer
        self.cache: dict[tuple, int] = {}
        self._files: dict[object, str | None] = {}  # code object -> shown path or None
        self._library = library_roots()
        self._cwd = os.getcwd()

    def word(self, frame) -> int:
        """The site word of ``frame``'s line (or of the nearest user frame above)."""
        word = self.cache.get((frame.f_code, frame.f_lasti))
        return self.resolve(frame) if word is None else word

    def resolve(self, frame) -> int:
        """The site word of the nearest user frame at or above ``frame``."""
        first = frame
        while frame is not None:
            path = self._path(frame.f_code)
            if path is not None:
                word = self.writer.site(f"{path}:{frame.f_lineno}") << SITE_SHIFT
                if frame is first:
                    self.cache[(frame.f_code, frame.f_lasti)] = word
                return word
            frame = frame.f_back
        return NO_SITE_WORD

    def text_of(self, word: int) -> str | None:
        """The site text a word names (None when it names no site)."""
        index = word >> SITE_SHIFT
        return None if index == NO_SITE else self.writer.sites[index]

    def text(self, frame) -> str | None:
        """``file:line`` of the nearest user frame at or above ``frame`` (None: none)."""
        while frame is not None:
            path = self._path(frame.f_code)
            if path is not None:
                return f"{path}:{frame.f_lineno}"
            frame = frame.f_back
        return None

    def _path(self, code) -> str | None:
        """The path shown for ``code``'s file, or None when it is library code."""
        try:
            return self._files[code]
        except KeyError:
            path = self._files[code] = shown_path(code.co_filename, self._library, self._cwd)
            return path
