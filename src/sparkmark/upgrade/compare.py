"""Comparing what one job did under two Glue versions: its end (succeeded, or the error
it failed with), its warnings, and each write it would have made (``runtime.capture``):
the schema Spark gave it, its row count, and its rows, by key when one is named, else by
content. Each difference is tied to the documented change that explains it, where one is
known (``changes``). Reads the captures with pyarrow: no Spark here."""

from __future__ import annotations

import datetime
import decimal
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import changes

SHOWN = 3  # values shown of a difference in rows


@dataclass(frozen=True)
class Ran:
    """One job's run under one Glue version, as its capture folder holds it."""

    folder: Path
    code: int
    error: str | None
    warnings: tuple[str, ...]
    writes: tuple[dict[str, Any], ...]

    @classmethod
    def read(cls, folder: Path) -> Ran:
        ran = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        manifest = folder / "manifest.json"
        writes = json.loads(manifest.read_text(encoding="utf-8"))["writes"] if manifest.exists() else []
        return cls(
            folder, int(ran["code"]), ran.get("error"), tuple(ran.get("warnings") or ()), tuple(writes)
        )

    def rows(self, write: dict[str, Any]) -> list[dict[str, Any]]:
        import pyarrow.parquet as pq

        table = pq.read_table(self.folder / f"{int(write['number']):03d}")
        return [{k: _plain(v) for k, v in row.items()} for row in table.to_pylist()]


@dataclass(frozen=True)
class Difference:
    job: str
    what: str  # "outcome", "error", "warnings", "writes", "schema", "type", "rows", "values"
    where: str  # the write's target, or "run"
    old: str
    new: str
    change: changes.KnownChange | None = None

    @property
    def explanation(self) -> str:
        if self.change is None:
            return "no documented change is known to explain it"
        fix = f" ({self.change.fix})" if self.change.fix else ""
        return f"{self.change.what} [{self.change.source}]{fix}"


def compare(job: str, old: Ran, new: Ran, key: list[str] | None = None) -> list[Difference]:
    """Every difference between ``old`` (the version moved from) and ``new``."""
    found: list[Difference] = []
    if (old.code == 0) != (new.code == 0):
        failed = new if new.code != 0 else old
        found.append(
            Difference(
                job,
                "outcome",
                "run",
                _end(old),
                _end(new),
                changes.for_error(failed.error),
            )
        )
        return found  # what one side wrote before failing is not comparable
    if old.code != 0:
        if _error_class(old.error) != _error_class(new.error):
            found.append(
                # the old error names what the new Spark no longer does (a parser policy), else the new one
                Difference(
                    job,
                    "error",
                    "run",
                    _end(old),
                    _end(new),
                    changes.for_error(old.error) or changes.for_error(new.error),
                )
            )
        return found
    if sorted(old.warnings) != sorted(new.warnings):
        found.append(Difference(job, "warnings", "run", _listed(old.warnings), _listed(new.warnings)))
    if [w["target"] for w in old.writes] != [w["target"] for w in new.writes]:
        found.append(
            Difference(
                job,
                "writes",
                "run",
                _listed(w["target"] for w in old.writes),
                _listed(w["target"] for w in new.writes),
            )
        )
        return found
    for before, after in zip(old.writes, new.writes, strict=True):
        found += _compare_write(job, old, new, before, after, key)
    return found


def _compare_write(
    job: str, old: Ran, new: Ran, before: dict[str, Any], after: dict[str, Any], key: list[str] | None
) -> list[Difference]:
    where = str(after["target"])
    found: list[Difference] = []
    old_types, new_types = dict(map(tuple, before["schema"])), dict(map(tuple, after["schema"]))
    if list(old_types) != list(new_types):
        found.append(Difference(job, "schema", where, _listed(old_types), _listed(new_types)))
        return found
    for name, was in old_types.items():
        now = new_types[name]
        if was != now:
            found.append(Difference(job, "type", f"{where}: {name}", was, now, changes.for_types(was, now)))
    if before["rows"] != after["rows"]:
        found.append(Difference(job, "rows", where, str(before["rows"]), str(after["rows"])))
        return found
    if found:
        return found  # a column of another type: its values are not comparable one by one
    old_rows, new_rows = old.rows(before), new.rows(after)
    if key and all(k in old_types for k in key):
        return _by_key(job, where, old_rows, new_rows, key)
    return _by_content(job, where, old_rows, new_rows)


def _by_key(
    job: str, where: str, old_rows: list[dict], new_rows: list[dict], key: list[str]
) -> list[Difference]:
    """Rows matched by ``key``: each column whose values changed, with the first few."""
    new_by = {tuple(r[k] for k in key): r for r in new_rows}
    changed: dict[str, list[tuple[Any, Any, Any]]] = {}
    missing = []
    for row in old_rows:
        ident = tuple(row[k] for k in key)
        other = new_by.get(ident)
        if other is None:
            missing.append(ident)
            continue
        for column, value in row.items():
            if other.get(column) != value:
                changed.setdefault(column, []).append((ident, value, other.get(column)))
    found = []
    for column, pairs in changed.items():
        kinds = {changes.for_values(a, b) for _, a, b in pairs}
        change = kinds.pop() if len(kinds) == 1 else None
        found.append(
            Difference(
                job,
                "values",
                f"{where}: {column} ({len(pairs)} row(s))",
                _listed(f"{_key(i)}={_shown(a)}" for i, a, _ in pairs[:SHOWN]),
                _listed(f"{_key(i)}={_shown(b)}" for i, _, b in pairs[:SHOWN]),
                change,
            )
        )
    if missing:
        found.append(Difference(job, "rows", where, _listed(map(_key, missing[:SHOWN])), "no such key"))
    return found


def _by_content(job: str, where: str, old_rows: list[dict], new_rows: list[dict]) -> list[Difference]:
    """Rows compared whole, as a multiset: those only one version wrote."""
    old_set = Counter(_canonical(r) for r in old_rows)
    new_set = Counter(_canonical(r) for r in new_rows)
    only_old, only_new = old_set - new_set, new_set - old_set
    if not only_old and not only_new:
        return []
    change = None
    if len(only_old) == 1 and len(only_new) == 1:  # one row changed: explained by its values
        before, after = json.loads(next(iter(only_old))), json.loads(next(iter(only_new)))
        shapes = {
            changes.for_values(before.get(c), after.get(c)) for c in after if before.get(c) != after.get(c)
        }
        change = shapes.pop() if len(shapes) == 1 else None
    return [
        Difference(
            job,
            "values",
            f"{where} ({sum(only_old.values())} row(s) only in the old, {sum(only_new.values())} only in the new)",
            _listed(list(only_old)[:SHOWN]),
            _listed(list(only_new)[:SHOWN]),
            change,
        )
    ]


def _plain(value: Any) -> Any:
    """A value as JSON compares it across versions (a decimal as its text, times as ISO)."""
    if isinstance(value, decimal.Decimal):
        return str(value.normalize())
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _canonical(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def _error_class(error: str | None) -> str:
    """The error class in a failure's line ([CLASS.SUB] …), else the line."""
    text = error or ""
    start = text.find("[")
    end = text.find("]", start)
    return text[start + 1 : end].split(".")[0] if 0 <= start < end else text


def _end(ran: Ran) -> str:
    return "succeeded" if ran.code == 0 else f"failed: {(ran.error or f'exit code {ran.code}')[:200]}"


def _key(ident: tuple) -> str:
    return ",".join(str(v) for v in ident)


def _shown(value: Any) -> str:
    return "null" if value is None else json.dumps(value, default=str)


def _listed(items: Any) -> str:
    shown = [str(i) for i in items]
    return "; ".join(shown) if shown else "(none)"
