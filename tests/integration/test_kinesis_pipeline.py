"""The pipeline on Kinesis Data Streams for DynamoDB records (moto): each change counted once, in its window."""

from __future__ import annotations

import random
from typing import Any

import boto3
import pytest

from hotkeys.cli.top import top_rows, window_figures, windows_in_range
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.pipeline import (
    BatchError,
    NotAStreamEvent,
    Ports,
    StreamBatch,
    parse_event,
    process_batch,
)
from hotkeys.detector.consumer.seen import HORIZON_SECONDS
from hotkeys.detector.domain.windows import iso_utc, parse_iso_utc
from tests.kinesis_wire import KINESIS_ARN, SHARD, change_document, kinesis_record, sequence
from tests.support import layouts_of, wcu_of, write_record

T0 = 1_764_460_800


def ports_for(settings: Settings) -> Ports:
    stats = DynamoStatsStore(boto3.resource("dynamodb").Table(settings.stats_table_name))
    return Ports(stats=stats, resolve_key=PartitionKeyResolver(None, lambda name: {}), layouts=layouts_of(stats))


def event(records: list[dict[str, Any]], window: int, *, state: Any = None, final: bool = False) -> dict[str, Any]:
    """A tumbling-window invocation of a Kinesis shard, as Lambda sends it."""
    return {
        "Records": records,
        "window": {"start": iso_utc(window), "end": iso_utc(window + 60)},
        "state": state or {},
        "shardId": SHARD,
        "eventSourceARN": KINESIS_ARN,
        "isFinalInvokeForWindow": final,
        "isWindowTerminatedEarly": False,
    }


def read_top(settings: Settings) -> dict[str, Any]:
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(settings.stats_table_name))
    windows = windows_in_range(store, since=0, last=None, until=T0 + 100_000, table=None)
    rows = top_rows(window_figures(store, windows), limit=1000)
    return {(parse_iso_utc(row.window_start), row.key): row for row in rows}


def changes(count: int, start: int = 0) -> list[dict[str, Any]]:
    """``count`` writes of two keys, one a second, each change's decoded document (fixed event ids)."""
    return [
        change_document(
            write_record("hot" if i % 3 else "cold", i, T0 + 5 + i, payload_bytes=1500), fraction=i, event_id=f"e{i}"
        )
        for i in range(start, start + count)
    ]


def test_a_copy_in_the_same_batch_or_a_later_invocation_is_counted_once(settings: Settings) -> None:
    # Given ten changes, the third sent twice in the same batch and the fifth again in the next invocation
    documents = changes(10)
    first = [kinesis_record(d, sequence(i), arrival=T0 + 6 + i) for i, d in enumerate(documents)]
    first.insert(3, kinesis_record(documents[2], sequence(100), arrival=T0 + 9))
    ports = ports_for(settings)
    outcome = process_batch(parse_event(event(first, T0)), settings, ports)
    again = [kinesis_record(documents[4], sequence(200), arrival=T0 + 20)]
    second = process_batch(parse_event(event(again, T0, state=outcome.state, final=True)), settings, ports)
    # Then each change counted once, and the copies are reported as copies (not as duplicates: redeliveries)
    assert (outcome.counted, outcome.copies, second.counted, second.copies) == (10, 1, 0, 1)
    assert outcome.duplicates == second.duplicates == 0  # (Lambda redelivered nothing)
    rows = read_top(settings)
    assert rows[(T0, "hot")].writes == 6 and rows[(T0, "cold")].writes == 4
    assert rows[(T0, "hot")].wcu == 6 * wcu_of(1500, "hot")


def test_a_copy_after_the_windows_end_is_counted_once_though_lambda_starts_afresh(settings: Settings) -> None:
    # Given a window whose last change comes again in the next Lambda window (a fresh state)
    documents = changes(3)
    ports = ports_for(settings)
    records = [kinesis_record(d, sequence(i), arrival=T0 + 6 + i) for i, d in enumerate(documents)]
    process_batch(parse_event(event(records, T0, final=True)), settings, ports)
    copy = kinesis_record(documents[2], sequence(50), arrival=T0 + 61)
    fresh = process_batch(parse_event(event([copy], T0 + 60)), settings, ports)
    # Then the copy is skipped: the shard's recent changes were stored at the window's end and read back
    assert (fresh.counted, fresh.copies) == (0, 1)
    rows = read_top(settings)
    assert rows[(T0, "hot")].writes + rows[(T0, "cold")].writes == 3


def test_without_the_stored_memory_the_copy_would_count_twice(settings: Settings) -> None:
    # The same schedule, the stored memory gone (mutation check of the test above)
    documents = changes(3)
    ports = ports_for(settings)
    records = [kinesis_record(d, sequence(i), arrival=T0 + 6 + i) for i, d in enumerate(documents)]
    process_batch(parse_event(event(records, T0, final=True)), settings, ports)
    boto3.resource("dynamodb").Table(settings.stats_table_name).delete_item(
        Key={"pk": f"SEEN#{KINESIS_ARN}|{SHARD}", "sk": "SEEN"}
    )
    copy = kinesis_record(documents[2], sequence(50), arrival=T0 + 61)
    fresh = process_batch(parse_event(event([copy], T0 + 60)), settings, ports)
    assert (fresh.counted, fresh.copies) == (1, 0)


def test_a_late_change_counts_in_the_window_of_its_creation(settings: Settings) -> None:
    # Given changes of the next window, then one created in this window delivered after them
    documents = [change_document(write_record("k", i, T0 + 61 + i), fraction=0, event_id=f"n{i}") for i in range(3)]
    late = change_document(write_record("k", 9, T0 + 58), fraction=0, event_id="late")
    records = [kinesis_record(d, sequence(i), arrival=T0 + 62 + i) for i, d in enumerate(documents)]
    records.append(kinesis_record(late, sequence(9), arrival=T0 + 66))
    outcome = process_batch(parse_event(event(records, T0 + 60, final=True)), settings, ports_for(settings))
    assert outcome.counted == 4
    rows = read_top(settings)
    assert rows[(T0 + 60, "k")].writes == 3 and rows[(T0, "k")].writes == 1


def test_a_change_older_than_the_memory_is_counted_and_reported(settings: Settings) -> None:
    documents = [change_document(write_record("k", 0, T0 + 100), event_id="new")]
    old = change_document(write_record("k", 1, T0 + 100 - HORIZON_SECONDS - 1), event_id="old")
    records = [
        kinesis_record(documents[0], sequence(0), arrival=T0 + 101),
        kinesis_record(old, sequence(1), arrival=T0 + 102),
    ]
    outcome = process_batch(parse_event(event(records, T0 + 60)), settings, ports_for(settings))
    assert (outcome.counted, outcome.beyond_horizon) == (2, 1)


def test_lambdas_redelivery_of_a_kinesis_batch_is_caught_by_its_sequence_numbers(settings: Settings) -> None:
    documents = changes(5)
    records = [kinesis_record(d, sequence(i), arrival=T0 + 6 + i) for i, d in enumerate(documents)]
    ports = ports_for(settings)
    outcome = process_batch(parse_event(event(records, T0)), settings, ports)
    again = process_batch(parse_event(event(records, T0, state=outcome.state)), settings, ports)
    assert (again.counted, again.duplicates, again.copies, again.out_of_order) == (0, 5, 0, 0)


def test_a_malformed_kinesis_record_fails_alone_by_its_sequence_number(settings: Settings) -> None:
    records = [kinesis_record(d, sequence(i), arrival=T0 + 6 + i) for i, d in enumerate(changes(3))]
    records[1]["kinesis"]["data"] = "bm90IGpzb24="  # "not json"
    batch = StreamBatch(records=records, kinesis=True, source_arn=KINESIS_ARN)  # (no tumbling window)
    outcome = process_batch(batch, settings, ports_for(settings))
    assert outcome.failures == [str(sequence(1))]
    assert outcome.response()["batchItemFailures"] == [{"itemIdentifier": str(sequence(1))}]
    assert (outcome.counted, outcome.malformed) == (2, 1)


def test_a_kinesis_record_without_a_sequence_number_fails_the_batch(settings: Settings) -> None:
    records = [kinesis_record(d, sequence(i), arrival=T0 + 6 + i) for i, d in enumerate(changes(2))]
    del records[0]["kinesis"]["sequenceNumber"]
    with pytest.raises(BatchError):
        process_batch(parse_event(event(records, T0)), settings, ports_for(settings))


def test_an_event_mixing_both_sources_is_refused() -> None:
    mixed = [kinesis_record(changes(1)[0], sequence(0), arrival=T0), write_record("k", 0, T0)]
    with pytest.raises(NotAStreamEvent, match="Kinesis"):
        parse_event({"Records": mixed})


@pytest.mark.parametrize("partition", ["aws", "aws-cn", "aws-us-gov", "aws-iso-b"])
def test_a_final_invocation_without_records_is_a_kinesis_one_by_its_source(partition: str) -> None:
    arn = KINESIS_ARN.replace("arn:aws:", f"arn:{partition}:")
    batch = parse_event({**event([], T0, final=True), "eventSourceARN": arn})
    assert batch.kinesis and batch.source_arn == arn
    stream = parse_event(
        {**event([], T0, final=True), "eventSourceARN": f"arn:{partition}:dynamodb:x:1:table/t/stream/s"}
    )
    assert not stream.kinesis


def test_shuffled_copies_within_the_horizon_give_the_clean_figures(settings: Settings) -> None:
    # Given 200 changes, a fifth of them sent twice, delivered out of order within 10 s, in batches of 25
    rng = random.Random(7)
    documents = changes(200)
    deliveries = [(T0 + 5 + i + rng.uniform(0, 10), d) for i, d in enumerate(documents)]
    deliveries += [(T0 + 5 + i + rng.uniform(0, 10), d) for i, d in enumerate(documents) if rng.random() < 0.2]
    deliveries.sort(key=lambda pair: pair[0])
    records = [kinesis_record(d, sequence(i), arrival=at) for i, (at, d) in enumerate(deliveries)]
    # (Lambda's windows follow arrival: each starts with a fresh state and ends with a final invocation)
    ports = ports_for(settings)
    by_window: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_window.setdefault(int(record["kinesis"]["approximateArrivalTimestamp"]) // 60 * 60, []).append(record)
    for window, arrived in sorted(by_window.items()):
        state = None
        for start in range(0, len(arrived), 25):
            outcome = process_batch(
                parse_event(event(arrived[start : start + 25], window, state=state)), settings, ports
            )
            state = outcome.state
        process_batch(parse_event(event([], window, state=state, final=True)), settings, ports)
    # Then every window's figures are those of the 200 changes, each once
    rows = read_top(settings)
    expected: dict[tuple[int, str], int] = {}
    for i in range(200):
        second = T0 + 5 + i
        key = (second // 60 * 60, "hot" if i % 3 else "cold")
        expected[key] = expected.get(key, 0) + 1
    assert {key: row.writes for key, row in rows.items()} == expected


def test_a_shard_behind_reports_its_lag_for_every_table_it_carries(settings: Settings) -> None:
    # Given a Kinesis shard carrying two tables, processed an hour after its newest record
    from hotkeys.detector.consumer.lag import LagReport, LagReporter

    saved: list[LagReport] = []
    orders = change_document(write_record("k", 0, T0 + 5), event_id="o")
    users = {**change_document(write_record("u", 1, T0 + 9), event_id="u"), "tableName": "users"}
    records = [kinesis_record(orders, sequence(0), arrival=T0 + 6), kinesis_record(users, sequence(1), arrival=T0 + 10)]
    ports = ports_for(settings)
    ports.lag = LagReporter(saved.append)
    ports.clock = lambda: T0 + 3600.0
    process_batch(parse_event(event(records, T0)), settings, ports)
    # Then both tables are reported behind by the shard's position (its newest record), not only the newest's
    assert sorted((report.table, report.behind) for report in saved) == [("orders", 3591.0), ("users", 3591.0)]


def test_a_window_read_again_with_a_fresh_state_changes_nothing(settings: Settings) -> None:
    # Given a window counted and closed (its memory stored), then the same records read again from a fresh state
    # (Lambda opening the window again, or a new mapping reading them once more: AWS documents neither away)
    documents = changes(40)
    ports = ports_for(settings)
    records = [kinesis_record(d, sequence(i), arrival=T0 + 6 + i) for i, d in enumerate(documents)]
    process_batch(parse_event(event(records, T0, final=True)), settings, ports)
    before = {key: row.writes for key, row in read_top(settings).items()}
    again = process_batch(parse_event(event(records, T0, final=True)), settings, ports)
    # Then the stored memory does not take the records for copies of themselves: the figures stand
    assert again.copies == 0
    assert {key: row.writes for key, row in read_top(settings).items()} == before
    assert sum(before.values()) == 40


def real_sequence(position: int) -> int:
    """A sequence number shaped as Kinesis issues them: the record's place in the middle bits, the low bits (the
    shard's) those of the Lambda developer guide's example record of shardId-000000000006."""
    return 49590338271490256608559692538361571095921575989136588898 + (position << 40)


def test_copies_under_sequence_numbers_whose_low_bits_name_the_shard_are_still_copies(settings: Settings) -> None:
    documents = changes(10)
    first = [kinesis_record(d, real_sequence(i), arrival=T0 + 6 + i) for i, d in enumerate(documents)]
    first.insert(3, kinesis_record(documents[2], real_sequence(2) + (1 << 39), arrival=T0 + 9))
    ports = ports_for(settings)
    outcome = process_batch(parse_event(event(first, T0)), settings, ports)
    again = [kinesis_record(documents[4], real_sequence(20), arrival=T0 + 20)]
    second = process_batch(parse_event(event(again, T0, state=outcome.state, final=True)), settings, ports)
    assert (outcome.counted, outcome.copies, second.counted, second.copies) == (10, 1, 0, 1)


def test_an_event_source_that_is_not_text_is_refused_as_no_stream_event() -> None:
    with pytest.raises(NotAStreamEvent, match="not a DynamoDB stream event"):
        parse_event({"Records": [{"eventSource": ["aws:kinesis"]}]})
