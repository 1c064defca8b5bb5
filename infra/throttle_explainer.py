"""The throttle explainer: a Lambda function each throttle alarm invokes as its alarm action (issue #28).

It reads the throttled-keys rules of the alarm's table or index for the alarm's minutes, the stream's open
incidents, and publishes one alert on the alert topic (``hotkeys.detector.throttling.throttle_explainer``). CloudWatch
user guide, "Invoke a Lambda function from an alarm": "When you specify a Lambda function as an alarm
action, you must create a resource policy for the function to allow the CloudWatch service principal to
invoke the function" (``lambda.alarms.cloudwatch.amazonaws.com``): one statement for every throttle alarm,
scoped to the account and the alarms' name prefix (docs/decisions.md §66). Every statement of its role is
scoped: the throttled-key rules' ARNs (their names end in a creation timestamp, hence the trailing
wildcard), the tables' and indexes' ARNs, DescribeTable on the tables whose GSIs the stack cannot list
(docs/decisions.md §69), the topic, and the stats table's incident partitions (``INC#``) only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import jsii
from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from hotkeys.detector.throttling.throttles import rule_arn_patterns
from infra.dead_letter_queue import DeadLetterQueue
from infra.detector_function import DetectorFunction, FunctionBase, FunctionProps
from infra.nag import acknowledge, finding_text

INCIDENT_PREFIX = "INC#"
ALARMS_PRINCIPAL = "lambda.alarms.cloudwatch.amazonaws.com"


@jsii.implements(cloudwatch.IAlarmAction)
class InvokeFunction:
    """An alarm action that invokes a function whose resource policy already allows it (CDK's
    ``LambdaAction`` adds a statement per alarm)."""

    def __init__(self, function: lambda_.IFunction) -> None:
        self._arn = function.function_arn

    def bind(self, _scope: Construct, _alarm: cloudwatch.IAlarm) -> cloudwatch.AlarmActionConfig:
        return cloudwatch.AlarmActionConfig(alarm_action_arn=self._arn)


@dataclass(frozen=True)
class ThrottleExplainerProps:
    """``alarms``: the throttle alarms (``ThrottleAlarms.alarms``), every name starting with
    ``alarm_name_prefix``; ``topic`` (under ``topic_key``, if encrypted): the alert topic; ``stats_table``: the
    stream's incidents; ``tables``: each watched table's name and its global secondary indexes' names (the
    rules the function may read; None where the stack does not know them at synth time, an existing table:
    any index of that table, and the rules named after the table); ``environment``: the detector's key
    display settings (``KEY_DISPLAY``, ``KEY_HASH_SALT``), so keys read as in its alerts."""

    alarms: Mapping[str, cloudwatch.Alarm]
    alarm_name_prefix: str
    topic: sns.ITopic
    stats_table: dynamodb.ITable
    tables: Mapping[str, Sequence[str] | None]
    functions: FunctionBase
    topic_key: kms.IKey | None = None
    environment: Mapping[str, str] = field(default_factory=dict)


class ThrottleExplainer(Construct):
    def __init__(self, scope: Construct, construct_id: str, props: ThrottleExplainerProps) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        tables, topic = props.tables, props.topic
        self.undelivered = DeadLetterQueue(self, "Undelivered").queue
        self.explainer = DetectorFunction(
            self,
            "Function",
            FunctionProps(
                props.functions,
                environment={
                    "ALERT_TOPIC_ARN": topic.topic_arn,
                    "STATS_TABLE_NAME": props.stats_table.table_name,
                    **props.environment,
                },
                handler="hotkeys.detector.handlers.throttle_app.handler",
                description="Names the keys behind a DynamoDB throttle alarm and the limit hit, on the alert topic",
                async_dead_letter_queue=self.undelivered,
            ),
        )
        role = self.explainer.role
        rules = [
            arn
            for table, indexes in tables.items()
            for arn in rule_arn_patterns(stack.partition, stack.region, stack.account, table, indexes or ())
        ]
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadThrottledKeyRules", actions=["cloudwatch:GetInsightRuleReport"], resources=rules
            )
        )
        sources = [
            arn
            for table, indexes in tables.items()
            for arn in (
                stack.format_arn(service="dynamodb", resource="table", resource_name=table),
                *(
                    stack.format_arn(service="dynamodb", resource="table", resource_name=f"{table}/index/{index}")
                    for index in (indexes if indexes is not None else ("*",))
                ),
            )
        ]
        role.add_to_policy(
            iam.PolicyStatement(
                sid="DescribeContributorInsights", actions=["dynamodb:DescribeContributorInsights"], resources=sources
            )
        )
        # A table whose GSIs the stack cannot list at synth is alarmed on all of them at once (a Metrics
        # Insights query naming no index): the function lists them with DescribeTable, on those tables only.
        # Their rules are within the table's own pattern above: AWS's examples name an index's rule
        # ``<table>-<index>`` (decisions §54, §69).
        unlisted = [
            stack.format_arn(service="dynamodb", resource="table", resource_name=table)
            for table, indexes in tables.items()
            if indexes is None
        ]
        if unlisted:
            role.add_to_policy(
                iam.PolicyStatement(sid="ListUnknownIndexes", actions=["dynamodb:DescribeTable"], resources=unlisted)
            )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadOpenIncidents",
                actions=["dynamodb:Query"],
                resources=[props.stats_table.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{INCIDENT_PREFIX}*"]}},
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(sid="PublishAlerts", actions=["sns:Publish"], resources=[topic.topic_arn])
        )
        if props.topic_key is not None:
            # As the detector's statement: the two KMS actions SNS needs to publish to an encrypted topic,
            # named exactly (grant_publish would add the GenerateDataKey* wildcard).
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="EncryptAlerts",
                    actions=["kms:GenerateDataKey", "kms:Decrypt"],
                    resources=[props.topic_key.key_arn],
                )
            )
        acknowledge(
            role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "Only X-Ray PutTraceSegments/PutTelemetryRecords (active tracing), which AWS defines on '*' alone.",
        )
        wildcards = [
            (
                arn,
                "Throttled-key rule names end in DynamoDB's creation timestamp (documented format "
                "DynamoDBContributorInsights-PKT-[resource_name]-[creationtimestamp]): the ARN's tail is a wildcard.",
            )
            for arn in rules
        ] + [
            (arn, "DescribeContributorInsights on any index of a table whose indexes the stack cannot list at synth.")
            for arn in sources
            if arn.endswith("/index/*")
        ]
        for arn, reason in wildcards:
            acknowledge(role, f"AwsSolutions::AwsSolutions-IAM5[Resource::{finding_text(role, arn)}]", reason)
        # An explanation that failed after its retries waits in its queue; the stack alarms on it with the
        # detector's own queues (``Monitoring.watch_queue``), on the alert topic and the dashboard.
        self.undelivered_description = (
            "Throttle alarm explanations failed after their retries: the invocations wait in "
            + self.undelivered.node.path
        )
        # One statement for every alarm: a function's resource policy is capped at 20 KB, which a statement
        # per alarm (16 per existing table) outgrows at three tables. CloudWatch invokes with the alarm's
        # ARN as the source ARN (user guide, "Invoke a Lambda function from an alarm"); Lambda matches a
        # wildcard in it, so the alarms' common name prefix stands for all of them.
        self.explainer.function.add_permission(
            "ThrottleAlarms",
            principal=iam.ServicePrincipal(ALARMS_PRINCIPAL),
            action="lambda:InvokeFunction",
            source_account=stack.account,
            source_arn=stack.format_arn(
                service="cloudwatch",
                resource="alarm",
                resource_name=f"{props.alarm_name_prefix}*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            ),
        )
        action = InvokeFunction(self.explainer.function)
        for alarm in props.alarms.values():
            alarm.add_alarm_action(action)
