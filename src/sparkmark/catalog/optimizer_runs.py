"""One run of a table optimizer (catalog.table_optimizers): a Spark with Iceberg whose
catalog is Iceberg's own GlueCatalog over this catalog's Glue endpoint, calling the
optimizer's procedure on the table, and the run kept as Glue reports it."""

from __future__ import annotations

import logging
import posixpath
from datetime import datetime
from typing import Any

from ..engine.schema import utcnow
from ..errors import NotFound, SparkmarkError
from ..settings import Settings
from .store import CatalogStore
from .table_optimizers import TableOptimizers, run_metrics, statement

log = logging.getLogger("sparkmark.catalog.optimizers")

CATALOG = "sm_optimizer"  # the Spark catalog a run declares over the Glue catalog


def spark_settings(settings: Settings, location: str, glue_url: str) -> Settings:
    """The run's settings: Iceberg's jars, a GlueCatalog over ``glue_url`` that reads
    files of any scheme (ResolvingFileIO: the table may be on S3 or local), no Hive."""
    import json

    from ..table_formats import GLUE_CATALOG, point_glue_catalogs

    prefix = f"spark.sql.catalog.{CATALOG}"
    confs = {
        **settings.spark_conf_map(),
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.catalog-impl": GLUE_CATALOG,
        f"{prefix}.io-impl": "org.apache.iceberg.io.ResolvingFileIO",
        f"{prefix}.warehouse": posixpath.dirname(location.rstrip("/")),
    }
    point_glue_catalogs(confs, glue_url, settings.aws_region or "us-east-1", settings.aws_endpoint_url_s3)
    formats = [f.strip() for f in (settings.datalake_formats or "").split(",") if f.strip()]
    if "iceberg" not in formats:
        formats.append("iceberg")
    # No Hive metastore: the run needs only Iceberg's catalog, and an embedded metastore
    # admits one process at a time (a job's run may hold it).
    return settings.model_copy(
        update={"datalake_formats": ",".join(formats), "spark_conf": json.dumps(confs), "catalog": "none"}
    )


def _result(kind: str, rows: list[Any]) -> dict[str, Any]:
    if kind == "orphan_file_deletion":
        return {"orphan_files": len(rows)}
    return rows[0].asDict() if rows else {}


def _first_line(exc: BaseException) -> str:
    """What went wrong, in one line: a JVM error's own text (Py4J's starts "An error
    occurred while calling …"), or the exception's."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0][:2000] if lines else type(exc).__name__


def run_optimizer(
    settings: Settings,
    optimizers: TableOptimizers,
    catalog: CatalogStore,
    database: str,
    table: str,
    kind: str,
    *,
    started: datetime,
    glue_url: str,
) -> dict[str, Any]:
    """Run the optimizer and keep its run (the one that starts at ``started``, recorded
    in progress first); the run as kept. A failure is kept as a failed run and raised."""
    optimizer = optimizers.get(database, table, kind)
    if optimizer is None:
        raise NotFound(f"no {kind} optimizer for {database}.{table}")
    base = {"startTimestamp": started}
    if kind == "compaction":
        strategy = (optimizer.configuration.get("compactionConfiguration") or {}).get(
            "icebergConfiguration"
        ) or {}
        base["compactionStrategy"] = strategy.get("strategy", "binpack")
    optimizers.record(database, table, kind, {**base, "eventType": "in_progress"})
    try:
        found = catalog.table(database, table)
        sql = statement(CATALOG, database, table, kind, optimizer.configuration, started)
        from ..spark import create_session

        run_settings = spark_settings(settings, found.location, glue_url)
        spark = create_session(
            f"sparkmark optimizer {database}.{table} {kind}", run_settings.spark_master, run_settings
        )
        log.info("%s.%s %s: %s", database, table, kind, sql)
        rows = spark.sql(sql).collect()
    except Exception as exc:  # noqa: BLE001 - any failure is the run's, kept and said
        ended = utcnow()
        message = _first_line(exc)
        optimizers.record(
            database, table, kind, {**base, "eventType": "failed", "endTimestamp": ended, "error": message}
        )
        raise SparkmarkError(f"{kind} of {database}.{table} failed: {message}") from None
    ended = utcnow()
    hours = (ended - started).total_seconds() / 3600
    run = {
        **base,
        "eventType": "completed",
        "endTimestamp": ended,
        **run_metrics(kind, _result(kind, rows), hours),
    }
    optimizers.record(database, table, kind, run)
    return run
