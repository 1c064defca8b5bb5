"""Reading a shard of a Kinesis data stream directly (GetShardIterator, GetRecords), Lambda-shaped.

``hotkeys redrive`` re-reads what a Kinesis dead letter (``KinesisBatchInfo``) points at. GetRecords answers
in the API's shape (``Data`` bytes, ``ApproximateArrivalTimestamp`` a datetime); Lambda's Kinesis event
carries each record as ``kinesis.data`` (base64 of the bytes), ``sequenceNumber``, ``partitionKey`` and
``approximateArrivalTimestamp`` in epoch seconds, with ``eventID`` ``shardId:sequenceNumber`` (Lambda
developer guide, "Using Lambda with Kinesis", example event): ``shape_kinesis_record`` turns one into the other
with the emulator's own encoder (``kinesis.lambda_record``), so the detector's pipeline reads re-read records as it
reads delivered ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hotkeys.emulator.kinesis import lambda_record
from hotkeys.emulator.streams import EMPTY_PAGES_LIMIT


def shape_kinesis_record(raw: Mapping[str, Any], arn: str, shard_id: str) -> dict[str, Any]:
    """One record of a parsed GetRecords answer as Lambda's Kinesis event carries it (``kinesis.lambda_record``)."""
    arrived = raw["ApproximateArrivalTimestamp"]
    seconds = arrived.timestamp() if isinstance(arrived, datetime) else float(arrived)
    data = raw["Data"]
    return lambda_record(
        data if isinstance(data, bytes) else str(data).encode(),
        str(raw["PartitionKey"]),
        shard_id,
        str(raw["SequenceNumber"]),
        round(seconds * 1000),
        arn,
    )


@dataclass
class ShardEnd:
    """How a read of a shard ended, when the records ran out (rather than the reader stopping)."""

    # No NextShardIterator: "the shard has been closed and the requested iterator does not return any more
    # data" (Kinesis API reference, GetRecords): nothing more will ever come.
    closed: bool = False
    # An open shard answered an empty page with MillisBehindLatest 0: "0 indicates that record processing is
    # caught up, and there are no new records to process at this moment" (GetRecords).
    caught_up: bool = False
    empty_pages: int = 0


@dataclass(frozen=True)
class StartAt:
    """Where a read starts: at a sequence number (``sequence``), or at the first record that arrived at or
    after ``timestamp`` (epoch seconds: ``AT_TIMESTAMP``)."""

    sequence: str | None = None
    timestamp: float | None = None


def read_shard(
    kinesis: Any,
    arn: str,
    shard_id: str,
    start: StartAt,
    end: ShardEnd,
    empty_pages_limit: int = EMPTY_PAGES_LIMIT,
) -> Iterator[dict[str, Any]]:
    """The shard's records from ``start`` on, Lambda-shaped, until the caller stops or they run out; then ``end``
    says why (closed, caught up, or neither: ``empty_pages_limit`` empty pages in a row while behind)."""
    if start.sequence is not None:
        answer = kinesis.get_shard_iterator(
            StreamARN=arn,
            ShardId=shard_id,
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            StartingSequenceNumber=start.sequence,
        )
    else:
        answer = kinesis.get_shard_iterator(
            StreamARN=arn,
            ShardId=shard_id,
            ShardIteratorType="AT_TIMESTAMP",
            Timestamp=datetime.fromtimestamp(max(0.0, start.timestamp or 0.0)).astimezone(),
        )
    iterator = answer.get("ShardIterator")
    while iterator:
        response = kinesis.get_records(ShardIterator=iterator, StreamARN=arn, Limit=1000)
        records = response.get("Records", [])
        for raw in records:
            yield shape_kinesis_record(raw, arn, shard_id)
        iterator = response.get("NextShardIterator")
        if records:
            end.empty_pages = 0
            continue
        end.empty_pages += 1
        if iterator and response.get("MillisBehindLatest") == 0:
            end.caught_up = True
            return
        if end.empty_pages >= empty_pages_limit:
            return
    end.closed = True
