"""Figures stored in a retired layout (written before an upgrade, kept until their 14-day expiry) are
left out window by window: the readers show the rest and say, once, what they left out.

The stats table is moto's. The windows after the upgrade are written by the real store adapter (a
replay of the burst sample); the ones before it are written as the detector wrote them until the
summary's series layout (git: ``c6e757d^``, ``snapshots.to_item`` with ``summary.encode_entries``
under ``ENCODING_MARK = -6``, under the key layout before docs/decisions.md §64: a window's snapshots
under 8 partition keys, found through a catalog), transcribed below.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import boto3
import pytest

from hotkeys.cli.main import main
from hotkeys.cli.replay import run_replay
from hotkeys.detector.domain.windows import iso_utc
from hotkeys.emulator.events import shape_stream_record
from hotkeys.emulator.local import LocalResources
from tests.support import create_source_table

# The burst sample's two windows (60 s, table "tickets"): the replay writes them in the current layout.
FIRST, SECOND = 1_796_083_200, 1_796_083_260
WINDOW_SECONDS = 60
RETENTION_SECONDS = 14 * 86_400
LONGER = 20 * 86_400


def retired_summary(entries: dict[str, list[int]]) -> bytes:
    """``summary.encode_entries`` before series (``ENCODING_MARK = -6``): per entry the key's length and
    its six counters (writes, wcu, first seen, latest bucket, its write units, peak), a newline, the keys."""
    numbers: list[int] = [-6]
    keys: list[bytes] = []
    for key, entry in entries.items():
        raw = key.encode("utf-8")
        keys.append(raw)
        numbers.append(len(raw))
        numbers.extend(entry)
    header = json.dumps(numbers, separators=(",", ":")).encode("ascii")
    return zlib.compress(header + b"\n" + b"".join(keys), 6)


def retired_item(
    table: str,
    start: int,
    shard_id: str,
    entries: dict[str, list[int]],
    retention: int = RETENTION_SECONDS,
    counted: tuple[str, str] = ("100", "200"),
) -> dict[str, Any]:
    """``snapshots.to_item`` before series: no head, the summary's attributes at the top level."""
    bucket = zlib.crc32(shard_id.encode("utf-8")) % 8
    return {
        "pk": f"SEG#{table}#{start}#{bucket}",
        "sk": f"{shard_id}#{start}.0",
        "table_name": table,
        "window_start": start,
        "window_seconds": WINDOW_SECONDS,
        "shard_id": shard_id,
        "first_sequence": counted[0],
        "hwm": counted[1].zfill(40),
        "writes": sum(entry[0] for entry in entries.values()),
        "wcu": sum(entry[1] for entry in entries.values()),
        "ttl_deletes": 0,
        "pruned": 0,
        "first_event": start,
        "last_event": start + WINDOW_SECONDS - 1,
        "entry_count": len(entries),
        "entries_z": retired_summary(entries),
        "ranges_z": zlib.compress(f"{counted[0]}-{counted[1]}".encode("ascii")),
        "expires_at": start + WINDOW_SECONDS + retention,
        "bucket_seconds": 10,
        "instance_closed": True,
    }


def catalog_item(table: str, start: int) -> dict[str, Any]:
    """``DynamoStatsStore.save_catalog``'s item, as the detector wrote it before §64."""
    return {
        "pk": "CATALOG",
        "sk": f"{start:012d}#{table}",
        "table_name": table,
        "window_start": start,
        "window_seconds": WINDOW_SECONDS,
        "expires_at": start + WINDOW_SECONDS + RETENTION_SECONDS,
    }


@pytest.fixture
def upgraded_stats(stats_table_name: str) -> str:
    """Two windows wholly before the upgrade, one written across it (one shard's snapshot in the retired
    layout beside the replay's), one wholly after."""
    run_replay(["events/hot-key-burst.json.gz"], LocalResources(stats_table=stats_table_name))
    stats = boto3.resource("dynamodb").Table(stats_table_name)
    hot = [3000, 3000, FIRST - 120, FIRST - 120, 3000, 3000]  # far hotter than anything the sample holds
    for start in (FIRST - 120, FIRST - 60):
        stats.put_item(Item=retired_item("tickets", start, "shardId-00000-generated", {"old#hot": hot}))
        stats.put_item(Item=catalog_item("tickets", start))
    stats.put_item(Item=retired_item("tickets", SECOND, "shardId-00001-older", {"mixed#hot": hot}))
    stats.put_item(Item=catalog_item("tickets", SECOND))  # the version before wrote its part of it
    # A snapshot kept longer (written under a longer STATS_RETENTION_DAYS): the window expires with it.
    stats.put_item(Item=retired_item("tickets", SECOND, "shardId-00002-older", {"mixed#hot": hot}, LONGER))
    return stats_table_name


EXPECTED_LINE = (
    "3 windows stored before the upgrade to this version of the detector were skipped (a layout it no "
    f"longer reads); they expire by {iso_utc(SECOND + WINDOW_SECONDS + LONGER)}."
)


def test_top_shows_the_windows_it_can_read_and_says_once_which_it_skipped(
    upgraded_stats: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    # When top reads every window
    code = main(["top", "--stats-table", upgraded_stats, "--since", "2026-11-30T00:00:00Z", "--limit", "50"])
    # Then it shows the window written after the upgrade, leaves out those before it and the one written
    # across it whole (part of its shards' figures would understate its keys), and ends with one line
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "event#42" in out and "old#hot" not in out and "mixed#hot" not in out
    assert iso_utc(FIRST) in out and iso_utc(SECOND) not in out
    assert out.rstrip("\n").splitlines()[-1] == EXPECTED_LINE
    assert out.count("skipped") == 1


def test_top_json_lists_the_readable_rows_and_says_what_it_skipped_on_stderr(
    upgraded_stats: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main(["top", "--stats-table", upgraded_stats, "--since", "2026-11-30T00:00:00Z", "--limit", "50", "--json"])
    out, err = capsys.readouterr()
    rows = json.loads(out)["rows"]
    assert code == 0
    assert {row["window_start"] for row in rows} == {iso_utc(FIRST)}
    assert err == f"hotkeys: {EXPECTED_LINE}\n"


def test_top_whose_only_window_is_skipped_says_there_is_nothing_to_show_and_why(
    upgraded_stats: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    # When top reads the latest window only, the one written across the upgrade
    assert main(["top", "--stats-table", upgraded_stats, "--last", "1"]) == 0
    # Then it has no row to show, and says why
    assert capsys.readouterr().out.splitlines() == [
        "No figures yet for that selection.",
        "1 window stored before the upgrade to this version of the detector was skipped (a layout it no longer "
        f"reads); it expires by {iso_utc(SECOND + WINDOW_SECONDS + LONGER)}.",
    ]


def test_top_on_a_table_with_nothing_retired_says_nothing_of_it(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_replay(["events/hot-key-burst.json.gz"], LocalResources(stats_table=stats_table_name))
    capsys.readouterr()
    assert main(["top", "--stats-table", stats_table_name, "--since", "2026-11-30T00:00:00Z", "--limit", "50"]) == 0
    out, err = capsys.readouterr()
    assert iso_utc(FIRST) in out and iso_utc(SECOND) in out
    assert "skipped" not in out + err


@pytest.fixture(autouse=True)
def short_long_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    # moto waits out a long poll of an empty queue: the shortest wait SQS allows keeps the tests quick.
    monkeypatch.setattr("hotkeys.cli.redrive.LONG_POLL_SECONDS", 1)


def written(table: str, writes: int) -> dict[str, Any]:
    """A source table with a stream and ``writes`` writes: its shard and moto's records, shaped as Lambda's."""
    arn = str(create_source_table(table))
    for i in range(writes):
        boto3.resource("dynamodb").Table(table).put_item(Item={"pk": f"{table}#{i % 3}", "n": i})
    streams = boto3.client("dynamodbstreams")
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    raws = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    return {"arn": arn, "shard": shard, "records": [shape_stream_record(raw, arn) for raw in raws]}


def dead_letter(stream: dict[str, Any], first: int, last: int) -> str:
    """The on-failure destination's message for records ``first``..``last`` of the stream."""
    records = stream["records"]
    info = {
        "shardId": stream["shard"],
        "streamArn": stream["arn"],
        "batchSize": last - first + 1,
        "startSequenceNumber": records[first]["dynamodb"]["SequenceNumber"],
        "endSequenceNumber": records[last]["dynamodb"]["SequenceNumber"],
    }
    return json.dumps({"requestContext": {"condition": "RetryAttemptsExhausted"}, "DDBStreamBatchInfo": info})


def test_redrive_leaves_a_range_of_a_retired_window_in_the_dlq_and_redrives_the_others(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given records 0..5 of "orders" counted before the upgrade (the shard's snapshot in the retired
    # layout), a dead-lettered batch 3..9 of it, and a dead-lettered batch of "invoices" never counted
    orders, invoices = written("orders", 10), written("invoices", 4)
    sequence = [record["dynamodb"]["SequenceNumber"] for record in orders["records"]]
    # (each window the records fall in, should the writes straddle a minute, holds such a snapshot)
    starts = {
        record["dynamodb"]["ApproximateCreationDateTime"] // WINDOW_SECONDS * WINDOW_SECONDS
        for record in orders["records"]
    }
    stats = boto3.resource("dynamodb").Table(stats_table_name)
    for start in starts:
        entries = {"orders#0": [2, 2, start, start, 2, 2]}
        stats.put_item(Item=retired_item("orders", start, orders["shard"], entries, counted=(sequence[0], sequence[5])))
        stats.put_item(Item=catalog_item("orders", start))
    start = orders["records"][3]["dynamodb"]["ApproximateCreationDateTime"] // WINDOW_SECONDS * WINDOW_SECONDS
    sqs = boto3.client("sqs")
    dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    sqs.send_message(QueueUrl=dlq, MessageBody=dead_letter(orders, 3, 9))
    sqs.send_message(QueueUrl=dlq, MessageBody=dead_letter(invoices, 0, 3))
    capsys.readouterr()
    # When redriven
    code = main(["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--json"])
    # Then the invoices' batch is counted, the orders' one is refused (nothing of it counted: which of its
    # records the retired snapshot covers cannot be told) and stays in the DLQ, so work remains
    results = {result["shard_id"] + result["start"]: result for result in json.loads(capsys.readouterr().out)}
    assert code == 1
    refused = results[orders["shard"] + sequence[3]]
    assert refused["counted"] == 0 and refused["already_counted"] == 0
    assert refused["refused"] == (
        f"orders at {iso_utc(start)} was stored before the upgrade to this version of the detector (a layout it "
        "no longer reads): which of these records it counted cannot be told; the entry stays in the DLQ (the "
        f"stored window expires by {iso_utc(start + WINDOW_SECONDS + RETENTION_SECONDS)})"
    )
    assert results[invoices["shard"] + invoices["records"][0]["dynamodb"]["SequenceNumber"]]["counted"] == 4
    left = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, VisibilityTimeout=0, WaitTimeSeconds=1)
    assert [json.loads(m["Body"])["DDBStreamBatchInfo"]["shardId"] for m in left.get("Messages", [])] == [
        orders["shard"]
    ]


def test_the_lambdas_reads_leave_a_retired_snapshot_out_instead_of_failing_the_invocation(upgraded_stats: str) -> None:
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore

    store = DynamoStatsStore(boto3.resource("dynamodb").Table(upgraded_stats))
    # Given window SECOND, which one shard stored in the retired layout and the replay's shard in the current one
    current = [
        snapshot.shard_id for snapshot in store.heads_since("tickets", SECOND, 1) if snapshot.window_start == SECOND
    ]
    assert current and "shardId-00001-older" not in current
    # When the pipeline reads the older shard's snapshots of it (a record redelivered below the high-water
    # mark), it gets none (a failed invocation would be retried until its records were dead-lettered)
    assert store.shard_segments("tickets", SECOND, "shardId-00001-older") == []
    # while the current shard's are read as before
    (replayed,) = set(current)
    assert [snapshot.shard_id for snapshot in store.shard_segments("tickets", SECOND, replayed)] == [replayed]
