"""Running one statement of a session, as a notebook cell runs: the code in the
session's namespace, what it prints to standard output captured (standard error, where
Spark's and Python's logging go, stays in the session's log), and the value of a last line that is an
expression shown after it. The answer is Glue's ``StatementOutput``: ``Status`` ``ok``
with ``Data.TextPlain``, or ``error`` with ``ErrorName``, ``ErrorValue`` and the
``Traceback`` of the statement's own frames (none of sparkmark's). Each part keeps at
most :data:`MAX_OUTPUT_CHARS` characters, cut with a line that says so."""

from __future__ import annotations

import ast
import contextlib
import io
import sys
import traceback
from typing import Any

from ..pool.protocol import StatementOutput

CELL = "<statement>"
# What one statement's output keeps at most (its printed text, its error's value and its
# traceback, each): beyond it the text is cut with a line saying how much was left out, so
# a statement that prints gigabytes still ends, and no store or page holds more.
MAX_OUTPUT_CHARS = 1_000_000


class CappedText(io.TextIOBase):
    """A text stream that keeps its first ``limit`` characters and counts the rest."""

    def __init__(self, limit: int = MAX_OUTPUT_CHARS):
        self.limit = limit
        self._parts: list[str] = []
        self._kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = self.limit - self._kept
        if room > 0:
            self._parts.append(text[:room])
            self._kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def getvalue(self) -> str:
        return capped("".join(self._parts), self.limit, self.dropped)


def capped(text: str, limit: int = MAX_OUTPUT_CHARS, dropped: int = 0) -> str:
    """``text`` cut to ``limit`` characters, with a last line saying how many were not kept."""
    if len(text) > limit:
        dropped += len(text) - limit
        text = text[:limit]
    if not dropped:
        return text
    return f"{text}\n[sparkmark: output cut: {dropped} more characters not kept; a statement keeps at most {limit}]\n"


def _compiled(code: str, number: int) -> tuple[Any, Any]:
    """The statement as (body, last expression or None), compiled."""
    filename = f"{CELL}-{number}"
    tree = ast.parse(code, filename=filename, mode="exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)  # type: ignore[attr-defined]
    body = compile(tree, filename, "exec")
    return body, (compile(last, filename, "eval") if last is not None else None)


def _own_frames(exc: BaseException) -> list[str]:
    """The traceback from the statement's first frame on: what the user wrote, and what
    it called, without the frames of the session's own code."""
    tb = exc.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(CELL):
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and tb is None:
        return traceback.format_exception_only(type(exc), exc)
    return traceback.format_exception(type(exc), exc, tb)


def run(code: str, namespace: dict[str, Any], number: int) -> StatementOutput:
    """Run ``code`` in ``namespace``; Glue's StatementOutput for it. A
    ``KeyboardInterrupt`` (a cancel) is not caught: the caller decides what it means."""
    out = CappedText()
    try:
        with contextlib.redirect_stdout(out):
            body, last = _compiled(code, number)
            exec(body, namespace)  # a session runs its caller's code, by design
            if last is not None:
                value = eval(last, namespace)
                if value is not None:
                    namespace["_"] = value
                    print(repr(value))
    except Exception as exc:  # noqa: BLE001 - the statement's failure is its output
        name = type(exc).__name__
        lines = _own_frames(exc)
        return StatementOutput(
            ExecutionCount=number,
            Status="error",
            ErrorName=name,
            ErrorValue=capped(str(exc).strip() or name),
            Traceback=capped("".join(lines)).splitlines(keepends=True),
            Data={"TextPlain": out.getvalue()},
        )
    return StatementOutput(ExecutionCount=number, Status="ok", Data={"TextPlain": out.getvalue()})


def flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
