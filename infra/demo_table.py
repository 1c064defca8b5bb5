"""A demo source table: streams, TTL, PITR and Contributor Insights for throttled keys."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from hotkeys.deployment import DEMO_TABLE_TTL_ATTRIBUTE


class DemoTable(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, throttled_key_insights: bool = True) -> None:
        super().__init__(scope, construct_id)
        # THROTTLED_KEYS sees what a stream cannot: reads and requests that actually throttled. The table
        # has no GSI (a GSI added here would need its own ContributorInsightsSpecification).
        insights = (
            dynamodb.ContributorInsightsSpecification(
                enabled=True, mode=dynamodb.ContributorInsightsMode.THROTTLED_KEYS
            )
            if throttled_key_insights
            else None
        )
        self.table = dynamodb.TableV2(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.on_demand(),
            dynamo_stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            time_to_live_attribute=DEMO_TABLE_TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            contributor_insights_specification=insights,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.ttl_attribute = DEMO_TABLE_TTL_ATTRIBUTE
        self.indexes: tuple[str, ...] = ()
