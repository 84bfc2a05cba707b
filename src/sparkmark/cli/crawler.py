"""``sparkmark crawler``: define and run crawlers."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..catalog.hive import HiveCatalog
from ..catalog.store import CatalogStore
from ..connections import Connections
from ..crawler.classifiers import declared_classifiers, resolve
from ..crawler.crawl import run_crawl
from ..crawler.definition import load_file
from ..crawler.store import CrawlerStore
from ..settings import Settings
from ..spark import create_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
from .context import current_app
from .output import console, one_line_errors, print_json, table, when

app = typer.Typer(help="Define and run crawlers.", no_args_is_help=True)


@app.command("create")
@one_line_errors
def create(
    file: Path = typer.Option(
        Path("sparkmark.toml"), "--file", help="crawler.toml, or sparkmark.toml with [crawlers.NAME]"
    ),
) -> None:
    """Create or update crawlers from a definition file."""
    store = current_app().crawlers
    for definition in load_file(file):
        store.save(definition)
        console.print(f"crawler {definition.Name} saved")


@app.command("run")
@one_line_errors
def run(
    name: str,
    as_json: bool = typer.Option(False, "--json"),
    crawl_id: str = typer.Option(
        None, "--crawl-id", hidden=True, help="The crawl's id, chosen by the scheduler"
    ),
) -> None:
    """Run one crawl now and print what it did; exits non-zero when the crawl fails."""
    settings = Settings.from_env()
    state = current_app(settings).state
    crawlers = CrawlerStore(state)
    definition, _ = crawlers.get(name)
    classifiers = declared_classifiers(state, settings.config)
    resolve(definition.Classifiers, classifiers)  # an undeclared classifier fails before Spark starts
    started: list[SparkSession] = []

    def spark():
        """Spark starts only for samples pyarrow cannot type as Spark would (CSV, XML,
        Avro, ORC, a JSON field of two types...); its metastore changes stay deferred
        to the next Spark session either way, so the catalog's order is one order."""
        if not started:
            session = create_session(f"crawler-{name}", settings.spark_master, settings)
            session.sparkContext.setLogLevel("ERROR")
            started.append(session)
        return started[0]

    record = run_crawl(
        spark,
        state,
        HiveCatalog(None, CatalogStore(state)),
        crawlers,
        definition,
        connections=Connections.from_settings(settings),
        classifiers=classifiers,
        crawl_id=crawl_id,
    )
    if as_json:
        print_json(record)
        return
    s = record.summary
    console.print(
        f"crawl {record.crawl_id} of {name}: {record.state} in {s.get('duration_seconds')}s — "
        f"tables created {len(s['tables_created'])}, updated {len(s['tables_updated'])}, "
        f"deleted {len(s['tables_deleted'])}, deprecated {len(s['tables_deprecated'])}; "
        f"partitions added {s['partitions_added']}, deleted {s['partitions_deleted']}; "
        f"{len(record.errors)} file errors"
    )
    for e in record.errors:
        console.print(f"  {e['path']}: {e['error']}", highlight=False)


@app.command("get")
@one_line_errors
def get(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show a crawler: definition, state, and its last crawls."""
    store = current_app().crawlers
    definition, state = store.get(name)
    crawls = store.crawls(name)
    if as_json:
        print_json(
            {
                "Name": name,
                "State": state,
                "Definition": definition.model_dump(mode="json"),
                "LastCrawl": crawls[0] if crawls else None,
            }
        )
        return
    console.print(f"crawler {name}: {state}; database {definition.DatabaseName}")
    console.print(
        table(
            "Crawls",
            ["crawl", "state", "started", "ended", "created", "updated", "partitions added", "errors"],
            [
                [
                    c.crawl_id,
                    c.state,
                    when(c.started_at),
                    when(c.ended_at),
                    len(c.summary.get("tables_created", [])),
                    len(c.summary.get("tables_updated", [])),
                    c.summary.get("partitions_added"),
                    len(c.errors),
                ]
                for c in crawls
            ],
        )
    )


@app.command("list")
@one_line_errors
def list_crawlers(as_json: bool = typer.Option(False, "--json")) -> None:
    """List crawlers."""
    store = current_app().crawlers
    names = store.names()
    if as_json:
        print_json(names)
    else:
        console.print(table("Crawlers", ["name", "state"], [[n, store.get(n)[1]] for n in names]))
