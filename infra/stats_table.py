"""The detector's stats table: window snapshots, the window catalog, alert incidents."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from hotkeys.detector.adapters.stats_schema import (
    HEADS_ATTRIBUTES,
    HEADS_INDEX,
    HEADS_PARTITION_KEY,
    HEADS_SORT_KEY,
    PARTITION_KEY,
    SORT_KEY,
    TTL_ATTRIBUTE,
)


class StatsTable(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        # On-demand: the detector's writes are bursty (a flush per shard every few seconds)
        # and tiny next to the source table's; provisioned capacity would sit idle.
        self.table = dynamodb.TableV2(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.on_demand(),
            time_to_live_attribute=TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryptionV2.aws_managed_key(),
            removal_policy=RemovalPolicy.DESTROY,
            # A table's segment heads under one key in window order: the judge reads a window (or a few)
            # of any number of shards with one Query (docs/decisions.md §49). Only the small head is copied,
            # never the summaries.
            global_secondary_indexes=[
                dynamodb.GlobalSecondaryIndexPropsV2(
                    index_name=HEADS_INDEX,
                    partition_key=dynamodb.Attribute(name=HEADS_PARTITION_KEY, type=dynamodb.AttributeType.STRING),
                    sort_key=dynamodb.Attribute(name=HEADS_SORT_KEY, type=dynamodb.AttributeType.STRING),
                    projection_type=dynamodb.ProjectionType.INCLUDE,
                    non_key_attributes=list(HEADS_ATTRIBUTES),
                )
            ],
        )
