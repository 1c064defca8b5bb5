"""The alert topic: KMS-encrypted with a key CloudWatch alarms may use, TLS-only."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct


class AlertTopic(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        # A customer-managed key: the AWS-managed SNS key cannot be granted to CloudWatch,
        # whose alarms publish to this topic too.
        self.key = kms.Key(
            self,
            "Key",
            description="Encrypts the hot-key detector's alert topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" means this key
            )
        )
        self.topic = sns.Topic(self, "Topic", display_name="DynamoDB hot keys", master_key=self.key, enforce_ssl=True)
