"""Bad inputs: each gets a clear error or a quarantined record, and the bookmark never
passes a file that was not read. The two heavy cases (a 1 GiB file, 100,000 tiny
files) run with SPARKMARK_HEAVY=1, which ``make soak`` sets. A file removed between
listing and reading, and future modification times, are covered in
tests/test_file_bookmarks.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkmark.engine.models import RunState
from sparkmark.errors import ArgumentError, SourceError

from ..conftest import ids, write_json

HEAVY = os.environ.get("SPARKMARK_HEAVY") == "1"


def committed(runner, ctx="src") -> set[str]:
    latest = runner.store.latest_version(runner.name)
    if latest is None:
        return set()
    return {
        Path(f.path.removeprefix("file://")).name
        for f in runner.store.committed_files(runner.name, ctx, latest)
    }


def test_malformed_json_rows_are_quarantined_with_their_file(runner, tmp_path):
    src = tmp_path / "in"
    write_json(src / "good.json", [1, 2])
    (src / "mixed.json").write_text('{"id": 3}\n{"id": 4,,}\nnot json at all\n{"id": 5}\n')
    job = runner.start()
    df = job.read_files(str(src), ctx="src")
    assert ids(df) == [1, 2, 3, 5] and "_corrupt_record" not in df.columns
    job.commit()
    metrics = job.run.metrics["sources"]["src"]
    assert metrics["records_quarantined"] == 2
    quarantined = [
        json.loads(line)
        for p in Path(metrics["quarantine"]).glob("*.json")
        for line in p.read_text().splitlines()
    ]
    assert sorted(q["record"] for q in quarantined) == ["not json at all", '{"id": 4,,}']
    assert all(q["file"].endswith("/mixed.json") for q in quarantined)
    assert committed(runner) == {"good.json", "mixed.json"}


def test_malformed_csv_rows_are_quarantined_or_fail_the_run(runner, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.csv").write_text("id,amount\n1,10\n2,oops\n3,30,extra\n4,40\n")
    job = runner.start()
    df = job.read_files(str(src), format="csv", ctx="src", header=True, schema="id INT, amount INT")
    assert sorted(r["id"] for r in df.collect()) == [1, 4]
    job.commit()
    assert job.run.metrics["sources"]["src"]["records_quarantined"] == 2

    (src / "b.csv").write_text("id,amount\n5,50\n6,bad\n")
    job = runner.start()
    df = job.read_files(
        str(src), format="csv", ctx="src", header=True, schema="id INT, amount INT", bad_records="fail"
    )
    with pytest.raises(Exception, match="(?i)malformed"):
        df.collect()
    job.fail("malformed CSV")
    assert committed(runner) == {"a.csv"}  # b.csv was not processed: not in the bookmark
    with pytest.raises(ArgumentError, match="bad_records"):
        runner.start().read_files(str(src), format="csv", ctx="src", bad_records="skip")


def test_zero_byte_files(runner, tmp_path, spark):
    src = tmp_path / "in"
    write_json(src / "a.json", [1])
    (src / "empty.json").write_bytes(b"")
    rows, job = runner.run(src)
    assert rows == [1] and committed(runner) == {"a.json", "empty.json"}
    assert runner.store.get_run(job.run_id).metrics["sources"]["src"]["files_empty"] == 1

    # A zero-byte Parquet file holds no rows: Spark skips empty files, and the
    # bookmark records it as read (it will not be read again unless it changes).
    pq = tmp_path / "pq"
    spark.range(3).write.parquet(str(pq))
    (pq / "zero.parquet").write_bytes(b"")
    job = runner.start()
    assert job.read_files(str(pq), format="parquet", ctx="pq").count() == 3
    job.commit()
    assert "zero.parquet" in committed(runner, "pq")
    assert runner.store.get_run(job.run_id).metrics["sources"]["pq"]["files_empty"] == 1
    (pq / "zero.parquet").write_bytes(b"not parquet")  # no longer empty: a clear error
    job = runner.start()
    with pytest.raises(Exception, match="zero.parquet.*Could not read footer"):
        job.read_files(str(pq), format="parquet", ctx="pq")
    job.fail("bad parquet")
    assert runner.store.latest_version(runner.name).version == 2

    # Told to ignore corrupt files, Spark skips it without a word: the run counts it.
    job = runner.start()
    df = job.read_files(str(pq), format="parquet", ctx="pq", schema="id BIGINT", ignoreCorruptFiles="true")
    assert df.count() == 0  # the only file due is the corrupt one
    job.commit()
    metrics = runner.store.get_run(job.run_id).metrics["sources"]["pq"]
    assert metrics["files_read"] == 1 and metrics["files_without_rows"] == 1


UNREADABLE_JOB = """
import sys
from sparkmark import Job
job = Job.from_args()
try:
    print("ROWS", job.read_files(job.args["input"], format="json", ctx="src").count())
except Exception as exc:
    job.fail(exc)
    print("FAILED", job.run.error)
    sys.exit(3)
job.commit()
"""


def test_unreadable_file_fails_the_run_and_stays_unprocessed(runner, tmp_path):
    """Root reads any file, so the job runs without the capabilities that allow it."""
    src = tmp_path / "in"
    write_json(src / "ok.json", [1])
    locked = write_json(src / "locked.json", [2])
    locked.chmod(0)
    script = tmp_path / "job.py"
    script.write_text(UNREADABLE_JOB)
    env = {
        **os.environ,
        "SPARKMARK_STATE_URL": runner.store.url.render_as_string(False),
        "SPARKMARK_SPARK_MASTER": "local[1]",
        "PYSPARK_PYTHON": sys.executable,
    }
    cmd = [
        sys.executable,
        str(script),
        "--JOB_NAME",
        runner.name,
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--input",
        str(src),
    ]
    if os.geteuid() == 0:
        cmd = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *cmd]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr[-3000:]
    assert "locked.json" in done.stdout and "ermission denied" in done.stdout
    assert committed(runner) == set()
    locked.chmod(0o644)
    rows, _ = runner.run(src)
    assert rows == [1, 2]


def test_file_growing_while_read_is_read_once_by_the_next_run(runner, tmp_path):
    """A file that grows after the listing, while Spark reads it: the bookmark would
    record the size listed, and the next run would read the grown file whole, giving
    rows 1 and 2 twice. The run commits nothing instead, and the next reads it once."""
    src = tmp_path / "in"
    growing = write_json(src / "g.json", [1, 2])
    job = runner.start()
    df = job.read_files(str(src), ctx="src")
    with open(growing, "a") as out:  # the writer appends after the listing
        out.write(json.dumps({"id": 3}) + "\n")
    assert ids(df) in ([1, 2], [1, 2, 3])
    with pytest.raises(SourceError, match="g.json"):
        job.commit()
    assert runner.store.latest_version(runner.name) is None
    rows, job = runner.run(src)
    assert rows == [1, 2, 3]  # every row once, across the runs that committed
    rows, _ = runner.run(src)
    assert rows == []


@pytest.mark.parametrize(
    "name",
    [
        "with space.json",
        "quo'te\"s.json",
        "ünïcødé-数据.json",
        "new\nline.json",
        "glob[1]{a}*.json",
        "percent%20.json",
    ],
)
def test_odd_file_names(runner, tmp_path, name):
    src = tmp_path / "in"
    write_json(src / name, [1, 2])
    write_json(src / "plain.json", [3])
    rows, _ = runner.run(src)
    assert rows == [1, 2, 3]
    assert committed(runner) == {name, "plain.json"}
    rows, _ = runner.run(src)
    assert rows == []


def test_schema_drifting_between_runs(runner, tmp_path):
    src = tmp_path / "in"
    write_json(src / "a.json", [1, 2], amount=10)
    rows, _ = runner.run(src)
    assert rows == [1, 2]
    write_json(src / "b.json", [3], amount="ten", extra=True)  # type change, new column
    job = runner.start()
    df = job.read_files(str(src), ctx="src")
    got = {r["id"]: (r["amount"], r["extra"]) for r in df.collect()}
    assert got == {3: ("ten", True)}
    job.commit()
    assert committed(runner) == {"a.json", "b.json"}


@pytest.mark.skipif(not HEAVY, reason="heavy: runs in make soak (SPARKMARK_HEAVY=1)")
def test_one_gib_file(runner, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    line = json.dumps({"id": 0, "pad": "x" * 100}) + "\n"
    block = line * 10_000
    rows_per_block, target = 10_000, 1 << 30
    blocks = target // len(block) + 1
    with open(src / "big.json", "w") as out:
        for _ in range(blocks):
            out.write(block)
    job = runner.start()
    df = job.read_files(str(src), ctx="src", schema="id INT, pad STRING")
    assert df.count() == blocks * rows_per_block
    job.commit()
    assert committed(runner) == {"big.json"}
    assert (src / "big.json").stat().st_size >= target


@pytest.mark.skipif(not HEAVY, reason="heavy: runs in make soak (SPARKMARK_HEAVY=1)")
def test_one_hundred_thousand_tiny_files(runner, tmp_path):
    src = tmp_path / "in"
    for d in range(100):
        folder = src / f"d={d:03d}"
        folder.mkdir(parents=True)
        for f in range(1000):
            (folder / f"{f}.json").write_text(f'{{"id": {d * 1000 + f}}}\n')
    began = time.monotonic()
    job = runner.start()
    # All 100,000 are younger than maxBand (15 minutes): as on Glue, only maxFilesInBand
    # of those are taken per run unless the limit is raised.
    df = job.read_files(str(src), ctx="src", schema="id INT", maxFilesInBand=100_000)
    assert df.count() == 100_000
    job.commit()
    assert job.run.metrics["sources"]["src"]["files_read"] == 100_000
    print(f"100,000 tiny files: first run {time.monotonic() - began:.1f}s")
    write_json(src / "d=000" / "new.json", [100_000])
    rows, job = runner.run(src, schema="id INT", maxFilesInBand=100_000)
    assert rows == [100_000]
    assert job.run.state is RunState.SUCCEEDED


def test_a_band_of_nothing_but_empty_files_does_not_wedge_the_job(runner, tmp_path, spark, caplog):
    """The probe: the files a run took of a bookmarked Parquet source (boundedFiles) were only
    empty files, so every run read a frame without columns, failed to write it, and
    never moved on, logging a line per file. Now the empty files are recorded as read,
    the write of nothing writes nothing, one line says how many, and the next run
    reads the file after them."""
    src, out = tmp_path / "pq", tmp_path / "out"
    src.mkdir()
    for i in range(20):
        empty = src / f"empty-{i:02d}.parquet"
        empty.write_bytes(b"")
        os.utime(empty, (1_700_000_000 + i, 1_700_000_000 + i))
    spark.range(3).coalesce(1).write.parquet(str(tmp_path / "real"))
    real = next((tmp_path / "real").glob("part-*.parquet"))
    os.replace(real, src / "zz-real.parquet")

    def run() -> tuple[list[int], object]:
        job = runner.start()
        df = job.read_files(str(src), format="parquet", ctx="src", boundedFiles="20")
        got = sorted(r[0] for r in df.collect()) if df.columns else []
        job.write_files(df, str(out), ctx="out")
        job.commit()
        return got, job

    with caplog.at_level("WARNING", logger="sparkmark"):
        rows, job = run()
    assert rows == []
    assert committed(runner) == {f"empty-{i:02d}.parquet" for i in range(20)}
    assert runner.store.get_run(job.run_id).state is RunState.SUCCEEDED
    said = [r.getMessage() for r in caplog.records if "empty file" in r.getMessage()]
    assert len(said) == 1 and "20 empty file(s)" in said[0] and "and 17 more" in said[0]
    rows, _job = run()
    assert rows == [0, 1, 2]  # the job moved on to the file after the band
    assert sorted(r[0] for r in spark.read.parquet(str(out)).collect()) == [0, 1, 2]


def test_a_csv_of_ten_thousand_columns_is_read_and_written(runner, tmp_path, spark):
    """The probe: a CSV with a header, 10,000 columns and 5 rows ran out of memory under
    sparkmark (quarantine kept the records in Spark's columnar cache, which sets aside a
    buffer per column first) where plain PySpark read and wrote it on the same machine."""
    src, out = tmp_path / "wide", tmp_path / "out"
    src.mkdir()
    columns = [f"c{i}" for i in range(10_000)]
    lines = [",".join(columns)] + [",".join(str(r * 10 + i % 7) for i in range(10_000)) for r in range(5)]
    (src / "wide.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = runner.start()
    df = job.read_files(str(src), format="csv", ctx="src", header="true")
    job.write_files(df, str(out), ctx="out")
    job.commit()
    written = spark.read.parquet(str(out))
    assert len(written.columns) == 10_000 and written.count() == 5
    assert committed(runner) == {"wide.csv"}
    assert runner.store.get_run(job.run_id).metrics["sources"]["src"]["records_quarantined"] == 0


def test_a_file_name_that_is_not_utf8_is_skipped_with_a_warning_and_read_once_renamed(
    runner, tmp_path, caplog
):
    """The probe: a file whose name is not UTF-8 stopped the job with UnicodeEncodeError,
    naming no file, on every run. Spark cannot open such a file either: it is skipped
    with one WARN line naming it, never recorded as read, and read once renamed."""
    src = tmp_path / "in"
    write_json(src / "ok.json", [2])
    latin1 = os.fsencode(str(src)) + b"/caf\xe9.json"
    with open(latin1, "w", encoding="utf-8") as f:
        f.write('{"id": 1}\n')
    with caplog.at_level("WARNING", logger="sparkmark.listing"):
        rows, job = runner.run(src)
    assert rows == [2]
    assert committed(runner) == {"ok.json"}  # the bookmark does not pass it
    [said] = [r.getMessage() for r in caplog.records if "not UTF-8" in r.getMessage()]
    assert "caf\\xe9.json" in said
    assert runner.store.get_run(job.run_id).metrics["sources"]["src"]["files_bad_names"] == 1
    os.rename(latin1, src / "café.json")
    rows, _job = runner.run(src)
    assert rows == [1]
