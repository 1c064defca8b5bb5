"""The whole path on moto: boto3 writes → stream → Lambda-shaped records → handler → `hotkeys top --json`."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from hotkeys.cli.main import main
from hotkeys.cli.replay import FakeLambdaContext
from hotkeys.deployment import EVENT_SOURCE
from hotkeys.detector.domain.sizing import image_size, write_units
from hotkeys.emulator.esm import ShardConsumer
from hotkeys.emulator.events import shape_stream_record


def read_stream(table: str) -> list[dict[str, Any]]:
    dynamodb, streams = boto3.client("dynamodb"), boto3.client("dynamodbstreams")
    arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    raws = streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]
    return [shape_stream_record(raw, arn) for raw in raws]


def test_writes_through_the_stream_show_up_in_top(
    stats_table_name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # Given a table with a composite key and a stream, written through boto3: one busy tenant
    dynamodb = boto3.client("dynamodb")
    dynamodb.create_table(
        TableName="events",
        KeySchema=[{"AttributeName": "tenant", "KeyType": "HASH"}, {"AttributeName": "id", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "tenant", "AttributeType": "S"},
            {"AttributeName": "id", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    table = boto3.resource("dynamodb").Table("events")
    for i in range(40):
        table.put_item(Item={"tenant": "acme", "id": i, "payload": "p" * 2500})
    for i in range(10):
        table.put_item(Item={"tenant": f"small-{i}", "id": i, "payload": "q"})
    table.put_item(Item={"tenant": "acme", "id": 0, "payload": "p" * 100})  # an update that shrinks the item
    # When its stream is read, shaped into the Lambda format and fed to the handler by the mapping emulation
    records = read_stream("events")
    assert len(records) == 51 and ":table/events/stream/" in records[0]["eventSourceARN"]
    assert all(isinstance(r["dynamodb"]["ApproximateCreationDateTime"], int) for r in records)
    from hotkeys.detector.adapters.aws import AwsClients
    from hotkeys.detector.handlers.app import build_handler, container_from

    handler = build_handler(lambda: container_from({"STATS_TABLE_NAME": stats_table_name}, AwsClients()))
    ShardConsumer(lambda event: handler(event, FakeLambdaContext()), "shardId-0001", EVENT_SOURCE).consume(records)
    # Then `hotkeys top --json` names the busy tenant (its hash key, found with DescribeTable)
    assert main(["top", "--stats-table", stats_table_name, "--table", "events", "--since", "2000-01-01", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["key"] == "acme" and rows[0]["writes"] == 41
    # with its write units by DynamoDB's size rules: 3 WCU per 2.5 KB item, the update costs its larger image
    full = write_units(image_size({"tenant": {"S": "acme"}, "id": {"N": "1"}, "payload": {"S": "p" * 2500}}))
    assert full == 3 and rows[0]["wcu"] == 40 * 3 + 3
    assert {row["key"] for row in rows[1:]} == {f"small-{i}" for i in range(9)}  # top 10 by default
    assert sum(row["share"] for row in rows) <= 1.0
