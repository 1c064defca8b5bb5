"""Which shards resolve a table's incidents at a window's final invocation (``desk.resolves``): the two
lowest shard ids with a head in the window, and each shard in its turn; only they read the open
incidents, and only when some are open do they read the earlier windows' heads."""

from __future__ import annotations

import zlib
from collections import Counter
from typing import Any

import boto3
import pytest

from hotkeys.detector import summary
from hotkeys.detector.adapters.incident_store import DynamoIncidentStore
from hotkeys.detector.adapters.publisher import SnsPublisher
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.alerts.desk import RESOLVERS, ROTA_WINDOWS, AlertDesk, resolves
from hotkeys.detector.alerts.messages import PublishRefused
from hotkeys.detector.alerts.rules import PARTITION_LIMIT, HotKey
from hotkeys.detector.config import Settings
from hotkeys.detector.snapshots import SegmentSnapshot
from hotkeys.detector.state import Segment, ShardState

W = 60
# DescribeStream's shape: a child's id carries a later creation time than its parent's, so it sorts after it.
SHARDS = (
    "shardId-00000001414562045508-2bac9cd2",
    "shardId-00000001414576573621-f55eea83",
    "shardId-00000001414590102367-3c71b25e",
)


def off_turn(shard: str) -> int:
    """A window start that is not ``shard``'s rota turn."""
    start = 1_796_083_200
    while zlib.crc32(shard.encode("utf-8")) % ROTA_WINDOWS == (start // W) % ROTA_WINDOWS:
        start += W
    return start


T0 = off_turn(SHARDS[2])


def head(shard: str, start: int = T0, final: bool = True) -> SegmentSnapshot:
    return SegmentSnapshot(
        table="tickets",
        window_start=start,
        window_seconds=W,
        shard_id=shard,
        origin="0",
        first_sequence="1",
        last_sequence="9",
        summary=summary.Summary(writes=10, wcu=10),
        ttl_deletes=0,
        first_event=start,
        last_event=start + 59,
        alert_min_span_seconds=10,
        final=final,
    )


def test_the_two_lowest_shard_ids_of_the_window_resolve() -> None:
    heads = [head(shard) for shard in SHARDS]
    assert RESOLVERS == 2
    assert [resolves(heads, shard, T0, W) for shard in SHARDS] == [True, True, False]
    # a head of another window does not make a shard a candidate: the lowest of this window's resolve
    older = [head("shardId-00000", T0 - W), *heads]
    assert [resolves(older, shard, T0, W) for shard in SHARDS] == [True, True, False]


def test_a_shard_that_sees_no_lower_heads_resolves() -> None:
    # The window-heads index is eventually consistent: a shard that does not see the lower ones' heads
    # takes the look itself (a redundant look, never a missing one)
    assert resolves([head(SHARDS[2])], SHARDS[2], T0, W)
    assert resolves([], SHARDS[2], T0, W)


def test_every_shard_takes_its_turn_once_in_the_rota() -> None:
    starts = range(T0, T0 + ROTA_WINDOWS * W, W)
    heads = [head(shard, start) for shard in SHARDS for start in starts]
    assert len([start for start in starts if resolves(heads, SHARDS[2], start, W)]) == 1


class Counted(DynamoIncidentStore):
    def __init__(self, table: Any) -> None:
        super().__init__(table)
        self.looks: Counter[str] = Counter()

    def open_incidents(self, table: str) -> list[dict[str, Any]]:
        self.looks["open_incidents"] += 1
        return super().open_incidents(table)


class CountedHeads(DynamoStatsStore):
    def __init__(self, table: Any) -> None:
        super().__init__(table)
        self.reads: list[tuple[int, int]] = []

    def heads_between(self, table: str, first: int, last: int) -> list[SegmentSnapshot]:
        self.reads.append((first, last))
        return super().heads_between(table, first, last)


def final_review(desk: AlertDesk, shard: str) -> int:
    state = ShardState()
    segment = Segment("tickets", T0, "1", origin="0", first_event=T0, last_event=T0 + 59)
    state.segments[("tickets", T0)] = segment
    return desk.review(shard, state, [segment], True, [segment])


@pytest.mark.parametrize("incident_open", [True, False], ids=["an incident open", "none open"])
def test_only_the_resolvers_look_and_the_incident_resolves_once(
    stats_table_name: str, topic: dict, incident_open: bool
) -> None:
    table = boto3.resource("dynamodb").Table(stats_table_name)
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"])
    incidents = Counted(table)
    stats = CountedHeads(table)
    desk = AlertDesk(settings, incidents, SnsPublisher(boto3.client("sns"), topic["arn"]), stats)
    # Given three shards that stored their heads of window T0, and (or not) an incident hot in the window before
    for shard in SHARDS:
        stats.save_segment(head(shard), expires_at=T0 + 86_400)
    if incident_open:
        hot = HotKey("tickets", "event#7", PARTITION_LIMIT, T0 - W, W, 10, 54_000, 900.0, 0.0, T0 - 30)
        assert incidents.claim_firing(hot, SHARDS[0])[0]
    # When each shard runs its final invocation of T0 (the third first: it is not a resolver)
    published = [final_review(desk, shard) for shard in reversed(SHARDS)]
    # Then only the two lowest looked at the open incidents
    assert incidents.looks == Counter(open_incidents=2)
    # and the earlier windows' heads were read only by the one that found the incident open
    earlier = [read for read in stats.reads if read[1] < T0]
    assert len(earlier) == (1 if incident_open else 0)
    # while every final invocation read its window and the next one
    assert sum(1 for read in stats.reads if read == (T0, T0 + W)) == 3
    # and the incident was resolved once, by the second lowest (the first to look)
    assert published == ([0, 1, 0] if incident_open else [0, 0, 0])
    statuses = [item["status"] for item in table.scan()["Items"] if "reason" in item]
    assert statuses == (["resolved"] if incident_open else [])


class Refusing(SnsPublisher):
    """SNS answers with an error while ``refusing`` is set: nothing is sent."""

    refusing = True

    def publish(self, alert: Any) -> str:
        if self.refusing:
            raise PublishRefused("SNS refused")
        return super().publish(alert)


def cooled_incident(stats_table_name: str, topic: dict, publisher: type[SnsPublisher] = SnsPublisher) -> Any:
    table = boto3.resource("dynamodb").Table(stats_table_name)
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"])
    incidents = Counted(table)
    stats = CountedHeads(table)
    desk = AlertDesk(settings, incidents, publisher(boto3.client("sns"), topic["arn"]), stats)
    # Hot two windows before T0: a sibling still in T0 holds T0 back (``judged_window``), not the window before
    hot = HotKey("tickets", "event#7", PARTITION_LIMIT, T0 - 2 * W, W, 10, 54_000, 900.0, 0.0, T0 - 90)
    assert incidents.claim_firing(hot, SHARDS[0])[0]
    return table, stats, desk


def incident(table: Any) -> tuple[str, Any]:
    (item,) = [item for item in table.scan()["Items"] if "reason" in item]
    return str(item["status"]), item.get("resolve_published")


def test_a_parent_that_ended_in_the_window_leaves_its_resolution_to_the_second_lowest(
    stats_table_name: str, topic: dict
) -> None:
    # Given a parent (the lowest id) that wrote a head of window T0 and ended in it (no final invocation),
    # and its two children, which finish T0
    table, stats, desk = cooled_incident(stats_table_name, topic)
    stats.save_segment(head(SHARDS[0], final=False), expires_at=T0 + 86_400)
    for child in SHARDS[1:]:
        stats.save_segment(head(child), expires_at=T0 + 86_400)
    # When the children run their final invocations of T0
    published = [final_review(desk, child) for child in SHARDS[1:]]
    # Then the first child (the second lowest id of the window) resolved the incident, once
    assert published == [1, 0] and incident(table) == ("resolved", True)


def test_a_resolution_sns_refused_goes_back_to_firing_for_the_next_resolver(stats_table_name: str, topic: dict) -> None:
    table, stats, desk = cooled_incident(stats_table_name, topic, Refusing)
    first, lagging, second = SHARDS[0], SHARDS[1], SHARDS[2]
    for shard in (first, second):
        stats.save_segment(head(shard), expires_at=T0 + 86_400)
    # Given the second lowest shard of T0 resolving the incident while SNS refuses: its invocation fails
    with pytest.raises(PublishRefused):
        final_review(desk, second)
    # Then nothing went out and the incident is firing again
    assert incident(table) == ("firing", None)
    # When SNS is back and a lagging shard (an id between the two) writes its first head of T0 before the
    # retry: the retry is no longer a resolving shard, and publishes nothing
    Refusing.refusing = False
    stats.save_segment(head(lagging, final=False), expires_at=T0 + 86_400)
    assert final_review(desk, second) == 0
    # Then the lowest shard's final invocation resolves it, and the one resolved message goes out
    assert final_review(desk, first) == 1
    assert incident(table) == ("resolved", True)
