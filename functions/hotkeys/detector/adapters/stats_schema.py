"""The stats table's shape, shared by its adapters, the CDK construct and the local replay's copy of it."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

PARTITION_KEY = "pk"  # string
SORT_KEY = "sk"  # string
TTL_ATTRIBUTE = "expires_at"  # epoch seconds; DynamoDB's TTL removes expired figures and incidents
# The global secondary index that gathers a table's segment heads (snapshots.head_of) under one key in
# window order, so the judge reads a window, or a few consecutive ones, of any number of shards with
# one Query (docs/decisions.md §49).
HEADS_INDEX = "window-heads"
HEADS_PARTITION_KEY = "heads_pk"  # string: the source table's name
HEADS_SORT_KEY = "heads_sk"  # string: "<window_start:012d>#<shard>#<origin>"
# What the index copies of a snapshot: its head and the names it needs (never the full summaries).
HEADS_ATTRIBUTES = ("head", "table_name", "window_start", "window_seconds", "shard_id", "instance_closed")


def stored_seconds(seconds: float) -> Decimal:
    """A time or duration in seconds as the stats table stores it (a Number, to the millisecond)."""
    return Decimal(str(round(seconds, 3)))


def stored_number(value: object) -> Decimal | int | float:
    """A Number attribute as read (the Table resource reads one as a Decimal), out of the union of every
    attribute's type that a typed read gives; TypeError for anything else, as int() and float() raise."""
    if isinstance(value, Decimal | int | float):
        return value
    raise TypeError(f"not a Number attribute: {value!r}")


def put_new(table: Table, item: dict[str, Any]) -> bool:
    """Write ``item`` unless its key holds one already (a claim): whether this call wrote it."""
    try:
        table.put_item(Item=item, ConditionExpression=f"attribute_not_exists({PARTITION_KEY})")
    except ClientError as error:
        if is_conditional_check_failure(error):
            return False
        raise
    return True


def is_conditional_check_failure(error: ClientError) -> bool:
    """A conditional write lost to a newer or concurrent one: expected, not an error."""
    return bool(error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


def query_all(table: Table, **kwargs: Any) -> list[dict[str, Any]]:
    """Every item a Query matches, page after page (a boto3 Table resource)."""
    items: list[dict[str, Any]] = []
    while True:
        page = table.query(**kwargs)
        items.extend(page.get("Items", []))
        last = page.get("LastEvaluatedKey")
        if not last:
            return items
        kwargs["ExclusiveStartKey"] = last
