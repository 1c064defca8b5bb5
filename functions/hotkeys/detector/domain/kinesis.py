"""A record of Kinesis Data Streams for DynamoDB (Lambda's Kinesis event format) → the change it carries.

Lambda hands the function a Kinesis record whose ``kinesis.data`` is the base64 of one DynamoDB change
in JSON: ``tableName``, ``eventName``, ``userIdentity`` and a ``dynamodb`` section with ``Keys``, both
images, ``SizeBytes`` and ``ApproximateCreationDateTime`` at the table's configured precision (epoch
microseconds by default, or milliseconds), but no ``SequenceNumber`` and no ``StreamViewType``
(docs/kinesis.md quotes the documentation). ``unwrap`` turns it into the shape of a DynamoDB Streams
record that ``records.parse_change`` reads (its time in epoch seconds, rounded down as DynamoDB Streams
rounds it) and returns the time at full precision beside it, which ``identity`` needs: the same change
may be delivered more than once, each time with its own Kinesis sequence number ("The same item
notifications might also appear more than once in the stream", DynamoDB developer guide).
"""

from __future__ import annotations

import binascii
import hashlib
import json
import json.scanner
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from hotkeys.detector.domain.records import Change, MalformedRecord

KINESIS_SOURCE = "aws:kinesis"
# ApproximateCreationDateTimePrecision: what one unit of the record's time is, in microseconds.
MICROSECONDS_PER_UNIT = {"MICROSECOND": 1, "MILLISECOND": 1_000}
# A record that does not name its precision: epoch milliseconds stay below this until the year 10000,
# epoch microseconds pass it in 1978 (the table's precision can only be set since 2023).
_LARGEST_MILLISECONDS = 253_402_300_800_000
# The longest sequence number Kinesis issues ("0|([1-9]\d{0,128})", Kinesis API reference, Record).
MAX_KINESIS_SEQUENCE_DIGITS = 129
# (typeshed types the scanner's argument as a scanner: a decoder is what json itself passes)
_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(cast(Any, json.JSONDecoder()))
_BLANK = " \t\n\r"  # JSON's whitespace
# A binary value's tag (or an attribute so named). One regular-expression pass finds either tag for less
# than two substring searches cost (both stop at every quote of the document).
_BINARY_TAG = re.compile(rb'"BS?"')
# Both images by value, in one canonical text (sorted names, no spaces): one encoder for every record, as
# json.dumps with options builds one per call. (Parsed JSON holds no cycles to check for.)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False).encode
# Bytes of a change's identity digest (``identity``; docs/decisions.md §82 bounds its collisions).
IDENTITY_BYTES = 6


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """A Kinesis record's change, shaped as a DynamoDB Streams record, and its time in microseconds."""

    record: dict[str, Any]
    created_us: int
    # The time is in microseconds (else milliseconds: two changes of one item share a unit more often).
    fine: bool = True


def is_kinesis(record: Any) -> bool:
    return type(record) is dict and record.get("eventSource") == KINESIS_SOURCE


def kinesis_sequence(record: Any) -> str:
    """The record's Kinesis sequence number (the batch item identifier), validated."""
    section = record.get("kinesis") if type(record) is dict else None
    sequence = section.get("sequenceNumber") if type(section) is dict else None
    if (
        type(sequence) is not str
        or not (sequence.isascii() and sequence.isdigit())  # ("²".isdigit() is true)
        or len(sequence) > MAX_KINESIS_SEQUENCE_DIGITS
    ):
        raise MalformedRecord("record has no numeric kinesis.sequenceNumber")
    return sequence


def unwrap(record: dict[str, Any]) -> Unwrapped:
    """Decode the change a Kinesis record carries; raises MalformedRecord with the reason."""
    data = record["kinesis"].get("data")  # (kinesis_sequence has checked the section)
    if type(data) is not str:
        raise MalformedRecord("kinesis.data is missing or not a string")
    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
        text = raw.decode("utf-8")
        # json's own scanner, without json.loads's layers (a third of a small document's parse)
        change, end = _scan(text, 0 if text[:1] not in _BLANK else len(text) - len(text.lstrip(_BLANK)))
    except (binascii.Error, ValueError, StopIteration) as error:  # (UnicodeDecodeError is a ValueError)
        raise MalformedRecord(f"kinesis.data is not base64 JSON: {error!r:.80}") from None
    if end != len(text) and text[end:].strip():
        raise MalformedRecord("kinesis.data holds more than one JSON document")
    if type(change) is not dict:
        raise MalformedRecord("kinesis.data is not a DynamoDB change document")
    table = change.get("tableName")
    if type(table) is not str or not table:
        raise MalformedRecord("the change names no tableName")
    stream = change.get("dynamodb")
    if type(stream) is not dict:
        raise MalformedRecord("record has no dynamodb section")
    created = stream.get("ApproximateCreationDateTime")
    if type(created) is not int or created < 0:
        raise MalformedRecord("dynamodb.ApproximateCreationDateTime must be an integer epoch time")
    precision = stream.get("ApproximateCreationDateTimePrecision")
    unit = MICROSECONDS_PER_UNIT.get(precision) if type(precision) is str else None
    if unit is None:
        if precision is not None:
            raise MalformedRecord(f"unknown ApproximateCreationDateTimePrecision {precision!r:.40}")
        unit = 1_000 if created < _LARGEST_MILLISECONDS else 1
    created_us = created * unit
    # The seconds parse_change reads and validates, rounded down as DynamoDB Streams rounds them.
    stream["ApproximateCreationDateTime"] = created_us // 1_000_000
    if _BINARY_TAG.search(raw) is not None:  # a binary value (or an attribute so named): encoded once more
        for section in ("Keys", "NewImage", "OldImage"):
            image = stream.get(section)
            if type(image) is dict:
                _decode_binary_once(image)
    return Unwrapped(change, created_us, unit == 1)


def _decode_binary_once(image: dict[str, Any]) -> None:
    """Binary values as a DynamoDB stream carries them (base64 of the bytes): "when data records are
    written to a Kinesis data stream, these encoded binary values are encoded with base64-encoding a
    second time" (DynamoDB developer guide, Kinesis Data Streams)."""
    for value in image.values():
        _decode_value(value)


def _decode_value(value: Any) -> None:
    if type(value) is not dict or len(value) != 1:
        return  # (sizing refuses it with the reason)
    ((tag, inner),) = value.items()
    if tag == "B" and type(inner) is str:
        value["B"] = _once(inner)
    elif tag == "BS" and type(inner) is list:
        value["BS"] = [_once(item) if type(item) is str else item for item in inner]
    elif tag == "M" and type(inner) is dict:
        _decode_binary_once(inner)
    elif tag == "L" and type(inner) is list:
        for item in inner:
            _decode_value(item)


def _once(text: str) -> str:
    try:
        return binascii.a2b_base64(text, strict_mode=True).decode("ascii")
    except (binascii.Error, ValueError):
        raise MalformedRecord("a binary value is not base64 encoded twice, as Kinesis records carry it") from None


def identity(change: Change, unwrapped: Unwrapped) -> bytes:
    """What tells one DynamoDB change from another when Kinesis delivers it twice: the item (table, keys),
    what happened to it (event name), when (``ApproximateCreationDateTime`` at full precision, which AWS
    points to "to identify duplicate records") and the record's ``SizeBytes``; at millisecond precision
    also both images, by value (a hot item changes more than once in a millisecond). A duplicate's Kinesis
    sequence number and arrival time are its own, and whether its ``eventID`` is the original's is not
    documented: none of them is part of it. What it cannot tell apart: docs/decisions.md §82."""
    record = unwrapped.record
    stream = record["dynamodb"]
    sort_key = change.sort_key
    text = (
        f"{change.table}\x1f{record['eventName']}\x1f{change.key}\x1f"
        f"{sort_key[1] if sort_key is not None else ''}\x1f{unwrapped.created_us}\x1f{stream.get('SizeBytes')}"
    )
    if not unwrapped.fine:
        images = [stream.get("OldImage"), stream.get("NewImage")]
        text += "\x1f" + _CANONICAL(images)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=IDENTITY_BYTES).digest()
