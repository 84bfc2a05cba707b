"""The package as a product, without a JVM: the shipped awsglue hook, connectors fetched
on demand (what a job needs, where the jars are, when a fetch is stale), the plugin's
Glue arguments, and `sparkmark doctor`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkmark import connectors, glue_versions
from sparkmark.glue import shim
from sparkmark.settings import Settings
from sparkmark.spark import connector_needs
from sparkmark.testing.glue_job import glue_arguments

SCALA = glue_versions.scala_version(connectors.spark_and_hadoop_versions()[0])

ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_pth_file_is_the_hooks_line():
    shipped = ROOT / "src" / "sparkmark" / "glue" / shim.PTH_NAME
    assert shipped.read_text(encoding="utf-8") == shim.PTH_LINE
    assert shim.PTH_LINE.startswith("import ")  # site.py executes only lines that start so


def test_the_hook_at_start_up_never_raises(monkeypatch, capsys):
    def broken(settings=None):
        raise RuntimeError("no")

    monkeypatch.setattr(shim, "install", broken)
    shim.install_at_start_up()
    assert "awsglue import hook was not installed: no" in capsys.readouterr().err


def test_the_wheel_declares_the_plugin_and_the_testing_extra():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"sparkmark": "sparkmark.testing.plugin"}
    assert any(d.startswith("moto[server]") for d in project["optional-dependencies"]["testing"])


# ------------------------------------------------------------------ what a job needs


@pytest.mark.parametrize(
    ("texts", "needs"),
    [
        (['spark.read.json("s3://bucket/in/")'], ("s3",)),
        (["--input", "S3A://Bucket/x"], ("s3",)),
        (['glueContext.create_dynamic_frame.from_options(connection_type="kafka", …)'], ("kafka",)),
        (["df.write.format('avro').save(p)"], ("avro",)),
        (['connection_type="postgresql"'], ("jdbc",)),
        (["--url", "jdbc:mysql://db:3306/x"], ("jdbc",)),
        (['connection_type="s3"', "--out", "s3://b/o", 'format="avro"'], ("s3", "avro")),
        (["print('hello')", "--path", "/data/in"], ()),
        ([], ()),
        (["# a kafka topic named in a comment, without quotes"], ()),
    ],
)
def test_what_a_script_and_its_arguments_show_it_needs(texts, needs):
    assert connectors.needed_by(texts) == needs


def test_an_s3_endpoint_in_the_settings_means_s3_is_needed(tmp_path):
    base = {"SPARKMARK_HOME": str(tmp_path)}
    assert connector_needs(Settings.from_env(base)) == ()
    assert connector_needs(Settings.from_env({**base, "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9"})) == (
        "s3",
    )
    given = Settings.from_env({**base, "SPARKMARK_CONNECTOR_NEEDS": "kafka,s3"})
    assert connector_needs(given) == ("kafka", "s3")
    local = Settings.from_env(
        {**base, "SPARKMARK_CONNECTOR_NEEDS": "kafka,s3", "SPARKMARK_S3_LOCAL_ROOT": "/b"}
    )
    assert connector_needs(local) == ("kafka",)  # s3:// read from a folder: no S3A to fetch


def test_connector_resolution_takes_on_demand_or_off_only(tmp_path):
    from sparkmark.errors import ConfigError

    assert Settings.from_env({"SPARKMARK_HOME": str(tmp_path)}).connector_resolution == "on-demand"
    with pytest.raises(ConfigError, match="SPARKMARK_CONNECTOR_RESOLUTION"):
        Settings.from_env({"SPARKMARK_HOME": str(tmp_path), "SPARKMARK_CONNECTOR_RESOLUTION": "sometimes"})


# ------------------------------------------------------------------ where the jars are


def _small_jar(path: Path) -> None:
    """A real, whole jar: resolved connectors' jars are checked before use."""
    import zipfile

    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")


def _fetched(jars_dir: Path, connector, coordinates: str) -> list[Path]:
    jar = jars_dir / "ivy" / "cache" / "org.example" / "thing" / "jars" / "thing-1.jar"
    jar.parent.mkdir(parents=True)
    _small_jar(jar)
    listed = connectors.listing(jars_dir, connector)
    listed.parent.mkdir(parents=True, exist_ok=True)
    listed.write_text(f"{jar}\n")
    listed.with_suffix(".coordinates").write_text(coordinates + "\n")
    return [jar]


def test_a_fetch_pinned_to_this_pyspark_is_used_and_one_for_another_is_not(tmp_path):
    avro = connectors.BY_NAME["avro"]
    jars = _fetched(tmp_path, avro, connectors.coordinates(avro))
    assert connectors.resolved_jars(tmp_path, avro) == [str(jars[0])]
    # pinned for another PySpark: of the other Spark line
    other = (
        "org.apache.spark:spark-avro_2.13:4.0.0"
        if SCALA == "2.12"
        else "org.apache.spark:spark-avro_2.12:3.5.0"
    )
    connectors.listing(tmp_path, avro).with_suffix(".coordinates").write_text(other + "\n")
    assert connectors.resolved_jars(tmp_path, avro) == []  # fetched again when next needed


def test_a_fetch_whose_jar_is_gone_is_not_resolved(tmp_path):
    avro = connectors.BY_NAME["avro"]
    jars = _fetched(tmp_path, avro, connectors.coordinates(avro))
    jars[0].unlink()
    assert connectors.resolved_jars(tmp_path, avro) == []


def test_the_classpath_names_ivys_cached_jar_and_the_retrieved_copy_is_removed(tmp_path):
    ivy = tmp_path / "ivy"
    cached = ivy / "cache" / "software.amazon.awssdk" / "bundle" / "jars" / "bundle-2.29.52.jar"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"x" * 10)
    retrieved = ivy / "jars" / "software.amazon.awssdk_bundle-2.29.52.jar"
    retrieved.parent.mkdir(parents=True)
    retrieved.write_bytes(b"x" * 10)
    assert connectors._from_cache(ivy, retrieved) == str(cached)
    assert not retrieved.exists()
    other = ivy / "jars" / "org.x_y-1.jar"  # not in the cache: kept, and named as it is
    other.write_bytes(b"y")
    assert connectors._from_cache(ivy, other) == str(other) and other.exists()


def test_a_failed_fetch_is_told_by_ivys_own_line():
    stderr = (
        ":: resolving dependencies :: org.apache.spark#spark-submit-parent\n"
        "\tHost repos.spark-packages.org not found. url=https://repos.spark-packages.org/x.pom\n"
        "\t\t:: org.example#nothing;9.9: not found\n"
        "Exception in thread main java.lang.RuntimeException: [unresolved dependency: org.example#nothing;9.9]\n"
    )
    assert connectors._why(stderr) == "org.example#nothing;9.9: not found"
    assert connectors._why("") == "no output"


def test_a_session_fetches_only_what_is_needed_or_named(tmp_path, monkeypatch):
    fetched: list[str] = []

    def fake_resolve(jars_dir, connector, *, environ, spark_confs=None):
        fetched.append(connector.name)
        return [f"/jars/{connector.name}.jar"]

    monkeypatch.setattr(connectors, "resolve", fake_resolve)
    assert connectors.session_connectors(tmp_path, "auto", (), environ={}) == []
    assert connectors.session_connectors(tmp_path, "auto", ("s3",), environ={}) == ["/jars/s3.jar"]
    assert connectors.session_connectors(tmp_path, "kafka", (), environ={}) == ["/jars/kafka.jar"]
    assert connectors.session_connectors(tmp_path, "none", ("s3",), environ={}) == []
    assert connectors.session_connectors(tmp_path, "auto", ("s3",), environ={}, on_demand=False) == []
    assert fetched == ["s3", "kafka"]


def test_a_needed_connector_that_cannot_be_fetched_leaves_the_session_without_it(
    tmp_path, monkeypatch, caplog
):
    from sparkmark.errors import ConfigError

    def failing(jars_dir, connector, *, environ, spark_confs=None):
        raise ConfigError("the s3 connector could not be fetched from Maven Central: offline")

    monkeypatch.setattr(connectors, "resolve", failing)
    assert connectors.session_connectors(tmp_path, "auto", ("s3",), environ={}) == []
    assert "could not be fetched" in caplog.text


# ------------------------------------------------------------------ the plugin's arguments


def test_keyword_arguments_become_glues_arguments():
    argv = glue_arguments(
        None,
        Path("jobs/orders.py"),
        {"job_bookmark_option": "job-bookmark-enable", "source_path": "s3://b/in", "enable_metrics": True,
         "datalake_formats": "iceberg", "limit": 5},
    )  # fmt: skip
    assert argv == [
        "--JOB_NAME", "orders",
        "--job-bookmark-option", "job-bookmark-enable",
        "--source_path", "s3://b/in",
        "--enable-metrics", "true",
        "--datalake-formats", "iceberg",
        "--limit", "5",
    ]  # fmt: skip
    assert glue_arguments("nightly", Path("x.py"), {})[:2] == ["--JOB_NAME", "nightly"]


# ------------------------------------------------------------------ doctor


def test_doctor_reports_each_part_with_a_fix_and_creates_nothing(tmp_path, monkeypatch):
    from sparkmark.cli.app import app

    monkeypatch.setenv("SPARKMARK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SPARKMARK_JARS_DIR", str(tmp_path / "jars"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    monkeypatch.setenv("SPARKMARK_SPARK_MASTER", "spark://127.0.0.1:9,127.0.0.1:10")
    result = CliRunner().invoke(app, ["doctor", "--json"])
    found = {f["check"]: f for f in json.loads(result.stdout)}
    assert result.exit_code == 1  # no Java: jobs cannot run
    assert found["java"]["status"] == "FAIL" and "JAVA_HOME" in found["java"]["fix"]
    assert found["connector s3"]["status"] == "info"
    assert found["connector s3"]["fix"] == "sparkmark connectors fetch s3 (now, e.g. for an offline CI image)"
    assert {"connector iceberg", "connector delta", "pyspark", "awsglue"} <= set(found)
    assert found["state store"]["status"] == "info" and "not created yet" in found["state store"]["detail"]
    assert found["s3 endpoint"]["status"] == "warn" and "does not answer" in found["s3 endpoint"]["detail"]
    assert found["spark master"]["status"] == "FAIL" and "does not answer" in found["spark master"]["detail"]
    assert not (tmp_path / "home").exists() and not (tmp_path / "jars").exists()


def test_a_native_jobs_session_is_started_with_what_its_arguments_need(tmp_path, monkeypatch):
    """`Job.from_args` in a plain `python job.py --input s3://…`: the session it starts
    fetches S3 first."""
    from pyspark.sql import SparkSession

    import sparkmark.job as job_module
    from sparkmark import Job
    from sparkmark.catalog import hive

    started: list[Settings] = []
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(
        job_module, "create_session", lambda name, master, settings: started.append(settings) or object()
    )
    monkeypatch.setattr(hive, "sync_metastore", lambda spark, store: None)
    settings = Settings.from_env({"SPARKMARK_HOME": str(tmp_path), "SPARKMARK_CONNECTOR_NEEDS": "kafka"})
    job = Job.from_args(["job.py", "--JOB_NAME", "native", "--input", "s3://lake/in/"], settings=settings)
    try:
        job.spark  # noqa: B018 - starting the session is what is tested
        assert started[0].connector_needs == "kafka,s3"
        assert connector_needs(started[0]) == ("kafka", "s3")
    finally:
        job.fail("test over")


def _fake_fetch(monkeypatch) -> list[str]:
    fetched: list[str] = []

    def fake_resolve(jars_dir, connector, *, environ, spark_confs=None):
        fetched.append(connector.name)
        return [f"/jars/{connector.name}.jar"]

    monkeypatch.setattr(connectors, "resolve", fake_resolve)
    return fetched


def test_datalake_formats_are_fetched_on_demand_or_refused_in_one_line_when_off(tmp_path, monkeypatch):
    from sparkmark.errors import ConfigError
    from sparkmark.spark import format_jars

    fetched = _fake_fetch(monkeypatch)
    base = {"SPARKMARK_HOME": str(tmp_path), "SPARKMARK_JARS_DIR": str(tmp_path / "jars")}
    given = Settings.from_env({**base, "SPARKMARK_DATALAKE_FORMATS": "iceberg,delta"})
    assert format_jars(given) == ["/jars/iceberg.jar", "/jars/delta.jar"] and fetched == ["iceberg", "delta"]
    off = Settings.from_env(
        {**base, "SPARKMARK_DATALAKE_FORMATS": "delta", "SPARKMARK_CONNECTOR_RESOLUTION": "off"}
    )
    with pytest.raises(ConfigError, match=r"--datalake-formats delta: .*`sparkmark connectors fetch delta`"):
        format_jars(off)
    assert Settings.from_env(base).datalake_formats is None and format_jars(Settings.from_env(base)) == []


def test_jdbc_drivers_are_fetched_only_when_needed_and_none_are_installed(tmp_path, monkeypatch):
    import sparkmark.spark as spark_module

    fetched = _fake_fetch(monkeypatch)
    monkeypatch.setattr(spark_module, "JAR_DIRS", (str(tmp_path / "no-debian-jars"),))
    base = {"SPARKMARK_HOME": str(tmp_path), "SPARKMARK_JARS_DIR": str(tmp_path / "jars")}
    assert spark_module.jdbc_jars(Settings.from_env(base)) == [] and fetched == []
    needs = {**base, "SPARKMARK_CONNECTOR_NEEDS": "jdbc"}
    assert spark_module.jdbc_jars(Settings.from_env(needs)) == ["/jars/jdbc.jar"] and fetched == ["jdbc"]
    chosen = Settings.from_env({**needs, "SPARKMARK_JDBC_JARS": "/opt/drivers/pg.jar"})
    assert spark_module.jdbc_jars(chosen) == ["/opt/drivers/pg.jar"] and fetched == ["jdbc"]


def test_a_fetchs_settings_stay_off_the_jvms_command_line(tmp_path, monkeypatch):
    """A mirror's URL may carry its credentials: the resolving JVM reads it from a private
    properties file, and only the coordinates are on its command line."""
    import subprocess

    seen: dict = {}
    jar = tmp_path / "jars" / "ivy" / "jars" / "org.apache.spark_spark-avro_2.13-4.1.1.jar"

    def fake_run(command, **kwargs):
        seen["args"] = kwargs["env"]["PYSPARK_SUBMIT_ARGS"]
        properties = Path(seen["args"].split()[1])
        seen["mode"] = properties.stat().st_mode & 0o777
        seen["properties"] = properties.read_text()
        jar.parent.mkdir(parents=True, exist_ok=True)
        _small_jar(jar)
        return subprocess.CompletedProcess(command, 0, stdout=f"JARS file://{jar}\n", stderr="")

    monkeypatch.setattr(connectors.subprocess, "run", fake_run)
    mirror = "https://builder:s3cret@maven.example/repo"
    found = connectors.resolve(
        tmp_path / "jars",
        connectors.BY_NAME["avro"],
        environ={},
        spark_confs={"spark.jars.repositories": mirror},
    )
    assert found == [str(jar)]
    assert "s3cret" not in seen["args"] and f"--packages org.apache.spark:spark-avro_{SCALA}:" in seen["args"]
    assert f"spark.jars.repositories {mirror}\n" in seen["properties"] and seen["mode"] == 0o600
    assert not list((tmp_path / "jars").glob("*.properties"))  # removed once read
