"""The kinds of source, found in one registry: every door asks it for a state's or a
run's kind and for the phrase saying what a run read."""

from __future__ import annotations

import pytest

from sparkmark.sources.registry import (
    FILES,
    JDBC,
    KAFKA,
    KINESIS,
    STREAM_CONNECTION_TYPES,
    kind_of_metrics,
    kind_of_state,
)


@pytest.mark.parametrize(
    ("metrics", "kind", "read"),
    [
        ({"files_listed": 3, "files_read": 2, "bytes_read": 40}, FILES, "2 files, 40 bytes"),
        ({}, FILES, "0 files, 0 bytes"),  # a source that read nothing
        ({"type": "jdbc", "rows_read": 7}, JDBC, "7 rows"),
        ({"rows_read": 5}, JDBC, "5 rows"),  # a JDBC read recorded before the type was
        ({"type": "kafka", "numRecords": 9}, KAFKA, "9 records"),
        ({"type": "kinesis", "records": 4}, KINESIS, "4 records"),
        ({"type": "kinesis"}, KINESIS, "0 records"),
    ],
)
def test_a_runs_metrics_say_their_kind_and_what_was_read(metrics, kind, read):
    assert kind_of_metrics(metrics) is kind
    assert kind.read(metrics) == read


def test_a_committed_state_says_its_kind():
    assert kind_of_state({"type": "jdbc"}) is JDBC
    assert kind_of_state({"type": "kafka"}).streaming and kind_of_state({"type": "kinesis"}).streaming
    assert kind_of_state({"paths": ["s3://b/x"]}) is FILES  # files before the type was recorded
    assert not kind_of_state({"type": "files"}).streaming
    assert set(STREAM_CONNECTION_TYPES) == {"kafka", "kinesis"}
