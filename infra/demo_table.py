"""A demo source table: streams, TTL, PITR and Contributor Insights for throttled keys."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from hotkeys.deployment import DEMO_TABLE_TTL_ATTRIBUTE


class DemoTable(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
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
            # THROTTLED_KEYS sees what a stream cannot: reads and requests that actually throttled.
            contributor_insights_specification=dynamodb.ContributorInsightsSpecification(
                enabled=True, mode=dynamodb.ContributorInsightsMode.THROTTLED_KEYS
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.ttl_attribute = DEMO_TABLE_TTL_ATTRIBUTE
