"""The Spark jobs a Glue script costs: the façade runs only the Spark work Glue's own
would (a schema for JSON records, then the write), with no pass of its own to test a
frame for emptiness, to find arrays of records, or to keep a Filter's output.

Jobs are counted by Spark's own status tracker, under a job group set around the run
(the script runs in this thread, so its jobs carry the group)."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pyarrow.parquet as pq

from sparkmark.testing.glue_job import run_glue_script

# The Glue job U1 (bench/u1_plugin.py) times, fifty times over.
SCRIPT = (Path(__file__).parent / "fixtures" / "paid_orders_job.py").read_text()


def actions_of(spark, run) -> list[str]:
    """The call site of each Spark job ``run()`` started, in order."""
    sc = spark.sparkContext
    group = f"jobs-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, "counted")
    try:
        run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    sites = []
    for job_id in sorted(tracker.getJobIdsForGroup(group)):
        info = tracker.getJobInfo(job_id)
        names = [tracker.getStageInfo(s).name for s in info.stageIds if tracker.getStageInfo(s) is not None]
        sites.append(names[0].split(" at ")[0] + " at " + Path(names[0].split(" at ")[1].split(":")[0]).name)
    return sites


def write_lines(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def rows_in(folder: Path) -> list[tuple]:
    files = sorted(
        p for p in folder.rglob("*.parquet") if not any(part.startswith(("_", ".")) for part in p.parts)
    )
    return sorted((r["id"], r["status"]) for f in files for r in pq.read_table(f).to_pylist())


def test_a_glue_script_runs_only_the_spark_jobs_its_work_needs(spark, tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    source, target = tmp_path / "in", tmp_path / "out"
    write_lines(source / "a.json", [{"id": 1, "status": "PAID"}, {"id": 2, "status": "OPEN"}])
    write_lines(source / "b.json", [{"id": 3, "status": "PAID"}])
    arguments = {
        "source_path": str(source),
        "target_path": str(target),
        "job_bookmark_option": "job-bookmark-enable",
    }

    first: list = []
    sites = actions_of(spark, lambda: first.append(run_glue_script(script, "counted_jobs", **arguments)))
    first[0].assert_succeeded()
    assert rows_in(target) == [(1, "PAID"), (3, "PAID")]
    # The records' schema (one aggregate in sources/json_records.py, which adaptive
    # execution may run as two jobs, one per stage) and the write; no isEmpty, first or count of the façade's own.
    assert sites[-1].startswith("save at "), sites  # the call site Spark names: its own, or <unknown>
    inference = sites[:-1]
    assert inference and all(site == "head at json_records.py" for site in inference), sites
    assert len(inference) <= 2, sites

    # Nothing new: the same passes, and the write of no records leaves nothing behind.
    again: list = []
    sites = actions_of(spark, lambda: again.append(run_glue_script(script, "counted_jobs", **arguments)))
    again[0].assert_succeeded()
    assert again[0].reads["orders"].files_read == 0
    assert not any(site.startswith(("isEmpty", "first", "count")) for site in sites), sites
    assert rows_in(target) == [(1, "PAID"), (3, "PAID")]
    published = [
        p
        for p in target.rglob("*")
        if p.is_file() and not any(x.startswith(("_", ".")) for x in p.relative_to(target).parts)
    ]
    assert len(published) == len([p for p in published if p.suffix == ".parquet"]) >= 1
    assert again[0].outputs and all(o.state.value in ("COMMITTED", "PUBLISHED") for o in again[0].outputs)


def test_arrays_of_records_and_lines_of_records_in_one_read(spark, tmp_path):
    """A document that is an array holds one record per element; a line that is one
    record is one; an array that is not valid JSON is an error record, not lost."""
    from awsglue.context import GlueContext

    source = tmp_path / "in"
    source.mkdir()
    (source / "arrays.json").write_text('[{"id": 1}, {"id": 2}]\n[]\n')
    (source / "lines.json").write_text('{"id": 3}\n\n{"id": 4}\n')
    (source / "broken.json").write_text('[{"id": 5},\n')
    glue = GlueContext(spark.sparkContext)
    frame = glue.create_dynamic_frame.from_options("s3", {"paths": [str(source)]}, format="json")
    assert sorted(r["id"] for r in frame.toDF().collect()) == [1, 2, 3, 4]
    assert frame.errorsCount() == 1
    assert frame.errorsAsDynamicFrame().toDF().first()["record"] == '[{"id": 5},'


LEAVES_STATE = textwrap.dedent(
    """
    import sys
    from awsglue.context import GlueContext
    from awsglue.job import Job
    from awsglue.utils import getResolvedOptions
    from pyspark.context import SparkContext

    args = getResolvedOptions(sys.argv, ["JOB_NAME"])
    glueContext = GlueContext(SparkContext.getOrCreate())
    spark = glueContext.spark_session
    job = Job(glueContext)
    job.init(args["JOB_NAME"], args)
    seen = spark.catalog.tableExists("left_by_the_last_run")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    frame = spark.range(5)
    frame.createOrReplaceTempView("left_by_the_last_run")
    frame.createOrReplaceGlobalTempView("left_globally")
    frame.cache().count()
    spark.sparkContext.setLocalProperty("left.property", "yes")
    print("SEEN", seen)
    job.commit()
    """
)


def test_each_run_glue_job_starts_from_a_session_of_its_own_and_leaves_nothing(spark, tmp_path, capsys):
    """As a warm process runs each job: the script's session is new, and its views,
    cached data, settings and local properties are gone after it; the test's own session
    is the one ``getOrCreate()`` gives again."""
    from pyspark.sql import SparkSession

    script = tmp_path / "leaves_state.py"
    script.write_text(LEAVES_STATE)
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    for _ in range(2):
        run_glue_script(script, "leaves_state").assert_succeeded()
        assert "SEEN False" in capsys.readouterr().out  # the earlier run's view was not there
    assert not spark.catalog.tableExists("left_by_the_last_run")
    assert not spark.catalog.tableExists("global_temp.left_globally")
    assert spark.sparkContext._jsc.getPersistentRDDs().isEmpty()
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions
    assert spark.sparkContext.getLocalProperty("left.property") is None
    assert SparkSession.builder.getOrCreate() is spark
