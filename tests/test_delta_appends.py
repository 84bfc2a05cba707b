"""A Delta append written once (sinks/delta_files.py): its files go into the table's
folder during the run, as a Delta transaction's files, and only their ``add`` actions
are committed after the bookmark, with the write's key as the commit's userMetadata.
The kill matrix of such writes is tests/reliability/test_crash_tables.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from sparkmark.sinks import delta_files

from .conftest import long_lived_driver

JOB = Path(__file__).parent / "fixtures" / "delta_appends_job.py"
PLAIN_SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'


def test_only_a_table_delta_writes_nothing_more_than_files_for_is_written_as_files():
    assert delta_files.plain_table(PLAIN_SCHEMA, {})
    assert delta_files.plain_table(
        PLAIN_SCHEMA, {"delta.appendOnly": "true", "delta.columnMapping.mode": "none"}
    )
    assert not delta_files.plain_table(PLAIN_SCHEMA, {"delta.constraints.positive": "id > 0"})
    assert not delta_files.plain_table(PLAIN_SCHEMA, {"delta.columnMapping.mode": "name"})
    assert not delta_files.plain_table(PLAIN_SCHEMA.replace('"nullable":true', '"nullable":false'), {})
    generated = PLAIN_SCHEMA.replace('"metadata":{}', '"metadata":{"delta.generationExpression":"1"}')
    assert not delta_files.plain_table(generated, {})
    identity = PLAIN_SCHEMA.replace('"metadata":{}', '"metadata":{"delta.identity.start":1}')
    assert not delta_files.plain_table(identity, {})
    varchar = PLAIN_SCHEMA.replace('"metadata":{}', '"metadata":{"__CHAR_VARCHAR_TYPE_STRING":"varchar(3)"}')
    assert not delta_files.plain_table(varchar, {})


def test_a_frame_has_the_tables_columns_only_with_the_same_names_order_and_types():
    table = StructType([StructField("id", LongType()), StructField("tags", ArrayType(StringType()))])
    same_but_required = StructType(
        [StructField("id", LongType(), False), StructField("tags", ArrayType(StringType(), False))]
    )
    assert delta_files.same_columns(same_but_required, table)
    assert not delta_files.same_columns(StructType(list(reversed(table.fields))), table)
    assert not delta_files.same_columns(StructType([StructField("ID", LongType()), table.fields[1]]), table)
    assert not delta_files.same_columns(StructType([StructField("id", StringType()), table.fields[1]]), table)
    assert not delta_files.same_columns(StructType(table.fields[:1]), table)


def test_the_staged_actions_name_the_tables_files_and_count_their_rows(tmp_path):
    root = tmp_path / "table"
    staging = f"{root}/_sparkmark/staging/jr_1-1"
    assert delta_files.table_root(staging) == str(root)
    assert delta_files.staged_actions(staging) is None
    assert "no longer exist" in (delta_files.missing(staging) or "")
    (root / "day=2026-01-01").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2, 3]}), root / "day=2026-01-01" / "a b.parquet")
    pq.write_table(pa.table({"id": [4]}), root / "c.parquet")
    added = [
        {"add": {"path": "day=2026-01-01/a%20b.parquet", "stats": '{"numRecords":3}'}},
        {"add": {"path": "c.parquet"}},  # no statistics: its footer counts it
        {"commitInfo": {}},
    ]
    assert delta_files.data_file(str(root), added[0]) == f"{root}/day=2026-01-01/a b.parquet"
    assert delta_files.rows_of(str(root), added) == 4
    Path(staging).mkdir(parents=True)
    Path(staging, delta_files.ACTIONS).write_text("".join(json.dumps(a) + "\n" for a in added))
    assert delta_files.staged_actions(staging) == added
    assert delta_files.missing(staging) is None
    (root / "c.parquet").unlink()
    assert delta_files.missing(staging) == f"its data file {root}/c.parquet no longer exists"
    delta_files.remove_files(staging)  # the one left, and no error for the one gone
    assert not (root / "day=2026-01-01" / "a b.parquet").exists()


@pytest.fixture(scope="module")
def delta_runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("delta-appends")
    with long_lived_driver():  # one driver for every case: tens of seconds of Delta's work
        done = subprocess.run(
            [sys.executable, str(JOB), str(work)], capture_output=True, text=True, timeout=600
        )
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def test_an_append_writes_its_rows_once_into_the_table_and_commits_them_after_the_bookmark(delta_runs):
    case = delta_runs["plain"]
    assert case["plan_delta_actions"] and case["rows_staged"] == 3
    assert case["staged_parquet"] == []  # no copy of the rows beside the table
    new = sorted(set(case["files_while_staged"]) - set(case["files_before"]))
    assert new  # written during the run, into the table's folder
    assert case["ids_while_staged"] == [1, 2]  # and not part of the table before the commit
    commit = case["commit"]
    assert commit["added"] == new  # the same files, committed: not written again
    assert commit["user_metadata"] == case["key"] and commit["operation"] == "WRITE"
    assert commit["blind_append"] is True and commit["version"] == 1
    assert case["ids"] == [1, 2, 3, 4, 5]
    assert case["state"] == "PUBLISHED" and not case["staging_left"]


def test_a_partitioned_tables_files_go_into_their_partitions(delta_runs):
    case = delta_runs["parted"]
    assert case["plan_delta_actions"]
    assert {f.split("/")[0] for f in case["commit"]["added"]} == {"note=a", "note=b"}
    assert case["ids"] == [1, 2, 3] and case["state"] == "PUBLISHED"


def test_the_first_write_creates_the_table_through_deltas_writer(delta_runs):
    case = delta_runs["fresh"]
    assert not case["plan_delta_actions"] and case["staged_parquet"]
    assert case["commit"]["version"] == 0 and case["commit"]["user_metadata"] == case["key"]
    assert case["ids"] == [7] and not case["staging_left"]


def test_a_run_that_fails_after_its_write_leaves_neither_rows_nor_files(delta_runs):
    case = delta_runs["failing"]
    assert case["plan_delta_actions"] and case["state"] == "DISCARDED"
    assert case["ids"] == [1] and case["version"] == 0
    written = set(case["files_while_staged"]) - set(case["files"])
    assert len(written) == 2 and len(case["files"]) == 2  # its files removed, the table's kept


def test_a_table_whose_columns_changed_since_the_write_gets_the_rows_through_deltas_writer(delta_runs):
    case = delta_runs["changing"]
    assert case["plan_delta_actions"] and case["state"] == "PUBLISHED"
    assert case["ids"] == [1, 10, 11]
    assert case["commit"]["user_metadata"] == case["key"]
    staged = set(case["files_while_staged"]) - set(case["files"])
    assert len(staged) == 2  # the files written for the old columns are removed
    assert set(case["commit"]["added"]) <= set(case["files"])


def test_a_table_with_a_check_constraint_is_written_by_deltas_writer(delta_runs):
    case = delta_runs["checked"]
    assert not case["plan_delta_actions"] and case["staged_parquet"]
    assert case["ids"] == [1, 12] and case["commit"]["user_metadata"] == case["key"]
