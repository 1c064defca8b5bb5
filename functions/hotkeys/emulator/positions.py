"""Where a stream record sits in its shard, for either change stream the event source mapping reads: its
sequence number and the second it was inserted into the stream.

The emulation (``esm``, ``lanes``) orders, batches, windows and dead-letters records by these two only, so
one emulation serves both sources:

* DynamoDB Streams: ``dynamodb.SequenceNumber``, and ``dynamodb.ApproximateCreationDateTime`` (whole
  seconds) as the insertion time.
* Kinesis Data Streams (``kinesis``): ``kinesis.sequenceNumber``, and ``kinesis.approximateArrivalTimestamp``
  (epoch seconds with milliseconds), floored to its second. The Lambda developer guide ("Using AWS Lambda
  with Amazon Kinesis", "Time windows"): "Lambda determines tumbling window boundaries based on the time
  when records were inserted into the stream. All records have an approximate timestamp available that
  Lambda uses in boundary determinations." For a change DynamoDB sent to Kinesis that is its arrival, not
  its creation (``ApproximateCreationDateTime`` inside ``kinesis.data``): a change that arrives late is
  in the window of its arrival, and the function is what puts it back in the window it was made in.
"""

from __future__ import annotations

import math
from typing import Any

from hotkeys.detector.domain.records import stream_time


def kinesis_body(record: Any) -> dict[str, Any] | None:
    """The ``kinesis`` member of a Lambda Kinesis record (None: not one)."""
    body = record.get("kinesis") if isinstance(record, dict) else None
    return body if isinstance(body, dict) else None


def sequence_of(record: Any) -> Any:
    """The record's sequence number as it carries it (a numeric string; None: it carries none)."""
    if not isinstance(record, dict):
        return None
    kinesis = kinesis_body(record)
    if kinesis is not None:
        return kinesis.get("sequenceNumber")
    body = record.get("dynamodb")
    return body.get("SequenceNumber") if isinstance(body, dict) else None


def inserted_second(record: Any) -> int | None:
    """The second the record was inserted into its stream, or None for one that carries no time a stream
    can (a malformed record: the function dead-letters it; the emulation keeps it with the records around it)."""
    if not isinstance(record, dict):
        return None
    kinesis = kinesis_body(record)
    if kinesis is not None:
        arrived = kinesis.get("approximateArrivalTimestamp")
        return math.floor(arrived) if stream_time(arrived) else None
    body = record.get("dynamodb")
    created = body.get("ApproximateCreationDateTime") if isinstance(body, dict) else None
    return int(created) if stream_time(created) else None


def arrival_of(record: Any) -> float | None:
    """A Kinesis record's ``approximateArrivalTimestamp`` (None: not a Kinesis record, or none usable)."""
    kinesis = kinesis_body(record)
    arrived = kinesis.get("approximateArrivalTimestamp") if kinesis is not None else None
    return float(arrived) if stream_time(arrived) else None
