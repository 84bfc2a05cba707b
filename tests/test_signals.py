"""SIGTERM and SIGINT end a run as STOPPED: staged output discarded, lease released, exit
code 128 + the signal; a second signal exits at once. Real `sparkmark run` processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sparkmark.engine.models import RunState
from sparkmark.engine.publish import CONTROL
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

from .conftest import Runner, write_json

WAITING_JOB = textwrap.dedent(
    """
    import pathlib, time
    from sparkmark import Job

    job = Job.from_args()
    df = job.read_files(job.args["input"], format="json", ctx="src")
    job.write_files(df, job.args["output"], format="json", ctx="out")
    pathlib.Path(job.args["ready"]).write_text(job.run_id)
    while True:  # a long transform: the test stops it
        time.sleep(0.05)
    """
)


def wait_for(path, proc, seconds=180.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended early: {proc.communicate()[1][-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the run never got ready")
        time.sleep(0.1)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_stops_the_run_and_frees_the_job_for_another_host(
    sig, code, tmp_path, sparkmark_home, spark, monkeypatch
):
    script = tmp_path / "job.py"
    script.write_text(WAITING_JOB, encoding="utf-8")
    src, out, ready = tmp_path / "in", tmp_path / "out", tmp_path / "ready"
    write_json(src / "a.json", [1, 2, 3])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sparkmark",
            "run",
            str(script),
            "--JOB_NAME",
            "stoppable",
            "--job-bookmark-option",
            "job-bookmark-enable",
            "--input",
            str(src),
            "--output",
            str(out),
            "--ready",
            str(ready),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    wait_for(ready, proc)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr[-3000:]
    assert f"error: stopped by {sig.name}" in stderr and "Traceback" not in stderr, stderr[-3000:]

    store = StateStore.from_settings(Settings.from_env())
    run = store.get_run(ready.read_text())
    assert run.state is RunState.STOPPED
    assert store.get_lease("stoppable") is None
    assert not list((out / CONTROL / "runs").glob("*.pending"))
    assert not (out / CONTROL / "staging").exists() or not any((out / CONTROL / "staging").iterdir())
    assert store.latest_version("stoppable") is None  # nothing committed

    # The next run comes from another host (a restarted container): it cannot tell
    # whether a process elsewhere lives, so only a released lease lets it start.
    import socket

    monkeypatch.setattr(socket, "gethostname", lambda: "another-host")
    runner = Runner(store, spark, "stoppable", tmp_path)
    rows, _ = runner.run(src)
    assert rows == [1, 2, 3]
    store.close()


def test_second_signal_exits_at_once_even_while_a_commit_holds_the_first(tmp_path):
    probe = textwrap.dedent(
        """
        import os, signal
        from sparkmark.runtime import stopping

        stopping.install()
        with stopping.deferred():
            os.kill(os.getpid(), signal.SIGTERM)  # held: a commit is running
            print("held", flush=True)
            os.kill(os.getpid(), signal.SIGTERM)  # the second: out now
            print("not reached", flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 143
    assert done.stdout == "held\n"


@pytest.mark.slow
def test_a_held_signal_stops_once_the_commit_is_over(tmp_path):
    probe = textwrap.dedent(
        """
        import os, signal
        from sparkmark.runtime import stopping

        stopping.install()
        try:
            with stopping.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                print("commit finished", flush=True)
        except stopping.RunStopped as exc:
            print("stopped", exc.exit_code, flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout == "commit finished\nstopped 130\n", done.stderr
