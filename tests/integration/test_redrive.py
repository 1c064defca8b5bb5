"""`hotkeys redrive`: DLQ coordinates → records re-read from the stream → counted once, in total."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from hotkeys.cli.main import main
from hotkeys.cli.top import window_figures, windows_in_range
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.pipeline import StreamBatch, process_batch
from hotkeys.detector.handlers.wiring import build_ports
from hotkeys.emulator.events import shape_stream_record
from tests.support import create_source_table


@pytest.fixture(autouse=True)
def short_long_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    # moto waits out a long poll of an empty queue: the shortest wait SQS allows keeps the tests quick.
    monkeypatch.setattr("hotkeys.cli.redrive.LONG_POLL_SECONDS", 1)


@pytest.fixture
def stream(aws: None) -> dict[str, Any]:
    """A source table with a stream and ten writes; its shard and the shaped records."""
    arn = str(create_source_table("orders"))
    table = boto3.resource("dynamodb").Table("orders")
    for i in range(10):
        table.put_item(Item={"pk": f"order#{i % 3}", "n": i})
    streams = boto3.client("dynamodbstreams")
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    raws = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    return {"arn": arn, "shard": shard, "records": [shape_stream_record(r, arn) for r in raws]}


def dead_letter(stream: dict[str, Any], first: int, last: int, shard: str | None = None) -> dict[str, Any]:
    records = stream["records"]
    return {
        "requestContext": {"condition": "RetryAttemptsExhausted"},
        "DDBStreamBatchInfo": {
            "shardId": shard or stream["shard"],
            "streamArn": stream["arn"],
            "batchSize": last - first + 1,
            "startSequenceNumber": records[first]["dynamodb"]["SequenceNumber"],
            "endSequenceNumber": records[last]["dynamodb"]["SequenceNumber"],
        },
    }


def total_writes(settings: Settings) -> int:
    store = build_ports(settings, AwsClients()).stats
    windows = windows_in_range(store, since=0, last=None, until=2**40, table="orders")  # type: ignore[arg-type]
    return sum(w.writes for w in window_figures(store, windows))  # type: ignore[arg-type]


def test_redrive_counts_what_was_never_counted_and_only_that(
    stats_table_name: str, stream: dict, capsys: pytest.CaptureFixture
) -> None:
    # Given records 0..5 were counted, then the mapping gave up on a batch covering records 3..9
    settings = Settings(stats_table_name=stats_table_name)
    first = stream["records"][:6]
    created = first[0]["dynamodb"]["ApproximateCreationDateTime"]
    window = (created - created % 60, created - created % 60 + 60)
    process_batch(
        StreamBatch(records=first, shard_id=stream["shard"], window=window, state={}, is_final=True),
        settings,
        build_ports(settings, AwsClients()),
    )
    sqs = boto3.client("sqs")
    dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(dead_letter(stream, 3, 9)))
    sqs.send_message(
        QueueUrl=dlq,
        MessageBody=json.dumps(dead_letter(stream, 0, 1, shard="shardId-00000001700000000000-0badc0de")),
    )
    # When redriven (twice); the unreadable entry stays, so the exit status says work remains
    assert main(["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--json"]) == 1
    results = {r["shard_id"]: r for r in json.loads(capsys.readouterr().out)}
    # Then records 3..5 are recognised as counted, 6..9 are counted now, and the gone shard is reported
    assert results[stream["shard"]]["read"] == 7
    assert results[stream["shard"]]["already_counted"] == 3 and results[stream["shard"]]["counted"] == 4
    assert "cannot be read" in results["shardId-00000001700000000000-0badc0de"]["unreadable"]
    assert total_writes(settings) == 10
    # The readable entry left the DLQ; the unreadable one stays (visible at once) for a human to look at
    assert main(["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--json"]) == 1
    assert [r["shard_id"] for r in json.loads(capsys.readouterr().out)] == ["shardId-00000001700000000000-0badc0de"]
    assert total_writes(settings) == 10


def test_dry_run_changes_nothing(stats_table_name: str, stream: dict, capsys: pytest.CaptureFixture) -> None:
    sqs = boto3.client("sqs")
    dlq = sqs.create_queue(QueueName="dlq2")["QueueUrl"]
    sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(dead_letter(stream, 0, 9)))
    argv = ["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--dry-run"]
    assert main(argv) == 1  # entries remain
    assert "counted now 10 (dry run)" in capsys.readouterr().out
    assert total_writes(Settings(stats_table_name=stats_table_name)) == 0


def test_a_dead_lettered_batch_between_two_counted_ones_is_counted_by_redrive(
    stats_table_name: str, stream: dict, capsys: pytest.CaptureFixture
) -> None:
    # Given records 0..2 counted, a batch of 3..5 that ran (and flushed a snapshot) but whose answer was
    # lost until its retries ran out, and records 6..9 counted with the state from before that batch
    settings = Settings(stats_table_name=stats_table_name)
    records = stream["records"]
    created = records[0]["dynamodb"]["ApproximateCreationDateTime"]
    window = (created - created % 60, created - created % 60 + 60)

    def invoke(batch: list[dict[str, Any]], state: dict[str, Any], final: bool) -> dict[str, Any]:
        outcome = process_batch(
            StreamBatch(records=batch, shard_id=stream["shard"], window=window, state=state, is_final=final),
            settings,
            build_ports(settings, AwsClients()),
        )
        assert outcome.state is not None
        return outcome.state

    after_first = invoke(records[:3], {}, final=False)
    invoke(records[3:6], after_first, final=True)  # flushed, then lost: Lambda keeps the state from before
    invoke(records[6:], after_first, final=True)
    assert total_writes(settings) == 7
    sqs = boto3.client("sqs")
    dlq = sqs.create_queue(QueueName="dlq3")["QueueUrl"]
    sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(dead_letter(stream, 3, 5)))
    # When redriven, twice
    assert main(["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    # Then the three dead-lettered records are counted (not taken as covered by the span 0..9), once
    assert (result["already_counted"], result["counted"]) == (0, 3)
    assert total_writes(settings) == 10
    sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(dead_letter(stream, 3, 5)))
    assert main(["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--json"]) == 0
    (again,) = json.loads(capsys.readouterr().out)
    assert (again["already_counted"], again["counted"]) == (3, 0)
    assert total_writes(settings) == 10


def test_redrive_moves_spooled_archive_objects_into_s3(stats_table_name: str, capsys: pytest.CaptureFixture) -> None:
    # Given archive objects the function spooled while S3 refused them (one of them in two parts), and S3 back
    from hotkeys.detector.adapters.archive_spool import PART_BYTES, DynamoArchiveSpool

    spool = DynamoArchiveSpool(boto3.resource("dynamodb").Table(stats_table_name))
    bodies = {"ttl-archive/a.json.gz": b"small", "ttl-archive/b.json.gz": bytes(range(256)) * (PART_BYTES // 200)}
    for shard, (key, body) in enumerate(bodies.items()):
        spool.put(f"shardId-{shard}", key, body)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="archive")
    sqs = boto3.client("sqs")
    dlq = sqs.create_queue(QueueName="dlq-spool")["QueueUrl"]
    argv = ["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name]
    # When redrive runs with the archive bucket
    assert main([*argv, "--archive-bucket", "archive"]) == 0
    # Then every spooled object is in S3, byte for byte, and the spool is empty
    assert "moved 2 spooled archive object(s) into S3" in capsys.readouterr().out
    for key, body in bodies.items():
        assert s3.get_object(Bucket="archive", Key=key)["Body"].read() == body
    assert spool.waiting() is None


def test_redrive_waits_until_the_consumer_has_finished_a_window_a_failed_attempt_claimed(
    stats_table_name: str,
) -> None:
    # Given a window on one shard: record a counted, then an attempt at b that stored {a, b} and lost its
    # answer (b is dead-lettered: no retries), while the shard carries on without b
    from hotkeys.cli.redrive import Counting, redrive_entry
    from hotkeys.emulator.events import ItemChange, stream_arn, stream_record
    from tests.stream_wire import WireStream

    shard, start = "shardId-00000000000000000000-gen00000", 1_764_460_800
    settings = Settings(stats_table_name=stats_table_name, flush_seconds=10)
    ports = build_ports(settings, AwsClients())
    a, b, c = (
        stream_record(
            ItemChange(event_name="INSERT", keys={"pk": f"k{i}"}, new_image={"pk": f"k{i}"}),
            table="orders",
            sequence=f"{10**20 + i:021d}",
            event_time=start + t,
        )
        for i, t in enumerate([0, 12, 25])
    )

    def invoke(records: list, state: dict, final: bool = False) -> Any:
        batch = StreamBatch(records, shard, (start, start + 60), state, is_final=final)
        return process_batch(batch, settings, ports).state

    carried = invoke([a], {})
    invoke([b], carried)  # its answer never reached Lambda
    entry = {
        "shardId": shard,
        "startSequenceNumber": b["dynamodb"]["SequenceNumber"],
        "endSequenceNumber": b["dynamodb"]["SequenceNumber"],
        "streamArn": stream_arn("orders"),
    }
    streams = WireStream(stream_arn("orders"), {shard: [a, b, c]}).client()
    # When redrive runs while the window is still open, then it counts nothing and keeps the entry
    early = redrive_entry(entry, Counting(settings, ports, ports.stats), streams, dry_run=False)
    assert early.refused and "still being counted" in early.refused and early.counted == 0
    # and when it runs again after the consumer finished the window (which replaced the failed attempt's
    # figures with its own), then it counts b: every record once
    invoke([], invoke([c], carried), final=True)
    late = redrive_entry(entry, Counting(settings, ports, ports.stats), streams, dry_run=False)
    assert (late.refused, late.counted) == (None, 1)
    assert total_writes(settings) == 3
