"""sparkmark's pytest plugin, registered through the ``pytest11`` entry point: installing
sparkmark is the whole set-up. Fixtures for testing Glue jobs:

- ``spark``: one local Spark session for the test session, started once, warm;
- ``sparkmark_home``: a state store (bookmarks, runs, catalog) of the test's own;
- ``glue_context``: a ``GlueContext`` on that session and home;
- ``s3``: moto's S3 server (one per test session, emptied before each test), with the
  AWS variables set for the test;
- ``glue_catalog``: sparkmark's Glue API endpoint for the test's home, with boto3 (and
  the job's scripts) pointed at it; the fixture is a boto3 Glue client;
- ``run_glue_job``: ``run_glue_job("job.py", JOB_NAME="orders", input_path=…)`` runs a
  Glue script as ``sparkmark run`` would and returns a ``GlueJobRun``.

Settings, in the ``[pytest]`` (or ``[tool.pytest.ini_options]``) section:

- ``sparkmark_connectors``: connectors the session starts with, beyond S3 (which it gets
  when a test uses ``s3``): ``kafka``, ``avro``, ``jdbc``. Each is fetched once, on demand;
- ``sparkmark_spark_conf``: Spark settings, one ``key=value`` per line;
- ``sparkmark_glue_version`` (or ``pytest --glue-version 5.0``): the Glue version the
  tests are meant for. The tests run on whichever PySpark the environment has; when it
  is not that Glue version's Spark, the session stops at once, in one line, rather than
  passing on another Spark. The ``glue_version`` fixture is the environment's version.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The credentials the `s3` fixture gives a test (moto takes any): never a real AWS key.
TEST_KEY, TEST_SECRET = "testing", "testing"
_SESSION_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",  # no Spark metrics in the runs' Glue metrics; a faster start
    "spark.sql.session.timeZone": "UTC",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "sparkmark_connectors",
        "connectors sparkmark's Spark session starts with beyond S3: kafka, avro, jdbc (comma list)",
        default="",
    )
    parser.addini(
        "sparkmark_spark_conf", "Spark settings for sparkmark's session, key=value per line", type="linelist"
    )
    parser.addini("sparkmark_glue_version", "the Glue version the tests assert they run on (5.0, 5.1, 6.0)")
    parser.addoption(
        "--glue-version",
        dest="sparkmark_glue_version",
        default=None,
        help="the Glue version these tests are for; the run stops when PySpark is another version's Spark",
    )


def pytest_configure(config: pytest.Config) -> None:
    from ..glue import shim

    shim.install()  # `import awsglue` in tests, also where the .pth hook is not installed
    wanted = config.getoption("sparkmark_glue_version") or config.getini("sparkmark_glue_version")
    if wanted:
        problem = glue_version_problem(str(wanted))
        if problem:
            raise pytest.UsageError(problem)


def glue_version_problem(wanted: str) -> str | None:
    """Why this environment cannot run tests meant for Glue ``wanted``, or None."""
    from .. import glue_versions, runtimes
    from ..errors import ConfigError

    try:
        release = glue_versions.release(wanted)
        here = runtimes.own()
    except ConfigError as exc:
        return f"sparkmark_glue_version: {exc}"
    if glue_versions.spark_line(here.spark) == release.spark_line and here.glue_version == release.version:
        return None
    return (
        f"these tests are for Glue {release.version} (Spark {release.spark}), but this environment "
        f"has PySpark {here.spark} (Glue {here.glue_version}): pip install pyspark=={release.spark}, "
        f"or run pytest in the runtime `sparkmark runtime add {release.version}` makes"
    )


@pytest.fixture(scope="session")
def glue_version() -> str:
    """The Glue version whose Spark this environment has (``6.0`` for PySpark 4.1)."""
    from .. import runtimes

    return runtimes.own().glue_version


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    used: set[str] = set()
    for item in items:
        used.update(getattr(item, "fixturenames", ()))
    config.stash[_USED] = frozenset(used)


_USED = pytest.StashKey[frozenset]()


@pytest.fixture(scope="session")
def _sparkmark_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's own folder: the Spark session's metastore and warehouse."""
    return tmp_path_factory.mktemp("sparkmark")


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest, _sparkmark_base: Path) -> Iterator[Any]:
    """One local Spark session for the whole test session, with the connectors its tests
    need (S3 when a test uses ``s3``; those ``sparkmark_connectors`` names), warm."""
    from ..settings import Settings
    from ..spark import create_session

    used = request.config.stash.get(_USED, frozenset())
    needs = [n.strip() for n in str(request.config.getini("sparkmark_connectors")).split(",") if n.strip()]
    if "s3" in used and "s3" not in needs:
        needs.append("s3")
    conf = dict(_SESSION_CONF)
    for line in request.config.getini("sparkmark_spark_conf"):
        key, eq, value = str(line).partition("=")
        if not eq:
            raise pytest.UsageError(f"sparkmark_spark_conf: {line!r} is not key=value")
        conf[key.strip()] = value.strip()
    given = Settings.from_env().spark_conf_map()
    env = {
        **os.environ,
        "SPARKMARK_HOME": str(_sparkmark_base / "home"),
        "SPARKMARK_SPARK_CONF": json.dumps({**conf, **given}),
        "SPARKMARK_CONNECTOR_NEEDS": ",".join(needs),
    }
    settings = Settings.from_env(env)
    master = settings.spark_master if env.get("SPARKMARK_SPARK_MASTER") else "local[2]"
    session = create_session("sparkmark-tests", master, settings)
    session.sparkContext.setLogLevel("ERROR")
    session.range(1).count()  # the first job pays the class loading, once
    yield session
    session.stop()


@pytest.fixture
def sparkmark_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state store of the test's own (bookmarks, runs, the catalog), in a temporary folder."""
    home = tmp_path / "sparkmark-home"
    monkeypatch.setenv("SPARKMARK_HOME", str(home))
    for name in ("SPARKMARK_STATE_URL", "SPARKMARK_TEMP_DIR"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def glue_context(spark: Any, sparkmark_home: Path) -> Any:
    """A GlueContext on the session's Spark and the test's own home."""
    from ..glue.context import GlueContext

    return GlueContext(spark.sparkContext)


def _fresh_boto3() -> None:
    """boto3's default session keeps the credentials it found first; a test's fixtures
    change them (and each home has its own token), so a script's ``boto3.client(...)``
    must find them again, as in the fresh process ``sparkmark run`` gives it."""
    import sys

    boto3 = sys.modules.get("boto3")
    if boto3 is not None:
        setattr(boto3, "DEFAULT_SESSION", None)  # noqa: B010 - boto3 is imported only if the test did


class S3:
    """moto's S3 server, as one test sees it: ``endpoint_url``, a boto3 ``client``, and
    helpers to make a bucket and put or list objects by ``s3://`` URL."""

    def __init__(self, endpoint_url: str):
        import boto3

        self.endpoint_url = endpoint_url
        self.client = boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint_url,
            aws_access_key_id=TEST_KEY,
            aws_secret_access_key=TEST_SECRET,
            region_name="us-east-1",
        )

    def create_bucket(self, name: str) -> str:
        self.client.create_bucket(Bucket=name)
        return f"s3://{name}"

    @staticmethod
    def _split(url: str) -> tuple[str, str]:
        bucket, _, key = url.removeprefix("s3://").removeprefix("s3a://").partition("/")
        return bucket, key

    def put(self, url: str, body: bytes | str) -> str:
        """Write one object (its bucket is made when missing)."""
        bucket, key = self._split(url)
        if bucket not in {b["Name"] for b in self.client.list_buckets().get("Buckets", [])}:
            self.create_bucket(bucket)
        self.client.put_object(Bucket=bucket, Key=key, Body=body.encode() if isinstance(body, str) else body)
        return url

    def list(self, url: str) -> list[str]:
        """The ``s3://`` URLs of the objects under a prefix, sorted."""
        bucket, prefix = self._split(url)
        found: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found += [f"s3://{bucket}/{o['Key']}" for o in page.get("Contents", [])]
        return sorted(found)

    def read(self, url: str) -> bytes:
        bucket, key = self._split(url)
        return self.client.get_object(Bucket=bucket, Key=key)["Body"].read()


@pytest.fixture(scope="session")
def _s3_server() -> Iterator[str]:
    from ..devservices.s3 import start_s3

    folder = Path(tempfile.mkdtemp(prefix="sparkmark-s3-"))
    server = start_s3(folder)
    yield server.endpoint_url
    server.stop()


@pytest.fixture
def s3(_s3_server: str, monkeypatch: pytest.MonkeyPatch) -> S3:
    """moto's S3 server, emptied for this test, with AWS_ENDPOINT_URL_S3 and test
    credentials set, so that the job's ``s3://`` paths, boto3 and Spark all reach it."""
    reset = urllib.request.Request(f"{_s3_server}/moto-api/reset", method="POST")
    with urllib.request.urlopen(reset, timeout=30):
        pass
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", _s3_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", TEST_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TEST_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    _fresh_boto3()
    return S3(_s3_server)


@pytest.fixture
def glue_catalog(sparkmark_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """sparkmark's Glue API endpoint on the test's home, with boto3 pointed at it
    (AWS_ENDPOINT_URL_GLUE): the fixture is a boto3 Glue client, and the job's own
    ``boto3.client("glue")`` reaches the same catalog."""
    import boto3

    from ..access import resolve_token
    from ..api.server import start_in_thread
    from ..settings import Settings

    settings = Settings.from_env().model_copy(update={"tls_certfile": None, "tls_keyfile": None})
    own = os.environ.get("AWS_SECRET_ACCESS_KEY")
    # Whichever of `s3` and this fixture comes first, the job's Glue client signs with a
    # key this endpoint (on loopback, for this test only) takes.
    running = start_in_thread(settings, also_accept=[k for k in (own, TEST_SECRET) if k])
    if not own:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "sparkmark")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", resolve_token(settings.api_token_value, settings.home))
    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", running.url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")
    _fresh_boto3()
    try:
        yield boto3.session.Session().client("glue", endpoint_url=running.url)
    finally:
        running.stop()


@pytest.fixture
def run_glue_job(spark: Any, sparkmark_home: Path) -> Any:
    """``run_glue_job(script, JOB_NAME=…, **arguments)``: run a Glue script as
    ``sparkmark run`` would, on the session's Spark and the test's home; returns a
    ``GlueJobRun`` (its run record, what each source read, its bookmark, its outputs)."""
    from .glue_job import GlueJobRun, run_glue_script

    def run(
        script: str | Path, JOB_NAME: str | None = None, **arguments: Any
    ) -> GlueJobRun:  # Glue's spelling
        _fresh_boto3()  # the script's clients find this test's credentials, not an earlier test's
        return run_glue_script(script, JOB_NAME, **arguments)

    return run
