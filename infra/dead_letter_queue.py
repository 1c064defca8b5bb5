"""A dead-letter queue: stream batches the mapping gave up on, or alerts SNS could not deliver."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge


class DeadLetterQueue(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.queue = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # Longer than the stream's 24 h retention is pointless for redrive, but 14 days
            # keeps the evidence of what was lost.
            retention_period=Duration.days(14),
        )
        reason = "This queue is itself a dead-letter queue (stream batches given up on, or undelivered alerts)."
        acknowledge(self.queue, "AwsSolutions::AwsSolutions-SQS3", reason)
        acknowledge(self.queue, "Serverless::Serverless-SQSRedrivePolicy", reason)
