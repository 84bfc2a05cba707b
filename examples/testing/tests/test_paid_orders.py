"""Tests of the paid-orders job, run as Glue runs it: with its arguments, its bookmark
and its output. The fixtures (spark, run_glue_job, s3, glue_context, glue_catalog) come
from sparkmark's pytest plugin; nothing needs setting up."""

import json
from pathlib import Path

import pytest
from awsglue.dynamicframe import DynamicFrame
from awsglue.transforms import Filter

JOB = Path(__file__).parents[1] / "jobs" / "paid_orders.py"


def write_orders(folder: Path, name: str, orders: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("\n".join(json.dumps(o) for o in orders) + "\n")
    return path


@pytest.fixture
def lake(tmp_path):
    return tmp_path / "orders", tmp_path / "paid"


@pytest.fixture
def bookmarked(lake):
    """The job's arguments as its nightly trigger passes them: bookmarks on."""
    source, target = lake
    return dict(
        JOB_NAME="paid_orders",
        job_bookmark_option="job-bookmark-enable",
        source_path=str(source),
        target_path=str(target),
    )


def test_the_first_run_reads_every_file_and_keeps_the_paid_orders(run_glue_job, spark, lake, bookmarked):
    source, target = lake
    write_orders(source / "day=1", "a.json", [{"order_id": "1", "amount": 10.0, "status": "PAID"}])
    write_orders(source / "day=1", "b.json", [{"order_id": "2", "amount": 5.5, "status": "OPEN"}])

    run = run_glue_job(JOB, **bookmarked)

    run.assert_succeeded()
    assert run.state == "SUCCEEDED"
    assert [Path(f).name for f in run.files_read("orders_source")] == ["a.json", "b.json"]
    rows = spark.read.parquet(str(target)).collect()
    assert [(r.order_id, r.amount) for r in rows] == [("1", 10.0)]


def test_the_next_run_reads_only_the_new_file(run_glue_job, spark, lake, bookmarked):
    source, target = lake
    write_orders(source / "day=1", "a.json", [{"order_id": "1", "amount": 10.0, "status": "PAID"}])
    run_glue_job(JOB, **bookmarked).assert_succeeded()
    write_orders(source / "day=2", "c.json", [{"order_id": "3", "amount": 7.0, "status": "PAID"}])

    second = run_glue_job(JOB, **bookmarked).assert_succeeded()

    assert [Path(f).name for f in second.files_read()] == ["c.json"]
    assert second.reads["orders_source"].metrics["files_new"] == 1
    ids = sorted(r.order_id for r in spark.read.parquet(str(target)).collect())
    assert ids == ["1", "3"]  # the first run's output, and the new order once


def test_a_run_with_nothing_new_reads_nothing_and_succeeds(run_glue_job, lake, bookmarked):
    source, _ = lake
    write_orders(source, "a.json", [{"order_id": "1", "amount": 1.0, "status": "PAID"}])
    run_glue_job(JOB, **bookmarked).assert_succeeded()

    again = run_glue_job(JOB, **bookmarked).assert_succeeded()

    assert again.files_read() == []


def test_without_bookmarks_every_run_reads_everything(run_glue_job, lake):
    source, target = lake
    write_orders(source, "a.json", [{"order_id": "1", "amount": 1.0, "status": "PAID"}])
    arguments = dict(JOB_NAME="paid_orders", source_path=str(source), target_path=str(target))

    first = run_glue_job(JOB, **arguments).assert_succeeded()
    second = run_glue_job(JOB, **arguments).assert_succeeded()

    assert first.files_read() == second.files_read() != []
    assert second.run.bookmark_option.value == "job-bookmark-disable"  # Glue's default


def test_the_bookmark_names_the_processed_files(run_glue_job, lake, bookmarked):
    source, _ = lake
    write_orders(source, "a.json", [{"order_id": "1", "amount": 1.0, "status": "PAID"}])

    run = run_glue_job(JOB, **bookmarked).assert_succeeded()

    assert run.bookmark is not None and run.bookmark.run_id == run.run.run_id
    assert "orders_source" in run.bookmark.ctx_states


def test_a_missing_argument_fails_the_job_with_its_name(run_glue_job, lake):
    source, _ = lake

    run = run_glue_job(JOB, JOB_NAME="paid_orders", source_path=str(source))

    assert not run.succeeded and run.state == "FAILED"  # as Glue's run of it ends
    assert "target_path" in run.error


def test_a_wrong_bookmark_option_is_refused_before_the_job_starts(run_glue_job, bookmarked):
    run = run_glue_job(JOB, **{**bookmarked, "job_bookmark_option": "job-bookmark-sometimes"})

    assert not run.succeeded and run.run is None and run.state == "FAILED"
    assert "job-bookmark-sometimes" in run.error


def test_the_job_runs_on_s3(run_glue_job, s3, spark):
    s3.put("s3://lake/orders/day=1/a.json", json.dumps({"order_id": "9", "amount": 3.0, "status": "PAID"}))
    s3.create_bucket("warehouse")

    run = run_glue_job(
        JOB,
        JOB_NAME="paid_orders_s3",
        job_bookmark_option="job-bookmark-enable",
        source_path="s3://lake/orders/",
        target_path="s3://warehouse/paid/",
    ).assert_succeeded()

    assert run.files_read() == ["s3://lake/orders/day=1/a.json"]
    assert any(key.endswith(".parquet") for key in s3.list("s3://warehouse/paid/"))


def test_the_filter_keeps_paid_orders_only(glue_context, spark):
    """A transform tested alone, on a DynamicFrame made in the test."""
    frame = DynamicFrame.fromDF(
        spark.createDataFrame([("1", "PAID"), ("2", "OPEN")], "order_id string, status string"),
        glue_context,
        "orders",
    )

    paid = Filter.apply(frame=frame, f=lambda row: row["status"] == "PAID")

    assert [r.order_id for r in paid.toDF().collect()] == ["1"]
