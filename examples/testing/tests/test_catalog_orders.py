"""A job that reads a table by name from the Glue Data Catalog: the test makes the table
with boto3, as a deployment would, and runs the job against it."""

import json
from pathlib import Path

import pytest

JOB = Path(__file__).parents[1] / "jobs" / "catalog_orders.py"
ORDERS = [{"order_id": str(i), "status": s} for i, s in enumerate(["PAID", "PAID", "OPEN"])]


def make_orders_table(glue, location: str) -> None:
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_table(
        DatabaseName="sales",
        TableInput={
            "Name": "orders",
            "Parameters": {"classification": "json"},
            "StorageDescriptor": {
                "Location": location,
                "Columns": [{"Name": "order_id", "Type": "string"}, {"Name": "status", "Type": "string"}],
                "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"},
            },
        },
    )


def test_the_job_counts_a_catalog_tables_orders_by_status(glue_catalog, run_glue_job, spark, tmp_path):
    data = tmp_path / "orders"
    data.mkdir()
    (data / "part-0.json").write_text("\n".join(json.dumps(o) for o in ORDERS))
    make_orders_table(glue_catalog, str(data))

    run = run_glue_job(
        JOB, JOB_NAME="catalog_orders", database="sales", table="orders", target_path=str(tmp_path / "counts")
    ).assert_succeeded()

    counts = {r.status: r["count"] for r in spark.read.json(str(tmp_path / "counts")).collect()}
    assert counts == {"PAID": 2, "OPEN": 1}
    assert run.reads["orders_table"].metrics["files_read"] == 1


def test_the_same_job_on_a_table_in_s3(glue_catalog, s3, run_glue_job, spark, tmp_path):
    s3.put("s3://lake/orders/part-0.json", "\n".join(json.dumps(o) for o in ORDERS))
    make_orders_table(glue_catalog, "s3://lake/orders/")

    run = run_glue_job(
        JOB, JOB_NAME="catalog_orders", database="sales", table="orders", target_path=str(tmp_path / "counts")
    ).assert_succeeded()

    assert run.files_read("orders_table") == ["s3://lake/orders/part-0.json"]


def test_a_table_that_is_not_in_the_catalog_fails_the_job(glue_catalog, run_glue_job, tmp_path):
    glue_catalog.create_database(DatabaseInput={"Name": "sales"})

    run = run_glue_job(
        JOB,
        JOB_NAME="catalog_orders",
        database="sales",
        table="missing",
        target_path=str(tmp_path / "counts"),
    )

    assert not run.succeeded
    with pytest.raises(AssertionError, match="missing"):
        run.assert_succeeded()
