"""`hotkeys redrive` of a Kinesis event source mapping's dead letters (``KinesisBatchInfo``).

The records live in a moto Kinesis stream: boto3 parses moto's GetShardIterator/GetRecords answers (moto 5.2.5
serves AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER and AT_TIMESTAMP; it numbers a shard's records 1, 2, ... and
always answers a NextShardIterator). The same records, as Lambda hands them over, go through the event source
mapping's emulation (``emulator.esm``) with a fault schedule that fails every invocation holding one record, so
its batch is retried, then dead-lettered as ``KinesisBatchInfo``; redrive then re-reads it from the stream. Some
changes are sent twice, as DynamoDB's producer may: one copy inside the dead-lettered batch and one counted by a
later batch, one counted before the batch and copied into it, one twice inside it.
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from typing import Any

import boto3
import pytest

from hotkeys.cli.redrive import (
    KINESIS_INFO,
    Counting,
    NotABatch,
    Readers,
    RedriveResult,
    batch_info,
    redrive_queue,
)
from hotkeys.cli.redrive_kinesis import redrive_kinesis_entry
from hotkeys.deployment import EventSourceSettings
from hotkeys.detector.consumer.pipeline import parse_event, process_batch
from hotkeys.detector.domain.windows import iso_utc
from hotkeys.emulator.esm import DeadLetter, ShardConsumer
from hotkeys.emulator.events import ItemChange
from hotkeys.emulator.events import sequence_number as event_sequence
from hotkeys.emulator.events import stream_record as event_record
from hotkeys.emulator.kinesis import lambda_record
from hotkeys.emulator.kinesis_read import ShardEnd, StartAt, read_shard
from tests.kinesis_wire import change_document
from tests.property.test_exactly_once import TABLE
from tests.property.test_kinesis_exactly_once import T0, WINDOW, archived, stored, stream_records, wiring

SHARD = "shardId-000000000000"


def kinesis_stream(documents: list[dict[str, Any]]) -> tuple[Any, str, list[dict[str, Any]]]:
    """A one-shard moto stream holding ``documents`` in order, and its records as Lambda hands them over."""
    kinesis = boto3.client("kinesis")
    name = f"changes-{uuid.uuid4().hex[:6]}"
    kinesis.create_stream(StreamName=name, ShardCount=1)
    arn = kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]
    for document in documents:
        kinesis.put_record(StreamARN=arn, Data=json.dumps(document).encode(), PartitionKey=document["tableName"])
    end = ShardEnd()
    records = list(read_shard(kinesis, arn, SHARD, StartAt(timestamp=0.0), end))
    assert end.caught_up and len(records) == len(documents)
    return kinesis, arn, records


def changes_with_copies(seed: int) -> tuple[list[dict[str, Any]], int]:
    """Decoded changes in arrival order, with copies around position ``poisoned`` (returned)."""
    rng = random.Random(seed)
    made = sorted(
        stream_records(40, rng, "MICROSECOND"), key=lambda pair: pair[0]["dynamodb"]["ApproximateCreationDateTime"]
    )
    documents = [change_document(record, fraction=fraction) for record, fraction in made]
    poisoned = 12
    # (copies a few changes apart: within the 30 s of creation time the consumer remembers)
    order = [*documents[:13], documents[10], documents[13], documents[13], documents[14], documents[12]]
    return [*order, *documents[15:]], poisoned


def consume(records: list[dict[str, Any]], arn: str, poisoned: set[str], suffix: str) -> tuple[Any, list[DeadLetter]]:
    """The records through the emulated Kinesis mapping (batches of 4, one retry, no bisection); an invocation
    holding a ``poisoned`` sequence number fails before it counts anything (a timeout at its start)."""
    config, ports, store, bucket = wiring(suffix)
    beyond: list[int] = []

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        if any(record["kinesis"]["sequenceNumber"] in poisoned for record in event["Records"]):
            raise TimeoutError("Task timed out")
        outcome = process_batch(parse_event(event), config, ports)
        beyond.append(outcome.beyond_horizon)
        return outcome.response()

    esm = EventSourceSettings(
        batch_size=4, tumbling_window_seconds=WINDOW, retry_attempts=1, bisect_batch_on_error=False
    )
    run = ShardConsumer(invoke, SHARD, esm, stream_arn=arn).consume(records)
    # Every copy came while the shard remembered its change: the figures of a clean run are exact.
    assert not any(beyond) and not run.errors.keys() - {"TimeoutError: Task timed out"}
    return (config, ports, store, bucket), run.dead_letters


def test_a_dead_lettered_kinesis_batch_is_redriven_from_the_stream_to_a_clean_runs_figures(aws: None) -> None:
    documents, poisoned = changes_with_copies(seed=7)
    kinesis, arn, records = kinesis_stream(documents)
    # Given the clean run's figures (no fault: every change counted once, its copies told apart) ...
    (_, _, clean_store, clean_bucket), letters = consume(records, arn, set(), uuid.uuid4().hex[:8])
    assert not letters
    # ... and a run whose batch holding record `poisoned` failed until Lambda gave it up
    poison = records[poisoned]["kinesis"]["sequenceNumber"]
    (config, ports, store, bucket), letters = consume(records, arn, {poison}, uuid.uuid4().hex[:8])
    assert len(letters) == 1
    message = letters[0].to_message()
    assert set(message[KINESIS_INFO]) >= {"shardId", "startSequenceNumber", "endSequenceNumber", "streamArn"}
    assert stored(store) != stored(clean_store)
    # When redrive reads the batch back from the stream
    letter = batch_info({"Body": json.dumps(message)})
    first = redrive_kinesis_entry(letter.info, Counting(config, ports, store), kinesis, dry_run=False)
    # Then the stored figures and the archive are the clean run's
    assert (first.unreadable, first.refused) == (None, None)
    assert first.read == letters[0].batch_size
    assert first.counted >= 1 and first.copies >= 1
    assert first.read == first.counted + first.copies + first.already_counted
    assert stored(store) == stored(clean_store)
    assert archived(bucket) == archived(clean_bucket)
    # And a second redrive counts nothing
    again = redrive_kinesis_entry(letter.info, Counting(config, ports, store), kinesis, dry_run=False)
    assert (again.counted, again.refused, again.unreadable) == (0, None, None)
    assert again.already_counted + again.copies == again.read
    assert stored(store) == stored(clean_store)


def test_what_redrive_counts_of_a_batch_is_each_change_no_other_batch_counted_once(aws: None) -> None:
    documents, poisoned = changes_with_copies(seed=11)
    kinesis, arn, records = kinesis_stream(documents)
    (config, ports, store, _), letters = consume(records, arn, {records[poisoned]["kinesis"]["sequenceNumber"]}, "c")
    (letter,) = letters
    info = letter.batch_info()
    low, high = int(info["startSequenceNumber"]), int(info["endSequenceNumber"])
    # The oracle: a change (its document's eventID, which its copies share) is counted by redrive if no record
    # of it outside the batch was counted (the fault struck this batch only), and then once.
    inside = [r for r in records if low <= int(r["kinesis"]["sequenceNumber"]) <= high]
    outside = {json.loads(base64.b64decode(r["kinesis"]["data"]))["eventID"] for r in records if r not in inside}
    fresh: list[str] = []
    for record in inside:
        event_id = json.loads(base64.b64decode(record["kinesis"]["data"]))["eventID"]
        if event_id not in outside and event_id not in fresh:
            fresh.append(event_id)
    assert records[poisoned] in inside and len(fresh) < len(inside)
    before = stored(store)
    dry = redrive_kinesis_entry(info, Counting(config, ports, store), kinesis, dry_run=True)
    assert (dry.read, dry.counted, dry.copies, dry.already_counted) == (
        len(inside),
        len(fresh),
        len(inside) - len(fresh),
        0,
    )
    assert stored(store) == before  # (a dry run stores nothing)


def test_an_open_shard_that_has_not_moved_past_the_batch_keeps_the_entry(aws: None) -> None:
    documents, _ = changes_with_copies(seed=3)
    kinesis, arn, records = kinesis_stream(documents[:16])  # the stream ends just after the batch
    (config, ports, store, _), letters = consume(records, arn, {records[12]["kinesis"]["sequenceNumber"]}, "d")
    (letter,) = letters
    result = redrive_kinesis_entry(letter.batch_info(), Counting(config, ports, store), kinesis, dry_run=False)
    assert result.counted == 0 and result.refused is not None
    assert "copy of one of its changes may still come" in result.refused


def made_at(index: int, second: int, fraction: int) -> dict[str, Any]:
    """Change ``index`` of three items (a MODIFY moving its counter), made ``fraction`` µs past ``second``."""
    item = {"pk": f"k{index % 3}", "n": index}
    change = ItemChange("MODIFY", keys={"pk": item["pk"]}, old_image={**item, "n": index - 1}, new_image=item)
    record = event_record(change, table=TABLE, sequence=event_sequence(0, index), event_time=second)
    return change_document(record, fraction=fraction, event_id=f"change-{index}")


def invoke(records: list[dict[str, Any]], arn: str, state: Any, wired: Any, final: bool = False) -> Any:
    """One invocation of the consumer's Lambda window [T0, T0 + WINDOW) on the shard."""
    config, ports, _, _ = wired
    event = {
        "Records": records,
        "window": {"start": iso_utc(T0), "end": iso_utc(T0 + WINDOW)},
        "state": state,
        "shardId": SHARD,
        "eventSourceARN": arn,
        "isFinalInvokeForWindow": final,
        "isWindowTerminatedEarly": False,
    }
    return process_batch(parse_event(event), config, ports)


def batch_of(records: list[dict[str, Any]], arn: str) -> dict[str, Any]:
    """The ``KinesisBatchInfo`` of a dead-lettered run of ``records``."""
    return {
        "shardId": SHARD,
        "startSequenceNumber": records[0]["kinesis"]["sequenceNumber"],
        "endSequenceNumber": records[-1]["kinesis"]["sequenceNumber"],
        "streamArn": arn,
    }


def test_redrive_waits_until_the_consumer_has_stored_what_it_read_past_the_look_for_copies(aws: None) -> None:
    # Ten changes a second apart, then two more than 30 s later; change 3 is sent again after change 5
    documents = [made_at(index, T0 + 1 + index, 1 + index) for index in range(8)]
    documents += [made_at(8, T0 + 40, 0), made_at(9, T0 + 45, 0)]
    kinesis, arn, records = kinesis_stream([*documents[:6], documents[3], *documents[6:]])
    wired = wiring(uuid.uuid4().hex[:8])
    counting = Counting(wired[0], wired[1], wired[2])
    info = batch_of(records[3:6], arn)  # changes 3 to 5: dead-lettered
    first = invoke(records[:3], arn, {}, wired)
    # While the consumer has not read past the batch (the copy of change 3 is still to come), redrive refuses
    behind = redrive_kinesis_entry(info, counting, kinesis, dry_run=False)
    assert behind.counted == 0 and behind.refused is not None
    assert f"up to sequence number {records[9]['kinesis']['sequenceNumber']}" in behind.refused
    # ... and so it does while the consumer holds the copy it counted in its window's state
    rest = invoke(records[6:], arn, first.state, wired)
    held = redrive_kinesis_entry(info, counting, kinesis, dry_run=False)
    assert held.counted == 0 and held.refused is not None
    # Once it has finished the window, redrive counts the batch's changes the consumer did not: each once
    last = invoke([], arn, rest.state, wired, final=True)
    result = redrive_kinesis_entry(info, counting, kinesis, dry_run=False)
    assert (result.refused, result.counted, result.copies) == (None, 2, 1)
    assert first.counted + rest.counted + last.counted + result.counted == len(documents)


def test_redrive_looks_for_copies_as_long_as_the_consumer_remembers_the_change_by_whole_seconds(aws: None) -> None:
    # Change 5 is made 0.9 s into its second, change 6 30.05 s later but only 30 whole seconds later: the
    # consumer still remembers change 5 when its copy comes after change 6, so it counts it as new
    documents = [made_at(index, T0 + index, 900_000) for index in range(6)]
    documents += [made_at(6, T0 + 35, 950_000), made_at(7, T0 + 40, 0)]
    kinesis, arn, records = kinesis_stream([*documents[:7], documents[5], documents[7]])
    wired = wiring(uuid.uuid4().hex[:8])
    first = invoke(records[:3], arn, {}, wired)  # changes 3 to 5 dead-lettered; the consumer goes on
    rest = invoke(records[6:], arn, first.state, wired, final=True)
    assert rest.counted == 3 and rest.beyond_horizon == 0
    result = redrive_kinesis_entry(batch_of(records[3:6], arn), Counting(*wired[:3]), kinesis, dry_run=False)
    assert (result.refused, result.counted, result.copies) == (None, 2, 1)
    assert first.counted + rest.counted + result.counted == len(documents)


def test_a_record_read_back_from_the_stream_is_the_record_lambda_is_handed(aws: None) -> None:
    # (one encoder of Lambda's Kinesis records: the emulated mapping's and redrive's records are alike)
    documents = [made_at(index, T0 + index, 7) for index in range(3)]
    kinesis = boto3.client("kinesis")
    kinesis.create_stream(StreamName="read-back", ShardCount=1)
    arn = kinesis.describe_stream_summary(StreamName="read-back")["StreamDescriptionSummary"]["StreamARN"]
    for index, document in enumerate(documents):
        data = json.dumps(document, separators=(",", ":")).encode()
        kinesis.put_record(StreamARN=arn, Data=data, PartitionKey=f"key-{index}")
    read = list(read_shard(kinesis, arn, SHARD, StartAt(timestamp=0.0), ShardEnd()))
    assert read == [
        lambda_record(
            document,
            f"key-{index}",
            SHARD,
            record["kinesis"]["sequenceNumber"],
            round(record["kinesis"]["approximateArrivalTimestamp"] * 1000),
            arn,
        )
        for index, (document, record) in enumerate(zip(documents, read, strict=True))
    ]


def queue_with(bodies: list[str]) -> tuple[Any, str]:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=f"dlq-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body)
    return sqs, url


def sqs_messages(bodies: list[str]) -> tuple[Any, str, list[Any]]:
    """The messages SQS delivers for ``bodies`` (as ReceiveMessage's answer parses them), in order."""
    sqs, url = queue_with(bodies)
    received: list[Any] = []
    while len(received) < len(bodies):
        received += sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
    return sqs, url, sorted(received, key=lambda message: bodies.index(message["Body"]))


KINESIS_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/changes"
DDB_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000"


def letter_body(kinesis: bool, **changed: Any) -> str:
    arrivals = ("2026-01-01T00:00:00.120Z", "2026-01-01T00:00:01.500Z") if kinesis else None
    letter = DeadLetter(
        SHARD,
        "49000000000000000000000000000000000000000000000000000001",
        "49000000000000000000000000000000000000000000000000000009",
        9,
        "RetryAttemptsExhausted",
        KINESIS_ARN if kinesis else DDB_ARN,
        arrivals,
    )
    message = letter.to_message()
    name = next(iter(set(message) - {"requestContext"}))
    message[name] |= changed
    return json.dumps({key: value for key, value in message.items() if value is not None})


def test_both_batch_infos_are_read_from_a_dlq_message(aws: None) -> None:
    _, _, (ddb, kds) = sqs_messages([letter_body(False), letter_body(True)])
    assert batch_info(ddb).kind == "DDBStreamBatchInfo" and batch_info(ddb).info["streamArn"] == DDB_ARN
    parsed = batch_info(kds)
    assert parsed.kind == KINESIS_INFO
    assert parsed.info["approximateArrivalOfLastRecord"] == "2026-01-01T00:00:01.500Z"
    assert parsed.info["endSequenceNumber"].endswith("9")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("not json", "not JSON (JSONDecodeError)"),
        (json.dumps({"requestContext": {}}), "holds neither DDBStreamBatchInfo nor KinesisBatchInfo"),
        (
            json.dumps({"DDBStreamBatchInfo": {"shardId": "a"}, "KinesisBatchInfo": {}}),
            "holds both DDBStreamBatchInfo and KinesisBatchInfo",
        ),
        (letter_body(True, shardId=None), "KinesisBatchInfo names no shardId"),
        (
            letter_body(True, startSequenceNumber="49x"),
            "KinesisBatchInfo.startSequenceNumber is not a Kinesis sequence number",
        ),
        (
            letter_body(True, endSequenceNumber="1"),
            "KinesisBatchInfo's startSequenceNumber is past its endSequenceNumber",
        ),
        (letter_body(True, streamArn=DDB_ARN), "KinesisBatchInfo.streamArn is not a Kinesis stream ARN"),
    ],
)
def test_a_malformed_dlq_message_is_a_one_line_reason(aws: None, body: str, reason: str) -> None:
    _, _, (message,) = sqs_messages([body])
    with pytest.raises(NotABatch) as raised:
        batch_info(message)
    assert str(raised.value) == reason and "\n" not in reason


def test_a_run_over_the_dlq_keeps_a_malformed_entry_and_redrives_a_kinesis_one(aws: None, monkeypatch: Any) -> None:
    monkeypatch.setattr("hotkeys.cli.redrive.LONG_POLL_SECONDS", 1)
    documents, poisoned = changes_with_copies(seed=5)
    kinesis, arn, records = kinesis_stream(documents)
    (config, ports, store, _), (letter,) = consume(records, arn, {records[poisoned]["kinesis"]["sequenceNumber"]}, "e")
    sqs, url = queue_with([json.dumps(letter.to_message()), "{}"])

    def by_kinesis(info: dict[str, Any], counting: Counting, dry_run: bool) -> RedriveResult:
        return redrive_kinesis_entry(info, counting, kinesis, dry_run)

    run = redrive_queue(url, Counting(config, ports, store), sqs, Readers(boto3.client("dynamodbstreams"), by_kinesis))
    redriven = [item for item in run.results if "message_id" not in item]
    kept = [item for item in run.results if "message_id" in item]
    assert len(redriven) == 1 and redriven[0]["counted"] >= 1
    assert kept == [
        {
            "message_id": kept[0]["message_id"],
            "unreadable": "not a stream batch: holds neither DDBStreamBatchInfo nor KinesisBatchInfo",
        }
    ]
    assert run.exit_status == 1


def test_a_closed_shard_ends_the_read_where_its_records_end() -> None:
    # moto always answers a NextShardIterator; AWS answers none once a closed shard is read to its end.
    from datetime import UTC, datetime

    from botocore.stub import Stubber

    kinesis = boto3.client("kinesis", region_name="us-east-1")
    stubber = Stubber(kinesis)
    arn = KINESIS_ARN
    stubber.add_response(
        "get_shard_iterator",
        {"ShardIterator": "AAAA"},
        {"StreamARN": arn, "ShardId": SHARD, "ShardIteratorType": "AT_SEQUENCE_NUMBER", "StartingSequenceNumber": "7"},
    )
    arrived = datetime(2026, 1, 1, 0, 0, 1, 250000, tzinfo=UTC)
    page = [{"SequenceNumber": "7", "ApproximateArrivalTimestamp": arrived, "Data": b'{"a": 1}', "PartitionKey": "p"}]
    stubber.add_response("get_records", {"Records": page, "MillisBehindLatest": 0})
    end = ShardEnd()
    with stubber:
        (record,) = read_shard(kinesis, arn, SHARD, StartAt(sequence="7"), end)
    assert end.closed and not end.caught_up
    assert record["kinesis"] == {
        "kinesisSchemaVersion": "1.0",
        "partitionKey": "p",
        "sequenceNumber": "7",
        "data": base64.b64encode(b'{"a": 1}').decode(),
        "approximateArrivalTimestamp": arrived.timestamp(),
    }
    assert record["eventID"] == f"{SHARD}:7" and record["eventSource"] == "aws:kinesis"
