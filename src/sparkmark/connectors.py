"""Spark connectors: which ones sparkmark puts on Spark's classpath, where their jars
are, and the one line that tells a user how to get a missing one.

``make jars`` resolves the Maven project in ``jars/`` from Maven Central and writes
one classpath file per connector into the jars folder (``Settings.jars_dir``): a
``:``-separated list of jar paths in Maven's local repository. A connector is
*resolved* when its file exists and every jar it names is still there. Sessions
that sparkmark starts get the resolved connectors that ``SPARKMARK_CONNECTORS``
selects; a cluster that brings its own jars needs none of this.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Connector:
    name: str  # as SPARKMARK_CONNECTORS names it
    classpath_file: str  # written by `make jars` (the Maven module's artifactId)
    provides: str  # what a user would miss without it
    coordinates: str  # Maven coordinates for spark.jars.packages; {spark}/{hadoop} filled in
    # Texts in a JVM error that mean this connector is not on the classpath.
    missing_signs: tuple[str, ...]


CONNECTORS: tuple[Connector, ...] = (
    Connector(
        "s3",
        "spark-s3",
        "the s3a:// filesystem (hadoop-aws and the AWS SDK)",
        "org.apache.hadoop:hadoop-aws:{hadoop}",
        (
            'No FileSystem for scheme "s3',
            "S3AFileSystem not found",
            "ClassNotFoundException: org.apache.hadoop.fs.s3a",
        ),
    ),
    Connector(
        "kafka",
        "spark-kafka",
        "Spark's Kafka source and sink (format kafka)",
        "org.apache.spark:spark-sql-kafka-0-10_2.13:{spark}",
        ("Failed to find data source: kafka", "Failed to find the data source: kafka"),
    ),
    Connector(
        "avro",
        "spark-avro",
        "Spark's Avro format (format avro)",
        "org.apache.spark:spark-avro_2.13:{spark}",
        ("Failed to find data source: avro", "Failed to find the data source: avro"),
    ),
    Connector(
        "jdbc",
        "jdbc",
        "JDBC drivers for PostgreSQL, MariaDB/MySQL and SQLite",
        "org.postgresql:postgresql:42.7.8,org.mariadb.jdbc:mariadb-java-client:3.5.10",
        (),
    ),
)
BY_NAME = {c.name: c for c in CONNECTORS}


def selected(choice: str) -> tuple[Connector, ...]:
    """The connectors ``SPARKMARK_CONNECTORS`` asks for: ``auto`` (all), ``none``, or a
    comma list of names."""
    choice = choice.strip().lower()
    if choice in ("", "auto", "all"):
        return CONNECTORS
    if choice == "none":
        return ()
    names = [n.strip() for n in choice.split(",") if n.strip()]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ConfigError(
            f"SPARKMARK_CONNECTORS names unknown connector(s) {', '.join(unknown)}: use auto, "
            f"none, or a comma list of {', '.join(BY_NAME)}"
        )
    return tuple(BY_NAME[n] for n in names)


def resolved_jars(jars_dir: Path, connector: Connector) -> list[str]:
    """The jars of ``connector`` that ``make jars`` resolved, or [] when it was not run
    or Maven's repository lost one of them since (then the whole set is stale)."""
    listing = jars_dir / f"{connector.classpath_file}.classpath"
    try:
        text = listing.read_text(encoding="utf-8").strip()
    except OSError:
        return []
    jars = [j for j in text.split(":") if j]
    missing = [j for j in jars if not Path(j).is_file()]
    if missing or not jars:
        log.warning(
            "connector %s: %s lists %d jar(s) that are gone; run `make jars` again",
            connector.name,
            listing,
            len(missing),
        )
        return []
    return jars


def classpath(jars_dir: Path, choice: str, *, include: tuple[str, ...] | None = None) -> list[str]:
    """Jars of every selected connector that is resolved, each once, in order."""
    jars: dict[str, None] = {}
    for connector in selected(choice):
        if include is not None and connector.name not in include:
            continue
        jars.update(dict.fromkeys(resolved_jars(jars_dir, connector)))
    return list(jars)


def spark_and_hadoop_versions() -> tuple[str, str]:
    """PySpark's version and the Hadoop release its jars carry."""
    import pyspark

    hadoop = "3.4.2"
    jar_dir = Path(pyspark.__file__).parent / "jars"
    for jar in jar_dir.glob("hadoop-client-api-*.jar"):
        hadoop = jar.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    return pyspark.__version__, hadoop


_SCHEME = re.compile(r'No FileSystem for scheme "(\w+)"')


def missing_connector(text: str) -> str | None:
    """One line saying which connector an error's text shows to be missing, and how to
    get it; None when the error is about something else."""
    for connector in CONNECTORS:
        if not any(sign in text for sign in connector.missing_signs):
            continue
        spark, hadoop = spark_and_hadoop_versions()
        what = connector.provides
        scheme = _SCHEME.search(text)
        if connector.name == "s3" and scheme and scheme.group(1) != "s3a":
            what = f"{scheme.group(1)}:// paths: {what}"
        packages = connector.coordinates.format(spark=spark, hadoop=hadoop)
        return (
            f"the {connector.name} connector is not on Spark's classpath ({what}): run "
            f"`make jars` once and start the job again, or start Spark with "
            f"spark.jars.packages={packages}"
        )
    return None
