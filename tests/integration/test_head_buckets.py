"""A table's heads spread over buckets of the window-heads index (``detector.layout``): the judge raises
the count when a flush's heads would take more than their share of a partition, a consumer still on the
older count writes where readers look anyway, and no head is read twice or missed."""

from __future__ import annotations

import dataclasses
import random

import boto3

from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer import layout as layouts
from hotkeys.detector.consumer.layout import Layout
from hotkeys.detector.consumer.snapshots import SegmentSnapshot
from hotkeys.detector.handlers.wiring import build_judge
from tests.unit.test_verdicts import T0, head

WINDOW = T0 + 600


def shard_head(shard: int, keys: int, rng: random.Random) -> SegmentSnapshot:
    """A shard's final head of WINDOW with ``keys`` keys of ~20 characters (a few KB when many)."""
    writes = [(f"user#{rng.randrange(10**12):012d}", 1 + rng.randrange(50), rng.randrange(60)) for _ in range(keys)]
    # (with the records it counted: the same segment written again is recognised as itself)
    return dataclasses.replace(head(f"shardId-{shard:08d}-{rng.randrange(10**8):08d}", WINDOW, writes), ranges=[[1, 9]])


def test_a_head_written_under_an_older_count_is_read_once_under_the_new_one(stats_table_name: str) -> None:
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(stats_table_name))
    rng = random.Random(7)
    heads = [shard_head(shard, 20, rng) for shard in range(40)]
    # Given a table registered with one bucket, raised to 8 from WINDOW on
    older = Layout("tickets", 60)
    assert store.save_layout(None, older)
    newer = older.raised(8, WINDOW)
    assert store.save_layout(older, newer)
    # When half the shards write WINDOW's heads on the older count (their consumers have not re-read the
    # layout yet) and half on the new one, and some shards flush twice, once on each count
    for number, found in enumerate(heads):
        count = 1 if number % 2 else 8
        store.save_segment(found, WINDOW + 86_400, layouts.bucket_of(found.shard_id, count))
        if number % 5 == 0:
            store.save_segment(found, WINDOW + 86_400, newer.bucket_of(found.shard_id, WINDOW))
    # Then a reader of WINDOW on the stored layout finds every shard's head, each once
    (stored,) = store.layouts()
    read = store.heads_since("tickets", WINDOW, stored.most_since(WINDOW))
    assert sorted(h.shard_id for h in read) == sorted(h.shard_id for h in heads)
    assert sorted(s.shard_id for s in store.window_segments("tickets", WINDOW)) == sorted(h.shard_id for h in heads)
    # and the heads are spread over the buckets (those on the new count)
    assert len({newer.bucket_of(h.shard_id, WINDOW) for h in heads}) == 8


def test_the_judge_raises_the_count_when_a_flushs_heads_outgrow_a_partitions_share(stats_table_name: str) -> None:
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(stats_table_name))
    rng = random.Random(3)
    # Given 300 shards whose heads of one flush (written within about a second) take more write units than
    # TARGET_SHARE of one partition's limit
    heads = [shard_head(shard, 120, rng) for shard in range(300)]
    for found in heads:
        store.save_segment(found, WINDOW + 86_400, 0)
    units = sum(-(-(h.head_bytes + 512) // 1024) for h in store.heads_since("tickets", WINDOW, 1))
    assert units > layouts.TARGET_SHARE * layouts.PARTITION_WRITE_UNITS
    # When the judge looks
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn="arn:aws:sns:us-east-1:1:t")
    judge = build_judge(
        settings, AwsClients(), clock=lambda: WINDOW + 70.0, lag=lambda _table: 0.0, tables=("tickets",)
    )
    judge.look()
    # Then the count in force from the current window on spreads those units at TARGET_SHARE per bucket
    (stored,) = store.layouts()
    wanted = layouts.needed([units])
    assert wanted > 1 and stored.count_at(WINDOW + 60) == wanted and stored.count_at(WINDOW - 60) == 1
    assert wanted * layouts.TARGET_SHARE * layouts.PARTITION_WRITE_UNITS >= units
    # and a consumer's cached layout takes it within REFRESH_SECONDS
    now = [WINDOW + 70.0]
    cache = layouts.LayoutCache(store.layout, lambda: now[0], 60)
    cache_before = layouts.LayoutCache(lambda _t: Layout("tickets", 60), lambda: now[0], 60)
    assert cache_before.layout("tickets").count_at(WINDOW + 60) == 1
    assert cache.layout("tickets").count_at(WINDOW + 60) == wanted
