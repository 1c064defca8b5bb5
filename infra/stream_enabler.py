"""Turns on NEW_AND_OLD_IMAGES streams on tables the stack does not own, and waits until they are usable.

A custom resource on the CDK provider framework, with the project's own Python handlers
(``hotkeys.detector.handlers.stream_enabler_app``): ``on_event`` enables the stream (on create and on update, so
changing ``-c tableName`` enables the new table), ``is_complete`` is polled until the stream is
ENABLED, so the event source mapping is created only then. A stream already on with another view
type fails the deploy with the fix; no stream is ever disabled. One provider serves every table.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from aws_cdk import CustomResource, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from hotkeys.deployment import REDEPLOY_CONTEXT, REDEPLOY_PROPERTY, STREAM_ENABLER_TYPE
from infra.compliance import VENDED_LOG_GROUP_PREFIX, log_group_name
from infra.detector_function import DetectorFunction, FunctionBase, FunctionProps, retained_log_group
from infra.nag import acknowledge, finding_text

P = TypeVar("P", bound=Construct)

PROVIDER_ID = "StreamEnablerProvider"
# How long CloudFormation waits for an answer from any of the stack's custom resources (ServiceTimeout; by
# default an hour): the provider framework function's own 15 minutes. Each handler answers well before: its
# function's timeout (and the waiter's total, for a provider that polls) leaves minutes to spare.
SERVICE_TIMEOUT = Duration.minutes(15)


def redeploy_stamp(scope: Construct) -> str:
    """The value of ``REDEPLOY_PROPERTY``: the time of this synth, to the second (or ``-c REDEPLOY_CONTEXT``)."""
    fixed = scope.node.try_get_context(REDEPLOY_CONTEXT)
    return str(fixed) if fixed else datetime.now(UTC).isoformat(timespec="seconds")


class StreamEnablerProvider(Construct):
    """The stack's one provider: two small functions and the framework's waiter."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        log_retention_days: int,
        powertools_layer_arn: str | None,
        controlled: bool = False,
    ) -> None:
        """``controlled`` (compliance mode): the waiter state machine logs its errors and is traced
        (CT.STEPFUNCTIONS.PR.1 and PR.2)."""
        super().__init__(scope, construct_id)
        handlers = deploy_time_handlers(
            self,
            FunctionBase(log_retention_days, powertools_layer_arn),
            "stream-enabler",
            "enables a table's NEW_AND_OLD_IMAGES stream at deploy time",
        )
        self.on_event_role = handlers["OnEvent"].role
        self.is_complete_role = handlers["IsComplete"].role
        for role in (self.on_event_role, self.is_complete_role):
            acknowledge(
                role,
                "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                "Only X-Ray PutTraceSegments/PutTelemetryRecords (active tracing), which AWS defines on '*' alone.",
            )
        self.provider = deploy_time_provider(
            self, handlers["OnEvent"].function, log_retention_days, is_complete=handlers["IsComplete"].function
        )
        if controlled:
            control_waiter(self, self.provider, log_retention_days)

    @classmethod
    def of(
        cls, stack: Stack, *, log_retention_days: int, powertools_layer_arn: str | None, controlled: bool = False
    ) -> StreamEnablerProvider:
        return one_per_stack(
            stack,
            PROVIDER_ID,
            cls,
            lambda: cls(
                stack,
                PROVIDER_ID,
                log_retention_days=log_retention_days,
                powertools_layer_arn=powertools_layer_arn,
                controlled=controlled,
            ),
        )

    def allow(self, table_arn: str) -> None:
        """Each handler gets the calls it makes on this table: ``on_event`` reads the table and turns
        its stream on; ``is_complete`` reads the table and then its latest stream's status."""
        self.on_event_role.add_to_policy(
            iam.PolicyStatement(actions=["dynamodb:DescribeTable", "dynamodb:UpdateTable"], resources=[table_arn])
        )
        streams = f"{table_arn}/stream/*"
        self.is_complete_role.add_to_policy(
            iam.PolicyStatement(actions=["dynamodb:DescribeTable"], resources=[table_arn])
        )
        self.is_complete_role.add_to_policy(
            iam.PolicyStatement(actions=["dynamodb:DescribeStream"], resources=[streams])
        )
        acknowledge(
            self.is_complete_role,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{finding_text(self, streams)}]",
            "A table's stream ARN carries a label known only once the stream exists: DescribeStream on the "
            "table's own streams.",
        )


def control_waiter(owner: Construct, provider: cr.Provider, log_retention_days: int) -> None:
    """The framework's waiter state machine logs its errors (without execution data: a table name, a stream
    ARN) to a group of the stack's and is traced with X-Ray (CT.STEPFUNCTIONS.PR.1 and PR.2). Set on the state
    machine itself: the provider's own log options would also allow logs:CreateLogStream and PutLogEvents on '*',
    which vended-log delivery does not need (Step Functions developer guide, "Logging using CloudWatch Logs"
    and "AWS X-Ray and Step Functions": the actions below, which AWS defines on '*' only)."""
    group = retained_log_group(owner, "WaiterLogs", log_retention_days)
    resource = group.node.default_child
    assert isinstance(resource, logs.CfnLogGroup)
    resource.log_group_name = log_group_name(group, VENDED_LOG_GROUP_PREFIX)
    (machine,) = [c for c in provider.node.find_all() if isinstance(c, sfn.CfnStateMachine)]
    machine.logging_configuration = sfn.CfnStateMachine.LoggingConfigurationProperty(
        destinations=[
            sfn.CfnStateMachine.LogDestinationProperty(
                cloud_watch_logs_log_group=sfn.CfnStateMachine.CloudWatchLogsLogGroupProperty(
                    log_group_arn=group.log_group_arn
                )
            )
        ],
        level="ERROR",
        include_execution_data=False,
    )
    machine.tracing_configuration = sfn.CfnStateMachine.TracingConfigurationProperty(enabled=True)
    (role,) = [c for c in machine.node.scope.node.find_all() if isinstance(c, iam.Role)]  # type: ignore[union-attr]
    role.add_to_policy(
        iam.PolicyStatement(
            sid="WaiterLogDelivery",
            actions=[
                "logs:CreateLogDelivery",
                "logs:GetLogDelivery",
                "logs:UpdateLogDelivery",
                "logs:DeleteLogDelivery",
                "logs:ListLogDeliveries",
                "logs:PutResourcePolicy",
                "logs:DescribeResourcePolicies",
                "logs:DescribeLogGroups",
            ],
            resources=["*"],
        )
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="WaiterTracing",
            actions=[
                "xray:PutTraceSegments",
                "xray:PutTelemetryRecords",
                "xray:GetSamplingRules",
                "xray:GetSamplingTargets",
            ],
            resources=["*"],
        )
    )
    # Step Functions checks the role's log delivery permissions when it creates the state machine.
    machine.node.add_dependency(role)
    acknowledge(
        role,
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        "Only actions AWS defines on '*' alone: CloudWatch Logs' log delivery actions (the waiter's execution "
        "logs) and X-Ray's (tracing), which Step Functions needs.",
    )


def one_per_stack(stack: Stack, construct_id: str, kind: type[P], make: Callable[[], P]) -> P:
    """The stack's one ``kind`` under ``construct_id`` (a custom resource's provider: one set of functions and roles
    for every table that uses it): the one made before, else ``make``'s."""
    existing = stack.node.try_find_child(construct_id)
    return existing if isinstance(existing, kind) else make()


def deploy_time_handlers(
    owner: Construct, base: FunctionBase, name: str, description: str
) -> dict[str, DetectorFunction]:
    """A deploy-time custom resource's two handlers, ``OnEvent`` and ``IsComplete``, in ``owner``: the
    functions of ``hotkeys.detector.handlers.<name>_app`` (``name`` with dashes: its service's)."""
    module = name.replace("-", "_")
    return {
        construct: DetectorFunction(
            owner,
            construct,
            FunctionProps(
                base,
                environment={"POWERTOOLS_SERVICE_NAME": f"hotkey-detector-{name}"},
                handler=f"hotkeys.detector.handlers.{module}_app.{handler}",
                description=f"{description} ({handler})",
                failure_handling="A deploy-time custom resource: the provider framework reports a failure to "
                "CloudFormation, which rolls the deploy back; nothing is left to redrive.",
            ),
        )
        for construct, handler in (("OnEvent", "on_event"), ("IsComplete", "is_complete"))
    }


def deploy_time_provider(
    owner: Construct,
    on_event: lambda_.IFunction,
    log_retention_days: int,
    is_complete: lambda_.IFunction | None = None,
) -> cr.Provider:
    """The CDK provider framework for one of the stack's custom resources (``is_complete``: polled every 10 s
    for up to 10 minutes: with ``on_event``'s minute and the polls' own time, an answer before SERVICE_TIMEOUT),
    its functions logging to a group of the stack's (retained, deleted with it), its cdk-nag findings
    acknowledged."""
    provider = cr.Provider(
        owner,
        "Provider",
        on_event_handler=on_event,
        is_complete_handler=is_complete,
        query_interval=Duration.seconds(10) if is_complete else None,
        total_timeout=Duration.minutes(10) if is_complete else None,
        log_group=retained_log_group(owner, "FrameworkLogs", log_retention_days),
    )
    acknowledge_provider_framework(owner, provider)
    return provider


def acknowledge_provider_framework(owner: Construct, provider: cr.Provider) -> None:
    """cdk-nag findings on the CDK provider framework's own functions and waiter, with the reason."""
    reason = (
        "The CDK provider framework's own functions and waiter state machine (deploy time only, invoked by "
        "CloudFormation); their code and settings belong to aws-cdk-lib."
    )
    stack = Stack.of(owner)
    invoked = [
        stack.get_logical_id(child.node.default_child)  # type: ignore[arg-type]
        for child in owner.node.find_all()
        if isinstance(child, lambda_.Function)
    ]
    for logical_id in invoked:
        acknowledge(
            provider,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::<{logical_id}.Arn>:*]",
            "The provider framework invokes the handler functions in any version (lambda:InvokeFunction on "
            "the function's own ARN and its qualifiers).",
        )
    for finding in (
        "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaBasicExecutionRole]",
        "AwsSolutions::AwsSolutions-L1",
        "AwsSolutions::AwsSolutions-SF1",
        "AwsSolutions::AwsSolutions-SF2",
        "Serverless::Serverless-LambdaDLQ",
        "Serverless::Serverless-LambdaDefaultMemorySize",
        "Serverless::Serverless-LambdaLatestVersion",
        "Serverless::Serverless-LambdaTracing",
        "Serverless::Serverless-StepFunctionStateMachineXray",
    ):
        acknowledge(provider, finding, reason)


class StreamEnabler(Construct):
    """One table's stream, enabled (if needed) and waited for; ``stream_arn`` for the event source mapping."""

    def __init__(
        self, scope: Construct, construct_id: str, *, table_name: str, provider: StreamEnablerProvider
    ) -> None:
        super().__init__(scope, construct_id)
        self.table_arn = Stack.of(self).format_arn(service="dynamodb", resource="table", resource_name=table_name)
        provider.allow(self.table_arn)
        resource = CustomResource(
            self,
            "Stream",
            service_token=provider.provider.service_token,
            resource_type=STREAM_ENABLER_TYPE,
            service_timeout=SERVICE_TIMEOUT,
            # (REDEPLOY_PROPERTY: a redeploy turns a stream turned off outside the stack on again, and the
            # mapping follows the table's new stream.)
            properties={"TableName": table_name, REDEPLOY_PROPERTY: redeploy_stamp(self)},
        )
        self.stream_arn = resource.get_att_string("StreamArn")
