"""No secret reaches state, logs, manifests, metrics, error messages, the workflow run
record or the process list: the masking corpus, end to end, through a real workflow
run whose job is started by the scheduler."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap

import pytest

from sparkmark.engine.store import StateStore

from .conftest import write_json
from .test_masking import CORPUS

# Passed by a secret name: the whole value goes, whatever it looks like.
BY_NAME = {
    "--pwd": "NamePw-001",
    "--db_password": "NamePw-002",
    "--api-key": "NamePw-003",
    "--sessionToken": "NamePw-004",
    "--client-secret": "NamePw-005",
}
PATH_SECRET = "PathPw-006"  # a folder named password=… in an input path

JOB = textwrap.dedent(
    """
    import json, logging, sys
    from sparkmark import Job

    job = Job.from_args()
    with open(job.args["cmdline"], "w") as out:
        out.write(open("/proc/self/cmdline").read().replace("\\0", " "))
    forms = json.loads(open(job.args["forms"]).read())
    log = logging.getLogger("sparkmark.job")
    for form in forms:
        log.warning("connecting with %s", form)
    df = job.read_files(job.args["input"], format="json", ctx="src", recurse=True)
    job.write_files(df, job.args["output"], format="json", ctx="out")
    raise RuntimeError("could not reach " + " and ".join(forms[:4]) + " " + job.args["pwd"])
    """
)


def every_secret() -> list[str]:
    return [secret for _, secret in CORPUS] + list(BY_NAME.values()) + [PATH_SECRET]


def read_tree(folder) -> str:
    text = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            if name.endswith((".db", ".db-wal", ".db-shm")):
                continue
            with open(path, "rb") as f:
                text.append(f.read().decode("utf-8", "replace"))
    return "\n".join(text)


def state_dump(path) -> str:
    conn = sqlite3.connect(path)
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


@pytest.mark.slow
def test_no_secret_leaves_a_workflow_run(tmp_path, sparkmark_home):
    forms = [text for text, _ in CORPUS]
    (tmp_path / "forms.json").write_text(json.dumps(forms), encoding="utf-8")
    (tmp_path / "job.py").write_text(JOB, encoding="utf-8")
    src = tmp_path / "in" / f"password={PATH_SECRET}"
    write_json(src / "a.json", [1, 2])
    arguments = {
        "--forms": str(tmp_path / "forms.json"),
        "--input": str(tmp_path / "in"),
        "--output": str(tmp_path / "out"),
        "--cmdline": str(tmp_path / "cmdline.txt"),
        **BY_NAME,
        **{f"--conn{n}": text for n, text in enumerate(forms)},
    }
    toml_args = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in arguments.items())
    (tmp_path / "sparkmark.toml").write_text(
        textwrap.dedent(
            f"""
            [jobs.leaky]
            Script = "job.py"
            DefaultArguments = {{ {toml_args} }}
            [workflows.wf]
            [triggers.go]
            Type = "ON_DEMAND"
            WorkflowName = "wf"
            Actions = [{{ JobName = "leaky" }}]
            """
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "SPARKMARK_HOME": str(sparkmark_home)}
    sm = [sys.executable, "-m", "sparkmark"]
    config = ["--config", str(tmp_path / "sparkmark.toml")]
    wf = subprocess.run(
        [*sm, "workflow", "run", "wf", *config, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    record = json.loads(wf.stdout)
    [job_run_id] = [
        n["JobDetails"]["JobRuns"][0]["Id"] for n in record["Graph"]["Nodes"] if n["Type"] == "JOB"
    ]
    shown = subprocess.run(
        [*sm, "runs", "show", job_run_id, "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    run = json.loads(shown.stdout)
    assert run["state"] == "FAILED" and "could not reach" in run["error"]  # the run did happen
    assert run["metrics"]["sources"]["src"]["files_read"] == 1
    cmdline = (tmp_path / "cmdline.txt").read_text(encoding="utf-8")
    assert "sparkmark" in cmdline

    places = {
        "workflow run record": wf.stdout + wf.stderr,
        "runs show --json (arguments, metrics, error)": shown.stdout + shown.stderr,
        "the job's command line": cmdline,
        "logs, manifests and quarantine under the home": read_tree(sparkmark_home),
        "the state store": state_dump(sparkmark_home / "state.db"),
    }
    leaks = [(where, secret) for where, text in places.items() for secret in every_secret() if secret in text]
    assert leaks == [], [
        (w, s, places[w][max(0, places[w].find(s) - 300) : places[w].find(s) + 40]) for w, s in leaks
    ]
    assert "****" in places["runs show --json (arguments, metrics, error)"]


@pytest.mark.slow
def test_private_files_whatever_the_umask_and_home(tmp_path, sparkmark_home):
    sparkmark_home.mkdir(mode=0o755)
    os.chmod(sparkmark_home, 0o755)  # an existing, world-readable home
    script = tmp_path / "job.py"
    script.write_text(
        "from sparkmark import Job\n"
        "with Job.from_args() as job:\n"
        "    job.read_files(job.args['input'], format='json', ctx='src').count()\n",
        encoding="utf-8",
    )
    write_json(tmp_path / "in" / "a.json", [1])
    (tmp_path / "in" / "bad.json").write_text("{not json\n", encoding="utf-8")
    env = {**os.environ, "SPARKMARK_HOME": str(sparkmark_home)}
    done = subprocess.run(
        [
            "sh",
            "-c",
            'umask 000; exec "$0" -m sparkmark run "$@"',
            sys.executable,
            str(script),
            "--JOB_NAME",
            "private",
            "--job-bookmark-option",
            "job-bookmark-enable",
            "--input",
            str(tmp_path / "in"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]

    def mode(path) -> int:
        return stat.S_IMODE(os.stat(path).st_mode)

    assert mode(sparkmark_home / "state.db") == 0o600
    for sidecar in ("state.db-wal", "state.db-shm"):
        if (sparkmark_home / sidecar).exists():
            assert mode(sparkmark_home / sidecar) == 0o600
    manifests = list((sparkmark_home / "tmp" / "partitionlisting").rglob("*.json"))
    assert manifests and all(mode(m) == 0o600 for m in manifests)
    for top in ("partitionlisting", "quarantine"):
        folders = [p for p in (sparkmark_home / "tmp" / top).rglob("*") if p.is_dir()]
        folders.append(sparkmark_home / "tmp" / top)
        assert all(mode(f) == 0o700 for f in folders), top


def test_a_store_in_a_shared_folder_leaves_the_folder_alone(tmp_path):
    """A state file in a sticky, world-writable folder such as /tmp: the file is 0600, and
    the folder, which other users and services write to, keeps its mode."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    store = StateStore(f"sqlite:///{shared / 'state.db'}")
    store.close()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert stat.S_IMODE((shared / "state.db").stat().st_mode) == 0o600


def test_sealed_arguments_open_only_under_their_key(tmp_path):
    from cryptography.fernet import Fernet

    from sparkmark.engine.sealing import Sealer
    from sparkmark.errors import ConfigError
    from sparkmark.settings import Settings

    home = Settings.from_env({"SPARKMARK_HOME": str(tmp_path / "home")})
    sealer = Sealer.from_settings(home)
    sealed = sealer.seal({"--db_password": "hunter2"})
    assert "hunter2" not in sealed
    assert Sealer.from_settings(home).open(sealed) == {"--db_password": "hunter2"}  # the home's key, kept
    assert oct((tmp_path / "home" / "secrets.key").stat().st_mode & 0o777) == "0o600"
    shared = Settings.from_env(
        {"SPARKMARK_HOME": str(tmp_path / "other"), "SPARKMARK_SECRETS_KEY": Fernet.generate_key().decode()}
    )
    with pytest.raises(ConfigError, match="sealed under another key.*SPARKMARK_SECRETS_KEY"):
        Sealer.from_settings(shared).open(sealed)
    with pytest.raises(ConfigError, match="not a key sparkmark can use"):
        Sealer.from_settings(
            Settings.from_env({"SPARKMARK_HOME": str(tmp_path), "SPARKMARK_SECRETS_KEY": "short"})
        )
