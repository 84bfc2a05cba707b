"""How the CLI prints: rich tables for people, JSON for machines, one-line errors."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..engine.masking import mask_text
from ..errors import SparkmarkError

# Off a terminal (pipes, CI logs, make), use a wide fixed width so ids are not folded.
_WIDTH = None if sys.stdout.isatty() else 200
console = Console(soft_wrap=True, width=_WIDTH)
err_console = Console(stderr=True, soft_wrap=True, width=_WIDTH)


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def print_json(document: Any) -> None:
    typer.echo(json.dumps(document, indent=2, default=_default, ensure_ascii=False))


def when(value: datetime | str | None) -> str:
    if isinstance(value, str):
        return value
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if value else "-"


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Table:
    out = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        out.add_column(column, overflow="fold")
    for row in rows:
        out.add_row(*["-" if v is None else str(v) for v in row])
    return out


def fail(message: str, code: int = 1) -> None:
    err_console.print(
        f"[bold red]error:[/] {escape(mask_text(message))}", highlight=False, markup=True, soft_wrap=True
    )
    raise typer.Exit(code)


_TRACEBACKS = False


def show_tracebacks() -> None:
    """``sparkmark --debug``: failures print their traceback after the error line."""
    global _TRACEBACKS  # noqa: PLW0603 - one flag for the command being run
    _TRACEBACKS = True


def debug_enabled(settings=None) -> bool:
    """Whether failures print their traceback (``sparkmark --debug``, ``SPARKMARK_DEBUG``)."""
    if _TRACEBACKS:
        return True
    if settings is None:
        from ..settings import Settings

        try:
            settings = Settings.from_env()
        except SparkmarkError:
            return False
    return bool(settings.debug)


def one_line_errors(command: Callable) -> Callable:
    """Turn sparkmark's own errors into a one-line message and exit code 1."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except SparkmarkError as exc:
            fail(str(exc))

    return wrapper
