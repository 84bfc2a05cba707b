"""Reading a TOML file (sparkmark.toml, a crawler file), every way it can fail said in
one line: missing or unreadable, not UTF-8, not TOML, nested too deeply to parse."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .errors import ConfigError


def read_toml(path: Path) -> dict[str, Any]:
    """The document in ``path``; FileNotFoundError passes through for callers that
    treat a missing file as empty. Every other failure is a ConfigError naming the file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path} nests tables or arrays too deeply to read") from None
