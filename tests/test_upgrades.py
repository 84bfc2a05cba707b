"""State stores written by earlier sparkmark releases open in this one with every record.

Each fixture under tests/fixtures/stores was made by running the sparkmark of one commit
in this repository's history (scripts/old_stores.sh): its own `make demo` (two bookmarked
runs with new files between them; from later commits a crawl, a job on the catalog and a
workflow with data quality) and, where that commit had them, the service records of
tests/fixtures/stores/services.py. There is one fixture per bookmark schema version
found in the history, each as a SQLite file and as a PostgreSQL dump.

Opening one with today's code must migrate every component to this release's version,
keep every row of every table it had (rows are compared by their old columns), and give
the same answers through today's stores: runs, bookmarks and their files, outputs,
catalog tables and partitions, crawls, workflow runs, quality results, sessions,
connections, definitions and the rest.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, create_engine, inspect, select

from sparkmark.app.tags import TagStore
from sparkmark.athena.records import AthenaStore
from sparkmark.catalog.kept_documents import KeptDocuments
from sparkmark.catalog.schema_registry import SchemaRegistryStore
from sparkmark.catalog.store import CatalogStore
from sparkmark.connections.records import ConnectionStore
from sparkmark.crawler.classifiers import ClassifierStore
from sparkmark.crawler.store import CrawlerStore
from sparkmark.engine import schema as t
from sparkmark.engine.store import StateStore
from sparkmark.errors import StateStoreError
from sparkmark.quality.store import QualityStore
from sparkmark.quality_service.records import QualityServiceStore
from sparkmark.runtime.metric_store import MetricStore
from sparkmark.sessions.records import SessionStore
from sparkmark.state import components
from sparkmark.workflow.registry import Registry
from sparkmark.workflow.store import WorkflowStore

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "stores"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.sqlite"))
# Every store whose module registers a component.
STORES = (
    AthenaStore,
    TagStore,
    KeptDocuments,
    SchemaRegistryStore,
    CatalogStore,
    ClassifierStore,
    CrawlerStore,
    ConnectionStore,
    MetricStore,
    SessionStore,
    QualityStore,
    QualityServiceStore,
    Registry,
    WorkflowStore,
)

PG_ADMIN = os.environ.get("SPARKMARK_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def test_there_is_a_fixture_for_every_bookmark_schema_version():
    assert [int(n.removeprefix("v")) for n in NAMES] == list(range(1, t.SCHEMA_VERSION + 1))
    assert all((FIXTURES / f"{n}.pgsql").exists() for n in NAMES)


@pytest.fixture
def pg_database():
    """Makes PostgreSQL databases from fixture dumps; dropped at the end."""
    import psycopg

    made: list[str] = []

    def make(dump: Path) -> str:
        name = f"sm_upgrade_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        base = PG_ADMIN.rsplit("/", 1)[0]
        subprocess.run(
            ["psql", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(dump), f"{base}/{name}"],
            check=True,
            capture_output=True,
        )
        return f"{base}/{name}".replace("postgresql://", "postgresql+psycopg://", 1)

    yield make
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        for name in made:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def old_store(request, tmp_path):
    """A function giving the URL of a fresh copy of a fixture store on the backend."""

    def make(name: str) -> str:
        if request.param == "sqlite":
            copy = tmp_path / f"{name}.db"
            shutil.copyfile(FIXTURES / f"{name}.sqlite", copy)
            return f"sqlite:///{copy}"
        return request.getfixturevalue("pg_database")(FIXTURES / f"{name}.pgsql")

    return make


def raw_rows(url: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of every sparkmark table, read without sparkmark."""
    engine = create_engine(url)
    try:
        meta = MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            return {
                name: [dict(r._mapping) for r in conn.execute(select(table))]
                for name, table in meta.tables.items()
                if name.startswith("sm_")
            }
    finally:
        engine.dispose()


def open_all(url: str) -> tuple[StateStore, dict[str, Any]]:
    state = StateStore(url)
    return state, {cls.__name__: cls(state) for cls in STORES}


def versions(url: str) -> dict[str, str]:
    return {r["name"]: r["value"] for r in raw_rows(url)["sm_schema_info"]}


def set_version(url: str, key: str, version: int) -> None:
    """Make the store say a component is at ``version``, as a newer release would leave it."""
    engine = create_engine(url)
    with engine.begin() as conn:
        info = components.schema_info
        conn.execute(info.update().where(info.c.name == key).values(value=str(version)))
    engine.dispose()


def file_entries(rows: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, str], dict[str, tuple]]:
    """Each (job, ctx)'s latest entry per path, from a store before schema 10."""
    sources = {r["source_id"]: (r["job_name"], r["ctx"]) for r in rows["sm_sources"]}
    found: dict[tuple[str, str], dict[str, tuple]] = {}
    for r in sorted(rows["sm_file_entries"], key=lambda r: r["version"]):
        found.setdefault(sources[r["source_id"]], {})[r["path"]] = (r["version"], r["mtime_ms"], r["size"])
    return found


def file_entries_now(state: StateStore, rows) -> dict[tuple[str, str], dict[str, tuple]]:
    found = {}
    for source in rows["sm_sources"]:
        job, ctx = source["job_name"], source["ctx"]
        latest = state.latest_version(job)
        assert latest is not None, f"job {job} lost its bookmark"
        files = state.processed_files(job, ctx, latest.lineage)
        found[(job, ctx)] = {p: (e.version, e.mtime_ms, e.size) for p, e in files.items()}
    return found


@pytest.mark.parametrize("name", NAMES)
def test_an_old_store_opens_with_every_record(name, old_store):
    url = old_store(name)
    before = raw_rows(url)
    assert before["sm_runs"], "a fixture holds the demo's runs"
    old_files = file_entries(before) if "sm_file_entries" in before else None

    state, stores = open_all(url)
    try:
        # Every component is at this release's version.
        found = versions(url)
        for component in components.registered():
            assert found.get(component.key) == str(component.version), component.name
        old_info = {r["name"]: r["value"] for r in before["sm_schema_info"]}
        if "store_id" in old_info:  # from schema 5 on: a store keeps its identity
            assert found["store_id"] == old_info["store_id"]

        # Every table and column this release declares is there: no step was missed.
        engine = create_engine(url)
        try:
            found_tables = inspect(engine)
            names = set(found_tables.get_table_names())
            for component in components.registered():
                for table in component.tables:
                    assert table.name in names, f"{component.name}: {table.name} is missing"
                    have = {c["name"] for c in found_tables.get_columns(table.name)}
                    assert {c.name for c in table.columns} <= have, f"{component.name}: {table.name}"
        finally:
            engine.dispose()

        # Every row of every table is still there, with the values it had.
        after = raw_rows(url)
        for table, rows in before.items():
            if table in ("sm_file_entries", "sm_schema_info"):
                continue
            assert table in after, f"{table} is gone"
            kept = [{k: r[k] for k in rows[0]} for r in after[table]] if rows else []
            for row in rows:
                assert row in kept, f"a row of {table} was lost or changed: {row}"

        # The same answers through today's stores.
        for run in before["sm_runs"]:
            record = state.get_run(run["run_id"])
            assert (record.job_name, record.state.value) == (run["job_name"], run["state"])
        for job in {r["job_name"] for r in before["sm_bookmark_versions"]}:
            newest = max(r["version"] for r in before["sm_bookmark_versions"] if r["job_name"] == job)
            assert state.latest_version(job).version == newest
        if old_files is not None:
            assert file_entries_now(state, before) == old_files
        else:
            assert all(files for files in file_entries_now(state, before).values())
        demo = {p for files in file_entries_now(state, before).values() for p in files if "/orders/" in p}
        assert len(demo) == 14, "the demo's two runs processed 12 files, then 2 new ones"
        for output in before.get("sm_outputs", []):
            kept_output = {(o.run_id, o.seq): o for o in state.outputs(output["job_name"])}
            assert kept_output[(output["run_id"], output["seq"])].state.value == output["state"]

        catalog = stores["CatalogStore"]
        for table in before.get("sm_catalog_tables", []):
            now = catalog.table(table["database"], table["name"])
            assert now.location == table["location"]
            parts = [p for p in before["sm_catalog_partitions"] if p["table"] == table["name"]]
            assert len(catalog.partitions(table["database"], table["name"])) == len(parts)
        for crawl in before.get("sm_crawls", []):
            assert stores["CrawlerStore"].crawl(crawl["crawl_id"]).state == crawl["state"]
        for run in before.get("sm_wf_runs", []):
            assert stores["WorkflowStore"].workflow_run(run["run_id"]).status.value == run["status"]
        for job in {r["job_name"] for r in before.get("sm_quality_results", [])}:
            count = sum(1 for r in before["sm_quality_results"] if r["job_name"] == job)
            assert len(stores["QualityStore"].results(job, limit=1000)) == count
        for session in before.get("sm_sessions", []):
            kept_session = stores["SessionStore"].get(session["id"])
            assert kept_session.status == session["status"]
            outputs = [s.output for s in stores["SessionStore"].statements(session["id"])]
            assert outputs == [
                json.loads(s["output"]) if s["output"] else None
                for s in before["sm_session_statements"]
                if s["session_id"] == session["id"]
            ]
        for connection in before.get("sm_connections", []):
            assert stores["ConnectionStore"].get(connection["name"]).url == connection["url"]
        for entry in before.get("sm_definitions", []):
            kept_entry = stores["Registry"].get(entry["kind"], entry["name"])
            assert kept_entry is not None and kept_entry.glue == json.loads(entry["glue"])
        for tag in before.get("sm_tags", []):
            kind, _, resource = tag["resource"].partition("/")
            assert stores["TagStore"].tags(kind, resource)[tag["tag_key"]] == tag["tag_value"]
        if before.get("sm_metric_data"):
            points = stores["MetricStore"].datapoints(
                "Glue",
                "glue.driver.aggregate.numCompletedTasks",
                (("JobName", "fixture_job"),),
                start=datetime(2026, 11, 20, tzinfo=UTC),
                end=datetime(2026, 11, 21, tzinfo=UTC),
            )
            assert [p.total for p in points] == [7.0]
        for doc in before.get("sm_catalog_documents", []):
            assert stores["KeptDocuments"].get(doc["kind"], doc["name"]).document == json.loads(
                doc["document"]
            )
        for schema in before.get("sm_schemas", []):
            assert (
                stores["SchemaRegistryStore"].schema(schema["registry"], schema["name"]).name
                == schema["name"]
            )
        for classifier in before.get("sm_classifiers", []):
            assert classifier["name"] in stores["ClassifierStore"].all()
    finally:
        state.close()


def test_the_newest_fixture_has_every_component_and_service_record():
    """The fixture of the current schema version was written with every component, so the
    test above reads back each kind of record at least once."""
    rows = raw_rows(f"sqlite:///{FIXTURES / NAMES[-1]}.sqlite")
    for table in (
        "sm_outputs",
        "sm_crawls",
        "sm_catalog_tables",
        "sm_wf_runs",
        "sm_quality_results",
        "sm_sessions",
        "sm_session_statements",
        "sm_connections",
        "sm_definitions",
        "sm_tags",
        "sm_metric_data",
        "sm_catalog_documents",
        "sm_schemas",
        "sm_classifiers",
    ):
        assert rows.get(table), f"{table} is empty in {NAMES[-1]}"


def test_a_store_from_a_newer_sparkmark_is_refused_and_left_as_it_is(old_store):
    url = old_store(NAMES[-1])
    state, _ = open_all(url)
    state.close()
    set_version(url, "catalog_schema_version", 99)
    before = raw_rows(url)
    state = StateStore(url)
    with pytest.raises(StateStoreError) as refused:
        open_all(url)
    state.close()
    message = str(refused.value)
    assert "\n" not in message
    assert "catalog tables are at version 99, newer than this sparkmark understands" in message
    assert raw_rows(url) == before


KILLED_CHILD = """
import os, signal, sys
from sparkmark.engine import schema
original = schema.MIGRATIONS[{step}]
def dies_after(conn):
    original(conn)
    os.kill(os.getpid(), signal.SIGKILL)  # inside the migration's transaction
schema.MIGRATIONS[{step}] = dies_after
from sparkmark.engine.store import StateStore
StateStore(sys.argv[1])
"""


@pytest.mark.parametrize("step", [5, 10])
def test_a_migration_killed_midway_is_finished_by_the_next_open(step, old_store):
    """kill -9 inside the bookmark migration's transaction (after step 5 added a table
    and a column; after step 10 moved every file entry and dropped the old table): the
    store is left at the version before, and the next open migrates it with every
    entry."""
    url = old_store("v04")
    before = raw_rows(url)
    child = subprocess.run(
        [sys.executable, "-c", KILLED_CHILD.format(step=step), url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert versions(url)["schema_version"] == "4"
    assert raw_rows(url) == before

    state, _ = open_all(url)
    try:
        assert versions(url)["schema_version"] == str(t.SCHEMA_VERSION)
        assert file_entries_now(state, before) == file_entries(before)
    finally:
        state.close()


def sparkmark(url: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPARKMARK_STATE_URL": url, "SPARKMARK_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "sparkmark", *args], env=env, capture_output=True, text=True, check=False
    )


def test_store_check_and_backup_around_an_upgrade(old_store, tmp_path, pg_database):
    """What docs/deploy.md tells a user to run: `store check` says what opening will do
    and changes nothing; `store backup` keeps a copy that holds every row; after the
    upgrade `store check` says current; a component from a newer release fails it."""
    url = old_store("v04")
    before = raw_rows(url)
    checked = sparkmark(url, tmp_path, "store", "check", "--json")
    assert checked.returncode == 0, checked.stderr
    report = {c["component"]: c for c in json.loads(checked.stdout)["components"]}
    assert report["bookmarks"]["action"] == f"migrated from version 4 to {t.SCHEMA_VERSION} when next opened"
    assert report["bookmarks"]["tables"]["sm_runs"] == len(before["sm_runs"])
    assert report["sessions"]["action"] == "not created yet: made when first used"
    assert raw_rows(url) == before  # checking changed nothing

    backup = tmp_path / "before-upgrade.backup"
    made = sparkmark(url, tmp_path, "store", "backup", str(backup))
    assert made.returncode == 0, made.stderr
    assert backup.stat().st_mode & 0o077 == 0
    if url.startswith("sqlite"):
        copy_url = f"sqlite:///{backup}"
    else:
        copy_url = pg_database(FIXTURES / "empty.pgsql")
        plain = copy_url.replace("postgresql+psycopg://", "postgresql://", 1)
        subprocess.run(
            ["pg_restore", "--no-owner", "-d", plain, str(backup)], check=True, capture_output=True
        )
    assert raw_rows(copy_url) == before
    again = sparkmark(url, tmp_path, "store", "backup", str(backup))
    assert again.returncode == 1 and "exists" in again.stderr

    state, _ = open_all(url)
    state.close()
    after = json.loads(sparkmark(url, tmp_path, "store", "check", "--json").stdout)
    assert {c["action"] for c in after["components"]} == {"current"}

    set_version(url, "sessions_schema_version", 7)
    newer = sparkmark(url, tmp_path, "store", "check")
    assert newer.returncode == 1
    assert "components newer than this sparkmark: sessions" in newer.stderr


def test_a_workflow_store_from_before_supervisors_gains_them(tmp_path):
    """Workflow tables written in the hours before supervisors beat (recorded at version 1,
    with no `host` on actions and no supervisors' table; no fixture commit falls there):
    step 2 adds both, keeping the action's row; step 3 adds a run's own execution class,
    which a run queued before it has none of."""
    from sparkmark.workflow import records

    url = f"sqlite:///{tmp_path / 'wf.db'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        components.schema_info.create(conn)
        conn.execute(components.schema_info.insert().values(name="workflow_schema_version", value="1"))
        old = [records.triggers, records.firings, records.workflow_runs, records.events, records.meta]
        records.metadata.create_all(conn, tables=old)
        conn.exec_driver_sql(
            "CREATE TABLE sm_wf_actions (action_id VARCHAR(96) PRIMARY KEY, kind VARCHAR(8) NOT NULL, "
            "name VARCHAR(255) NOT NULL, attempt INTEGER NOT NULL, first_id VARCHAR(96) NOT NULL, "
            "state VARCHAR(16) NOT NULL, final BOOLEAN NOT NULL, workflow_run_id VARCHAR(80), "
            "trigger VARCHAR(255), arguments TEXT NOT NULL, timeout_minutes FLOAT, supervisor VARCHAR(255), "
            "pid INTEGER, queued_at DATETIME NOT NULL, started_at DATETIME, ended_at DATETIME, error TEXT, "
            "log_path TEXT)"
        )
        conn.exec_driver_sql(
            "INSERT INTO sm_wf_actions (action_id, kind, name, attempt, first_id, state, final, arguments, "
            "queued_at) VALUES ('jr_old', 'JOB', 'nightly', 0, 'jr_old', 'SUCCEEDED', 1, '{}', "
            "'2026-11-23 10:00:00')"
        )
    engine.dispose()
    state = StateStore(url)
    try:
        store = WorkflowStore(state)
        found = inspect(state.engine)
        assert {"host", "execution_class"} <= {c["name"] for c in found.get_columns("sm_wf_actions")}
        assert {"sm_wf_supervisors", "sm_wf_sealed_arguments"} <= set(found.get_table_names())
        (old,) = store.actions_of(kind="JOB", name="nightly")
        assert (old.action_id, old.execution_class) == ("jr_old", None)
        assert versions(url)["workflow_schema_version"] == "3"
    finally:
        state.close()
