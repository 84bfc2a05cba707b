"""A job that reads a table by name from the Glue Data Catalog: the test makes the table
with boto3, as a deployment would, and runs the job against it."""

import json
from pathlib import Path

JOB = Path(__file__).parents[1] / "jobs" / "catalog_orders.py"


def test_the_job_counts_a_catalog_tables_orders_by_status(glue_catalog, run_glue_job, spark, tmp_path):
    data = tmp_path / "orders"
    data.mkdir()
    (data / "part-0.json").write_text(
        "\n".join(
            json.dumps({"order_id": str(i), "status": s}) for i, s in enumerate(["PAID", "PAID", "OPEN"])
        )
    )
    glue_catalog.create_database(DatabaseInput={"Name": "sales"})
    glue_catalog.create_table(
        DatabaseName="sales",
        TableInput={
            "Name": "orders",
            "Parameters": {"classification": "json"},
            "StorageDescriptor": {
                "Location": str(data),
                "Columns": [{"Name": "order_id", "Type": "string"}, {"Name": "status", "Type": "string"}],
                "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"},
            },
        },
    )

    run = run_glue_job(
        JOB, JOB_NAME="catalog_orders", database="sales", table="orders", target_path=str(tmp_path / "counts")
    ).assert_succeeded()

    counts = {r.status: r["count"] for r in spark.read.json(str(tmp_path / "counts")).collect()}
    assert counts == {"PAID": 2, "OPEN": 1}
    assert run.reads["orders_table"].metrics["files_read"] == 1
