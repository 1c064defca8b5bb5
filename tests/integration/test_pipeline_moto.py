"""The pipeline against moto: what it stores, and how it treats bad and repeated input."""

from __future__ import annotations

import dataclasses
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hotkeys.cli.top import top_rows, window_figures, windows_in_range
from hotkeys.deployment import EventSourceSettings
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.pipeline import BatchError, Ports, RecordFailed, StreamBatch, parse_event, process_batch
from hotkeys.detector.consumer.state import STATE_VERSION
from hotkeys.detector.domain.windows import iso_utc as iso
from hotkeys.emulator.esm import Delivery, ShardConsumer
from tests.support import layouts_of, ttl_record, wcu_of, write_record

T0 = 1_764_460_800  # 2025-11-30T00:00:00Z, a window boundary for 60 s windows


def ports_for(settings: Settings) -> Ports:
    table = boto3.resource("dynamodb").Table(settings.stats_table_name)
    stats = DynamoStatsStore(table)
    return Ports(stats=stats, resolve_key=PartitionKeyResolver(None, lambda name: {}), layouts=layouts_of(stats))


def tumbling(records: list, state: dict | None = None, final: bool = False, shard: str = "shardId-1") -> StreamBatch:
    return StreamBatch(records=records, shard_id=shard, window=(T0, T0 + 60), state=state or {}, is_final=final)


def read_top(settings: Settings) -> list:
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(settings.stats_table_name))
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10_000, table=None)
    return top_rows(window_figures(store, windows), limit=100)


def test_counts_write_units_per_key_and_skips_ttl_deletes(settings: Settings) -> None:
    # Given a batch with a hot key, a cold key and a TTL deletion
    records = [write_record("hot", i, T0 + i % 30, payload_bytes=2000) for i in range(10)]
    records += [write_record("cold", 10, T0 + 5), ttl_record("gone", 11, T0 + 6)]
    # When the final invocation of the window processes it
    outcome = process_batch(tumbling(records, final=True), settings, ports_for(settings))
    # Then nothing failed and the stats hold the exact figures
    assert outcome.failures == []
    assert outcome.ttl_deletes == 1
    rows = {row.key: row for row in read_top(settings)}
    assert rows["hot"].wcu == 10 * wcu_of(2000, "hot")
    assert rows["hot"].writes == 10
    assert rows["cold"].wcu == 1
    assert "gone" not in rows
    total = 10 * wcu_of(2000, "hot") + 1
    assert rows["hot"].share == pytest.approx(10 * wcu_of(2000, "hot") / total, abs=1e-6)
    # its rate: all its units fell in one 10 s bucket (seconds 0-9)
    assert rows["hot"].wcu_per_second == pytest.approx(rows["hot"].wcu / 10, abs=0.05)
    assert rows["hot"].error_bound == 0


def test_the_summary_metrics_count_keys_by_write_units(settings: Settings) -> None:
    # Given one write of a 300 KB item and 3 writes of small ones to another key, a key writing one unit
    # in each of six burst buckets, then 100 small keys
    records = [write_record("big", 0, T0 + 1, payload_bytes=300_000)]
    records += [write_record("small", 1 + i, T0 + 1) for i in range(3)]
    records += [write_record("steady", 4 + i, T0 + 3 + 10 * i) for i in range(6)]
    records += [write_record(f"k{i}", 10 + i, T0 + 2) for i in range(100)]
    total = wcu_of(300_000, "big") + 3 + 6 + 100
    assert 1 < total / 100 < 6  # one unit is under 1% of the window, six and the big item's are over it
    # When they are folded
    outcome = process_batch(tumbling(records), settings, ports_for(settings))
    # Then the keys above 1% of the segment's write units are those of more than 1% of its units: the big
    # item's key (one write) and the steady key (its heaviest bucket holds one unit); not the small key
    # (it wrote more often than the big one, but 3 units of ~400)
    assert outcome.keys_over_one_percent == 2
    assert outcome.summary_size == 103


def test_a_state_of_an_earlier_layout_starts_the_shard_afresh(settings: Settings) -> None:
    # Given the state an earlier release carried (another version mark), as Lambda hands it over at a deploy
    earlier = {"v": 2, "hwm": "5", "seg": [{"t": "t", "k": "eJwDAAAAAAE="}], "ntf": {}, "ro": []}
    records = [write_record("a", 6 + i, T0 + 1) for i in range(3)]
    # When the next invocation runs with it
    outcome = process_batch(tumbling(records, state=earlier), settings, ports_for(settings))
    # Then it is not read (nothing fails, nothing is counted twice): the shard starts afresh, says so in
    # a metric, and carries on in this version's layout
    assert outcome.failures == [] and outcome.states_discarded == 1 and outcome.counted == 3
    assert outcome.state is not None and outcome.state["v"] == STATE_VERSION
    assert outcome.state["hwm"] == records[-1]["dynamodb"]["SequenceNumber"]
    again = process_batch(tumbling([], state=outcome.state, final=True), settings, ports_for(settings))
    assert again.states_discarded == 0
    assert {row.key: row.writes for row in read_top(settings)} == {"a": 3}


def malformed_batch() -> tuple[list, list[str]]:
    """Five good writes of key "a", one record without Keys, one with an unknown eventName."""
    good = [write_record("a", i, T0 + 1) for i in (0, 1, 3, 4, 5)]
    no_keys = write_record("b", 2, T0 + 1)
    del no_keys["dynamodb"]["Keys"]
    unknown = write_record("c", 6, T0 + 1)
    unknown["eventName"] = "UPSERT"
    bad = [no_keys["dynamodb"]["SequenceNumber"], unknown["dynamodb"]["SequenceNumber"]]
    return [*good[:2], no_keys, *good[2:], unknown], bad


def test_in_a_tumbling_window_a_malformed_record_fails_the_invocation_and_keeps_nothing(settings: Settings) -> None:
    # Given a batch with a malformed record
    records, _bad = malformed_batch()
    # When it is processed in a tumbling window, then the invocation fails as a whole (a function error,
    # whose retry gets the state from before under every reading of the documentation) and stores nothing
    with pytest.raises(RecordFailed, match=r"no dynamodb\.Keys"):
        process_batch(tumbling(records, final=True), settings, ports_for(settings))
    assert read_top(settings) == []


def test_malformed_records_reach_the_dlq_alone_and_the_rest_count_once(settings: Settings) -> None:
    # Given the same batch, delivered by the event source mapping (bisect on error, 2 retries)
    records, bad = malformed_batch()
    ports = ports_for(settings)
    esm = EventSourceSettings(batch_size=10, tumbling_window_seconds=settings.window_seconds, retry_attempts=2)
    run = ShardConsumer(lambda e: process_batch(parse_event(e), settings, ports).response(), "shardId-1", esm).consume(
        records
    )
    # Then bisection isolates each bad record: each reaches the DLQ alone, and every good record counts once
    assert sorted((d.start_sequence, d.end_sequence) for d in run.dead_letters) == [(seq, seq) for seq in sorted(bad)]
    assert {row.key: row.writes for row in read_top(settings)} == {"a": 5}


def test_without_tumbling_windows_malformed_records_are_batch_item_failures(settings: Settings) -> None:
    # Given the same batch, invoked without tumbling-window fields (no state to get wrong)
    records, bad = malformed_batch()
    outcome = process_batch(StreamBatch(records=records), settings, ports_for(settings))
    # Then each bad record is reported per item and the good ones are counted
    assert outcome.failures == bad
    assert {row.key: row.writes for row in read_top(settings)} == {"a": 5}


def test_a_record_without_sequence_number_fails_the_whole_batch(settings: Settings) -> None:
    broken = write_record("a", 1, T0)
    del broken["dynamodb"]["SequenceNumber"]
    with pytest.raises(BatchError):
        process_batch(tumbling([broken]), settings, ports_for(settings))


def test_redelivered_final_invocation_rewrites_the_same_snapshot(settings: Settings) -> None:
    records = [write_record(f"k{i % 3}", i, T0 + i) for i in range(30)]
    batch = tumbling(records, final=True)
    process_batch(batch, settings, ports_for(settings))
    before = read_top(settings)
    process_batch(batch, settings, ports_for(settings))  # the response was lost; Lambda retries
    assert read_top(settings) == before


def test_without_tumbling_windows_each_batch_is_flushed(settings: Settings) -> None:
    records = [write_record("k", i, T0 + i) for i in range(3)]
    outcome = process_batch(StreamBatch(records=records), settings, ports_for(settings))
    assert outcome.state is None
    assert "state" not in outcome.response()
    assert [row.writes for row in read_top(settings)] == [3]


def test_tables_are_kept_apart(settings: Settings) -> None:
    records = [write_record("k", 1, T0, table="orders"), write_record("k", 2, T0, table="users")]
    process_batch(tumbling(records, final=True), settings, ports_for(settings))
    assert sorted(row.table for row in read_top(settings)) == ["orders", "users"]


def test_composite_key_uses_describe_table_hash_key(settings: Settings) -> None:
    record = write_record("ignored", 1, T0)
    record["dynamodb"]["Keys"] = {"sk": {"S": "2026"}, "tenant": {"S": "acme"}}
    calls = []

    def describe(name: str) -> dict:
        calls.append(name)
        return {
            "Table": {
                "KeySchema": [
                    {"AttributeName": "tenant", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ]
            }
        }

    table = boto3.resource("dynamodb").Table(settings.stats_table_name)
    stats = DynamoStatsStore(table)
    ports = Ports(stats=stats, resolve_key=PartitionKeyResolver(None, describe), layouts=layouts_of(stats))
    process_batch(
        tumbling([record, {**record, "dynamodb": {**record["dynamodb"], "SequenceNumber": "9" * 21}}], final=True),
        settings,
        ports,
    )
    assert [row.key for row in read_top(settings)] == ["acme"]
    assert calls == ["orders"]  # cached for the container's life


def test_a_final_invocation_that_keeps_failing_stores_the_window_once_it_succeeds(settings: Settings) -> None:
    # Given a stats table that rejects every write for a while (longer than the retry quota of 3),
    # while a window's records are consumed (the flushes fail too: the window's figures exist only in the state)
    records = [write_record(f"k{i % 3}", i, T0 + i // 10) for i in range(30)]
    ports = ports_for(settings)
    real = ports.stats
    outage = {"left": 6}

    class Unavailable:
        def save_segment(self, snapshot: Any, expires_at: int, bucket: int = 0) -> None:
            if outage["left"]:
                outage["left"] -= 1
                raise ClientError({"Error": {"Code": "InternalServerError", "Message": "down"}}, "PutItem")
            real.save_segment(snapshot, expires_at, bucket)

        def shard_segments(self, table: str, start: int, shard_id: str) -> list[Any]:
            return real.shard_segments(table, start, shard_id)

    ports.stats = Unavailable()
    esm = EventSourceSettings(batch_size=100, tumbling_window_seconds=settings.window_seconds, retry_attempts=3)
    # When the mapping delivers the window: its final invocation fails until the table is back
    run = ShardConsumer(lambda e: process_batch(parse_event(e), settings, ports).response(), "shardId-1", esm).consume(
        records
    )
    # Then the shard was suspended (no DLQ entry, no dropped window) and the window's figures are all stored
    assert run.final_failures == 6 and not run.dead_letters
    assert {row.key: row.writes for row in read_top(settings)} == {"k0": 10, "k1": 10, "k2": 10}


@pytest.mark.parametrize("view", ["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE"])
def test_records_from_a_stream_without_both_images_are_reported(
    settings: Settings, view: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Given records from a stream of another view type (a 30 KB item, whose images are missing or half there)
    records = [write_record("big", i, T0 + i, payload_bytes=30_000) for i in range(3)]
    for record in records:
        record["dynamodb"]["StreamViewType"] = view
        if view != "NEW_IMAGE":
            del record["dynamodb"]["NewImage"]
        if view != "OLD_IMAGE":
            del record["dynamodb"]["OldImage"]
    # When processed
    outcome = process_batch(tumbling(records, final=True), settings, ports_for(settings))
    # Then they are still counted (the stream shows nothing better), but reported, not passed off as complete
    assert outcome.counted == 3 and outcome.without_images == 3
    (logged,) = [r for r in caplog.records if "without item images" in r.getMessage()]
    assert logged.levelname == "ERROR" and logged.stream_view_type == view and logged.records == 3


def test_records_with_both_images_are_not_reported(settings: Settings) -> None:
    records = [write_record("k", i, T0 + i) for i in range(3)]
    assert process_batch(tumbling(records, final=True), settings, ports_for(settings)).without_images == 0


def lambda_window(records: list, state: dict | None, start: int, final: bool = False) -> StreamBatch:
    """A batch of a Lambda window that does not start on one of the detector's windows."""
    return StreamBatch(
        records=records, shard_id="shardId-1", window=(start, start + 60), state=state or {}, is_final=final
    )


def test_event_time_that_steps_back_across_a_window_edge_keeps_every_record(settings: Settings) -> None:
    # Given a Lambda window [T0+17, T0+77) (its alignment is not documented) over the detector's windows T0 and
    # T0+60, and event times that step back across T0+60 ("ApproximateCreationDateTime" is not documented as
    # monotonic): five records in T0, one in T0+60, then one more in T0 in the next invocation
    ports = ports_for(settings)
    first = [write_record("a", i, T0 + 30 + i) for i in range(5)] + [write_record("b", 5, T0 + 61)]
    outcome = process_batch(lambda_window(first, None, T0 + 17), settings, ports)
    late = [write_record("a", 6, T0 + 59)]
    outcome = process_batch(lambda_window(late, outcome.state, T0 + 17), settings, ports)
    process_batch(lambda_window([], outcome.state, T0 + 17, final=True), settings, ports)
    # Then window T0 holds all six of its records (the reopened segment is stored beside the first, not over it)
    assert {(row.window_start, row.key): row.writes for row in read_top(settings)} == {
        (iso(T0), "a"): 6,
        (iso(T0 + 60), "b"): 1,
    }


def test_a_record_redelivered_below_the_high_water_mark_but_never_counted_is_counted(settings: Settings) -> None:
    # Given a window whose later records were counted first (a redelivery out of sequence order: "If records
    # are processed more than once, they might be processed out of order")
    ports = ports_for(settings)
    records = [write_record("k", i, T0 + i) for i in range(10)]
    outcome = process_batch(tumbling(records[5:]), settings, ports)
    # When the earlier records arrive, with one of the counted ones again
    outcome = process_batch(tumbling([*records[:5], records[7]], outcome.state), settings, ports)
    # Then the five are counted, reported as out of order, and the repeated one is skipped
    assert (outcome.counted, outcome.out_of_order, outcome.duplicates) == (5, 5, 1)
    outcome = process_batch(tumbling([], outcome.state, final=True), settings, ports)
    assert {row.key: row.writes for row in read_top(settings)} == {"k": 10}


def test_out_of_order_records_never_widen_a_range_over_records_nobody_counted(settings: Settings) -> None:
    # Given records 0-9 of which 3-5 were dead-lettered (never counted), 6-9 counted, then 0-2 arrive late,
    # then record 10
    ports = ports_for(settings)
    records = [write_record("k", i, T0 + i) for i in range(11)]
    outcome = process_batch(tumbling(records[6:10]), settings, ports)
    outcome = process_batch(tumbling([*records[:3], records[10]], outcome.state), settings, ports)
    process_batch(tumbling([], outcome.state, final=True), settings, ports)
    # Then no stored range claims the dead-lettered records (redrive will count them), and all others are covered
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(settings.stats_table_name))
    (snapshot,) = store.window_segments("orders", T0)
    sequences = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    assert [snapshot.covers(s) for s in sequences] == [True] * 3 + [False] * 3 + [True] * 5


def test_a_redelivery_of_a_completed_segment_is_recognised_from_its_stored_snapshot(settings: Settings) -> None:
    # Given a segment of window T0 completed (a later window appeared) and dropped from the carried state
    ports = ports_for(settings)
    early = [write_record("a", i, T0 + 50 + i) for i in range(3)]
    outcome = process_batch(lambda_window([*early, write_record("b", 3, T0 + 61)], None, T0 + 17), settings, ports)
    # When its records are delivered again (below the high-water mark, covered by no carried range)
    outcome = process_batch(lambda_window(early, outcome.state, T0 + 17), settings, ports)
    # Then they are duplicates: the stored snapshot's ranges say so
    assert (outcome.duplicates, outcome.out_of_order, outcome.counted) == (3, 0, 0)
    process_batch(lambda_window([], outcome.state, T0 + 17, final=True), settings, ports)
    assert {(row.window_start, row.key): row.writes for row in read_top(settings)} == {
        (iso(T0), "a"): 3,
        (iso(T0 + 60), "b"): 1,
    }


def test_a_lambda_window_opened_again_with_a_fresh_state_never_writes_over_the_first(settings: Settings) -> None:
    # Given a Lambda window closed by its final invocation, then the same window start opened again with a
    # fresh state (the guide does not say a window whose records' times step back cannot: every reading)
    ports = ports_for(settings)
    outcome = process_batch(
        lambda_window([write_record("a", i, T0 + 20 + i) for i in range(5)], None, T0), settings, ports
    )
    process_batch(lambda_window([], outcome.state, T0, final=True), settings, ports)
    outcome = process_batch(lambda_window([write_record("a", 9, T0 + 21)], None, T0), settings, ports)
    # and its final invocation is retried after it had written (its answer was lost)
    closing = lambda_window([], outcome.state, T0, final=True)
    process_batch(closing, settings, ports)
    process_batch(closing, settings, ports)
    # Then both instances' records are stored, each once
    assert {row.key: row.writes for row in read_top(settings)} == {"a": 6}


def test_a_window_read_again_by_a_new_mapping_changes_nothing(settings: Settings) -> None:
    # Given a closed Lambda window, then the same records read again from the stream's start with a fresh
    # state (a new event source mapping at TRIM_HORIZON after a redeploy)
    ports = ports_for(settings)
    records = [write_record(f"k{i % 2}", i, T0 + i) for i in range(6)]
    for _reading in range(2):
        outcome = process_batch(lambda_window(records, None, T0), settings, ports)
        process_batch(lambda_window([], outcome.state, T0, final=True), settings, ports)
    # Then the stored figures are those of one reading (the second overwrote the first: they share records)
    assert {row.key: row.writes for row in read_top(settings)} == {"k0": 3, "k1": 3}


def test_a_failed_attempt_at_an_out_of_order_record_does_not_make_its_retry_a_duplicate(settings: Settings) -> None:
    # Given window T0's segment completed (a record of T0+60 came with it), then an earlier record of T0
    # redelivered out of order, whose first attempt stored its snapshot but lost its answer
    ports = ports_for(settings)
    early, late = write_record("k", 0, T0 + 50), [write_record("k", 2, T0 + 55), write_record("j", 3, T0 + 61)]
    state = process_batch(lambda_window(late, None, T0 + 17), settings, ports).state
    process_batch(lambda_window([early], state, T0 + 17), settings, ports)  # its answer never reached Lambda
    # When Lambda retries it with the state from before
    outcome = process_batch(lambda_window([early], state, T0 + 17), settings, ports)
    # Then the retry counts it (the failed attempt's snapshot proves nothing), and the window holds it once
    assert (outcome.out_of_order, outcome.duplicates) == (1, 0)
    process_batch(lambda_window([], outcome.state, T0 + 17, final=True), settings, ports)
    assert {(row.window_start, row.key): row.writes for row in read_top(settings)} == {
        (iso(T0), "k"): 2,
        (iso(T0 + 60), "j"): 1,
    }


def test_a_completed_segment_replaces_what_a_failed_attempt_stored_under_its_name(settings: Settings) -> None:
    # Given window T0's segment flushed (10 s of event time) and unchanged since, then a batch [T0+61, T0+58]
    # (event time steps back) whose attempt stored T0's segment with T0+58 in it, and lost its answer
    settings = dataclasses.replace(settings, flush_seconds=10)
    ports = ports_for(settings)
    a0, a1, x1, w1 = (write_record(f"k{i}", i, T0 + t) for i, t in enumerate([0, 12, 61, 58]))
    state = process_batch(tumbling([a0, a1]), settings, ports).state
    process_batch(tumbling([x1, w1], state), settings, ports)
    # When Lambda bisects it: [x1] completes the segment, then [w1] is counted in its next generation
    state = process_batch(tumbling([x1], state), settings, ports).state
    state = process_batch(tumbling([w1], state), settings, ports).state
    process_batch(tumbling([], state, final=True), settings, ports)
    # Then each record is stored once: the completion rewrote what the failed attempt had stored
    assert {(row.window_start, row.key): row.writes for row in read_top(settings)} == {
        (iso(T0), "k0"): 1,
        (iso(T0), "k1"): 1,
        (iso(T0), "k3"): 1,
        (iso(T0 + 60), "k2"): 1,
    }


def test_a_lambda_window_opened_again_never_writes_over_a_segment_completed_in_the_first(settings: Settings) -> None:
    # Given event times 40, 70, 95, 45 under Lambda windows offset by 30 s, in the reading where a record
    # whose time steps back reopens its own Lambda window with a fresh state (the guide does not say)
    ports = ports_for(settings)
    records = [write_record(f"k{i}", i, T0 + t) for i, t in enumerate([40, 70, 95, 45])]
    esm = EventSourceSettings(batch_size=25, tumbling_window_seconds=60, retry_attempts=2)
    delivery = Delivery(window_offset_seconds=30, window_clock="record")
    # When the mapping delivers them cleanly
    run = ShardConsumer(
        lambda e: process_batch(parse_event(e), settings, ports).response(), "shardId-1", esm, delivery=delivery
    ).consume(records)
    # Then every record is stored once: the second instance's segment took the next generation
    assert not run.dead_letters
    assert {(row.window_start, row.key): row.writes for row in read_top(settings)} == {
        (iso(T0), "k0"): 1,
        (iso(T0), "k3"): 1,
        (iso(T0 + 60), "k1"): 1,
        (iso(T0 + 60), "k2"): 1,
    }


def test_a_segment_sealed_while_out_of_order_records_arrive_trusts_no_earlier_attempt(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given segments that seal after three ranges, a counted record r5, and an attempt at [r0..r3] (each out of
    # order: its own range) that sealed the segment, stored it, and lost its answer
    monkeypatch.setattr("hotkeys.detector.consumer.state.MAX_RANGES", 3)
    ports = ports_for(settings)
    r = [write_record("k", i, T0 + i) for i in range(6)]
    state = process_batch(tumbling([r[5]]), settings, ports).state
    process_batch(tumbling(r[:4], state), settings, ports)
    # When Lambda retries it bisected, later half first: the segment now seals at r0, beside what the failed
    # attempt stored under that segment's name
    state = process_batch(tumbling(r[2:4], state), settings, ports).state
    state = process_batch(tumbling(r[:2], state), settings, ports).state
    process_batch(tumbling([], state, final=True), settings, ports)
    # Then every record is stored once
    assert {row.key: row.writes for row in read_top(settings)} == {"k": 5}


def test_a_batch_short_of_the_batch_size_writes_its_figures_once_a_batching_window_passed(settings: Settings) -> None:
    # Given a segment last written at a flush boundary (event second 12 of the window)
    from hotkeys.deployment import EVENT_SOURCE

    ports = ports_for(settings)
    state = process_batch(tumbling([write_record("k", 0, T0 + 11), write_record("k", 1, T0 + 12)]), settings, ports)
    written = state.stats_writes
    # When a full batch of the mapping's size ends 8 s later (event second 20): no boundary crossed, busy
    full = [
        write_record("k", 2 + i, T0 + 13 + i * 7 // EVENT_SOURCE.batch_size) for i in range(EVENT_SOURCE.batch_size)
    ]
    busy = process_batch(tumbling(full, state.state), settings, ports)
    # Then nothing is written before the next boundary
    assert busy.stats_writes == 0 and written == 1
    # But after a short batch (cut by the batching window: the stream had no more), the segment, 7 s of
    # event time past its last write, is written
    short = process_batch(tumbling([write_record("k", 9000, T0 + 17)], busy.state), settings, ports)
    assert short.stats_writes == 1
    # and after the next short batch, within a batching window of that write, it is not
    again = process_batch(tumbling([write_record("k", 9001, T0 + 19)], short.state), settings, ports)
    assert again.stats_writes == 0
