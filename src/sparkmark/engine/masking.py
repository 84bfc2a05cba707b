"""Hiding secrets before anything is stored or logged."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "****"

_SECRET_NAME = re.compile(
    r"pass(word|wd)?|secret|token|credential|api[-_]?key|access[-_]?key|private[-_]?key|auth",
    re.IGNORECASE,
)
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.\-]*://[^/:@\s]*:)(?P<pw>[^@/\s]+)(?=@)", re.I)
_QUERY_SECRET = re.compile(
    r"(?P<head>[?&;](?:password|passwd|pwd|secret|token|sig|signature)=)(?P<pw>[^&;\s]+)", re.I
)


def looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def mask_value(value: str) -> str:
    """Mask passwords embedded in URLs and query strings inside a value."""
    value = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, value)
    return _QUERY_SECRET.sub(lambda m: m.group("head") + MASK, value)


def mask_arguments(arguments: Mapping[str, str]) -> dict[str, str]:
    """Arguments safe to store: secret-named values hidden, URL passwords hidden."""
    masked: dict[str, str] = {}
    for name, value in arguments.items():
        if value is None:
            masked[name] = value
        elif looks_secret(name):
            masked[name] = MASK
        else:
            masked[name] = mask_value(str(value))
    return masked
