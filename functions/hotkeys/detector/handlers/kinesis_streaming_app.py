"""Deploy-time custom resource (``Custom::KinesisStreaming``): a table's changes streamed to the stack's Kinesis
data stream (-c enableKinesis).

Used by the CDK provider framework (``on_event`` starts, ``is_complete`` is polled until the destination is ACTIVE,
or off for a Delete). This handler reads the request, makes the client and answers; what is done to the table,
and why, is ``provisioning.kinesis_streaming``'s.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.provisioning.kinesis_streaming import Destination, physical_id, settle, start

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["is_complete", "on_event"]


@cache  # one set of clients per container
def _clients() -> AwsClients:
    return AwsClients()


def _destination(event: dict[str, Any]) -> Destination:
    properties = event["ResourceProperties"]
    return Destination(str(properties["TableName"]), str(properties["StreamArn"]))


def on_event(event: dict[str, Any], _context: Any = None, dynamodb: DynamoDBClient | None = None) -> dict[str, Any]:
    destination = _destination(event)
    if event["RequestType"] == "Delete":
        # (the disable is is_complete's: it waits for a destination still ENABLING first)
        return {"PhysicalResourceId": event.get("PhysicalResourceId", physical_id(destination))}
    return {"PhysicalResourceId": start(dynamodb or _clients().client("dynamodb"), destination)}


def is_complete(event: dict[str, Any], _context: Any = None, dynamodb: DynamoDBClient | None = None) -> dict[str, Any]:
    deleting = event["RequestType"] == "Delete"
    done = settle(dynamodb or _clients().client("dynamodb"), _destination(event), deleting)
    return {"IsComplete": done}
