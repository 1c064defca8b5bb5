"""Contributor Insights in throttled-keys mode on watched tables the stack does not own, and their GSIs.

A custom resource on the CDK provider framework with the project's own handler
(``hotkeys.detector.handlers.insights_enabler_app.on_event``): it enables THROTTLED_KEYS only where Contributor
Insights is DISABLED, never switches the full mode down, and on delete turns off only what the detector
turned on, once no other resource wants it. A table the stack creates sets
``ContributorInsightsSpecification`` itself (infra/demo_table.py).
One provider serves every table; its role may touch the watched tables and their indexes only. Who owns
what is recorded in the table's tags (``hotkeys:insights:*``), so two stacks, or a resource and its
replacement, never turn off what another still wants (docs/decisions.md §68).

Each resource's logical id follows its table's name, not its place in ``-c tableNames`` (``construct_id``):
a position would move a resource to another table when the list changes, and CloudFormation's delete of the
last position would turn off a table still watched.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from aws_cdk import CustomResource, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.detector_function import DetectorFunction, FunctionBase, FunctionProps
from infra.nag import acknowledge, finding_text
from infra.stream_enabler import SERVICE_TIMEOUT, deploy_time_provider, one_per_stack

PROVIDER_ID = "ThrottleInsightsProvider"
# How much of a table name shows in its resource's construct (and logical) id; the hash tells the rest.
NAME_IN_ID = 64
# Created by DynamoDB the first time Contributor Insights is enabled in an account (DynamoDB developer
# guide, "Using IAM with CloudWatch contributor insights for DynamoDB").
SERVICE_LINKED_ROLE = "/".join(
    (
        "role/aws-service-role/contributorinsights.dynamodb.amazonaws.com",
        "AWSServiceRoleForDynamoDBCloudWatchContributorInsights",
    )
)


class ThrottleInsightsProvider(Construct):
    """The stack's one provider of ``Custom::ThrottledKeyInsights``: a handler function and the framework's."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        log_retention_days: int,
        powertools_layer_arn: str | None,
        table_key_arns: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        handler = DetectorFunction(
            self,
            "OnEvent",
            FunctionProps(
                FunctionBase(log_retention_days, powertools_layer_arn),
                environment={"POWERTOOLS_SERVICE_NAME": "hotkey-detector-throttle-insights"},
                handler="hotkeys.detector.handlers.insights_enabler_app.on_event",
                description="turns on Contributor Insights (throttled keys) on a watched table and its GSIs "
                "at deploy time",
                failure_handling="A deploy-time custom resource: the provider framework reports a failure to "
                "CloudFormation, which rolls the deploy back; nothing is left to redrive.",
            ),
        )
        self.role = handler.role
        stack = Stack.of(self)
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="InsightsServiceLinkedRole",
                actions=["iam:CreateServiceLinkedRole"],
                resources=[stack.format_arn(service="iam", region="", resource=SERVICE_LINKED_ROLE)],
                conditions={"StringLike": {"iam:AWSServiceName": "contributorinsights.dynamodb.amazonaws.com"}},
            )
        )
        if table_key_arns:
            # "For tables encrypted by KMS key, the user needs to have kms:Decrypt permissions in order to
            # update Contributor Insights" (same guide); through DynamoDB only.
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="InsightsEncryptedTables",
                    actions=["kms:Decrypt"],
                    resources=list(table_key_arns),
                    conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{stack.region}.amazonaws.com"}},
                )
            )
        acknowledge(
            self.role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "Only X-Ray PutTraceSegments/PutTelemetryRecords (active tracing), which AWS defines on '*' alone.",
        )
        self.provider = deploy_time_provider(self, handler.function, log_retention_days)

    @classmethod
    def of(
        cls,
        stack: Stack,
        *,
        log_retention_days: int,
        powertools_layer_arn: str | None,
        table_key_arns: Sequence[str] = (),
    ) -> ThrottleInsightsProvider:
        return one_per_stack(
            stack,
            PROVIDER_ID,
            cls,
            lambda: cls(
                stack,
                PROVIDER_ID,
                log_retention_days=log_retention_days,
                powertools_layer_arn=powertools_layer_arn,
                table_key_arns=table_key_arns,
            ),
        )

    def allow(self, table_arn: str) -> None:
        """DescribeTable (the table's GSIs) and Describe/UpdateContributorInsights on the table and its indexes;
        the table's tags, where the owners are recorded (tags are the table's, not its indexes')."""
        indexes = f"{table_arn}/index/*"
        self.role.add_to_policy(iam.PolicyStatement(actions=["dynamodb:DescribeTable"], resources=[table_arn]))
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["dynamodb:ListTagsOfResource", "dynamodb:TagResource", "dynamodb:UntagResource"],
                resources=[table_arn],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["dynamodb:DescribeContributorInsights", "dynamodb:UpdateContributorInsights"],
                resources=[table_arn, indexes],
            )
        )
        acknowledge(
            self.role,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{finding_text(self, indexes)}]",
            "Contributor Insights on each GSI of a watched table, whose names the stack does not know at synth "
            "time: the table's own indexes only.",
        )


def construct_id(table_name: str, prefix: str = "Insights") -> str:
    """``prefix`` + the table name's letters and digits (at most 64) + 8 hex digits of its hash.

    CDK makes the logical id from this (letters and digits of the path, at most 255 characters with its own
    hash), so it depends on the name alone. The hash keeps names apart that differ only in what is dropped
    (``my-table``, ``my.table``, ``my_table``) or beyond the 64 characters shown.
    """
    shown = re.sub(r"[^A-Za-z0-9]", "", table_name)[:NAME_IN_ID]
    return f"{prefix}{shown}{hashlib.sha256(table_name.encode()).hexdigest()[:8]}"


class ThrottleInsights(Construct):
    """One existing table's Contributor Insights (throttled keys), on the table and each of its GSIs."""

    def __init__(
        self, scope: Construct, construct_id: str, *, table_name: str, provider: ThrottleInsightsProvider
    ) -> None:
        super().__init__(scope, construct_id)
        table_arn = Stack.of(self).format_arn(service="dynamodb", resource="table", resource_name=table_name)
        provider.allow(table_arn)
        self.resource = CustomResource(
            self,
            "Insights",
            service_token=provider.provider.service_token,
            resource_type="Custom::ThrottledKeyInsights",
            service_timeout=SERVICE_TIMEOUT,
            properties={"TableName": table_name},
        )
