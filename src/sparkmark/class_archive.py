"""A shared archive of the classes a driver JVM loads while Spark starts and runs its
first jobs (the JVM's dynamic class data sharing, JDK 13 and later).

A JVM that starts Spark reads, verifies and links about ten thousand classes, every time.
With an archive of them mapped from disk, a driver on this project's two cores starts in
3.4 s rather than 5.5 s and runs its first small job in 1.5 s rather than 3.2 s
(docs/design/jvm-start.md). The archive is made once per JVM build and class path: the
first driver that finds none starts a builder process in the background
(``python -m sparkmark.class_archive``), which runs a small warm-up on a driver started
with ``-XX:ArchiveClassesAtExit`` and puts the archive in place once that JVM has ended
well; every later driver with the same class path maps it (``-XX:SharedArchiveFile``).

Files, in ``$XDG_CACHE_HOME/sparkmark/classes`` beside the connector jars:

- ``KEY.jsa``: a finished archive. ``KEY`` digests the JVM (its release file and its
  ``libjvm.so``) and the driver's class path (the extra class path, then PySpark's jars).
- ``KEY.PID.part``: the archive the builder ``PID``'s JVM is writing; renamed into place
  only when that JVM ended well, so a half-written archive is never used.
- ``KEY.lock``: one builder per archive; a lock or a part whose process is gone is taken
  over.

The JVM checks an archive against its own build and class path before it maps it, and
runs without it (as it would without this module) when they do not match. Its messages
about the archive are silenced. ``SPARKMARK_CLASS_ARCHIVE=off`` turns all of it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger("sparkmark.spark")

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
MIN_JAVA = 13  # the first JDK with -XX:ArchiveClassesAtExit
STALE_PART_SECONDS = 3600.0


def java_home(environ: Mapping[str, str]) -> Path | None:
    """The JDK ``spark-submit`` starts: ``JAVA_HOME``'s, or the ``java`` on the path."""
    given = environ.get("JAVA_HOME")
    if given:
        return Path(given)
    found = shutil.which("java", path=environ.get("PATH"))
    return Path(os.path.realpath(found)).parent.parent if found else None


def java_release(home: Path) -> dict[str, str]:
    """The JDK's ``release`` file, as its keys and (unquoted) values; {} without one."""
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {k.strip(): v.strip().strip('"') for k, v in pairs}


def major_version(version: str) -> int:
    """``17.0.15`` → 17, ``1.8.0_402`` → 8; 0 for what is not a version."""
    parts = version.split(".")
    try:
        first = int(parts[0])
        return int(parts[1]) if first == 1 and len(parts) > 1 else first
    except ValueError:
        return 0


def archive_key(release: dict[str, str], jvm_identity: str, class_path: list[str]) -> str:
    """The digest an archive is kept under: the JVM build and the class path, in order."""
    digest = hashlib.sha256()
    for part in (release.get("JAVA_RUNTIME_VERSION", ""), release.get("JAVA_VERSION", ""), jvm_identity):
        digest.update(part.encode() + b"\0")
    for entry in class_path:
        digest.update(entry.encode() + b"\0")
    return digest.hexdigest()[:32]


def spark_class_path(extra: str) -> list[str]:
    """The driver's class path as ``spark-submit`` builds it: the extra class path first,
    then every jar of PySpark's Spark (by name, as the launcher lists them)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    names = sorted(p.name for p in jars.glob("*.jar")) if jars.is_dir() else []
    return [*filter(None, extra.split(":")), *(str(jars / n) for n in names)]


def _jvm_identity(home: Path) -> str:
    for lib in (
        home / "lib" / "server" / "libjvm.so",
        home / "jre" / "lib" / "amd64" / "server" / "libjvm.so",
    ):
        with contextlib.suppress(OSError):
            st = lib.stat()
            return f"{lib}:{st.st_size}:{st.st_mtime_ns}"
    return str(home)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _take_lock(lock: Path) -> bool:
    """Take ``lock`` for this process (or over from a process that is gone)."""
    for _attempt in (1, 2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = int(lock.read_text(encoding="ascii").strip() or "0")
            except (OSError, ValueError):
                holder = 0
            if holder and _alive(holder):
                return False
            with contextlib.suppress(OSError):
                lock.unlink()
            continue
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
        return True
    return False


def _sweep(folder: Path, key: str) -> None:
    """Remove archives other processes left half-written (they died before their JVM
    finished, or their JVM failed)."""
    for part in folder.glob(f"{key}.*.part"):
        with contextlib.suppress(OSError, ValueError):
            pid = int(part.name.split(".")[1])
            if not _alive(pid):
                part.unlink()


def driver_options(
    folder: Path, extra_class_path: str, environ: Mapping[str, str], build: bool = True
) -> str:
    """The Java options for a driver JVM this process is about to start: map the class
    path's archive when there is one; "" otherwise (and, with ``build``, the first time,
    a builder process is started in the background to write it)."""
    home = java_home(environ)
    if home is None:
        return ""
    release = java_release(home)
    if major_version(release.get("JAVA_VERSION", "0")) < MIN_JAVA:
        return ""
    key = archive_key(release, _jvm_identity(home), spark_class_path(extra_class_path))
    ready = folder / f"{key}.jsa"
    if ready.is_file():
        return f"-XX:SharedArchiveFile={ready} -Xshare:auto {QUIET}"
    if not build:
        return ""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _sweep(folder, key)
        if _take_lock(folder / f"{key}.lock"):
            _start_builder(folder, key, extra_class_path, environ)
    except OSError as exc:
        log.debug("no class archive: %s", exc)
    return ""


# What tells PySpark to use a driver that is already running (spark-submit's, or a host's
# own script's), rather than start the builder's own JVM.
DRIVER_VARIABLES = frozenset(
    {
        "PYSPARK_SUBMIT_ARGS",
        "PYSPARK_GATEWAY_PORT",
        "PYSPARK_GATEWAY_SECRET",
        "_PYSPARK_DRIVER_CONN_INFO_PATH",
    }
)


def builder_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The builder's environment: the one the settings were read from, without what
    would join it to this process's driver (a builder that joined spark-submit's JVM
    would start a second context in it, and that driver's job would fail)."""
    return {k: v for k, v in environ.items() if k not in DRIVER_VARIABLES}


def _start_builder(folder: Path, key: str, extra_class_path: str, environ: Mapping[str, str]) -> None:
    """A process of its own, in the background, writes the archive (a run that is killed
    or fails never leaves a JVM writing one); it holds the lock this process took."""
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-m", "sparkmark.class_archive", str(folder), key, extra_class_path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not stopped with this process's group
        env=builder_environment(environ) or None,
    )
    (folder / f"{key}.lock").write_text(str(child.pid), encoding="ascii")


# What the builder's driver runs before it exits: the classes a run's driver loads for
# a catalog, a file read, a transformation, a write and SQL.
def _warm_up(spark: object, where: Path) -> None:
    data = where / "in.json"
    data.write_text(
        '{"id": 1, "name": "a", "day": "2026-01-01"}\n{"id": 2, "name": "b", "day": "2026-01-02"}\n'
    )
    frame = spark.read.json(str(data))  # type: ignore[attr-defined]
    frame.where("id > 0").groupBy("day").count().write.mode("overwrite").parquet(str(where / "out"))
    spark.read.parquet(str(where / "out")).createOrReplaceTempView("t")  # type: ignore[attr-defined]
    spark.sql("SELECT day, sum(count) FROM t GROUP BY day").collect()  # type: ignore[attr-defined]
    spark.sql("SHOW DATABASES").collect()  # type: ignore[attr-defined]


def build(folder: Path, key: str, extra_class_path: str) -> int:
    """Write the archive of ``key``: start a driver with the class path, run a small
    warm-up, stop, wait for the JVM, and put the archive in place only when the JVM ended
    well. Returns the exit code."""
    import tempfile

    from pyspark.sql import SparkSession

    part = folder / f"{key}.{os.getpid()}.part"
    ready = folder / f"{key}.jsa"
    lock = folder / f"{key}.lock"
    try:
        with tempfile.TemporaryDirectory(prefix="sparkmark-classes-") as where:
            spark = (
                SparkSession.builder.master("local[1]")
                .appName("sparkmark-class-archive")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.bindAddress", "127.0.0.1")  # nothing of the builder beyond loopback
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.extraClassPath", extra_class_path)
                .config("spark.sql.warehouse.dir", f"{where}/warehouse")
                .config(
                    "spark.driver.extraJavaOptions",
                    f"-XX:ArchiveClassesAtExit={part} {QUIET} -Dderby.system.home={where}",
                )
                .config(
                    "spark.hadoop.javax.jdo.option.ConnectionURL",
                    f"jdbc:derby:;databaseName={where}/ms;create=true",
                )
                .enableHiveSupport()
                .getOrCreate()
            )
            _warm_up(spark, Path(where))
            return _end_and_keep(part, ready)
    finally:
        with contextlib.suppress(OSError):
            part.unlink()
        with contextlib.suppress(OSError):
            lock.unlink()


def _end_and_keep(part: Path, ready: Path) -> int:
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()
    if gateway is None or proc is None:
        return 1
    with contextlib.suppress(Exception):
        gateway.shutdown()
    with contextlib.suppress(OSError, ValueError):
        if proc.stdin is not None:
            proc.stdin.close()  # the JVM exits when its driver's pipe closes, writing the archive
    code = proc.wait(timeout=600)
    if code == 0 and part.is_file() and part.stat().st_size > 0:
        os.replace(part, ready)
        return 0
    return 1


if __name__ == "__main__":
    import sys

    raise SystemExit(build(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""))
