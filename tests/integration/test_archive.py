"""The TTL archive against moto S3: exactly the expired items, exact values, no copies, nothing lost."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from typing import Any

import boto3
import pytest

from hotkeys.deployment import EventSourceSettings
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.pipeline import BatchError, parse_event, process_batch
from hotkeys.detector.handlers.wiring import build_ports
from hotkeys.emulator.esm import ShardConsumer
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record
from tests.support import layouts_of

T0 = 1_796_083_200 + 3 * 3600 + 5  # 2026-12-01T03:00:05Z
BIG = "12345678901234567890123456789012345678"  # 38 significant digits
ITEM = {
    "pk": "session#1",
    "expireAt": T0 - 7200,
    "score": Decimal(BIG),
    "ratio": Decimal("-0.000123"),
    "blob": b"\x00\x01binary\xff",
    "tags": {"b", "a", "c"},
    "counts": {Decimal(3), Decimal(1), Decimal(2)},
    "profile": {"name": "Zoë", "active": True, "nothing": None, "history": [1, "two", {"three": 3}]},
}


@pytest.fixture
def bucket(aws: None) -> str:
    boto3.client("s3").create_bucket(Bucket="ttl-archive-test")
    return "ttl-archive-test"


def record(position: int, kind: str, key: str = "session#1", replica: bool = False) -> dict[str, Any]:
    item = dict(ITEM, pk=key)
    keys = {"pk": key}
    if kind == "ttl":
        change = ItemChange(event_name="REMOVE", keys=keys, old_image=item, ttl_delete=not replica)
    elif kind == "delete":
        change = ItemChange(event_name="REMOVE", keys=keys, old_image=dict(item, expireAt=T0 + 86_400))
    elif kind == "insert":
        change = ItemChange(event_name="INSERT", keys=keys, new_image=item)
    else:
        change = ItemChange(event_name="MODIFY", keys=keys, new_image=item, old_image=item)
    return stream_record(change, table="sessions", sequence=sequence_number(0, position), event_time=T0 + position)


def run(settings: Settings, records: list[dict[str, Any]], batch_size: int = 100) -> Any:
    ports = build_ports(settings, AwsClients())
    esm = EventSourceSettings(batch_size=batch_size, tumbling_window_seconds=60, retry_attempts=10)
    return ShardConsumer(lambda e: process_batch(parse_event(e), settings, ports).response(), "shardId-7", esm).consume(
        records
    )


def archived(bucket: str) -> dict[str, list[dict[str, Any]]]:
    s3 = boto3.client("s3")
    objects = {}
    for entry in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        body = s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read()
        lines = gzip.decompress(body).decode("utf-8").splitlines()
        objects[entry["Key"]] = [json.loads(line, parse_float=Decimal, parse_int=Decimal) for line in lines]
    return objects


def mixed() -> list[dict[str, Any]]:
    kinds = ["insert", "ttl", "modify", "delete", "ttl", "modify", "ttl", "delete"]
    return [record(i, kind, key=f"session#{i}") for i, kind in enumerate(kinds)]


def test_exactly_the_ttl_deletions_are_archived_with_exact_values(stats_table_name: str, bucket: str) -> None:
    # Given inserts, updates, application deletes and TTL deletions
    settings = Settings(stats_table_name=stats_table_name, archive_bucket_name=bucket, ttl_attribute="expireAt")
    # When consumed
    run(settings, mixed())
    objects = archived(bucket)
    # Then one object holds exactly the three TTL deletions, under the Hive-style key
    (key,) = objects
    assert key == (
        "ttl-archive/table=sessions/dt=2026-12-01/hour=03/shardId-7-100000000000000000001-100000000000000000006.json.gz"
    )
    lines = objects[key]
    assert [line["keys"]["pk"] for line in lines] == ["session#1", "session#4", "session#6"]
    first = lines[0]
    assert set(first) == {"event_id", "table", "keys", "item", "expired_at", "ttl"}
    assert first["table"] == "sessions" and first["expired_at"] == "2026-12-01T03:00:06Z"
    assert first["ttl"] == Decimal(T0 - 7200)
    item = first["item"]
    assert item["score"] == Decimal(BIG) and str(item["score"]) == BIG  # 38 digits survive
    assert item["ratio"] == Decimal("-0.000123")
    assert item["blob"] == "AAFiaW5hcnn/"  # base64, as in the stream
    assert item["tags"] == ["a", "b", "c"] and item["counts"] == [1, 2, 3]
    assert item["profile"] == {
        "name": "Zoë",
        "active": True,
        "nothing": None,
        "history": [1, "two", {"three": 3}],
    }


def test_a_redelivered_batch_rewrites_the_same_object(stats_table_name: str, bucket: str) -> None:
    settings = Settings(stats_table_name=stats_table_name, archive_bucket_name=bucket)
    ports = build_ports(settings, AwsClients())
    event = {
        "Records": mixed(),
        "shardId": "shardId-7",
        "state": {},
        "isFinalInvokeForWindow": False,
        "window": {"start": "2026-12-01T03:00:00Z", "end": "2026-12-01T03:01:00Z"},
    }
    # The same invocation runs twice (its response was lost)
    for _ in range(2):
        process_batch(parse_event(json.loads(json.dumps(event))), settings, ports)
    assert [len(lines) for lines in archived(bucket).values()] == [3]


def test_an_archive_that_neither_s3_nor_the_spool_takes_fails_the_invocation_and_loses_nothing(
    stats_table_name: str, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given S3 rejects the first two writes, and so does the spool (the stats table)
    from hotkeys.detector.adapters.archive_spool import DynamoArchiveSpool
    from hotkeys.detector.adapters.archive_store import S3ObjectStore

    real_put = S3ObjectStore.put
    failures = {"left": 2}

    def flaky(self: S3ObjectStore, key: str, body: bytes) -> None:
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("SlowDown")
        real_put(self, key, body)

    def refused(self: DynamoArchiveSpool, shard_id: str, key: str, body: bytes) -> None:
        raise RuntimeError("the spool is down too")

    monkeypatch.setattr(S3ObjectStore, "put", flaky)
    monkeypatch.setattr(DynamoArchiveSpool, "put", refused)
    settings = Settings(stats_table_name=stats_table_name, archive_bucket_name=bucket)
    records = mixed()
    # When the first invocation runs, it fails as a whole (a function error: Lambda retries and
    # bisects) and stores nothing, so no snapshot claims records that were not archived
    event = {
        "Records": records,
        "shardId": "shardId-7",
        "state": {},
        "isFinalInvokeForWindow": True,
        "window": {"start": "2026-12-01T03:00:00Z", "end": "2026-12-01T03:01:00Z"},
    }
    with pytest.raises(BatchError, match="spool is down too"):
        process_batch(parse_event(event), settings, build_ports(settings, AwsClients()))
    stored = build_ports(settings, AwsClients()).stats
    tables = {record["eventSourceARN"].split("/")[1] for record in records}
    assert tables and all(stored.windows(table, 0, 2**40) == [] for table in tables)
    # And through the mapping's retries every TTL item ends up archived, the counts applied once
    failures["left"] = 2
    run(settings, records)
    keys = sorted(line["keys"]["pk"] for lines in archived(bucket).values() for line in lines)
    assert set(keys) == {"session#1", "session#4", "session#6"}
    from hotkeys.cli.top import window_figures, windows_in_range

    store = build_ports(settings, AwsClients()).stats
    (window,) = window_figures(
        store,
        windows_in_range(
            store,
            since=0,
            last=None,
            until=T0 + 999,  # type: ignore[arg-type]
            table=None,
        ),
    )
    assert window.ttl_deletes == 3 and window.writes == 5


@pytest.mark.parametrize(("replicated", "expected"), [(False, 0), (True, 1)])
def test_replica_ttl_deletions_are_archived_only_when_asked(
    stats_table_name: str, bucket: str, replicated: bool, expected: int
) -> None:
    # Given a global-table replica: the TTL deletion arrives without userIdentity, its TTL in the past
    settings = Settings(
        stats_table_name=stats_table_name,
        archive_bucket_name=bucket,
        ttl_attribute="expireAt",
        archive_replicated_ttl=replicated,
    )
    run(settings, [record(0, "ttl", replica=True), record(1, "delete", key="session#2")])
    assert sum(len(lines) for lines in archived(bucket).values()) == expected


def test_no_bucket_no_archive(stats_table_name: str, bucket: str) -> None:
    run(Settings(stats_table_name=stats_table_name), mixed())
    assert archived(bucket) == {}


class Outage:
    """S3 as seen through an outage: refuses every write while ``down``."""

    def __init__(self, bucket: str) -> None:
        from hotkeys.detector.adapters.archive_store import S3ObjectStore

        self.down = True
        self.refused = 0
        self._s3 = S3ObjectStore(boto3.client("s3"), bucket)

    def put(self, key: str, body: bytes) -> None:
        if self.down:
            self.refused += 1
            raise RuntimeError("ServiceUnavailable")
        self._s3.put(key, body)


def test_expired_items_survive_an_s3_outage_of_seven_days(stats_table_name: str, bucket: str) -> None:
    """Without the spool an invocation whose archive S3 refuses fails, is retried, and after the retries its
    batch is dead-lettered: its expired items then live only in the stream, for 24 hours. Here S3 refuses
    every write for seven days of the stream; nothing may be dead-lettered, and every expired item must
    reach S3 once it is back."""
    from hotkeys.detector.adapters.archive_spool import DynamoArchiveSpool
    from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore
    from hotkeys.detector.consumer.archive import TtlArchiver
    from hotkeys.detector.consumer.pipeline import Ports

    # Given TTL deletions (and writes) every six hours for seven days, then every hour for a day, on a shard
    hours = [T0 + 6 * 3600 * quarter for quarter in range(7 * 4)] + [T0 + 7 * 86_400 + 3600 * h for h in range(24)]
    records = []
    for position, start in enumerate(hours):
        item = record(2 * position, "ttl", key=f"session#{position}")
        write = record(2 * position + 1, "modify", key=f"user#{position}")
        item["dynamodb"]["ApproximateCreationDateTime"] = write["dynamodb"]["ApproximateCreationDateTime"] = start
        records += [item, write]
    outage = Outage(bucket)
    ticks = iter(range(0, 10**9, 10))  # each look at the clock: ten seconds later (a drain is due now and then)
    table = boto3.resource("dynamodb").Table(stats_table_name)
    settings = Settings(stats_table_name=stats_table_name, archive_bucket_name=bucket)
    archiver = TtlArchiver(
        outage, "ttl/", lambda _table: "expireAt", spool=DynamoArchiveSpool(table), clock=lambda: next(ticks)
    )
    stats = DynamoStatsStore(table)
    ports = Ports(
        stats=stats,
        resolve_key=PartitionKeyResolver(None, lambda name: {}),
        archiver=archiver,
        layouts=layouts_of(stats),
    )
    esm = EventSourceSettings(batch_size=10, tumbling_window_seconds=60, retry_attempts=2)
    consumer = ShardConsumer(lambda e: process_batch(parse_event(e), settings, ports).response(), "shardId-7", esm)
    # When S3 refuses every write for the first seven days, and takes them again on the eighth
    week = 2 * 7 * 4
    run = consumer.consume(records[:week])
    assert outage.refused >= 7 * 4 and archived(bucket) == {}
    outage.down = False
    run = consumer.consume(records[week:])
    # Then nothing was dead-lettered, and every expired item is archived exactly once, spooled ones included
    assert not run.dead_letters and run.function_errors == 0
    expired = [line["keys"]["pk"] for lines in archived(bucket).values() for line in lines]
    assert sorted(expired) == sorted(f"session#{position}" for position in range(len(hours)))
    assert DynamoArchiveSpool(table).waiting() is None
    assert not table.query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": "SPOOL#0"})["Items"]
