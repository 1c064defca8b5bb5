"""Segment heads carry the incidents their shard handled in the window (``snapshots.head_marks``): what
lets one shard per partition and window do the incident writes (docs/decisions.md, NEW section)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import boto3

from hotkeys.detector import summary
from hotkeys.detector.adapters.incident_store import DynamoIncidentStore
from hotkeys.detector.adapters.publisher import SnsPublisher
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.alerts.desk import AWAITED, AlertDesk, awaiting
from hotkeys.detector.alerts.rules import NOWHERE, PARTITION_LIMIT, HotKey, incident_key, partition_limit_hot
from hotkeys.detector.config import Settings
from hotkeys.detector.snapshots import HEAD_MARKS, SegmentSnapshot, head_marks
from hotkeys.detector.state import Segment, ShardState, mark_of

T0 = 1_796_083_200


def test_a_head_carries_the_plain_marks_of_its_own_window_only() -> None:
    # Given a shard's marks: two incidents handled in window 1, one in window 0, and one incident of
    # window 1 that another shard claimed and had not confirmed published
    handled, other, earlier, claimed = (mark_of("tickets", name) for name in ("a", "b", "c", "d"))
    notified = {handled: T0 + 60, other: T0 + 60, earlier: T0, awaiting(claimed): T0 + 60}
    # Then window 1's head carries the two handled in it: not window 0's (it was not marked hot in
    # window 1), nor the one awaiting its claimer's message (the claimer's retry must not skip it)
    assert head_marks(notified, T0 + 60) == tuple(sorted((handled, other)))
    assert head_marks(notified, T0) == (earlier,)
    # and at most HEAD_MARKS of them
    many = {mark_of("tickets", str(n)): T0 for n in range(2 * HEAD_MARKS)}
    assert len(head_marks(many, T0)) == HEAD_MARKS


def test_the_window_heads_index_returns_a_heads_marks(stats_table_name: str) -> None:
    # Given a segment's snapshot stored with two marks
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(stats_table_name))
    marks = (mark_of("tickets", "a"), mark_of("tickets", "b"))
    snapshot = SegmentSnapshot(
        table="tickets",
        window_start=T0,
        window_seconds=60,
        shard_id="shardId-1",
        origin="0",
        first_sequence="1",
        last_sequence="9",
        summary=summary.Summary(writes=10, wcu=10),
        ttl_deletes=0,
        first_event=T0,
        last_event=T0 + 9,
        alert_min_span_seconds=10,
        marks=marks,
    )
    store.save_segment(snapshot, expires_at=T0 + 86_400)
    # When the window's heads are read (one Query of the window-heads index, as boto3 parses moto's answer)
    (head,) = store.window_heads("tickets", T0)
    # Then the head carries them
    assert head.marks == marks


def test_a_shard_that_finds_another_shards_claim_unpublished_awaits_it(stats_table_name: str, topic: dict) -> None:
    # Given an incident claimed by shard 1, its message not yet confirmed published
    table = boto3.resource("dynamodb").Table(stats_table_name)
    store = DynamoIncidentStore(table)
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"])
    desk = AlertDesk(settings, store, SnsPublisher(boto3.client("sns"), topic["arn"]), DynamoStatsStore(table))
    hot = HotKey("tickets", "PENDING", PARTITION_LIMIT, T0, 60, 10, 54_000, 900.0, 0.0, T0 + 30, index="by-status")
    assert store.claim_firing(hot, "shardId-1")[0]
    # When shard 2 finds the partition hot in the same window
    # Then it publishes nothing and says it awaits the claimer (its head will not carry the incident)
    assert desk._on_hot(hot, "shardId-2", 100_000) == AWAITED
    # while the claimer's retry publishes it
    assert desk._on_hot(hot, "shardId-1", 100_000) == 1


@dataclass
class View:
    """One shard's figures of the by-status index in window 0 (``rules.Tallied``)."""

    entries: dict[str, summary.Entry]
    wcu: int
    table: str = "tickets"
    index: str | None = "by-status"
    window_start: int = T0
    last_event: int = T0 + 30
    origin: str = "0"
    pruned: int = 0
    has_sort_key: bool = False
    has_local_indexes: bool = False
    items: dict[str, Any] = field(default_factory=dict)


def pending_at_900() -> View:
    start = T0 + 20
    entry = summary.Entry(writes=1, wcu=900, first_seen=start, peak=900, buckets=[start - start % 10], units=[900])
    for second in range(T0 + 21, T0 + 31):
        entry.bump(900, second, 10)
    return View({"PENDING": entry}, entry.wcu)


def test_a_shard_remembers_an_unpublished_claim_apart_and_skips_a_marked_one(
    stats_table_name: str, topic: dict
) -> None:
    table = boto3.resource("dynamodb").Table(stats_table_name)
    store = DynamoIncidentStore(table)
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"])
    desk = AlertDesk(settings, store, SnsPublisher(boto3.client("sns"), topic["arn"]), DynamoStatsStore(table))
    view = pending_at_900()
    mark = mark_of("tickets", incident_key(PARTITION_LIMIT, "PENDING", "by-status"))
    calls: Counter[str] = Counter()
    table.meta.client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.update([model.name]))
    # Given PENDING claimed by shard 1 in window 0, its message not yet confirmed published
    (hot,) = partition_limit_hot(view, settings)
    assert store.claim_firing(hot, "shardId-1")[0]
    # When shard 2 finds it hot with no mark in the heads it read
    second = ShardState()
    assert desk._review_view("shardId-2", second, view, NOWHERE, set()) == 0
    # Then it remembers it apart: its head of window 0 will not carry it (the claimer's retry must publish)
    assert second.notified == {awaiting(mark): T0} and head_marks(second.notified, T0) == ()
    # When shard 3 finds it hot and a head it read carries the mark
    calls.clear()
    third = ShardState()
    assert desk._review_view("shardId-3", third, view, NOWHERE, {mark}) == 0
    # Then it makes no request, and its own head will carry the mark
    assert calls == Counter() and head_marks(third.notified, T0) == (mark,)


class CountedReads(DynamoStatsStore):
    """The stats store, remembering its window-heads reads: (method, last window read)."""

    def __init__(self, table: Any) -> None:
        super().__init__(table)
        self.reads: list[tuple[str, int]] = []

    def window_heads(self, table: str, start: int) -> list[SegmentSnapshot]:
        self.reads.append(("window_heads", start))
        return super().window_heads(table, start)

    def heads_between(self, table: str, first: int, last: int) -> list[SegmentSnapshot]:
        self.reads.append(("heads_between", last))
        return super().heads_between(table, first, last)


def one_segment(start: int, first_event: int, last_event: int) -> tuple[ShardState, Segment]:
    state = ShardState()
    segment = Segment("tickets", start, "1", origin="0", first_event=first_event, last_event=last_event)
    state.segments[("tickets", start)] = segment
    return state, segment


def test_a_windows_final_look_is_the_next_windows_first_look_for_a_shard_in_step(
    stats_table_name: str, topic: dict
) -> None:
    table = boto3.resource("dynamodb").Table(stats_table_name)
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"])
    reads = CountedReads(table)
    desk = AlertDesk(settings, DynamoIncidentStore(table), SnsPublisher(boto3.client("sns"), topic["arn"]), reads)
    for shard in ("shardId-1", "shardId-2"):
        # Given a shard's final invocation of window 0: one Query reads the recent windows and the next one
        state, segment = one_segment(T0, T0, T0 + 59)
        desk.review(shard, state, [segment], True, [segment])
    assert reads.reads == [("heads_between", T0 + 60)] * 2
    # When shard 1 opens window 1 with records of its first seconds (in step with the others)
    state, segment = one_segment(T0 + 60, T0 + 60, T0 + 64)
    desk.review("shardId-1", state, [segment], False, [])
    # Then its first look is the one read ahead: no Query
    assert reads.reads == [("heads_between", T0 + 60)] * 2
    # while shard 2, whose first records of window 1 come 30 s into it (the heads read ahead are old), reads
    state, segment = one_segment(T0 + 60, T0 + 90, T0 + 91)
    desk.review("shardId-2", state, [segment], False, [])
    assert reads.reads[2:] == [("window_heads", T0 + 60)]
