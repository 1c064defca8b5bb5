"""A failed update rolled back keeps every stream read: the Delete CloudFormation sends for a mapping the failed
update created keeps that mapping when the stack goes back to an earlier release's ``AWS::Lambda::EventSourceMapping``
whose mapping the create displaced (moto's Lambda; CloudFormation's answers from botocore's Stubber, validated
against its model; statuses as its user guide lists them)."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.deployment import EARLIER_MAPPING_TYPE, STREAM_MAPPING_TYPE
from hotkeys.detector.handlers.stream_mapping_app import on_event
from tests.integration.test_stream_mapping import Sleeps, World, properties, request

STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/HotKeyDetector/0f1e2d3c-aaaa-bbbb-cccc-123456789012"


def _template(earlier: dict[str, str]) -> str:
    """The earlier release's template as GetTemplate returns it: each mapping resource (logical id → its
    stream ARN, or ``enabler:TABLE`` for one on a stream the stack turned on: a GetAtt of its enabler)."""
    resources: dict[str, Any] = {}
    for logical_id, stream in earlier.items():
        if stream.startswith("enabler:"):
            enabler = f"Stream{logical_id}"
            resources[enabler] = {"Type": "Custom::DynamoDBStream", "Properties": {"TableName": stream[8:]}}
            source: Any = {"Fn::GetAtt": [enabler, "StreamArn"]}
        else:
            source = stream
        resources[logical_id] = {
            "Type": EARLIER_MAPPING_TYPE,
            "Properties": {"FunctionName": {"Ref": "Consumer"}, "EventSourceArn": source, "StartingPosition": "LATEST"},
        }
    return json.dumps({"Resources": resources})


def _cloudformation(
    status: str,
    resources: list[tuple[str, str, str]],
    readable: bool = True,
    earlier: dict[str, str] | None = None,
) -> tuple[Any, Stubber]:
    client = boto3.client("cloudformation", region_name="us-east-1")
    stubs = Stubber(client)
    if not readable:
        stubs.add_client_error("describe_stacks", "AccessDenied", "not authorized", 403)
        stubs.activate()
        return client, stubs
    stubs.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "HotKeyDetector",
                    "StackId": STACK_ID,
                    "CreationTime": "2026-12-01T00:00:00Z",
                    "StackStatus": status,
                }
            ]
        },
        {"StackName": STACK_ID},
    )
    if "ROLLBACK" in status and status.startswith("UPDATE"):
        summaries = [
            {
                "LogicalResourceId": logical,
                "PhysicalResourceId": physical,
                "ResourceType": kind,
                "LastUpdatedTimestamp": "2026-12-01T00:00:00Z",
                "ResourceStatus": "UPDATE_COMPLETE",
            }
            for logical, kind, physical in resources
        ]
        stubs.add_response("list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": STACK_ID})
        if earlier is not None:
            stubs.add_response(
                "get_template",
                {"TemplateBody": _template(earlier)},
                {"StackName": STACK_ID, "TemplateStage": "Original"},
            )
    stubs.activate()
    return client, stubs


def _delete(world: World, props: dict[str, Any], uuid: str, cloudformation: Any) -> None:
    event = request("Delete", props, physical=uuid) | {"StackId": STACK_ID}
    on_event(event, lambda_client=world.client, sleep=Sleeps(), cloudformation=cloudformation)


def _readers(world: World, stream: str) -> list[str]:
    return [m["UUID"] for m in world.mappings(stream) if m["FunctionArn"] == world.detector]


CLEANUP = "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS"


def _given_arn(stream: str) -> str:
    return stream


def _turned_on(stream: str) -> str:
    return "enabler:" + stream.split(":table/", 1)[1].split("/stream/", 1)[0]


@pytest.mark.parametrize("form", [_given_arn, _turned_on], ids=["tableStreamArns", "enableStream"])
@pytest.mark.parametrize("status", ["UPDATE_ROLLBACK_IN_PROGRESS", CLEANUP])
def test_a_rolled_back_upgrade_keeps_the_mapping_that_displaced_the_earlier_releases(
    aws: None, log: io.StringIO, status: str, form: Any
) -> None:
    world = World()
    # Given the earlier release's mapping (its AWS::Lambda::EventSourceMapping), displaced by the upgrade's create
    earlier = world.by_hand(world.detector, world.orders, StartingPosition="LATEST")
    props = properties(world.detector, world.orders)
    created = str(on_event(request("Create", props), lambda_client=world.client, sleep=Sleeps())["PhysicalResourceId"])
    assert world.gone(earlier)
    # When the update fails elsewhere and CloudFormation deletes what it created, going back to the earlier
    # template (whose resource still names the displaced mapping)
    stack = [("ConsumerEventSource", EARLIER_MAPPING_TYPE, earlier), ("Consumer", "AWS::Lambda::Function", "f")]
    cloudformation, stubs = _cloudformation(status, stack, earlier={"ConsumerEventSource": form(world.orders)})
    _delete(world, props, created, cloudformation)
    # Then the stream is still read, by exactly one mapping of the consumer
    assert _readers(world, world.orders) == [created]
    stubs.assert_no_pending_responses()
    assert "rollback to an earlier release: the event source mapping is kept" in log.getvalue()


@pytest.mark.parametrize(
    ("status", "earlier_gone"),
    [
        (CLEANUP, False),  # a rolled-back update that displaced nothing of the stack's (a table it added)
        ("DELETE_IN_PROGRESS", True),  # the stack's delete
        ("UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", True),  # a successful update's cleanup (a table removed)
    ],
    ids=["rollback, nothing displaced", "stack delete", "update cleanup"],
)
def test_every_other_delete_deletes_the_mapping(aws: None, status: str, earlier_gone: bool) -> None:
    world = World()
    props = properties(world.detector, world.orders)
    created = str(on_event(request("Create", props), lambda_client=world.client, sleep=Sleeps())["PhysicalResourceId"])
    # (the stack's other table, read by an earlier release's mapping that is still there unless said otherwise)
    other = world.by_hand(world.detector, world.payments, StartingPosition="LATEST")
    if earlier_gone:
        world.lambda_.delete_event_source_mapping(UUID=other)
    cloudformation, _ = _cloudformation(status, [("PaymentsEventSource", EARLIER_MAPPING_TYPE, other)])
    _delete(world, props, created, cloudformation)
    assert _readers(world, world.orders) == [] and world.gone(created)


def test_a_stack_that_cannot_be_read_deletes_as_before_and_says_why(aws: None, log: io.StringIO) -> None:
    world = World()
    props = properties(world.detector, world.orders)
    created = str(on_event(request("Create", props), lambda_client=world.client, sleep=Sleeps())["PhysicalResourceId"])
    cloudformation, _ = _cloudformation(CLEANUP, [], readable=False)
    _delete(world, props, created, cloudformation)
    assert world.gone(created) and "could not read the stack: the mapping is deleted" in log.getvalue()


def test_the_stacks_own_mappings_are_not_earlier_ones(aws: None) -> None:
    # A rolled-back update whose stack holds only this release's mappings (one of them gone from Lambda): deleted
    world = World()
    props = properties(world.detector, world.orders)
    created = str(on_event(request("Create", props), lambda_client=world.client, sleep=Sleeps())["PhysicalResourceId"])
    gone = "11111111-2222-3333-4444-555555555555"
    cloudformation, _ = _cloudformation(CLEANUP, [("MappingUsers", STREAM_MAPPING_TYPE, gone)])
    _delete(world, props, created, cloudformation)
    assert world.gone(created)


@pytest.mark.parametrize("form", [_given_arn, _turned_on], ids=["tableStreamArns", "enableStream"])
def test_a_table_the_failed_upgrade_added_is_unmapped_though_another_tables_mapping_was_displaced(
    aws: None, form: Any
) -> None:
    world = World()
    # Given an upgrade that moved payments' mapping (the earlier one displaced) and added orders
    earlier = world.by_hand(world.detector, world.payments, StartingPosition="LATEST")
    on_event(request("Create", properties(world.detector, world.payments)), lambda_client=world.client, sleep=Sleeps())
    props = properties(world.detector, world.orders)
    created = str(on_event(request("Create", props), lambda_client=world.client, sleep=Sleeps())["PhysicalResourceId"])
    # When the update rolls back: orders' Delete, the stack back on a template that watches payments only
    stack = [("PaymentsEventSource", EARLIER_MAPPING_TYPE, earlier)]
    cloudformation, stubs = _cloudformation(CLEANUP, stack, earlier={"PaymentsEventSource": form(world.payments)})
    _delete(world, props, created, cloudformation)
    # Then orders is no longer read (nothing the stack goes back to watches it), and payments still is
    assert _readers(world, world.orders) == [] and len(_readers(world, world.payments)) == 1
    stubs.assert_no_pending_responses()


def test_an_earlier_resource_the_template_does_not_describe_keeps_the_mapping(aws: None) -> None:
    # (GetTemplate's answer names no such resource: a reader too many rather than a stream unread)
    world = World()
    earlier = world.by_hand(world.detector, world.orders, StartingPosition="LATEST")
    props = properties(world.detector, world.orders)
    created = str(on_event(request("Create", props), lambda_client=world.client, sleep=Sleeps())["PhysicalResourceId"])
    cloudformation, _ = _cloudformation(CLEANUP, [("Gone", EARLIER_MAPPING_TYPE, earlier)], earlier={})
    _delete(world, props, created, cloudformation)
    assert _readers(world, world.orders) == [created]
