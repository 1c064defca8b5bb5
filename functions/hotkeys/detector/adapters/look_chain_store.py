"""The judge's chain of looks (``alerts.look_chain``): claims in the stats table, messages on its queue."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from hotkeys.detector.adapters.stats_schema import PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE, is_conditional_check_failure

# A claim is kept an hour (DynamoDB's TTL removes it after): a wake-up for that look is long over by then.
CLAIM_RETENTION_SECONDS = 3600
# SQS's longest message delay.
MAX_DELAY_SECONDS = 900


class DynamoLookClaims:
    """Item: PK ``LOOK#<due>``, SK ``claim``: a partition key per look (no hot key of our own)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def __call__(self, due: int) -> bool:
        try:
            self._table.put_item(
                Item={PARTITION_KEY: f"LOOK#{due}", SORT_KEY: "claim", TTL_ATTRIBUTE: due + CLAIM_RETENTION_SECONDS},
                ConditionExpression=f"attribute_not_exists({PARTITION_KEY})",
            )
        except ClientError as error:
            if is_conditional_check_failure(error):
                return False
            raise
        return True


class SqsNextLook:
    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def __call__(self, due: int, delay_seconds: int) -> None:
        self._client.send_message(
            QueueUrl=self._queue_url,
            MessageBody=json.dumps({"due": due}),
            DelaySeconds=min(MAX_DELAY_SECONDS, delay_seconds),
        )


def message_due(body: str) -> int:
    """The look a chain message was sent for; ValueError for a body the judge did not write."""
    found = json.loads(body)
    if not isinstance(found, dict) or not isinstance(found.get("due"), int):
        raise ValueError(f"not a look message: {body[:200]!r}")
    return int(found["due"])
