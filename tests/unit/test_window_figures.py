"""A window's merged figures are a view over the merged summary: per-key figures are its entries; the
fields renamed for what they mean keep their stored names."""

from __future__ import annotations

from hotkeys.cli.top import top_rows
from hotkeys.detector.consumer.snapshots import (
    SegmentSnapshot,
    from_item,
    merge_window,
    snapshot_of,
    to_item,
)
from hotkeys.detector.consumer.state import Segment
from hotkeys.detector.domain import summary
from hotkeys.detector.domain.rate import rate_of

T0 = 1_796_083_200
COUNTING = summary.Counting(capacity=3, alert_min_span_seconds=10)


def counted(writes: list[tuple[str, int, int]]) -> summary.Summary:
    """A summary that counted (key, write units, second of the window) in order."""
    part = summary.Summary()
    for key, wcu, second in writes:
        part.count(key, wcu, T0 + second, COUNTING)
    return part


def snapshot(shard: str, part: summary.Summary, indexes: dict[str, summary.Summary] | None = None) -> SegmentSnapshot:
    return SegmentSnapshot(
        table="tickets",
        window_start=T0,
        window_seconds=60,
        shard_id=shard,
        origin="0",
        first_sequence="1",
        last_sequence="9",
        summary=part,
        ttl_deletes=1,
        first_event=T0,
        last_event=T0 + 50,
        alert_min_span_seconds=10,
        indexes=indexes or {},
    )


def shards() -> list[SegmentSnapshot]:
    # Two shards of one window: the first prunes once (capacity 3: its seventh key cuts the fourth
    # heaviest's 1 from each kept one), "b" and "c" tie across them, the second counted an index
    one = [("q", 5, 1), ("b", 3, 2), ("c", 1, 3), ("q", 4, 15), ("d", 1, 4), ("e", 1, 5), ("f", 1, 6), ("g", 1, 7)]
    two = [("c", 3, 20), ("a", 1, 21), ("q", 1, 22), ("b", 1, 40)]
    return [
        snapshot("shardId-1", counted(one)),
        snapshot("shardId-2", counted(two), {"by-status": counted([("OPEN", 7, 3)])}),
    ]


def test_the_per_key_figures_are_the_merged_summarys_entries_heaviest_first() -> None:
    # Given a window's segments on two shards
    segments = shards()
    # When merged
    window = merge_window(segments)
    # Then the per-key figures are the merged summary's entries, not a copy of other figures
    merged = summary.merged(snap.summary for snap in segments)
    assert window.summary == merged and window.entries is window.summary.entries
    assert (window.writes, window.wcu, window.error_bound) == (merged.writes, merged.wcu, merged.pruned)
    assert dict(window.ranked()) == merged.entries
    # ranked heaviest first by write units, ties by key ("b" and "c": 3 each; "g" and "a": 1, "g" merged first)
    assert merged.pruned == 1
    assert [(key, entry.wcu) for key, entry in window.ranked()] == [("q", 9), ("b", 3), ("c", 3), ("a", 1), ("g", 1)]
    # each a sum over the shards, with its series and peak (q's 5 and 4 in two buckets, 1 in a third)
    q = window.entries["q"]
    assert (q.writes, q.first_seen, q.peak, q.series()) == (3, T0 + 1, 5, {T0: 5, T0 + 10: 4, T0 + 20: 1})


def test_an_index_window_is_its_own_merged_summary_and_partial_when_a_segment_missed_it() -> None:
    window = merge_window(shards(), "by-status")
    assert [(key, entry.wcu) for key, entry in window.ranked()] == [("OPEN", 7)]
    assert (window.index, window.partial, window.ttl_deletes, window.wcu) == ("by-status", True, 0, 7)


def test_the_rows_each_command_shows_come_from_the_entries() -> None:
    window = merge_window(shards())
    rows = top_rows([window], 10)
    # Then every row's figures are its key's entry, the window's bound and burst length, its rate the one
    # rules.rate_of gives, hottest first
    assert sorted((row.key, row.writes, row.wcu, row.error_bound) for row in rows) == sorted(
        (key, entry.writes, entry.wcu, window.error_bound) for key, entry in window.ranked()
    )
    span = window.alert_min_span_seconds
    for row in rows:
        rate = rate_of(window.entries[row.key], window.error_bound, window.last_event, span)
        assert (row.wcu_per_second, row.at_most_wcu_per_second) == (
            round(rate.wcu_per_second, 1),
            round(rate.at_most, 1),
        )
    assert [row.wcu_per_second for row in rows] == sorted((row.wcu_per_second for row in rows), reverse=True)


def test_renamed_fields_keep_their_stored_names() -> None:
    # Given a segment of a table with local secondary indexes, counted in 20-second burst buckets
    segment = Segment("tickets", T0, "1", origin="0", has_local_indexes=True)
    segment.summary.count("k", 1, T0 + 1, summary.Counting(3, alert_min_span_seconds=20))
    # When it is carried in the state and stored as a snapshot
    carried = segment.to_json()
    stored = to_item(snapshot_of(segment, "shardId-00000001", 60, summary.Counting(3, 20)), expires_at=T0)
    # Then the stored names are the ones stored before the renames (no stored format changed):
    # the state's "pc", the item's "pinned" and "bucket_seconds"; the key names the shard
    assert carried["pc"] is True and Segment.from_json(carried).has_local_indexes
    assert (stored["pinned"], stored["bucket_seconds"], stored["head"]["bucket_seconds"]) == (True, 20, 20)
    assert stored["pk"] == f"SEG#tickets#{T0}#shardId-00000001" and stored["sk"] == "0"
    read = from_item(stored)
    assert (read.has_local_indexes, read.alert_min_span_seconds, read.shard_id) == (True, 20, "shardId-00000001")
