"""TTL deletions → gzip-compressed JSON Lines objects, named so a retried batch rewrites, not copies.

Object key: ``<prefix>table=<table>/dt=YYYY-MM-DD/hour=HH/<shard>-<first seq>-<last seq>.json.gz``
(Hive-style, for Athena partition projection). One object per batch and hour of expiry.

Each line: ``event_id``, ``table``, ``keys``, ``item`` (plain JSON: numbers exact, never
through float; binary as base64; sets as sorted lists), ``expired_at`` (ISO 8601 of
the deletion's event time) and ``ttl`` (the item's raw TTL attribute, when known).
"""

from __future__ import annotations

import gzip
import json
import re
import time
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from hotkeys.detector.consumer.ports import Archived, ObjectStore, Spool
from hotkeys.detector.domain.records import Change, ChangeKind, MalformedRecord, is_ttl_delete
from hotkeys.detector.domain.sizing import SizingError, binary_size, image_size, number_size, value_size
from hotkeys.detector.domain.windows import iso_utc
from hotkeys.detector.observability import logger

_JSON_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
_INTEGER = re.compile(r"-?(0|[1-9]\d*)")
# Level 6: nearly the size of level 9 (gzip's default) for about half its CPU per record; level 3 is the
# next step if compute matters more than storage (docs/decisions.md §25; `python -m bench.archive_levels`,
# figures in docs/measurements.md).
GZIP_LEVEL = 6


class RawNumber(str):
    """A DynamoDB number kept as its exact decimal text (emitted unquoted)."""


def exact_number(text: str) -> RawNumber:
    number_size(text)  # refuses what the size rules refuse (Decimal also takes "1_000" and " 1")
    try:
        normal = str(Decimal(text))
    except InvalidOperation:
        raise ValueError(f"not a number: {text!r}") from None
    if not _JSON_NUMBER.fullmatch(normal):
        raise ValueError(f"number {text!r} has no JSON form")
    return RawNumber(normal)


NumberWriter = Callable[[str], Any]


def plain(value: Any, number: NumberWriter = exact_number) -> Any:
    """DynamoDB JSON → plain JSON values (numbers through ``number``, sets as sorted lists).

    Refuses (``SizingError``) every value the size rules refuse: with the archive on, a TTL
    deletion's image is validated here instead of by a size walk nobody needs (it costs no capacity).
    """
    try:
        ((kind, raw),) = value.items()
    except (AttributeError, TypeError, ValueError):
        raise SizingError(f"attribute value must be a one-entry map, got {value!r:.80}") from None
    if kind == "S":
        if not isinstance(raw, str):
            raise SizingError("S value must be a string")
        return raw
    if kind == "N":
        return number(raw)
    if kind == "M":
        return plain_image(raw, number)
    if kind == "L":
        if not isinstance(raw, list):
            raise SizingError("L value must be a list")
        return [plain(item, number) for item in raw]
    if kind == "B":
        binary_size(raw)
        return raw
    if kind == "BOOL":
        return bool(raw)
    if kind == "NULL":
        return None
    value_size(value)  # a set's rules (non-empty, element types), or an unknown type: the size walk's
    if kind in ("SS", "BS"):
        return sorted(raw)
    return [number(text) for text in sorted(raw, key=Decimal)]


def plain_image(image: Any, number: NumberWriter = exact_number) -> dict[str, Any]:
    """A map of attributes as plain JSON. Strings and plain integers, most of an item, are converted
    inline (this runs for every attribute of every archived item)."""
    if not isinstance(image, dict):
        raise SizingError("an image must be a map of attributes")
    out: dict[str, Any] = {}
    for name, value in image.items():
        if type(value) is dict and len(value) == 1:
            raw = value.get("S")
            if type(raw) is str:
                out[name] = raw
                continue
            raw = value.get("N")
            if type(raw) is str:
                out[name] = number(raw)
                continue
        out[name] = plain(value, number)
    return out


def dumps(value: Any) -> str:
    """JSON text with exact numbers (RawNumber written as-is)."""
    if isinstance(value, RawNumber):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


class _NeedsExactText(Exception):
    """A number whose exact text the C encoder would not write (e.g. ``1.50``, ``1E+2``)."""


def _fast_number(text: str) -> int | float:
    """The number as int or float when json's C encoder writes exactly ``exact_number(text)``."""
    if type(text) is str and text.isascii() and text.isdigit() and (text[0] != "0" or len(text) == 1):
        return int(text)
    exact = exact_number(text)
    if _INTEGER.fullmatch(exact):
        if str(int(exact)) != exact:  # "-0"
            raise _NeedsExactText
        return int(exact)
    as_float = float(exact)
    if repr(as_float) != exact:
        raise _NeedsExactText
    return as_float


def _line(change: Change, record: dict[str, Any], ttl_attribute: str | None, number: NumberWriter) -> dict[str, Any]:
    stream = record["dynamodb"]
    item = plain_image(stream.get("OldImage") or {}, number)
    line: dict[str, Any] = {
        "event_id": record.get("eventID"),
        "table": change.table,
        "keys": plain_image(stream["Keys"], number),
        "item": item,
        "expired_at": iso_utc(change.event_time),
    }
    if ttl_attribute and ttl_attribute in item:
        line["ttl"] = item[ttl_attribute]
    return line


# One encoder for every line (json.dumps with options builds a new one per call).
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def archive_line(change: Change, record: dict[str, Any], ttl_attribute: str | None) -> str:
    """One JSON line. Written by json's C encoder when every number's exact text survives it (the
    usual case); otherwise by ``dumps``. Both give the same text (property-tested). Raises
    ``ValueError`` for any image the size rules refuse (property-tested too)."""
    new = record["dynamodb"].get("NewImage")
    if new is not None:  # a deletion has none; one that claims one must still be a valid image
        image_size(new)
    try:
        line = _line(change, record, ttl_attribute, _fast_number)
    except _NeedsExactText:
        return _exact_line(change, record, ttl_attribute)
    return _encode(line)


def _exact_line(change: Change, record: dict[str, Any], ttl_attribute: str | None) -> str:
    return dumps(_line(change, record, ttl_attribute, exact_number))


def object_key(prefix: str, table: str, shard_id: str, changes: list[Change]) -> str:
    hour = iso_utc(changes[0].event_time)  # YYYY-MM-DDTHH:MM:SSZ
    first, last = changes[0].sequence, changes[-1].sequence
    return f"{prefix}table={table}/dt={hour[:10]}/hour={hour[11:13]}/{shard_id}-{first}-{last}.json.gz"


def build_objects(prefix: str, shard_id: str, lines: list[tuple[Change, str]]) -> dict[str, bytes]:
    """Object key → gzip bytes of the (change, archive line) pairs (deterministic: same records, same
    key, same bytes)."""
    groups: dict[tuple[str, str], list[tuple[Change, str]]] = {}
    for change, line in lines:
        groups.setdefault((change.table, iso_utc(change.event_time)[:13]), []).append((change, line))
    objects = {}
    for (table, _hour), group in groups.items():
        key = object_key(prefix, table, shard_id, [change for change, _ in group])
        text = "\n".join(line for _, line in group) + "\n"
        objects[key] = gzip.compress(text.encode("utf-8"), compresslevel=GZIP_LEVEL, mtime=0)
    return objects


# How often a container looks for spooled objects (one strongly consistent read of the marker) when it
# knows of none: a look per container and interval is a stats-table request every shard pays.
DRAIN_INTERVAL_SECONDS = 300.0
# How soon it looks again after it spooled an object itself, or after a drain left objects behind.
RETRY_DRAIN_SECONDS = 60.0
# How many objects a drain moves per invocation.
DRAIN_LIMIT = 25


class TtlArchiver:
    """The pipeline's archive port: which records to archive, and writing them."""

    def __init__(
        self,
        store: ObjectStore,
        prefix: str,
        ttl_attribute: Callable[[str], str | None],
        replicated_ttl: bool = False,
        spool: Spool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._prefix = prefix
        self._ttl_attribute = ttl_attribute
        self._replicated_ttl = replicated_ttl
        self._spool = spool
        self._clock = clock
        self._next_drain = clock()
        # Objects are known to wait: this container spooled one, or its last drain left some behind.
        self._owed = False

    def wanted(self, change: Change, record: dict[str, Any]) -> bool:
        if change.kind is ChangeKind.TTL_DELETE:
            return True
        if not self._replicated_ttl or record.get("eventName") != "REMOVE" or is_ttl_delete(record):
            return False
        # A global-table replica sees the TTL deletion without userIdentity: judge by the TTL value.
        attribute = self._ttl_attribute(change.table)
        old = record["dynamodb"].get("OldImage") or {}
        expiry = old.get(attribute, {}).get("N") if attribute else None
        try:
            return expiry is not None and Decimal(expiry) <= change.event_time
        except InvalidOperation:
            return False

    def line(self, change: Change, record: dict[str, Any]) -> str:
        """The record's archive line, built as the batch is read: an image that cannot be archived
        fails its own record, not the batch."""
        try:
            return archive_line(change, record, self._ttl_attribute(change.table))
        except ValueError as error:
            raise MalformedRecord(f"unarchivable image: {error}") from None

    def archive(self, shard_id: str, lines: list[tuple[Change, str]]) -> Archived:
        """Store the batch's objects; one S3 refuses is spooled (raises only if that fails too, or
        without a spool: then the whole invocation fails and is retried)."""
        stored: list[str] = []
        spooled: list[str] = []
        for key, body in build_objects(self._prefix, shard_id, lines).items():
            try:
                self._store.put(key, body)
            except Exception as error:
                if self._spool is None:
                    raise
                logger.warning("S3 refused an archive object: spooled", extra={"object_key": key, "error": str(error)})
                self._spool.put(shard_id, key, body)
                spooled.append(key)
                self._next_drain = min(self._next_drain, self._clock() + RETRY_DRAIN_SECONDS)
                self._owed = True
                continue
            stored.append(key)
        return Archived(tuple(stored), tuple(spooled))

    def drain(self, force: bool = False, limit: int = DRAIN_LIMIT) -> tuple[int, bool]:
        """Move spooled objects into S3, when due (``DRAIN_INTERVAL_SECONDS`` after the last look, or
        ``RETRY_DRAIN_SECONDS`` while objects are known to wait) or forced; never raises for S3 (the
        objects stay spooled). Returns (objects moved, spool empty)."""
        if self._spool is None or (not force and self._clock() < self._next_drain):
            return 0, True
        # Set before the look, so that a look that fails waits its turn too.
        self._next_drain = self._clock() + (RETRY_DRAIN_SECONDS if self._owed else DRAIN_INTERVAL_SECONDS)

        def refused(key: str, error: Exception) -> None:
            logger.warning("S3 still refuses a spooled archive object", extra={"object_key": key, "error": str(error)})

        moved, empty = self._spool.drain(self._store, limit, refused, force)
        self._owed = not empty
        self._next_drain = self._clock() + (RETRY_DRAIN_SECONDS if self._owed else DRAIN_INTERVAL_SECONDS)
        return moved, empty
