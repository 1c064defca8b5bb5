"""The consumer Lambda: Python 3.13 on arm64, Powertools from the managed layer, least-privilege role."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from hotkeys.deployment import HANDLER, LAMBDA_ARCHITECTURE, LAMBDA_RUNTIME, POWERTOOLS_PARAMETER
from hotkeys.detector.names import NAMESPACE_VARIABLE, SERVICE, metrics_namespace
from infra.nag import acknowledge
from infra.settings import FUNCTION_ASSET_DIR, FUNCTION_ASSET_EXCLUDE

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class FunctionBase:
    """What every function of a stack shares: how long its logs are kept, and the Powertools layer it runs
    with (None: the one AWS's public parameter names, docs/decisions.md §10)."""

    log_retention_days: int
    powertools_layer_arn: str | None = None


@dataclass(frozen=True)
class FunctionProps:
    """One function of the project's asset: the stream consumer by default, or another of its handlers.

    ``failure_handling`` says where its failures go (cdk-nag's finding on a function without a DLQ);
    ``async_dead_letter_queue`` keeps what its asynchronous invocations fail after 2 retries, else
    ``async_retry_attempts`` (None: Lambda's default) says how often they are retried."""

    base: FunctionBase
    environment: Mapping[str, str] = field(default_factory=dict)
    handler: str = HANDLER
    description: str = "Counts write units per partition key from DynamoDB streams and alerts on hot keys"
    failure_handling: str = (
        "Failures go to an SQS on-failure destination (the stream mapping's, or the async invoke config's), "
        "which supersedes a function DLQ."
    )
    async_dead_letter_queue: sqs.IQueue | None = None
    async_retry_attempts: int | None = None
    timeout_seconds: int = 60
    memory_mb: int = 512
    system_log_level: str = "INFO"


class DetectorFunction(Construct):
    def __init__(self, scope: Construct, construct_id: str, props: FunctionProps) -> None:
        """The project's Python function, with its log group and its role."""
        super().__init__(scope, construct_id)
        self.log_group = retained_log_group(self, "Logs", props.base.log_retention_days)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Hot-key detector: {props.description}"[:1000],
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )
        # The layer ARN is resolved at deploy time from AWS's public parameter for the exact
        # Powertools release the tests run against (POWERTOOLS_VERSION; see docs/decisions.md §10).
        layer_arn = props.base.powertools_layer_arn or ssm.StringParameter.value_for_string_parameter(
            self, POWERTOOLS_PARAMETER
        )
        dead_letters = props.async_dead_letter_queue
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime(LAMBDA_RUNTIME, lambda_.RuntimeFamily.PYTHON),
            architecture=lambda_.Architecture.custom(LAMBDA_ARCHITECTURE),
            handler=props.handler,
            code=lambda_.Code.from_asset(str(ROOT / FUNCTION_ASSET_DIR), exclude=list(FUNCTION_ASSET_EXCLUDE)),
            layers=[lambda_.LayerVersion.from_layer_version_arn(self, "Powertools", layer_arn)],
            # The consumer's 512 MB: a 1,000-record batch (up to the 6 MB payload) parses into tens of MB
            # of Python objects and the summary is bounded (≤ 400 keys per window), so memory is mostly
            # CPU share here (docs/decisions.md §11, §38; per-record CPU: docs/benchmarks-lambda.md).
            memory_size=props.memory_mb,
            # The consumer's 60 s: well above a batch's work (< 1 s) plus the SDK's bounded retries (3
            # attempts, 2 s connect / 5 s read timeouts), well below the mapping's retry cadence.
            timeout=Duration.seconds(props.timeout_seconds),
            role=self.role,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            # Lambda's own records (platform.start and platform.report at INFO, Lambda's default).
            system_log_level_v2=lambda_.SystemLogLevel[props.system_log_level],
            tracing=lambda_.Tracing.ACTIVE,
            environment={
                "POWERTOOLS_SERVICE_NAME": SERVICE,
                # The stack's own namespace: two stacks never alarm on each other's metrics.
                NAMESPACE_VARIABLE: metrics_namespace(Stack.of(self).stack_name),
                "POWERTOOLS_LOG_LEVEL": "INFO",
                **props.environment,
            },
            description=props.description,
            # Asynchronous invocations (the webhook subscriber) keep what fails after 2 retries.
            on_failure=destinations.SqsDestination(dead_letters) if dead_letters else None,
            retry_attempts=2 if dead_letters else props.async_retry_attempts,
        )
        for finding in ("AwsSolutions::AwsSolutions-L1", "Serverless::Serverless-LambdaLatestVersion"):
            acknowledge(
                self.function,
                finding,
                "Python 3.13 is pinned on purpose: it is the runtime the tests and the pinned Powertools "
                "layer (python3.13 parameter path) are verified against.",
            )
        acknowledge(self.function, "Serverless::Serverless-LambdaDLQ", props.failure_handling)


_RETENTIONS = [
    (1, logs.RetentionDays.ONE_DAY),
    (7, logs.RetentionDays.ONE_WEEK),
    (14, logs.RetentionDays.TWO_WEEKS),
    (30, logs.RetentionDays.ONE_MONTH),
    (90, logs.RetentionDays.THREE_MONTHS),
    (180, logs.RetentionDays.SIX_MONTHS),
    (365, logs.RetentionDays.ONE_YEAR),
]


def retained_log_group(scope: Construct, construct_id: str, days: int) -> logs.LogGroup:
    """A log group of the stack's: kept ``days`` (at least) and deleted with the stack."""
    return logs.LogGroup(scope, construct_id, retention=_retention(days), removal_policy=RemovalPolicy.DESTROY)


def _retention(days: int) -> logs.RetentionDays:
    """The shortest CloudWatch retention that keeps logs at least ``days`` days."""
    return next((value for limit, value in _RETENTIONS if limit >= days), logs.RetentionDays.TWO_YEARS)
