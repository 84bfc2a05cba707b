"""The sparkmark command: in-process through typer's runner, and once as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkmark.cli.app import app
from sparkmark.engine.store import StateStore

from .conftest import write_json

cli = CliRunner()

JOB_SCRIPT = textwrap.dedent(
    """
    from sparkmark import Job

    job = Job.from_args()
    df = job.read_files(job.args["input"], format="json", ctx="orders")
    print("ROWS", df.count())
    if job.args.get("explode") == "yes":
        raise ValueError("exploding on purpose")
    job.commit()
    """
)


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "orders_job.py"
    path.write_text(JOB_SCRIPT)
    return path


def sm(*args: str):
    return cli.invoke(app, list(args))


def test_run_bookmark_and_runs_commands(spark, script, tmp_path):
    data = tmp_path / "in"
    write_json(data / "a.json", [1, 2])
    common = [
        str(script),
        "--JOB_NAME",
        "cli_job",
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--input",
        str(data),
        "--db_password",
        "hunter2",
    ]
    first = sm("run", *common)
    assert first.exit_code == 0, first.output
    assert "ROWS 2" in first.output and "SUCCEEDED" in first.output
    run1 = first.output.split("run ")[-1].split()[0]
    assert run1.startswith("jr_")

    write_json(data / "b.json", [3])
    second = sm("run", *common)
    assert "ROWS 1" in second.output

    got = json.loads(sm("bookmark", "get", "cli_job", "--json").output)
    assert got["JobName"] == "cli_job" and got["Version"] == 2 and got["Run"] == 2
    assert got["PreviousRunId"] == run1
    assert got["JobBookmark"]["orders"]["files_committed"] == 2
    human = sm("bookmark", "get", "cli_job").output
    assert "orders" in human and "2 files, high-water mtime" in human

    history = json.loads(sm("bookmark", "history", "cli_job", "--json").output)
    assert [h["Version"] for h in history] == [2, 1]

    files = json.loads(sm("bookmark", "files", "cli_job", "orders", "--json").output)
    assert sorted(Path(f["path"]).name for f in files) == ["a.json", "b.json"]
    assert {f["run_id"] for f in files} == {run1, got["RunId"]}

    runs = json.loads(sm("runs", "list", "cli_job", "--json").output)
    assert [r["state"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    shown = json.loads(sm("runs", "show", run1, "--json").output)
    assert shown["arguments"]["db_password"] == "****"
    assert shown["metrics"]["sources"]["orders"]["files_read"] == 1
    assert "hunter2" not in sm("runs", "show", run1).output

    rewound = sm("bookmark", "reset", "cli_job", "--run-id", run1)
    assert rewound.exit_code == 0 and "Rewound" in rewound.output
    third = sm("run", *common)
    assert "ROWS 1" in third.output  # b.json again, after the rewind
    assert sm("bookmark", "reset", "cli_job").exit_code == 0
    assert "ROWS 3" in sm("run", *common).output  # everything after a reset


def test_failing_script_exits_non_zero_and_commits_nothing(spark, script, tmp_path):
    data = tmp_path / "in"
    write_json(data / "a.json", [1])
    result = sm(
        "run",
        str(script),
        "--JOB_NAME",
        "cli_fail",
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--input",
        str(data),
        "--explode",
        "yes",
    )
    assert result.exit_code == 1
    assert "FAILED" in result.output
    store = StateStore.from_settings()
    (run,) = store.list_runs("cli_fail")
    assert run.state.value == "FAILED" and "exploding on purpose" in run.error
    assert store.latest_version("cli_fail") is None


def test_script_without_commit_succeeds_without_advancing(spark, tmp_path):
    data = tmp_path / "in"
    write_json(data / "a.json", [1])
    script = tmp_path / "no_commit.py"
    script.write_text(
        "from sparkmark import Job\njob = Job.from_args()\n"
        "job.read_files(job.args['input'], ctx='s').count()\n"
    )
    result = sm("run", str(script), "--job-bookmark-option", "job-bookmark-enable", "--input", str(data))
    assert result.exit_code == 0, result.output
    store = StateStore.from_settings()
    (run,) = store.list_runs("no_commit")  # the job name defaults to the script's name
    assert run.state.value == "SUCCEEDED" and run.committed_version is None


@pytest.mark.parametrize(
    "args,message",
    [
        (["bookmark", "get", "ghost"], "unknown job 'ghost'"),
        (["bookmark", "history", "ghost"], "unknown job 'ghost'"),
        (["bookmark", "reset", "ghost"], "unknown job 'ghost'"),
        (["runs", "list", "ghost"], "unknown job 'ghost'"),
        (["runs", "show", "jr_nope"], "unknown run id 'jr_nope'"),
    ],
)
def test_unknown_names_get_a_one_line_error(args, message):
    result = sm(*args)
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output


def test_failing_crawler_and_catalog_commands_print_one_line(tmp_path, monkeypatch):
    """Crawler and catalog commands that fail print one `error:` line and exit 1."""
    monkeypatch.setenv("SPARKMARK_CONFIG", str(tmp_path / "none.toml"))
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("garbage = [")
    bad_name = tmp_path / "bad_name.toml"
    bad_name.write_text('[crawler]\nName = "c 1"\nDatabaseName = "d"\n[crawler.Targets]\nS3Targets = []\n')
    classified = tmp_path / "classified.toml"
    classified.write_text(
        '[crawler]\nName = "needs_x"\nDatabaseName = "d"\nClassifiers = ["x"]\n'
        f'[crawler.Targets]\nS3Targets = [{{Path = "{tmp_path}"}}]\n'
    )
    assert sm("crawler", "create", "--file", str(classified)).exit_code == 0
    cases = [
        (["crawler", "run", "ghost"], "unknown crawler 'ghost'"),
        (["crawler", "run", "needs_x"], "names classifier 'x', which is not declared"),
        (["crawler", "create", "--file", str(tmp_path / "missing.toml")], "cannot read"),
        (["crawler", "create", "--file", str(bad_toml)], "is not valid TOML"),
        (["crawler", "create", "--file", str(bad_name)], "invalid crawler definition at Name"),
        (["catalog", "partitions", "nope.tbl"], "no table nope.tbl in the catalog"),
        (["catalog", "versions", "nope.tbl"], "no table nope.tbl in the catalog"),
        (["catalog", "table", "nope.tbl"], "no table nope.tbl in the catalog"),
        (["catalog", "partitions", "bad-name"], "name tables as DATABASE.TABLE"),
    ]
    for args, message in cases:
        result = sm(*args)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 1, (args, result.output)
        assert lines == [lines[0]] and lines[0].startswith("error:") and message in lines[0], (args, lines)
        assert "Traceback" not in result.output


def test_malformed_run_arguments_get_a_one_line_error(script):
    result = sm("run", str(script), "--job-bookmark-option", "sometimes")
    assert result.exit_code == 1
    assert "invalid choice: 'sometimes'" in result.output
    assert "Traceback" not in result.output
    assert sm("run", str(script) + ".missing").exit_code == 1


@pytest.mark.slow
def test_real_process_exit_codes(tmp_path):
    """The installed console script: a run that raises exits 1 and is recorded FAILED."""
    script = tmp_path / "boom.py"
    script.write_text("from sparkmark import Job\nJob.from_args()\nraise SystemExit(3)\n")
    env = dict(os.environ, SPARKMARK_HOME=str(tmp_path / "home"))
    exe = Path(sys.executable).with_name("sparkmark")
    done = subprocess.run(
        [str(exe), "run", str(script), "--JOB_NAME", "proc"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert "FAILED" in done.stdout
    bad = subprocess.run(
        [str(exe), "run", str(script), "--job-bookmark-from", "jr_x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 1
    assert "Invalid option" in bad.stderr and "Traceback" not in bad.stderr
    store = StateStore(f"sqlite:///{tmp_path / 'home' / 'state.db'}")
    (run,) = store.list_runs("proc")
    assert run.state.value == "FAILED" and "status 3" in run.error


def test_compact_drop_missing_then_runs_continue(spark, script, tmp_path):
    data = tmp_path / "in"
    write_json(data / "a.json", [1])
    old = write_json(data / "old.json", [2])
    common = [
        str(script),
        "--JOB_NAME",
        "cli_compact",
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--input",
        str(data),
    ]
    assert "ROWS 2" in sm("run", *common).output
    old.unlink()
    result = sm("bookmark", "compact", "cli_compact", "--drop-missing", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["DroppedMissing"] == 1
    files = json.loads(sm("bookmark", "files", "cli_compact", "orders", "--json").output)
    assert [Path(f["path"]).name for f in files] == ["a.json"]
    assert "ROWS 0" in sm("run", *common).output  # a.json is still known: not read again


def test_bookmark_rows_describe_jdbc_sources():
    from sparkmark.cli.bookmark import _source_rows

    (row,) = _source_rows(
        {
            "orders_db": {
                "type": "jdbc",
                "database": "postgresql+psycopg://etl:***@db/shop",
                "table": "orders",
                "keys": ["id"],
                "keys_sort_order": "asc",
                "last_value": [1042],
                "lag": 60,
                "last_run": {"rows": 12},
            }
        }
    )
    assert row == [
        "orders_db",
        "jdbc",
        "postgresql+psycopg://etl:***@db/shop orders",
        "keys id asc, last [1042], lag 60",
        "12 rows",
    ]


def _skippable(script, data, *extra):
    return [
        "run",
        "--skip-if-no-new-data",
        str(script),
        "--JOB_NAME",
        "cli_skip",
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--input",
        str(data),
        *extra,
    ]


def test_skip_if_no_new_data_runs_only_when_a_source_has_new_files(spark, script, tmp_path):
    data = tmp_path / "in"
    write_json(data / "a.json", [1, 2])
    store = StateStore.from_settings()
    first = sm(*_skippable(script, data))
    assert "ROWS 2" in first.output, first.output  # nothing to compare with: it runs

    skipped = sm(*_skippable(script, data))
    assert skipped.exit_code == 0, skipped.output
    assert "skipped without starting Spark: no new data in orders" in skipped.output
    assert "ROWS" not in skipped.output  # the script did not run
    latest = store.list_runs("cli_skip")[0]
    assert latest.state.value == "SUCCEEDED" and latest.committed_version is None
    assert latest.metrics["skipped"] == "no new data in orders"
    assert latest.metrics["sources"]["orders"]["files_read"] == 0
    assert store.latest_version("cli_skip").version == 1  # the bookmark did not move

    write_json(data / "b.json", [3])
    preview = json.loads(sm("bookmark", "preview", "cli_skip", "--json").output)
    assert preview["NothingNew"] is False
    assert preview["Sources"][0]["files_waiting"] == 1 and preview["Sources"][0]["files_new"] == 1
    assert store.latest_version("cli_skip").version == 1  # a preview changes nothing
    after_reset = json.loads(sm("bookmark", "preview", "cli_skip", "--reset", "--json").output)
    assert after_reset["Sources"][0]["files_waiting"] == 2  # a.json again, and b.json
    first_run = store.list_runs("cli_skip")[-1].run_id
    after_rewind = json.loads(sm("bookmark", "preview", "cli_skip", "--run-id", first_run, "--json").output)
    assert after_rewind["Sources"][0]["files_waiting"] == 1  # the state after run 1: b.json is new
    assert store.latest_version("cli_skip").version == 1  # neither preview changed anything
    assert "ROWS 1" in sm(*_skippable(script, data)).output
    assert "skipped" in sm(*_skippable(script, data)).output  # after a skipped run, again

    write_json(data / "a.json", [1, 2, 4])  # rewritten in place: modified, read again
    assert "ROWS 3" in sm(*_skippable(script, data)).output

    # Anything that could change what the script reads makes it run.
    assert "ROWS 0" in sm(*_skippable(script, data, "--day", "monday")).output
    assert "ROWS 0" in sm(*_skippable(script, data)).output  # arguments differ from the last run
    script.write_text(script.read_text() + "# edited\n")
    assert "ROWS 0" in sm(*_skippable(script, data)).output
    assert "skipped" in sm(*_skippable(script, data)).output
    assert sm("bookmark", "reset", "cli_skip").exit_code == 0
    assert "ROWS 4" in sm(*_skippable(script, data)).output


def test_skip_never_applies_to_sources_read_in_full(spark, tmp_path):
    data = tmp_path / "in"
    write_json(data / "a.json", [1])
    script = tmp_path / "two_sources.py"
    script.write_text(
        "from sparkmark import Job\njob = Job.from_args()\n"
        "print('ROWS', job.read_files(job.args['input'], ctx='orders').count()"
        " + job.read_files(job.args['input']).count())\njob.commit()\n"
    )
    args = [
        "run",
        "--skip-if-no-new-data",
        str(script),
        "--JOB_NAME",
        "cli_full",
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--input",
        str(data),
    ]
    assert "ROWS 2" in sm(*args).output
    again = sm(*args)
    assert "ROWS 1" in again.output  # the unbookmarked source is read in full each run


def test_a_skipped_run_still_refuses_to_overlap_a_running_one(spark, script, tmp_path):
    from sparkmark import Job

    data = tmp_path / "in"
    write_json(data / "a.json", [1])
    assert "ROWS 1" in sm(*_skippable(script, data)).output
    # A run of the same job that moves the bookmark holds the job's lease. (One with
    # bookmarks disabled would not: it holds a lease of its own and may overlap.)
    holder = Job("cli_skip", spark=spark, bookmark_option="job-bookmark-enable")
    try:
        refused = sm(*_skippable(script, data))
        assert refused.exit_code == 1
        assert "is already running as" in refused.output
    finally:
        holder.fail("test over")
