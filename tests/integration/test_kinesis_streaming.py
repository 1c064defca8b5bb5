"""The deploy-time Kinesis streaming destination (-c enableKinesis), as the provider framework drives it: turned on
with MICROSECOND precision and waited for, left as it is when on, set back on after a change outside the stack,
a failure named, and turned off on Delete (after a rollback too). moto 5.2.5 does not model Kinesis streaming
destinations: DynamoDB's answers come from botocore's Stubber, validated against the service model."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.detector.handlers.kinesis_streaming_app import is_complete, on_event
from hotkeys.detector.provisioning.kinesis_streaming import KinesisStreamingError

STREAM = "arn:aws:kinesis:us-east-1:123456789012:stream/HotKeyDetector-KinesisStream-1A2B3C"
OTHER_STREAM = "arn:aws:kinesis:us-east-1:123456789012:stream/someone-elses"
ENABLE = {"ApproximateCreationDateTimePrecision": "MICROSECOND"}


def request(kind: str, table: str = "orders", stream: str = STREAM, physical_id: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"RequestType": kind, "ResourceProperties": {"TableName": table, "StreamArn": stream}}
    if physical_id:
        event["PhysicalResourceId"] = physical_id
    return event


def destinations(table: str, *found: tuple[str, str, str | None]) -> dict[str, Any]:
    """DescribeKinesisStreamingDestination's answer: (stream, status, precision) per destination."""
    return {
        "TableName": table,
        "KinesisDataStreamDestinations": [
            {"StreamArn": arn, "DestinationStatus": status}
            | ({"ApproximateCreationDateTimePrecision": precision} if precision else {})
            for arn, status, precision in found
        ],
    }


class Dynamo:
    """A DynamoDB client whose answers are queued, each request checked against what the handler must send."""

    def __init__(self) -> None:
        self.client = boto3.client("dynamodb", region_name="us-east-1")
        self.stub = Stubber(self.client)

    def describe(self, table: str, *found: tuple[str, str, str | None]) -> None:
        self.stub.add_response(
            "describe_kinesis_streaming_destination", destinations(table, *found), {"TableName": table}
        )

    def expect(self, operation: str, table: str = "orders", stream: str = STREAM, status: str = "ENABLING") -> None:
        parameters: dict[str, Any] = {"TableName": table, "StreamArn": stream}
        if operation == "enable_kinesis_streaming_destination":
            parameters["EnableKinesisStreamingConfiguration"] = ENABLE
        if operation == "update_kinesis_streaming_destination":
            parameters["UpdateKinesisStreamingConfiguration"] = ENABLE
        self.stub.add_response(
            operation, {"TableName": table, "StreamArn": stream, "DestinationStatus": status}, parameters
        )

    @contextmanager
    def answering(self) -> Iterator[None]:
        with self.stub:
            yield
        self.stub.assert_no_pending_responses()


@pytest.fixture
def dynamo() -> Dynamo:
    return Dynamo()


def test_create_turns_streaming_on_with_microsecond_precision_and_waits_until_active(dynamo: Dynamo) -> None:
    dynamo.describe("orders")  # nothing streams yet
    dynamo.expect("enable_kinesis_streaming_destination")
    dynamo.describe("orders", (STREAM, "ENABLING", "MICROSECOND"))
    dynamo.describe("orders", (STREAM, "ACTIVE", "MICROSECOND"))
    with dynamo.answering():
        started = on_event(request("Create"), dynamodb=dynamo.client)
        assert started == {"PhysicalResourceId": f"kinesis-streaming:orders:{STREAM}"}
        event = request("Create", physical_id=started["PhysicalResourceId"])
        assert is_complete(event, dynamodb=dynamo.client) == {"IsComplete": False}
        assert is_complete(event, dynamodb=dynamo.client) == {"IsComplete": True}


def test_a_destination_already_on_is_left_as_it_is_and_another_streams_one_untouched(dynamo: Dynamo) -> None:
    # Given the table streaming to our stream already (a redeploy) and to someone else's
    dynamo.describe("orders", (OTHER_STREAM, "ACTIVE", "MILLISECOND"), (STREAM, "ACTIVE", "MICROSECOND"))
    dynamo.describe("orders", (OTHER_STREAM, "ACTIVE", "MILLISECOND"), (STREAM, "ACTIVE", "MICROSECOND"))
    # Then nothing is enabled or updated (the Stubber refuses any call not queued)
    with dynamo.answering():
        started = on_event(request("Update", physical_id=f"kinesis-streaming:orders:{STREAM}"), dynamodb=dynamo.client)
        assert started["PhysicalResourceId"] == f"kinesis-streaming:orders:{STREAM}"
        assert is_complete(request("Update"), dynamodb=dynamo.client) == {"IsComplete": True}


def test_a_destination_on_with_millisecond_precision_is_set_to_microsecond(dynamo: Dynamo) -> None:
    dynamo.describe("orders", (STREAM, "ACTIVE", "MILLISECOND"))
    dynamo.expect("update_kinesis_streaming_destination", status="UPDATING")
    dynamo.describe("orders", (STREAM, "UPDATING", "MILLISECOND"))
    dynamo.describe("orders", (STREAM, "ACTIVE", "MICROSECOND"))
    with dynamo.answering():
        on_event(request("Update"), dynamodb=dynamo.client)
        assert is_complete(request("Update"), dynamodb=dynamo.client) == {"IsComplete": False}
        assert is_complete(request("Update"), dynamodb=dynamo.client) == {"IsComplete": True}


def test_a_destination_turned_off_outside_the_stack_is_turned_on_by_the_next_deploy(dynamo: Dynamo) -> None:
    # Given someone disabled it (every deploy sends an Update: SynthesizedAt), while it was still DISABLING
    dynamo.describe("orders", (STREAM, "DISABLING", "MICROSECOND"))
    # Then the deploy waits until DISABLED, turns it on again, and waits until ACTIVE
    dynamo.describe("orders", (STREAM, "DISABLED", "MICROSECOND"))
    dynamo.expect("enable_kinesis_streaming_destination")
    dynamo.describe("orders", (STREAM, "ACTIVE", "MICROSECOND"))
    with dynamo.answering():
        on_event(request("Update"), dynamodb=dynamo.client)
        assert is_complete(request("Update"), dynamodb=dynamo.client) == {"IsComplete": False}
        assert is_complete(request("Update"), dynamodb=dynamo.client) == {"IsComplete": True}


def test_a_destination_dynamodb_could_not_enable_fails_the_deploy_naming_it(dynamo: Dynamo) -> None:
    dynamo.stub.add_response(
        "describe_kinesis_streaming_destination",
        {
            "TableName": "orders",
            "KinesisDataStreamDestinations": [
                {"StreamArn": STREAM, "DestinationStatus": "ENABLE_FAILED", "DestinationStatusDescription": "KMS"}
            ],
        },
        {"TableName": "orders"},
    )
    with dynamo.answering(), pytest.raises(KinesisStreamingError, match=r"could not stream table 'orders'.*: KMS"):
        is_complete(request("Create", physical_id=f"kinesis-streaming:orders:{STREAM}"), dynamodb=dynamo.client)


def test_a_missing_table_is_named(dynamo: Dynamo) -> None:
    dynamo.stub.add_client_error(
        "describe_kinesis_streaming_destination", "ResourceNotFoundException", "Requested resource not found"
    )
    with dynamo.answering(), pytest.raises(KinesisStreamingError, match="'orders' does not exist"):
        on_event(request("Create"), dynamodb=dynamo.client)


def test_changing_the_table_is_a_new_resource_and_the_old_ones_delete_turns_only_its_destination_off(
    dynamo: Dynamo,
) -> None:
    # Given a resource on orders, updated to users (-c tableNames=users): a new physical id...
    dynamo.describe("users")
    dynamo.expect("enable_kinesis_streaming_destination", table="users")
    with dynamo.answering():
        moved = on_event(request("Update", table="users"), dynamodb=dynamo.client)["PhysicalResourceId"]
    assert moved == f"kinesis-streaming:users:{STREAM}"
    # ...so CloudFormation's cleanup deletes the old one: orders' destination on our stream goes off, waited for,
    # and the table's other destination stays
    old = request("Delete", table="orders", physical_id=f"kinesis-streaming:orders:{STREAM}")
    dynamo.describe("orders", (OTHER_STREAM, "ACTIVE", None), (STREAM, "ACTIVE", "MICROSECOND"))
    dynamo.expect("disable_kinesis_streaming_destination", status="DISABLING")
    dynamo.describe("orders", (OTHER_STREAM, "ACTIVE", None), (STREAM, "DISABLING", "MICROSECOND"))
    dynamo.describe("orders", (OTHER_STREAM, "ACTIVE", None), (STREAM, "DISABLED", "MICROSECOND"))
    with dynamo.answering():
        assert on_event(old, dynamodb=dynamo.client) == {"PhysicalResourceId": old["PhysicalResourceId"]}
        assert is_complete(old, dynamodb=dynamo.client) == {"IsComplete": False}
        assert is_complete(old, dynamodb=dynamo.client) == {"IsComplete": False}
        assert is_complete(old, dynamodb=dynamo.client) == {"IsComplete": True}


def test_a_rollbacks_delete_waits_for_a_destination_still_enabling_then_turns_it_off(dynamo: Dynamo) -> None:
    # Given a create that failed while DynamoDB was still enabling (the waiter timed out: the framework answers
    # with this resource's id, so the rollback's Delete reaches the handler)
    event = request("Delete", physical_id=f"kinesis-streaming:orders:{STREAM}")
    dynamo.describe("orders", (STREAM, "ENABLING", "MICROSECOND"))  # DynamoDB refuses to disable it yet
    dynamo.describe("orders", (STREAM, "ACTIVE", "MICROSECOND"))
    dynamo.expect("disable_kinesis_streaming_destination", status="DISABLING")
    dynamo.describe("orders", (STREAM, "DISABLED", "MICROSECOND"))
    with dynamo.answering():
        assert is_complete(event, dynamodb=dynamo.client) == {"IsComplete": False}
        assert is_complete(event, dynamodb=dynamo.client) == {"IsComplete": False}
        assert is_complete(event, dynamodb=dynamo.client) == {"IsComplete": True}


@pytest.mark.parametrize("status", ["ENABLE_FAILED", "DISABLED", None])
def test_a_delete_with_nothing_on_changes_nothing(dynamo: Dynamo, status: str | None) -> None:
    dynamo.describe("orders", *([(STREAM, status, None)] if status else []))
    with dynamo.answering():
        assert is_complete(request("Delete"), dynamodb=dynamo.client) == {"IsComplete": True}


def test_a_delete_never_fails_the_stack_and_logs_the_command_when_refused(dynamo: Dynamo, log: Any) -> None:
    dynamo.describe("orders", (STREAM, "ACTIVE", "MICROSECOND"))
    dynamo.stub.add_client_error("disable_kinesis_streaming_destination", "AccessDeniedException", "denied")
    with dynamo.answering():
        assert is_complete(request("Delete"), dynamodb=dynamo.client) == {"IsComplete": True}
    assert "aws dynamodb disable-kinesis-streaming-destination --table-name orders" in log.getvalue()


def test_a_delete_of_a_table_gone_succeeds(dynamo: Dynamo) -> None:
    dynamo.stub.add_client_error("describe_kinesis_streaming_destination", "ResourceNotFoundException", "gone")
    with dynamo.answering():
        assert is_complete(request("Delete"), dynamodb=dynamo.client) == {"IsComplete": True}
