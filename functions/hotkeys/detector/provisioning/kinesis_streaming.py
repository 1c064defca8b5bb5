"""A table's Kinesis streaming destination (Kinesis Data Streams for DynamoDB), turned on at deploy time and off
with the resource (``Custom::KinesisStreaming``, -c enableKinesis).

The stack creates the Kinesis data stream, so whatever streams to it is the stack's doing: a Delete turns the
destination off, and a deleted stack leaves the table as it was before (streaming to no stream of the stack's).

* Create and Update (``start``): the destination is turned on with ApproximateCreationDateTimePrecision
  MICROSECOND unless it is on already (idempotent: a redeploy, a rollback's Update back to it); one on with
  another precision is set to MICROSECOND. ``settle`` is then polled until it is ACTIVE; one that DynamoDB
  could not enable (ENABLE_FAILED) fails the deploy with its reason. The physical id names the table and the
  stream, so an Update to another table or stream is a new resource: CloudFormation's cleanup then sends the
  old one a Delete, which turns the old destination off (and a rollback's cleanup turns off the new one).
* Every deploy sends an Update (``SynthesizedAt``): a destination turned off outside the stack is turned on again.
* Delete (``settle`` with ``deleting``): a destination still ENABLING or UPDATING is waited for (DynamoDB refuses to
  disable it then), an ACTIVE one is disabled and waited for until DISABLED. It never fails the stack: a table
  gone has nothing to turn off, and a call refused is logged with the command that does it (a teardown must not
  hang on a table the stack does not own).

Both run in the provider framework: ``start`` in ``on_event``, ``settle`` in ``is_complete``. A failure in
``settle`` is answered with this resource's physical id, so the rollback's Delete reaches it and turns off
what the create turned on; ``start`` changes nothing when it fails (its one change is its last call).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from botocore.exceptions import ClientError

from hotkeys.deployment import KINESIS_STREAMING_ID_PREFIX
from hotkeys.detector.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["PRECISION", "Destination", "KinesisStreamingError", "physical_id", "settle", "start"]

PRECISION: Final = "MICROSECOND"
ID_PREFIX: Final = KINESIS_STREAMING_ID_PREFIX
# DescribeKinesisStreamingDestination's DestinationStatus values, by what the resource does with them.
ON = ("ACTIVE",)
MOVING = ("ENABLING", "UPDATING", "DISABLING")
FAILED = "ENABLE_FAILED"


class KinesisStreamingError(RuntimeError):
    """Kinesis streaming could not be turned on; the message names the table, the stream and the way out."""


@dataclass(frozen=True)
class Destination:
    """One table streaming its changes to one Kinesis data stream."""

    table: str
    stream_arn: str

    @property
    def disable_command(self) -> str:
        return (
            f"aws dynamodb disable-kinesis-streaming-destination --table-name {self.table} "
            f"--stream-arn {self.stream_arn}"
        )


@dataclass(frozen=True)
class State:
    """The destination as DynamoDB describes it (``status`` None: the table names no such destination)."""

    status: str | None
    precision: str | None = None
    reason: str | None = None


def physical_id(destination: Destination) -> str:
    # Table names are at most 255 characters, stream ARNs about 300: far under CloudFormation's 1 KB.
    return f"{ID_PREFIX}:{destination.table}:{destination.stream_arn}"


def state(dynamodb: DynamoDBClient, destination: Destination) -> State:
    """The table's destination on the stream; ``KinesisStreamingError`` if the table does not exist."""
    try:
        described = dynamodb.describe_kinesis_streaming_destination(TableName=destination.table)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise KinesisStreamingError(
                f"table {destination.table!r} does not exist in this account and region"
            ) from None
        raise
    for found in described.get("KinesisDataStreamDestinations", []):
        if found.get("StreamArn") == destination.stream_arn:
            return State(
                found.get("DestinationStatus"),
                found.get("ApproximateCreationDateTimePrecision"),
                found.get("DestinationStatusDescription"),
            )
    return State(None)


def start(dynamodb: DynamoDBClient, destination: Destination) -> str:
    """Turn the destination on (Create, Update) unless it is on or on its way; the resource's physical id."""
    current = state(dynamodb, destination)
    if current.status in ON and current.precision not in (None, PRECISION):
        logger.info(
            "Kinesis streaming destination on with another precision: setting it",
            extra={"table": destination.table, "precision": current.precision},
        )
        dynamodb.update_kinesis_streaming_destination(
            TableName=destination.table,
            StreamArn=destination.stream_arn,
            UpdateKinesisStreamingConfiguration={"ApproximateCreationDateTimePrecision": PRECISION},
        )
    elif current.status not in (*ON, *MOVING):
        _enable(dynamodb, destination)
    # (DISABLING, after a rollback or a delete outside the stack: settle turns it on again once DISABLED)
    return physical_id(destination)


def _enable(dynamodb: DynamoDBClient, destination: Destination) -> None:
    dynamodb.enable_kinesis_streaming_destination(
        TableName=destination.table,
        StreamArn=destination.stream_arn,
        EnableKinesisStreamingConfiguration={"ApproximateCreationDateTimePrecision": PRECISION},
    )


def settle(dynamodb: DynamoDBClient, destination: Destination, deleting: bool) -> bool:
    """Whether the destination is where the request wants it (ACTIVE; off when ``deleting``), doing the next
    step toward it when it is not: polled until True."""
    if deleting:
        return _settle_off(dynamodb, destination)
    current = state(dynamodb, destination)
    if current.status == FAILED:
        raise KinesisStreamingError(
            f"DynamoDB could not stream table {destination.table!r} to {destination.stream_arn}: "
            f"{current.reason or 'ENABLE_FAILED'}. Fix the cause (the table's limit of Kinesis destinations, the "
            "stream's key) and deploy again, or deploy without -c enableKinesis"
        )
    if current.status in (None, "DISABLED"):
        _enable(dynamodb, destination)  # it was DISABLING when the request started (or was turned off since)
        return False
    return current.status in ON


def _settle_off(dynamodb: DynamoDBClient, destination: Destination) -> bool:
    try:
        current = state(dynamodb, destination)
        if current.status in ON:
            dynamodb.disable_kinesis_streaming_destination(
                TableName=destination.table, StreamArn=destination.stream_arn
            )
            return False
    except KinesisStreamingError as error:
        logger.info("table gone: no Kinesis streaming to turn off", extra={"reason": str(error)})
        return True
    except ClientError as error:
        logger.warning(
            "Kinesis streaming destination left on at delete",
            extra={"table": destination.table, "reason": str(error), "command": destination.disable_command},
        )
        return True
    return current.status not in MOVING
