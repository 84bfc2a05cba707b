"""What a file changed since it was read means, by choice (modifiedFiles): Glue's rule
reads it whole again; new-bytes reads only what was appended, after checking that the
part read is unchanged; fail stops the run. Every re-read file gets a WARN line."""

from __future__ import annotations

import json
import logging

import pytest

from sparkmark.errors import SourceError


def append_lines(path, ids_, **extra) -> None:
    with open(path, "a", encoding="utf-8") as out:
        for i in ids_:
            out.write(json.dumps({"id": i, **extra}) + "\n")


def test_new_bytes_reads_each_append_once_and_a_rewrite_whole(runner, tmp_path, caplog):
    src = tmp_path / "in"
    src.mkdir()
    log = src / "events.jsonl"
    append_lines(log, [1, 2, 3])
    assert runner.run(src, modifiedFiles="new-bytes")[0] == [1, 2, 3]

    for batch in ([4, 5], [6], [7, 8, 9]):  # three appends, each read alone
        append_lines(log, batch)
        rows, job = runner.run(src, modifiedFiles="new-bytes")
        assert rows == batch
        metrics = runner.store.get_run(job.run_id).metrics["sources"]["src"]
        assert metrics["files_appended"] == 1 and metrics["files_modified"] == 1

    # A rewrite that changes what was read (same lines, one edited, then one more): the
    # prefix check catches it and the file is read whole, with a WARN line saying why.
    text = log.read_text(encoding="utf-8").replace('"id": 1}', '"id": 100}')
    log.write_text(text + json.dumps({"id": 10}) + "\n", encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sparkmark"):
        rows, _ = runner.run(src, modifiedFiles="new-bytes")
    assert rows == [2, 3, 4, 5, 6, 7, 8, 9, 10, 100]
    assert any(
        "is read whole again" in r.getMessage() and "changed since they were read" in r.getMessage()
        for r in caplog.records
    )

    append_lines(log, [11])  # after the rewrite, appends are read alone again
    assert runner.run(src, modifiedFiles="new-bytes")[0] == [11]


def test_new_bytes_csv_keeps_the_header_and_partition_columns(runner, tmp_path, spark):
    folder = tmp_path / "in" / "day=d1"
    folder.mkdir(parents=True)
    data = folder / "orders.csv"
    data.write_text("id,amount\n1,10\n2,20\n", encoding="utf-8")
    job = runner.start()
    df = job.read_files(
        str(tmp_path / "in"), format="csv", ctx="src", header="true", modifiedFiles="new-bytes"
    )
    assert sorted(r["id"] for r in df.collect()) == ["1", "2"]  # CSV columns are strings
    job.commit()
    with open(data, "a", encoding="utf-8") as out:
        out.write("3,30\n")
    job = runner.start()
    df = job.read_files(
        str(tmp_path / "in"), format="csv", ctx="src", header="true", modifiedFiles="new-bytes"
    )
    [row] = df.collect()
    assert (row["id"], row["amount"], row["day"]) == ("3", "30", "d1")
    job.commit()


def test_default_rereads_a_modified_file_whole_and_names_the_run_that_read_it(runner, tmp_path, caplog):
    src = tmp_path / "in"
    src.mkdir()
    append_lines(src / "a.jsonl", [1, 2])
    _, first = runner.run(src)
    append_lines(src / "a.jsonl", [3])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sparkmark"):
        rows, _ = runner.run(src)
    assert rows == [1, 2, 3]  # Glue's documented rule: a modified object is processed again
    [line] = [r.getMessage() for r in caplog.records if "changed since" in r.getMessage()]
    assert str(src / "a.jsonl") in line and first.run_id in line and "read twice" in line


def test_fail_policy_stops_before_reading_and_keeps_the_bookmark(runner, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    append_lines(src / "a.jsonl", [1])
    runner.run(src, modifiedFiles="fail")
    before = runner.store.latest_version(runner.name).version
    append_lines(src / "a.jsonl", [2])
    job = runner.start()
    with pytest.raises(SourceError, match="changed since they were read"):
        job.read_files(str(src), ctx="src", modifiedFiles="fail")
    job.fail("stopped")
    assert runner.store.latest_version(runner.name).version == before
    assert runner.run(src)[0] == [1, 2]  # the file is still due: nothing was lost


def test_unknown_policy_is_refused(runner, tmp_path):
    job = runner.start()
    with pytest.raises(SourceError, match="modifiedFiles must be one of reprocess, new-bytes, fail"):
        job.read_files(str(tmp_path), ctx="src", modifiedFiles="sometimes")
    job.fail("bad option")
