"""A table's changes as Kinesis Data Streams for DynamoDB delivers them, and as Lambda hands them over.

Two shapes (docs/cli.md, ``hotkeys generate --source kinesis``): the Lambda Kinesis event's records
(``kinesis.data`` the base64 of one decoded change) and the decoded changes themselves. A decoded change is
the DynamoDB stream record's change without ``SequenceNumber`` and ``StreamViewType``, with ``tableName``,
``recordFormat``, ``userIdentity`` (null, or the TTL service's) and ``ApproximateCreationDateTime`` in
epoch microseconds or milliseconds (``ApproximateCreationDateTimePrecision``).

What Kinesis adds to the same changes (``KinesisOptions``), each drawn from a random generator of its own so
the changes are the DynamoDB-stream workload's, seed for seed:

* shards: a record goes to the shard whose hash key range holds the MD5 of its partition key (Kinesis
  splits the 128-bit range evenly over a new stream's shards); the partition key is opaque, derived from
  the table and the item's partition key value, so one item's changes share a shard;
* arrival: a change arrives up to ``reorder`` seconds after it was made (``approximateArrivalTimestamp``,
  milliseconds), and records are delivered, and numbered, in arrival order per shard;
* duplicates: that share of the changes is sent once more, as the producer's retry would: the same payload
  (its ``eventID`` the same or a new one: both readings exist), to the same shard, arriving after the
  first copy and still within ``reorder`` of the change's creation, with a sequence number of its own.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import json
import math
import random
import struct
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hotkeys.emulator.events import DEFAULT_ACCOUNT, DEFAULT_REGION, TTL_IDENTITY
from hotkeys.emulator.generate import Generated, GenerateError, Workload, changes, stream_record_of
from hotkeys.emulator.positions import kinesis_body

if TYPE_CHECKING:
    from hotkeys.detector.domain.records import ResolveKey

KINESIS_SOURCE = "aws:kinesis"
STREAM_NAME = "hotkeys-changes"
PRECISIONS = ("MICROSECOND", "MILLISECOND")
DUPLICATE_EVENT_IDS = ("new", "same")
FORMATS = ("lambda", "decoded")
Precision = Literal["MICROSECOND", "MILLISECOND"]
MICROSECONDS = 1_000_000
_SECOND = struct.Struct(">q")  # a change's creation second, before its identity (as_stream_record)
# Kinesis shards a stream may have, for a generated one (Kinesis' own quota is higher; a typo is not).
MAX_SHARDS = 1024
# How late a record may arrive, at most: a day (Kinesis keeps records a day by default).
MAX_REORDER_SECONDS = 86_400
INVOKE_ROLE = f"arn:aws:iam::{DEFAULT_ACCOUNT}:role/hotkeys-detector-consumer"


def stream_arn(name: str = STREAM_NAME, region: str = DEFAULT_REGION, account: str = DEFAULT_ACCOUNT) -> str:
    return f"arn:aws:kinesis:{region}:{account}:stream/{name}"


def shard_id(index: int) -> str:
    """A Kinesis shard id (``shardId-000000000006``)."""
    return f"shardId-{index:012d}"


def sequence_number(shard: int, position: int) -> str:
    """A 56-digit sequence number, growing with ``position`` in the shard (as real ones do)."""
    return f"49{shard:06d}{position:048d}"


def partition_key(table: str, value: Mapping[str, Any]) -> str:
    """An opaque partition key for an item: a digest of its table and its partition key value (DynamoDB JSON)."""
    text = f"{table}\x00{json.dumps(value, sort_keys=True, separators=(',', ':'))}"
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest().upper()


def shard_for(key: str, shards: int) -> int:
    """The shard whose hash key range holds the key's MD5 (128-bit ranges split evenly over ``shards``)."""
    hashed = int.from_bytes(hashlib.md5(key.encode(), usedforsecurity=False).digest(), "big")
    return (hashed * shards) >> 128


def precise_microseconds(when: float) -> int:
    """A write's time in epoch microseconds, in the same second as ``int(when)`` (the stream record's)."""
    second = int(when)
    return min(max(math.floor(when * MICROSECONDS), second * MICROSECONDS), (second + 1) * MICROSECONDS - 1)


@dataclass(frozen=True)
class KinesisOptions:
    shards: int = 1
    duplicates: float = 0.0  # share of changes sent twice
    duplicate_event_ids: str = "new"  # a duplicate's eventID: "new" or "same"
    reorder: float = 0.0  # records arrive up to this many seconds after the change
    precision: Precision = "MICROSECOND"

    def validate(self) -> None:
        if not 1 <= self.shards <= MAX_SHARDS:
            raise GenerateError(f"--kinesis-shards must be between 1 and {MAX_SHARDS}, got {self.shards}")
        if not 0 <= self.duplicates <= 1:
            raise GenerateError(f"--duplicates must be between 0 and 1, got {self.duplicates:g}")
        if not 0 <= self.reorder <= MAX_REORDER_SECONDS:
            raise GenerateError(f"--reorder must be between 0 and {MAX_REORDER_SECONDS} seconds, got {self.reorder:g}")
        if self.duplicate_event_ids not in DUPLICATE_EVENT_IDS:
            raise GenerateError(f"--duplicate-event-ids must be one of {', '.join(DUPLICATE_EVENT_IDS)}")
        if self.precision not in PRECISIONS:
            raise GenerateError(f"--precision must be one of {', '.join(PRECISIONS)}")

    def duplicate_count(self, workloads: Workload | Sequence[Workload]) -> int:
        """The changes sent twice: each table's share of its own (``deliveries``)."""
        return sum(round(self.duplicates * workload.record_count()) for workload in tables_of(workloads))


def tables_of(workloads: Workload | Sequence[Workload]) -> tuple[Workload, ...]:
    """The workloads one Kinesis stream carries: one table's, or several tables' (each its own table)."""
    return (workloads,) if isinstance(workloads, Workload) else tuple(workloads)


@dataclass(frozen=True, slots=True)
class KinesisRecord:
    """One record as a Kinesis shard holds it: where (``shard``, ``sequence``), when it arrived (epoch
    milliseconds), its partition key, and the decoded change it carries (``change``); ``duplicate``: a second
    copy of a change already sent, ``created_us``: when the change was made (epoch microseconds)."""

    shard: int
    sequence: str
    arrival_ms: int
    partition_key: str
    change: dict[str, Any]
    duplicate: bool
    created_us: int

    def lambda_record(self, arn: str = stream_arn()) -> dict[str, Any]:
        """The record in a Lambda Kinesis event (the Lambda developer guide's example record)."""
        return lambda_record(self.change, self.partition_key, shard_id(self.shard), self.sequence, self.arrival_ms, arn)


def lambda_record(
    change: Mapping[str, Any] | bytes, key: str, shard: str, sequence: str, arrival_ms: int, arn: str
) -> dict[str, Any]:
    """A Kinesis record as a Lambda Kinesis event carries it: the one encoder of generated records and of
    records read back from a stream (``kinesis_read``). ``change``: the decoded change, or the record's data as
    the stream holds it."""
    payload = change if isinstance(change, bytes) else json.dumps(change, separators=(",", ":")).encode()
    data = base64.b64encode(payload).decode("ascii")
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": key,
            "sequenceNumber": sequence,
            "data": data,
            "approximateArrivalTimestamp": arrival_ms / 1000,
        },
        "eventSource": KINESIS_SOURCE,
        "eventVersion": "1.0",
        "eventID": f"{shard}:{sequence}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": INVOKE_ROLE,
        "awsRegion": arn.split(":")[3] if arn.count(":") >= 5 else DEFAULT_REGION,
        "eventSourceARN": arn,
    }


def decoded_change(
    record: Mapping[str, Any], table: str, created_us: int, precision: Precision, event_id: str
) -> dict[str, Any]:
    """A DynamoDB stream record's change as Kinesis Data Streams for DynamoDB sends it (module doc)."""
    body: Mapping[str, Any] = record["dynamodb"]
    stamp = created_us if precision == "MICROSECOND" else created_us // 1000
    dynamodb: dict[str, Any] = {"ApproximateCreationDateTime": stamp, "ApproximateCreationDateTimePrecision": precision}
    dynamodb |= {name: _twice(body[name]) for name in ("Keys", "NewImage", "OldImage") if name in body}
    dynamodb["SizeBytes"] = body["SizeBytes"]
    identity = record.get("userIdentity")
    return {
        "awsRegion": record.get("awsRegion", DEFAULT_REGION),
        "eventID": event_id,
        "eventName": record["eventName"],
        "userIdentity": dict(identity) if identity == TTL_IDENTITY else None,
        "recordFormat": "application/json",
        "tableName": table,
        "dynamodb": dynamodb,
        "eventSource": "aws:dynamodb",
    }


def _twice(value: Any) -> Any:
    """Binary values (``B``, ``BS``, at any depth) base64-encoded a second time: "when data records are written
    to a Kinesis data stream, these encoded binary values are encoded with base64-encoding a second time"
    (DynamoDB developer guide, Kinesis Data Streams). A copy."""
    if isinstance(value, dict):
        return {
            tag: (
                _b64_text(inner)
                if tag == "B" and isinstance(inner, str)
                else [_b64_text(item) for item in inner]
                if tag == "BS" and isinstance(inner, list)
                else _twice(inner)
            )
            for tag, inner in value.items()
        }
    if isinstance(value, list):
        return [_twice(item) for item in value]
    return value


def _b64_text(text: str) -> str:
    return base64.b64encode(text.encode("ascii")).decode("ascii")


def _event_id(seed: int, table: str, index: int, copy: str = "") -> str:
    digest = hashlib.blake2b(f"{seed}\x00{table}\x00{index}\x00{copy}".encode(), digest_size=16).digest()
    return str(uuid.UUID(bytes=digest, version=4))


@dataclass(order=True, slots=True)
class _Pending:
    """A record drawn but not yet delivered, in arrival order (a duplicate after its first copy)."""

    arrival_ms: int
    order: int
    duplicate: bool
    shard: int = 0
    key: str = ""
    created_us: int = 0
    change: dict[str, Any] | None = None


def deliveries(workloads: Workload | Sequence[Workload], options: KinesisOptions) -> Iterator[KinesisRecord]:
    """The workloads' changes as Kinesis delivers them, in arrival order over every shard (ties: the order the
    changes were made, a duplicate after its first copy); streamed: only the last ``reorder`` seconds are held.

    Several workloads are several tables on one stream, interleaved in time on its shards. Each table's records
    are the ones its stream would carry alone (``hotkeys generate`` of that table by itself): its workload's
    changes, and the Kinesis draws (arrival, copies) from a generator of its own, by its seed; only the
    sequence numbers are the shared shards'."""
    options.validate()
    tables = tables_of(workloads)
    if len({workload.table for workload in tables}) < len(tables):
        raise GenerateError("each table on a stream is named once")
    draws = {workload.table: _Draws.of(workload, options) for workload in tables}
    pending: list[_Pending] = []
    positions = [0] * options.shards
    for order, made in enumerate(_interleaved(tables)):
        created = precise_microseconds(made.generated.when)
        while pending and pending[0].arrival_ms * 1000 < created:  # nothing later can arrive before it
            yield _delivered(heapq.heappop(pending), positions)
        for copy in draws[made.workload.table].copies(made, order, created, options):
            heapq.heappush(pending, copy)
    while pending:
        yield _delivered(heapq.heappop(pending), positions)


@dataclass
class _Draws:
    """One table's Kinesis draws: when each change arrives, and which are sent twice (exactly ``wanted`` of
    them, each drawn with the share of what remains)."""

    draw: random.Random
    remaining: int
    wanted: int

    @classmethod
    def of(cls, workload: Workload, options: KinesisOptions) -> _Draws:
        draw = random.Random(f"hotkeys-kinesis\x00{workload.seed}")
        return cls(draw, workload.record_count(), options.duplicate_count(workload))

    def copies(self, made: _Made, order: int, created: int, options: KinesisOptions) -> list[_Pending]:
        """The change's record, and its second copy if it is sent twice."""
        draw, late_us = self.draw, int(options.reorder * MICROSECONDS)
        first = created + draw.randint(0, late_us)
        copy = _copy(made, order, created, options, first)
        sent = [copy]
        if self.wanted and draw.random() * self.remaining < self.wanted:
            self.wanted -= 1
            again = draw.randint(first, created + late_us)
            twin = dict(copy.change or {})
            if options.duplicate_event_ids == "new":
                twin["eventID"] = _event_id(made.workload.seed, made.workload.table, made.index, "again")
            sent.append(_Pending(-(-again // 1000), order, True, copy.shard, copy.key, created, twin))
        self.remaining -= 1
        return sent


@dataclass(frozen=True, slots=True)
class _Made:
    """One table's generated write, and its place among that table's writes (``index``)."""

    workload: Workload
    index: int
    generated: Generated


def _interleaved(tables: tuple[Workload, ...]) -> Iterator[_Made]:
    """Every table's writes in time order (at equal times, the tables in the order given)."""
    return heapq.merge(*(_made(workload) for workload in tables), key=lambda made: made.generated.when)


def _made(workload: Workload) -> Iterator[_Made]:
    for index, made in enumerate(changes(workload)):
        yield _Made(workload, index, made)


def _copy(made: _Made, order: int, created: int, options: KinesisOptions, arrival_us: int) -> _Pending:
    workload = made.workload
    record = stream_record_of(workload, made.generated)
    event_id = _event_id(workload.seed, workload.table, made.index)
    change = decoded_change(record, workload.table, created, options.precision, event_id)
    key = partition_key(workload.table, {"pk": change["dynamodb"]["Keys"]["pk"]})
    return _Pending(-(-arrival_us // 1000), order, False, shard_for(key, options.shards), key, created, change)


def _delivered(pending: _Pending, positions: list[int]) -> KinesisRecord:
    shard = pending.shard
    sequence = sequence_number(shard, positions[shard])
    positions[shard] += 1
    assert pending.change is not None
    return KinesisRecord(
        shard, sequence, pending.arrival_ms, pending.key, pending.change, pending.duplicate, pending.created_us
    )


# -- reading them back (``hotkeys replay``) ------------------------------------------------------------
Source = Literal["dynamodb", "kinesis", "decoded"]


def source_of(item: Any) -> Source | None:
    """Which shape an input item has: a Lambda Kinesis record, a decoded change (it names its table), a
    DynamoDB stream record, or None (none of them: the function judges it)."""
    if not isinstance(item, dict):
        return None
    if item.get("eventSource") == KINESIS_SOURCE or kinesis_body(item) is not None:
        return "kinesis"
    if "tableName" in item:
        return "decoded"
    body = item.get("dynamodb")
    if item.get("eventSource") == "aws:dynamodb" or (isinstance(body, dict) and "SequenceNumber" in body):
        return "dynamodb"
    return None


def decoded_of(record: Any) -> dict[str, Any] | None:
    """The decoded change a Lambda Kinesis record carries (None: no readable one)."""
    body = kinesis_body(record)
    data = body.get("data") if body is not None else None
    if not isinstance(data, str):
        return None
    try:
        change = json.loads(base64.b64decode(data, validate=True))
    except ValueError:
        return None
    return change if isinstance(change, dict) else None


def shard_of_record(record: Any) -> str | None:
    """A Lambda Kinesis record's shard, from its ``eventID`` (``shardId-...:SEQUENCE``); None: it names none."""
    event_id = record.get("eventID") if isinstance(record, dict) else None
    if isinstance(event_id, str) and event_id.startswith("shardId-") and ":" in event_id:
        return event_id.rsplit(":", 1)[0]
    return None


def created_milliseconds(change: Mapping[str, Any]) -> int | None:
    """A decoded change's creation time in epoch milliseconds (its precision as it says, else by magnitude)."""
    body = change.get("dynamodb")
    stamp = body.get("ApproximateCreationDateTime") if isinstance(body, dict) else None
    if not isinstance(stamp, int | float) or isinstance(stamp, bool) or stamp < 0:
        return None
    precision = body.get("ApproximateCreationDateTimePrecision") if isinstance(body, dict) else None
    if precision == "MICROSECOND" or (precision is None and stamp >= 10**14):
        return int(stamp // 1000)
    if precision == "MILLISECOND" or (precision is None and stamp >= 10**11):
        return int(stamp)
    return int(stamp * 1000)


class DecodedList:
    """A list of decoded changes, delivered as one Kinesis shard in the list's order: its sequence numbers
    follow the list, and each change arrives when it was made, or with the change before it if that came later
    (arrival times never go back within a shard)."""

    def __init__(self, shard: str, arn: str = stream_arn()) -> None:
        self.shard, self.arn = shard, arn
        self.position, self.arrival_ms = 0, 0

    def record(self, change: Any) -> dict[str, Any]:
        created = created_milliseconds(change) if isinstance(change, dict) else None
        self.arrival_ms = max(self.arrival_ms, created or 0)
        sequence = sequence_number(0, self.position)
        self.position += 1
        table = change.get("tableName") if isinstance(change, dict) else None
        body = change.get("dynamodb") if isinstance(change, dict) else None
        keys = body.get("Keys") if isinstance(body, dict) else None
        key = partition_key(str(table), keys if isinstance(keys, dict) else {})
        return lambda_record(change, key, self.shard, sequence, self.arrival_ms, self.arn)


def as_stream_record(record: Any, seen: set[bytes], resolve_key: ResolveKey) -> dict[str, Any] | None:
    """A Lambda Kinesis record's change as a DynamoDB stream record, for what reads stream records only (the
    replay's heat map); None for a change already in ``seen`` (a copy) or none readable.

    Read as the function reads it (``domain.kinesis``): ``unwrap`` (the record's precision, else its time's
    magnitude) and ``identity`` (at millisecond precision, the images too) with the function's key resolution
    (``resolve_key``), remembered by creation second as the consumer remembers it (``consumer.seen``): the heat
    map counts the changes ``top`` counts. (Unlike the consumer, it never forgets: a copy later than its
    horizon, which ``top`` counts again and reports, is left out here.)"""
    from hotkeys.detector.domain.kinesis import identity, kinesis_sequence, unwrap
    from hotkeys.detector.domain.records import MalformedRecord, parse_change

    try:
        sequence = kinesis_sequence(record)
        unwrapped = unwrap(record)
        change = parse_change(unwrapped.record, resolve_key, sequence)
    except (MalformedRecord, KeyError, TypeError, AttributeError):  # (the function fails such a record)
        return None
    remembered = _SECOND.pack(unwrapped.created_us // MICROSECONDS) + identity(change, unwrapped)
    if remembered in seen:
        return None
    seen.add(remembered)
    shaped = unwrapped.record
    shaped["dynamodb"]["SequenceNumber"] = "0"  # (a Kinesis change has none; what reads it here needs one)
    return shaped
