"""Exactly once: whatever Lambda's delivery schedule, the stored figures equal one clean pass.

Records go through the event-source-mapping emulation (the same semantics the
deployed mapping has) into the real pipeline and a moto stats table. The chaotic
run adds random batch sizes, lost responses (redelivery with the old state),
overlapping redeliveries (with the new state) and stats-table faults before and
after a write. The stored window figures must be identical to a clean run's, and
equal to an exact count made independently by the test.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter, defaultdict
from typing import Any

import boto3
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from detector.adapters.key_schema import PartitionKeyResolver
from detector.adapters.stats_store import DynamoStatsStore
from detector.config import Settings
from detector.pipeline import Ports, parse_event, process_batch
from detector.snapshots import SegmentSnapshot, WindowFigures
from hotkeys.esm import Chaos, RandomChaos, ShardConsumer
from hotkeys.local import create_stats_table
from hotkeys.top import window_figures, windows_in_range
from infra.settings import EventSourceSettings
from tests.support import ttl_record, wcu_of, write_record

T0 = 1_764_460_800
WINDOW = 60


class FaultyStats:
    """The real DynamoDB adapter, with throttles injected before and after writes."""

    def __init__(self, inner: DynamoStatsStore, rng: random.Random, probability: float) -> None:
        self._inner = inner
        self._rng = rng
        self._probability = probability

    def _maybe_fail(self) -> None:
        if self._rng.random() < self._probability:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "injected"}}, "PutItem")

    def save_segment(self, snapshot: SegmentSnapshot, expires_at: int) -> bool:
        self._maybe_fail()
        saved = self._inner.save_segment(snapshot, expires_at)
        self._maybe_fail()  # written, then the container dies before answering
        return saved

    def save_catalog(self, table: str, start: int, window_seconds: int, expires_at: int) -> None:
        self._maybe_fail()
        self._inner.save_catalog(table, start, window_seconds, expires_at)


record_specs = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=25),  # key
        st.integers(min_value=0, max_value=3000),  # payload bytes
        st.integers(min_value=0, max_value=15),  # seconds since the previous record
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
        if kind == "poison":
            record["dynamodb"]["NewImage"]["payload"] = {"Q": "not a type"}
        records.append(record)
    return records


def run(shards: list[list[dict[str, Any]]], capacity: int, chaos_seed: int | None) -> list[WindowFigures]:
    table_name = f"stats-{uuid.uuid4().hex[:8]}"
    create_stats_table(boto3.client("dynamodb"), table_name)
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(table_name))
    config = Settings(stats_table_name=table_name, window_seconds=WINDOW, summary_capacity=capacity, flush_seconds=5)
    rng = random.Random(chaos_seed)
    stats = FaultyStats(store, rng, 0.15) if chaos_seed is not None else store
    ports = Ports(stats=stats, resolve_key=PartitionKeyResolver(None, lambda name: {}))
    esm = EventSourceSettings(batch_size=25, tumbling_window_seconds=WINDOW, retry_attempts=20)

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        return process_batch(parse_event(event), config, ports).response()

    for index, records in enumerate(shards):
        chaos = RandomChaos(rng) if chaos_seed is not None else Chaos()
        ShardConsumer(invoke, f"shardId-{index:05d}", esm, chaos).consume(records)
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**6, table=None)
    return window_figures(store, windows)


def exact_counts(shards: list[list[dict[str, Any]]], specs: list[list[tuple[int, int, int, str]]]) -> dict:
    per_window: dict[int, Counter[str]] = defaultdict(Counter)
    ttl: Counter[int] = Counter()
    for records, shard_specs in zip(shards, specs, strict=True):
        for record, (key, payload, _gap, kind) in zip(records, shard_specs, strict=True):
            start = record["dynamodb"]["ApproximateCreationDateTime"] // WINDOW * WINDOW
            if kind == "write":
                per_window[start][f"key-{key}"] += wcu_of(payload, f"key-{key}")
            elif kind == "ttl":
                ttl[start] += 1
    return {"wcu": per_window, "ttl": ttl}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=st.lists(record_specs, min_size=1, max_size=2), seed=st.integers(min_value=0, max_value=2**32))
def test_any_delivery_schedule_stores_the_clean_figures(aws: None, specs: list, seed: int) -> None:
    # Given one or two shards of writes, TTL deletions and poison records
    shards = [build_shard(shard_specs, index) for index, shard_specs in enumerate(specs)]
    # When they are consumed cleanly, and again under a random fault schedule
    clean = run(shards, capacity=200, chaos_seed=None)
    chaotic = run(shards, capacity=200, chaos_seed=seed)
    # Then both runs store identical figures...
    assert chaotic == clean
    # ...equal to an exact count of the good records
    exact = exact_counts(shards, specs)
    for window in clean:
        assert {k.key: k.wcu for k in window.keys} == dict(exact["wcu"][window.window_start])
        assert window.ttl_deletes == exact["ttl"][window.window_start]
        assert window.error_bound == 0
    assert {w.window_start for w in clean} >= {s for s, c in exact["wcu"].items() if c}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=record_specs, seed=st.integers(min_value=0, max_value=2**32))
def test_pruned_summaries_are_identical_under_faults(aws: None, specs: list, seed: int) -> None:
    # Given a summary small enough to prune (capacity 3 for up to 26 keys)
    shards = [build_shard(specs, 0)]
    # When consumed cleanly and chaotically, then the pruned summaries and bounds match exactly
    assert run(shards, capacity=3, chaos_seed=seed) == run(shards, capacity=3, chaos_seed=None)
