"""Checks on names that end up in file paths (job names, ctx names, run ids)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import ArgumentError

_RUN_ID = re.compile(r"^jr_[0-9a-f]{64}(_attempt_[0-9]{1,2})?$")
MAX_NAME_BYTES = 255
MAX_CTX_BYTES = 255 - len(".input-files.json")  # a source's manifest is <ctx>.input-files.json
_FORBIDDEN = re.compile(r"[/\\\x00-\x1f\x7f]")


def check_name(kind: str, value: str, max_bytes: int | None = None) -> str:
    """A job or source name safe to use as one path segment: no slashes, no control
    characters, not '.' or '..', at most 255 bytes in UTF-8 (a file name's limit, so a
    name of accented or CJK characters is refused before its run starts, not half-way)."""
    if not value or value.strip() in (".", "..") or _FORBIDDEN.search(value):
        raise ArgumentError(
            f"invalid {kind} {value!r}: use 1 to 255 bytes without '/', '\\\\', control "
            "characters, and not '.' or '..'"
        )
    limit = max_bytes or (MAX_CTX_BYTES if kind == "transformation_ctx" else MAX_NAME_BYTES)
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ArgumentError(
            f"invalid {kind} {value[:40]!r}…: it is {size} bytes in UTF-8 ({len(value)} characters); "
            f"it becomes part of a file name, so it may hold at most {limit} bytes"
        )
    return value


def check_run_id(value: str) -> str:
    if not _RUN_ID.match(value or ""):
        raise ArgumentError(
            f"invalid run id {value!r}: run ids look like jr_ followed by 64 hex digits (and _attempt_N for a retry)"
        )
    return value


def is_hidden(name: str) -> bool:
    """Names Spark and Hadoop treat as not data: ``_SUCCESS``, ``.crc``, ``_temporary``."""
    return name.startswith(("_", "."))


def some_of(names: Sequence[str], shown: int = 3) -> str:
    """Names for a one-line message: the first ``shown``, then how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
