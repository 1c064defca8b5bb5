"""Build DynamoDB stream records in the exact Lambda event format."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from boto3.dynamodb.types import TypeSerializer

DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "123456789012"
STREAM_LABEL = "2026-11-30T00:00:00.000"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

_serializer = TypeSerializer()


def stream_arn(table: str, region: str = DEFAULT_REGION, account: str = DEFAULT_ACCOUNT) -> str:
    return f"arn:aws:dynamodb:{region}:{account}:table/{table}/stream/{STREAM_LABEL}"


def to_dynamodb_json(item: Mapping[str, Any]) -> dict[str, Any]:
    """Plain Python values → DynamoDB JSON as streams deliver it (binary as base64 text)."""
    return {name: _typed(value) for name, value in item.items()}


def _typed(value: Any) -> dict[str, Any]:
    """boto3's serializer's output, faster for the common types (``generate`` makes millions of them);
    anything else goes through boto3 itself."""
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is bool:
        return {"BOOL": value}
    if kind is int:
        return {"N": str(value)}
    if kind is dict:
        return {"M": {name: _typed(element) for name, element in value.items()}}
    if kind is list:
        return {"L": [_typed(element) for element in value]}
    if kind is set and value and all(type(element) is str for element in value):
        return {"SS": sorted(value)}
    return _as_stream_json(_serializer.serialize(value))


def _as_stream_json(value: dict[str, Any]) -> dict[str, Any]:
    ((kind, raw),) = value.items()
    if kind == "B":
        return {"B": _b64(raw)}
    if kind == "BS":
        return {"BS": sorted(_b64(element) for element in raw)}
    if kind in ("SS", "NS"):
        # Sets have no order; sorting keeps generated files identical across runs (hash seeds differ).
        return {kind: sorted(raw)}
    if kind == "M":
        return {"M": {name: _as_stream_json(element) for name, element in raw.items()}}
    if kind == "L":
        return {"L": [_as_stream_json(element) for element in raw]}
    return value


def _b64(raw: Any) -> str:
    data = bytes(raw.value) if hasattr(raw, "value") else bytes(raw)
    return base64.b64encode(data).decode("ascii")


def sequence_number(shard_index: int, position: int) -> str:
    """A 21-digit sequence number that grows with ``position`` (as real ones do within a shard)."""
    return f"{(shard_index + 1) * 10**20 + position:021d}"


def stream_record(
    *,
    table: str,
    event_name: str,
    keys: Mapping[str, Any],
    sequence: str,
    event_time: int,
    new_image: Mapping[str, Any] | None = None,
    old_image: Mapping[str, Any] | None = None,
    ttl_delete: bool = False,
    region: str = DEFAULT_REGION,
    account: str = DEFAULT_ACCOUNT,
    typed: bool = False,
) -> dict[str, Any]:
    """One record. Images are plain Python values unless ``typed`` (already DynamoDB JSON)."""

    def convert(image: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if image is None:
            return None
        return dict(image) if typed else to_dynamodb_json(image)

    stream: dict[str, Any] = {
        "ApproximateCreationDateTime": event_time,
        "Keys": convert(keys),
        "SequenceNumber": sequence,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    new, old = convert(new_image), convert(old_image)
    if new is not None:
        stream["NewImage"] = new
    if old is not None:
        stream["OldImage"] = old
    stream["SizeBytes"] = len(json.dumps([stream.get("Keys"), new, old], separators=(",", ":")))
    record: dict[str, Any] = {
        "eventID": hashlib.sha1(f"{table}/{sequence}".encode()).hexdigest()[:32],
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": stream,
        "eventSourceARN": stream_arn(table, region, account),
    }
    if ttl_delete:
        record["userIdentity"] = dict(TTL_IDENTITY)
    return record


def shape_stream_record(raw: Mapping[str, Any], arn: str) -> dict[str, Any]:
    """A GetRecords record (boto3/moto) → the Lambda event format.

    GetRecords returns ``ApproximateCreationDateTime`` as a datetime and omits
    ``eventSourceARN``; Lambda delivers epoch seconds (whole) and the stream ARN.
    """
    record: dict[str, Any] = json.loads(json.dumps(raw, default=str))
    created = raw["dynamodb"].get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        record["dynamodb"]["ApproximateCreationDateTime"] = int(created.timestamp())
    elif created is not None:
        record["dynamodb"]["ApproximateCreationDateTime"] = int(float(created))
    record["eventSourceARN"] = arn
    record.setdefault("eventSource", "aws:dynamodb")
    return record
