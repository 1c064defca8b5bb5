"""Deploy-time custom resource (``Custom::DynamoDBStream``): a table's NEW_AND_OLD_IMAGES stream, on.

Used by the CDK provider framework (``on_event`` starts, ``is_complete`` is polled until the stream is
ENABLED). This handler reads the request, makes the clients and answers; what is done to the table, and
why, is ``provisioning.stream_enabler``'s.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.provisioning.stream_enabler import enable, usable_stream

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient

__all__ = ["is_complete", "on_event"]


@cache  # one set of clients per container
def _clients() -> AwsClients:
    return AwsClients()


def on_event(event: dict[str, Any], _context: Any = None, dynamodb: DynamoDBClient | None = None) -> dict[str, Any]:
    table = str(event["ResourceProperties"]["TableName"])
    physical_id = f"stream-{table}"
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", physical_id)}
    enable(dynamodb or _clients().client("dynamodb"), table)
    return {"PhysicalResourceId": physical_id}


def is_complete(
    event: dict[str, Any],
    _context: Any = None,
    dynamodb: DynamoDBClient | None = None,
    streams: DynamoDBStreamsClient | None = None,
) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    table = str(event["ResourceProperties"]["TableName"])
    arn = usable_stream(
        dynamodb or _clients().client("dynamodb"), lambda: streams or _clients().client("dynamodbstreams"), table
    )
    if arn is None:
        return {"IsComplete": False}
    return {"IsComplete": True, "Data": {"StreamArn": arn}}
