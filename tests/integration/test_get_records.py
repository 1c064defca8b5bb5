"""Reading the stream directly (`watch`, `redrive`): GetRecords' shapes and paging, as boto3 returns them.

Every record here comes from botocore parsing an answer: moto's (binary attributes), or a wire
body in the API's documented format (``tests/stream_wire.py``: TTL identities, binary keys, empty
pages), since moto has no ``userIdentity`` and never answers an empty page before records.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.cli.main import main
from hotkeys.cli.top import window_figures, windows_in_range
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.snapshots import WindowFigures
from hotkeys.detector.domain.records import ChangeKind, parse_change
from hotkeys.detector.handlers.wiring import build_ports
from hotkeys.emulator.events import ItemChange, sequence_number, shape_stream_record, stream_record, to_dynamodb_json
from hotkeys.emulator.streams import EMPTY_PAGES_LIMIT, RangeNotRead, ShardRange, read_range
from tests import reference_sizing
from tests.stream_wire import NOWHERE, WireStream, as_get_records, get_records_answer
from tests.support import create_source_table, ttl_record, write_record

T0 = 1_796_083_200  # 2026-12-01T00:00:00Z, the start of a 900-second window
SHARD = "shardId-00000001796083200000-5f1e2d3c"
BLOB = b"\x00\x01\xfe\xff" * 400  # 1,600 raw bytes: base64 text would be 2,136


def blob_item(key: Any, n: int) -> dict[str, Any]:
    """Binary at every depth the API allows: a B, a BS, and both inside a map and a list."""
    return {
        "pk": key,
        "blob": BLOB,
        "chunks": {b"\x01", b"\x02\xff"},
        "nested": {"inner": {"bytes": b"\xfe" * 9, "set": {b"\x07"}}, "list": [b"\x09\x0a", {"b": b"\x0b"}]},
        "n": n,
    }


def blob_record(key: Any, position: int, table: str = "orders") -> dict[str, Any]:
    return stream_record(
        ItemChange(event_name="INSERT", keys={"pk": key}, new_image=blob_item(key, position)),
        table=table,
        sequence=sequence_number(0, position),
        event_time=T0 + position,
    )


def insert_units(item: dict[str, Any]) -> int:
    return reference_sizing.write_units(None, to_dynamodb_json(item))


# --- the record's shape -------------------------------------------------------------------------


def no_describe_table(table: str) -> dict[str, Any]:
    """The key resolver's DescribeTable, never needed: a record with one key attribute names it."""
    pytest.fail(f"DescribeTable({table}) called")


def test_a_ttl_deletion_read_with_get_records_is_a_ttl_deletion() -> None:
    # Given a TTL deletion as GetRecords returns it (boto3: the API's Identity shape, a datetime)
    lambda_record = ttl_record("session#1", 1, T0)
    (raw,) = as_get_records([lambda_record])
    assert raw["userIdentity"] == {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
    # When shaped for the detector, it is exactly the record Lambda delivers, and parses as a TTL deletion
    shaped = shape_stream_record(raw, lambda_record["eventSourceARN"])
    assert shaped == lambda_record
    assert parse_change(shaped, PartitionKeyResolver(None, no_describe_table)).kind is ChangeKind.TTL_DELETE


attribute_values = st.recursive(
    st.one_of(
        st.text(max_size=5),
        st.integers(min_value=-(10**6), max_value=10**6),
        st.binary(max_size=12),
        st.frozensets(st.binary(min_size=1, max_size=6), min_size=1, max_size=3).map(set),
        st.booleans(),
        st.none(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(min_size=1, max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    key=st.one_of(st.binary(min_size=1, max_size=24), st.text(min_size=1, max_size=8)),
    image=st.dictionaries(st.text(min_size=1, max_size=6).filter(lambda n: n != "pk"), attribute_values, max_size=4),
    when=st.integers(min_value=0, max_value=2**33),
    ttl=st.booleans(),
)
def test_any_record_read_with_get_records_is_shaped_exactly_as_lambda_delivers_it(
    key: Any, image: dict[str, Any], when: int, ttl: bool
) -> None:
    item = {"pk": key, **image}
    lambda_record = stream_record(
        ItemChange(
            event_name="REMOVE" if ttl else "MODIFY",
            keys={"pk": key},
            new_image=None if ttl else item,
            old_image=item,
            ttl_delete=ttl,
        ),
        table="orders",
        sequence=sequence_number(0, 7),
        event_time=when,
    )
    (raw,) = as_get_records([lambda_record])
    assert shape_stream_record(raw, lambda_record["eventSourceARN"]) == lambda_record


# --- redrive ------------------------------------------------------------------------------------


@pytest.fixture
def orders(aws: None) -> str:
    """The source table (moto), with TTL on ``expireAt``; returns its stream ARN."""
    arn = str(create_source_table("orders"))
    boto3.client("dynamodb").update_time_to_live(
        TableName="orders", TimeToLiveSpecification={"Enabled": True, "AttributeName": "expireAt"}
    )
    return arn


@pytest.fixture
def dlq(aws: None) -> str:
    return str(boto3.client("sqs").create_queue(QueueName="dlq")["QueueUrl"])


def dead_letter(queue: str, arn: str, shard: str, first: str, last: str) -> None:
    info = {"shardId": shard, "streamArn": arn, "startSequenceNumber": first, "endSequenceNumber": last}
    message = {"requestContext": {"condition": "RetryAttemptsExhausted"}, "DDBStreamBatchInfo": info}
    boto3.client("sqs").send_message(QueueUrl=queue, MessageBody=json.dumps(message))


def left_in(queue: str) -> int:
    messages = boto3.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
    return len(messages)


def stored(settings: Settings) -> list[WindowFigures]:
    store = build_ports(settings, AwsClients()).stats
    return window_figures(store, windows_in_range(store, since=0, last=None, until=2**40, table="orders"))  # type: ignore[arg-type]


def archived_event_ids(bucket: str) -> list[str]:
    import gzip

    s3 = boto3.client("s3")
    ids = []
    for entry in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        body = gzip.decompress(s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read())
        ids.extend(json.loads(line)["event_id"] for line in body.decode().splitlines())
    return ids


def reading(stream: WireStream, monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """The command's clients come from one session whose dynamodbstreams answers from ``stream``."""
    monkeypatch.setattr(f"{module}.aws_clients", lambda _args: AwsClients(session=stream.session()))


def redrive(stats_table: str, queue: str, capsys: pytest.CaptureFixture, *extra: str) -> tuple[int, list[dict]]:
    status = main(["redrive", "--no-stack", "--dlq-url", queue, "--stats-table", stats_table, "--json", *extra])
    return status, json.loads(capsys.readouterr().out)


def test_redrive_archives_a_dead_lettered_ttl_deletion_and_counts_it_as_no_write(
    stats_table_name: str, orders: str, dlq: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # Given a dead-lettered range holding a write and a TTL deletion, in a shard GetRecords reads
    boto3.client("s3").create_bucket(Bucket="archive")
    records = [write_record("order#1", 1, T0 + 1), ttl_record("session#9", 2, T0 + 2)]
    reading(WireStream(orders, {SHARD: records}), monkeypatch, "hotkeys.cli.redrive_view")
    dead_letter(dlq, orders, SHARD, sequence_number(0, 1), sequence_number(0, 2))
    # When redriven (without the stack, the archive's prefix is given: redrive cannot know it)
    status, (result,) = redrive(stats_table_name, dlq, capsys, "--archive-bucket", "archive", "--archive-prefix", "ttl")
    # Then the write is counted as one, the TTL deletion as a TTL deletion, and it is archived
    assert result["unreadable"] is None, result["unreadable"]
    assert (status, result["malformed"]) == (0, [])
    (window,) = stored(Settings(stats_table_name=stats_table_name))
    assert (window.writes, window.ttl_deletes) == (1, 1)
    assert [key for key, _entry in window.ranked()] == ["order#1"]
    assert archived_event_ids("archive") == [records[1]["eventID"]]
    assert left_in(dlq) == 0


def test_redrive_counts_binary_attributes_read_from_moto_with_their_write_units(
    stats_table_name: str, orders: str, dlq: str, capsys: pytest.CaptureFixture
) -> None:
    # Given items with binary values at every depth, written to moto, whose stream a range covers
    table = boto3.resource("dynamodb").Table("orders")
    items = [blob_item(f"order#{i}", i) for i in range(3)]
    for item in items:
        table.put_item(Item=item)
    streams = boto3.client("dynamodbstreams")
    shard = streams.describe_stream(StreamArn=orders)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=orders, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    numbers = [
        r["dynamodb"]["SequenceNumber"] for r in streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    ]
    dead_letter(dlq, orders, shard, numbers[0], numbers[-1])
    # When redriven
    status, (result,) = redrive(stats_table_name, dlq, capsys)
    # Then none is malformed, and each is counted with its write units (2: 1,600 raw bytes of blob)
    assert status == 0 and result["malformed"] == [] and result["counted"] == 3
    (window,) = stored(Settings(stats_table_name=stats_table_name))
    assert {key: entry.wcu for key, entry in window.entries.items()} == {
        f"order#{i}": insert_units(item) for i, item in enumerate(items)
    }
    assert {insert_units(item) for item in items} == {2}


def test_redrive_keeps_a_range_an_open_shard_never_finishes(
    stats_table_name: str, orders: str, dlq: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # Given a dead-lettered range 1..5 of an open shard whose GetRecords gives 1..3, then only empty pages
    records = [write_record(f"order#{i}", i, T0 + i) for i in range(1, 4)]
    stream = WireStream(orders, {SHARD: records})
    reading(stream, monkeypatch, "hotkeys.cli.redrive_view")
    dead_letter(dlq, orders, SHARD, sequence_number(0, 1), sequence_number(0, 5))
    # When redriven
    status, (result,) = redrive(stats_table_name, dlq, capsys)
    # Then the range is reported as not fully read, with why; nothing is counted and the entry stays
    assert status == 1 and result["counted"] == 0
    assert result["unreadable"].startswith(f"range not fully read: shard {SHARD} is open")
    assert f"{EMPTY_PAGES_LIMIT} empty pages" in result["unreadable"]
    assert stored(Settings(stats_table_name=stats_table_name)) == []
    assert left_in(dlq) == 1
    # The reader asked as long as the bound allows, and no longer
    assert stream.calls.count("GetRecords") == 1 + EMPTY_PAGES_LIMIT


def test_redrive_reads_a_closed_shard_to_its_end(
    stats_table_name: str, orders: str, dlq: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # A closed shard "will not return any more data": what it gave is the whole range
    records = [write_record(f"order#{i}", i, T0 + i) for i in range(1, 4)]
    reading(WireStream(orders, {SHARD: records}, closed=[SHARD]), monkeypatch, "hotkeys.cli.redrive_view")
    dead_letter(dlq, orders, SHARD, sequence_number(0, 1), sequence_number(0, 5))
    status, (result,) = redrive(stats_table_name, dlq, capsys)
    assert status == 0 and (result["read"], result["counted"], result["unreadable"]) == (3, 3, None)
    assert left_in(dlq) == 0


# --- paging -------------------------------------------------------------------------------------


@pytest.fixture
def stubbed() -> Iterator[tuple[Any, Stubber]]:
    """A real dynamodbstreams client whose answers botocore validates against the service model."""
    client = boto3.client("dynamodbstreams", region_name="us-east-1", endpoint_url=NOWHERE)
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000"


def test_read_range_follows_an_empty_page_to_the_records(stubbed: tuple[Any, Stubber]) -> None:
    # Given a shard whose first GetRecords answer is empty, with a next iterator, before the records
    client, stubber = stubbed
    records = [write_record(f"order#{i}", i, T0 + i) for i in range(3)]
    first, last = sequence_number(0, 0), sequence_number(0, 2)
    stubber.add_response(
        "get_shard_iterator",
        {"ShardIterator": "iterator-0"},
        {"StreamArn": ARN, "ShardId": SHARD, "ShardIteratorType": "AT_SEQUENCE_NUMBER", "SequenceNumber": first},
    )
    stubber.add_response(
        "get_records", get_records_answer([], "iterator-1"), {"ShardIterator": "iterator-0", "Limit": 1000}
    )
    stubber.add_response(
        "get_records", get_records_answer(records, "iterator-2"), {"ShardIterator": "iterator-1", "Limit": 1000}
    )
    # When the range is read: all three records (and no call after the last one)
    read = list(read_range(client, ShardRange(ARN, SHARD, first, last)))
    assert [r["dynamodb"]["SequenceNumber"] for r in read] == [first, sequence_number(0, 1), last]


def test_read_range_stops_after_the_bound_of_empty_pages_and_says_so(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    records = [write_record("order#0", 0, T0)]
    stubber.add_response("get_shard_iterator", {"ShardIterator": "iterator-0"})
    stubber.add_response("get_records", get_records_answer(records, "iterator-1"))
    for page in range(1, EMPTY_PAGES_LIMIT + 1):
        stubber.add_response("get_records", get_records_answer([], f"iterator-{page + 1}"))
    read: list[dict[str, Any]] = []
    with pytest.raises(RangeNotRead, match=f"after {sequence_number(0, 0)} \\(read 1, end {sequence_number(0, 9)}"):
        read.extend(read_range(client, ShardRange(ARN, SHARD, sequence_number(0, 0), sequence_number(0, 9))))
    assert len(read) == 1


# --- watch --------------------------------------------------------------------------------------


def watch_json(capsys: pytest.CaptureFixture, table: str = "orders") -> list[dict[str, Any]]:
    arguments = ["watch", "--table", table, "--from", "trim-horizon", "--once", "--json", "--window-seconds", "900"]
    assert main(arguments) == 0
    return list(json.loads(capsys.readouterr().out)["rows"])


def test_watch_does_not_count_a_ttl_deletion_as_a_write(
    orders: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    records = [
        write_record("order#1", 1, T0 + 1),
        ttl_record("session#9", 2, T0 + 2),
        ttl_record("session#8", 3, T0 + 3),
    ]
    reading(WireStream(orders, {SHARD: records}), monkeypatch, "hotkeys.cli.watch_view")
    rows = watch_json(capsys)
    assert [(row["key"], row["writes"]) for row in rows] == [("order#1", 1)]


def test_watch_counts_binary_keys_and_attributes_with_their_write_units(
    aws: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # Given a table keyed by a binary attribute, and items with binary values at every depth
    dynamodb = boto3.client("dynamodb")
    dynamodb.create_table(
        TableName="blobs",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "B"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    arn = dynamodb.describe_table(TableName="blobs")["Table"]["LatestStreamArn"]
    keys = [b"\x01\x02\xff", b"\x00" * 30]
    records = [blob_record(keys[i % 2], i, table="blobs") for i in range(5)]
    reading(WireStream(arn, {SHARD: records}), monkeypatch, "hotkeys.cli.watch_view")
    # When watched: each key is its base64 text (as Lambda delivers it), with its exact write units
    rows = watch_json(capsys, "blobs")
    expected = {base64.b64encode(key).decode(): 0 for key in keys}
    for i in range(5):
        expected[base64.b64encode(keys[i % 2]).decode()] += insert_units(blob_item(keys[i % 2], i))
    assert {row["key"]: row["wcu"] for row in rows} == expected
    assert sorted(row["writes"] for row in rows) == [2, 3]


def test_watch_once_reads_past_empty_pages(
    orders: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # Given a shard whose iterators answer three empty pages before its records
    records = [write_record("order#1", i, T0 + i) for i in range(4)]
    reading(WireStream(orders, {SHARD: records}, empty_pages_before=3), monkeypatch, "hotkeys.cli.watch_view")
    # When watched once: the records after the empty pages are read
    assert [(row["key"], row["writes"]) for row in watch_json(capsys)] == [("order#1", 4)]


def test_the_wire_refuses_a_name_the_api_does_not_have() -> None:
    # The support code's guard: a record spelled our way cannot reach botocore unnoticed
    record = write_record("order#1", 1, T0)
    record["dynamodb"]["ApproximateCreationTime"] = T0
    with pytest.raises(ValueError, match="StreamRecord"):
        as_get_records([record])
