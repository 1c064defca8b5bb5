"""The Kinesis data stream the watched tables send their changes to (Kinesis Data Streams for DynamoDB), read
instead of their DynamoDB streams: one the tables already send to (-c kinesisStreamArn, several tables may share
it), or one the stack creates (-c enableKinesis): on demand, encrypted, kept 24 h. With -c kinesisEnhancedFanOut,
read through an enhanced fan-out consumer of the stack's (``AWS::Kinesis::StreamConsumer``).

The detector maps the consumer function to ``event_source_arn`` (one mapping for every table: the stream's
ARN, or the consumer's) and ``grant_read`` gives its role what Lambda needs to read it, and nothing else.
docs/decisions.md §83.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from constructs import Construct

from hotkeys.deployment import STREAM_RETENTION_HOURS
from infra.nag import acknowledge

# What Lambda needs to read a Kinesis data stream through a standard iterator (Lambda developer guide, "Process
# Amazon Kinesis Data Streams records with Lambda"), on the stream; kinesis:ListStreams, which AWS's managed
# AWSLambdaKinesisExecutionRole also holds on '*', is not among them.
STREAM_READ_ACTIONS = (
    "kinesis:DescribeStream",
    "kinesis:DescribeStreamSummary",
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
    "kinesis:ListShards",
)
# And through an enhanced fan-out consumer: on the consumer (Service Authorization Reference: both actions'
# resource type is the consumer).
FAN_OUT_ACTIONS = ("kinesis:SubscribeToShard", "kinesis:DescribeStreamConsumer")


class KinesisSource(Construct):
    """The stream (created when ``stream_arn`` is None, under ``key`` if given, else AWS's key for Kinesis) and,
    with ``enhanced_fan_out``, the consumer the mapping reads through."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stream_arn: str | None,
        enhanced_fan_out: bool,
        key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.created = stream_arn is None
        # (a customer-managed key of the stack's: the consumer decrypts with it; aws/kinesis needs no grant)
        self.key = key if self.created else None
        if stream_arn is None:
            stream: kinesis.IStream = kinesis.Stream(
                self,
                "Stream",
                stream_mode=kinesis.StreamMode.ON_DEMAND,
                encryption=kinesis.StreamEncryption.KMS if key else kinesis.StreamEncryption.MANAGED,
                encryption_key=key,
                retention_period=Duration.hours(STREAM_RETENTION_HOURS),
                # It holds copies of the tables' changes for a day, read by this stack alone: deleted with it.
                removal_policy=RemovalPolicy.DESTROY,
            )
            if key is not None:
                acknowledge(
                    stream,
                    "AwsSolutions::AwsSolutions-KDS3",
                    "Compliance mode encrypts everything of the stack's with its own customer-managed key (rotated, "
                    "its use logged), as AWS Control Tower's controls ask; aws/kinesis would be the default's choice.",
                )
        else:
            stream = kinesis.Stream.from_stream_arn(self, "Stream", stream_arn)
        self.stream_arn = stream.stream_arn
        self.consumer_arn: str | None = None
        if enhanced_fan_out:
            consumer = kinesis.StreamConsumer(
                self,
                "FanOut",
                stream=stream,
                # Unique per stream (a shared stream may have other stacks' consumers): the stack's name.
                stream_consumer_name=f"{Stack.of(self).stack_name}-hotkeys",
            )
            self.consumer_arn = consumer.stream_consumer_arn

    @property
    def event_source_arn(self) -> str:
        """What the event source mapping reads: the consumer with enhanced fan-out, else the stream."""
        return self.consumer_arn or self.stream_arn

    def grant_read(self, role: iam.IRole) -> None:
        """Lambda's reads of the stream (and of the consumer), scoped to their ARNs; kms:Decrypt through Kinesis
        only, where the stream is under a customer-managed key of the stack's."""
        role.add_to_principal_policy(
            iam.PolicyStatement(sid="ReadKinesisStream", actions=list(STREAM_READ_ACTIONS), resources=[self.stream_arn])
        )
        if self.consumer_arn is not None:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="ReadKinesisFanOut", actions=list(FAN_OUT_ACTIONS), resources=[self.consumer_arn]
                )
            )
        if self.key is not None:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="DecryptKinesisStream",
                    actions=["kms:Decrypt"],
                    resources=[self.key.key_arn],
                    conditions={"StringEquals": {"kms:ViaService": f"kinesis.{Stack.of(self).region}.amazonaws.com"}},
                )
            )
