"""Glue's exclusion glob syntax, compiled to regular expressions.

Glue's rules: ``*`` matches within one folder (never ``/``), ``**`` crosses
folders, ``?`` is one character other than ``/``, ``[abc]``/``[!abc]`` are
character classes, ``{a,b}`` are alternatives and ``\\`` escapes the next
character. Written here rather than taken from a library because Glue lets
``**`` stand inside a name (``**.pdf``), which globstar libraries reject or
read differently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ..errors import SourceError


def _translate(pattern: str, i: int, stop: str = "") -> tuple[str, int]:
    out: list[str] = []
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if stop and ch in stop:
            return "".join(out), i
        if ch == "\\":
            if i + 1 >= n:
                raise SourceError(f"exclusion pattern {pattern!r} ends with a lone backslash")
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif ch == "*":
            if pattern.startswith("**", i):
                out.append(".*")
                i += 2
            else:
                out.append("[^/]*")
                i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                raise SourceError(f"exclusion pattern {pattern!r} has an unclosed '['")
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\")
            out.append(f"[^/{body}]" if negate else f"[{body}]")
            i = end + 1
        elif ch == "{":
            alternatives: list[str] = []
            i += 1
            while True:
                alt, i = _translate(pattern, i, stop=",}")
                alternatives.append(alt)
                if i >= n:
                    raise SourceError(f"exclusion pattern {pattern!r} has an unclosed '{{'")
                if pattern[i] == "}":
                    i += 1
                    break
                i += 1  # the comma
            out.append("(?:" + "|".join(alternatives) + ")")
        else:
            out.append(re.escape(ch))
            i += 1
    if stop:
        return "".join(out), i
    return "".join(out), i


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    regex, _ = _translate(pattern, 0)
    return re.compile(regex, re.DOTALL)


class ExclusionMatcher:
    """Matches files against a list of Glue exclusion globs.

    A pattern is tried against the file's full URL, its path without the
    scheme, and its path relative to the source root; any full match excludes.
    """

    def __init__(self, patterns: Iterable[str]):
        self.patterns = tuple(patterns)
        self._compiled = [compile_glob(p) for p in self.patterns]

    def __bool__(self) -> bool:
        return bool(self._compiled)

    def excludes(self, url: str, bare_path: str, relative: str) -> bool:
        for regex in self._compiled:
            if regex.fullmatch(url) or regex.fullmatch(bare_path) or regex.fullmatch(relative):
                return True
        return False
