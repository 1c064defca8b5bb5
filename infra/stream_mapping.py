"""Each watched stream's event source mapping, owned through a custom resource that updates where
CloudFormation's own mapping would be replaced.

``AWS::Lambda::EventSourceMapping`` replaces itself when ``StartingPosition`` or ``EventSourceArn``
changes, CloudFormation creates the replacement before it deletes the old mapping, and Lambda allows
one mapping per function and event source: such an update rolls back (``../shared/NOTES.md``). So the
mapping is ``Custom::StreamMapping`` on the CDK provider framework, with the project's handler
(``hotkeys.detector.handlers.stream_mapping_app.on_event``; its logic is
``hotkeys.detector.provisioning.stream_mapping``): a setting Lambda can update is updated in place; a
starting position applies when a mapping is created and changes nothing for one that reads;
a Create first removes any mapping of the same function and stream (an earlier release's
``AWS::Lambda::EventSourceMapping``, whose later delete then finds nothing), so the release that brings
this resource moves every table's mapping without a conflict (docs/decisions.md §75).

Each resource's logical id follows its table's name, not its place in ``-c tableNames``: a position
would move a mapping to another table when the list changes. One provider serves every table; it may
manage the consumer's mappings only.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import ArnFormat, CustomResource, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hotkeys.deployment import EVENT_SOURCE, REDEPLOY_PROPERTY, STREAM_MAPPING_TYPE, ReadingPlan
from infra.detector_function import DetectorFunction, FunctionBase, FunctionProps
from infra.nag import acknowledge, finding_text
from infra.stream_enabler import SERVICE_TIMEOUT, deploy_time_provider, one_per_stack, redeploy_stamp
from infra.throttle_insights import construct_id

PROVIDER_ID = "StreamMappingProvider"


class StreamMappingProvider(Construct):
    """The stack's one provider of ``Custom::StreamMapping``, for one consumer function."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        consumer: lambda_.IFunction,
        log_retention_days: int,
        powertools_layer_arn: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.consumer = consumer
        handler = DetectorFunction(
            self,
            "OnEvent",
            FunctionProps(
                FunctionBase(log_retention_days, powertools_layer_arn),
                environment={"POWERTOOLS_SERVICE_NAME": "hotkey-detector-stream-mapping"},
                handler="hotkeys.detector.handlers.stream_mapping_app.on_event",
                description="creates, updates and deletes the consumer's stream event source mappings at deploy time",
                failure_handling="A deploy-time custom resource: the provider framework reports a failure to "
                "CloudFormation, which rolls the deploy back; nothing is left to redrive.",
                # Its waits share one deadline, this timeout less stream_mapping.ANSWER_SECONDS, and it answers
                # by then: 2 minutes under the provider framework function's 15 and the resource's SERVICE_TIMEOUT.
                timeout_seconds=780,
            ),
        )
        stack = Stack.of(self)
        mappings = stack.format_arn(
            service="lambda",
            resource="event-source-mapping",
            resource_name="*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        # Create, update and delete only the consumer's mappings (condition key "lambda:FunctionArn" of
        # these three actions, Service Authorization Reference for AWS Lambda); CreateEventSourceMapping
        # and ListEventSourceMappings name no resource (only "*").
        only_the_consumer = {"StringEquals": {"lambda:FunctionArn": consumer.function_arn}}
        handler.role.add_to_policy(
            iam.PolicyStatement(
                sid="CreateConsumerMappings",
                actions=["lambda:CreateEventSourceMapping"],
                resources=["*"],
                conditions=only_the_consumer,
            )
        )
        handler.role.add_to_policy(
            iam.PolicyStatement(
                sid="ChangeConsumerMappings",
                actions=["lambda:UpdateEventSourceMapping", "lambda:DeleteEventSourceMapping"],
                resources=[mappings],
                conditions=only_the_consumer,
            )
        )
        handler.role.add_to_policy(
            iam.PolicyStatement(sid="ReadMappings", actions=["lambda:GetEventSourceMapping"], resources=[mappings])
        )
        handler.role.add_to_policy(
            iam.PolicyStatement(sid="ListMappings", actions=["lambda:ListEventSourceMappings"], resources=["*"])
        )
        # A Delete while a failed update rolls back reads this stack (its status, its earlier release's
        # mapping resources and what they read) to keep a mapping the stack goes back to needing
        # (provisioning.stream_mapping).
        this_stack = stack.format_arn(service="cloudformation", resource="stack", resource_name=f"{stack.stack_name}/*")
        handler.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadThisStack",
                actions=[
                    "cloudformation:DescribeStacks",
                    "cloudformation:ListStackResources",
                    "cloudformation:GetTemplate",
                ],
                resources=[this_stack],
            )
        )
        acknowledge(
            handler.role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "CreateEventSourceMapping and ListEventSourceMappings, which AWS defines on '*' alone (the create limited "
            "to the consumer by lambda:FunctionArn), and X-Ray PutTraceSegments/PutTelemetryRecords (active tracing).",
        )
        acknowledge(
            handler.role,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{finding_text(self, this_stack)}]",
            "This stack only: a stack's ARN ends with the id CloudFormation gives it.",
        )
        acknowledge(
            handler.role,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{finding_text(self, mappings)}]",
            "A mapping's UUID is Lambda's, known only once it exists: Get, and Update/Delete limited to the "
            "consumer's mappings by lambda:FunctionArn.",
        )
        self.provider = deploy_time_provider(self, handler.function, log_retention_days)

    @classmethod
    def of(
        cls, stack: Stack, *, consumer: lambda_.IFunction, log_retention_days: int, powertools_layer_arn: str | None
    ) -> StreamMappingProvider:
        provider = one_per_stack(
            stack,
            PROVIDER_ID,
            cls,
            lambda: cls(
                stack,
                PROVIDER_ID,
                consumer=consumer,
                log_retention_days=log_retention_days,
                powertools_layer_arn=powertools_layer_arn,
            ),
        )
        if provider.consumer is not consumer:
            raise ValueError("one stack maps its streams to one consumer function")
        return provider


@dataclass(frozen=True)
class StreamReading:
    """How the consumer reads every stream of the stack: its tumbling window (``window_seconds``), the
    batches it runs at once per shard (``parallelization_factor``), and where a batch given up goes
    (``dead_letters``, the mapping's on-failure destination)."""

    window_seconds: int
    parallelization_factor: int
    dead_letters: sqs.IQueue


def mapping_id(table_name: str) -> str:
    """The construct id of a table's mapping: its name's, never its position's."""
    return construct_id(table_name, prefix="Mapping")


class StreamMapping(Construct):
    """One stream's event source mapping to the consumer, with the settings of ``EVENT_SOURCE``, ``plan`` and
    ``reading``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        provider: StreamMappingProvider,
        stream_arn: str,
        plan: ReadingPlan,
        reading: StreamReading,
    ) -> None:
        super().__init__(scope, construct_id)
        consumer = provider.consumer  # (the one its handler may map)
        settings = EVENT_SOURCE
        # CreateEventSourceMapping's own names; CloudFormation delivers them as strings, the handler
        # types them by Lambda's service model.
        mapping = {
            "StartingPosition": plan.starting_position,
            "BatchSize": settings.batch_size,
            "MaximumBatchingWindowInSeconds": settings.max_batching_window_seconds,
            "BisectBatchOnFunctionError": settings.bisect_batch_on_error,
            "MaximumRetryAttempts": settings.retry_attempts,
            "MaximumRecordAgeInSeconds": int(Duration.hours(plan.max_record_age_hours).to_seconds()),
            "ParallelizationFactor": reading.parallelization_factor,
            # The tumbling window gives each invocation its shard id and carried state: the basis of
            # exactly-once counting (docs/decisions.md §1).
            "TumblingWindowInSeconds": reading.window_seconds,
            "DestinationConfig": {"OnFailure": {"Destination": reading.dead_letters.queue_arn}},
            # Always given: an update changes only what it is given, so an absent list would keep the old one.
            "FunctionResponseTypes": ["ReportBatchItemFailures"] if settings.report_batch_item_failures else [],
            # A mapping disabled outside the stack is enabled again by the next deploy.
            "Enabled": True,
        }
        self.resource = CustomResource(
            self,
            "Mapping",
            service_token=provider.provider.service_token,
            resource_type=STREAM_MAPPING_TYPE,
            service_timeout=SERVICE_TIMEOUT,
            properties={
                "FunctionName": consumer.function_arn,
                "EventSourceArn": stream_arn,
                "Settings": mapping,
                # New at every synth: CloudFormation sends an Update only when a property changes, so without
                # it a redeploy would never repair a mapping deleted, disabled or changed outside the stack.
                REDEPLOY_PROPERTY: redeploy_stamp(self),
            },
        )
        # Lambda checks at create time that the function's role may read the stream and send to the
        # destination: after the role's policy.
        if consumer.role is not None:
            self.resource.node.add_dependency(consumer.role)
