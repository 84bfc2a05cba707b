"""Spark connectors: which ones sparkmark puts on Spark's classpath, where their jars
are, how a missing one is fetched, and the one line that tells a user what is missing.

A connector's jars are listed in a classpath file in the jars folder
(``Settings.jars_dir``): a ``:``-separated list of jar paths. A connector is *resolved*
when its file exists and every jar it names is still there. Two things write it:

- **on demand** (``resolve``): the first session that needs a connector resolves its
  Maven coordinates, pinned to the installed PySpark and its Hadoop, through Spark's own
  package resolution (``spark.jars.packages``, Ivy) in a short JVM of its own, into the
  Ivy cache under the jars folder; a ``.coordinates`` file beside the classpath file pins
  what was resolved, so a PySpark upgrade resolves again. Spark's resolvers are used as
  they are: Maven's local repository, then Maven Central (``spark.jars.repositories`` and
  ``spark.jars.ivySettings``, given as Spark settings, point it at a mirror);
- ``make jars`` (the repository's pre-fetch): the Maven project in ``jars/``, into Maven's
  local repository.

Sessions that sparkmark starts get every resolved connector ``SPARKMARK_CONNECTORS``
selects, and resolve the ones the job needs (``needed_by``: its script and arguments)
that are not; a cluster that brings its own jars needs none of this.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import glue_versions
from .engine.masking import mask_text
from .errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Connector:
    name: str  # as SPARKMARK_CONNECTORS names it
    classpath_file: str  # written by `make jars` (the Maven module's artifactId)
    provides: str  # what a user would miss without it
    # Maven coordinates for spark.jars.packages; {spark}, {hadoop}, {scala}, {line} (Spark's
    # major.minor), {iceberg} and {delta} (the Glue release's) are filled in.
    coordinates: str
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
        "org.apache.spark:spark-sql-kafka-0-10_{scala}:{spark}",
        ("Failed to find data source: kafka", "Failed to find the data source: kafka"),
    ),
    Connector(
        "avro",
        "spark-avro",
        "Spark's Avro format (format avro)",
        "org.apache.spark:spark-avro_{scala}:{spark}",
        ("Failed to find data source: avro", "Failed to find the data source: avro"),
    ),
    Connector(
        "jdbc",
        "jdbc",
        "JDBC drivers for PostgreSQL, MariaDB/MySQL and SQLite",
        "org.postgresql:postgresql:42.7.8,org.mariadb.jdbc:mariadb-java-client:3.5.10,"
        "org.xerial:sqlite-jdbc:3.53.4.0",
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


def coordinates(connector: Connector) -> str:
    """``connector``'s Maven coordinates for the installed PySpark, its Hadoop and Scala,
    and the table formats of the Glue release that Spark is."""
    spark, hadoop = spark_and_hadoop_versions()
    glue = glue_versions.release_for_spark(spark)
    return connector.coordinates.format(
        spark=spark,
        hadoop=hadoop,
        scala=glue_versions.scala_version(spark),
        line=glue_versions.spark_line(spark),
        iceberg=glue.iceberg,
        delta=glue.delta,
    )


def listing_dir(jars_dir: Path) -> Path:
    """Where the installed Spark's classpath files are: the jars folder for the line
    ``make jars`` fetches for, a folder per Spark version for the others (so two runtimes
    on one machine never take each other's jars)."""
    spark = spark_and_hadoop_versions()[0]
    return (
        jars_dir
        if glue_versions.spark_line(spark) == glue_versions.PRIMARY_LINE
        else jars_dir / f"spark-{spark}"
    )


def listing(jars_dir: Path, connector: Connector) -> Path:
    """The classpath file of ``connector`` for the installed Spark."""
    return listing_dir(jars_dir) / f"{connector.classpath_file}.classpath"


_END_OF_DIRECTORY = b"PK\x05\x06"
_DIRECTORY_ENTRY = b"PK\x01\x02"
_ZIP64_LOCATOR = b"PK\x06\x07"
_TAIL = 65_536 + 22  # the end record, and the longest comment a zip may carry after it


def jar_problem(path: Path, *, thorough: bool = False) -> str | None:
    """What is wrong with the jar at ``path``, or None. Quickly (every session start):
    it is there, its end-of-directory record is in its last 64 KB and its central
    directory starts where that record says; a jar an interrupted download cut short
    fails this. ``thorough`` (doctor, ``connectors fetch``) also reads the whole central
    directory with :mod:`zipfile`, and checks the SHA-1 Maven keeps beside a jar it
    downloaded (``.jar.sha1``)."""
    import struct

    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            f.seek(max(0, size - _TAIL))
            tail = f.read()
            at = tail.rfind(_END_OF_DIRECTORY)
            if at < 0 or len(tail) - at < 22:
                return "it is cut short (no end of its zip directory)"
            length, offset = struct.unpack("<II", tail[at + 12 : at + 20])
            if offset != 0xFFFFFFFF:  # a zip64 jar keeps its offsets in another record
                if offset + length > size - (len(tail) - at):
                    return "it is cut short (its zip directory ends past the file)"
                f.seek(offset)
                if f.read(4) != _DIRECTORY_ENTRY:
                    return "its zip directory is not where its end record says"
            elif tail.rfind(_ZIP64_LOCATOR, 0, at) < 0:
                return "it is cut short (a zip64 jar without its locator)"
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if thorough:
        import hashlib
        import zipfile

        try:
            with zipfile.ZipFile(path) as jar:
                jar.namelist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            return f"it is not a readable jar ({exc})"
        checksum = path.with_name(path.name + ".sha1")
        if checksum.is_file():
            expected = checksum.read_text(encoding="utf-8", errors="replace").split()[:1]
            digest = hashlib.sha1(usedforsecurity=False)
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            if expected and expected[0].lower() != digest.hexdigest():
                return f"its SHA-1 is not the one in {checksum.name}"
    return None


def damaged_jars(jars_dir: Path, connector: Connector, *, thorough: bool = False) -> dict[str, str]:
    """Each jar the classpath file of ``connector`` lists that is damaged, with why."""
    try:
        jars = [j for j in listing(jars_dir, connector).read_text(encoding="utf-8").strip().split(":") if j]
    except OSError:
        return {}
    found = {}
    for jar in jars:
        problem = jar_problem(Path(jar), thorough=thorough) if Path(jar).exists() else None
        if problem:
            found[jar] = problem
    return found


def resolved_jars(jars_dir: Path, connector: Connector) -> list[str]:
    """The resolved jars of ``connector``, or [] when it is not resolved: never, for
    another PySpark (its pinned coordinates differ), or a jar it names is gone or damaged
    since (then the whole set is stale: a damaged jar on Spark's class path fails the
    job far from its cause)."""
    listed = listing(jars_dir, connector)
    try:
        text = listed.read_text(encoding="utf-8").strip()
    except OSError:
        return []
    pinned = listed.with_suffix(".coordinates")
    if pinned.exists() and pinned.read_text(encoding="utf-8").strip() != coordinates(connector):
        return []  # resolved for another PySpark: resolved again when needed
    jars = [j for j in text.split(":") if j]
    missing = [j for j in jars if not Path(j).is_file()]
    if missing or not jars:
        log.warning(
            "connector %s: %s lists %d jar(s) that are gone; it is resolved again when needed",
            connector.name,
            listed,
            len(missing),
        )
        return []
    damaged = {j: p for j in jars if (p := jar_problem(Path(j)))}
    if damaged:
        jar, problem = next(iter(damaged.items()))
        log.warning(
            "connector %s: %s is damaged: %s; run `sparkmark connectors fetch %s` to repair it",
            connector.name,
            jar,
            problem,
            connector.name,
        )
        return []
    return jars


def repair(jars_dir: Path, connector: Connector, *, thorough: bool = True) -> list[str]:
    """Remove the damaged jars of ``connector`` (they are cached copies: Maven's local
    repository, Ivy's cache) and its classpath file, so the next resolution fetches them
    again; the jars removed."""
    damaged = damaged_jars(jars_dir, connector, thorough=thorough)
    for jar in damaged:
        Path(jar).unlink(missing_ok=True)
        Path(jar + ".sha1").unlink(missing_ok=True)
    if damaged:
        listing(jars_dir, connector).unlink(missing_ok=True)
    return sorted(damaged)


# What in a job's script or arguments shows that it uses a connector.
_NEEDS: dict[str, re.Pattern[str]] = {
    "s3": re.compile(r"\bs3[an]?://", re.IGNORECASE),
    "kafka": re.compile(r"""["']kafka["']"""),
    "avro": re.compile(r"""["']avro["']"""),
    "jdbc": re.compile(
        r"""["'](?:jdbc|postgresql|mysql|mariadb|sqlite)["']|\bjdbc:(?:postgresql|mysql|mariadb|sqlite):"""
    ),
}


def needed_by(texts: Iterable[str]) -> tuple[str, ...]:
    """The connectors a job's texts (its script, its argument values) show it uses: an
    ``s3://`` path, ``connection_type="kafka"`` or ``format("avro")``, a JDBC URL or
    type. A connector a job uses without saying so (a catalog table's location) is
    named in ``SPARKMARK_CONNECTORS``, or fetched with ``sparkmark connectors fetch``."""
    found: list[str] = []
    for text in texts:
        found += [name for name, sign in _NEEDS.items() if name not in found and sign.search(text)]
    return tuple(c.name for c in CONNECTORS if c.name in found)


def resolve(
    jars_dir: Path,
    connector: Connector,
    *,
    environ: Mapping[str, str],
    spark_confs: Mapping[str, str] | None = None,
    timeout: float = 1800,
) -> list[str]:
    """Resolve ``connector`` through Spark's own package resolution, once per machine:
    its jars, which are also written to its classpath file. The resolving JVM runs with
    ``environ`` (the settings' resolved environment: JAVA_HOME, a proxy). Processes that
    need it at the same time wait for the first. One ConfigError line when it cannot be
    resolved."""
    jars_dir.mkdir(parents=True, exist_ok=True)
    with (jars_dir / ".resolving.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = resolved_jars(jars_dir, connector)
        if found:
            return found  # another process resolved it while this one waited
        # A damaged cached copy would be taken again as it is: removed, so it is fetched.
        for jar in repair(jars_dir, connector, thorough=False):
            log.warning("connector %s: removed the damaged %s to fetch it again", connector.name, jar)
        wanted = coordinates(connector)
        ivy = jars_dir / "ivy"
        sys.stderr.write(
            f"sparkmark: fetching the {connector.name} connector ({wanted}) through Spark's package "
            f"resolution into {ivy}; this happens once\n"
        )
        # The resolution's settings go in a private properties file, not on the JVM's
        # command line: a mirror's URL may carry its credentials.
        settings = {"spark.jars.ivy": str(ivy)}
        settings.update({k: v for k, v in (spark_confs or {}).items() if k in _RESOLUTION_SETTINGS})
        properties = jars_dir / ".resolving.properties"
        fd = os.open(properties, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines(f"{key} {_escaped(value)}\n" for key, value in settings.items())
        from .spark_lines import also_spark_defaults

        args = [
            "--properties-file",
            str(properties),
            *also_spark_defaults(),
            "--packages",
            wanted,
            "pyspark-shell",
        ]
        env = {**environ, "PYSPARK_SUBMIT_ARGS": " ".join(map(shlex.quote, args))}
        try:
            done = subprocess.run(
                [sys.executable, "-c", _PROBE],
                check=False,
                capture_output=True,
                text=True,
                env=env,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            properties.unlink(missing_ok=True)
            raise ConfigError(
                f"fetching the {connector.name} connector ({wanted}) took over {timeout:.0f} s; "
                "try `sparkmark connectors fetch` again, or point spark.jars.repositories at a mirror"
            ) from None
        properties.unlink(missing_ok=True)
        listed = [line for line in done.stdout.splitlines() if line.startswith("JARS ")]
        jars = [_local(j) for j in listed[-1].removeprefix("JARS ").split(",") if j] if listed else []
        if done.returncode != 0 or not jars:
            raise ConfigError(
                f"the {connector.name} connector ({wanted}) could not be fetched from "
                f"{_where_from(settings)}: {_why(done.stderr)}; check the network, or set "
                "spark.jars.repositories to a mirror (SPARKMARK_SPARK_CONF)"
            )
        jars = [_from_cache(ivy, Path(j)) for j in jars]
        classpath = listing(jars_dir, connector)
        classpath.parent.mkdir(parents=True, exist_ok=True)
        classpath.write_text(":".join(jars) + "\n", encoding="utf-8")
        classpath.with_suffix(".coordinates").write_text(wanted + "\n", encoding="utf-8")
        log.info("connector %s: %d jar(s) in %s", connector.name, len(jars), ivy)
        return jars


# Spark settings that shape a package resolution, taken from the user's Spark settings.
_RESOLUTION_SETTINGS = ("spark.jars.repositories", "spark.jars.ivySettings", "spark.jars.excludes")


def _where_from(settings: Mapping[str, str]) -> str:
    """The repositories a resolution asked, as a user would name them: the mirror it was
    given (its address masked), else Maven's local repository and Maven Central."""
    if settings.get("spark.jars.ivySettings"):
        return f"the repositories of {settings['spark.jars.ivySettings']}"
    mirrors = [m for m in (settings.get("spark.jars.repositories") or "").split(",") if m.strip()]
    if mirrors:
        return (
            ", ".join(mask_text(m.strip()) for m in mirrors) + " (spark.jars.repositories) or Maven Central"
        )
    return "Maven's local repository or Maven Central"


def _escaped(value: str) -> str:
    """A value as a Java properties file reads it back."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")


# Run in the resolving JVM's Python: Spark has resolved --packages before its gateway
# answers, and lists the jars it fetched in spark.jars.
_PROBE = (
    "from pyspark.java_gateway import launch_gateway\n"
    "g = launch_gateway()\n"
    "print('JARS ' + (g.jvm.System.getProperty('spark.jars') or ''))\n"
)


def _from_cache(ivy: Path, retrieved: Path) -> str:
    """Ivy keeps each jar twice: in its cache (``cache/ORG/MODULE/jars/MODULE-REV.jar``)
    and the copy Spark retrieves (``jars/ORG_MODULE-REV.jar``). The classpath names the
    cached one and the copy is removed: the AWS SDK alone is 600 MB."""
    org, sep, rest = retrieved.name.partition("_")
    if retrieved.parent != ivy / "jars" or not sep:
        return str(retrieved)
    for module in sorted((ivy / "cache" / org).glob("*/jars")):
        cached = module / rest
        if cached.is_file() and cached.stat().st_size == retrieved.stat().st_size:
            retrieved.unlink()
            return str(cached)
    return str(retrieved)


def _local(url: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(url).path) if url.startswith("file:") else url


def _why(stderr: str) -> str:
    """The line of Ivy's or Spark's output that says why a resolution failed."""
    lines = [line.strip(" :\t") for line in stderr.splitlines() if line.strip()]
    for sign in ("not found", "UNRESOLVED", "Exception", "Error", "error"):
        hits = [line for line in lines if sign in line and "repos.spark-packages.org" not in line]
        if hits:
            return hits[0][:300]
    return lines[-1][:300] if lines else "no output"


def session_connectors(
    jars_dir: Path,
    choice: str,
    needs: Iterable[str],
    *,
    environ: Mapping[str, str],
    on_demand: bool = True,
    spark_confs: Mapping[str, str] | None = None,
    include: tuple[str, ...] | None = None,
) -> list[str]:
    """The jars a new session gets: each selected connector that is resolved, and each
    one the job needs (or ``choice`` names) that is not yet, resolved now unless
    ``on_demand`` is off. A needed connector that cannot be had is logged, not raised:
    the job may not reach the code that needs it, and if it does, its error says which
    connector is missing and how to get it."""
    explicit = on_demand and choice.strip().lower() not in ("", "auto", "all", "none")
    wanted = set(needs)
    jars: dict[str, None] = {}
    for connector in selected(choice):
        if include is not None and connector.name not in include:
            continue
        found = resolved_jars(jars_dir, connector)
        if not found and on_demand and (explicit or connector.name in wanted):
            try:
                found = resolve(jars_dir, connector, environ=environ, spark_confs=spark_confs)
            except (ConfigError, OSError) as exc:  # told in one line; the session starts without it
                log.warning("%s", mask_text(str(exc)))
                found = []
        jars.update(dict.fromkeys(found))
    return list(jars)


def classpath(jars_dir: Path, choice: str, *, include: tuple[str, ...] | None = None) -> list[str]:
    """Jars of every selected connector that is resolved, each once, in order."""
    return session_connectors(jars_dir, choice, (), environ={}, on_demand=False, include=include)


@functools.cache
def spark_and_hadoop_versions() -> tuple[str, str]:
    """PySpark's version and the Hadoop release its jars carry (read once: every
    connector's pin is checked against it at each session's start)."""
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
        what = connector.provides
        scheme = _SCHEME.search(text)
        if connector.name == "s3" and scheme and scheme.group(1) != "s3a":
            what = f"{scheme.group(1)}:// paths: {what}"
        packages = coordinates(connector)
        return (
            f"the {connector.name} connector is not on Spark's classpath ({what}): run "
            f"`sparkmark connectors fetch {connector.name}` once and start the job again (or name it in "
            f"SPARKMARK_CONNECTORS), or start Spark with spark.jars.packages={packages}"
        )
    return None
