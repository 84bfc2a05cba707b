"""The package is the product: the wheel this repository builds, installed into a fresh
virtualenv in a temporary folder the repository is out of reach of, gives `import
awsglue` in a plain Python, runs a Glue script on s3:// against moto with the S3
connector fetched on demand, and runs the example project's tests through the plugin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "testing" / "jobs" / "paid_orders.py"


def _run(
    args: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 900
) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtualenv with the built wheel (and its testing extra) installed, and an
    environment that knows nothing of the repository: no PYTHONPATH, no repo venv on
    PATH, an empty connector cache."""
    where = tmp_path_factory.mktemp("wheel")
    try:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SPARKMARK_", "AWS_", "PYSPARK_", "VIRTUAL_ENV", "PYTHON"))
        }
        env["PATH"] = os.pathsep.join(
            p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
        )
        env["SPARKMARK_JARS_DIR"] = str(where / "connectors")
        env["HOME"] = os.environ.get("HOME", str(where))
        dist = where / "dist"
        _run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(dist)],
            cwd=where,
            env=env,
        )
        wheel = next(dist.glob("sparkmark-*.whl"))
        base = getattr(sys, "_base_executable", sys.executable)
        _run([base, "-m", "venv", str(where / "venv")], cwd=where, env=env)
        python = where / "venv" / "bin" / "python"
        # --no-compile: the files a test imports are compiled as they are imported; the rest
        # (most of PySpark and the AWS SDK) would be compiled for nothing.
        _run(
            [str(python), "-m", "pip", "install", "-q", "--no-compile", f"{wheel}[testing]"],
            cwd=where,
            env=env,
            timeout=1800,
        )
        env["PATH"] = f"{where / 'venv' / 'bin'}{os.pathsep}{env['PATH']}"
        work = where / "work"
        work.mkdir()
        yield python, env, work
    finally:
        shutil.rmtree(where, ignore_errors=True)  # a virtualenv and the AWS SDK: about 1.3 GB


def test_awsglue_imports_in_a_plain_python_of_the_environment(installed):
    python, env, work = installed
    code = (
        "import sparkmark, awsglue, awsgluedq, awsglueml; from awsglue import DynamicFrame; "
        "from awsglue.context import GlueContext; "
        "print(sparkmark.__file__); print(GlueContext.__module__, DynamicFrame.__module__)"
    )
    done = _run([str(python), "-c", code], cwd=work, env=env)
    where, modules = done.stdout.split("\n")[:2]
    assert where.startswith(str(python.parents[1])) and not where.startswith(str(ROOT / "src"))
    assert modules.split() == ["sparkmark.glue.context", "sparkmark.glue.dynamicframe"]
    off = subprocess.run(
        [str(python), "-c", "import awsglue"], cwd=work, env={**env, "SPARKMARK_AWSGLUE": "off"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert off.returncode != 0 and "No module named 'awsglue'" in off.stderr  # the opt-out leaves it to AWS's


def test_a_glue_script_on_s3_fetches_its_connector_on_demand(installed, s3_server):
    python, env, work = installed
    s3 = boto3.client(
        "s3", endpoint_url=s3_server.endpoint_url, aws_access_key_id="k", aws_secret_access_key="s",
        region_name="us-east-1",
    )  # fmt: skip
    for bucket in ("wheel-lake", "wheel-out"):
        s3.create_bucket(Bucket=bucket)
    s3.put_object(
        Bucket="wheel-lake",
        Key="orders/a.json",
        Body=json.dumps({"order_id": "1", "amount": 2.0, "status": "PAID"}),
    )
    run_env = {
        **env,
        "AWS_ENDPOINT_URL_S3": s3_server.endpoint_url,
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_DEFAULT_REGION": "us-east-1",
        "SPARKMARK_HOME": str(work / "home"),
    }
    shutil.copy(JOB, work / "paid_orders.py")
    argv = [
        str(python.parent / "sparkmark"), "run", "paid_orders.py", "--JOB_NAME", "paid",
        "--job-bookmark-option", "job-bookmark-enable",
        "--source_path", "s3://wheel-lake/orders/", "--target_path", "s3://wheel-out/paid/",
    ]  # fmt: skip
    first = _run(argv, cwd=work, env=run_env)
    assert first.stderr.count("fetching the s3 connector") == 1, first.stderr  # said once, in one line
    listing = Path(env["SPARKMARK_JARS_DIR"]) / "spark-s3.classpath"
    assert "hadoop-aws-" in listing.read_text()
    written = [o["Key"] for o in s3.list_objects_v2(Bucket="wheel-out").get("Contents", [])]
    assert any(k.endswith(".parquet") for k in written), written

    s3.put_object(
        Bucket="wheel-lake",
        Key="orders/b.json",
        Body=json.dumps({"order_id": "2", "amount": 1.0, "status": "PAID"}),
    )
    second = _run(argv, cwd=work, env=run_env)
    assert "fetching" not in second.stderr  # fetched once
    shown = _run([str(python.parent / "sparkmark"), "runs", "list", "paid", "--json"], cwd=work, env=run_env)
    latest = json.loads(shown.stdout)[0]
    assert latest["state"] == "SUCCEEDED" and latest["metrics"]["sources"]["orders_source"]["files_read"] == 1

    doctor = _run([str(python.parent / "sparkmark"), "doctor", "--json"], cwd=work, env=run_env)
    found = {f["check"]: f for f in json.loads(doctor.stdout)}
    assert found["connector s3"]["status"] == "ok" and "fetched on demand" in found["connector s3"]["detail"]
    assert found["connector kafka"]["status"] == "info"  # never needed: never fetched
    assert found["awsglue"]["status"] == found["java"]["status"] == found["state store"]["status"] == "ok"
    assert found["s3 endpoint"]["status"] == "ok"


def test_the_example_projects_tests_pass_through_the_plugin(installed):
    python, env, work = installed
    project = work / "project"
    shutil.copytree(ROOT / "examples" / "testing", project)
    done = _run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project, env=env)
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, done.stdout[-3000:]
    assert "PytestAssertRewriteWarning" not in done.stdout
