"""Reading a table's DynamoDB stream directly (DescribeStream, GetShardIterator, GetRecords)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hotkeys.cli.events import shape_stream_record


class StreamError(ValueError):
    """The table has no readable stream (shown to the user as one line)."""


@dataclass
class ShardCursor:
    shard_id: str
    parent_id: str | None
    iterator: str | None = None
    closed: bool = False
    started: bool = False


def stream_arn_of(description: dict[str, Any], table: str) -> str:
    """The table's stream ARN, from its DescribeTable ``Table`` description."""
    arn = description.get("LatestStreamArn")
    enabled = description.get("StreamSpecification", {}).get("StreamEnabled", bool(arn))
    if not arn or not enabled:
        raise StreamError(
            f"table {table!r} has no stream: enable NEW_AND_OLD_IMAGES (or deploy with -c enableStream=true)"
        )
    return str(arn)


def list_shards(streams: Any, arn: str) -> list[dict[str, Any]]:
    shards: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"StreamArn": arn}
    while True:
        description = streams.describe_stream(**kwargs)["StreamDescription"]
        shards.extend(description.get("Shards", []))
        last = description.get("LastEvaluatedShardId")
        if not last:
            return shards
        kwargs["ExclusiveStartShardId"] = last


def lineage_order(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parents before children (a child's records follow its parent's)."""
    by_id = {shard["ShardId"]: shard for shard in shards}
    ordered: list[dict[str, Any]] = []
    seen: set[str] = set()

    def visit(shard: dict[str, Any]) -> None:
        if shard["ShardId"] in seen:
            return
        seen.add(shard["ShardId"])
        parent = by_id.get(shard.get("ParentShardId", ""))
        if parent is not None:
            visit(parent)
        ordered.append(shard)

    for shard in shards:
        visit(shard)
    return ordered


def read_range(
    streams: Any, arn: str, shard_id: str, start: str, end: str, page: int = 1000
) -> Iterator[dict[str, Any]]:
    """Records of one shard from ``start`` to ``end`` (sequence numbers, inclusive), Lambda-shaped."""
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard_id, ShardIteratorType="AT_SEQUENCE_NUMBER", SequenceNumber=start
    )["ShardIterator"]
    last = int(end)
    while iterator:
        response = streams.get_records(ShardIterator=iterator, Limit=page)
        records = response.get("Records", [])
        for raw in records:
            if int(raw["dynamodb"]["SequenceNumber"]) > last:
                return
            yield shape_stream_record(raw, arn)
        if not records:
            return
        iterator = response.get("NextShardIterator")
