"""Reading a table's DynamoDB stream directly (DescribeStream, GetShardIterator, GetRecords)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hotkeys.emulator.events import shape_stream_record

if TYPE_CHECKING:
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_dynamodbstreams.type_defs import DescribeStreamInputTypeDef, ShardTypeDef


class StreamError(ValueError):
    """The table has no readable stream (shown to the user as one line)."""


@dataclass
class ShardCursor:
    shard_id: str
    parent_id: str | None
    iterator: str | None = None
    closed: bool = False
    started: bool = False
    empty_pages: int = 0  # empty GetRecords answers in a row (an empty page is not the shard's end)


def stream_arn_of(description: Mapping[str, Any], table: str) -> str:
    """The table's stream ARN, from its DescribeTable ``Table`` description."""
    arn = description.get("LatestStreamArn")
    enabled = description.get("StreamSpecification", {}).get("StreamEnabled", bool(arn))
    if not arn or not enabled:
        raise StreamError(
            f"table {table!r} has no stream: enable NEW_AND_OLD_IMAGES (or deploy with -c enableStream=true)"
        )
    return str(arn)


def list_shards(streams: DynamoDBStreamsClient, arn: str) -> list[ShardTypeDef]:
    shards: list[ShardTypeDef] = []
    kwargs: DescribeStreamInputTypeDef = {"StreamArn": arn}
    while True:
        description = streams.describe_stream(**kwargs)["StreamDescription"]
        shards.extend(description.get("Shards", []))
        last = description.get("LastEvaluatedShardId")
        if not last:
            return shards
        kwargs["ExclusiveStartShardId"] = last


def lineage_order(shards: list[ShardTypeDef]) -> list[ShardTypeDef]:
    """Parents before children (a child's records follow its parent's)."""
    by_id = {shard["ShardId"]: shard for shard in shards}
    ordered: list[ShardTypeDef] = []
    seen: set[str] = set()

    def visit(shard: ShardTypeDef) -> None:
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


# GetRecords may answer an empty page where the shard holds more ("Note that it might take multiple
# calls to get to a portion of the shard that contains stream records", GetRecords, DynamoDB Streams
# API Reference). AWS gives no bound on how many, and an open shard at its newest record answers
# empty pages for ever: after this many in a row, a reader stops and says what it did not reach.
EMPTY_PAGES_LIMIT = 50


class RangeNotRead(Exception):
    """The stream did not give all of a range: what was read is not the whole range."""

    def __init__(self, shard_id: str, end: str, read: int, last: str | None, empty_pages: int) -> None:
        self.read = read
        where = f"after {last}" if last else "before its first record"
        super().__init__(
            f"range not fully read: shard {shard_id} is open and answered {empty_pages} empty pages in a row "
            f"{where} (read {read}, end {end} not reached); try again later"
        )


@dataclass(frozen=True)
class ShardRange:
    """Records of one shard of a stream, from ``start`` to ``end`` (sequence numbers, inclusive): what a
    dead-lettered batch points at."""

    stream_arn: str
    shard_id: str
    start: str
    end: str


def read_range(
    streams: DynamoDBStreamsClient,
    wanted: ShardRange,
    page: int = 1000,
    empty_pages_limit: int = EMPTY_PAGES_LIMIT,
) -> Iterator[dict[str, Any]]:
    """The records of ``wanted``, Lambda-shaped.

    The range is read once a record at or past its ``end`` is seen (sequence numbers grow within a shard)
    or the shard is closed (no ``NextShardIterator``: "the shard has been closed and the requested
    iterator will not return any more data"). An empty page is not the end: the next iterator is
    followed. Raises RangeNotRead, after yielding what it read, if an open shard answers
    ``empty_pages_limit`` empty pages in a row first.
    """
    arn, shard_id, end = wanted.stream_arn, wanted.shard_id, wanted.end
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard_id, ShardIteratorType="AT_SEQUENCE_NUMBER", SequenceNumber=wanted.start
    )["ShardIterator"]
    last = int(end)
    read, empty, last_read = 0, 0, None
    while iterator:
        response = streams.get_records(ShardIterator=iterator, Limit=page)
        records = response.get("Records", [])
        for raw in records:
            sequence = raw["dynamodb"]["SequenceNumber"]
            if int(sequence) > last:
                return
            yield shape_stream_record(raw, arn)
            if int(sequence) == last:
                return
            read, last_read = read + 1, sequence
        empty = 0 if records else empty + 1
        iterator = response.get("NextShardIterator")
        if iterator and empty >= empty_pages_limit:
            raise RangeNotRead(shard_id, end, read, last_read, empty)
