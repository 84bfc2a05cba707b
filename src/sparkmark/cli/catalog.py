"""``sparkmark catalog``: databases, tables, partitions and schema versions.

Reads the state store's copy of the catalog, so it works while a job holds the
embedded metastore."""

from __future__ import annotations

import typer

from ..catalog.store import CatalogStore, diff
from ..errors import SparkmarkError
from .context import current_app
from .output import console, one_line_errors, print_json, table, when

app = typer.Typer(help="Browse the Data Catalog.", no_args_is_help=True)


def _store() -> CatalogStore:
    return current_app().catalog


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


@app.command("optimize")
@one_line_errors
def optimize(
    name: str,
    kind: str = typer.Option(..., "--type", help="compaction, retention or orphan_file_deletion"),
    started: str = typer.Option(
        "", "--started", help="The run's start (ISO 8601), when a scheduler recorded it starting"
    ),
) -> None:
    """Run a table optimizer of an Iceberg table now (the scheduler runs enabled ones on
    their schedule) and keep the run, as ListTableOptimizerRuns shows it."""
    from datetime import datetime

    from ..catalog.kept_documents import KeptDocuments
    from ..catalog.optimizer_runs import run_optimizer
    from ..catalog.table_optimizers import TableOptimizers
    from ..engine.schema import utcnow
    from ..host.script import ScriptEnvironment
    from ..settings import Settings
    from .run import glue_endpoint

    db, t = _split(name)
    state = current_app().state
    env = ScriptEnvironment()
    running = glue_endpoint(env)
    try:
        import botocore.session

        # The endpoint the run's GlueCatalog talks to: the one boto3's Glue client now
        # resolves (set above, or the user's own AWS_ENDPOINT_URL_GLUE).
        glue_url = (
            botocore.session.get_session()
            .create_client("glue", region_name=Settings.from_env().aws_region or "us-east-1")
            .meta.endpoint_url
        )
        run = run_optimizer(
            Settings.from_env(),
            TableOptimizers(KeptDocuments(state)),
            CatalogStore(state),
            db.lower(),
            t.lower(),
            kind,
            started=datetime.fromisoformat(started) if started else utcnow(),
            glue_url=glue_url,
        )
    finally:
        if running is not None:
            running.stop()
        env.restore()
    print_json(run)
