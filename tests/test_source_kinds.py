"""The kinds of source, found in one registry: every door asks it for a state's or a
run's kind and for the phrase saying what a run read."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparkmark.cli.bookmark import _source_rows
from sparkmark.console.bookmark_pages import version_changes
from sparkmark.sources.registry import (
    DYNAMODB,
    FILES,
    JDBC,
    KAFKA,
    KINDS,
    KINESIS,
    STREAM_CONNECTION_TYPES,
    kind_of_metrics,
    kind_of_state,
)
from sparkmark.sources.states import parse_state


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
        ({"type": "dynamodb", "items": 9, "segments": 4}, DYNAMODB, "9 items, the whole table in 4 segments"),
        (
            {"type": "dynamodb", "items": 2, "deleted": 1, "whole": False},
            DYNAMODB,
            "2 items changed, 1 deleted, from the table's stream",
        ),
        ({"type": "dynamodb", "export": "ddb", "files": 3}, DYNAMODB, "the table's export (ddb), 3 files"),
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


STATES = json.loads((Path(__file__).parent / "fixtures" / "source_states.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("row", STATES, ids=[r["name"] for r in STATES])
def test_a_stored_state_reads_the_same_at_every_door(row):
    """tests/fixtures/source_states.json: a stored state, and the words the CLI's
    ``bookmark get`` and the console's bookmark history show for it."""
    state = parse_state(row["state"])
    previous = parse_state(row["previous"]) if row["previous"] else None
    assert kind_of_state(row["state"]).name == row["kind"]
    assert (state.source(), state.progress(), state.latest()) == (
        row["source"],
        row["progress"],
        row["latest"],
    )
    assert state.change(previous, row["files_added"]) == row["change"]

    shown = _source_rows({"orders": row["state"]})
    assert shown == [["orders", row["state"].get("type", "-"), row["source"], row["progress"], row["latest"]]]
    before = SimpleNamespace(version=1, ctx_states={"orders": row["previous"]} if row["previous"] else {})
    version = SimpleNamespace(version=2, ctx_states={"orders": row["state"]})
    changes = version_changes([version], before, {(2, "orders"): row["files_added"]})
    assert changes[0]["changes"] == [{"ctx": "orders", "text": row["change"]}]


def test_every_kind_has_a_fixture_row():
    assert {r["kind"] for r in STATES} == set(KINDS)


def test_a_state_of_a_kind_this_release_does_not_know_reads_as_files():
    state = parse_state({"type": "hudi", "paths": ["s3://lake/t"], "instant": 7})
    assert state.type == "files" and state.source() == "s3://lake/t"
    assert kind_of_state({"type": "hudi"}) is FILES
