"""Kinesis Data Streams for DynamoDB: copies and late records still give each change's figures once.

The same changes go through the pipeline twice: as Kinesis records (a share sent twice, as DynamoDB's
producer may, each copy under its own sequence number and later; all delivered up to 10 s after they
were made, so out of creation order; on one to three Kinesis shards), and as the DynamoDB stream records
of the changes an independent oracle (``tests/reference_kinesis.py``, written from the documentation
alone, with its own identity rule) finds distinct. The Kinesis delivery follows what the Lambda developer
guide documents for Kinesis event sources: "Lambda processes records in each shard in order"; "Lambda
determines tumbling window boundaries based on the time when records were inserted into the stream"; each
window starts "in a fresh state"; a retried invocation gets the state from before it ("Lambda will process
each record at least once"), its writes already made.

Both runs must store the same window figures (the table's and its two indexes'), equal to an exact count
made from the oracle's changes with ``tests/reference_sizing.py`` and ``tests/reference_gsi.py``, and
archive the same TTL deletions, each once. Both readings of what AWS leaves undocumented are drawn: whether
a copy keeps its ``eventID``, and where Lambda's windows start relative to the epoch; both precisions.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import boto3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotkeys.cli.top import ALL_INDEXES, window_figures, windows_in_range
from hotkeys.detector.adapters.archive_store import S3ObjectStore
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver, describe_table_with
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.archive import TtlArchiver
from hotkeys.detector.consumer.pipeline import Ports, parse_event, process_batch
from hotkeys.detector.consumer.snapshots import WindowFigures
from hotkeys.detector.domain.indexes import specs_from_description
from hotkeys.detector.domain.windows import iso_utc
from hotkeys.emulator.events import ItemChange, sequence_number, stream_arn, stream_record
from hotkeys.emulator.local import create_stats_table
from tests import reference_gsi, reference_kinesis, reference_sizing
from tests.kinesis_wire import KINESIS_ARN, change_document, kinesis_record, sequence
from tests.property.test_exactly_once import SOURCE_TABLE, TABLE
from tests.support import layouts_of

T0 = 1_764_460_800
WINDOW = 60
UNITS = {"MICROSECOND": 1_000_000, "MILLISECOND": 1_000}


@dataclass(frozen=True)
class Delivery:
    """How the changes reach Lambda: copies, lateness, shards, batches, retries, and two undocumented readings."""

    seed: int
    copies: float
    precision: str
    shards: int
    batch: int
    retries: float
    same_event_id: bool
    window_offset: int


def stream_records(count: int, rng: random.Random, precision: str) -> list[tuple[dict[str, Any], int]]:
    """``count`` changes of a few items, as DynamoDB stream records, each with its units past the second.
    Every change moves its item's counter, so an item's changes never share images; at millisecond
    precision they crowd into a few seconds, and many of an item's changes share a unit (a hot item)."""
    counters: Counter[str] = Counter()
    made = []
    for position in range(count):
        key = f"k{rng.randrange(5)}"
        counters[key] += 1
        value = counters[key]
        second = T0 + rng.randrange(180 if precision == "MICROSECOND" else 12)
        status = rng.choice(["NEW", "PAID", "SHIPPED"])
        # (one payload size per item: an item's changes have records of one size, as a counter's do)
        item = {"pk": key, "n": value, "status": status, "payload": "x" * (int(key[1:]) * 700)}
        before = {**item, "n": value - 1, "status": status}
        kind = rng.random()
        if kind < 0.1:  # a TTL deletion
            change = ItemChange(
                "REMOVE", keys={"pk": key}, old_image={**before, "expireAt": second - 60}, ttl_delete=True
            )
        elif kind < 0.2:
            change = ItemChange("INSERT", keys={"pk": key}, new_image=item)
        else:
            change = ItemChange("MODIFY", keys={"pk": key}, old_image=before, new_image=item)
        record = stream_record(change, table=TABLE, sequence=sequence_number(0, position), event_time=second)
        # microseconds: every change its own unit; milliseconds: an item's changes share the first three
        fraction = position * 7 + 1 if precision == "MICROSECOND" else rng.randrange(3)
        made.append((record, fraction))
    return made


def deliveries(made: list[tuple[dict[str, Any], int]], plan: Delivery, rng: random.Random) -> dict[str, list]:
    """Kinesis records per shard, in arrival order, each change sent once more with probability ``copies``."""
    unit = UNITS[plan.precision]
    arriving: list[tuple[float, dict[str, Any], str]] = []
    for record, fraction in made:
        document = change_document(record, precision=plan.precision, fraction=fraction, event_id=uuid.uuid4().hex)
        key = record["dynamodb"]["Keys"]["pk"]["S"]
        shard = f"shardId-{int(hashlib.md5(key.encode()).hexdigest(), 16) % plan.shards:012d}"
        created = record["dynamodb"]["ApproximateCreationDateTime"] + fraction / unit
        arrival = created + rng.uniform(0, 10)
        arriving.append((arrival, document, shard))
        if rng.random() < plan.copies:
            again = document if plan.same_event_id else {**document, "eventID": uuid.uuid4().hex}
            arriving.append((arrival + rng.uniform(0, 10), again, shard))
    arriving.sort(key=lambda entry: entry[0])
    shards: dict[str, list] = defaultdict(list)
    for arrival, document, shard in arriving:
        shards[shard].append(kinesis_record(document, sequence(len(shards[shard])), arrival=arrival, shard=shard))
    return shards


def consume(shard: str, records: list[dict[str, Any]], plan: Delivery, rng: random.Random, invoke: Any) -> None:
    """One Kinesis shard through Lambda's tumbling windows: batches in order, a fresh state per window, a
    final invocation at its end; an invocation may fail after its writes and is retried with the state
    from before it."""
    by_window: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        arrival = record["kinesis"]["approximateArrivalTimestamp"] - plan.window_offset
        by_window[int(arrival // WINDOW * WINDOW) + plan.window_offset].append(record)
    for start, arrived in sorted(by_window.items()):
        state: Any = {}
        batches = [arrived[at : at + plan.batch] for at in range(0, len(arrived), plan.batch)] + [[]]
        for position, batch in enumerate(batches):
            event = {
                "Records": batch,
                "window": {"start": iso_utc(start), "end": iso_utc(start + WINDOW)},
                "state": state,
                "shardId": shard,
                "eventSourceARN": KINESIS_ARN,
                "isFinalInvokeForWindow": position == len(batches) - 1,
                "isWindowTerminatedEarly": False,
            }
            while rng.random() < plan.retries:
                invoke(dict(event))  # its answer lost: Lambda retries with the same state
            state = invoke(event)["state"]


def wiring(suffix: str) -> tuple[Settings, Ports, DynamoStatsStore, str]:
    table_name, bucket = f"stats-{suffix}", f"archive-{suffix}"
    create_stats_table(boto3.client("dynamodb"), table_name)
    boto3.client("s3").create_bucket(Bucket=bucket)
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(table_name))
    config = Settings(stats_table_name=table_name, window_seconds=WINDOW, flush_seconds=5, archive_bucket_name=bucket)
    dynamodb = boto3.client("dynamodb")
    if TABLE not in dynamodb.list_tables()["TableNames"]:
        dynamodb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST", **SOURCE_TABLE)
    specs = specs_from_description(dynamodb.describe_table(TableName=TABLE))
    ports = Ports(
        stats=store,
        resolve_key=PartitionKeyResolver(None, describe_table_with(dynamodb)),
        archiver=TtlArchiver(S3ObjectStore(boto3.client("s3"), bucket), "ttl/", lambda table: "expireAt"),
        indexes=lambda table: specs,
        layouts=layouts_of(store),
    )
    return config, ports, store, bucket


def stored(store: DynamoStatsStore) -> list[WindowFigures]:
    return window_figures(store, windows_in_range(store, since=0, last=None, until=T0 + 10**6, table=None), ALL_INDEXES)


def archived(bucket: str) -> Counter[str]:
    """The archived items (keys and item: what a TTL deletion leaves), however often each was archived."""
    s3 = boto3.client("s3")
    items: Counter[str] = Counter()
    for entry in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        body = gzip.decompress(s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read())
        for line in body.decode().splitlines():
            document = json.loads(line)
            items[json.dumps([document["keys"], document["item"], document["expired_at"]], sort_keys=True)] += 1
    return items


def exact(changes: list[reference_kinesis.Change]) -> dict[tuple[str | None, int], Counter[str]]:
    """Write units per (index or None for the table, window, key) of the oracle's changes."""
    units: dict[tuple[str | None, int], Counter[str]] = defaultdict(Counter)
    for change in changes:
        if change.ttl:
            continue
        start = change.created_seconds // WINDOW * WINDOW
        old, new = change.old_image, change.new_image
        units[(None, start)][change.keys["pk"]["S"]] += reference_sizing.write_units(old, new)
        for index in SOURCE_TABLE["GlobalSecondaryIndexes"]:
            for index_key, wcu in reference_gsi.index_writes(SOURCE_TABLE, index, old, new):
                units[(index["IndexName"], start)][index_key] += wcu
    return units


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(min_value=1, max_value=120),
    seed=st.integers(min_value=0, max_value=2**32),
    copies=st.sampled_from([0.0, 0.05, 0.3]),
    precision=st.sampled_from(["MICROSECOND", "MILLISECOND"]),
    shards=st.integers(min_value=1, max_value=3),
    batch=st.sampled_from([1, 7, 100]),
    retries=st.sampled_from([0.0, 0.2]),
    same_event_id=st.booleans(),
    window_offset=st.sampled_from([0, 17]),
)
def test_kinesis_copies_and_late_records_store_each_changes_figures_once(
    aws: None,
    count: int,
    seed: int,
    copies: float,
    precision: str,
    shards: int,
    batch: int,
    retries: float,
    same_event_id: bool,
    window_offset: int,
) -> None:
    plan = Delivery(seed, copies, precision, shards, batch, retries, same_event_id, window_offset)
    rng = random.Random(seed)
    made = stream_records(count, rng, precision)
    kinesis = deliveries(made, plan, rng)
    # Given the distinct changes an independent reading of the documentation finds in what was delivered
    changes = reference_kinesis.distinct(record for records in kinesis.values() for record in records)
    # When the Kinesis records go through Lambda's Kinesis windows (copies, late records, retries) ...
    config, ports, store, bucket = wiring(uuid.uuid4().hex[:8])

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        return process_batch(parse_event(event), config, ports).response()

    for shard, records in kinesis.items():
        consume(shard, records, plan, rng, invoke)
    # ... and those changes, each once, as one DynamoDB stream's records
    clean_config, clean_ports, clean_store, clean_bucket = wiring(uuid.uuid4().hex[:8])
    arn = stream_arn(TABLE)
    records = [reference_kinesis.as_stream_record(change, 10**20 + at, arn) for at, change in enumerate(changes)]
    process_batch(parse_event({"Records": records}), clean_config, clean_ports)
    # Then both store the same figures, each change's units once, and archive each TTL deletion once
    figures = stored(store)
    assert figures == stored(clean_store)
    expected = exact(changes)
    for window in figures:
        assert {key: entry.wcu for key, entry in window.entries.items()} == dict(
            expected[(window.index, window.window_start)]
        )
        assert window.error_bound == 0 and not window.partial
    assert {(w.index, w.window_start) for w in figures} >= {slot for slot, units in expected.items() if units}
    assert archived(bucket) == archived(clean_bucket)
    assert set(archived(bucket).values()) <= {1}
    assert sum(archived(bucket).values()) == sum(1 for change in changes if change.ttl)
