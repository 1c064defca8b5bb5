"""The largest segment head the code can store, measured, against the bound ``hotkeys cost`` states.

A head (``snapshots.head_of``) holds each summary's heaviest ``HEAD_KEYS`` keys within an equal share
of ``HEAD_BYTES`` (before compression), the names of up to ``MAX_COUNTED_INDEXES`` indexes, the item
figures of its ``HEAD_ITEM_KEYS`` heaviest table keys, the segment's totals and when it was written
(docs/decisions.md §64). The largest one is built here through ``snapshots`` with every part at its
limit: the longest table, index and shard names DynamoDB accepts (botocore's service model), keys that
zlib cannot shrink, item figures of full slots, bitmaps and order prefixes, and large counters. Its
size is the window-heads index entry the stats table stores (the projection the stack creates, read
back from moto's DescribeTable), sized by the detector's own DynamoDB size rules.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Any

import boto3
import botocore.session
import pytest

from hotkeys.cli import cost
from hotkeys.detector.adapters.stats_schema import HEADS_INDEX
from hotkeys.detector.consumer import snapshots
from hotkeys.detector.consumer.state import MAX_COUNTED_INDEXES
from hotkeys.detector.domain.indexes import entry_size, specs_from_description
from hotkeys.detector.domain.items import ITEM_SLOTS, ItemStats
from hotkeys.detector.domain.sizing import write_units
from hotkeys.detector.domain.summary import ENTRY_OVERHEAD, MAX_KEY_TEXT_BYTES, SERIES_PAIR_BYTES, Entry, Summary
from hotkeys.emulator.events import to_dynamodb_json
from hotkeys.emulator.local import create_stats_table

WINDOW = 1_796_083_200
_MODELS = botocore.session.get_session()


def longest(service: str, shape: str) -> int:
    """The longest value of a string shape, as the service model states it."""
    return int(_MODELS.get_service_model(service).shape_for(shape).metadata["max"])


def dense_text(rng: random.Random, size: int) -> str:
    """``size`` UTF-8 bytes that zlib cannot shrink: characters of 1 to 4 bytes in the proportions that
    spread the bytes evenly over the values UTF-8 uses (a few bytes of ASCII close it)."""
    picked: list[str] = []
    used = 0
    while True:
        draw = rng.randrange(179)
        if draw < 128:
            char = chr(rng.randrange(128))
        elif draw < 158:
            char = chr(rng.randrange(0x80, 0x800))
        elif draw < 174:
            char = chr(rng.choice([rng.randrange(0x800, 0xD800), rng.randrange(0xE000, 0x10000)]))
        else:
            char = chr(rng.randrange(0x10000, 0x110000))
        width = len(char.encode("utf-8"))
        if used + width > size:
            break
        picked.append(char)
        used += width
    return "".join(picked) + "".join(chr(rng.randrange(128)) for _ in range(size - used))


def full_summary(rng: random.Random, budget: int) -> Summary:
    """A summary whose heaviest keys fill ``budget`` bytes (``summary.entry_bytes``) exactly, each as
    long as a key can be, and lighter ones the head must leave out."""
    entries: dict[str, Entry] = {}
    weight = 10**12
    left = budget
    while left > ENTRY_OVERHEAD + SERIES_PAIR_BYTES:
        size = min(MAX_KEY_TEXT_BYTES, left - ENTRY_OVERHEAD - SERIES_PAIR_BYTES)
        entries[dense_text(rng, size)] = Entry(weight, weight, WINDOW, weight, [WINDOW + 50], [weight])
        left -= size + ENTRY_OVERHEAD + SERIES_PAIR_BYTES
        weight -= 1
    for _ in range(8):
        entries[dense_text(rng, 200)] = Entry(1, 1, WINDOW, 1, [WINDOW], [1])
    return Summary(entries=entries, pruned=10**9, writes=10**13, wcu=10**13)


def name(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits + "_.-") for _ in range(length))


def largest_head(indexes: int) -> dict[str, Any]:
    """The stats item of a segment with ``indexes`` counted indexes, every part of its head at its limit."""
    rng = random.Random(f"largest head {indexes}")
    table = name(rng, longest("dynamodb", "TableName"))
    budget = snapshots.HEAD_BYTES // (1 + indexes)
    own = full_summary(rng, budget)
    # Item figures at their largest for more keys than a head carries: full slots, bitmaps, counters
    # and a 48-hex-digit order prefix each
    items = {
        key: ItemStats(
            {2**32 - slot: 10**12 for slot in range(1, ITEM_SLOTS + 1)},
            10**12,
            10**13,
            2**128 - 1,
            "f" * 48,
            10**12,
            10**12,
        )
        for key in list(own.entries)[: 2 * snapshots.HEAD_ITEM_KEYS]
    }
    snapshot = snapshots.SegmentSnapshot(
        table=table,
        window_start=WINDOW,
        window_seconds=900,
        shard_id=name(rng, longest("dynamodbstreams", "ShardId")),
        origin=f"{WINDOW:012d}.999",
        first_sequence="9" * 40,
        last_sequence="9" * 40,
        summary=own,
        ttl_deletes=10**12,
        first_event=WINDOW,
        last_event=WINDOW + 899,
        alert_min_span_seconds=10,
        ranges=[[10**39, 10**40 - 1]],
        indexes={name(rng, longest("dynamodb", "IndexName")): full_summary(rng, budget) for _ in range(indexes)},
        items=items,
        has_sort_key=True,
        has_local_indexes=True,
        final=True,
        written_at=2**40 + 0.125,
        closed_early=True,
    )
    return snapshots.to_item(snapshot, expires_at=WINDOW + 14 * 86_400)


@pytest.fixture
def heads_entry_bytes(aws: None) -> Callable[[dict[str, Any]], int]:
    """Bytes of a stats item's entry in the window-heads index, as the stack's stats table projects it."""
    dynamodb = boto3.client("dynamodb")
    create_stats_table(dynamodb, "stats")
    specs = specs_from_description(dynamodb.describe_table(TableName="stats"))
    (heads,) = (spec for spec in specs if spec.name == HEADS_INDEX)
    return lambda item: entry_size(heads, to_dynamodb_json(item))


def test_the_largest_head_is_the_bound_cost_states(heads_entry_bytes: Callable[[dict[str, Any]], int]) -> None:
    # Given the largest head of a segment with no index, with some, and with every counted index
    sizes = {indexes: heads_entry_bytes(largest_head(indexes)) for indexes in (0, 1, 5, MAX_COUNTED_INDEXES)}
    largest = max(sizes.values())
    # Then its index write costs the write units `hotkeys cost` states for the largest head
    assert write_units(largest) == cost.HEAD_MAX_KB, sizes
    # and it is larger than HEAD_BYTES: names, counters and item figures come on top of the summaries
    assert largest > snapshots.HEAD_BYTES
    # and it carries every counted index's summary, and the item figures of each table key it carries (as
    # many as fit its summary's share of HEAD_BYTES, at most HEAD_ITEM_KEYS)
    head = largest_head(MAX_COUNTED_INDEXES)["head"]
    assert len(head["indexes"]) == MAX_COUNTED_INDEXES
    for indexes in (0, MAX_COUNTED_INDEXES):
        decoded = snapshots.from_head_item(largest_head(indexes))
        assert decoded.items and set(decoded.items) == set(list(decoded.summary.entries)[: snapshots.HEAD_ITEM_KEYS])


def test_cost_states_the_heads_cost_at_the_largest_head() -> None:
    # Given 100 shards' worth of writes
    inputs = cost.CostInputs(writes_per_second=100_000)
    result = cost.estimate(inputs)
    # Then the heads at their largest cost more than at the measured size (bench.stats_units), by the ratio
    # of their sizes (the reads round up to 4 KB per Query)
    measured = cost.heads_cost(inputs)
    priced = measured["stats_heads_index_writes"] + measured["stats_heads_reads"]
    assert result["head_kb"] == {"measured": cost.stats_units(inputs)[1], "largest": cost.HEAD_MAX_KB}
    ratio = cost.HEAD_MAX_KB / cost.stats_units(inputs)[1]
    assert ratio * priced * 0.99 <= result["stats_heads_at_largest"] <= ratio * priced * 1.01
