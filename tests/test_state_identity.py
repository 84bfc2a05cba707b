"""A state store knows its identity, and outputs know the store that wrote them: an
emptied, lost, foreign or restored-from-backup store in front of existing output is
refused rather than allowed to publish the same input twice."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from sparkmark.cli.app import app
from sparkmark.engine import publish
from sparkmark.engine.ownership import ForeignOutput
from sparkmark.engine.store import StateStore
from sparkmark.errors import StateStoreError

from .conftest import Runner, write_json

JOB = textwrap.dedent(
    """
    from sparkmark import Job

    with Job.from_args() as job:
        df = job.read_files(job.args["input"], format="json", ctx="src")
        job.write_files(df, job.args["output"], format="json", ctx="out")
    """
)


def output_ids(root) -> list[int]:
    import json

    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for name in files:
            if not name.startswith(("_", ".")):
                with open(os.path.join(folder, name), encoding="utf-8") as lines:
                    found += [json.loads(line)["id"] for line in lines if line.strip()]
    return sorted(found)


def run_cli(*args: str, home) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPARKMARK_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "sparkmark", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.slow
def test_emptied_state_file_is_refused_and_a_new_store_cannot_publish_twice(tmp_path, sparkmark_home):
    """The defect: a state.db truncated to 0 bytes was taken as a new store; the second run
    read all 50 rows again and the output held 100."""
    script = tmp_path / "job.py"
    script.write_text(JOB, encoding="utf-8")
    src, out = tmp_path / "in", tmp_path / "out"
    for n in range(5):
        write_json(src / f"f{n}.json", list(range(n * 10, n * 10 + 10)))
    argv = ["run", str(script), "--JOB_NAME", "ident", "--job-bookmark-option", "job-bookmark-enable"]
    argv += ["--input", str(src), "--output", str(out)]
    first = run_cli(*argv, home=sparkmark_home)
    assert first.returncode == 0, first.stderr
    assert output_ids(out) == list(range(50))

    state = sparkmark_home / "state.db"
    os.truncate(state, 0)
    second = run_cli(*argv, home=sparkmark_home)
    assert second.returncode == 1
    assert f"the state store {state} is an empty file" in second.stderr
    assert "Traceback" not in second.stderr
    assert output_ids(out) == list(range(50))

    state.unlink()  # "start a new store on purpose": the output still remembers the old one
    third = run_cli(*argv, home=sparkmark_home)
    assert third.returncode == 1
    assert f"{out} holds 1 write(s) of runs" in third.stderr, third.stderr
    assert "sparkmark outputs adopt" in third.stderr
    assert "Traceback" not in third.stderr
    assert output_ids(out) == list(range(50))

    # Taking the output over without its rows: the new store reads all input once more.
    adopted = run_cli("outputs", "adopt", str(out), "--drop", home=sparkmark_home)
    assert adopted.returncode == 0, adopted.stderr
    assert "removed" in adopted.stdout and "1 unknown writes" in adopted.stdout
    assert output_ids(out) == []
    fourth = run_cli(*argv, home=sparkmark_home)
    assert fourth.returncode == 0, fourth.stderr
    assert output_ids(out) == list(range(50))


def test_store_restored_from_an_older_backup_finds_newer_runs_in_the_output(spark, tmp_path):
    state = tmp_path / "state.db"
    backup = tmp_path / "backup.db"
    store = StateStore(f"sqlite:///{state}")
    runner = Runner(store, spark, "restored", tmp_path)
    src, out = tmp_path / "in", tmp_path / "out"

    def run_once() -> None:
        with runner.start() as job:  # commits, or fails the run on an error
            job.write_files(job.read_files(str(src), ctx="src"), str(out), format="json", ctx="out")

    write_json(src / "a.json", [1, 2])
    run_once()
    live, copy = sqlite3.connect(state), sqlite3.connect(backup)
    live.backup(copy)  # the nightly backup, taken after the first run
    live.close()
    copy.close()
    write_json(src / "b.json", [3, 4])
    run_once()
    assert output_ids(out) == [1, 2, 3, 4]
    newer = store.list_runs("restored")[0].run_id
    store.close()

    for leftover in ("-wal", "-shm"):  # the disk is lost; the backup comes back
        (tmp_path / f"state.db{leftover}").unlink(missing_ok=True)
    os.replace(backup, state)
    restored = StateStore(f"sqlite:///{state}")
    runner.store = restored
    with pytest.raises(ForeignOutput) as refused:
        run_once()
    message = str(refused.value)
    assert newer in message and "restored from a backup older than those runs" in message
    assert output_ids(out) == [1, 2, 3, 4]

    # Drop the writes the backup does not know: the restored bookmark reads b.json again, once.
    assert publish.write_keys(str(out))
    result = CliRunner().invoke(
        app, ["outputs", "adopt", str(out), "--drop"], env={"SPARKMARK_STATE_URL": f"sqlite:///{state}"}
    )
    assert result.exit_code == 0, result.output
    run_once()
    assert output_ids(out) == [1, 2, 3, 4]
    restored.close()


def test_foreign_store_is_refused_until_the_output_is_adopted(spark, tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    write_json(src / "a.json", [1, 2])
    first = StateStore(f"sqlite:///{tmp_path / 'one.db'}")
    other = StateStore(f"sqlite:///{tmp_path / 'two.db'}")
    assert first.store_id != other.store_id
    job = Runner(first, spark, "shared", tmp_path).start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), format="json", ctx="out")
    job.commit()

    runner = Runner(other, spark, "shared", tmp_path)
    job = runner.start()
    df = job.read_files(str(src), ctx="src")
    with pytest.raises(ForeignOutput, match=f"state store {first.store_id}, not this one"):
        job.write_files(df, str(out), format="json", ctx="out")
    job.fail("refused")

    # Adopting keeps the rows: the new store's bookmark is empty, so it writes them again,
    # which is what adopting without --drop means, and what the message says.
    key = publish.write_keys(str(out))
    other.adopt_writes(key, str(out))
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), format="json", ctx="out")
    job.commit()
    assert output_ids(out) == [1, 1, 2, 2]
    first.close()
    other.close()


def test_garbage_state_file_names_its_path(tmp_path):
    state = tmp_path / "state.db"
    state.write_bytes(b"this is not a database, just some bytes\n" * 200)
    with pytest.raises(StateStoreError, match=f"the state store at sqlite:///{state} is unreadable"):
        StateStore(f"sqlite:///{state}")


def test_store_id_survives_reopening(tmp_path):
    url = f"sqlite:///{tmp_path / 'state.db'}"
    first = StateStore(url)
    again = StateStore(url)
    assert first.store_id == again.store_id and len(first.store_id) == 32
    first.close()
    again.close()
