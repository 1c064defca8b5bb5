"""The deploy-time stream enabler against moto: enables, waits, refuses the wrong view type, never disables."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.detector.handlers.stream_enabler_app import is_complete, on_event
from hotkeys.detector.provisioning.stream_enabler import WrongStream
from tests.support import create_source_table


def create_table(name: str, view: str | None = None) -> None:
    create_source_table(name, view)


def request(kind: str, table: str, physical_id: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"RequestType": kind, "ResourceProperties": {"TableName": table}}
    if physical_id:
        event["PhysicalResourceId"] = physical_id
    return event


def deploy(kind: str, table: str, physical_id: str | None = None) -> dict[str, Any]:
    """What the provider framework does: on_event once, then is_complete until it says so."""
    dynamodb, streams = boto3.client("dynamodb"), boto3.client("dynamodbstreams")
    started = on_event(request(kind, table, physical_id), dynamodb=dynamodb)
    for _ in range(5):
        done = is_complete(request(kind, table, started["PhysicalResourceId"]), dynamodb=dynamodb, streams=streams)
        if done["IsComplete"]:
            return {**started, **done}
    raise AssertionError("never completed")


def stream_of(table: str) -> dict[str, Any]:
    return dict(boto3.client("dynamodb").describe_table(TableName=table)["Table"].get("StreamSpecification") or {})


def test_create_turns_the_stream_on_and_returns_its_arn_once_enabled(aws: None) -> None:
    create_table("orders")
    result = deploy("Create", "orders")
    assert stream_of("orders") == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert (
        result["Data"]["StreamArn"]
        == boto3.client("dynamodb").describe_table(TableName="orders")["Table"]["LatestStreamArn"]
    )


def test_an_existing_full_stream_is_used_as_it_is(aws: None) -> None:
    create_table("orders", "NEW_AND_OLD_IMAGES")
    before = boto3.client("dynamodb").describe_table(TableName="orders")["Table"]["LatestStreamArn"]
    assert deploy("Create", "orders")["Data"]["StreamArn"] == before


@pytest.mark.parametrize("view", ["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE"])
def test_a_stream_of_another_view_type_fails_the_deploy_with_the_fix(aws: None, view: str) -> None:
    create_table("orders", view)
    with pytest.raises(WrongStream, match=rf"already has a {view} stream.*update-table --table-name orders"):
        deploy("Create", "orders")
    assert stream_of("orders")["StreamViewType"] == view  # left as it was


def test_changing_the_table_enables_the_new_one_and_leaves_the_old_one(aws: None) -> None:
    # Given a stack deployed for table A, updated to watch table B (-c tableName=B)
    create_table("a")
    create_table("b")
    first = deploy("Create", "a")
    second = deploy("Update", "b", physical_id=first["PhysicalResourceId"])
    # Then B's stream is on under a new physical id (CloudFormation then deletes the old resource)...
    assert stream_of("b")["StreamEnabled"] is True and second["PhysicalResourceId"] != first["PhysicalResourceId"]
    # ...and that delete never disables A's stream
    on_event(request("Delete", "a", first["PhysicalResourceId"]), dynamodb=boto3.client("dynamodb"))
    assert stream_of("a")["StreamEnabled"] is True


def test_a_missing_table_is_named(aws: None) -> None:
    with pytest.raises(WrongStream, match="'nope' does not exist"):
        deploy("Create", "nope")


def test_it_waits_while_the_stream_is_still_enabling(aws: None) -> None:
    # moto enables streams at once; real DynamoDB reports ENABLING first: stub that answer
    create_table("orders", "NEW_AND_OLD_IMAGES")
    arn = boto3.client("dynamodb").describe_table(TableName="orders")["Table"]["LatestStreamArn"]
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    description = {"StreamArn": arn, "StreamStatus": "ENABLING", "StreamViewType": "NEW_AND_OLD_IMAGES", "Shards": []}
    with Stubber(streams) as stub:
        stub.add_response("describe_stream", {"StreamDescription": description}, {"StreamArn": arn, "Limit": 1})
        stub.add_response(
            "describe_stream",
            {"StreamDescription": {**description, "StreamStatus": "ENABLED"}},
            {"StreamArn": arn, "Limit": 1},
        )
        event = request("Create", "orders", "stream-orders")
        assert is_complete(event, dynamodb=boto3.client("dynamodb"), streams=streams) == {"IsComplete": False}
        assert is_complete(event, dynamodb=boto3.client("dynamodb"), streams=streams)["IsComplete"] is True
