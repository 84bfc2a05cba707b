"""Exactly-once sinks in one process: staging, publishing with the commit, discarding
on failure, recovery of what an earlier run left, and what readers see meanwhile."""

from __future__ import annotations

import json
import os
import uuid

import psycopg
import pytest

from sparkmark.engine import publish
from sparkmark.engine.jdbc import parse_database
from sparkmark.engine.models import OutputState, RunState
from sparkmark.engine.ownership import ForeignOutput
from sparkmark.engine.publish import CONTROL, KEY_IN_NAME
from sparkmark.engine.store import StateStore
from sparkmark.errors import SinkError
from sparkmark.runtime import write_sink
from sparkmark.sinks.jdbc import JdbcSink

from .conftest import PG_DSN, Runner, write_json


def data_files(root) -> list[str]:
    """Visible data files under an output folder, relative, as a plain reader sees them."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        found += [
            os.path.relpath(os.path.join(folder, f), root) for f in files if not f.startswith(("_", "."))
        ]
    return sorted(found)


def plain_ids(spark, root) -> list[int]:
    return sorted(r["id"] for r in spark.read.parquet(str(root)).select("id").collect())


def test_output_is_published_with_the_commit_and_named_by_run(runner, spark, tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1, 2, 3], day="d1")
    write_json(src / "b.json", [4, 5], day="d2")
    job = runner.start()
    df = job.read_files(str(src), ctx="src")
    result = job.write_files(df, str(out), partition_by=["day"], ctx="out")
    assert result["files_staged"] >= 2
    assert data_files(out) == []  # nothing visible before the commit
    [record] = runner.store.outputs(runner.name)
    assert record.state is OutputState.STAGED
    assert (out / CONTROL / "runs" / f"{record.key}.pending").exists()
    job.commit()

    names = data_files(out)
    assert names and all(KEY_IN_NAME.search(n).group(0) == record.key for n in names)
    assert {n.split("/")[0] for n in names} == {"day=d1", "day=d2"}
    assert plain_ids(spark, out) == [1, 2, 3, 4, 5]
    assert runner.store.get_output(record.run_id, record.seq).state is OutputState.PUBLISHED
    assert not (out / CONTROL / "runs" / f"{record.key}.pending").exists()
    assert (out / CONTROL / "runs" / f"{record.key}.published").exists()
    assert not (out / CONTROL / "staging" / record.key).exists()

    write_json(src / "c.json", [6], day="d1")
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), partition_by=["day"], ctx="out")
    job.commit()
    assert plain_ids(spark, out) == [1, 2, 3, 4, 5, 6]


def test_failed_run_publishes_nothing_and_leaves_nothing(runner, tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1, 2])
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    job.fail(RuntimeError("the transform broke"))
    assert data_files(out) == []
    assert not any((out / CONTROL / "staging").iterdir())
    assert not list((out / CONTROL / "runs").glob("*.pending"))
    [record] = runner.store.outputs(runner.name)
    assert record.state is OutputState.DISCARDED
    # The bookmark did not move: the next run reads and publishes the same rows once.
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    job.commit()
    assert data_files(out) and len(data_files(out)) >= 1


def test_run_without_commit_discards_output_when_bookmarked(runner, tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1])
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    job.finish_without_commit()
    assert job.run.state is RunState.SUCCEEDED and data_files(out) == []
    # Bookmarks off: nothing re-reads the input, so the output is published.
    job = runner.start("job-bookmark-disable")
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    job.finish_without_commit()
    assert len(data_files(out)) == 1


def test_next_run_discards_a_crashed_uncommitted_write(runner, tmp_path, spark):
    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1, 2])
    crashed = runner.start()
    crashed.write_files(crashed.read_files(str(src), ctx="src"), str(out), ctx="out")
    # The process "dies": its run stays RUNNING with a lease nobody renews.
    crashed.job_run.abandon()
    runner.store.finish_run(crashed.run_id, RunState.FAILED, error="killed")
    job = runner.start()
    [old] = runner.store.outputs(runner.name, run_id=crashed.run_id)
    assert old.state is OutputState.DISCARDED
    assert not (out / CONTROL / "staging" / old.key).exists()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    job.commit()
    assert plain_ids(spark, out) == [1, 2]


def test_next_run_finishes_publishing_a_committed_write(runner, tmp_path, spark):
    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1, 2, 3])
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    [record] = job.job_run.outputs
    job.job_run.outputs.clear()  # the process dies right after the store commit, before publishing
    job.commit()
    assert data_files(out) == []
    assert runner.store.get_output(record.run_id, record.seq).state is OutputState.COMMITTED

    # Half a publish: one file moved, then the crash.
    plan = publish.FileOutputPlan.from_json(record.plan)
    src_rel, dst_rel = plan.files[0]
    (out / dst_rel).parent.mkdir(parents=True, exist_ok=True)
    os.rename(out / CONTROL / "staging" / record.key / src_rel, out / dst_rel)

    nxt = runner.start()  # recovery on start
    assert runner.store.get_output(record.run_id, record.seq).state is OutputState.PUBLISHED
    assert plain_ids(spark, out) == [1, 2, 3]
    nxt.commit()


def test_sparkmark_reader_skips_a_write_being_published(runner, spark, tmp_path):
    """A downstream bookmarked job never reads part of a write, and reads it once it is
    published."""
    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1, 2])
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), format="json", ctx="out")
    [record] = job.job_run.outputs
    job.job_run.outputs.clear()
    job.commit()
    plan = publish.FileOutputPlan.from_json(record.plan)
    publish.publish(plan)  # files in place …
    publish.mark_pending(plan)  # … but, as mid-publish, still marked pending

    down = type(runner)(runner.store, spark, "downstream_" + uuid.uuid4().hex[:6], tmp_path)
    rows, first = down.run(out, ctx="up")
    assert rows == []
    assert first.run.metrics["sources"]["up"]["files_unpublished"] == len(plan.files)
    publish.publish(plan)  # finished
    rows, _ = down.run(out, ctx="up")
    assert rows == [1, 2]


def test_overwrite_replaces_only_at_publish(runner, spark, tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1, 2], day="d1")
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), partition_by="day", ctx="out")
    job.commit()
    write_json(src / "b.json", [3], day="d2")
    job = runner.start()
    job.write_files(
        job.read_files(str(src), ctx="src"),
        str(out),
        partition_by="day",
        mode="overwrite_partitions",
        ctx="out",
    )
    assert plain_ids(spark, out) == [1, 2]  # still the old output until the commit
    job.commit()
    assert plain_ids(spark, out) == [1, 2, 3]  # d1 untouched, d2 written
    write_json(src / "c.json", [4], day="d1")
    job = runner.start()
    job.write_files(
        job.read_files(str(src), ctx="src"),
        str(out),
        partition_by="day",
        mode="overwrite_partitions",
        ctx="out",
    )
    job.commit()
    assert plain_ids(spark, out) == [3, 4]  # d1 replaced
    job = runner.start("job-bookmark-disable")
    job.write_files(job.read_files(str(src), ctx="src"), str(out), mode="overwrite", ctx="out")
    job.commit()
    assert plain_ids(spark, out) == [1, 2, 3, 4]


def test_sink_arguments_are_checked(runner, tmp_path):
    src = tmp_path / "in"
    write_json(src / "a.json", [1])
    job = runner.start()
    df = job.read_files(str(src), ctx="src")
    with pytest.raises(SinkError, match="overwrite_partitions needs partition_by"):
        job.write_files(df, str(tmp_path / "o"), mode="overwrite_partitions", ctx="o")
    with pytest.raises(SinkError, match="not columns"):
        job.write_files(df, str(tmp_path / "o"), partition_by=["nope"], ctx="o")
    job.write_files(df, str(tmp_path / "o"), ctx="o")
    with pytest.raises(SinkError, match="already written"):
        job.write_files(df, str(tmp_path / "o2"), ctx="o")
    job.commit()


# ------------------------------------------------------------------ JDBC


@pytest.fixture
def pg_table():
    name = f"eo_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, v text)")
    yield name
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {name}")


def pg_rows(sql: str) -> list[tuple]:
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


JDBC_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres"


def test_jdbc_write_merges_at_commit_once(runner, spark, tmp_path, pg_table, caplog):
    src = tmp_path / "in"
    write_json(src / "a.json", [1, 2, 3], v="x")
    job = runner.start()
    df = job.read_files(str(src), ctx="src")
    with caplog.at_level("INFO"):  # trust auth ignores the password; it must go nowhere
        staged = job.write_jdbc(df, url=JDBC_URL + "&password=s3cret-pw", table=pg_table, ctx="db")
    assert staged["rows_staged"] == 3
    assert pg_rows(f"SELECT count(*) FROM {pg_table}") == [(0,)]
    job.commit()
    assert pg_rows(f"SELECT id FROM {pg_table} ORDER BY id") == [(1,), (2,), (3,)]
    [record] = runner.store.outputs(runner.name)
    assert record.state is OutputState.PUBLISHED
    assert pg_rows(f"SELECT rows_applied FROM sm_applied_outputs WHERE output_key = '{record.key}'") == [(3,)]
    assert "s3cret-pw" not in json.dumps(record.plan) + record.target + caplog.text
    assert "s3cret-pw" not in json.dumps(runner.store.get_run(job.run_id).metrics)

    # A retry of the same write (a crash after the merge, before the state store heard
    # of it) finds its key and applies nothing.
    from sparkmark.outputs import publish_output

    again = publish_output(runner.store, record)
    assert again["already_applied"] is True
    assert pg_rows(f"SELECT count(*) FROM {pg_table}") == [(3,)]


def test_every_write_of_a_run_is_guarded_and_a_write_with_no_run_is_not(runner, spark, tmp_path, pg_table):
    """The one write path decides the ownership guard: in a run, a staged write and a
    write without a ctx alike are refused when the table holds writes of runs this store
    has no record of (writing on would apply again what those runs read); with no run
    nothing is bookmarked, so nothing can be replayed, and the write goes ahead."""
    src = tmp_path / "in"
    write_json(src / "a.json", [1, 2], v="x")
    other = StateStore(f"sqlite:///{tmp_path / 'other.db'}")
    first = Runner(other, spark, runner.name, tmp_path).start()
    first.write_jdbc(first.read_files(str(src), ctx="src"), url=JDBC_URL, table=pg_table, ctx="db")
    first.commit()
    other.close()

    job = runner.start()
    df = job.read_files(str(src), ctx="src")
    with pytest.raises(ForeignOutput, match=pg_table):
        job.write_jdbc(df, url=JDBC_URL, table=pg_table, ctx="db")
    with pytest.raises(ForeignOutput, match=pg_table):  # visible at once, refused all the same
        job.write_jdbc(df, url=JDBC_URL, table=pg_table)
    job.fail("refused")
    assert pg_rows(f"SELECT id FROM {pg_table} ORDER BY id") == [(1,), (2,)]

    more = spark.createDataFrame([(3, "y")], "id bigint, v string")
    written = write_sink(JdbcSink(parse_database(JDBC_URL), pg_table), more, None)
    assert written["rows_written"] == 1
    assert pg_rows(f"SELECT id FROM {pg_table} ORDER BY id") == [(1,), (2,), (3,)]


def test_jdbc_write_of_a_failed_run_is_dropped(runner, tmp_path, pg_table):
    src = tmp_path / "in"
    write_json(src / "a.json", [1], v="x")
    job = runner.start()
    job.write_jdbc(job.read_files(str(src), ctx="src"), url=JDBC_URL, table=pg_table, mode="upsert", ctx="db")
    [record] = job.job_run.outputs
    stage = record.plan["stage"]
    assert pg_rows(f"SELECT count(*) FROM {stage}") == [(1,)]
    job.fail("stopped")
    assert pg_rows(f"SELECT to_regclass('{stage}') IS NULL") == [(True,)]
    assert pg_rows(f"SELECT count(*) FROM {pg_table}") == [(0,)]


def test_jdbc_committed_write_is_applied_by_the_next_run(runner, tmp_path, pg_table):
    src = tmp_path / "in"
    write_json(src / "a.json", [7, 8], v="y")
    job = runner.start()
    job.write_jdbc(job.read_files(str(src), ctx="src"), url=JDBC_URL, table=pg_table, ctx="db")
    job.job_run.outputs.clear()  # dies after the commit, before the merge
    job.commit()
    assert pg_rows(f"SELECT count(*) FROM {pg_table}") == [(0,)]
    runner.start().commit()
    assert pg_rows(f"SELECT id FROM {pg_table} ORDER BY id") == [(7,), (8,)]


def test_outputs_cli_lists_and_recovers(tmp_path, spark, sparkmark_home):
    from typer.testing import CliRunner

    from sparkmark.cli.app import app
    from sparkmark.engine.store import StateStore
    from sparkmark.settings import Settings

    from .conftest import Runner

    store = StateStore.from_settings(Settings.from_env())  # the store the CLI opens
    runner = Runner(store, spark, "cli_outputs", tmp_path)
    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1, 2])
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    job.job_run.outputs.clear()  # dies between the commit and the publish
    job.commit()
    cli = CliRunner()
    listed = cli.invoke(app, ["outputs", "list", "cli_outputs", "--unfinished", "--json"])
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.output)
    assert row["state"] == "COMMITTED" and row["ctx"] == "out"
    done = cli.invoke(app, ["outputs", "recover", "cli_outputs"])
    assert done.exit_code == 0 and "1 writes finished, 0 still unfinished" in done.output
    assert plain_ids(spark, out) == [1, 2]
    listed = cli.invoke(app, ["outputs", "list", "cli_outputs", "--unfinished", "--json"])
    assert json.loads(listed.output) == []
    store.close()


def test_staged_output_that_is_gone_before_the_commit_commits_nothing(runner, spark, tmp_path):
    """The probe: the output was deleted after staging and the run still moved the
    bookmark, then said "Nothing is lost". Now the commit checks the staged write first:
    the run fails, the bookmark stays, and the next run reads and writes the same rows."""
    import shutil

    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1, 2, 3])
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    before = runner.store.latest_version(runner.name)
    shutil.rmtree(out)  # the output folder (a bucket) deleted while the run worked
    with pytest.raises(SinkError, match="gone before its commit.*Nothing was committed") as gone:
        job.commit()
    assert "Nothing is lost" not in str(gone.value)
    assert str(out) in str(gone.value)  # it names what is missing
    assert runner.store.latest_version(runner.name) == before
    assert runner.store.get_run(job.run_id).state is RunState.FAILED
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    job.commit()
    assert plain_ids(spark, out) == [1, 2, 3]  # read again and written once


def test_a_jdbc_staging_table_that_is_gone_before_the_commit_commits_nothing(runner, tmp_path, pg_table):
    src = tmp_path / "in"
    write_json(src / "a.json", [4, 5], v="x")
    job = runner.start()
    job.write_jdbc(job.read_files(str(src), ctx="src"), url=JDBC_URL, table=pg_table, ctx="db")
    [record] = job.job_run.outputs
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"DROP TABLE {record.plan['stage']}")
    with pytest.raises(SinkError, match=f"staging table {record.plan['stage']} no longer exists"):
        job.commit()
    assert runner.store.get_run(job.run_id).state is RunState.FAILED
    job = runner.start()  # the bookmark did not move: the rows come again
    job.write_jdbc(job.read_files(str(src), ctx="src"), url=JDBC_URL, table=pg_table, ctx="db")
    job.commit()
    assert pg_rows(f"SELECT id FROM {pg_table} ORDER BY id") == [(4,), (5,)]


def test_a_write_lost_after_the_commit_says_so(runner, tmp_path):
    """Past the commit a missing staged file cannot be read again without a rewind: the
    error says the rows are lost and how to get them back, never that nothing is lost."""
    import shutil

    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1])
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    [record] = job.job_run.outputs
    job.job_run._check_staged = lambda: None  # the files vanish between the check and the publish
    shutil.rmtree(out / CONTROL / "staging" / record.key)
    with pytest.raises(publish.PublishError) as lost:
        job.commit()
    assert (
        "lost" in str(lost.value)
        and "sparkmark bookmark reset" in str(lost.value)
        and "--run-id" in str(lost.value)
    )
    assert "Nothing is lost" not in str(lost.value)


def test_glue_jdbc_writes_run_preactions_and_postactions_in_the_merge(
    runner, spark, tmp_path, pg_table, caplog
):
    """Glue's JDBC connection options preactions and postactions: SQL statements,
    separated by semicolons, run before and after the data is written. In a job run
    with a transformation_ctx they run when the rows are merged at the commit, in the
    same transaction; custom.jdbc (any driver, by URL) writes as well as it reads."""
    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.job import Job as GlueJob

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {pg_table} VALUES (1, 'old'), (2, 'old')")
    glue = GlueContext(spark)
    frame = spark.createDataFrame([(3, "new")], "id bigint, v string")
    options = {
        "url": JDBC_URL,
        "dbtable": pg_table,
        "preactions": f"DELETE FROM {pg_table} WHERE id = 1;",
        "postactions": f"UPDATE {pg_table} SET v = 'post' WHERE id = 2; UPDATE {pg_table} SET v = v || '!' WHERE id = 3",
    }
    glue.write_dynamic_frame.from_options(frame, "postgresql", options)
    assert pg_rows(f"SELECT id, v FROM {pg_table} ORDER BY id") == [(2, "post"), (3, "new!")]

    job = GlueJob(glue)
    job.init("glue_actions", {"job_bookmark_option": "job-bookmark-enable", "TempDir": str(tmp_path / "t")})
    more = spark.createDataFrame([(4, "four")], "id bigint, v string")
    staged = {**options, "preactions": f"DELETE FROM {pg_table} WHERE id = 2", "postactions": ""}
    glue.write_dynamic_frame.from_options(more, "custom.jdbc", staged, transformation_ctx="db")
    assert pg_rows(f"SELECT id FROM {pg_table} ORDER BY id") == [(2,), (3,)]  # nothing before the commit
    job.commit()
    assert pg_rows(f"SELECT id FROM {pg_table} ORDER BY id") == [(3,), (4,)]


def test_a_jdbc_source_with_a_ctx_before_job_init_warns(spark, pg_table, caplog):
    from sparkmark.glue.context import GlueContext

    with caplog.at_level("WARNING", logger="sparkmark.glue"):
        GlueContext(spark).create_dynamic_frame.from_options(
            "postgresql",
            {"url": JDBC_URL, "dbtable": pg_table, "jobBookmarkKeys": ["id"]},
            transformation_ctx="src",
        ).count()
    assert "has transformation_ctx 'src' but Job.init() was not called" in caplog.text
