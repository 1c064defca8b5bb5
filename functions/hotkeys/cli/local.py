"""The detector's AWS resources, created on a local endpoint (in-process moto or a moto server)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hotkeys.detector.adapters.stats_schema import PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE


@dataclass(frozen=True)
class LocalResources:
    stats_table: str
    topic_arn: str | None = None
    bucket: str | None = None
    dlq_url: str | None = None
    alert_queue_url: str | None = None


def create_stats_table(dynamodb: Any, name: str) -> None:
    """Same key schema and TTL attribute as the CDK stack's stats table (``stats_schema``)."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SORT_KEY, "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )
