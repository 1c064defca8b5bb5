"""Deploy-time custom resource: turn on a table's NEW_AND_OLD_IMAGES stream and wait until it is usable.

Used by the CDK provider framework (``on_event`` starts, ``is_complete`` is polled until
the stream is ENABLED). It runs on create and on update (a new ``TableName`` is a new
physical resource: the old table is left as it was). It never disables a stream, also on
delete: other consumers may depend on it. A stream that is already on with another view
type fails the deploy with the command that fixes it: a view type cannot be changed in
place, and a KEYS_ONLY or NEW_IMAGE stream would make every size key-only or one-sided.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from botocore.exceptions import ClientError

from hotkeys.detector.adapters.aws import AwsClients

VIEW_TYPE = "NEW_AND_OLD_IMAGES"


@cache  # one set of clients per container
def _clients() -> AwsClients:
    return AwsClients()


class WrongStream(RuntimeError):
    """The table's stream cannot serve the detector; the message says what to do."""


def on_event(event: dict[str, Any], _context: Any = None, dynamodb: Any = None) -> dict[str, Any]:
    table = str(event["ResourceProperties"]["TableName"])
    physical_id = f"stream-{table}"
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", physical_id)}
    dynamodb = dynamodb or _clients().client("dynamodb")
    specification = _table(dynamodb, table).get("StreamSpecification") or {}
    if specification.get("StreamEnabled"):
        _require_full_images(table, specification.get("StreamViewType"))
    else:
        _enable(dynamodb, table)
    return {"PhysicalResourceId": physical_id}


def is_complete(
    event: dict[str, Any], _context: Any = None, dynamodb: Any = None, streams: Any = None
) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    table = str(event["ResourceProperties"]["TableName"])
    description = _table(dynamodb or _clients().client("dynamodb"), table)
    specification = description.get("StreamSpecification") or {}
    arn = description.get("LatestStreamArn")
    if not specification.get("StreamEnabled") or not arn:
        return {"IsComplete": False}
    _require_full_images(table, specification.get("StreamViewType"))
    streams = streams or _clients().client("dynamodbstreams")
    status = streams.describe_stream(StreamArn=arn, Limit=1)["StreamDescription"]
    if status.get("StreamStatus") != "ENABLED":
        return {"IsComplete": False}
    return {"IsComplete": True, "Data": {"StreamArn": arn}}


def _table(dynamodb: Any, table: str) -> dict[str, Any]:
    try:
        return dict(dynamodb.describe_table(TableName=table)["Table"])
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise WrongStream(f"table {table!r} does not exist in this account and region") from None
        raise


def _enable(dynamodb: Any, table: str) -> None:
    try:
        dynamodb.update_table(TableName=table, StreamSpecification={"StreamEnabled": True, "StreamViewType": VIEW_TYPE})
    except ClientError:
        # Someone else enabled it meanwhile (DynamoDB: ValidationException "already has an enabled
        # stream"; other implementations: ResourceInUseException): judge the stream that is there.
        specification = _table(dynamodb, table).get("StreamSpecification") or {}
        if not specification.get("StreamEnabled"):
            raise
        _require_full_images(table, specification.get("StreamViewType"))


def _require_full_images(table: str, view_type: Any) -> None:
    if view_type != VIEW_TYPE:
        raise WrongStream(
            f"table {table!r} already has a {view_type} stream; the detector needs {VIEW_TYPE} (item sizes and "
            "the TTL archive come from the images). A view type cannot be changed in place: if nothing else "
            f"reads that stream, run `aws dynamodb update-table --table-name {table} --stream-specification "
            "StreamEnabled=false` and deploy again (the stack then enables NEW_AND_OLD_IMAGES)"
        )
