"""The judge's chain of looks (``alerts.look_chain``): claims in the stats table, messages on its queue."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from hotkeys.detector.adapters.stats_schema import PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE, is_conditional_check_failure
from hotkeys.detector.ports import LookClaim

# A claim is kept an hour (DynamoDB's TTL removes it after): a wake-up for that look is long over by then.
CLAIM_RETENTION_SECONDS = 3600
# SQS's longest message delay.
MAX_DELAY_SECONDS = 900


# The claims' partition: a look's claim every flush and the watchdog's read of the latest once a minute
# (a few writes a minute: no hot key of our own); sort key the due time, zero-padded (in time order).
CLAIMS_PK = "LOOKS"


class DynamoLookClaims:
    def __init__(self, table: Any) -> None:
        self._table = table

    def claim(self, claim: LookClaim) -> bool:
        try:
            self._table.put_item(
                Item={
                    PARTITION_KEY: CLAIMS_PK,
                    SORT_KEY: f"{claim.due:012d}",
                    "at": Decimal(str(round(claim.at, 3))),
                    "seconds": Decimal(str(round(claim.seconds, 3))),
                    TTL_ATTRIBUTE: claim.due + CLAIM_RETENTION_SECONDS,
                },
                ConditionExpression=f"attribute_not_exists({PARTITION_KEY})",
            )
        except ClientError as error:
            if is_conditional_check_failure(error):
                return False
            raise
        return True

    def latest(self) -> LookClaim | None:
        page = self._table.query(
            KeyConditionExpression=f"{PARTITION_KEY} = :pk",
            ExpressionAttributeValues={":pk": CLAIMS_PK},
            ScanIndexForward=False,
            Limit=1,
        )
        items = page.get("Items", [])
        if not items:
            return None
        item = items[0]
        return LookClaim(int(str(item[SORT_KEY])), float(item["at"]), float(item["seconds"]))


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
