"""What-if notices: the once-a-day claim in the stats table and the publish to the what-if topic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hotkeys.detector.adapters.stats_schema import put_new
from hotkeys.detector.alerts.what_if import DAY_SECONDS, WhatIf, publish_arguments

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table
    from mypy_boto3_sns import SNSClient

# A claim outlives its day by a day (DynamoDB's TTL removes it after; the day is over by then).
CLAIM_RETENTION_SECONDS = 2 * DAY_SECONDS


class DynamoWhatIfClaims:
    """``claim(finding)``: True for the one writer whose conditional put made the day's claim for this
    proposal. Item: PK ``WHATIF#<table>``, SK ``<day>#<proposal>`` (one partition per table, a few
    items a day: no hot key of our own)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def __call__(self, finding: WhatIf) -> bool:
        return put_new(
            self._table,
            {
                "pk": f"WHATIF#{finding.table}",
                "sk": f"{finding.day}#{finding.proposal}",
                "key": finding.key,
                "expires_at": finding.day + CLAIM_RETENTION_SECONDS,
            },
        )


class SnsWhatIfPublisher:
    def __init__(self, client: SNSClient, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn

    def __call__(self, finding: WhatIf) -> None:
        self._client.publish(**publish_arguments(self._topic_arn, finding))
