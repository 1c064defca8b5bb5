"""Build DynamoDB stream records in the exact Lambda event format."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
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


def _as_stream_json(value: Mapping[str, Any]) -> dict[str, Any]:
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
    return dict(value)


def _b64(raw: Any) -> str:
    data = bytes(raw.value) if hasattr(raw, "value") else bytes(raw)
    return base64.b64encode(data).decode("ascii")


def sequence_number(shard_index: int, position: int) -> str:
    """A 21-digit sequence number that grows with ``position`` (as real ones do within a shard)."""
    return f"{(shard_index + 1) * 10**20 + position:021d}"


@dataclass(frozen=True, slots=True)
class ItemChange:
    """What one write did to one item, as its stream record tells it: ``INSERT``, ``MODIFY`` or ``REMOVE``
    (``event_name``), the item's keys, its images after and before, whether DynamoDB's TTL deleted it
    (``ttl_delete``). Keys and images are plain Python values unless ``typed`` (already DynamoDB JSON)."""

    event_name: str
    keys: Mapping[str, Any]
    new_image: Mapping[str, Any] | None = None
    old_image: Mapping[str, Any] | None = None
    ttl_delete: bool = False
    typed: bool = False


def _as_streamed(image: Mapping[str, Any] | None, typed: bool) -> dict[str, Any] | None:
    """Keys or an image as the stream carries them (DynamoDB JSON), a copy."""
    if image is None:
        return None
    return dict(image) if typed else to_dynamodb_json(image)


def stream_record(
    change: ItemChange,
    *,
    table: str,
    sequence: str,
    event_time: int,
    region: str = DEFAULT_REGION,
    account: str = DEFAULT_ACCOUNT,
) -> dict[str, Any]:
    """One record: ``change``, at ``sequence`` of ``table``'s stream, written at ``event_time``."""
    stream: dict[str, Any] = {
        "ApproximateCreationDateTime": event_time,
        "Keys": _as_streamed(change.keys, change.typed),
        "SequenceNumber": sequence,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    new, old = _as_streamed(change.new_image, change.typed), _as_streamed(change.old_image, change.typed)
    if new is not None:
        stream["NewImage"] = new
    if old is not None:
        stream["OldImage"] = old
    stream["SizeBytes"] = len(json.dumps([stream.get("Keys"), new, old], separators=(",", ":")))
    record: dict[str, Any] = {
        "eventID": hashlib.sha1(f"{table}/{sequence}".encode()).hexdigest()[:32],
        "eventName": change.event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": stream,
        "eventSourceARN": stream_arn(table, region, account),
    }
    if change.ttl_delete:
        record["userIdentity"] = dict(TTL_IDENTITY)
    return record


def shape_stream_record(raw: Mapping[str, Any], arn: str) -> dict[str, Any]:
    """A GetRecords record, as boto3 returns it, → the Lambda event format.

    The API and Lambda spell a record differently (DynamoDB Streams API Reference, ``Record`` and
    ``Identity``; Lambda developer guide, DynamoDB event example): GetRecords carries ``userIdentity``
    as ``{"PrincipalId", "Type"}`` and omits ``eventSourceARN``; boto3 turns the wire's epoch-seconds
    ``ApproximateCreationDateTime`` into a datetime and decodes binary (``B``, ``BS``, at any depth)
    into bytes. Lambda delivers ``{"principalId", "type"}``, the stream ARN, epoch seconds (whole) and
    binary as base64 text, which is what the detector parses.
    """
    stream: Mapping[str, Any] = raw.get("dynamodb") or {}
    shaped: dict[str, Any] = {}
    for name, value in stream.items():
        if name in _IMAGES and isinstance(value, Mapping):
            shaped[name] = {attribute: _lambda_value(element) for attribute, element in value.items()}
        elif name == "ApproximateCreationDateTime":
            shaped[name] = _epoch_seconds(value)
        else:
            shaped[name] = value
    record: dict[str, Any] = {}
    for name, value in raw.items():
        if name == "dynamodb":
            record[name] = shaped
        elif name == "userIdentity" and isinstance(value, Mapping):
            record[name] = {_IDENTITY_NAMES.get(member, member): element for member, element in value.items()}
        else:
            record[name] = value
    record["eventSourceARN"] = arn
    record.setdefault("eventSource", "aws:dynamodb")
    return record


_IMAGES = frozenset(("Keys", "NewImage", "OldImage"))
# The API's Identity members → Lambda's spelling (what records.is_ttl_delete reads).
_IDENTITY_NAMES = {"PrincipalId": "principalId", "Type": "type"}


def _epoch_seconds(value: Any) -> Any:
    """Whole epoch seconds, as Lambda delivers them (AWS rounds the time down to the second)."""
    if isinstance(value, datetime):
        return int(value.timestamp() // 1)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value // 1)
    return value  # anything else is left for the parser to refuse as malformed


def _lambda_value(value: Any) -> Any:
    """One attribute value with boto3's bytes back in base64 text, at any depth; a copy."""
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for kind, raw in value.items():
        if kind == "B" and isinstance(raw, (bytes, bytearray)):
            out[kind] = base64.b64encode(raw).decode("ascii")
        elif kind == "BS" and isinstance(raw, list):
            out[kind] = [
                base64.b64encode(element).decode("ascii") if isinstance(element, (bytes, bytearray)) else element
                for element in raw
            ]
        elif kind == "M" and isinstance(raw, Mapping):
            out[kind] = {name: _lambda_value(element) for name, element in raw.items()}
        elif kind == "L" and isinstance(raw, list):
            out[kind] = [_lambda_value(element) for element in raw]
        elif isinstance(raw, list):
            out[kind] = list(raw)
        else:
            out[kind] = raw
    return out
