"""Sessions and the pool without a JVM: how a statement runs and what it answers, the
session store, ``[pool]``, and which job runs a warm process may host."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.engine.store import StateStore
from sparkmark.errors import AlreadyExists, ArgumentError, ConfigError, NotFound
from sparkmark.pool.config import PoolConfig, load_pool_config, size_bytes
from sparkmark.sessions import statement
from sparkmark.sessions.manager import SessionManager
from sparkmark.sessions.records import (
    AVAILABLE,
    CANCELLED,
    PROVISIONING,
    READY,
    RUNNING,
    STOPPED,
    SessionStore,
)
from sparkmark.workflow.launcher import LaunchSpec, poolable

# ------------------------------------------------------------------ statements


def run(code: str, namespace: dict, number: int) -> dict:
    """A statement's output as Glue's API shows it."""
    return statement.run(code, namespace, number).document()


def test_a_statement_shows_what_it_prints_and_its_last_expression():
    ns: dict = {}
    out = run("x = 2\nprint('hello')\nx * 21", ns, 0)
    assert out == {"ExecutionCount": 0, "Status": "ok", "Data": {"TextPlain": "hello\n42\n"}}
    assert ns["x"] == 2 and ns["_"] == 42


def test_a_last_line_that_is_not_an_expression_shows_nothing_more():
    assert run("y = 1", {}, 3)["Data"]["TextPlain"] == ""
    assert run("None", {}, 3)["Data"]["TextPlain"] == ""  # as a notebook shows None
    assert run("", {}, 3) == {"ExecutionCount": 3, "Status": "ok", "Data": {"TextPlain": ""}}


def test_variables_persist_between_statements_of_one_namespace_only():
    first: dict = {}
    run("secret = 7", first, 0)
    assert run("secret + 1", first, 1)["Data"]["TextPlain"] == "8\n"
    other = run("secret", {}, 0)
    assert other["Status"] == "error" and other["ErrorName"] == "NameError"


def test_an_error_answers_with_its_name_value_and_the_statements_own_frames():
    out = run("def f():\n    raise ValueError('bad value 3')\nprint('before')\nf()", {}, 5)
    assert out["Status"] == "error"
    assert out["ErrorName"] == "ValueError"
    assert out["ErrorValue"] == "bad value 3"
    assert out["Data"]["TextPlain"] == "before\n"
    assert out["Traceback"][0] == "Traceback (most recent call last):\n"
    assert any('"<statement>-5", line 2, in f' in line for line in out["Traceback"])
    assert not any("sparkmark" in line for line in out["Traceback"])


def test_a_syntax_error_names_its_line():
    out = run("x = (1,\n", {}, 0)
    assert out["Status"] == "error" and out["ErrorName"] == "SyntaxError"
    assert out["Traceback"] and "SyntaxError" in out["Traceback"][-1]


def test_an_exception_without_a_message_still_has_a_value():
    out = run("raise KeyError()", {}, 0)
    assert out["ErrorName"] == "KeyError" and out["ErrorValue"] == "KeyError"


def test_a_keyboard_interrupt_is_left_to_the_caller():
    with pytest.raises(KeyboardInterrupt):
        run("raise KeyboardInterrupt", {}, 0)


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_an_integer_expression_shows_its_repr(value):
    assert run(repr(value), {}, 0)["Data"]["TextPlain"] == f"{value!r}\n"


# ------------------------------------------------------------------ the session store


@pytest.fixture
def sessions(tmp_path) -> SessionStore:
    return SessionStore(StateStore(f"sqlite:///{tmp_path / 'state.db'}"))


def test_a_session_record_keeps_its_definition_with_secrets_masked(sessions):
    made = sessions.create(
        "s1",
        {"Command": {"Name": "glueetl"}, "DefaultArguments": {"--db_password": "hunter2", "--day": "mon"}},
        "host:1",
    )
    assert made.status == PROVISIONING
    got = sessions.get("s1")
    assert got.definition["DefaultArguments"]["--day"] == "mon"
    assert "hunter2" not in str(got.definition)
    with pytest.raises(AlreadyExists):
        sessions.create("s1", {}, "host:1")
    with pytest.raises(NotFound):
        sessions.get("nope")


def test_statements_are_numbered_from_zero_and_their_states_move(sessions):
    sessions.create("s1", {}, "host:1")
    sessions.set_status("s1", READY, pid=42)
    assert sessions.get("s1").ready_on is not None and sessions.get("s1").pid == 42
    assert [sessions.add_statement("s1", "1"), sessions.add_statement("s1", "2")] == [0, 1]
    sessions.update_statement("s1", 0, state=RUNNING)
    sessions.update_statement("s1", 0, progress=0.4)
    assert sessions.statement("s1", 0).progress == 0.4
    sessions.update_statement("s1", 0, state=AVAILABLE, output={"Status": "ok"})
    done = sessions.statement("s1", 0)
    assert done.progress == 1.0 and done.output == {"Status": "ok"}
    assert done.started_on is not None and done.completed_on is not None
    sessions.update_statement("s1", 0, progress=0.6)  # a sample that arrives after the end
    assert sessions.statement("s1", 0).progress == 1.0
    assert [s.id for s in sessions.unfinished_statements("s1")] == [1]
    sessions.update_statement("s1", 1, state=CANCELLED)
    assert sessions.unfinished_statements("s1") == []
    sessions.set_status("s1", STOPPED)
    assert sessions.get("s1").completed_on is not None
    sessions.delete("s1")
    with pytest.raises(NotFound):
        sessions.statement("s1", 0)


def test_a_stop_asked_for_elsewhere_is_recorded(sessions):
    sessions.create("s1", {}, "host:1")
    assert not sessions.get("s1").stop_requested
    sessions.request_stop("s1")
    assert sessions.get("s1").stop_requested
    with pytest.raises(NotFound):
        sessions.request_stop("missing")


# ------------------------------------------------------------------ [pool]


def test_pool_sizes_and_defaults(tmp_path):
    assert (
        size_bytes("2g") == 2 * 1024**3 and size_bytes("512m") == 512 * 1024**2 and size_bytes("100") == 100
    )
    with pytest.raises(ValueError, match="not a size"):
        size_bytes("lots")
    assert load_pool_config(tmp_path / "missing.toml") == PoolConfig()
    config = tmp_path / "sparkmark.toml"
    config.write_text('[pool]\nsize = 2\nmemory = "3g"\nprestart = true\n')
    loaded = load_pool_config(config)
    assert (loaded.size, loaded.memory, loaded.prestart, loaded.jobs) == (2, "3g", True, True)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("size = -1", "size"),
        ('memory = "big"', "memory"),
        ("colour = 1", "colour"),
        ("max_runs = 0", "max_runs"),
    ],
)
def test_a_wrong_pool_setting_is_one_line_naming_it(tmp_path, body, named):
    config = tmp_path / "sparkmark.toml"
    config.write_text(f"[pool]\n{body}\n")
    with pytest.raises(ConfigError) as found:
        load_pool_config(config)
    message = str(found.value)
    assert "\n" not in message and named in message and "[pool]" in message and str(config) in message


# ------------------------------------------------------------------ which runs a warm process hosts


def spec(**request) -> LaunchSpec:
    run = {"script": "job.py", "arguments": ["--JOB_NAME", "j"], **request}
    return LaunchSpec("jr_1", "JOB", "j", 0, {"run": run}, {}, Path("/tmp/x.log"))


@pytest.mark.parametrize(
    ("request_fields", "hosted"),
    [
        ({}, True),
        ({"spark_master": "local[*]"}, True),
        ({"spark_master": "spark://h:7077"}, False),
        ({"spark_conf": {"spark.sql.shuffle.partitions": "4"}}, True),  # set on the run's session
        ({"spark_conf": {"spark.sql.extensions": "x.Ext"}}, False),  # fixed when Spark starts
        ({"spark_conf": {"spark.sql.catalog.lake": "x.Catalog"}}, False),
        ({"spark_conf": {"spark.executor.memory": "2g"}}, False),
        ({"remote": "sc://h:15002"}, False),
        ({"until_caught_up": True}, False),
        ({"max_batches": 3}, False),
        ({"arguments": ["--JOB_NAME", "j", "--datalake-formats", "delta"]}, False),
        ({"arguments": ["--JOB_NAME", "j", "--conf", "spark.x=1"]}, False),
        ({"arguments": ["--JOB_NAME", "j", "--note", "--conf"]}, True),  # a value, not a parameter
    ],
)
def test_a_warm_process_hosts_batch_runs_whose_spark_is_the_pools(request_fields, hosted):
    assert poolable(spec(**request_fields), "local[*]") is hosted


def test_a_crawl_is_never_hosted():
    crawl = LaunchSpec("c1", "CRAWLER", "c", 0, {"argv": ["crawler", "run", "c"]}, {}, Path("/tmp/c.log"))
    assert poolable(crawl, "local[*]") is False


def test_session_arguments_that_shape_the_jvm_get_a_process_of_their_own(tmp_path):
    from types import SimpleNamespace

    manager = SessionManager.__new__(SessionManager)
    manager.settings = SimpleNamespace(aws_region=None, aws_endpoint_url_s3="http://127.0.0.1:9000")
    endpoint = {"AWS_ENDPOINT_URL_GLUE": "http://127.0.0.1:4321", "AWS_SECRET_ACCESS_KEY": "tok"}
    assert manager._jvm_settings({"--enable-glue-datacatalog": "true"}, endpoint) is None
    env = manager._jvm_settings(
        {"--datalake-formats": "delta", "--conf": "spark.sql.ansi.enabled=false"}, endpoint
    )
    assert env is not None
    assert env["SPARKMARK_DATALAKE_FORMATS"] == "delta"
    assert '"spark.sql.ansi.enabled": "false"' in env["SPARKMARK_SPARK_CONF"]
    assert env["AWS_ENDPOINT_URL_GLUE"] == "http://127.0.0.1:4321"  # the process signs as the session does
    with pytest.raises(ArgumentError, match="--extra-jars"):
        manager._jvm_settings({"--extra-jars": "s3://b/x.jar"}, endpoint)


def test_a_sessions_iceberg_glue_catalog_is_pointed_at_the_endpoint_as_under_run():
    """AWS's documented --conf lines for Iceberg declare a GlueCatalog; in a session, as
    under `sparkmark run`, it talks to sparkmark's Glue endpoint and S3 endpoint (never
    AWS), unless its own settings say otherwise."""
    import json
    from types import SimpleNamespace

    manager = SessionManager.__new__(SessionManager)
    manager.settings = SimpleNamespace(aws_region="eu-west-1", aws_endpoint_url_s3="http://127.0.0.1:9000")
    conf = (
        "spark.sql.catalog.glue_catalog=org.apache.iceberg.spark.SparkCatalog "
        "--conf spark.sql.catalog.glue_catalog.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog "
        "--conf spark.sql.catalog.glue_catalog.warehouse=s3://lake/wh "
        "--conf spark.sql.catalog.glue_catalog.client.region=us-west-2"
    )
    env = manager._jvm_settings(
        {"--datalake-formats": "iceberg", "--conf": conf}, {"AWS_ENDPOINT_URL_GLUE": "http://127.0.0.1:4321"}
    )
    confs = json.loads(env["SPARKMARK_SPARK_CONF"])
    prefix = "spark.sql.catalog.glue_catalog."
    assert confs[prefix + "glue.endpoint"] == "http://127.0.0.1:4321"
    assert confs[prefix + "s3.endpoint"] == "http://127.0.0.1:9000"
    assert confs[prefix + "client.region"] == "us-west-2"  # the session's own setting stays
    assert confs[prefix + "warehouse"] == "s3://lake/wh"


# ------------------------------------------------------------------ timeouts and replacement, with stand-ins


class StandIn:
    """What the manager and the pool use of a warm process, without a process."""

    def __init__(
        self, pid: int = 7, *, alive: bool = True, runs: int = 0, rss: int = 0, dirty: str | None = None
    ):
        self.pid, self.runs, self.rss, self.dirty = pid, runs, rss, dirty
        self._alive = alive
        self.stopped = False
        self.error = None
        self.idle_since = 0.0

    @property
    def alive(self) -> bool:
        return self._alive and not self.stopped

    def listen(self, _listener) -> None:
        pass

    def send(self, _message) -> bool:
        return True

    def stop(self, grace_seconds: float = 0) -> None:
        self.stopped = True


class NoPool:
    def take(self):
        raise AssertionError("not used")


def manager_with(sessions: SessionStore, session_id: str, definition: dict) -> tuple[SessionManager, StandIn]:
    manager = SessionManager.__new__(SessionManager)  # no watcher thread: check_timeouts is called by hand
    import threading

    manager.store, manager.pool, manager.owner = sessions, NoPool(), "host:1"
    manager._processes, manager._lock, manager._closed = {}, threading.Lock(), threading.Event()
    manager._cancels, manager._born = {}, {}
    sessions.create(session_id, definition, "host:1")
    sessions.set_status(session_id, READY)
    process = StandIn()
    manager._processes[session_id] = process
    return manager, process


def backdate(sessions: SessionStore, session_id: str, minutes: float, *, created: bool = False) -> None:
    from datetime import timedelta

    from sqlalchemy import update

    from sparkmark.engine.schema import utcnow
    from sparkmark.sessions.records import sessions_table

    values = {"last_activity": utcnow() - timedelta(minutes=minutes)}
    if created:
        values["created_on"] = utcnow() - timedelta(minutes=minutes)
    with sessions.state.begin() as conn:
        conn.execute(update(sessions_table).where(sessions_table.c.id == session_id).values(**values))


def test_an_idle_session_times_out_after_its_idle_timeout(sessions):
    manager, process = manager_with(sessions, "idle", {"IdleTimeout": 5})
    backdate(sessions, "idle", 4)
    manager.check_timeouts()
    assert sessions.get("idle").status == READY and not process.stopped
    backdate(sessions, "idle", 6)
    manager.check_timeouts()
    found = sessions.get("idle")
    assert found.status == "TIMEOUT" and process.stopped
    assert "IdleTimeout of 5 minutes" in (found.error or "")


def test_a_busy_session_is_not_idle_but_still_ends_at_its_timeout(sessions):
    manager, process = manager_with(sessions, "busy", {"IdleTimeout": 1, "Timeout": 30})
    number = sessions.add_statement("busy", "long()")
    sessions.update_statement("busy", number, state=RUNNING)
    backdate(sessions, "busy", 10)
    manager.check_timeouts()
    assert sessions.get("busy").status == READY  # running a statement is not idle
    backdate(sessions, "busy", 31, created=True)
    manager.check_timeouts()
    assert sessions.get("busy").status == "TIMEOUT" and process.stopped
    assert sessions.statement("busy", number).state == CANCELLED  # what was running ends with it


def test_a_stop_asked_for_in_the_store_is_carried_out(sessions):
    manager, process = manager_with(sessions, "asked", {})
    sessions.request_stop("asked")
    manager.check_timeouts()
    assert sessions.get("asked").status == STOPPED and process.stopped


class SlowToStop(StandIn):
    """A process whose stop takes until the test lets it finish."""

    def __init__(self):
        super().__init__()
        import threading

        self.stopping, self.release = threading.Event(), threading.Event()

    def stop(self, grace_seconds: float = 0) -> None:
        self.stopping.set()
        assert self.release.wait(30)
        super().stop()


def test_a_session_created_again_under_a_deleted_id_is_not_ended_by_the_late_stop_of_the_one_before(sessions):
    """dbt-glue, finding its session stopped, calls StopSession, DeleteSession, then
    CreateSession with the same Id. The first session's stop finishes later than that;
    it must end that session only, never the new one of the same Id (which came up READY
    and was STOPPED a second later)."""
    import threading
    from types import SimpleNamespace

    processes = [SlowToStop(), StandIn(pid=8)]

    class Handing:
        config = SimpleNamespace(max_sessions=4)

        def take(self, cancel=None):
            return processes.pop(0)

    manager = SessionManager.__new__(SessionManager)
    manager.store, manager.pool, manager.owner = sessions, Handing(), "host:1"
    manager._processes, manager._lock, manager._closed = {}, threading.Lock(), threading.Event()
    manager._cancels, manager._born, manager._create_lock = {}, {}, threading.Lock()
    manager._finishing, manager.environment = {}, dict
    first, second = processes

    def provisioned(session_id: str, process) -> None:
        for _ in range(500):
            with manager._lock:
                if manager._processes.get(session_id) is process:
                    break
            threading.Event().wait(0.01)
        sessions.set_status(session_id, READY)

    manager.create("dbt", {"Command": {"Name": "glueetl"}})
    provisioned("dbt", first)
    before = set(threading.enumerate())
    manager.stop("dbt")
    stoppers = set(threading.enumerate()) - before  # the stop's own thread
    assert first.stopping.wait(10)  # the stop is under way, not finished
    manager.delete("dbt")
    manager.create("dbt", {"Command": {"Name": "glueetl"}})
    provisioned("dbt", second)
    first.release.set()  # the first session's stop now finishes
    for thread in stoppers:
        thread.join(timeout=10)
    assert not any(t.is_alive() for t in stoppers)
    again = sessions.get("dbt")
    assert again.status == READY and not second.stopped and first.stopped
    assert manager._processes["dbt"] is second
    number = sessions.add_statement("dbt", "1 + 1")
    assert sessions.statement("dbt", number).state == "WAITING"  # not cancelled by the late stop


def test_the_pool_keeps_a_process_after_a_job_only_while_it_is_fit(tmp_path):
    from sparkmark.pool.pool import Pool

    pool = Pool(PoolConfig(size=0, max_runs=3, max_memory="1g"), tmp_path)
    try:
        fit = StandIn(1, runs=1, rss=100 * 2**20)
        pool._busy.append(fit)
        pool.give_back(fit)
        assert pool._ready == [fit] and not fit.stopped
        unfit = [
            StandIn(2, runs=3),  # served its runs
            StandIn(3, rss=2 * 2**30),  # grew past max_memory
            StandIn(4, dirty="the run changed Spark's Hadoop settings"),
            StandIn(5, alive=False),  # died
        ]
        for process in unfit:
            pool._busy.append(process)
            pool.give_back(process)
            assert process not in pool._ready and process not in pool._busy
        import time

        deadline = time.monotonic() + 5  # each is stopped in a thread of its own
        while not all(p.stopped for p in unfit) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(p.stopped for p in unfit)
        assert pool._ready == [fit]
    finally:
        pool.close()


def test_a_session_deleted_through_another_server_has_its_process_stopped(sessions):
    manager, process = manager_with(sessions, "gone", {})
    sessions.delete("gone")
    manager.check_timeouts()
    assert process.stopped and "gone" not in manager._processes


def test_each_runtime_has_a_pool_of_its_own_that_starts_on_first_need_and_closes_with_the_servers(tmp_path):
    """Glue versions: the server's pool serves its own Spark; a runtime's processes are a
    sibling pool's, with the same settings, never started ahead, closed with the server's."""
    import sys

    from sparkmark.pool.pool import Pool

    pool = Pool(PoolConfig(size=0, max_sessions=2, prestart=True), tmp_path, {})
    try:
        assert pool.sibling(sys.executable) is pool and pool.python == sys.executable
        other = pool.sibling("/opt/runtimes/glue-5.0/bin/python")
        assert other is not pool and other.python == "/opt/runtimes/glue-5.0/bin/python"
        assert pool.sibling("/opt/runtimes/glue-5.0/bin/python") is other  # one per runtime
        assert other.config.max_sessions == 2 and other.config.prestart is False and other.home == tmp_path
        assert other.ready_count() == 0 and other._dormant
        # its processes' folders (each a metastore of its own) are named for its runtime
        assert (pool.tag, other.tag) == ("", "-glue-5.0")
    finally:
        pool.close()
    assert other.closed
