"""Connector jars from Maven Central, the servers the project starts for its tests, and
the one line a job gets when a connector it needs is not there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pyspark
import pytest

from sparkmark import connectors, glue_versions
from sparkmark.devservices.process import ServerProcess, free_port, port_answers
from sparkmark.errors import ConfigError
from sparkmark.settings import Settings
from sparkmark.spark import jdbc_jars, session_confs

SCALA = glue_versions.scala_version(pyspark.__version__)

ROOT = Path(__file__).resolve().parents[1]


def make_jar(path: Path, entries: int = 3) -> Path:
    """A small real jar (a zip with a manifest and a few classes' worth of bytes)."""
    import zipfile

    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for i in range(entries):
            jar.writestr(f"org/example/C{i}.class", bytes(range(256)) * 40)
    return path


def _fake_cache(tmp_path: Path, **groups: list[str]) -> Path:
    """A jars folder as `make jars` leaves it: one classpath file per module, naming jars
    that exist."""
    jars_dir = tmp_path / "jars"
    jars_dir.mkdir()
    for module, names in groups.items():
        paths = []
        for name in names:
            jar = tmp_path / "m2" / name
            jar.parent.mkdir(parents=True, exist_ok=True)
            make_jar(jar)
            paths.append(str(jar))
        folder = connectors.listing_dir(jars_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{module.replace('_', '-')}.classpath").write_text(":".join(paths))
    return jars_dir


# ------------------------------------------------------------------ selection and classpath


def test_a_jar_cut_short_is_found_quickly_and_a_wrong_checksum_thoroughly(tmp_path):
    import hashlib

    whole = make_jar(tmp_path / "whole.jar")
    assert connectors.jar_problem(whole) is None and connectors.jar_problem(whole, thorough=True) is None
    data = whole.read_bytes()
    for cut in (len(data) // 2, len(data) - 10, 100):
        half = tmp_path / f"cut-{cut}.jar"
        half.write_bytes(data[:cut])  # as an interrupted download leaves it
        assert "cut short" in (connectors.jar_problem(half) or ""), cut
    (tmp_path / "empty.jar").write_bytes(b"")
    assert "cut short" in (connectors.jar_problem(tmp_path / "empty.jar") or "")
    assert "cannot be read" in (connectors.jar_problem(tmp_path / "gone.jar") or "")
    (tmp_path / "whole.jar.sha1").write_text(hashlib.sha1(data).hexdigest() + "  whole.jar\n")
    assert connectors.jar_problem(whole, thorough=True) is None
    (tmp_path / "whole.jar.sha1").write_text("0" * 40 + "\n")
    assert connectors.jar_problem(whole) is None  # the quick check reads no whole file
    assert "SHA-1" in (connectors.jar_problem(whole, thorough=True) or "")


def test_a_damaged_jar_leaves_its_connector_out_until_repaired(tmp_path):
    jars_dir = _fake_cache(tmp_path, spark_avro=["spark-avro.jar", "commons-pool2.jar"])
    avro = connectors.BY_NAME["avro"]
    assert len(connectors.resolved_jars(jars_dir, avro)) == 2
    jar = tmp_path / "m2" / "spark-avro.jar"
    jar.write_bytes(jar.read_bytes()[:200])
    assert connectors.resolved_jars(jars_dir, avro) == []
    assert list(connectors.damaged_jars(jars_dir, avro)) == [str(jar)]
    assert connectors.repair(jars_dir, avro) == [str(jar)]
    assert not jar.exists() and not (connectors.listing_dir(jars_dir) / "spark-avro.classpath").exists()
    assert (tmp_path / "m2" / "commons-pool2.jar").exists()  # a whole jar is kept
    assert connectors.repair(jars_dir, avro) == []


def test_a_failed_fetch_names_the_mirror_it_asked():
    assert connectors._where_from({}) == "Maven's local repository or Maven Central"
    mirror = {"spark.jars.repositories": "https://ci:s3cret-token@mirror.internal/maven2"}
    said = connectors._where_from(mirror)
    assert said.startswith("https://ci:****@mirror.internal/maven2 (spark.jars.repositories)")
    assert "s3cret-token" not in said
    assert "ivy.xml" in connectors._where_from({"spark.jars.ivySettings": "/etc/ivy.xml"})


def test_connector_choice():
    assert [c.name for c in connectors.selected("auto")] == ["s3", "kafka", "avro", "jdbc"]
    assert connectors.selected("none") == ()
    assert [c.name for c in connectors.selected(" Kafka, s3 ")] == ["kafka", "s3"]
    with pytest.raises(ConfigError, match="unknown connector.*hdfs"):
        connectors.selected("s3,hdfs")


def test_classpath_has_resolved_connectors_once_and_skips_stale_ones(tmp_path):
    jars_dir = _fake_cache(
        tmp_path,
        spark_s3=["hadoop-aws-3.4.2.jar", "bundle.jar"],
        spark_kafka=["spark-sql-kafka.jar", "commons-pool2.jar"],
        spark_avro=["spark-avro.jar", "commons-pool2.jar"],
    )
    jars = connectors.classpath(jars_dir, "auto")
    assert [Path(j).name for j in jars] == [
        "hadoop-aws-3.4.2.jar",
        "bundle.jar",
        "spark-sql-kafka.jar",
        "commons-pool2.jar",
        "spark-avro.jar",
    ]
    assert [Path(j).name for j in connectors.classpath(jars_dir, "avro")] == [
        "spark-avro.jar",
        "commons-pool2.jar",
    ]
    # Maven's repository lost a jar since `make jars`: the whole connector is left out.
    (tmp_path / "m2" / "bundle.jar").unlink()
    assert [Path(j).name for j in connectors.classpath(jars_dir, "s3")] == []


def test_session_confs_local_and_cluster(tmp_path):
    jars_dir = _fake_cache(tmp_path, spark_s3=["hadoop-aws-3.4.2.jar"], jdbc=["postgresql.jar"])
    settings = Settings.from_env(
        {
            "SPARKMARK_HOME": str(tmp_path / "h"),
            "SPARKMARK_CATALOG": "none",
            "SPARKMARK_JARS_DIR": str(jars_dir),
        }
    )
    local = session_confs(settings, "local[2]")
    assert [Path(j).name for j in local["spark.driver.extraClassPath"].split(":")] == [
        "hadoop-aws-3.4.2.jar",
        "postgresql.jar",
    ]
    assert "spark.jars" not in local  # a local session would copy every jar for nothing
    assert local["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    cluster = session_confs(settings, "spark://10.0.0.1:7077")
    assert cluster["spark.jars"].split(",") == local["spark.driver.extraClassPath"].split(":")
    none = session_confs(settings.model_copy(update={"connectors": "none"}), "local[2]")
    assert "spark.hadoop.fs.s3.impl" not in none


def test_jdbc_jars_prefer_the_resolved_drivers(tmp_path):
    jars_dir = _fake_cache(tmp_path, jdbc=["postgresql-42.7.8.jar", "mariadb-java-client.jar"])
    env = {"SPARKMARK_HOME": str(tmp_path), "SPARKMARK_JARS_DIR": str(jars_dir)}
    assert [Path(j).name for j in jdbc_jars(Settings.from_env(env))] == [
        "postgresql-42.7.8.jar",
        "mariadb-java-client.jar",
    ]
    assert jdbc_jars(Settings.from_env({**env, "SPARKMARK_JDBC_JARS": "/opt/x.jar"})) == ["/opt/x.jar"]
    assert jdbc_jars(Settings.from_env({**env, "SPARKMARK_JDBC_JARS": ""})) == []


def test_the_real_cache_is_resolved():
    """`make test` ran `make jars`: every connector the tests use is on the classpath."""
    jars_dir = Settings.from_env().jars_dir
    for connector in connectors.CONNECTORS:
        jars = connectors.resolved_jars(jars_dir, connector)
        assert jars, f"{connector.name} is not resolved in {jars_dir}: run `make jars` (or `make runtimes`)"
    import pyspark

    spark_version, hadoop = connectors.spark_and_hadoop_versions()
    assert spark_version == pyspark.__version__
    s3 = [Path(j).name for j in connectors.resolved_jars(jars_dir, connectors.BY_NAME["s3"])]
    assert f"hadoop-aws-{hadoop}.jar" in s3  # hadoop-aws must be PySpark's own Hadoop release
    kafka = [Path(j).name for j in connectors.resolved_jars(jars_dir, connectors.BY_NAME["kafka"])]
    scala = glue_versions.scala_version(spark_version)
    # Spark's own Kafka connector, or (a Glue 5.x runtime where the mirror lacks its
    # Spark's) another patch release of its line: Makefile's `runtimes`.
    line = glue_versions.spark_line(spark_version)
    assert any(j.startswith(f"spark-sql-kafka-0-10_{scala}-{line}.") for j in kafka), kafka
    pyspark_jars = {p.name for p in (Path(pyspark.__file__).parent / "jars").iterdir()}
    assert not pyspark_jars & set(kafka)  # nothing PySpark ships twice


@pytest.mark.parametrize(
    "text, name, target",
    [
        (
            'org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "s3a"',
            "s3",
            "org.apache.hadoop:hadoop-aws:",
        ),
        (
            "java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem not found",
            "s3",
            "org.apache.hadoop:hadoop-aws:3.",
        ),
        (
            "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: kafka. Make sure the provider",
            "kafka",
            f"org.apache.spark:spark-sql-kafka-0-10_{SCALA}:{pyspark.__version__}",
        ),
        (
            "Failed to find data source: avro. Avro is built-in but external data source module",
            "avro",
            f"org.apache.spark:spark-avro_{SCALA}:{pyspark.__version__}",
        ),
    ],
)
def test_missing_connector_says_what_provides_it(text, name, target):
    line = connectors.missing_connector(text)
    assert line is not None and "\n" not in line
    assert line.startswith(f"the {name} connector is not on Spark's classpath")
    assert f"`sparkmark connectors fetch {name}`" in line and f"spark.jars.packages={target}" in line


def test_other_errors_are_not_about_connectors():
    assert connectors.missing_connector("Path does not exist: file:/tmp/x") is None
    assert connectors.missing_connector('No FileSystem for scheme "hdfs2"') is None


# ------------------------------------------------------------------ real servers


def test_kafka_broker_round_trip_through_spark(spark, kafka_broker):
    """Spark's Kafka sink writes to the KRaft broker and its source reads the records back."""
    topic = f"orders_{uuid.uuid4().hex[:8]}"
    rows = [(str(i), json.dumps({"id": i})) for i in range(5)]
    (
        spark.createDataFrame(rows, "key string, value string")
        .write.format("kafka")
        .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
        .option("topic", topic)
        .save()
    )
    back = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .selectExpr("CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v", "offset")
    )
    got = sorted((r.k, r.v) for r in back.collect())
    assert got == sorted(rows)
    assert sorted(r.offset for r in back.collect()) == [0, 1, 2, 3, 4]


def _bucket_for_spark(spark, server, bucket: str) -> None:
    """Points S3A at the local server for one bucket, as a user's fs.s3a.* settings would."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in {
        "endpoint": server.endpoint_url,
        "path.style.access": "true",
        "access.key": "testing",
        "secret.key": "testing",
        "endpoint.region": "us-east-1",
        "connection.ssl.enabled": "false",
    }.items():
        conf.set(f"fs.s3a.bucket.{bucket}.{key}", value)


def test_s3_server_serves_spark_through_s3a(spark, s3_server):
    """boto3 and Spark's S3A filesystem talk to the same S3 API server over HTTP: objects
    put by boto3 are read by Spark from s3a://, and what Spark writes to s3:// is listed
    by boto3."""
    bucket = f"sm-{uuid.uuid4().hex[:10]}"
    client = boto3.client(
        "s3",
        endpoint_url=s3_server.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="in/dt=2026-11-01/a.csv", Body=b"id,amount\n1,2.5\n2,4.0\n")
    client.put_object(Bucket=bucket, Key="in/dt=2026-11-02/b.csv", Body=b"id,amount\n3,1.0\n")
    _bucket_for_spark(spark, s3_server, bucket)

    df = spark.read.option("header", "true").csv(f"s3a://{bucket}/in/")
    assert sorted((int(r.id), str(r.dt)) for r in df.collect()) == [
        (1, "2026-11-01"),
        (2, "2026-11-01"),
        (3, "2026-11-02"),
    ]
    df.write.mode("overwrite").parquet(f"s3://{bucket}/out/")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix="out/")["Contents"]]
    assert "out/_SUCCESS" in keys and any(k.endswith(".parquet") for k in keys)
    assert spark.read.parquet(f"s3a://{bucket}/out/").count() == 3


def test_avro_round_trip(spark, tmp_path):
    out = str(tmp_path / "avro")
    spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string").write.format("avro").save(out)
    assert sorted(tuple(r) for r in spark.read.format("avro").load(out).collect()) == [(1, "a"), (2, "b")]


@pytest.mark.slow
@pytest.mark.parametrize(
    "read, name",
    [
        ('spark.read.json("s3a://some-bucket/orders/").count()', "s3"),
        (
            'spark.read.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:1")'
            '.option("subscribe", "t").load().count()',
            "kafka",
        ),
    ],
)
def test_a_job_without_its_connector_fails_with_one_line(tmp_path, read, name):
    script = tmp_path / "job.py"
    script.write_text(
        "from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\n" + read + "\n"
    )
    env = {
        **os.environ,
        "SPARKMARK_CONNECTORS": "none",
        "SPARKMARK_CATALOG": "none",
        "SPARKMARK_HOME": str(tmp_path / "home"),
    }
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run(
        [sys.executable, "-m", "sparkmark", "run", str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert errors[0].startswith(f"error: the {name} connector is not on Spark's classpath")
    assert f"`sparkmark connectors fetch {name}`" in errors[0]


@pytest.mark.slow  # two `sparkmark run` processes, each with a JVM: not part of `make test-fast`
def test_a_job_that_needs_a_connector_fetches_it_once_on_demand(tmp_path):
    """An empty jars folder: the script's format("avro") makes `sparkmark run` fetch
    Spark's Avro connector through Spark's package resolution, say so in one line, and
    run; the next run finds it fetched."""
    script = tmp_path / "job.py"
    out = tmp_path / "out"
    script.write_text(
        "from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\n"
        f'spark.range(3).write.format("avro").mode("overwrite").save({str(out)!r})\n'
        f'print("ROWS", spark.read.format("avro").load({str(out)!r}).count())\n'
    )
    env = {
        **os.environ,
        "SPARKMARK_JARS_DIR": str(tmp_path / "jars"),
        "SPARKMARK_CATALOG": "none",
        "SPARKMARK_HOME": str(tmp_path / "home"),
    }
    env.pop("PYSPARK_SUBMIT_ARGS", None)

    def sparkmark(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "sparkmark", *args], capture_output=True, text=True, env=env, timeout=600
        )

    for attempt in (1, 2):
        done = sparkmark("run", str(script))
        assert done.returncode == 0, done.stderr[-2000:]
        assert "ROWS 3" in done.stdout
        told = [ln for ln in done.stderr.splitlines() if "fetching the avro connector" in ln]
        assert len(told) == (1 if attempt == 1 else 0), done.stderr[-2000:]
    pinned = (connectors.listing_dir(tmp_path / "jars") / "spark-avro.coordinates").read_text().strip()
    assert pinned == connectors.coordinates(connectors.BY_NAME["avro"])
    assert not (
        connectors.listing_dir(tmp_path / "jars") / "spark-kafka.classpath"
    ).exists()  # only what the job needed

    # spark-avro cut in half, as an interrupted download leaves it: doctor says so, and
    # `connectors fetch avro` removes it and fetches it again.
    listed = (
        (connectors.listing_dir(tmp_path / "jars") / "spark-avro.classpath").read_text().strip().split(":")
    )
    jar = Path(next(j for j in listed if "spark-avro" in Path(j).name))
    jar.write_bytes(jar.read_bytes()[: jar.stat().st_size // 2])
    found = {f["check"]: f for f in json.loads(sparkmark("doctor", "--json").stdout)}["connector avro"]
    assert found["status"] == "warn" and "is damaged" in found["detail"] and str(jar) in found["detail"]
    fetched = sparkmark("connectors", "fetch", "avro")
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    assert "was damaged; removed, to be fetched again" in fetched.stdout
    assert connectors.jar_problem(jar, thorough=True) is None
    again = sparkmark("run", str(script))
    assert again.returncode == 0 and "ROWS 3" in again.stdout, again.stderr[-2000:]


def test_services_script_is_idempotent():
    """`make test` started the databases; a second call finds them and does nothing."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "services.sh")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    assert port_answers(5432) and port_answers(3306)


def test_server_process_stops_by_pid(tmp_path):
    port = free_port()
    server = ServerProcess(
        "a test server",
        [sys.executable, "-m", "http.server", "-b", "127.0.0.1", str(port)],
        tmp_path / "http.log",
    )
    server.wait_until(lambda: port_answers(port), 30, f"answering on {port}")
    server.stop()
    assert server.process.poll() is not None
    assert not port_answers(port)
    server.stop()  # twice is harmless


def test_server_that_dies_names_its_log(tmp_path):
    server = ServerProcess(
        "a broken server", [sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "broken.log"
    )
    with pytest.raises(ConfigError, match=r"a broken server exited with status 3 .*broken\.log"):
        server.wait_until(lambda: False, 30, "answering")


def test_kafka_broker_needs_resolved_jars(tmp_path):
    from sparkmark.devservices.kafka import start_kafka

    with pytest.raises(ConfigError, match="run `make jars` first"):
        start_kafka(tmp_path / "k", tmp_path / "no-jars")


def test_kafka_cluster_ids_are_never_taken_for_an_option():
    """One id in 64 would start with '-', and the storage tool then refused to format."""
    import base64

    from sparkmark.devservices.kafka import new_cluster_id

    for _ in range(2000):
        cluster_id = new_cluster_id()
        assert not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def _serve(*args: str) -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, "-m", "sparkmark.devservices", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert child.stdout is not None
    for line in child.stdout:  # up to the line that says it serves
        if "Ctrl-C stops it." in line:
            return child
    raise AssertionError(f"the dev server ended before serving: {child.wait()}")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_dev_server_stopped_by_a_signal_stops_its_server(signum):
    """`python -m sparkmark.devservices s3` ended by SIGTERM (as a service manager or
    `kill` ends it) or Ctrl-C stops the server it started, leaving nothing listening."""
    port = free_port()
    child = _serve("s3", "--port", str(port))
    assert port_answers(port)
    child.send_signal(signum)
    assert child.wait(timeout=60) == 0
    assert not port_answers(port)


@pytest.mark.slow
def test_the_kafka_controller_port_can_be_chosen():
    port, controller = free_port(), free_port()
    child = _serve("kafka", "--port", str(port), "--controller-port", str(controller))
    try:
        assert port_answers(port) and port_answers(controller)
    finally:
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == 0
    assert not port_answers(port) and not port_answers(controller)
