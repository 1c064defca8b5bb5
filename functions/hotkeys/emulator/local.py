"""The detector's AWS resources, created on a local endpoint (in-process moto or a moto server)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hotkeys.detector.adapters.stats_schema import (
    HEADS_ATTRIBUTES,
    HEADS_INDEX,
    HEADS_PARTITION_KEY,
    HEADS_SORT_KEY,
    PARTITION_KEY,
    SORT_KEY,
    TTL_ATTRIBUTE,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class LocalResources:
    stats_table: str
    topic_arn: str | None = None
    bucket: str | None = None
    dlq_url: str | None = None
    alert_queue_url: str | None = None


def create_stats_table(dynamodb: DynamoDBClient, name: str) -> None:
    """Same key schema, heads index and TTL attribute as the CDK stack's stats table (``stats_schema``)."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SORT_KEY, "AttributeType": "S"},
            {"AttributeName": HEADS_PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": HEADS_SORT_KEY, "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": HEADS_INDEX,
                "KeySchema": [
                    {"AttributeName": HEADS_PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": HEADS_SORT_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(HEADS_ATTRIBUTES)},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )
