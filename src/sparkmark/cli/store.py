"""``sparkmark store``: what a user runs before and after an upgrade. ``check`` says, for
each component, the version its tables are at and what opening the store with this
sparkmark will do, and checks the database's integrity; ``backup`` writes a copy."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import typer
from sqlalchemy import func, inspect, select

from ..app import App
from ..app.store_components import COMPONENTS
from ..errors import SparkmarkError, StateStoreError
from ..settings import Settings
from ..state import components
from ..state.handle import StoreHandle, private_file
from .output import console, one_line_errors, print_json, table

app = typer.Typer(
    help="Check and back up the state store (before and after an upgrade).", no_args_is_help=True
)


def _open(settings: Settings) -> StoreHandle:
    """The store's handle, opened without migrating anything."""
    return App.unmigrated_handle(settings)


def _report(handle: StoreHandle) -> dict[str, Any]:
    rows = []
    with handle.connect() as conn:
        present = set(inspect(conn).get_table_names())
        for component in COMPONENTS:
            found = components.stored_version(conn, component)
            if found == 0:
                action = "not created yet: made when first used"
            elif found < component.version:
                action = f"migrated from version {found} to {component.version} when next opened"
            elif found > component.version:
                action = f"REFUSED: written by a newer sparkmark (this one knows version {component.version})"
            else:
                action = "current"
            counts = {
                name: conn.execute(select(func.count()).select_from(t)).scalar_one()
                for name, t in component.metadata.tables.items()
                if name in present
            }
            rows.append(
                {
                    "component": component.name,
                    "version": found,
                    "release_version": component.version,
                    "action": action,
                    "rows": sum(counts.values()),
                    "tables": counts,
                }
            )
        problems: list[str] = []
        if handle.dialect == "sqlite":
            problems += [r[0] for r in conn.exec_driver_sql("PRAGMA integrity_check") if r[0] != "ok"]
            problems += [
                f"row {r[1]} of {r[0]} refers to a missing row of {r[2]}"
                for r in conn.exec_driver_sql("PRAGMA foreign_key_check")
            ]
    return {"store": handle.display_url, "components": rows, "problems": problems}


@app.command("check")
@one_line_errors
def check(as_json: bool = typer.Option(False, "--json", help="Print JSON")) -> None:
    """Each component's version in the store, what this sparkmark does with it, and the
    database's integrity. Changes nothing. Exits 1 when the store is refused or damaged."""
    handle = _open(Settings.from_env())
    try:
        report = _report(handle)
    finally:
        handle.close()
    refused = [r["component"] for r in report["components"] if r["version"] > r["release_version"]]
    if as_json:
        print_json(report)
    else:
        console.print(
            table(
                f"State store {report['store']}",
                ["Component", "Version", "This release", "Rows", "On open"],
                [
                    [r["component"], r["version"] or "-", r["release_version"], r["rows"], r["action"]]
                    for r in report["components"]
                ],
            )
        )
        for problem in report["problems"]:
            console.print(f"damaged: {problem}", markup=False)
        if not report["problems"]:
            console.print("integrity: ok" if handle.dialect == "sqlite" else "integrity: kept by PostgreSQL")
    if refused or report["problems"]:
        what = (
            f"components newer than this sparkmark: {', '.join(refused)}"
            if refused
            else "the store is damaged"
        )
        raise SparkmarkError(f"{what}; keep the store as it is and restore or upgrade (see docs/deploy.md)")


@app.command("backup")
@one_line_errors
def backup(
    path: Path = typer.Argument(..., help="The file to write (it must not exist)"),
) -> None:
    """Write a consistent copy of the state store to PATH while jobs may run: SQLite's
    online backup into a new SQLite file, or pg_dump's custom format for PostgreSQL
    (restore it with pg_restore). Run it before upgrading sparkmark."""
    settings = Settings.from_env()
    if path.exists():
        raise SparkmarkError(f"{path} exists; choose a new file for the backup")
    handle = _open(settings)
    try:
        if handle.dialect == "sqlite":
            _sqlite_backup(str(handle.url.database), path)
        else:
            _pg_backup(handle, path)
    finally:
        handle.close()
    private_file(path)
    console.print(f"backed up {handle.display_url} to {path} ({path.stat().st_size:,} bytes)", markup=False)


def _sqlite_backup(database: str, path: Path) -> None:
    source = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    target = sqlite3.connect(path)
    try:
        source.backup(target)
        verdict = target.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        target.close()
        source.close()
    if verdict != "ok":
        path.unlink()
        raise StateStoreError(
            f"the backup of {database} failed its integrity check ({verdict}); nothing was kept"
        )


def _pg_backup(handle: StoreHandle, path: Path) -> None:
    tool = shutil.which("pg_dump")
    if tool is None:
        raise SparkmarkError(
            "pg_dump is not on the PATH; install PostgreSQL's client tools to back up this store"
        )
    url = handle.url
    # The connection goes by pg_dump's own environment, built from the store's URL alone:
    # the password never reaches the command line.
    env = {
        "PGDATABASE": url.database or "",
        "PGHOST": url.host or "",
        "PGUSER": url.username or "",
    }
    if url.port:
        env["PGPORT"] = str(url.port)
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    command = [tool, "--format=custom", "--no-owner", f"--file={path}"]
    options = str(url.query.get("options", ""))
    if "search_path=" in options:
        command.append(f"--schema={options.split('search_path=', 1)[1].split(maxsplit=1)[0]}")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        path.unlink(missing_ok=True)
        first = (done.stderr.strip().splitlines() or ["(no message)"])[0]
        raise StateStoreError(f"pg_dump of {handle.display_url} failed: {first}")
