"""Optional Slack-compatible webhook delivery of alerts, for teams that do not use AWS Chatbot."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.arns import secret_resource
from infra.dead_letter_queue import DeadLetterQueue
from infra.detector_function import DetectorFunction, FunctionBase, FunctionProps
from infra.nag import acknowledge


class WebhookNotifier(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        topic: sns.ITopic,
        secret_arn: str,
        secret_key_arn: str | None = None,
        functions: FunctionBase,
    ) -> None:
        super().__init__(scope, construct_id)
        self.undelivered = DeadLetterQueue(self, "Undelivered").queue
        self.sender = DetectorFunction(
            self,
            "Sender",
            FunctionProps(
                functions,
                environment={"WEBHOOK_SECRET_ARN": secret_arn},
                handler="hotkeys.detector.handlers.webhook_app.handler",
                description="Posts hot-key alerts to a Slack-compatible incoming webhook",
                async_dead_letter_queue=self.undelivered,
            ),
        )
        self.sender.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadWebhookUrl", actions=["secretsmanager:GetSecretValue"], resources=[secret_resource(secret_arn)]
            )
        )
        if secret_key_arn:
            # A secret under a customer-managed key is readable only with kms:Decrypt on that key;
            # through Secrets Manager only (kms:ViaService), not for direct use of the key.
            self.sender.role.add_to_policy(
                iam.PolicyStatement(
                    sid="DecryptWebhookUrl",
                    actions=["kms:Decrypt"],
                    resources=[secret_key_arn],
                    conditions={
                        "StringEquals": {"kms:ViaService": f"secretsmanager.{Stack.of(self).region}.amazonaws.com"}
                    },
                )
            )
        acknowledge(
            self.sender.role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "Only X-Ray PutTraceSegments/PutTelemetryRecords (active tracing), which AWS defines on '*' alone.",
        )
        topic.add_subscription(
            subscriptions.LambdaSubscription(self.sender.function, dead_letter_queue=self.undelivered)
        )
