"""A raw DynamoDB stream record (Lambda event format) → the few facts the detector needs."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, TypeGuard

from hotkeys.detector.domain.health import ttl_verdict
from hotkeys.detector.domain.indexes import IndexImageError, IndexSpec, index_writes
from hotkeys.detector.domain.sizing import (
    KIB,
    MAX_NUMBER_DIGITS,
    SizingError,
    image_size,
    image_sizes,
    number_size,
)
from hotkeys.detector.domain.summary import MAX_KEY_TEXT_BYTES

TTL_PRINCIPAL = "dynamodb.amazonaws.com"
FULL_VIEW = "NEW_AND_OLD_IMAGES"
_EVENT_NAMES = frozenset(("INSERT", "MODIFY", "REMOVE"))


class MalformedRecord(ValueError):
    """A record that can never be processed: it fails its invocation (tumbling windows: Lambda bisects
    until it is alone) or is a batch item failure (without), and finally a DLQ entry."""


class ChangeKind(Enum):
    """What a stream record did: a write (INSERT, MODIFY, or a REMOVE by a caller) or a TTL deletion (a
    REMOVE by the DynamoDB service, which consumes no write capacity)."""

    WRITE = "write"
    TTL_DELETE = "ttl_delete"


# 10000-01-01T00:00:00Z: the first second a date cannot say (and whose epoch seconds, 12 digits, still
# fit the stats table's zero-padded window keys).
LATEST_EPOCH = 253_402_300_800


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float  # exact types: a bool is not a time


def stream_time(value: Any) -> TypeGuard[int | float]:
    """Whether ``value`` is epoch seconds a stream record can carry: a number (not a bool) from 1970 to
    before year 10000 (a window there could not be stored, or named as a date)."""
    kind = type(value)  # inline, not _is_number: this runs once per record
    return (kind is int or kind is float) and 0 <= value < LATEST_EPOCH


@dataclass(slots=True)
class Change:
    table: str
    key: str
    event_time: int
    sequence: int
    wcu: int
    kind: ChangeKind
    # The record lacks the images a NEW_AND_OLD_IMAGES stream carries: its size (and archive) is partial.
    partial: bool = False
    # (index name, index partition key, write units) of each GSI write the record caused.
    index_writes: tuple[tuple[str, str, int], ...] = ()
    # The item's sort key as (type, value text), in a table that has one.
    sort_key: tuple[str, str] | None = None
    # The table has local secondary indexes: each item collection stays in one partition.
    has_local_indexes: bool = False
    # The item the write left (its new image; 0: none, a delete or a record without images): its size,
    # and what DynamoDB's TTL makes of it (a TtlVerdict's value; None: the table has no TTL attribute).
    size: int = 0
    ttl: int | None = None


# (table name, the record's Keys map) -> partition key attribute.
class ResolveKey(Protocol):
    """The port that names a record's partition key: (table, the record's Keys) → key attribute value."""

    def __call__(self, table: str, keys: dict[str, Any], /) -> str: ...


class TtlAttributeOf(Protocol):
    """The port that names a table's TTL attribute (None: TTL is off, or unknown)."""

    def __call__(self, table: str, /) -> str | None: ...


class IndexesOf(Protocol):
    """The port that lists a table's counted global secondary indexes (empty: none)."""

    def __call__(self, table: str, /) -> tuple[IndexSpec, ...]: ...


_table_names: dict[str, str] = {}


def table_from_arn(arn: Any) -> str:
    """``arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL`` → NAME."""
    if not isinstance(arn, str):  # before the cache lookup: a list or map is not even hashable
        raise MalformedRecord("eventSourceARN is missing or not a string")
    name = _table_names.get(arn)
    if name is not None:
        return name
    parts = arn.split(":", 5)
    resource = parts[5].split("/") if len(parts) == 6 else []
    if len(resource) < 2 or resource[0] != "table" or not resource[1] or parts[2] != "dynamodb":
        raise MalformedRecord(f"eventSourceARN is not a DynamoDB stream ARN: {arn!r:.120}")
    _table_names[arn] = resource[1]
    return resource[1]


def table_of(record: dict[str, Any]) -> str:
    """A change from Kinesis Data Streams names its table (``domain.kinesis``); a DynamoDB stream's
    record, its stream's ARN."""
    named = record.get("tableName")
    return named if type(named) is str else table_from_arn(record.get("eventSourceARN"))


def is_ttl_delete(record: dict[str, Any]) -> bool:
    identity = record.get("userIdentity")
    return type(identity) is dict and identity.get("type") == "Service" and identity.get("principalId") == TTL_PRINCIPAL


def key_text(value: Any) -> str:
    """A key attribute value (S, N or B) as text: strings and numbers as-is, binary as base64."""
    if type(value) is dict and len(value) == 1:
        raw = value.get("S")
        if raw is None:
            raw = value.get("N")
            if raw is None:
                raw = value.get("B")
            elif not (type(raw) is str and raw.isdigit() and raw.isascii() and len(raw) <= MAX_NUMBER_DIGITS):
                _check_number(raw)  # plain integers of up to 38 digits are valid as they stand
        if type(raw) is str:
            if len(raw) > MAX_KEY_TEXT_BYTES or not raw.isascii():
                _check_key_bytes(raw)
            return raw
    raise MalformedRecord(f"partition key must be an S, N or B value, got {value!r:.80}")


def _check_number(raw: Any) -> None:
    try:
        number_size(raw)
    except SizingError as error:
        raise MalformedRecord(f"partition key: {error}") from None


def _check_key_bytes(raw: str) -> None:
    try:
        size = len(raw.encode("utf-8"))
    except UnicodeEncodeError:
        raise MalformedRecord("partition key is not valid UTF-8 (a lone surrogate)") from None
    if size > MAX_KEY_TEXT_BYTES:
        raise MalformedRecord("partition key is longer than DynamoDB allows (2,048 bytes)")


def sequence_of(record: Any) -> str:
    """The record's SequenceNumber (the batch item identifier), validated."""
    stream = record.get("dynamodb") if type(record) is dict else None
    sequence = stream.get("SequenceNumber") if type(stream) is dict else None
    if type(sequence) is not str or not (sequence.isascii() and sequence.isdigit()):  # ("²".isdigit() is true)
        raise MalformedRecord("record has no numeric dynamodb.SequenceNumber")
    return sequence


def parse_change(
    record: Any,
    resolve_key: ResolveKey,
    sequence: str | int | None = None,
    indexes: IndexesOf | None = None,
    size_ttl_images: bool = True,
    ttl_attribute: TtlAttributeOf | None = None,
) -> Change:
    """Parse one record; raises MalformedRecord with the reason if it cannot be counted.

    ``sequence``: the record's SequenceNumber when the caller has read it already (text or number).
    A TTL deletion costs no capacity: ``size_ttl_images=False`` skips its size walk, for a caller
    that validates its images another way (the archive's line writer refuses what sizing refuses).
    This runs once per record of every batch: checks are exact-type tests and no generator or
    intermediate collection is built unless the record has index writes.
    """
    if type(record) is not dict:
        raise MalformedRecord("record is not a map")
    stream = record.get("dynamodb")
    if type(stream) is not dict:
        raise MalformedRecord("record has no dynamodb section")
    event_name = record.get("eventName")
    if type(event_name) is not str or event_name not in _EVENT_NAMES:  # (a list is not even hashable)
        raise MalformedRecord(f"unknown eventName {event_name!r:.40}")
    table = table_of(record)
    keys = stream.get("Keys")
    if type(keys) is not dict or not keys:
        raise MalformedRecord("record has no dynamodb.Keys")
    key_attribute = resolve_key(table, keys)
    key_value = keys.get(key_attribute)
    if key_value is None:
        raise MalformedRecord(f"partition key attribute {key_attribute!r} is not in the record's Keys")
    created: Any = stream.get("ApproximateCreationDateTime")
    if not stream_time(created):
        raise MalformedRecord(
            "dynamodb.ApproximateCreationDateTime is not a time a stream can carry"
            if _is_number(created)
            else "dynamodb.ApproximateCreationDateTime must be epoch seconds"
        )
    if sequence is None:
        sequence = sequence_of(record)
    kind = ChangeKind.TTL_DELETE if event_name == "REMOVE" and is_ttl_delete(record) else ChangeKind.WRITE
    writing = kind is ChangeKind.WRITE
    old = stream.get("OldImage")
    new = stream.get("NewImage")
    old_size, new_size = _image_sizes(old, new, keys) if writing or size_ttl_images else (0, 0)
    event_time = int(created)
    key = key_text(key_value)
    item_size = 0
    ttl = None
    if writing and type(new) is dict:  # the item the write left, sized above (a valid TTL value, if any)
        item_size = new_size
        attribute = ttl_attribute(table) if ttl_attribute is not None else None
        if attribute is not None:
            ttl = ttl_verdict(new.get(attribute), event_time)
    larger = old_size if old_size > new_size else new_size
    change = Change(
        table,
        key,
        event_time,
        int(sequence),
        # Put/Update cost the larger of the old and new item, Delete the deleted item (1 unit per KB,
        # rounded up, at least 1: ``write_units``, inlined); TTL deletions cost no capacity.
        (-(-larger // KIB) or 1) if writing else 0,
        kind,
        _partial(stream.get("StreamViewType"), old, new),
        (),
        _sort_key(keys, key_attribute) if len(keys) == 2 else None,
        False,
        item_size,
        ttl,
    )
    specs = indexes(table) if indexes is not None and writing else ()
    if specs:
        _add_index_writes(change, specs, stream, old_size, new_size)
    return change


def _partial(view: Any, old: Any, new: Any) -> bool:
    """The record lacks the images a NEW_AND_OLD_IMAGES stream carries (its size and archive are partial):
    ``view`` is its StreamViewType, ``old`` and ``new`` its images (None: absent)."""
    return (view is not None and view != FULL_VIEW) or (old is None and new is None)


def without_images(stream: dict[str, Any]) -> bool:
    """``_partial`` of a record's ``dynamodb`` section."""
    return _partial(stream.get("StreamViewType"), stream.get("OldImage"), stream.get("NewImage"))


def _add_index_writes(
    change: Change, specs: tuple[IndexSpec, ...], stream: dict[str, Any], old_size: int, new_size: int
) -> None:
    """The record's secondary index writes: local ones (same partition) add to its write units, global
    ones are listed by index partition key."""
    writes = _index_writes(specs, stream, old_size, new_size)
    change.wcu += sum(wcu for local, _, _, wcu in writes if local)
    change.index_writes = tuple((name, key, wcu) for local, name, key, wcu in writes if not local)
    change.has_local_indexes = any(spec.local for spec in specs)


def _sort_key(keys: dict[str, Any], partition_attribute: str) -> tuple[str, str] | None:
    for name, value in keys.items():
        if name != partition_attribute and type(value) is dict and len(value) == 1:
            ((kind, raw),) = value.items()
            if kind in ("S", "N", "B") and type(raw) is str:
                return kind, raw
    return None


def _image_sizes(old: Any, new: Any, keys: dict[str, Any]) -> tuple[int, int]:
    """(old, new) item sizes; without images (KEYS_ONLY or NEW_IMAGE-less views) the keys are all we see."""
    try:
        if old is None and new is None:
            return 0, image_size(keys)
        return image_sizes(old, new)
    except SizingError as error:
        raise MalformedRecord(f"unparsable image: {error}") from None


def _index_writes(
    specs: tuple[IndexSpec, ...], stream: dict[str, Any], old_size: int, new_size: int
) -> list[tuple[bool, str, str, int]]:
    """(local, index name, index partition key, write units) of each secondary index write."""
    old = stream.get("OldImage")
    new = stream.get("NewImage")
    writes: list[tuple[bool, str, str, int]] = []
    try:
        for spec in specs:
            for key, wcu in index_writes(spec, old, new, old_size if old is not None else None, new_size):
                writes.append((spec.local, spec.name, key, wcu))
    except IndexImageError as error:
        raise MalformedRecord(str(error)) from None
    return writes
