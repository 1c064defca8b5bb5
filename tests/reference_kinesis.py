"""An independent reading of Kinesis Data Streams for DynamoDB, for tests to check the Kinesis path against.

Written from AWS's documentation alone, not from the project's code:

* DynamoDB developer guide, "Using Kinesis Data Streams to capture changes to DynamoDB" (kds.html):
  "The Kinesis data stream records might appear in a different sequence than the item changes
  occurred. The same item notifications might also appear more than once in the stream. You can
  check the ``ApproximateCreationDateTime`` attribute to identify the approximate order that the
  item modifications occurred, and to identify duplicate records." Each record carries "The
  specific time any item was recently created, updated, or deleted", "That item's primary key",
  and the images before and after the modification.
* Timestamp precision: "you can change the record timestamp precision from microsecond (default)
  to millisecond" (kds_gettingstarted.html); "The default setting for record timestamp precision
  is microseconds. You can change this setting at any time." (``ApproximateCreationDateTimePrecision``,
  "The values are either MILLISECOND or MICROSECOND", DynamoDB API reference). A record says its
  precision in ``dynamodb.ApproximateCreationDateTimePrecision``; one that says nothing is read at
  the default, microseconds. (The page's earlier text said "``ApproximateCreationDateTime``
  indicates the time of the modification in milliseconds", from before the setting existed; a
  record of that age without the field would be read a thousand times too early.)
* Lambda's Kinesis event: each record is ``{"kinesis": {"kinesisSchemaVersion", "partitionKey",
  "sequenceNumber", "data" (base64), "approximateArrivalTimestamp"}, "eventSource": "aws:kinesis",
  "eventID": "shardId-…:<sequence number>", "eventName": "aws:kinesis:record", "eventSourceARN",
  "awsRegion", ...}``; for DynamoDB the data is the JSON change document ``{"awsRegion", "eventID",
  "eventName", "userIdentity", "recordFormat": "application/json", "tableName", "dynamodb":
  {"ApproximateCreationDateTime", "Keys", "NewImage", "OldImage", "SizeBytes",
  "ApproximateCreationDateTimePrecision"}, "eventSource": "aws:dynamodb"}``.
* TTL deletions: "Items that are deleted by the Time to Live process after expiration have the
  following fields: ``Records[].userIdentity.type`` "Service", ``Records[].userIdentity.principalId``
  "dynamodb.amazonaws.com"" (DynamoDB Streams API reference, ``Record``).
* Lambda's DynamoDB Streams event (for ``as_stream_record``): ``eventID``, ``eventName``,
  ``eventVersion``, ``eventSource`` "aws:dynamodb", ``awsRegion``, ``eventSourceARN`` (the stream),
  ``dynamodb`` {``ApproximateCreationDateTime`` in epoch seconds, ``Keys``, ``NewImage``,
  ``OldImage``, ``SequenceNumber``, ``SizeBytes``, ``StreamViewType``}, and ``userIdentity``
  {``principalId``, ``type``} on TTL deletions. eventID is "A globally unique identifier for the
  event"; "Client applications must not assume that eventVersion will remain at a particular value".

What identifies a change is set out in ``distinct``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MICROSECOND = "MICROSECOND"
MILLISECOND = "MILLISECOND"
UNITS_PER_SECOND = {MICROSECOND: 1_000_000, MILLISECOND: 1_000}
DEFAULT_PRECISION = MICROSECOND  # "The default setting for record timestamp precision is microseconds"
EVENT_NAMES = frozenset({"INSERT", "MODIFY", "REMOVE"})
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


@dataclass(frozen=True)
class Change:
    """One item-level change as the change document describes it: no eventID, nothing of Kinesis.

    ``created`` is ``ApproximateCreationDateTime`` as written (an integer at ``precision``);
    ``created_seconds`` is the same instant in epoch seconds, rounded down.
    """

    region: str
    table: str
    event_name: str
    keys: dict[str, Any]
    old_image: dict[str, Any] | None
    new_image: dict[str, Any] | None
    size_bytes: int
    ttl: bool
    created: int
    precision: str

    @property
    def created_seconds(self) -> int:
        return self.created // UNITS_PER_SECOND[self.precision]

    @property
    def created_micros(self) -> int:
        """The creation time on one scale, so that records of both precisions can be ordered."""
        return self.created * (1_000_000 // UNITS_PER_SECOND[self.precision])

    @property
    def identity(self) -> str:
        """Every field, as canonical JSON: two records are one change exactly when these agree."""
        fields = [
            self.region,
            self.table,
            self.event_name,
            self.keys,
            self.old_image,
            self.new_image,
            self.size_bytes,
            self.ttl,
            self.created,
            self.precision,
        ]
        return json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def __hash__(self) -> int:  # the images are dicts; hash what equality compares
        return hash(self.identity)


def change_document(record: Mapping[str, Any]) -> dict[str, Any]:
    """The DynamoDB change document of a Lambda Kinesis record (base64 ``kinesis.data``), or the record itself."""
    if "kinesis" not in record:
        return dict(record)
    if record.get("eventSource") != "aws:kinesis":
        raise ValueError(f"a Kinesis record has eventSource aws:kinesis, not {record.get('eventSource')!r}")
    data = record["kinesis"]["data"]
    if not isinstance(data, str):
        raise ValueError("kinesis.data is base64 text")
    try:
        raw = base64.b64decode(data, validate=True)
    except binascii.Error as error:
        raise ValueError(f"kinesis.data is not base64: {error}") from error
    document = json.loads(raw.decode("utf-8"))
    if not isinstance(document, dict):
        raise ValueError("kinesis.data decodes to a JSON object")
    return document


def _precision(body: Mapping[str, Any]) -> str:
    precision = body.get("ApproximateCreationDateTimePrecision", DEFAULT_PRECISION)
    if precision not in UNITS_PER_SECOND:
        raise ValueError(f"ApproximateCreationDateTimePrecision is MILLISECOND or MICROSECOND, not {precision!r}")
    return str(precision)


def _created(body: Mapping[str, Any]) -> int:
    created = body.get("ApproximateCreationDateTime")
    if isinstance(created, bool) or not isinstance(created, int):
        raise ValueError(f"ApproximateCreationDateTime is an integer at its precision, not {created!r}")
    return created


def _is_ttl(identity: Any) -> bool:
    if identity is None:
        return False
    if not isinstance(identity, Mapping):
        raise ValueError(f"userIdentity is null or an object, not {identity!r}")
    return identity.get("type") == TTL_IDENTITY["type"] and identity.get("principalId") == TTL_IDENTITY["principalId"]


def _image(body: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    image = body.get(name)
    if image is None:
        return None
    if not isinstance(image, dict):
        raise ValueError(f"{name} is an object of attribute values")
    return copy.deepcopy(image)


def decode(record: Mapping[str, Any]) -> Change:
    """One record of a Lambda Kinesis event (or its already decoded change document) → its ``Change``."""
    document = change_document(record)
    if document.get("eventSource") != "aws:dynamodb":
        raise ValueError(
            f"a DynamoDB change document has eventSource aws:dynamodb, not {document.get('eventSource')!r}"
        )
    if document.get("recordFormat", "application/json") != "application/json":
        raise ValueError(f"recordFormat is application/json, not {document['recordFormat']!r}")
    if document.get("eventName") not in EVENT_NAMES:
        raise ValueError(f"eventName is INSERT, MODIFY or REMOVE, not {document.get('eventName')!r}")
    body = document["dynamodb"]
    size = body.get("SizeBytes")
    if isinstance(size, bool) or not isinstance(size, int):
        raise ValueError(f"SizeBytes is an integer, not {size!r}")
    return Change(
        region=str(document["awsRegion"]),
        table=str(document["tableName"]),
        event_name=str(document["eventName"]),
        keys=copy.deepcopy(dict(body["Keys"])),
        old_image=_image(body, "OldImage"),
        new_image=_image(body, "NewImage"),
        size_bytes=size,
        ttl=_is_ttl(document.get("userIdentity")),
        created=_created(body),
        precision=_precision(body),
    )


def distinct(records: Iterable[Mapping[str, Any]]) -> list[Change]:
    """The distinct changes of ``records``, each once, in creation-time order, whatever the delivery order.

    The documentation's rule: "The same item notifications might also appear more than once in the
    stream. You can check the ``ApproximateCreationDateTime`` attribute to identify the approximate
    order that the item modifications occurred, and to identify duplicate records." A duplicate is
    a second appearance of the same notification, so its change document is the same one.

    Identity: two records are one change exactly when every field of their change documents agrees
    except ``eventID``: ``awsRegion``, ``tableName`` and ``dynamodb.Keys`` (which item),
    ``dynamodb.ApproximateCreationDateTime`` with its ``ApproximateCreationDateTimePrecision`` (when),
    ``eventName``, ``dynamodb.OldImage``, ``dynamodb.NewImage``, ``dynamodb.SizeBytes`` and whether
    ``userIdentity`` is the TTL service (what). ``eventID`` is left out because the documentation
    does not say whether a duplicate keeps it (the answer is the same either way); the Kinesis
    envelope (``kinesis.sequenceNumber``, ``approximateArrivalTimestamp``, ``partitionKey``, the
    envelope's ``eventID``) is left out because a duplicate put into the stream again gets its own
    ("Although the two records have identical data, they also have unique sequence numbers",
    Kinesis Data Streams developer guide, "Handling duplicate records").

    Order: by creation time on one scale (milliseconds are 1000 microseconds); records of one
    instant, which the documentation leaves unordered ("approximate order"), by their identity's
    text, so the answer never depends on delivery order.

    Cases it cannot tell apart:
    * Two different changes of one item with the same ``ApproximateCreationDateTime`` at the
      precision and the same event name, images and size: e.g. X→Y, Y→X, X→Y within one
      millisecond (or microsecond) give the first and the third as one change. (Two changes of one
      item in one instant with different images are told apart; the timestamp alone would not.)
    * A duplicate whose document differs in anything but ``eventID``, e.g. re-rendered after the
      precision setting changed ("You can change this setting at any time"), counts as a second
      change. The documentation describes duplicates as the same notification, so none is expected.
    * A record that omits the precision is read at the default (microseconds); an old record in
      milliseconds without the field would be misread (see the module docstring).
    """
    seen: dict[str, Change] = {}
    for record in records:
        change = decode(record)
        seen.setdefault(change.identity, change)
    return sorted(seen.values(), key=lambda change: (change.created_micros, change.identity))


def _region_of(stream_arn: str) -> str:
    parts = stream_arn.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "dynamodb" or "/stream/" not in parts[5]:
        raise ValueError(f"not a DynamoDB stream ARN: {stream_arn!r}")
    return parts[3]


def event_id(change: Change) -> str:
    """A stable eventID per change: 32 hex digits derived from the identity (unique per change)."""
    return hashlib.sha256(change.identity.encode("utf-8")).hexdigest()[:32]


def as_stream_record(change: Change, sequence_number: int, stream_arn: str) -> dict[str, Any]:
    """The change as one record of a Lambda DynamoDB Streams event, on a NEW_AND_OLD_IMAGES stream.

    ``ApproximateCreationDateTime`` is epoch seconds rounded down; ``SequenceNumber`` is the given
    integer as text; ``SizeBytes`` is the change document's, carried over (the documentation does
    not say whether the two services count the same bytes).
    """
    if isinstance(sequence_number, bool) or not isinstance(sequence_number, int) or sequence_number < 0:
        raise ValueError(f"a sequence number is a non-negative integer, not {sequence_number!r}")
    region = _region_of(stream_arn)
    if region != change.region:
        raise ValueError(f"the stream is in {region}, the change in {change.region}")
    body: dict[str, Any] = {
        "ApproximateCreationDateTime": change.created_seconds,
        "Keys": copy.deepcopy(change.keys),
    }
    if change.new_image is not None:
        body["NewImage"] = copy.deepcopy(change.new_image)
    if change.old_image is not None:
        body["OldImage"] = copy.deepcopy(change.old_image)
    body |= {
        "SequenceNumber": str(sequence_number),
        "SizeBytes": change.size_bytes,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    record: dict[str, Any] = {
        "eventID": event_id(change),
        "eventName": change.event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": change.region,
        "eventSourceARN": stream_arn,
        "dynamodb": body,
    }
    if change.ttl:
        record["userIdentity"] = dict(TTL_IDENTITY)
    return record
