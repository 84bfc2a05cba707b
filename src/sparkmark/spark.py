"""The Spark session sparkmark creates when a job has none, with JDBC drivers on it.

Drivers come from Debian's packages (``libpostgresql-jdbc-java``,
``libmariadb-java``, ``libxerial-sqlite-jdbc-java`` put jars in /usr/share/java)
or from whatever the user configured: ``spark.jars``, ``spark.jars.packages``
(``--packages``), or a cluster's own classpath.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import SourceError
from .settings import Settings

if TYPE_CHECKING:  # PySpark is imported when a session is made
    from pyspark.sql import SparkSession

JAR_DIRS = ("/usr/share/java",)
JAR_NAMES = ("postgresql.jar", "mariadb-java-client.jar", "sqlite-jdbc.jar")


def jdbc_jars() -> list[str]:
    """Debian's JDBC driver jars that exist on this machine (``SPARKMARK_JDBC_JARS``
    overrides: a comma-separated list, or empty for none)."""
    override = os.environ.get("SPARKMARK_JDBC_JARS")
    if override is not None:
        return [j for j in override.split(",") if j]
    found = []
    for folder in JAR_DIRS:
        for name in JAR_NAMES:
            path = Path(folder) / name
            if path.exists():
                found.append(str(path.resolve()))
    return found


def extra_confs() -> dict[str, str]:
    """Spark settings a declared job carries (``Spark.conf`` in sparkmark.toml), handed
    to its process as JSON in ``SPARKMARK_SPARK_CONF``."""
    text = os.environ.get("SPARKMARK_SPARK_CONF")
    if not text:
        return {}
    try:
        confs = json.loads(text)
    except ValueError:
        raise SourceError("SPARKMARK_SPARK_CONF is not a JSON object of Spark settings") from None
    if not isinstance(confs, dict):
        raise SourceError("SPARKMARK_SPARK_CONF is not a JSON object of Spark settings")
    return {str(k): str(v) for k, v in confs.items()}


# ---------------------------------------------------------------- Hive metastore
#
# Default: embedded Derby under $SPARKMARK_HOME/metastore and the warehouse under
# $SPARKMARK_HOME/warehouse. SPARKMARK_METASTORE_URL points the metastore at a
# database instead (e.g. jdbc:postgresql://127.0.0.1:5432/metastore, with
# SPARKMARK_METASTORE_USER / SPARKMARK_METASTORE_PASSWORD); its tables are created
# on first use. SPARKMARK_CATALOG=none starts sessions without Hive support.

DRIVERS = {"postgresql": "org.postgresql.Driver", "mysql": "org.mariadb.jdbc.Driver",
           "mariadb": "org.mariadb.jdbc.Driver", "derby": "org.apache.derby.jdbc.EmbeddedDriver"}


def hive_enabled() -> bool:
    return os.environ.get("SPARKMARK_CATALOG", "hive").lower() != "none"


def hive_confs(settings: Settings | None = None) -> dict[str, str]:
    settings = settings or Settings.from_env()
    home = settings.home
    url = os.environ.get("SPARKMARK_METASTORE_URL") or f"jdbc:derby:;databaseName={home / 'metastore'};create=true"
    kind = url.split(":")[1] if url.startswith("jdbc:") else "derby"
    confs = {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(home / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": url,
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": DRIVERS.get(kind, DRIVERS["derby"]),
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={home}",
    }
    if kind != "derby":
        # The metastore creates its tables on first use. Its foreign keys are left out:
        # adding one while another pooled connection holds rows of the referenced table
        # deadlocks on a database server (seen on PostgreSQL).
        confs["spark.hadoop.datanucleus.schema.autoCreateAll"] = "false"
        confs["spark.hadoop.datanucleus.schema.autoCreateSchema"] = "true"
        confs["spark.hadoop.datanucleus.schema.autoCreateTables"] = "true"
        confs["spark.hadoop.datanucleus.schema.autoCreateColumns"] = "true"
        confs["spark.hadoop.datanucleus.schema.autoCreateConstraints"] = "false"
    if os.environ.get("SPARKMARK_METASTORE_USER"):
        confs["spark.hadoop.javax.jdo.option.ConnectionUserName"] = os.environ["SPARKMARK_METASTORE_USER"]
    if os.environ.get("SPARKMARK_METASTORE_PASSWORD"):
        confs["spark.hadoop.javax.jdo.option.ConnectionPassword"] = os.environ["SPARKMARK_METASTORE_PASSWORD"]
    return confs


def use_this_python() -> None:
    """Python workers run the interpreter running sparkmark (with sparkmark importable),
    unless PYSPARK_PYTHON says otherwise."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def create_session(app_name: str, master: str) -> SparkSession:
    from pyspark.sql import SparkSession

    use_this_python()
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.showConsoleProgress", "false")
    )
    jars = jdbc_jars()
    if jars:
        # On spark.jars for tasks, and on the driver's own class path so that
        # DriverManager (used by the Hive metastore's connection pool) finds them too.
        builder = builder.config("spark.jars", ",".join(jars))
        builder = builder.config("spark.driver.extraClassPath", ":".join(jars))
    if hive_enabled():
        for key, value in hive_confs().items():
            builder = builder.config(key, value)
    for key, value in extra_confs().items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


_LOADED_DRIVERS: dict[tuple[str, tuple[str, ...]], str] = {}  # (application id, candidates)


def driver_class(spark: SparkSession, candidates: tuple[str, ...], what: str) -> str:
    """The first JDBC driver class of ``candidates`` that Spark's JVM can load (once
    found, remembered for the life of the Spark application)."""
    app = spark.sparkContext.applicationId
    known = _LOADED_DRIVERS.get((app, candidates))
    if known is not None:
        return known
    jvm = spark._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for name in candidates:
        try:
            jvm.java.lang.Class.forName(name, True, loader)
            _LOADED_DRIVERS[(app, candidates)] = name
            return name
        except Exception:
            continue
    raise SourceError(
        f"no JDBC driver for {what} on Spark's classpath (tried {', '.join(candidates)}). "
        "Install Debian's driver package (libpostgresql-jdbc-java, libmariadb-java or "
        "libxerial-sqlite-jdbc-java) before the Spark session starts, or start Spark with "
        "--packages / spark.jars naming the driver"
    )
