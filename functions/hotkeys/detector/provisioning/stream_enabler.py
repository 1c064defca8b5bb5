"""A table's NEW_AND_OLD_IMAGES stream, turned on and waited for until it is usable (``Custom::DynamoDBStream``).

It runs on create and on update (a new ``TableName`` is a new physical resource: the old table is left as
it was). It never disables a stream, also on delete: other consumers may depend on it. A stream that is
already on with another view type fails the deploy with the command that fixes it: a view type cannot be
changed in place, and a KEYS_ONLY or NEW_IMAGE stream would make every size key-only or one-sided.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import StreamSpecificationTypeDef, TableDescriptionTypeDef
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient

__all__ = ["VIEW_TYPE", "WrongStream", "enable", "usable_stream"]

VIEW_TYPE: Final = "NEW_AND_OLD_IMAGES"


class WrongStream(RuntimeError):
    """The table's stream cannot serve the detector; the message says what to do."""


def enable(dynamodb: DynamoDBClient, table: str) -> None:
    """Turn the table's stream on, or judge the one that is on already (``WrongStream`` if it cannot serve)."""
    specification = _stream(_table(dynamodb, table))
    if specification.get("StreamEnabled"):
        _require_full_images(table, specification.get("StreamViewType"))
    else:
        _enable(dynamodb, table)


def usable_stream(dynamodb: DynamoDBClient, streams: Callable[[], DynamoDBStreamsClient], table: str) -> str | None:
    """The ARN of the table's stream once it is ENABLED; None while it is not yet. ``streams`` makes the
    DynamoDB Streams client, only once the table names a stream."""
    description = _table(dynamodb, table)
    specification = _stream(description)
    arn = description.get("LatestStreamArn")
    if not specification.get("StreamEnabled") or not arn:
        return None
    _require_full_images(table, specification.get("StreamViewType"))
    status = streams().describe_stream(StreamArn=arn, Limit=1)["StreamDescription"]
    return str(arn) if status.get("StreamStatus") == "ENABLED" else None


def _table(dynamodb: DynamoDBClient, table: str) -> TableDescriptionTypeDef:
    try:
        return dynamodb.describe_table(TableName=table)["Table"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise WrongStream(f"table {table!r} does not exist in this account and region") from None
        raise


def _stream(description: TableDescriptionTypeDef) -> StreamSpecificationTypeDef:
    """The table's stream as DescribeTable specifies it (off where it names none)."""
    return description.get("StreamSpecification") or {"StreamEnabled": False}


def _enable(dynamodb: DynamoDBClient, table: str) -> None:
    try:
        dynamodb.update_table(TableName=table, StreamSpecification={"StreamEnabled": True, "StreamViewType": VIEW_TYPE})
    except ClientError:
        # Someone else enabled it meanwhile (DynamoDB: ValidationException "already has an enabled
        # stream"; other implementations: ResourceInUseException): judge the stream that is there.
        specification = _stream(_table(dynamodb, table))
        if not specification.get("StreamEnabled"):
            raise
        _require_full_images(table, specification.get("StreamViewType"))


def _require_full_images(table: str, view_type: str | None) -> None:
    if view_type != VIEW_TYPE:
        raise WrongStream(
            f"table {table!r} already has a {view_type} stream; the detector needs {VIEW_TYPE} (item sizes and "
            "the TTL archive come from the images). A view type cannot be changed in place: if nothing else "
            f"reads that stream, run `aws dynamodb update-table --table-name {table} --stream-specification "
            "StreamEnabled=false` and deploy again (the stack then enables NEW_AND_OLD_IMAGES)"
        )
