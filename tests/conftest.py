"""Shared fixtures: one SparkSession per test session, real state stores, real files."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import uuid
from pathlib import Path
from urllib.parse import urlencode

import psycopg
import pytest
from pyspark.sql import SparkSession

from sparkmark import Job
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings
from sparkmark.spark import class_archive_options, hive_confs, session_jars

# The Spark drivers of the processes the tests start compile with C1 alone: each lives a
# few seconds, and C2's compiler threads would compete with it for this machine's two
# cores (a small `sparkmark run`: 9.9 s → 7.7 s). The suite's own session lives for the
# whole run and keeps C2, which its thousand small jobs repay (docs/benchmarks.md, round
# 9, third part). SPARK_SUBMIT_OPTS is what Spark's launcher adds to a driver's command
# line; a user's own value is kept, and then applies to the suite's session too.
SHORT_DRIVER = "-XX:TieredStopAtLevel=1"
os.environ.setdefault("SPARK_SUBMIT_OPTS", SHORT_DRIVER)
# The runtimes `make runtimes` adds (the Glue 5.0 one), shared by every test's home.
os.environ.setdefault("SPARKMARK_RUNTIMES_DIR", str(Path(__file__).resolve().parent.parent / ".runtimes"))


@contextlib.contextmanager
def long_lived_driver():
    """Spark drivers started within keep the JVM's C2 compiler (a driver that runs many
    jobs: the suite's own session, a fixture's driver for several cases). The launcher
    reads SPARK_SUBMIT_OPTS once, as the driver's JVM starts."""
    ours = os.environ.get("SPARK_SUBMIT_OPTS") == SHORT_DRIVER
    if ours:
        del os.environ["SPARK_SUBMIT_OPTS"]
    try:
        yield
    finally:
        if ours:
            os.environ["SPARK_SUBMIT_OPTS"] = SHORT_DRIVER


PG_DSN = os.environ.get("SPARKMARK_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")

# Fixtures that bring a JVM, a database server, a broker, a server process or a browser:
# a test that uses none of them (and is not marked slow) is part of `make test-fast`.
HEAVY_FIXTURES = frozenset(
    {
        "spark", "kafka_broker", "s3_server", "browser", "pg_schemas", "store", "runner", "any_runner",
        "closable_database", "pg_table", "endpoint", "glue", "console", "project", "s3env", "old_store",
        "pg_database", "delta_runs",
    }
)  # fmt: skip


# The end-to-end core also run on the Glue 5.0 runtime (Spark 3.5: `make test-glue5`):
# bookmarked files and S3, JDBC, the Glue façade, the catalog, one streaming job, the
# Iceberg and Delta jobs of AWS's pages, and the corpus of public Glue scripts.
CORE35_MODULES = frozenset(
    {
        "test_file_bookmarks.py",
        "test_object_storage.py",
        "test_jdbc.py",
        "test_glue_facade.py",
        "test_catalog.py",
        "test_table_formats.py",
        "test_script_corpus.py",  # the public Glue scripts the tests run
        "test_glue_scripts.py",
    }
)
CORE35_TESTS = frozenset(
    {"test_streaming_kafka.py::test_glue_streaming_script_runs_until_caught_up_and_again"}
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = Path(str(item.fspath)).name
        if module in CORE35_MODULES or f"{module}::{item.name}" in CORE35_TESTS:
            item.add_marker(pytest.mark.core35)
        if item.get_closest_marker("slow") or item.get_closest_marker("cluster"):
            continue
        if HEAVY_FIXTURES.isdisjoint(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.fast)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import sparkmark
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # nothing of the suite's Spark beyond loopback
    hive_home = tmp_path_factory.mktemp("hive")
    builder = SparkSession.builder.master("local[2]")
    confs = hive_confs(Settings.from_env({"SPARKMARK_HOME": str(hive_home)}))
    class_path = ":".join(session_jars(Settings.from_env()))
    archive = class_archive_options(
        Settings.from_env(), class_path, build=True
    )  # as every driver sparkmark starts
    confs["spark.driver.extraJavaOptions"] = f"{confs['spark.driver.extraJavaOptions']} {archive}".strip()
    for key, value in confs.items():
        builder = builder.config(key, value)
    builder = (
        builder.appName("sparkmark-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraClassPath", class_path)
        .config("spark.hadoop.fs.s3.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem")
    )
    with long_lived_driver():
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real single-node Kafka broker (KRaft) on 127.0.0.1, from `make jars`."""
    from sparkmark.devservices.kafka import start_kafka

    broker = start_kafka(tmp_path_factory.mktemp("kafka"), Settings.from_env().jars_dir)
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3 API server (moto's server mode) on 127.0.0.1, reached over HTTP."""
    from sparkmark.devservices.s3 import start_s3

    server = start_s3(tmp_path_factory.mktemp("s3"))
    yield server
    server.stop()


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # this machine's network is closed: no calls out
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, driven by Playwright (never a downloaded browser)."""
    if not CHROMIUM.exists():
        pytest.fail("Chromium is not installed: run `make browser` (Debian's chromium and chromium-driver)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@contextlib.contextmanager
def watched_tab(browser, width: int, height: int):
    """A tab in a fresh browser context; a script error on any page it opened fails the
    test that used it."""
    context = browser.new_context(viewport={"width": width, "height": height})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    yield tab
    context.close()
    assert errors == [], errors  # no script error on any page


@pytest.fixture(autouse=True)
def sparkmark_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("SPARKMARK_HOME", str(home))
    monkeypatch.delenv("SPARKMARK_STATE_URL", raising=False)
    monkeypatch.delenv("SPARKMARK_TEMP_DIR", raising=False)
    return home


@pytest.fixture(scope="session")
def pg_schemas():
    """Makes PostgreSQL schemas for tests, each a clean state store; all dropped at the end."""
    made: list[str] = []

    def make() -> str:
        name = f"sm_test_{uuid.uuid4().hex[:10]}"
        try:
            with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f'CREATE SCHEMA "{name}"')
        except psycopg.OperationalError as exc:
            pytest.fail(f"PostgreSQL at {PG_DSN} is not reachable: {exc}")
        made.append(name)
        return name

    yield make
    if made:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            for name in made:
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def pg_url(schema: str) -> str:
    base = PG_DSN.replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}?options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    """The state store on each backend: SQLite in a temp folder, and the real PostgreSQL."""
    if request.param == "sqlite":
        s = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    else:
        s = StateStore(pg_url(request.getfixturevalue("pg_schemas")()))
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path):
    s = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    yield s
    s.close()


@pytest.fixture
def job_name():
    return f"job_{uuid.uuid4().hex[:8]}"


class Runner:
    """Starts runs of one job against one store and Spark session."""

    def __init__(self, store: StateStore, spark: SparkSession, name: str, tmp_path: Path):
        self.store, self.spark, self.name = store, spark, name
        self.temp_dir = str(tmp_path / "tempdir")

    def start(self, option: str = "job-bookmark-enable", *extra: str) -> Job:
        argv = [
            "job.py",
            "--JOB_NAME",
            self.name,
            "--job-bookmark-option",
            option,
            "--TempDir",
            self.temp_dir,
            *extra,
        ]
        # Each run resolves the environment as a process started now would.
        return Job.from_args(argv, spark=self.spark, store=self.store, settings=Settings.from_env())

    def run(
        self,
        path,
        option: str = "job-bookmark-enable",
        *extra: str,
        ctx: str = "src",
        fmt: str = "json",
        **options,
    ) -> tuple[list, Job]:
        """One whole run: read, collect the ids, commit."""
        job = self.start(option, *extra)
        df = job.read_files(str(path), format=fmt, ctx=ctx, **options)
        rows = ids(df)
        job.commit()
        return rows, job


@pytest.fixture
def runner(sqlite_store, spark, job_name, tmp_path):
    return Runner(sqlite_store, spark, job_name, tmp_path)


@pytest.fixture
def any_runner(store, spark, job_name, tmp_path):
    return Runner(store, spark, job_name, tmp_path)


def write_json(path: Path, ids_: list[int], mtime: float | None = None, **extra) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for i in ids_:
            out.write(json.dumps({"id": i, **extra}) + "\n")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def ids(df) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect()) if "id" in df.columns else []


def goto(page, running, path: str) -> None:
    """Open a console page signed in, as a user does: the sign-in URL the console prints,
    sent on to the page."""
    page.goto(running.signin_url + "&" + urlencode({"next": path}))
