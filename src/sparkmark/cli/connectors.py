"""``sparkmark connectors``: which Spark connectors are resolved, and fetching them ahead
of the first job that needs them (a CI image, a machine about to go offline)."""

from __future__ import annotations

import typer
from rich.markup import escape

from ..settings import Settings
from .output import console, table

app = typer.Typer(help="Spark connectors: list them, fetch them ahead of need.", no_args_is_help=True)


def _known():
    from .. import connectors
    from ..table_formats import FORMATS

    return {**connectors.BY_NAME, **FORMATS}


@app.command("list")
def list_connectors() -> None:
    """Each connector: whether it is resolved, its jars and its Maven coordinates."""
    from .. import connectors

    settings = Settings.from_env()
    rows = []
    for name, connector in _known().items():
        jars = connectors.resolved_jars(settings.jars_dir, connector)
        rows.append(
            [name, "resolved" if jars else "not fetched", len(jars), connectors.coordinates(connector)]
        )
    console.print(
        table(
            f"Connectors in {escape(str(settings.jars_dir))}", ["name", "state", "jars", "coordinates"], rows
        )
    )


@app.command("fetch")
def fetch(
    names: list[str] = typer.Argument(None, help="Connectors to fetch (default: s3, kafka, avro and jdbc)"),
) -> None:
    """Fetch connectors now, through Spark's package resolution, into the jars folder;
    a damaged jar (cut short by an interrupted download) is fetched again."""
    from .. import connectors
    from ..errors import ConfigError

    settings = Settings.from_env()
    known = _known()
    wanted = names or [c.name for c in connectors.CONNECTORS]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ConfigError(f"unknown connector(s) {', '.join(unknown)}: known are {', '.join(known)}")
    for name in wanted:
        # Every jar is checked whole first (its zip directory, Maven's SHA-1): a damaged
        # one is removed and fetched again.
        for jar in connectors.repair(settings.jars_dir, known[name], thorough=True):
            console.print(f"{name}: {escape(jar)} was damaged; removed, to be fetched again")
        jars = connectors.resolved_jars(settings.jars_dir, known[name]) or connectors.resolve(
            settings.jars_dir, known[name], environ=settings.environ, spark_confs=settings.spark_conf_map()
        )
        console.print(f"{name}: {len(jars)} jar(s) resolved and checked")
