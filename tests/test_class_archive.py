"""The shared archive of Spark's classes (class_archive.py): which options a driver gets,
when an archive is written and by whom, and that a driver really maps its classes."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sparkmark import class_archive
from sparkmark.class_archive import archive_key, driver_options, major_version


def fake_jdk(root: Path, version: str) -> Path:
    home = root / f"jdk-{version}"
    (home / "lib" / "server").mkdir(parents=True)
    (home / "lib" / "server" / "libjvm.so").write_bytes(b"jvm")
    (home / "release").write_text(f'JAVA_VERSION="{version}"\nJAVA_RUNTIME_VERSION="{version}+1"\n')
    return home


@pytest.fixture
def stubbed(tmp_path, monkeypatch):
    """A JDK 17 of its own, an archive folder, and the builders started (recorded, not run)."""
    builders: list[tuple] = []
    monkeypatch.setattr(class_archive, "_start_builder", lambda *a: builders.append(a))
    jdk = fake_jdk(tmp_path, "17.0.15")
    return builders, tmp_path / "classes", {"JAVA_HOME": str(jdk)}


def test_java_versions_are_read_as_the_jdk_writes_them():
    assert major_version("17.0.15") == 17
    assert major_version("25") == 25
    assert major_version("1.8.0_402") == 8
    assert major_version("") == 0 and major_version("x.y") == 0


def test_an_archive_belongs_to_one_jvm_build_and_one_class_path():
    release = {"JAVA_VERSION": "17.0.15", "JAVA_RUNTIME_VERSION": "17.0.15+6"}
    key = archive_key(release, "libjvm:1", ["/a.jar", "/b.jar"])
    assert key == archive_key(dict(release), "libjvm:1", ["/a.jar", "/b.jar"])
    assert key != archive_key(release, "libjvm:1", ["/b.jar", "/a.jar"])  # order is the class path's
    assert key != archive_key(release, "libjvm:2", ["/a.jar", "/b.jar"])
    assert key != archive_key(
        {**release, "JAVA_RUNTIME_VERSION": "17.0.16+1"}, "libjvm:1", ["/a.jar", "/b.jar"]
    )


def test_a_jdk_too_old_or_unknown_gets_no_option(tmp_path):
    old = fake_jdk(tmp_path, "1.8.0_402")
    assert driver_options(tmp_path / "classes", "", {"JAVA_HOME": str(old)}) == ""
    assert driver_options(tmp_path / "classes", "", {"JAVA_HOME": str(tmp_path / "nothing")}) == ""
    assert driver_options(tmp_path / "classes", "", {"PATH": str(tmp_path / "empty")}) == ""
    assert not (tmp_path / "classes").exists()


def test_the_first_driver_starts_one_builder_and_later_drivers_map_the_archive(stubbed):
    builders, folder, env = stubbed
    # No archive yet: this driver starts as it would without, and one builder is started.
    assert driver_options(folder, "/x/extra.jar", env) == ""
    ((where, key, extra, given),) = builders
    assert (where, extra, given) == (folder, "/x/extra.jar", env)
    lock = folder / f"{key}.lock"
    assert lock.read_text() == str(os.getpid())
    # While the builder holds the lock, another driver of the class path starts no other.
    assert driver_options(folder, "/x/extra.jar", env) == ""
    assert len(builders) == 1
    # Once the archive is in place, every driver maps it, quietly.
    ready = folder / f"{key}.jsa"
    ready.write_bytes(b"archive")
    lock.unlink()
    mapped = driver_options(folder, "/x/extra.jar", env)
    assert f"-XX:SharedArchiveFile={ready}" in mapped and "-Xshare:auto" in mapped
    assert "-Xlog:cds=off" in mapped
    # Another class path has an archive of its own.
    assert driver_options(folder, "/y/other.jar", env) == "" and len(builders) == 2
    assert builders[1][1] != key


def test_a_lock_or_a_half_written_archive_of_a_process_that_is_gone_is_taken_over(stubbed):
    builders, folder, env = stubbed
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = int(gone.stdout)
    driver_options(folder, "", env)
    key = builders[0][1]
    lock = folder / f"{key}.lock"
    lock.write_text(str(dead))  # its builder died
    left = folder / f"{key}.{dead}.part"
    left.write_bytes(b"half")
    driver_options(folder, "", env)
    assert len(builders) == 2 and lock.read_text() == str(os.getpid()) and not left.exists()


def test_a_builder_started_inside_a_running_driver_starts_a_jvm_of_its_own():
    """Under spark-submit (or a host's own script) PySpark finds its driver through the
    gateway variables; a builder that inherited them would start a second context in that
    driver, and the driver's job would fail."""
    under_submit = {
        "PATH": "/usr/bin",
        "JAVA_HOME": "/opt/jdk",
        "PYSPARK_GATEWAY_PORT": "41234",
        "PYSPARK_GATEWAY_SECRET": "s3cr3t",
        "_PYSPARK_DRIVER_CONN_INFO_PATH": "/tmp/conn",
        "PYSPARK_SUBMIT_ARGS": "--master local[2] pyspark-shell",
    }
    assert class_archive.builder_environment(under_submit) == {"PATH": "/usr/bin", "JAVA_HOME": "/opt/jdk"}
    assert class_archive.builder_environment({}) == {}


def with_descendants(pid: int) -> set[int]:
    """``pid`` and every process started under it (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return found


def listening_addresses(pids: set[int]) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The addresses the processes' TCP sockets listen on (/proc/net/tcp and tcp6)."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
        except OSError:
            continue
    found: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(fields[1].split(":")[0])
            # The kernel prints the address as 32-bit words in host (little-endian) order.
            ordered = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            address = ipaddress.ip_address(ordered)
            if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
                address = address.ipv4_mapped
            found.add(address)
    return found


@pytest.mark.slow  # a builder's Spark driver, then another
def test_the_builder_writes_an_archive_a_later_driver_loads_sparks_classes_from(tmp_path):
    """The first driver options start a real builder; once it has finished, a driver
    given the options maps the archive, and the JVM's class-loading log shows Spark's
    classes coming from it."""
    folder = tmp_path / "classes"
    env = dict(os.environ)
    assert driver_options(folder, "", env) == ""
    (lock,) = folder.glob("*.lock")
    builder = int(lock.read_text())
    deadline = time.monotonic() + 600
    heard: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
    while lock.exists() and time.monotonic() < deadline:  # the builder removes it as it ends
        heard |= listening_addresses(with_descendants(builder))
        time.sleep(0.5)
    assert not lock.exists(), f"the builder (pid {builder}) did not finish"
    # Its driver (py4j's gateway, Spark's RPC and block manager) listened, on loopback only.
    assert heard and all(address.is_loopback for address in heard), heard
    (archive,) = folder.glob("*.jsa")
    assert archive.stat().st_size > 10_000_000
    assert not list(folder.glob("*.part"))
    options = driver_options(folder, "", env)
    assert f"SharedArchiveFile={archive}" in options
    loaded = tmp_path / "loaded.txt"
    script = textwrap.dedent(
        f"""
        from pyspark.sql import SparkSession
        options = {options!r} + " -Xlog:class+load=info:file={loaded}"
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.driver.extraJavaOptions", options).getOrCreate())
        assert spark.range(3).count() == 3
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**env, "SPARK_LOCAL_IP": "127.0.0.1"},
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "cds" not in run.stderr.lower()  # nothing of the archive on the terminal
    spark_context = [
        line for line in loaded.read_text().splitlines() if " org.apache.spark.SparkContext " in line
    ]
    assert spark_context and "shared objects file (top)" in spark_context[0], spark_context


def test_working_out_a_sessions_settings_starts_no_builder(tmp_path, monkeypatch):
    """Only a driver about to start (``create_session``, ``submit_args``) has a missing
    archive built; settings worked out for a look or a test start nothing."""
    from sparkmark.settings import Settings
    from sparkmark.spark import session_confs

    builders = []
    monkeypatch.setattr(class_archive, "_start_builder", lambda *a: builders.append(a))
    jdk = fake_jdk(tmp_path, "17.0.15")
    settings = Settings.from_env({"SPARKMARK_HOME": str(tmp_path / "h"), "JAVA_HOME": str(jdk)})
    confs = session_confs(settings, "local[2]")
    assert "SharedArchiveFile" not in confs.get("spark.driver.extraJavaOptions", "")
    assert builders == []
