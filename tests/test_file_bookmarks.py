"""File-source bookmarks end to end: real Spark, real files, a real state store."""

from __future__ import annotations

import functools
import json
import logging
import operator
import os
import shutil
import time

import pytest

from sparkmark import BookmarkConflict, ConcurrentRunsExceeded, SourceError, spark_lines
from sparkmark.engine.models import BookmarkOption, RunState

from .conftest import ids, write_json

T0 = 1_700_000_000  # a fixed modification time, in seconds


def test_first_run_reads_all_and_next_reads_nothing(any_runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1, 2])
    write_json(data / "b.json", [3])
    first, _job1 = any_runner.run(data)
    assert first == [1, 2, 3]
    second, job2 = any_runner.run(data)
    assert second == []
    run = any_runner.store.get_run(job2.run_id)
    assert run.state is RunState.SUCCEEDED
    assert run.metrics["sources"]["src"]["files_skipped"] == 2
    assert run.metrics["sources"]["src"]["files_read"] == 0
    assert run.metrics["sources"]["src"]["duration_seconds"] > 0


def test_empty_run_keeps_the_schema_of_earlier_runs(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1], name="x")
    runner.run(data)
    job = runner.start()
    df = job.read_files(str(data), format="json", ctx="src")
    assert df.count() == 0
    assert sorted(df.columns) == ["id", "name"]
    job.commit()


def test_new_file_is_read_exactly_once(any_runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    any_runner.run(data)
    write_json(data / "b.json", [2, 3])
    assert any_runner.run(data)[0] == [2, 3]
    assert any_runner.run(data)[0] == []


def test_modified_file_is_read_again(runner, tmp_path):
    data = tmp_path / "data"
    path = write_json(data / "a.json", [1], mtime=T0)
    write_json(data / "b.json", [5], mtime=T0)
    runner.run(data)
    write_json(path, [1, 2], mtime=T0 + 60)  # rewritten in place: new mtime and size
    rows, job = runner.run(data)
    assert rows == [1, 2]
    metrics = runner.store.get_run(job.run_id).metrics["sources"]["src"]
    assert (metrics["files_modified"], metrics["files_new"]) == (1, 0)


def test_same_size_rewrite_with_new_mtime_is_read_again(runner, tmp_path):
    data = tmp_path / "data"
    path = write_json(data / "a.json", [1], mtime=T0)
    runner.run(data)
    write_json(path, [7], mtime=T0 + 1)  # same byte count, new mtime
    assert runner.run(data)[0] == [7]


def test_equal_mtime_boundary_is_split_without_loss_or_repeat(runner, tmp_path):
    data = tmp_path / "data"
    for n in range(5):
        write_json(data / f"f{n}.json", [n], mtime=T0)  # all share one mtime
    seen = []
    for _ in range(3):
        rows, _ = runner.run(data, boundedFiles="2")
        seen.append(rows)
    assert [len(r) for r in seen] == [2, 2, 1]
    assert sorted(functools.reduce(operator.iadd, seen, [])) == [0, 1, 2, 3, 4]
    write_json(data / "f5.json", [5], mtime=T0)  # one more file at that same mtime
    assert runner.run(data)[0] == [5]


def test_file_moved_in_with_an_old_mtime_is_found(runner, tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    write_json(data / "new.json", [1], mtime=T0 + 3600)
    runner.run(data)
    old = write_json(outside / "old.json", [2], mtime=T0)  # older than the high-water mark
    shutil.move(str(old), str(data / "old.json"))  # mv keeps the mtime
    assert os.stat(data / "old.json").st_mtime == T0
    rows, job = runner.run(data)
    assert rows == [2]
    assert runner.store.get_run(job.run_id).metrics["sources"]["src"]["files_late"] == 1


def test_failure_commits_nothing_and_next_run_reads_again(any_runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1, 2])
    job = any_runner.start()
    with pytest.raises(RuntimeError), job:
        df = job.read_files(str(data), ctx="src")
        assert ids(df) == [1, 2]
        raise RuntimeError("the transform broke")
    run = any_runner.store.get_run(job.run_id)
    assert run.state is RunState.FAILED
    assert "the transform broke" in run.error
    assert run.committed_version is None
    assert any_runner.store.latest_version(any_runner.name) is None
    assert any_runner.run(data)[0] == [1, 2]


def test_context_manager_commits_on_success(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    with runner.start() as job:
        assert ids(job.read_files(str(data), ctx="src")) == [1]
    assert runner.store.get_run(job.run_id).state is RunState.SUCCEEDED
    assert runner.run(data)[0] == []


def test_concurrent_run_is_refused(any_runner, tmp_path):
    write_json(tmp_path / "data" / "a.json", [1])
    first = any_runner.start()
    with pytest.raises(ConcurrentRunsExceeded) as info:
        any_runner.start()
    assert first.run_id in str(info.value)
    first.commit()
    any_runner.start().commit()  # free again once the first run ended


def test_expired_lease_is_taken_over(any_runner, tmp_path, caplog):
    store = any_runner.store
    # A run that crashed: RUNNING, holding a lease that has already expired.
    crashed = store.start_run(
        job_name=any_runner.name,
        run_id="jr_crashed",
        attempt=0,
        option=BookmarkOption.ENABLE,
        arguments={},
        owner="gone:1",
        lease_seconds=-1,
    )
    assert crashed.state is RunState.RUNNING
    with caplog.at_level(logging.WARNING, logger="sparkmark.state"):
        job = any_runner.start()
    assert "takes the job over" in caplog.text
    assert store.get_lease(any_runner.name).run_id == job.run_id
    old = store.get_run("jr_crashed")
    assert old.state is RunState.FAILED and "expired" in old.error
    write_json(tmp_path / "data" / "a.json", [1])
    assert ids(job.read_files(str(tmp_path / "data"), ctx="src")) == [1]
    job.commit()


def test_commit_is_refused_when_the_bookmark_moved(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    runner.run(data)
    job = runner.start()
    write_json(data / "b.json", [2])
    job.read_files(str(data), ctx="src")
    runner.store.reset(runner.name)  # the bookmark moves under the running run
    with pytest.raises(BookmarkConflict):
        job.commit()
    assert runner.store.get_run(job.run_id).state is RunState.FAILED
    assert runner.run(data)[0] == [1, 2]  # after the reset, everything again


def test_pause_reads_like_enable_and_advances_nothing(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    runner.run(data)
    write_json(data / "b.json", [2])
    before = runner.store.latest_version(runner.name).version
    assert runner.run(data, "job-bookmark-pause")[0] == [2]
    assert runner.run(data, "job-bookmark-pause")[0] == [2]
    assert runner.store.latest_version(runner.name).version == before
    assert runner.run(data)[0] == [2]


def test_pause_with_from_and_to_reads_exactly_that_range(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    _, run1 = runner.run(data)
    write_json(data / "b.json", [2])
    _, run2 = runner.run(data)
    write_json(data / "c.json", [3])
    _, run3 = runner.run(data)
    write_json(data / "d.json", [4])  # not processed by any run yet
    rows, _job = runner.run(
        data, "job-bookmark-pause", "--job-bookmark-from", run1.run_id, "--job-bookmark-to", run3.run_id
    )
    assert rows == [2, 3]
    rows, _ = runner.run(
        data, "job-bookmark-pause", "--job-bookmark-from", run2.run_id, "--job-bookmark-to", run2.run_id
    )
    assert rows == []
    assert runner.store.latest_version(runner.name).run_id == run3.run_id
    assert runner.run(data)[0] == [4]


def test_disable_reads_everything_and_touches_no_state(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    runner.run(data)
    version = runner.store.latest_version(runner.name).version
    rows, job = runner.run(data, "job-bookmark-disable")
    assert rows == [1]
    assert runner.store.latest_version(runner.name).version == version
    assert runner.store.get_run(job.run_id).committed_version is None


def test_reset_reads_everything_again(any_runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    write_json(data / "b.json", [2])
    any_runner.run(data)
    version = any_runner.store.reset(any_runner.name)
    assert version.ctx_states == {}
    assert any_runner.run(data)[0] == [1, 2]
    kinds = [v.kind.value for v in any_runner.store.history(any_runner.name)]
    assert kinds == ["COMMIT", "RESET", "COMMIT"]


def test_rewind_to_run_n(any_runner, tmp_path):
    data = tmp_path / "data"
    runs = []
    for n in range(1, 4):
        write_json(data / f"f{n}.json", [n])
        runs.append(any_runner.run(data)[1])
    rewound = any_runner.store.rewind(any_runner.name, runs[0].run_id)
    assert rewound.rewound_to == 1
    assert any_runner.run(data)[0] == [2, 3]  # what run 1 had not seen
    # Rewinding again to run 2 (an older version, history intact) works the same way.
    any_runner.store.rewind(any_runner.name, runs[1].run_id)
    assert any_runner.run(data)[0] == [3]
    assert any_runner.run(data)[0] == []


def test_bounded_files_across_three_runs(runner, tmp_path):
    data = tmp_path / "data"
    for n in range(6):
        write_json(data / f"f{n}.json", [n], mtime=T0 + n)
    got = [runner.run(data, boundedFiles="2")[0] for _ in range(3)]
    assert got == [[0, 1], [2, 3], [4, 5]]  # oldest first
    assert runner.run(data, boundedFiles="2")[0] == []


def test_bounded_size_across_three_runs(runner, tmp_path):
    data = tmp_path / "data"
    for n in range(6):
        write_json(data / f"f{n}.json", [n], mtime=T0 + n)
    size = os.path.getsize(data / "f0.json")
    got = [runner.run(data, boundedSize=str(2 * size))[0] for _ in range(3)]
    assert got == [[0, 1], [2, 3], [4, 5]]
    _, job = runner.run(data, boundedSize=str(2 * size))
    assert runner.store.get_run(job.run_id).metrics["sources"]["src"]["files_read"] == 0


def test_invalid_bound_is_a_clear_error(runner, tmp_path):
    write_json(tmp_path / "data" / "a.json", [1])
    job = runner.start()
    with pytest.raises(SourceError, match="boundedFiles must be a positive whole number"):
        job.read_files(str(tmp_path / "data"), ctx="src", boundedFiles="many")
    job.fail("bad option")


def test_max_files_in_band_defers_the_newest(runner, tmp_path):
    data = tmp_path / "data"
    now = time.time()
    for n in range(4):
        write_json(data / f"f{n}.json", [n], mtime=now - 10 + n)  # all inside the 15 min band
    write_json(data / "old.json", [99], mtime=T0)  # outside the band: never deferred
    rows, job = runner.run(data, maxFilesInBand="2")
    assert rows == [0, 1, 99]
    assert runner.store.get_run(job.run_id).metrics["sources"]["src"]["files_deferred"] == 2
    assert runner.run(data, maxFilesInBand="2")[0] == [2, 3]


def test_exclusions(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "keep.json", [1])
    write_json(data / "skip.tmp.json", [2])
    write_json(data / "dt=1" / "x.json", [3])
    write_json(data / "dt=1" / "deep" / "y.json", [4])
    rows, job = runner.run(data, recurse=True, exclusions=json.dumps(["**.tmp.json", "dt=1/deep/**"]))
    assert rows == [1, 3]
    assert runner.store.get_run(job.run_id).metrics["sources"]["src"]["files_excluded"] == 2


def test_hive_partitions_kept_and_hidden_files_ignored(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "dt=2026-01-01" / "a.json", [1])
    write_json(data / "dt=2026-01-02" / "b.json", [2])
    (data / "dt=2026-01-01" / "_SUCCESS").write_text("")
    (data / "dt=2026-01-01" / ".a.json.crc").write_text("junk")
    job = runner.start()
    df = job.read_files(str(data), ctx="src")
    assert sorted((r["id"], str(r["dt"])) for r in df.collect()) == [(1, "2026-01-01"), (2, "2026-01-02")]
    job.commit()
    assert runner.store.get_run(job.run_id).metrics["sources"]["src"]["files_hidden"] == 2


def test_non_partition_subfolders_need_recurse(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "top.json", [1])
    write_json(data / "sub" / "inner.json", [2])
    assert runner.run(data)[0] == [1]
    assert runner.run(data, recurse="true", ctx="src2")[0] == [1, 2]


def test_partition_skipping(runner, tmp_path, caplog):
    data = tmp_path / "data"
    for day in ("d1", "d2", "d3"):
        write_json(data / f"dt={day}" / "a.json", [len(day) * 10 + int(day[1])])
    runner.run(data, skipUnchangedPartitions=True)
    write_json(data / "dt=d2" / "b.json", [99])
    with caplog.at_level(logging.INFO, logger="sparkmark.listing"):
        rows, job = runner.run(data, skipUnchangedPartitions=True)
    assert rows == [99]
    metrics = runner.store.get_run(job.run_id).metrics["sources"]["src"]
    assert metrics["partitions_skipped"] == 2
    assert metrics["files_listed"] == 2  # only dt=d2 was listed
    assert "Skipping partition" in caplog.text and "dt=d1" in caplog.text
    # A new partition is found, and the skipped ones stay skipped.
    write_json(data / "dt=d4" / "a.json", [4])
    assert runner.run(data, skipUnchangedPartitions=True)[0] == [4]


def test_partition_marks_not_trusted_after_exclusions_change(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "dt=1" / "a.json", [1])
    write_json(data / "dt=1" / "b.skip", [2])
    runner.run(data, skipUnchangedPartitions=True, exclusions='["**.skip"]')
    rows, _ = runner.run(data, skipUnchangedPartitions=True, exclusions="[]", fmt="json")
    assert rows == [2]


def test_manifest_contents(runner, tmp_path):
    data = tmp_path / "data"
    a = write_json(data / "dt=1" / "a.json", [1])
    b = write_json(data / "dt=2" / "b.json", [2])
    _, job = runner.run(data)
    manifest = tmp_path / "tempdir" / "partitionlisting" / runner.name / job.run_id / "src.input-files.json"
    assert runner.store.get_run(job.run_id).metrics["sources"]["src"]["manifest"] == str(manifest)
    document = json.loads(manifest.read_text())
    assert document == [
        {"path": f"file://{data}/dt=1", "files": [f"file://{a}"]},
        {"path": f"file://{data}/dt=2", "files": [f"file://{b}"]},
    ]


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_malformed_rows_permissive_and_dropmalformed(runner, tmp_path, mode):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mixed.json").write_text('{"id": 1}\nnot json at all\n{"id": 2}\n')
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("id", LongType()), StructField("_corrupt_record", StringType())])
    job = runner.start()
    df = job.read_files(str(data), ctx="src", schema=schema, mode=mode)
    rows = sorted((r["id"], r["_corrupt_record"]) for r in df.collect() if r["id"] is not None)
    bad = [r["_corrupt_record"] for r in df.collect() if r["id"] is None]
    job.commit()
    assert rows == [(1, None), (2, None)]
    assert bad == (["not json at all"] if mode == "PERMISSIVE" else [])
    assert runner.run(data)[0] == []  # the file counts as processed


def test_malformed_rows_failfast_commits_nothing(runner, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mixed.json").write_text('{"id": 1}\nnot json at all\n')
    job = runner.start()
    with pytest.raises(Exception, match="(?i)malformed"), job:
        job.read_files(str(data), ctx="src", schema="id BIGINT", mode="FAILFAST").collect()
    assert runner.store.get_run(job.run_id).state is RunState.FAILED
    assert runner.store.latest_version(runner.name) is None


def test_zero_byte_file_is_processed(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    (data / "empty.json").write_bytes(b"")
    rows, _job = runner.run(data)
    assert rows == [1]
    files = runner.store.committed_files(runner.name, "src", runner.store.latest_version(runner.name))
    sizes = {f.path.rsplit("/", 1)[1]: f.size for f in files}
    assert sizes == {"a.json": os.path.getsize(data / "a.json"), "empty.json": 0}
    assert runner.run(data)[0] == []


def test_file_deleted_between_listing_and_reading_fails_the_run(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    victim = write_json(data / "b.json", [2])
    job = runner.start()
    # listed, not yet read (bad_records="keep": no up-front pass for malformed records)
    df = job.read_files(str(data), ctx="src", schema="id BIGINT", bad_records="keep")
    victim.unlink()
    with pytest.raises(Exception, match="(?i)(not exist|FileNotFound)"), job:
        df.collect()
    run = runner.store.get_run(job.run_id)
    assert run.state is RunState.FAILED
    assert "b.json was deleted or replaced before Spark read it" in run.error
    assert "\tat " not in run.error and len(run.error) < 4000  # a message, not a JVM stack
    assert runner.store.latest_version(runner.name) is None
    assert runner.run(data)[0] == [1]


def test_names_with_spaces_non_ascii_and_glob_characters(runner, tmp_path):
    data = tmp_path / "dätä sét"
    write_json(data / "dt=2026 01" / "ordres été.json", [1])
    write_json(data / "dt=2026 01" / "b[1] {x}.json", [2])
    write_json(data / "日本.json", [3])
    rows, _job = runner.run(data)
    assert rows == [1, 2, 3]
    assert runner.run(data)[0] == []
    paths = [
        f.path
        for f in runner.store.committed_files(runner.name, "src", runner.store.latest_version(runner.name))
    ]
    assert any(p.endswith("ordres été.json") for p in paths)


def test_source_without_ctx_is_read_in_full_and_not_bookmarked(runner, tmp_path, caplog):
    data = tmp_path / "data"
    write_json(data / "a.json", [1])
    for _ in range(2):
        job = runner.start()
        with caplog.at_level(logging.WARNING, logger="sparkmark.job"):
            assert ids(job.read_files(str(data))) == [1]
        job.commit()
    assert "has no ctx" in caplog.text
    assert runner.store.latest_version(runner.name).ctx_states == {}


def test_a_ctx_read_twice_shares_its_state_with_a_warning(runner, tmp_path, caplog):
    """Glue does not refuse a transformation_ctx used by two reads: both read against the
    ctx's bookmark as the last commit left it, and the commit keeps what both read."""
    write_json(tmp_path / "a" / "1.json", [1])
    write_json(tmp_path / "b" / "1.json", [10])
    job = runner.start()
    with caplog.at_level(logging.WARNING, logger="sparkmark.run"):
        assert ids(job.read_files(str(tmp_path / "a"), ctx="src")) == [1]
        assert ids(job.read_files(str(tmp_path / "b"), ctx="src")) == [10]
    assert "reuses ctx 'src'" in caplog.text and "give each source its own transformation_ctx" in caplog.text
    job.commit()
    assert set(job.run.metrics["sources"]) == {"src", "src#2"}
    write_json(tmp_path / "a" / "2.json", [2])
    job = runner.start()
    assert ids(job.read_files(str(tmp_path / "a"), ctx="src")) == [2]  # 1.json stays processed
    assert ids(job.read_files(str(tmp_path / "b"), ctx="src")) == []  # and so does b's
    job.commit()


def test_two_sources_commit_together(runner, tmp_path):
    write_json(tmp_path / "a" / "1.json", [1])
    write_json(tmp_path / "b" / "1.json", [10])
    job = runner.start()
    job.read_files(str(tmp_path / "a"), ctx="a_src")
    job.read_files(str(tmp_path / "b"), ctx="b_src")
    job.commit()
    write_json(tmp_path / "a" / "2.json", [2])
    job = runner.start()
    assert ids(job.read_files(str(tmp_path / "a"), ctx="a_src")) == [2]
    job.commit()
    # b_src was not read in the last run; its state was carried forward.
    state = runner.store.latest_version(runner.name).ctx_states
    assert set(state) == {"a_src", "b_src"}
    assert runner.run(tmp_path / "b", ctx="b_src")[0] == []


def test_missing_input_path_is_a_clear_error(runner, tmp_path):
    job = runner.start()
    with pytest.raises(SourceError, match="does not exist"):
        job.read_files(str(tmp_path / "nowhere"), ctx="src")
    job.fail("missing input")


@pytest.mark.parametrize(
    "fmt,writer",
    [
        ("csv", lambda p: p.write_text("id,name\n1,a\n2,b\n")),
        ("text", lambda p: p.write_text("1\n2\n")),
    ],
)
def test_csv_and_text_formats(runner, tmp_path, fmt, writer):
    data = tmp_path / "data"
    data.mkdir()
    writer(data / f"f.{fmt}")
    job = runner.start()
    options = {"header": "true", "inferSchema": "true"} if fmt == "csv" else {}
    df = job.read_files(str(data), format=fmt, ctx="src", **options)
    assert df.count() == 2
    job.commit()
    job = runner.start()
    assert job.read_files(str(data), format=fmt, ctx="src", **options).count() == 0
    job.commit()


def test_parquet_orc_and_xml_formats(runner, spark, tmp_path):
    for fmt in ("parquet", "orc"):
        out = tmp_path / fmt
        spark.range(3).withColumnRenamed("id", "id").write.format(fmt).save(str(out))
        assert runner.run(out, fmt=fmt, ctx=fmt)[0] == [0, 1, 2]
        assert runner.run(out, fmt=fmt, ctx=fmt)[0] == []
    xml = tmp_path / "xml"
    xml.mkdir()
    (xml / "a.xml").write_text("<rows><row><id>1</id></row><row><id>2</id></row></rows>")
    if spark_lines.XML_SOURCE:
        assert runner.run(xml, fmt="xml", ctx="xml", rowTag="row")[0] == [1, 2]
    else:  # Spark 3.5 has no XML source of its own: refused in one line
        with pytest.raises(SourceError, match=r"format xml .* needs Spark 4 \(Glue 6\.0\)"):
            runner.run(xml, fmt="xml", ctx="xml", rowTag="row")


def test_avro_through_the_python_data_source(runner, tmp_path):
    import datetime as dt

    import fastavro

    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "Order",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "note", "type": ["null", "string"]},
                {"name": "day", "type": {"type": "int", "logicalType": "date"}},
                {
                    "name": "item",
                    "type": {"type": "record", "name": "Item", "fields": [{"name": "sku", "type": "string"}]},
                },
            ],
        }
    )
    data = tmp_path / "avro"

    def write(name, rows):
        path = data / "dt=2026-11-01" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as out:
            fastavro.writer(out, schema, rows)

    write(
        "a.avro",
        [
            {"id": 1, "note": None, "day": dt.date(2026, 11, 1), "item": {"sku": "x"}},
            {"id": 2, "note": "hi", "day": dt.date(2026, 11, 2), "item": {"sku": "y"}},
        ],
    )
    job = runner.start()
    df = job.read_files(str(data), format="avro", ctx="avro")
    rows = sorted(df.collect(), key=lambda r: r["id"])
    job.commit()
    assert [(r["id"], r["note"], r["day"], r["item"]["sku"], r["dt"]) for r in rows] == [
        (1, None, dt.date(2026, 11, 1), "x", "2026-11-01"),
        (2, "hi", dt.date(2026, 11, 2), "y", "2026-11-01"),
    ]
    write("b.avro", [{"id": 3, "note": None, "day": dt.date(2026, 11, 3), "item": {"sku": "z"}}])
    assert runner.run(data, fmt="avro", ctx="avro")[0] == [3]


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", "tab\there", ""])
def test_names_that_would_leave_the_temp_dir_are_refused(runner, tmp_path, bad):
    from sparkmark import ArgumentError, Job

    write_json(tmp_path / "data" / "a.json", [1])
    with pytest.raises(ArgumentError):
        Job(bad, bookmark_option="job-bookmark-enable", spark=runner.spark, store=runner.store)
    if bad:
        job = runner.start()
        with pytest.raises(ArgumentError, match="invalid transformation_ctx"):
            job.read_files(str(tmp_path / "data"), ctx=bad)
        job.fail("bad ctx")
    assert not (tmp_path / "escape").exists()


def test_state_directory_is_private(tmp_path):
    import stat

    from sparkmark.engine.store import StateStore

    StateStore(f"sqlite:///{tmp_path / 'fresh' / 'state.db'}").close()
    mode = stat.S_IMODE((tmp_path / "fresh").stat().st_mode)
    assert mode == 0o700


def test_future_modification_time_is_read_once(runner, tmp_path):
    data = tmp_path / "data"
    write_json(data / "future.json", [1], mtime=time.time() + 86_400)
    assert runner.run(data)[0] == [1]
    assert runner.run(data)[0] == []


def test_a_file_replaced_between_listing_and_reading_is_never_recorded_as_read(runner, tmp_path):
    """The bookmark records each file as it was listed; Spark reads what is there when it
    reads. A file replaced in between (same size) was recorded as the version never read,
    and the one read came again next run: its rows twice. Now the run commits nothing
    and the next run reads the new version once."""
    src = tmp_path / "in"
    write_json(src / "a.json", [1, 2])
    job = runner.start()
    df = job.read_files(str(src), ctx="src")  # listed and planned: Spark has not read yet
    listed = (src / "a.json").stat()
    write_json(src / "a.json", [3, 4])  # replaced: same size, new rows, a later mtime
    os.utime(src / "a.json", ns=(listed.st_atime_ns, listed.st_mtime_ns + 5_000_000))
    assert (src / "a.json").stat().st_size == listed.st_size
    assert ids(df) == [3, 4]  # Spark read the new version
    with pytest.raises(SourceError, match="replaced or rewritten after they were listed.*a.json"):
        job.commit()
    assert runner.store.latest_version(runner.name) is None  # nothing committed
    assert runner.run(src)[0] == [3, 4]  # read once
    assert runner.run(src)[0] == []  # and not again
