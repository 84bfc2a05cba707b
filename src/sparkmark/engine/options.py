"""Glue's file-source options: their names, what they mean, and how their values parse.

One table serves the engine (``FileSourceOptions.split``) and the Glue façade (which
passes these names through from ``connection_options``/``additional_options``), so a
name known to one is known to the other, and docs/glue-compatibility.md can be checked
against it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import SourceError


@dataclass(frozen=True)
class FileOption:
    name: str  # Glue's name, as scripts spell it
    meaning: str


FILE_OPTIONS: tuple[FileOption, ...] = (
    FileOption("recurse", "read the files in every folder below the paths (true/false)"),
    FileOption("exclusions", 'a JSON list of globs of files to leave out, e.g. ["**.tmp"]'),
    FileOption("maxBand", "milliseconds before now in which recent files are limited (default 900000)"),
    FileOption("maxFilesInBand", "how many files of that band a run takes (default 1000)"),
    FileOption("boundedFiles", "at most this many files a run"),
    FileOption("boundedSize", "at most this many bytes a run"),
    FileOption(
        "skipUnchangedPartitions",
        "skip listing partition folders whose mtime has not changed since they were fully read",
    ),
    FileOption(
        "modifiedFiles",
        "what a file changed since it was read means: reprocess (read it whole again, Glue's rule; "
        "the default), new-bytes (append-only JSON lines, CSV, text: read only the bytes past what "
        "was read, once the part read is found unchanged), fail (stop the run)",
    ),
)
MODIFIED_FILES = ("reprocess", "new-bytes", "fail")
OPTION_NAMES = frozenset(o.name for o in FILE_OPTIONS)


def parse_bool(name: str, value: Any) -> bool:
    """A Glue boolean option: true/false (any case), 1/0, yes/no; anything else is an error."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise SourceError(f"option {name} must be true or false, got {value!r}")


def parse_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in choices:
        raise SourceError(f"option {name} must be one of {', '.join(choices)}, got {value!r}")
    return text


def parse_count(name: str, value: Any, *, allow_zero: bool = False) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = -1
    if number < 0 or (number == 0 and not allow_zero) or isinstance(value, bool):
        kind = "a whole number ≥ 0" if allow_zero else "a positive whole number"
        raise SourceError(f"option {name} must be {kind}, got {value!r}")
    return number


def parse_exclusions(value: Any) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        patterns = list(value)
    else:
        try:
            patterns = json.loads(value)
        except (TypeError, ValueError):
            raise SourceError(
                f'option exclusions must be a JSON list of globs, e.g. "[\\"**.pdf\\"]", got {value!r}'
            ) from None
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise SourceError(f"option exclusions must be a list of glob strings, got {value!r}")
    return tuple(patterns)
