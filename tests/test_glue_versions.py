"""Glue versions and the runtimes that run them. The facts are AWS's release notes for
each Glue version (its Spark, Python, Iceberg and Delta); the behaviour is the issue's:
a job's GlueVersion picks the Spark it runs on, a version with no runtime is refused
in one line naming the command that adds it, and the run shows the Spark it ran on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyspark
import pytest

from sparkmark import glue_versions, runtimes
from sparkmark.engine.store import StateStore
from sparkmark.errors import ConfigError
from sparkmark.settings import Settings
from sparkmark.workflow.definition import JobDefinition

# ------------------------------------------------------------------ the releases


@pytest.mark.parametrize(
    "version, spark, python, iceberg, delta",
    [
        ("5.0", "3.5.4", "3.11", "1.7.1", "3.3.0"),
        ("5.1", "3.5.6", "3.11", "1.10.0", "3.3.2"),
        ("6.0", "4.1.1", "3.13", "1.11.0", "4.1.0"),  # Glue ships Delta 4.2.0: see RELEASES
    ],
)
def test_each_glue_version_runs_the_spark_aws_ships_it_with(version, spark, python, iceberg, delta):
    release = glue_versions.release(version)
    assert (release.spark, release.python, release.iceberg, release.delta) == (spark, python, iceberg, delta)
    assert release.scala == ("2.12" if spark.startswith("3.") else "2.13")
    assert release.spark_line == spark.rsplit(".", 1)[0]


@pytest.mark.parametrize(
    "version, said",
    [
        ("2.0", "Glue 2.0 reached its end of life on 2026-04-01"),
        ("4.0", "PySpark 3.3 does not support the Python 3.11"),
        ("7.0", "'7.0' is not a Glue version"),
        ("", "'' is not a Glue version"),
    ],
)
def test_a_version_no_runtime_serves_is_one_line_saying_why(version, said):
    with pytest.raises(ConfigError) as caught:
        glue_versions.release(version)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_definition_keeps_any_glue_version_and_refuses_what_is_none():
    assert JobDefinition(Name="j", Script="j.py", GlueVersion="4.0").GlueVersion == "4.0"  # refused at run
    assert JobDefinition(Name="j", Script="j.py").GlueVersion is None
    with pytest.raises(ValueError, match="'9.9' is not a Glue version"):
        JobDefinition(Name="j", Script="j.py", GlueVersion="9.9")


@pytest.mark.parametrize(
    "spark, glue",
    [("3.5.4", "5.0"), ("3.5.6", "5.1"), ("3.5.2", "5.1"), ("4.1.1", "6.0"), ("4.1.0", "6.0")],
)
def test_an_installed_pyspark_serves_its_glue_version_or_its_lines_newest(spark, glue):
    assert glue_versions.release_for_spark(spark).version == glue


def test_a_spark_no_glue_version_runs_is_named():
    with pytest.raises(ConfigError, match="PySpark 3.4.1 is not the Spark of any Glue version"):
        glue_versions.release_for_spark("3.4.1")


# ------------------------------------------------------------------ runtimes


def test_no_glue_version_or_the_own_one_runs_on_sparkmarks_own_spark(tmp_path):
    own = runtimes.own()
    assert own.spark == pyspark.__version__ and own.own and own.python == sys.executable
    assert runtimes.for_version(tmp_path, None).own
    assert runtimes.for_version(tmp_path, own.glue_version).own


def test_a_version_without_a_runtime_is_refused_naming_the_command_that_adds_it(tmp_path):
    missing = next(v for v in glue_versions.RELEASES if v != runtimes.own().glue_version)
    with pytest.raises(ConfigError) as caught:
        runtimes.for_version(tmp_path, missing, job="nightly")
    line = str(caught.value)
    assert line.startswith(f"job 'nightly': GlueVersion {missing} runs Spark ") and "\n" not in line
    assert line.endswith(f"run `sparkmark runtime add {missing}`")


def test_an_unfinished_runtime_is_not_one(tmp_path):
    """An add that was interrupted leaves a folder without its mark: no runtime."""
    missing = next(v for v in glue_versions.RELEASES if v != runtimes.own().glue_version)
    (runtimes.folder(tmp_path, missing) / "bin").mkdir(parents=True)
    (runtimes.folder(tmp_path, missing) / "bin" / "python").symlink_to(sys.executable)
    assert runtimes.added(tmp_path) == []
    with pytest.raises(ConfigError, match="sparkmark runtime add"):
        runtimes.for_version(tmp_path, missing)


# ------------------------------------------------------------------ two Spark versions, one server

GLUE_5 = "5.0"
SCRIPT = """\
import json, sys
import pyspark
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "out"])
glue = GlueContext(SparkContext.getOrCreate())
spark = glue.spark_session
job = Job(glue)
job.init(args["JOB_NAME"], args)
seen = {
    "pyspark": pyspark.__version__,
    "spark": spark.version,
    "ansi": spark.conf.get("spark.sql.ansi.enabled"),
}
with open(args["out"], "w") as out:
    json.dump(seen, out)
job.commit()
"""


@pytest.fixture(scope="module")
def glue5_runtime():
    """The Glue 5.0 runtime `make test` adds (`make runtimes`)."""
    root = Settings.from_env().runtimes_dir
    found = [r for r in runtimes.added(root) if r.glue_version == GLUE_5]
    if not found:
        pytest.fail(f"no Glue {GLUE_5} runtime in {root}: run `make runtimes`")
    return found[0]


@pytest.fixture(scope="module")
def api(tmp_path_factory, glue5_runtime):
    from .test_python_shell import Api

    work = tmp_path_factory.mktemp("versions")
    config = work / "sparkmark.toml"
    config.write_text("")
    running = Api(work / "home", config, {"SPARKMARK_LOG_LEVEL": "INFO"})
    yield running
    running.stop()


@pytest.mark.slow
def test_one_server_runs_a_glue_5_job_and_a_glue_6_job_each_on_its_own_spark(api, tmp_path, monkeypatch):
    from .test_python_shell import wait

    glue = api.client("glue")
    script = tmp_path / "versions.py"
    script.write_text(SCRIPT)
    runs = {}
    for version in (GLUE_5, "6.0", "5.1"):
        name = f"on-{version.replace('.', '-')}-{uuid.uuid4().hex[:6]}"
        glue.create_job(
            Name=name,
            Role="r",
            Command={"Name": "glueetl", "ScriptLocation": str(script)},
            GlueVersion=version,
            DefaultArguments={"--out": str(tmp_path / f"{name}.json")},
        )
        assert glue.get_job(JobName=name)["Job"]["GlueVersion"] == version
        runs[version] = (name, glue.start_job_run(JobName=name)["JobRunId"])
    ended = {v: wait(glue, name, run_id, seconds=300) for v, (name, run_id) in runs.items()}

    for version, spark, ansi in ((GLUE_5, "3.5.4", "false"), ("6.0", "4.1.1", "true")):
        run = ended[version]
        assert run["JobRunState"] == "SUCCEEDED", run.get("ErrorMessage")
        assert run["GlueVersion"] == version
        seen = json.loads((tmp_path / f"{runs[version][0]}.json").read_text())
        # Spark 4 turned ANSI mode on by default; Spark 3.5 (Glue 5.0) has it off.
        assert seen == {"pyspark": spark, "spark": spark, "ansi": ansi}
    # No runtime for 5.1 here: the run is refused in one line, and no Spark ran it.
    refused = ended["5.1"]
    assert refused["JobRunState"] in ("FAILED", "ERROR")
    assert refused["ErrorMessage"].endswith("run `sparkmark runtime add 5.1`")
    assert not (tmp_path / f"{runs['5.1'][0]}.json").exists()

    # The run's details keep the Spark it ran on.
    monkeypatch.setenv("SPARKMARK_HOME", str(api.home))
    monkeypatch.delenv("SPARKMARK_STATE_URL", raising=False)
    store = StateStore.from_settings(Settings.from_env())
    try:
        for version, spark in ((GLUE_5, "3.5.4"), ("6.0", "4.1.1")):
            name, run_id = runs[version]
            assert store.get_run(run_id).metrics["runtime"] == {"spark": spark, "glue_version": version}
    finally:
        store.close()
    shown = subprocess.run(
        [sys.executable, "-m", "sparkmark", "runs", "show", runs[GLUE_5][1]],
        capture_output=True,
        text=True,
        env={**api.env, "COLUMNS": "200"},
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"Glue {GLUE_5} (Spark 3.5.4)" in shown.stdout


@pytest.mark.slow
def test_sparkmark_run_with_a_glue_version_runs_in_its_runtime_and_doctor_lists_them(tmp_path, glue5_runtime):
    script = tmp_path / "versions.py"
    script.write_text(SCRIPT)
    out = tmp_path / "seen.json"
    env = {**os.environ, "SPARKMARK_HOME": str(tmp_path / "home")}

    def sparkmark(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "sparkmark", *args], capture_output=True, text=True, env=env, check=False
        )

    done = sparkmark("run", "--glue-version", GLUE_5, str(script), "--JOB_NAME", "cli", "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(out.read_text())["spark"] == "3.5.4"
    refused = sparkmark("run", "--glue-version", "5.1", str(script), "--JOB_NAME", "cli", "--out", str(out))
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].endswith("run `sparkmark runtime add 5.1`")
    found = {f["check"]: f for f in json.loads(sparkmark("doctor", "--json").stdout)}
    assert (
        found[f"runtime glue {GLUE_5}"]["status"] == "ok"
        and "Spark 3.5.4" in found[f"runtime glue {GLUE_5}"]["detail"]
    )
    own = runtimes.own()
    assert f"Spark {own.spark}" in found[f"runtime glue {own.glue_version}"]["detail"]
    listed = sparkmark("runtime", "list")
    assert listed.returncode == 0 and "3.5.4" in listed.stdout and own.spark in listed.stdout


def test_the_runtime_command_says_what_it_would_add_or_remove(tmp_path):
    env = {
        **os.environ,
        "SPARKMARK_HOME": str(tmp_path / "home"),
        "SPARKMARK_RUNTIMES_DIR": str(tmp_path / "rt"),
    }
    own = runtimes.own().glue_version
    done = subprocess.run(
        [sys.executable, "-m", "sparkmark", "runtime", "add", own], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and "nothing to add" in done.stdout
    for args, said in (
        (["add", "4.0"], "PySpark 3.3 does not support"),
        (["remove", "5.1"], "no runtime added"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "sparkmark", "runtime", *args], capture_output=True, text=True, env=env
        )
        assert done.returncode == 1 and said in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "rt").exists() or not any((tmp_path / "rt").iterdir())


# ------------------------------------------------------------------ the pytest plugin


def test_the_plugin_runs_on_this_spark_and_stops_when_told_another_glue_version(tmp_path):
    """A user's tests run on whichever PySpark their environment has; told the Glue
    version they are for, a session on another version's Spark stops in one line."""
    (tmp_path / "test_mine.py").write_text(
        "def test_version(glue_version):\n    print('GLUE', glue_version)\n    assert glue_version\n"
    )
    own = runtimes.own().glue_version
    other = next(v for v in glue_versions.RELEASES if v != own)

    def pytest_run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )

    plain = pytest_run()
    assert plain.returncode == 0 and f"GLUE {own}" in plain.stdout, plain.stdout + plain.stderr
    assert pytest_run("--glue-version", own).returncode == 0
    refused = pytest_run("--glue-version", other)
    assert refused.returncode == 4  # pytest's usage error: nothing ran
    assert f"these tests are for Glue {other}" in refused.stderr
    assert f"sparkmark runtime add {other}" in refused.stderr
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nsparkmark_glue_version = {other}\n")
    assert pytest_run().returncode == 4
    unknown = pytest_run("--glue-version", "4.0")
    assert unknown.returncode == 4 and "PySpark 3.3 does not support" in unknown.stderr


# ------------------------------------------------------------------ the upgrade check

UPGRADE = Path(__file__).parent / "fixtures" / "upgrade"
# Each script of the corpus exercises one documented change from Glue 5.0 to 6.0, and the
# change the check must tie its difference to.
EXPECTED = {
    "ansi_cast": "ansi-cast",
    "divide_by_zero": "ansi-divide-by-zero",
    "remainder_by_zero": "ansi-remainder-by-zero",
    "int_overflow": "ansi-overflow",
    "cast_overflow": "ansi-cast-overflow",
    "decimal_range": "ansi-decimal-range",
    "array_index": "ansi-array-index",
    "datetime_value": "ansi-datetime-value",
    "datetime_pattern": "datetime-parser-policy",
    "bang_not": "bang-not",
    "empty_in": "null-in-empty-list",
    "size_of_null": "size-of-null",
    "json_choice": "choice-on-variant",
}


@pytest.mark.slow
def test_the_upgrade_check_flags_each_documented_change_and_nothing_in_clean_jobs(tmp_path, glue5_runtime):
    scripts = sorted((UPGRADE / "changes").glob("*.py")) + sorted((UPGRADE / "clean").glob("*.py"))
    assert sorted(p.stem for p in (UPGRADE / "changes").glob("*.py")) == sorted(EXPECTED)
    home, out = tmp_path / "home", tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "sparkmark", "upgrade-check", "--json", "--key", "id", *map(str, scripts)]
        + ["--output", str(out), "--input", str(UPGRADE / "mixed.json")],
        capture_output=True,
        text=True,
        env={**os.environ, "SPARKMARK_HOME": str(home)},
        check=False,
    )
    assert done.returncode == 1, done.stderr[-3000:]  # 1: there are differences
    report = json.loads(done.stdout)
    assert (report["from"], report["to"]) == ("5.0", "6.0")
    found: dict[str, list[dict]] = {}
    for difference in report["differences"]:
        found.setdefault(difference["job"], []).append(difference)
    for job, change in EXPECTED.items():
        assert job in found, f"{job}: no difference found"
        assert [d["change"] for d in found[job]] == [change], found[job]
    for clean in (p.stem for p in (UPGRADE / "clean").glob("*.py")):
        assert clean not in found and report["jobs"][clean] == {"old": "succeeded", "new": "succeeded"}
    # Nothing was written where the jobs write, and the user's home holds no run.
    assert not out.exists()
    assert not (home / "state.db").exists()


def test_the_upgrade_check_refuses_what_it_cannot_run(tmp_path):
    env = {
        **os.environ,
        "SPARKMARK_HOME": str(tmp_path / "home"),
        "SPARKMARK_RUNTIMES_DIR": str(tmp_path / "rt"),
    }
    script = tmp_path / "job.py"
    script.write_text("print('hi')\n")
    own = runtimes.own().glue_version
    other = next(v for v in glue_versions.RELEASES if v != own)
    for args, said in (
        ([str(script), "--from", own, "--to", own], f"--from and --to are both Glue {own}"),
        (["--from", other, "--to", own, str(script)], f"run `sparkmark runtime add {other}`"),
        (["--from", own, "--to", other, str(tmp_path / "gone.py")], "gone.py' does not exist"),
        (["--from", own, "--to", other], "name at least one job script"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "sparkmark", "upgrade-check", *args],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert done.returncode == 1 and said in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1
