"""Turns Kinesis streaming (Kinesis Data Streams for DynamoDB) on for tables the stack does not own, to the stack's
own Kinesis data stream (-c enableKinesis), and off again with the resource.

A custom resource on the CDK provider framework, modelled on the stream enabler (infra/stream_enabler.py), with
the project's handlers (``hotkeys.detector.handlers.kinesis_streaming_app``; the logic is
``hotkeys.detector.provisioning.kinesis_streaming``): ``on_event`` turns the destination on (ApproximateCreationDate-
TimePrecision MICROSECOND), ``is_complete`` is polled until it is ACTIVE, and for a Delete until it is off. Unlike
a table's DynamoDB stream, the destination is the stack's: it streams to a stream only the stack reads, which the
stack deletes, so a deleted stack turns it off and leaves the table as it was. One provider serves every table.
"""

from __future__ import annotations

from aws_cdk import CustomResource, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from hotkeys.deployment import KINESIS_STREAMING_TYPE, REDEPLOY_PROPERTY
from infra.detector_function import FunctionBase
from infra.nag import acknowledge
from infra.stream_enabler import (
    SERVICE_TIMEOUT,
    control_waiter,
    deploy_time_handlers,
    deploy_time_provider,
    one_per_stack,
    redeploy_stamp,
)

PROVIDER_ID = "KinesisStreamingProvider"
# What the caller of Enable/Describe/Update/DisableKinesisStreamingDestination needs on the table and on the
# Kinesis stream (DynamoDB developer guide, "Using IAM policies for Amazon Kinesis Data Streams and Amazon DynamoDB").
TABLE_ACTIONS = (
    "dynamodb:DescribeKinesisStreamingDestination",
    "dynamodb:EnableKinesisStreamingDestination",
    "dynamodb:UpdateKinesisStreamingDestination",
    "dynamodb:DisableKinesisStreamingDestination",
)
STREAM_ACTIONS = ("kinesis:DescribeStream", "kinesis:DescribeStreamSummary", "kinesis:PutRecords")


class KinesisStreamingProvider(Construct):
    """The stack's one provider of ``Custom::KinesisStreaming``: two small functions and the framework's waiter."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stream_arn: str,
        log_retention_days: int,
        powertools_layer_arn: str | None,
        controlled: bool = False,
    ) -> None:
        """``stream_arn``: the stack's Kinesis data stream, the one destination its handlers may turn on."""
        super().__init__(scope, construct_id)
        self.stream_arn = stream_arn
        self.roles = []
        handlers = {}
        for name, function in deploy_time_handlers(
            self,
            FunctionBase(log_retention_days, powertools_layer_arn),
            "kinesis-streaming",
            "turns a table's Kinesis streaming on at deploy time, off at delete",
        ).items():
            handlers[name] = function.function
            self.roles.append(function.role)
            function.role.add_to_policy(
                iam.PolicyStatement(sid="WriteToTheStacksStream", actions=list(STREAM_ACTIONS), resources=[stream_arn])
            )
            # Enabling a destination "requires kinesis:ListStreams" (same guide), which AWS defines on '*' alone.
            function.role.add_to_policy(
                iam.PolicyStatement(sid="ListStreams", actions=["kinesis:ListStreams"], resources=["*"])
            )
            acknowledge(
                function.role,
                "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                "Only actions AWS defines on '*' alone: kinesis:ListStreams (EnableKinesisStreamingDestination "
                "requires it) and X-Ray PutTraceSegments/PutTelemetryRecords (active tracing).",
            )
        self.provider = deploy_time_provider(
            self, handlers["OnEvent"], log_retention_days, is_complete=handlers["IsComplete"]
        )
        if controlled:
            control_waiter(self, self.provider, log_retention_days)

    @classmethod
    def of(
        cls,
        stack: Stack,
        *,
        stream_arn: str,
        log_retention_days: int,
        powertools_layer_arn: str | None,
        controlled: bool = False,
    ) -> KinesisStreamingProvider:
        provider = one_per_stack(
            stack,
            PROVIDER_ID,
            cls,
            lambda: cls(
                stack,
                PROVIDER_ID,
                stream_arn=stream_arn,
                log_retention_days=log_retention_days,
                powertools_layer_arn=powertools_layer_arn,
                controlled=controlled,
            ),
        )
        if provider.stream_arn is not stream_arn:
            raise ValueError("one stack streams its tables to one Kinesis data stream")
        return provider

    def allow(self, table_arn: str) -> None:
        """Both handlers turn this table's destination on and off and describe it (``is_complete`` enables one
        that was still DISABLING when ``on_event`` ran, and disables on Delete)."""
        for role in self.roles:
            role.add_to_policy(iam.PolicyStatement(actions=list(TABLE_ACTIONS), resources=[table_arn]))


class KinesisStreaming(Construct):
    """One table's changes streamed to the stack's Kinesis data stream (``provider.stream_arn``)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, table_name: str, provider: KinesisStreamingProvider
    ) -> None:
        super().__init__(scope, construct_id)
        self.table_arn = Stack.of(self).format_arn(service="dynamodb", resource="table", resource_name=table_name)
        provider.allow(self.table_arn)
        self.resource = CustomResource(
            self,
            "Destination",
            service_token=provider.provider.service_token,
            resource_type=KINESIS_STREAMING_TYPE,
            service_timeout=SERVICE_TIMEOUT,
            # (REDEPLOY_PROPERTY: a redeploy turns a destination turned off outside the stack on again)
            properties={
                "TableName": table_name,
                "StreamArn": provider.stream_arn,
                REDEPLOY_PROPERTY: redeploy_stamp(self),
            },
        )
