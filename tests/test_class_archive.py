"""The shared archive of Spark's classes (class_archive.py): which options a driver gets,
when an archive is written and by whom, and that a driver really maps its classes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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


def test_the_first_driver_writes_the_archive_and_later_ones_map_it(tmp_path, monkeypatch):
    registered = []
    monkeypatch.setattr(class_archive.atexit, "register", lambda *a: registered.append(a))
    jdk = fake_jdk(tmp_path, "17.0.15")
    folder = tmp_path / "classes"
    env = {"JAVA_HOME": str(jdk)}
    first = driver_options(folder, "/x/extra.jar", env)
    (part,) = [o.split("=", 1)[1] for o in first.split() if o.startswith("-XX:ArchiveClassesAtExit=")]
    assert Path(part).parent == folder and part.endswith(f".{os.getpid()}.part")
    assert "-Xlog:cds=off" in first  # the JVM's own notes about the archive stay off the terminal
    assert len(registered) == 1  # the archive is put in place at this process's exit
    # While this process holds the lock, another driver of the same class path starts without.
    lock = next(folder.glob("*.lock"))
    assert lock.read_text() == str(os.getpid())
    assert driver_options(folder, "/x/extra.jar", env) == ""
    # Once the archive is in place, every driver maps it.
    ready = Path(part.rsplit(".", 2)[0] + ".jsa")
    ready.write_bytes(b"archive")
    lock.unlink()
    mapped = driver_options(folder, "/x/extra.jar", env)
    assert f"-XX:SharedArchiveFile={ready}" in mapped and "-Xshare:auto" in mapped
    # Another class path has an archive of its own.
    assert "ArchiveClassesAtExit" in driver_options(folder, "/y/other.jar", env)


def test_a_lock_or_a_half_written_archive_of_a_process_that_is_gone_is_taken_over(tmp_path, monkeypatch):
    monkeypatch.setattr(class_archive.atexit, "register", lambda *a: None)
    jdk = fake_jdk(tmp_path, "17.0.15")
    folder = tmp_path / "classes"
    env = {"JAVA_HOME": str(jdk)}
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = int(gone.stdout)
    driver_options(folder, "", env)
    lock = next(folder.glob("*.lock"))
    key = lock.name.removesuffix(".lock")
    lock.write_text(str(dead))
    left = folder / f"{key}.{dead}.part"
    left.write_bytes(b"half")
    assert "ArchiveClassesAtExit" in driver_options(folder, "", env)
    assert lock.read_text() == str(os.getpid()) and not left.exists()


@pytest.mark.slow  # two Spark drivers
def test_a_driver_loads_sparks_classes_from_the_archive_its_first_run_wrote(tmp_path):
    """Two real drivers: the first writes the archive as its process exits; the second
    maps it, and the JVM's class-loading log shows Spark's classes coming from it."""
    folder = tmp_path / "classes"
    loaded = tmp_path / "loaded.txt"
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from pyspark.sql import SparkSession
        from sparkmark.class_archive import driver_options
        options = driver_options(Path({str(folder)!r}), "", dict(os.environ))
        print("OPTIONS " + options)
        if "SharedArchiveFile" in options:
            options += " -Xlog:class+load=info:file={loaded}"
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.driver.extraJavaOptions", options).getOrCreate())
        assert spark.range(3).count() == 3
        """
    )
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    first = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert "ArchiveClassesAtExit" in first.stdout
    assert "cds" not in first.stderr.lower()  # nothing of the archive on the terminal
    (archive,) = folder.glob("*.jsa")
    assert archive.stat().st_size > 10_000_000
    assert not list(folder.glob("*.part")) and not list(folder.glob("*.lock"))
    second = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"SharedArchiveFile={archive}" in second.stdout
    lines = loaded.read_text().splitlines()
    spark_context = [line for line in lines if " org.apache.spark.SparkContext " in line]
    assert spark_context and "shared objects file (top)" in spark_context[0], spark_context
