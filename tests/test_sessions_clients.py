"""Interactive sessions used by clients nobody here wrote, as their users run them,
against a `sparkmark api` process:

- dbt-glue (PyPI), with a small dbt project (tests/fixtures/dbt_glue): a seed, a table,
  a view, an incremental model and tests; `dbt seed`, `dbt run` twice, `dbt test`.
- AWS's Glue Jupyter kernel (aws-glue-sessions, `glue_pyspark`): a notebook with the
  usual magics, run with `jupyter nbconvert --execute`, while dbt's session still runs.

Both reach the endpoint the way their documentation says: dbt through AWS's variables,
the kernel through a named AWS profile (`sparkmark aws-profile`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import boto3
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DBT = ROOT / ".venv-clients" / "dbt" / "bin" / "dbt"
JUPYTER = ROOT / ".venv-clients" / "jupyter" / "bin" / "jupyter"
PROJECT = Path(__file__).parent / "fixtures" / "dbt_glue"
TOKEN = "sessions-test-token"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """`sparkmark api` as a process, its pool started at once; (URL, folder)."""
    for tool in (DBT, JUPYTER):
        if not tool.exists():
            pytest.fail(f"{tool} is missing: run `make clients`")
    root = tmp_path_factory.mktemp("clients")
    (root / "sparkmark.toml").write_text('[pool]\nsize = 1\nmemory = "1g"\nprestart = true\n')
    env = {
        **os.environ,
        "SPARKMARK_HOME": str(root / "home"),
        "SPARKMARK_CONFIG": str(root / "sparkmark.toml"),
        "SPARKMARK_API_TOKEN": TOKEN,
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkmark", "api", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    found = None
    for _ in range(20):
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        if found or not line:
            break
    assert found, "sparkmark api printed no URL"
    yield found.group(0), root
    proc.terminate()
    proc.communicate(timeout=60)


def glue_client(url: str):
    return boto3.client(
        "glue", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key=TOKEN
    )


def client_env(**extra: str) -> dict[str, str]:
    """A client's environment: none of sparkmark's or the test's AWS settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPARKMARK_", "PYSPARK"))}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def dbt_project(api):
    url, root = api
    project = root / "shop"
    shutil.copytree(PROJECT, project)
    lake = root / "lake"
    (root / "profiles.yml").write_text(
        "sparkmark:\n"
        "  target: dev\n"
        "  outputs:\n"
        "    dev:\n"
        "      type: glue\n"
        "      role_arn: arn:aws:iam::123456789012:role/GlueInteractiveSessionRole\n"
        "      region: us-east-1\n"
        "      workers: 2\n"
        "      worker_type: G.1X\n"
        "      schema: shop\n"
        f"      location: 'file://{lake}'\n"
        "      session_provisioning_timeout_in_seconds: 300\n"
        "      idle_timeout: 10\n"
        "      glue_session_reuse: true\n"
        "      glue_session_id: dbt-shop\n"
    )
    env = client_env(
        AWS_ENDPOINT_URL_GLUE=url,
        AWS_ENDPOINT_URL_STS=url,
        AWS_ACCESS_KEY_ID="dbt",
        AWS_SECRET_ACCESS_KEY=TOKEN,
        AWS_DEFAULT_REGION="us-east-1",
        DBT_SEND_ANONYMOUS_USAGE_STATS="false",
    )

    def dbt(*args: str) -> dict:
        done = subprocess.run(
            [str(DBT), *args, "--profiles-dir", str(root), "--no-use-colors"],
            cwd=project,
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
        return json.loads((project / "target" / "run_results.json").read_text())

    return dbt, lake


def statuses(results: dict) -> dict[str, str]:
    return {r["unique_id"].split(".")[-1]: r["status"] for r in results["results"]}


def test_dbt_glue_builds_seeds_tables_views_and_increments_twice_and_tests_them(api, dbt_project):
    url, _root = api
    dbt, lake = dbt_project
    assert statuses(dbt("seed")) == {"raw_orders": "success"}
    first = statuses(dbt("run"))
    assert first == {"orders": "success", "shipped_orders": "success", "customer_totals": "success"}
    second = statuses(dbt("run"))  # the table is rebuilt, the view replaced, the increment appended
    assert second == first
    tested = statuses(dbt("test"))
    assert len(tested) == 8 and set(tested.values()) == {"pass"}, tested

    glue = glue_client(url)
    tables = {t["Name"]: t for t in glue.get_tables(DatabaseName="shop")["TableList"]}
    assert set(tables) == {"raw_orders", "orders", "shipped_orders", "customer_totals"}
    assert tables["shipped_orders"]["TableType"] == "VIRTUAL_VIEW"
    assert "from shop.orders" in tables["shipped_orders"]["ViewOriginalText"]
    assert tables["orders"]["TableType"] == "EXTERNAL_TABLE"
    assert tables["orders"]["Parameters"]["spark.sql.sources.provider"] == "parquet"
    assert [c["Name"] for c in tables["orders"]["StorageDescriptor"]["Columns"]] == [
        "order_id",
        "customer",
        "status",
        "amount",
        "ordered_on",
    ]
    assert pq.read_table(lake / "shop" / "orders").num_rows == 5  # rebuilt, not doubled
    totals = pq.read_table(lake / "shop" / "customer_totals").to_pydict()
    assert sorted(totals["customer"]) == ["ada", "ben", "cy"]  # the second run added no one twice
    assert sorted(totals["total"]) == [15.5, 20.0, 23.0]
    sessions = glue.list_sessions()["Sessions"]
    assert [s["Id"] for s in sessions] == ["dbt-shop"]
    assert sessions[0]["DefaultArguments"]["--enable-glue-datacatalog"] == "true"


NOTEBOOK = [
    "%profile sparkmark",
    "%region us-east-1",
    "%iam_role arn:aws:iam::123456789012:role/GlueNotebook",
    "%glue_version 5.0",
    "%idle_timeout 30",
    "%number_of_workers 2",
    '%%configure\n{"--my_param": "from-notebook"}',
    "import sys\nfrom awsglue.utils import getResolvedOptions\nfrom awsglue.context import GlueContext\n"
    "glueContext = GlueContext(sc)\nargs = getResolvedOptions(sys.argv, ['my_param'])\nprint(args['my_param'])",
    "df = spark.createDataFrame([(1, 'a'), (2, 'b'), (3, 'c')], ['id', 'v'])\ndf.count()",
    "df.filter('id > 1').count() * 10",
    "spark.sql('select count(*) from shop.orders').collect()[0][0]",
    "spark.sql('select count(*) from shop.shipped_orders').collect()[0][0]",
    "1 / 0",
    "spark.version",  # %glue_version 5.0: the session runs on Glue 5.0's Spark, in its runtime
    "%stop_session",
]


def cell_text(cell: dict) -> str:
    parts = []
    for out in cell["outputs"]:
        text = out.get("text") or out.get("data", {}).get("text/plain") or ""
        parts.append("".join(text) if isinstance(text, list) else text)
    return "".join(parts)


def test_the_glue_jupyter_kernel_runs_a_notebook_against_sparkmark(api, dbt_project, tmp_path):
    url, root = api
    dbt, _lake = dbt_project
    glue = glue_client(url)
    if "orders" not in {t["Name"] for t in glue.get_tables(DatabaseName="shop")["TableList"]}:
        dbt("seed")
        dbt("run")
    aws_config, aws_creds = tmp_path / "aws_config", tmp_path / "aws_credentials"
    made = subprocess.run(
        [sys.executable, "-m", "sparkmark", "aws-profile", "--endpoint", url],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "SPARKMARK_HOME": str(root / "home"),
            "SPARKMARK_API_TOKEN": TOKEN,
            "AWS_CONFIG_FILE": str(aws_config),
            "AWS_SHARED_CREDENTIALS_FILE": str(aws_creds),
        },
    )
    assert made.returncode == 0, made.stderr
    kernels = tmp_path / "jupyter"
    bin_dir = JUPYTER.parent
    site = next((bin_dir.parent / "lib").glob("python3*/site-packages/aws_glue_interactive_sessions_kernel"))
    env = client_env(
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        AWS_CONFIG_FILE=str(aws_config),
        AWS_SHARED_CREDENTIALS_FILE=str(aws_creds),
        JUPYTER_PATH=str(kernels / "share" / "jupyter"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
        HOME=str(tmp_path),
    )
    installed = subprocess.run(
        [str(JUPYTER), "kernelspec", "install", "--prefix", str(kernels), str(site / "glue_pyspark")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert installed.returncode == 0, installed.stderr
    notebook = tmp_path / "explore.ipynb"
    notebook.write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "id": f"c{i}",
                        "metadata": {},
                        "source": c,
                        "outputs": [],
                        "execution_count": None,
                    }
                    for i, c in enumerate(NOTEBOOK)
                ],
                "metadata": {
                    "kernelspec": {
                        "name": "glue_pyspark",
                        "display_name": "Glue PySpark",
                        "language": "python",
                    }
                },
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    done = subprocess.run(
        [
            str(JUPYTER),
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            str(notebook),
            "--output",
            "ran.ipynb",
            "--ExecutePreprocessor.timeout=600",
            "--allow-errors",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cells = json.loads((tmp_path / "ran.ipynb").read_text())["cells"]
    texts = [cell_text(c) for c in cells]
    assert "Session Type: etl" in texts[7] and "has been created" in texts[7], texts[7]
    assert texts[7].rstrip().endswith("from-notebook")
    assert texts[8].strip() == "3"
    assert texts[9].strip() == "20"
    assert texts[10].strip() == "5"  # the table dbt's session made, seen from the notebook's
    assert texts[11].strip() == "3"  # dbt's view, made in this session's metastore from the catalog
    assert "ZeroDivisionError: division by zero" in texts[12]  # the kernel shows the statement's error
    assert "3.5.4" in texts[13], texts[13]
    assert "Stopped session" in texts[14]
    notebook_sessions = [s for s in glue.list_sessions()["Sessions"] if s["Id"] != "dbt-shop"]
    assert len(notebook_sessions) == 1
    found = notebook_sessions[0]
    assert found["Status"] == "STOPPED"
    assert found["GlueVersion"] == "5.0" and found["IdleTimeout"] == 30 and found["NumberOfWorkers"] == 2
    assert found["DefaultArguments"]["--my_param"] == "from-notebook"
