"""DynamoDB items and their types without a server or a JVM: the catalog type a crawl
gives each value, how two types merge, an item put back from a staged record, and
the stream's net change per key."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from boto3.dynamodb.types import Binary
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.crawler.dynamodb_targets import catalog_type, merge, merged_fields
from sparkmark.errors import SinkError
from sparkmark.sinks.dynamodb import item_of, key_of, lane
from sparkmark.sources.dynamodb import item_json
from sparkmark.sources.dynamodb_access import table_name
from sparkmark.sources.dynamodb_stream import changes_since, stream_of

pytestmark = pytest.mark.fast


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("x", "string"),
        (Decimal(3), "bigint"),
        (Decimal("3.25"), "double"),
        (True, "boolean"),
        (Binary(b"\x00"), "binary"),
        ({"a", "b"}, "array<string>"),
        ({Decimal(1), Decimal("1.5")}, "array<double>"),
        ([], "array<string>"),
        (["a", Decimal(1)], "array<string>"),  # a list of mixed types: strings
        ({"k": {"n": Decimal(1)}}, "struct<k:struct<n:bigint>>"),
        (None, None),
    ],
)
def test_each_dynamodb_value_has_a_catalog_type(value, kind):
    assert catalog_type(value) == kind


def test_types_merge_by_widening_numbers_and_merging_structs():
    assert merge("bigint", "double") == "double"
    assert merge(None, "string") == "string" and merge("bigint", None) == "bigint"
    assert merge("struct<a:bigint>", "struct<b:struct<c:string>,a:double>") == (
        "struct<a:double,b:struct<c:string>>"
    )
    assert merge("array<bigint>", "array<double>") == "array<double>"
    assert merge("boolean", "bigint") == "string"
    assert merged_fields([{"id": "a", "n": None}, {"n": Decimal(2)}, {}]) == {"id": "string", "n": "bigint"}
    assert merged_fields([]) == {}


def test_a_staged_record_is_put_back_as_the_item_it_came_from():
    line = json.dumps({"id": "a", "n": 12345678901234567890, "f": 0.1, "blob": "AAE=", "gone": None,
                       "m": {"x": None, "l": [1, "two"]}})  # fmt: skip
    item = item_of(line, frozenset({"blob"}))
    assert item == {
        "id": {"S": "a"},
        "n": {"N": "12345678901234567890"},
        "f": {"N": "0.1"},
        "blob": {"B": b"\x00\x01"},
        "m": {"M": {"x": {"NULL": True}, "l": {"L": [{"N": "1"}, {"S": "two"}]}}},
    }  # fmt: skip  (digits kept; a null field is not written, a null inside a map is DynamoDB's NULL)
    with pytest.raises(SinkError, match="field 'bad' cannot be written to DynamoDB"):
        item_of('{"id": "a", "bad": NaN}', frozenset())


@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 3)), max_size=30), st.integers(1, 8)
)
def test_every_record_of_a_key_goes_to_the_same_writer(keys, lanes):
    for key in keys:
        text = key_of({"id": {"S": key[0]}, "at": {"N": str(key[1])}}, ("id", "at"))
        assert 0 <= lane(text, lanes) < lanes
        assert lane(text, lanes) == lane(
            key_of({"at": {"N": str(key[1])}, "id": {"S": key[0]}}, ("id", "at")), lanes
        )


def test_an_item_is_a_json_record_and_a_table_is_named_or_an_arn():
    wire = {"id": {"S": "a"}, "n": {"N": "2"}, "ns": {"NS": ["2", "1.5"]}, "b": {"B": b"\x01"}}
    assert json.loads(item_json(wire)) == {"id": "a", "n": 2, "ns": [1.5, 2], "b": "AQ=="}
    assert table_name("orders") == ("orders", None)
    assert table_name("arn:aws:dynamodb:eu-west-1:123456789012:table/orders") == ("orders", "eu-west-1")


class FakeStream:
    """A stream's shards as DynamoDB Streams' API pages them (one shard split in two)."""

    def __init__(self, shards: dict[str, list[tuple[str, dict, str]]], parents: dict[str, str]):
        self.by_shard, self.parents = shards, parents

    def describe_stream(self, StreamArn, **_):
        return {
            "StreamDescription": {
                "Shards": [
                    {"ShardId": s, **({"ParentShardId": self.parents[s]} if s in self.parents else {})}
                    for s in reversed(list(self.by_shard))
                ]
            }
        }  # fmt: skip  (children listed first)

    def get_shard_iterator(self, StreamArn, ShardId, ShardIteratorType, SequenceNumber=None):
        records = self.by_shard[ShardId]
        start = (
            0
            if SequenceNumber is None
            else next(i + 1 for i, r in enumerate(records) if r[2] == SequenceNumber)
        )
        return {"ShardIterator": f"{ShardId}|{start}"}

    def get_records(self, ShardIterator, Limit):
        shard, start = ShardIterator.split("|")
        found = self.by_shard[shard][int(start) : int(start) + 2]
        records = [{"eventName": e, "dynamodb": {"Keys": {"id": {"S": k["id"]}}, "SequenceNumber": seq,
                    **({"NewImage": {n: {"S": str(v)} for n, v in k.items()}} if e != "REMOVE" else {})}}
                   for e, k, seq in found]  # fmt: skip
        return {"Records": records, "NextShardIterator": f"{shard}|{int(start) + len(found)}"}


def test_the_net_change_is_each_keys_last_image_and_its_deletes_counted():
    stream = FakeStream(
        {
            "parent": [
                ("INSERT", {"id": "a", "v": 1}, "1"),
                ("MODIFY", {"id": "a", "v": 2}, "2"),
                ("INSERT", {"id": "b", "v": 1}, "3"),
            ],
            "child": [
                ("REMOVE", {"id": "b"}, "4"),
                ("MODIFY", {"id": "a", "v": 3}, "5"),
                ("INSERT", {"id": "c", "v": 1}, "6"),
                ("REMOVE", {"id": "c"}, "7"),
                ("INSERT", {"id": "c", "v": 9}, "8"),
            ],
        },
        {"child": "parent"},
    )
    seen = changes_since(stream, "arn", {})
    images = {json.loads(k)["id"]["S"]: {n: v["S"] for n, v in i.items()} for k, i in seen.images.items()}
    assert images == {"a": {"id": "a", "v": "3"}, "c": {"id": "c", "v": "9"}}  # parent read before child
    assert [json.loads(k)["id"]["S"] for k in seen.deleted] == ["b"]
    assert seen.positions == {"parent": "3", "child": "8"} and seen.events == 8
    later = changes_since(stream, "arn", {"parent": "3", "child": "5"})
    assert later.events == 3 and later.deleted == set()
    bounded = changes_since(stream, "arn", {"parent": "1"}, {"parent": "2"})  # a paused range
    assert bounded.positions == {"parent": "2"} and bounded.events == 1


def test_only_a_stream_with_new_images_is_a_bookmark():
    on = {
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
        "LatestStreamArn": "s",
    }
    keys = {
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
        "LatestStreamArn": "s",
    }
    assert stream_of(on) == "s" and stream_of(keys) is None and stream_of({}) is None


def test_a_pace_waits_until_what_was_spent_fits_the_rate():
    """``dynamodb.throughput.*.percent`` as a rate: at 10 units a second, 5 units spent at
    once owe 0.5 s; 10 more right after owe 1 s more (15 units take 1.5 s); two seconds
    later, 5 more owe nothing."""
    from sparkmark.sources.dynamodb_access import Pace

    now, slept = [100.0], []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pace = Pace(10.0, clock=lambda: now[0], sleep=sleep)
    assert pace.spend(5) == pytest.approx(0.5)
    assert pace.spend(10) == pytest.approx(1.0)
    assert slept == [pytest.approx(0.5), pytest.approx(1.0)]
    now[0] += 2.0
    assert pace.spend(5) == 0.0  # 20 units in 3.5 s is under 10 a second


def test_an_aws_error_is_named_by_its_code_and_any_other_by_its_first_line():
    from botocore.exceptions import ClientError

    from sparkmark.errors import aws_code, aws_error

    throttled = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "Scan")
    assert (aws_code(throttled), aws_error(throttled)) == (
        "ThrottlingException",
        "ThrottlingException: slow down",
    )
    other = RuntimeError("connection reset\n  at a JVM frame")
    assert (aws_code(other), aws_error(other)) == (None, "connection reset")
    assert aws_error(ValueError()) == "ValueError"  # no message: its type
