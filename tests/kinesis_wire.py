"""A DynamoDB Streams record as Kinesis Data Streams for DynamoDB delivers the same change to Lambda.

Written from the documentation for tests (docs/kinesis.md quotes it): the change is JSON, base64 in
``kinesis.data``, names its table, has no SequenceNumber and no StreamViewType, carries its time at
the table's precision and each binary value base64-encoded a second time.
"""

from __future__ import annotations

import base64
import copy
import json
import uuid
from typing import Any

KINESIS_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/changes"
SHARD = "shardId-000000000000"
UNITS_PER_SECOND = {"MICROSECOND": 1_000_000, "MILLISECOND": 1_000}


def encode_binary_twice(value: Any) -> Any:
    if not isinstance(value, dict) or len(value) != 1:
        return value
    ((tag, inner),) = value.items()
    if tag == "B":
        return {"B": base64.b64encode(inner.encode("ascii")).decode("ascii")}
    if tag == "BS":
        return {"BS": [base64.b64encode(item.encode("ascii")).decode("ascii") for item in inner]}
    if tag == "M":
        return {"M": {name: encode_binary_twice(item) for name, item in inner.items()}}
    if tag == "L":
        return {"L": [encode_binary_twice(item) for item in inner]}
    return value


def change_document(
    record: dict[str, Any], *, precision: str | None = "MICROSECOND", fraction: int = 0, event_id: str | None = None
) -> dict[str, Any]:
    """The decoded change of a Lambda DynamoDB Streams ``record``; ``fraction``: units past its second
    (its time at the precision; None: the field left out, milliseconds, as AWS's sample reads it)."""
    stream = record["dynamodb"]
    per_second = UNITS_PER_SECOND[precision or "MILLISECOND"]
    created = int(stream["ApproximateCreationDateTime"]) * per_second + fraction
    section: dict[str, Any] = {"ApproximateCreationDateTime": created}
    if precision is not None:
        section["ApproximateCreationDateTimePrecision"] = precision
    for name in ("Keys", "NewImage", "OldImage"):
        if name in stream:
            section[name] = {key: encode_binary_twice(value) for key, value in copy.deepcopy(stream[name]).items()}
    section["SizeBytes"] = stream["SizeBytes"]
    identity = record.get("userIdentity")
    return {
        "awsRegion": "us-east-1",
        "eventID": event_id or str(uuid.uuid4()),
        "eventName": record["eventName"],
        "userIdentity": identity,
        "recordFormat": "application/json",
        "tableName": record["eventSourceARN"].split(":", 5)[5].split("/")[1],
        "dynamodb": section,
        "eventSource": "aws:dynamodb",
    }


def kinesis_record(document: dict[str, Any], sequence: int, *, arrival: float, shard: str = SHARD) -> dict[str, Any]:
    """One record of a Lambda Kinesis event carrying ``document``."""
    text = str(sequence)
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": "0F8BB5F6C1A3E7D0C0D9A5B0E4E9F1B2",
            "sequenceNumber": text,
            "data": base64.b64encode(json.dumps(document).encode("utf-8")).decode("ascii"),
            "approximateArrivalTimestamp": arrival,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{shard}:{text}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/detector",
        "awsRegion": "us-east-1",
        "eventSourceARN": KINESIS_ARN,
    }


def sequence(position: int) -> int:
    """A 56-digit Kinesis sequence number, increasing with ``position``."""
    return 49_590_338_271_490_256_608_559_692_538_361_571_095_921_575_989_136_588_898 + position * 1_000
