"""A DynamoDB table's stream as its bookmark: where the stream stood (the last sequence
number read per shard), and the net change since then, key by key.

Glue has no bookmark for DynamoDB. Here a bookmarked read of a table whose stream
holds new images (``StreamViewType`` ``NEW_IMAGE`` or ``NEW_AND_OLD_IMAGES``) reads,
after its first run, only what the stream says changed: each key's last image
(INSERT, MODIFY), and each key whose last event is a REMOVE is counted as deleted and
reported. The first run (and a reset bookmark) records where the stream ends, then
scans the table whole; a change made during that scan is read again by the next run,
as its final image. See docs/design/dynamodb.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import SourceError, aws_code, aws_error

IMAGES = ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")


class Trimmed(Exception):
    """The bookmark's position is older than the stream keeps (24 hours on AWS)."""


def stream_of(described: Mapping[str, Any]) -> str | None:
    """The table's stream ARN when it is enabled with new images, else None."""
    spec = described.get("StreamSpecification") or {}
    if spec.get("StreamEnabled") and spec.get("StreamViewType") in IMAGES:
        return str(described.get("LatestStreamArn") or "") or None
    return None


def shards(client: Any, stream: str) -> list[dict[str, Any]]:
    """The stream's shards, each parent before its children."""
    found: list[dict[str, Any]] = []
    request: dict[str, Any] = {"StreamArn": stream}
    while True:
        described = client.describe_stream(**request)["StreamDescription"]
        found.extend(described.get("Shards") or [])
        last = described.get("LastEvaluatedShardId")
        if not last:
            break
        request["ExclusiveStartShardId"] = last
    ids = {s["ShardId"] for s in found}
    ordered: list[dict[str, Any]] = []
    placed: set[str] = set()

    def place(shard: dict[str, Any]) -> None:
        if shard["ShardId"] in placed:
            return
        parent = shard.get("ParentShardId")
        if parent in ids and parent not in placed:
            place(next(s for s in found if s["ShardId"] == parent))
        placed.add(shard["ShardId"])
        ordered.append(shard)

    for shard in found:
        place(shard)
    return ordered


def records(
    client: Any, stream: str, shard: Mapping[str, Any], after: str | None, upto: str | None = None
) -> Iterator[dict[str, Any]]:
    """A shard's records after sequence number ``after`` (all it holds when None), up to
    ``upto`` when given, oldest first; an open shard is read to its end."""
    request: dict[str, Any] = {"StreamArn": stream, "ShardId": shard["ShardId"]}
    if after is None:
        request["ShardIteratorType"] = "TRIM_HORIZON"
    else:
        request.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=after)
    try:
        iterator = client.get_shard_iterator(**request).get("ShardIterator")
        while iterator:
            page = client.get_records(ShardIterator=iterator, Limit=1000)
            found = page.get("Records") or []
            for record in found:
                if upto is not None and int(record["dynamodb"]["SequenceNumber"]) > int(upto):
                    return
                yield record
            if not found:
                return  # an open shard's end (a closed one's has no next iterator)
            iterator = page.get("NextShardIterator")
    except Exception as exc:  # noqa: BLE001 - trimmed is a fallback; the rest one line
        code = aws_code(exc)
        if code in ("TrimmedDataAccessException", "ResourceNotFoundException") and after is not None:
            raise Trimmed(shard["ShardId"]) from None
        raise SourceError(f"the stream {stream} cannot be read: {aws_error(exc)}") from None


@dataclass
class Changes:
    """The net change read from the stream: each changed key's last image, the keys
    removed, and where each shard was read to."""

    images: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    positions: dict[str, str] = field(default_factory=dict)
    events: int = 0


def changes_since(
    client: Any, stream: str, after: Mapping[str, str], upto: Mapping[str, str] | None = None
) -> Changes:
    """The stream's net change after the positions ``after`` (a shard not in it: from its
    start), up to ``upto`` when given (a paused run's upper bound). Raises ``Trimmed``
    when a position is no longer in the stream."""
    seen = Changes(positions=dict(after))
    for shard in shards(client, stream):
        sid = shard["ShardId"]
        bound = None if upto is None else upto.get(sid)
        if upto is not None and bound is None:
            continue  # a shard the upper bound had not seen yet
        for record in records(client, stream, shard, after.get(sid), bound):
            body = record["dynamodb"]
            key = json.dumps(body.get("Keys") or {}, sort_keys=True)
            seen.events += 1
            seen.positions[sid] = str(body["SequenceNumber"])
            if record.get("eventName") == "REMOVE":
                seen.images.pop(key, None)
                seen.deleted.add(key)
            else:
                seen.deleted.discard(key)
                if "NewImage" in body:
                    seen.images[key] = body["NewImage"]
    return seen
