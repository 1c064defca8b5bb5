"""Exactly once: whatever Lambda's delivery schedule, the stored figures equal one clean pass.

Records go through the event-source-mapping emulation (``hotkeys/emulator/esm.py``, whose rules
cite the Lambda developer guide) into the real pipeline, a moto stats table and a moto
archive bucket. The chaotic runs add, per example:

* random batch sizes, lost responses (function errors: bisected, retried, dead-lettered),
  overlapping redeliveries, and stats-table and S3 faults before and after a write;
* few or many retry attempts, so batches really reach the DLQ; ``hotkeys redrive`` then
  runs on every dead letter (twice: the second must change nothing);
* both readings of what AWS leaves undocumented: the state a retry receives after a
  partial-failure response, and where tumbling windows start relative to the epoch;
* shard rollovers: each shard's records are cut into a parent and children, the children
  starting their windows again with a fresh state.

The stored window figures must equal an exact count made independently by the test (the
table's and its two global secondary indexes', from ``tests/reference_sizing.py`` and
``tests/reference_gsi.py``), the archive must hold exactly the TTL deletions, and without
dead letters and rollovers a pruned summary must equal a clean run's exactly.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import random
import uuid
from collections import Counter, defaultdict
from typing import Any

import boto3
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hotkeys.cli.redrive import Counting, RedriveResult, redrive_entry
from hotkeys.cli.top import ALL_INDEXES, window_figures, windows_in_range
from hotkeys.deployment import EventSourceSettings
from hotkeys.detector.adapters.archive_spool import DynamoArchiveSpool
from hotkeys.detector.adapters.archive_store import S3ObjectStore
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver, describe_table_with
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.config import OPTION_BY_NAME, Settings
from hotkeys.detector.consumer.archive import TtlArchiver
from hotkeys.detector.consumer.pipeline import Ports, parse_event, process_batch
from hotkeys.detector.consumer.snapshots import SegmentSnapshot, WindowFigures
from hotkeys.detector.domain.indexes import IndexSpec, specs_from_description
from hotkeys.emulator.esm import PARTIAL_FAILURE_STATES, WINDOW_CLOCKS, Deliveries, Delivery, consume_lineage
from hotkeys.emulator.events import stream_arn
from hotkeys.emulator.local import create_stats_table
from tests import reference_gsi, reference_sizing
from tests.esm_faults import RandomFaults
from tests.stream_wire import WireStream
from tests.support import TABLE, layouts_of, ttl_record, write_record

T0 = 1_764_460_800
WINDOW = 60
# CI runs this many delivery schedules; `make soak` runs more (EXACTLY_ONCE_EXAMPLES).
EXAMPLES = int(os.environ.get("EXACTLY_ONCE_EXAMPLES", "25"))
# The source table: keyed by pk, with a low-cardinality index on status in two projections.
SOURCE_TABLE: dict[str, Any] = {
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "AttributeDefinitions": [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "status", "AttributeType": "S"},
    ],
    "GlobalSecondaryIndexes": [
        {
            "IndexName": name,
            "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": projection},
        }
        for name, projection in (("by-status", "KEYS_ONLY"), ("by-status-all", "ALL"))
    ],
}
STREAM_ARN = stream_arn(TABLE)


def source_indexes() -> tuple[IndexSpec, ...]:
    """The source table's indexes as the function reads them: moto's DescribeTable of SOURCE_TABLE."""
    dynamodb = boto3.client("dynamodb")
    if TABLE not in dynamodb.list_tables()["TableNames"]:
        dynamodb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST", **SOURCE_TABLE)
    return specs_from_description(dynamodb.describe_table(TableName=TABLE))


class Faults:
    """Throttles injected before a write (nothing happened) and after it (done, answer lost)."""

    def __init__(self, rng: random.Random, probability: float) -> None:
        self.rng = rng
        self.probability = probability

    def maybe_fail(self, operation: str) -> None:
        if self.rng.random() < self.probability:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "injected"}}, operation)


class FaultyStats:
    def __init__(self, inner: DynamoStatsStore, faults: Faults) -> None:
        self._inner = inner
        self._faults = faults

    def save_segment(self, snapshot: SegmentSnapshot, expires_at: int, bucket: int = 0) -> None:
        self._faults.maybe_fail("PutItem")
        self._inner.save_segment(snapshot, expires_at, bucket)
        self._faults.maybe_fail("PutItem")  # written, then the container dies before answering

    def shard_segments(self, table: str, start: int, shard_id: str) -> list[SegmentSnapshot]:
        self._faults.maybe_fail("Query")
        return self._inner.shard_segments(table, start, shard_id)

    def save_seen(self, name: str, data: bytes, expires_at: int) -> None:
        self._faults.maybe_fail("PutItem")
        self._inner.save_seen(name, data, expires_at)
        self._faults.maybe_fail("PutItem")

    def load_seen(self, name: str) -> bytes | None:
        self._faults.maybe_fail("GetItem")
        return self._inner.load_seen(name)


class FaultySpool:
    def __init__(self, inner: DynamoArchiveSpool, faults: Faults) -> None:
        self._inner = inner
        self._faults = faults

    def put(self, shard_id: str, key: str, body: bytes) -> None:
        self._faults.maybe_fail("PutItem")
        self._inner.put(shard_id, key, body)
        self._faults.maybe_fail("UpdateItem")

    def drain(self, store: Any, limit: int, on_error: Any, force: bool = False) -> tuple[int, bool]:
        self._faults.maybe_fail("Query")
        return self._inner.drain(store, limit, on_error, force)


class FaultyObjects(S3ObjectStore):
    def __init__(self, bucket: str, faults: Faults) -> None:
        super().__init__(boto3.client("s3"), bucket)
        self._faults = faults

    def put(self, key: str, body: bytes) -> None:
        self._faults.maybe_fail("PutObject")
        super().put(key, body)
        self._faults.maybe_fail("PutObject")


record_specs = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=25),  # key
        st.integers(min_value=0, max_value=3000),  # payload bytes
        # seconds since the previous record: event time is not documented as monotonic, and may step back
        st.integers(min_value=-4, max_value=15),
        st.sampled_from(["write", "write", "write", "write", "ttl", "poison"]),
    ),
    min_size=1,
    max_size=120,
)


def build_shard(specs: list[tuple[int, int, int, str]], shard: int) -> list[dict[str, Any]]:
    records, now = [], T0
    for position, (key, payload, gap, kind) in enumerate(specs):
        now += gap
        if kind == "ttl":
            records.append(ttl_record(f"key-{key}", position, now, shard=shard))
            continue
        record = write_record(f"key-{key}", position, now, payload_bytes=payload, shard=shard)
        # Index keys that move (a delete and a put), stay, appear or are absent, by position.
        stream = record["dynamodb"]
        new, old = dict(stream["NewImage"]), dict(stream["OldImage"])
        new["status"] = {"S": f"st-{(key + position) % 3}"}
        if position % 5:
            old["status"] = {"S": f"st-{(key + position + position % 2) % 3}"}
        stream["NewImage"], stream["OldImage"] = new, old
        if kind == "poison":
            record["dynamodb"]["NewImage"]["payload"] = {"Q": "not a type"}
        records.append(record)
    return records


def lineage(records: list[dict[str, Any]], shard: int, cuts: list[float]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The shard's records as a parent and its children: it ends at each cut, a child carries on."""
    points = sorted({int(cut * len(records)) for cut in cuts} - {0, len(records)})
    bounds = [0, *points, len(records)]
    return [(shard_id(shard, g), records[bounds[g] : bounds[g + 1]]) for g in range(len(bounds) - 1)]


def shard_id(shard: int, generation: int) -> str:
    """A shard id as long as the API requires (28 to 65 characters)."""
    return f"shardId-{shard:020d}-gen{generation:05d}"


class Schedule:
    """One way Lambda and AWS may deliver; ``None`` fields mean a clean run."""

    def __init__(
        self,
        seed: int | None = None,
        retry_attempts: int = 20,
        reading: str = "returned",
        offset: int = 0,
        cuts: list[float] | None = None,
        reorder: float = 0.3,
        clock: str = "insertion",
    ) -> None:
        self.seed = seed
        # How often a bisected batch's later half is retried first (records then arrive out of order).
        self.reorder = reorder
        self.retry_attempts = retry_attempts
        self.delivery = Delivery(
            partial_failure_state=reading,  # type: ignore[arg-type]
            window_offset_seconds=offset,
            window_clock=clock,  # type: ignore[arg-type]
        )
        self.cuts = cuts or []


def run(shards: list[list[dict[str, Any]]], capacity: int, schedule: Schedule) -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:8]
    table_name, bucket = f"stats-{suffix}", f"archive-{suffix}"
    create_stats_table(boto3.client("dynamodb"), table_name)
    boto3.client("s3").create_bucket(Bucket=bucket)
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(table_name))
    config = Settings(
        stats_table_name=table_name,
        window_seconds=WINDOW,
        summary_capacity=capacity,
        flush_seconds=5,
        archive_bucket_name=bucket,
        ttl_attribute="expireAt",
    )
    index_specs = source_indexes()
    resolve_key = PartitionKeyResolver(None, describe_table_with(boto3.client("dynamodb")))
    rng = random.Random(schedule.seed)
    faults = Faults(rng, 0.15 if schedule.seed is not None else 0.0)
    ports = Ports(
        stats=FaultyStats(store, faults),
        resolve_key=resolve_key,
        # S3's faults spool archive objects (in the stats table, with its faults), drained later
        archiver=TtlArchiver(
            FaultyObjects(bucket, faults),
            "ttl/",
            lambda table: "expireAt",
            spool=FaultySpool(DynamoArchiveSpool(boto3.resource("dynamodb").Table(table_name)), faults),
        ),
        indexes=lambda table: index_specs,
        layouts=layouts_of(store),
    )
    esm = EventSourceSettings(batch_size=25, tumbling_window_seconds=WINDOW, retry_attempts=schedule.retry_attempts)

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        return process_batch(parse_event(event), config, ports).response()

    runs = []
    records_of: dict[str, list[dict[str, Any]]] = {}
    parents: dict[str, str] = {}
    for index, records in enumerate(shards):
        chaos = RandomFaults(rng, reorder_probability=schedule.reorder) if schedule.seed is not None else Deliveries()
        shard_lineage = lineage(records, index, schedule.cuts)
        records_of.update(shard_lineage)
        parents.update((child, parent) for (parent, _), (child, _) in itertools.pairwise(shard_lineage))
        runs.extend(consume_lineage(invoke, shard_lineage, esm, chaos, delivery=schedule.delivery))
    letters = [letter for shard_run in runs for letter in shard_run.dead_letters]
    # An operator runs `hotkeys redrive` (AWS healthy again): once, then once more.
    spool = DynamoArchiveSpool(boto3.resource("dynamodb").Table(table_name))
    clean_archiver = TtlArchiver(
        S3ObjectStore(boto3.client("s3"), bucket), "ttl/", lambda table: "expireAt", spool=spool
    )
    clean_ports = Ports(
        stats=store,
        resolve_key=resolve_key,
        archiver=clean_archiver,
        indexes=lambda table: index_specs,
        layouts=layouts_of(store),
    )
    # S3 is healthy again: the spool drains (as the next invocation or `hotkeys redrive` would)
    while clean_archiver.drain(force=True) != (0, True):
        pass
    # It reads the stream with GetRecords: the records come back as boto3 parses them.
    streams = WireStream(STREAM_ARN, records_of, parents=parents).client()
    redriven = [redrive(letter, streams, config, clean_ports, store) for letter in letters]
    figures = stored_figures(store)
    again = [redrive(letter, streams, config, clean_ports, store) for letter in letters]
    assert all(result.counted == 0 for result in again), "a second redrive counted records again"
    assert stored_figures(store) == figures
    return {
        "figures": figures,
        "archived": archived_event_ids(bucket),
        "dead_letters": letters,
        "redriven": sum(result.counted for result in redriven),
    }


def redrive(letter: Any, streams: Any, config: Settings, ports: Ports, store: DynamoStatsStore) -> RedriveResult:
    """`hotkeys redrive` for one dead letter: its range re-read with GetRecords (the shards the
    emulation delivered, served as the API's wire answers that botocore parses)."""
    info = dict(letter.to_message()["DDBStreamBatchInfo"], streamArn=STREAM_ARN)
    result = redrive_entry(info, Counting(config, ports, store), streams, dry_run=False)
    assert result.unreadable is None, result.unreadable
    assert result.read == letter.batch_size
    return result


def stored_figures(store: DynamoStatsStore) -> list[WindowFigures]:
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**6, table=None)
    return window_figures(store, windows, ALL_INDEXES)


def archived_event_ids(bucket: str) -> Counter[str]:
    s3 = boto3.client("s3")
    ids: Counter[str] = Counter()
    for entry in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        body = gzip.decompress(s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read())
        ids.update(json.loads(line)["event_id"] for line in body.decode().splitlines())
    return ids


def exact_counts(shards: list[list[dict[str, Any]]], specs: list[list[tuple[int, int, int, str]]]) -> dict:
    """Write units per (index or None for the table, window, key), TTL deletions per window."""
    per_window: dict[tuple[str | None, int], Counter[str]] = defaultdict(Counter)
    ttl: Counter[int] = Counter()
    ttl_ids: set[str] = set()
    for records, shard_specs in zip(shards, specs, strict=True):
        for record, (key, _payload, _gap, kind) in zip(records, shard_specs, strict=True):
            stream = record["dynamodb"]
            start = stream["ApproximateCreationDateTime"] // WINDOW * WINDOW
            if kind == "write":
                old, new = stream.get("OldImage"), stream.get("NewImage")
                per_window[(None, start)][f"key-{key}"] += reference_sizing.write_units(old, new)
                for index in SOURCE_TABLE["GlobalSecondaryIndexes"]:
                    for index_key, units in reference_gsi.index_writes(SOURCE_TABLE, index, old, new):
                        per_window[(index["IndexName"], start)][index_key] += units
            elif kind == "ttl":
                ttl[start] += 1
                ttl_ids.add(record["eventID"])
    return {"wcu": per_window, "ttl": ttl, "ttl_ids": ttl_ids}


def assert_exact(result: dict[str, Any], exact: dict[str, Any]) -> None:
    for window in result["figures"]:
        counted = {key: entry.wcu for key, entry in window.entries.items()}
        assert counted == dict(exact["wcu"][(window.index, window.window_start)]), window.index
        assert window.ttl_deletes == (exact["ttl"][window.window_start] if window.index is None else 0)
        assert window.error_bound == 0 and not window.partial
    assert {(w.index, w.window_start) for w in result["figures"]} >= {s for s, c in exact["wcu"].items() if c}
    assert set(result["archived"]) == exact["ttl_ids"]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    specs=st.lists(record_specs, min_size=1, max_size=8),
    seed=st.integers(min_value=0, max_value=2**32),
    retry_attempts=st.sampled_from([0, 1, 2, 20]),
    reading=st.sampled_from(PARTIAL_FAILURE_STATES),
    offset=st.sampled_from([0, 17, 30]),
    cuts=st.lists(st.floats(min_value=0, max_value=1), max_size=2),
    clock=st.sampled_from(WINDOW_CLOCKS),
)
# Every batch of a table dead-lettered: only the redrive writes its window, and `top` must still find it.
@example(
    specs=[[(0, 0, 0, "write")]], seed=526, retry_attempts=0, reading="returned", offset=0, cuts=[], clock="insertion"
)
def test_any_delivery_schedule_then_redrive_stores_the_exact_figures(
    aws: None,
    specs: list,
    seed: int,
    retry_attempts: int,
    reading: str,
    offset: int,
    cuts: list[float],
    clock: str,
) -> None:
    # Given 1 to 8 shards of writes, TTL deletions and poison records
    shards = [build_shard(shard_specs, index) for index, shard_specs in enumerate(specs)]
    exact = exact_counts(shards, specs)
    # When they are consumed cleanly, and under a random schedule with rollovers, faults and dead
    # letters, each followed by `hotkeys redrive`
    clean = run(shards, capacity=200, schedule=Schedule())
    chaotic = run(shards, 200, Schedule(seed, retry_attempts, reading, offset, cuts, clock=clock))
    # Then both store the exact figures and archive exactly the TTL deletions
    assert_exact(clean, exact)
    assert_exact(chaotic, exact)
    assert chaotic["figures"] == clean["figures"]
    # and only poison records stay out (redrive reports them malformed)
    poison = sum(1 for shard_specs in specs for spec in shard_specs if spec[3] == "poison")
    assert sum(letter.batch_size for letter in clean["dead_letters"]) == poison


SMALLEST_CAPACITY = int(OPTION_BY_NAME["summary_capacity"].low or 10)
many_key_specs = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=6 * SMALLEST_CAPACITY),  # key: enough to pass 2x capacity
        st.integers(min_value=0, max_value=3000),
        st.integers(min_value=0, max_value=3),
        st.sampled_from(["write", "write", "write", "write", "ttl", "poison"]),
    ),
    min_size=4 * SMALLEST_CAPACITY,
    max_size=160,
)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    specs=many_key_specs,
    seed=st.integers(min_value=0, max_value=2**32),
    reading=st.sampled_from(PARTIAL_FAILURE_STATES),
)
def test_pruned_summaries_are_identical_under_faults(aws: None, specs: list, seed: int, reading: str) -> None:
    # Given the smallest summary the settings allow, and more keys than it holds
    shards = [build_shard(specs, 0)]
    # When consumed cleanly and chaotically (retries enough that only poison records are dead-lettered; in
    # sequence order: a summary that prunes depends on the order it saw its records, so records folded out of
    # order keep its bounds but not its exact entries)
    chaotic = run(shards, SMALLEST_CAPACITY, Schedule(seed, retry_attempts=20, reading=reading, reorder=0))
    clean = run(shards, SMALLEST_CAPACITY, Schedule())
    # Then the pruned summaries and bounds match exactly
    assert chaotic["figures"] == clean["figures"]


def test_the_schedules_really_dead_letter_and_redrive() -> None:
    # A property whose schedules never reach the DLQ would not test redrive: check one that must.
    from moto import mock_aws

    specs = [(i % 5, 100, 1, "ttl" if i % 4 == 0 else "write") for i in range(60)]
    shards = [build_shard(specs, 0)]
    with mock_aws():
        result = run(shards, 200, Schedule(seed=7, retry_attempts=0, cuts=[0.5]))
    assert result["dead_letters"] and result["redriven"] > 0
    assert_exact(result, exact_counts(shards, [specs]))
