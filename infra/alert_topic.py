"""The alert topic: KMS-encrypted with a key CloudWatch alarms may use, TLS-only.

``enforce_ssl`` creates a topic policy, and a topic policy replaces SNS's default one: with only
its Deny statement nothing would allow CloudWatch to publish, and every alarm action would fail
with "not authorized to perform SNS:Publish". Both the topic and the key therefore allow
``cloudwatch.amazonaws.com`` explicitly, for this account's alarms only (confused-deputy
conditions on ``aws:SourceAccount`` and ``aws:SourceArn``).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Aws, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct


class AlertTopic(Construct):
    """An encrypted, TLS-only topic. ``for_alarms``: CloudWatch alarms of this account may publish (the
    alert topic); the what-if topic takes only the judge's notices."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        display_name: str = "DynamoDB hot keys",
        purpose: str = "alert",
        for_alarms: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        # A customer-managed key: the AWS-managed SNS key cannot be granted to CloudWatch,
        # whose alarms publish to this topic too.
        self.key = kms.Key(
            self,
            "Key",
            description=f"Encrypts the hot-key detector's {purpose} topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.topic = sns.Topic(self, "Topic", display_name=display_name, master_key=self.key, enforce_ssl=True)
        if not for_alarms:
            return
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" means this key
                conditions=alarms_of_this_account(),
            )
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions=alarms_of_this_account(),
            )
        )


def alarms_of_this_account() -> dict[str, Any]:
    return {
        "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
        "ArnLike": {"aws:SourceArn": f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"},
    }
