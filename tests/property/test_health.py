"""Data health figures equal an independent count from the generated items.

Hypothesis draws workloads whose items carry their TTL attribute in every format (seconds, milliseconds,
microseconds, a String, missing, more than five years old) in drawn shares, with a drawn share of large
items, on one to three shards. The records go through the deployment's path (each shard's consumer
through the event-source-mapping emulation into a moto stats table), and the stored windows' health,
merged as every view reads it, is compared with ``tests/reference_health.py`` (TTL verdicts and size
figures written from AWS's documentation) over ``tests/reference_sizing.py``'s item sizes and write
units, computed from the generated records themselves.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import boto3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotkeys.cli.top import window_figures, windows_in_range
from hotkeys.deployment import EVENT_SOURCE
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import Settings
from hotkeys.detector.domain.health import SUB_BUCKETS, Health
from hotkeys.detector.handlers.wiring import build_ports
from hotkeys.emulator.emulation import Deployment, emulate
from hotkeys.emulator.generate import T0, Workload, generate
from hotkeys.emulator.lanes import EventSourceMapping
from hotkeys.emulator.local import create_stats_table
from tests import reference_health, reference_sizing

FORMATS = ("seconds", "milliseconds", "microseconds", "string", "missing", "too_old")
ATTRIBUTE = "expireAt"


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    chosen = draw(st.lists(st.sampled_from(FORMATS), min_size=1, max_size=4, unique=True))
    weights = [draw(st.integers(min_value=1, max_value=5)) for _ in chosen]
    shares = [weight / sum(weights) for weight in weights]
    shares[-1] = 1.0 - sum(shares[:-1])
    large_bytes = draw(st.sampled_from([10_240, 10_241, 12_000, 40_000, 355_000, 358_399, 358_400, 370_000]))
    near_limit = large_bytes > 100_000  # a few such items are enough: each is a third of a megabyte of JSON
    return Workload(
        keys=draw(st.sampled_from([20, 300])),
        rate=10.0 if near_limit else draw(st.sampled_from([10.0, 25.0])),
        duration=30 if near_limit else draw(st.sampled_from([30, 90])),
        item_bytes=draw(st.sampled_from([300, 1500, 9000])),
        shards=draw(st.integers(min_value=1, max_value=3)),
        seed=draw(st.integers(min_value=0, max_value=10_000)),
        ttl_values=tuple(zip(chosen, shares, strict=True)),
        large_fraction=draw(st.sampled_from([0.0, 0.05] if near_limit else [0.0, 0.1, 0.4])),
        large_bytes=large_bytes,
    )


def expected(records: list[dict[str, Any]]) -> tuple[dict[str, int], dict[str, Any]]:
    """The reference's TTL verdicts and size figures of the items the records wrote."""
    written = [
        record for record in records if record["eventName"] in ("INSERT", "MODIFY") and "NewImage" in record["dynamodb"]
    ]
    ttl = reference_health.ttl_counts(
        ((r["dynamodb"]["NewImage"], int(r["dynamodb"]["ApproximateCreationDateTime"])) for r in written), ATTRIBUTE
    )
    sizes = [reference_sizing.item_bytes(r["dynamodb"]["NewImage"]) for r in written]
    units = [reference_sizing.write_units(r["dynamodb"].get("OldImage"), r["dynamodb"]["NewImage"]) for r in written]
    return dict(ttl), reference_health.size_figures(sizes, units)


def stored(settings_: Settings) -> Health:
    store = build_ports(settings_, AwsClients()).stats
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**6, table="orders")  # type: ignore[arg-type]
    merged = Health()
    for figures in window_figures(store, windows):  # type: ignore[arg-type]
        merged.merge(figures.health)
    return merged


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(workload=workloads())
def test_the_stored_health_is_the_references_count_of_the_generated_items(aws: None, workload: Workload) -> None:
    # Given a generated workload, consumed as deployed (its own stats table per example)
    name = f"health-{uuid.uuid4().hex[:12]}"
    create_stats_table(boto3.client("dynamodb"), name)
    chosen = Settings(stats_table_name=name, ttl_attribute=ATTRIBUTE)
    shards = generate(workload)
    mapping = dataclasses.replace(EVENT_SOURCE, batch_size=100, tumbling_window_seconds=chosen.window_seconds)
    lineages = [[(f"shardId-{number:05d}", records)] for number, records in shards.items()]
    emulate(Deployment(chosen, AwsClients()), lineages, mapping=EventSourceMapping(mapping), judge=None)
    # When the stored windows' health is merged, and the reference counts the generated items
    health = stored(chosen)
    ttl, sizes = expected([record for records in shards.values() for record in records])
    # Then the TTL verdicts are the reference's (no generated value lies in the five-year reading's gap)
    assert "ambiguous" not in ttl
    assert health.ttl == ttl
    # and the counts of items, near-limit and large items, the largest size and the large items' units
    assert health.written == sizes["items"]
    assert health.near_limit == sizes["near_limit"]
    assert health.max_size == sizes["max"]
    assert health.large / health.written == sizes["items_over_10kb_share"]
    assert health.large_wcu / health.wcu == sizes["units_over_10kb_share"]
    # and each percentile is an upper bound of the reference's, less than an eighth above it (a bucket)
    for fraction, name_ in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        assert sizes[name_] <= health.percentile(fraction) < max(65, sizes[name_] * (1 + 1 / SUB_BUCKETS))
