"""The stats table's shape, shared by its adapters, the CDK construct and the local replay's copy of it."""

from __future__ import annotations

from botocore.exceptions import ClientError

PARTITION_KEY = "pk"  # string
SORT_KEY = "sk"  # string
TTL_ATTRIBUTE = "expires_at"  # epoch seconds; DynamoDB's TTL removes expired figures and incidents


def is_conditional_check_failure(error: ClientError) -> bool:
    """A conditional write lost to a newer or concurrent one: expected, not an error."""
    return bool(error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")
