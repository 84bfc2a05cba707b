"""``sparkmark catalog``: databases, tables, partitions and schema versions.

Reads the state store's copy of the catalog, so it works while a job holds the
embedded metastore."""

from __future__ import annotations

import typer

from ..catalog.store import CatalogStore, diff
from ..engine.store import StateStore
from ..errors import SparkmarkError
from .output import console, one_line_errors, print_json, table, when

app = typer.Typer(help="Browse the Data Catalog.", no_args_is_help=True)


def _store() -> CatalogStore:
    return CatalogStore(StateStore.from_settings())


def _split(name: str) -> tuple[str, str]:
    if name.count(".") != 1:
        raise SparkmarkError(f"name tables as DATABASE.TABLE, got {name!r}")
    db, t = name.split(".")
    return db, t


@app.command("databases")
@one_line_errors
def databases(as_json: bool = typer.Option(False, "--json")) -> None:
    """List databases that hold tables."""
    names = _store().databases()
    if as_json:
        print_json(names)
    else:
        console.print(table("Databases", ["name"], [[n] for n in names]))


@app.command("tables")
@one_line_errors
def tables(database: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """List the tables of a database."""
    found = _store().tables(database)
    if as_json:
        print_json(found)
        return
    console.print(
        table(
            f"Tables of {database}",
            ["name", "classification", "location", "columns", "partition keys"],
            [
                [
                    t.name,
                    t.classification,
                    t.location,
                    len(t.columns),
                    ", ".join(c.name for c in t.partition_keys),
                ]
                for t in found
            ],
        )
    )


@app.command("table")
@one_line_errors
def show_table(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one table: location, format, schema, partition keys, parameters."""
    t = _store().table(*_split(name))
    if as_json:
        print_json(t)
        return
    console.print(
        table(
            f"Table {t.qualified} ({t.classification}) at {t.location}",
            ["column", "type", "partition key"],
            [[c.name, c.type, ""] for c in t.columns] + [[c.name, c.type, "yes"] for c in t.partition_keys],
        )
    )
    if t.parameters:
        console.print(table("Parameters", ["key", "value"], sorted([k, v] for k, v in t.parameters.items())))


@app.command("partitions")
@one_line_errors
def partitions(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """List a table's partitions."""
    store = _store()
    db, t = _split(name)
    found = store.table(db, t)
    parts = store.partitions(db, t)
    if as_json:
        print_json([{"values": list(p.values), "location": p.location} for p in parts])
        return
    console.print(
        table(
            f"Partitions of {name}",
            [c.name for c in found.partition_keys] + ["location"],
            [list(p.values) + [p.location] for p in parts],
        )
    )


@app.command("versions")
@one_line_errors
def versions(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show every schema version of a table and what changed between them."""
    store = _store()
    db, t = _split(name)
    store.table(db, t)
    found = store.versions(db, t)
    if as_json:
        print_json(
            [
                {
                    "version": v.version,
                    "created_at": v.created_at,
                    "crawl_id": v.crawl_id,
                    "columns": [[c.name, c.type] for c in v.columns],
                    "partition_keys": [[c.name, c.type] for c in v.partition_keys],
                    "changes": diff(found[i - 1], v) if i else [],
                }
                for i, v in enumerate(found)
            ]
        )
        return
    rows = []
    for i, v in enumerate(found):
        changes = diff(found[i - 1], v) if i else [f"{len(v.columns)} columns"]
        rows.append([v.version, when(v.created_at), v.crawl_id, "\n".join(changes) or "(same columns)"])
    console.print(table(f"Schema versions of {name}", ["version", "created", "crawl", "changes"], rows))
