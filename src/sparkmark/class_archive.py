"""A shared archive of the classes a driver JVM loads while Spark starts and runs its
first jobs (the JVM's dynamic class data sharing, JDK 13 and later).

A JVM that starts Spark reads, verifies and links about ten thousand classes, every time.
With an archive of them mapped from disk, a driver on this project's two cores starts in
3.4 s rather than 5.5 s and runs its first small job in 1.5 s rather than 3.2 s
(docs/benchmarks.md). The archive is made once per JVM build and class path: the first
driver started without one writes it as it exits (``-XX:ArchiveClassesAtExit``), and
every later driver with the same class path maps it (``-XX:SharedArchiveFile``).

Files, in ``$XDG_CACHE_HOME/sparkmark/classes`` beside the connector jars:

- ``KEY.jsa``: a finished archive. ``KEY`` digests the JVM (its release file and its
  ``libjvm.so``) and the driver's class path (PySpark's jars and the extra class path).
- ``KEY.PID.part``: the archive the JVM of process ``PID`` writes as it exits. That
  process waits for its JVM at its own exit and renames the file into place only when
  the JVM ended well, so a half-written archive is never used.
- ``KEY.lock``: one process writes an archive at a time; a lock whose process is gone is
  taken over.

The JVM checks an archive against its own build and class path before it maps it, and
runs without it (as it would without this module) when they do not match. Its messages
about the archive are silenced. ``SPARKMARK_CLASS_ARCHIVE=off`` turns all of it off.
"""

from __future__ import annotations

import atexit
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


def driver_options(folder: Path, extra_class_path: str, environ: Mapping[str, str]) -> str:
    """The Java options for a driver JVM this process is about to start: map the class
    path's archive, or (the first time) write it as the JVM exits; "" when the JDK
    cannot."""
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
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _sweep(folder, key)
        lock = folder / f"{key}.lock"
        if not _take_lock(lock):
            return ""  # another process is writing it: this driver starts as it would without
    except OSError as exc:
        log.debug("no class archive: %s", exc)
        return ""
    part = folder / f"{key}.{os.getpid()}.part"
    atexit.register(_publish_at_exit, part, ready, lock)
    return f"-XX:ArchiveClassesAtExit={part} {QUIET}"


def _publish_at_exit(part: Path, ready: Path, lock: Path) -> None:
    """At this process's exit: end its JVM, wait for it to write the archive, and put
    the archive in place only when the JVM ended well."""
    try:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        active = SparkContext._active_spark_context
        if active is not None:
            with contextlib.suppress(Exception):
                active.stop()
        if gateway is not None and proc is not None:
            with contextlib.suppress(Exception):
                gateway.shutdown()
            with contextlib.suppress(OSError, ValueError):
                if proc.stdin is not None:
                    proc.stdin.close()  # the JVM exits when its driver's pipe closes
            code = proc.wait(timeout=120)
            if code == 0 and part.is_file() and part.stat().st_size > 0:
                os.replace(part, ready)
    except Exception as exc:  # noqa: BLE001 - an archive is only ever an optimisation
        log.debug("the class archive was not kept: %s", exc)
    finally:
        with contextlib.suppress(OSError):
            part.unlink()
        with contextlib.suppress(OSError):
            lock.unlink()
