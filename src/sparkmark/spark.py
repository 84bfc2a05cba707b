"""The Spark session sparkmark creates when a job has none, with its connectors on it.

Connector jars (S3, Kafka, Avro, JDBC drivers, the table formats) are fetched on demand
through Spark's package resolution, or pre-fetched by ``make jars`` (see
``connectors.py``). JDBC drivers may also come from Debian's packages
(``libpostgresql-jdbc-java``, ``libmariadb-java``, ``libxerial-sqlite-jdbc-java`` put
jars in /usr/share/java), or from whatever the user configured: ``spark.jars``,
``spark.jars.packages`` (``--packages``), or a cluster's own classpath.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import connectors
from .engine import storage
from .engine.jdbc import CONNECTION_TYPES, DIALECTS
from .errors import ConfigError, SourceError
from .settings import Settings

if TYPE_CHECKING:  # PySpark is imported when a session is made
    from pyspark.sql import SparkSession

JAR_DIRS = ("/usr/share/java",)
JAR_NAMES = ("postgresql.jar", "mariadb-java-client.jar", "sqlite-jdbc.jar")
S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"


def connector_needs(settings: Settings) -> tuple[str, ...]:
    """The connectors a session must have: those ``sparkmark run`` found its script to
    use, and S3 when the settings name an S3 endpoint; never S3 when ``s3://`` is served
    from a local folder (``SPARKMARK_S3_LOCAL_ROOT``), where Spark needs no S3A."""
    needs = [n.strip() for n in (settings.connector_needs or "").split(",") if n.strip()]
    if settings.aws_endpoint_url_s3 and "s3" not in needs:
        needs.append("s3")
    if settings.s3_local_root is not None:
        needs = [n for n in needs if n != "s3"]
    return tuple(needs)


def _connector_jars(settings: Settings, include: tuple[str, ...]) -> list[str]:
    return connectors.session_connectors(
        settings.jars_dir,
        settings.connectors,
        connector_needs(settings),
        environ=settings.environ,
        on_demand=settings.connector_resolution == "on-demand",
        spark_confs=settings.spark_conf_map(),
        include=include,
    )


def jdbc_jars(settings: Settings) -> list[str]:
    """JDBC driver jars: ``SPARKMARK_JDBC_JARS`` when set (a comma-separated list, or
    ``none``), else the resolved connector (fetched when the job needs it), else
    Debian's in /usr/share/java."""
    if settings.jdbc_jars is not None:
        return [j for j in settings.jdbc_jars.split(",") if j and j.lower() != "none"]
    debian = [
        str((Path(folder) / name).resolve())
        for folder in JAR_DIRS
        for name in JAR_NAMES
        if (Path(folder) / name).exists()
    ]
    resolved = connectors.classpath(settings.jars_dir, settings.connectors, include=("jdbc",))
    if resolved or debian:
        return resolved or debian
    return _connector_jars(settings, ("jdbc",))


def session_jars(settings: Settings) -> list[str]:
    """Every jar a session sparkmark starts gets: the selected connectors (fetched when
    the job needs them), the JDBC drivers and the table formats' jars."""
    others = tuple(c.name for c in connectors.CONNECTORS if c.name != "jdbc")
    jars = _connector_jars(settings, others)
    return list(dict.fromkeys(jars + jdbc_jars(settings) + format_jars(settings)))


def format_jars(settings: Settings) -> list[str]:
    """The jars of the table formats ``datalake_formats`` names (a job's
    ``--datalake-formats``), fetched on demand; one ConfigError line when one cannot be had."""
    from .table_formats import FORMATS, parse_formats

    jars: list[str] = []
    for name in parse_formats(settings.datalake_formats):
        found = connectors.resolved_jars(settings.jars_dir, FORMATS[name])
        if not found and settings.connector_resolution == "on-demand":
            found = connectors.resolve(
                settings.jars_dir,
                FORMATS[name],
                environ=settings.environ,
                spark_confs=settings.spark_conf_map(),
            )
        if not found:
            raise ConfigError(
                f"--datalake-formats {name}: its jars are not resolved in {settings.jars_dir} and "
                "SPARKMARK_CONNECTOR_RESOLUTION is off; run `sparkmark connectors fetch "
                f"{name}` (or give Spark {connectors.coordinates(FORMATS[name])} through spark.jars.packages)"
            )
        jars += found
    return jars


LOOPBACK = "127.0.0.1"


def master_on_this_machine(master: str) -> bool:
    """Whether every executor of ``master`` runs on this machine: a local master, or a
    standalone master (each of an HA list) on a loopback address."""
    if master.startswith("local"):
        return True
    if not master.startswith("spark://"):
        return False
    for address in master.removeprefix("spark://").split(","):
        host = address.rpartition(":")[0].strip("[]")
        if host != "localhost":
            try:
                if not ipaddress.ip_address(host).is_loopback:
                    return False
            except ValueError:
                return False
    return True


def bind_to_loopback(master: str) -> None:
    """Spark's driver, block manager and UI listen on ``SPARK_LOCAL_IP``, else on every
    interface (the UI) or the machine's first address (the others); the JVM PySpark
    launches reads it from this process's environment. When every executor is on this
    machine it is set to loopback, unless the user set it: nothing of a session is then
    reachable from elsewhere. A cluster's driver must be reachable by its executors,
    so elsewhere the user's own ``SPARK_LOCAL_IP`` (or Spark's default) holds."""
    if master_on_this_machine(master):
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)


def session_confs(settings: Settings, master: str | None = None) -> dict[str, str]:
    """The Spark settings of a session sparkmark starts (or of a bare ``SparkContext()``
    in a script run by ``sparkmark run``)."""
    master = master or settings.spark_master
    # The UI's kill links stop jobs on a plain POST that any page can send: off unless
    # the user's own settings (applied last) turn them on.
    confs = {"spark.ui.showConsoleProgress": "false", "spark.ui.killEnabled": "false"}
    jars = session_jars(settings)
    if jars:
        # On the driver's own class path, so that DriverManager (used by the Hive
        # metastore's connection pool) and Hadoop's FileSystem loader find them. A local
        # master's executors share that JVM; others get them through spark.jars (a local
        # session does not, as Spark would copy every jar, the AWS SDK's 600 MB too).
        confs["spark.driver.extraClassPath"] = ":".join(jars)
        if not master.startswith("local"):
            confs["spark.jars"] = ",".join(jars)
    if any(Path(j).name.startswith("hadoop-aws-") for j in jars):
        # Glue's paths are s3://; S3A serves them (and the old s3n://) as it does s3a://.
        confs["spark.hadoop.fs.s3.impl"] = S3A
        confs["spark.hadoop.fs.s3n.impl"] = S3A
    if settings.hive_enabled:
        confs.update(hive_confs(settings))
    quiet = terminal_log_options()
    archive = class_archive_options(settings, confs.get("spark.driver.extraClassPath", ""))
    for more in (quiet, archive):
        if more:
            options = confs.get("spark.driver.extraJavaOptions", "")
            confs["spark.driver.extraJavaOptions"] = f"{options} {more}".strip()
    confs.update(settings.spark_conf_map())
    return confs


def class_archive_options(settings: Settings, extra_class_path: str, build: bool = False) -> str:
    """The driver's Java options for the shared archive of Spark's classes
    (``class_archive``); "" when it is off, the JDK cannot map one, or there is none yet.
    With ``build`` (a driver is about to start), a missing archive is built in the
    background for the drivers after this one."""
    if not settings.class_archive or settings.spark_remote:
        return ""
    from . import class_archive

    folder = settings.jars_dir.parent / "classes"
    return class_archive.driver_options(folder, extra_class_path, settings.environ, build=build)


def _starting_a_driver(settings: Settings, confs: dict[str, str]) -> None:
    """A driver is about to start with ``confs``: have its class path's archive built
    when there is none (this driver starts without it)."""
    if "SharedArchiveFile" not in confs.get("spark.driver.extraJavaOptions", ""):
        class_archive_options(settings, confs.get("spark.driver.extraClassPath", ""), build=True)


LOG4J2_TERMINAL = Path(__file__).with_name("spark_log4j2.properties")


def terminal_log_options() -> str:
    """The driver's Java options that send Spark's own log to the run's log file and
    show only its errors, for a run from a terminal; "" otherwise (a scheduler's runs
    have their whole output in their log files already)."""
    from .engine.run_logs import jvm_log

    where = jvm_log()
    if where is None or not LOG4J2_TERMINAL.exists():
        return ""
    return f"-Dlog4j2.configurationFile={LOG4J2_TERMINAL.as_uri()} -Dsparkmark.jvm.log={where}"


def check_master(master: str, timeout: float = 3.0) -> None:
    """A standalone master (``spark://host:port``, several for HA) must answer before a
    session is made: Spark itself retries for about a minute, then fails with an error
    that does not name the master."""
    if not master.startswith("spark://"):
        return
    import socket

    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
                return
        except (OSError, ValueError):
            continue
    raise ConfigError(
        f"the Spark master {master} does not answer: start the cluster (`make cluster` starts "
        "one here), or point SPARKMARK_SPARK_MASTER at a running one"
    )


def submit_args(settings: Settings) -> str:
    """``PYSPARK_SUBMIT_ARGS`` for a script that makes its own ``SparkContext()`` (and the
    loopback binding its JVM will read from this process's environment)."""
    check_master(settings.spark_master)
    bind_to_loopback(settings.spark_master)
    args = ["--master", settings.spark_master]
    confs = session_confs(settings)
    _starting_a_driver(settings, confs)
    for key, value in confs.items():
        args += ["--conf", f"{key}={value}"]
    return " ".join(shlex.quote(a) for a in args) + " pyspark-shell"


# ---------------------------------------------------------------- Hive metastore
#
# Default: embedded Derby under $SPARKMARK_HOME/metastore and the warehouse under
# $SPARKMARK_HOME/warehouse. SPARKMARK_METASTORE_URL points the metastore at a
# database instead (e.g. jdbc:postgresql://127.0.0.1:5432/metastore, with
# SPARKMARK_METASTORE_USER / SPARKMARK_METASTORE_PASSWORD); its tables are created
# on first use. SPARKMARK_CATALOG=none starts sessions without Hive support.

# The metastore's driver by its URL's kind: a JDBC connection type's preferred driver.
DRIVERS = {
    **{kind: DIALECTS[dialect].drivers[0] for kind, dialect in CONNECTION_TYPES.items()},
    "derby": "org.apache.derby.jdbc.EmbeddedDriver",
}


def hive_confs(settings: Settings) -> dict[str, str]:
    home = settings.home
    url = settings.metastore_url or f"jdbc:derby:;databaseName={home / 'metastore'};create=true"
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
    if settings.metastore_user:
        confs["spark.hadoop.javax.jdo.option.ConnectionUserName"] = settings.metastore_user
    if settings.metastore_password:
        confs["spark.hadoop.javax.jdo.option.ConnectionPassword"] = (
            settings.metastore_password.get_secret_value()
        )
    return confs


def use_this_python() -> None:
    """Python workers run the interpreter running sparkmark (with sparkmark importable),
    unless PYSPARK_PYTHON says otherwise."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def create_session(app_name: str, master: str, settings: Settings) -> SparkSession:
    from pyspark.sql import SparkSession

    if settings.spark_remote:
        return remote_session(settings)
    use_this_python()
    check_master(master)
    bind_to_loopback(master)
    builder = SparkSession.builder.master(master).appName(app_name)
    confs = session_confs(settings, master)
    _starting_a_driver(settings, confs)
    for key, value in confs.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    from .runtime import stopping

    stopping.reinstall()  # PySpark's context took SIGINT for itself; a run's stop is ours
    storage.prepare_spark(session, settings)
    return session


def remote_session(settings: Settings) -> SparkSession:
    """A Spark Connect session to ``SPARK_REMOTE``: the server owns Spark's settings (jars,
    catalog, Hadoop); this process keeps the listing, the state store and the commit."""
    from pyspark.sql import SparkSession

    url = str(settings.spark_remote)
    if not url.startswith("sc://"):
        raise ConfigError(f"SPARK_REMOTE must be a Spark Connect URL, sc://host:port, not {url!r}")
    host_port = url.removeprefix("sc://").split("/", 1)[0].split(";", 1)[0]
    host, _, port = host_port.rpartition(":")
    import socket

    try:
        with socket.create_connection((host, int(port or 15002)), timeout=3):
            pass
    except (OSError, ValueError):
        raise ConfigError(f"the Spark Connect server {url} does not answer") from None
    session = SparkSession.builder.remote(url).getOrCreate()
    storage.configure(settings)
    return session


_LOADED_DRIVERS: dict[tuple[str, tuple[str, ...]], str] = {}  # (application id, candidates)


def driver_class(spark: SparkSession, candidates: tuple[str, ...], what: str) -> str:
    """The first JDBC driver class of ``candidates`` that Spark's JVM can load (once
    found, remembered for the life of the Spark application). Over Spark Connect the
    server loads the driver: the first candidate is named, and a server without it fails
    the read naming the class."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return candidates[0]
    app = spark.sparkContext.applicationId
    known = _LOADED_DRIVERS.get((app, candidates))
    if known is not None:
        return known
    jvm = spark._jvm
    assert jvm is not None  # a classic session has its JVM
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for name in candidates:
        try:
            jvm.java.lang.Class.forName(name, True, loader)
            _LOADED_DRIVERS[(app, candidates)] = name
            return name
        except Exception:  # noqa: BLE001 - any failure to load means: try the next candidate
            continue
    raise SourceError(
        f"no JDBC driver for {what} on Spark's classpath (tried {', '.join(candidates)}). "
        "Install Debian's driver package (libpostgresql-jdbc-java, libmariadb-java or "
        "libxerial-sqlite-jdbc-java) before the Spark session starts, or start Spark with "
        "--packages / spark.jars naming the driver"
    )
