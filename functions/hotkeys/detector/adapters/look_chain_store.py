"""The judge's chain of looks (``alerts.look_chain``): claims in the stats table, messages on its queue."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from hotkeys.detector.adapters.stats_schema import (
    PARTITION_KEY,
    SORT_KEY,
    TTL_ATTRIBUTE,
    put_new,
    stored_number,
    stored_seconds,
)
from hotkeys.detector.alerts.ports import LookClaim

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table
    from mypy_boto3_sqs import SQSClient

# A claim is kept an hour (DynamoDB's TTL removes it after): a wake-up for that look is long over by then.
CLAIM_RETENTION_SECONDS = 3600
# SQS's longest message delay.
MAX_DELAY_SECONDS = 900


# The claims' partition: a look's claim every flush and the watchdog's read of the latest once a minute
# (a few writes a minute: no hot key of our own); sort key the due time, zero-padded (in time order).
CLAIMS_PK = "LOOKS"


class DynamoLookClaims:
    def __init__(self, table: Table) -> None:
        self._table = table

    def claim(self, claim: LookClaim) -> bool:
        return put_new(
            self._table,
            {
                PARTITION_KEY: CLAIMS_PK,
                SORT_KEY: f"{claim.due:012d}",
                "at": stored_seconds(claim.at),
                TTL_ATTRIBUTE: claim.due + CLAIM_RETENTION_SECONDS,
            },
        )

    def ended(self, due: int, at: float) -> None:
        self._table.update_item(
            Key={PARTITION_KEY: CLAIMS_PK, SORT_KEY: f"{due:012d}"},
            UpdateExpression="SET ended_at = :at",
            ExpressionAttributeValues={":at": stored_seconds(at)},
        )

    def latest(self) -> LookClaim | None:
        """Read strongly consistent: a look that just ended must not look stopped to the watchdog."""
        page = self._table.query(
            KeyConditionExpression=f"{PARTITION_KEY} = :pk",
            ExpressionAttributeValues={":pk": CLAIMS_PK},
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = page.get("Items", [])
        if not items:
            return None
        item = items[0]
        ended = item.get("ended_at")
        return LookClaim(
            int(str(item[SORT_KEY])),
            float(stored_number(item["at"])),
            None if ended is None else float(stored_number(ended)),
        )


class SqsNextLook:
    def __init__(self, client: SQSClient, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def __call__(self, due: int, delay_seconds: int, sent_at: float) -> None:
        self._client.send_message(
            QueueUrl=self._queue_url,
            MessageBody=json.dumps({"due": due, "sent_at": round(sent_at, 3)}),
            DelaySeconds=min(MAX_DELAY_SECONDS, delay_seconds),
        )


def look_message(body: str) -> tuple[int, float]:
    """(the look a chain message was sent for, when it was sent); ValueError for a body the judge did not
    write."""
    try:
        found = json.loads(body)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a look message: {body[:200]!r}") from error
    if (
        not isinstance(found, dict)
        or not isinstance(found.get("due"), int)
        or not isinstance(found.get("sent_at"), int | float)
        or not found["sent_at"] <= found["due"] <= found["sent_at"] + MAX_DELAY_SECONDS
    ):
        raise ValueError(f"not a look message: {body[:200]!r}")
    return int(found["due"]), float(found["sent_at"])
