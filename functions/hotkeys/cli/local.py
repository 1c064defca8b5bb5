"""The detector's AWS resources, created on a local endpoint (in-process moto or a moto server)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LocalResources:
    stats_table: str
    topic_arn: str | None = None
    bucket: str | None = None
    dlq_url: str | None = None
    alert_queue_url: str | None = None


def create_stats_table(dynamodb: Any, name: str) -> None:
    """Same key schema and TTL attribute as the CDK stack's stats table."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
    )
