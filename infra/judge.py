"""The judge: a function that looks at every watched table whole just after each flush boundary.

Each look is one invocation, woken by the message the previous look sent to the judge's queue (delayed
to the next look: alerts.look_chain); an EventBridge rule wakes it every minute as a watchdog that
restarts a chain that stopped. It reads the stats table (heads through the window-heads index,
incidents, the layout registry and each table's lag reports), writes incidents, layouts and look claims,
and publishes to the alert topic (docs/decisions.md §64, §76, §77). A missed look is
covered by the next one (it reads everything again), so nothing is retried and a failure goes nowhere
but the alarms: its errors, wake-ups that stop coming, looks that fail, and a chain that keeps stopping.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hotkeys.deployment import (
    JUDGE_HANDLER,
    JUDGE_MESSAGE_RETENTION_SECONDS,
    JUDGE_QUEUE_VISIBILITY_SECONDS,
    JUDGE_SCHEDULE_SECONDS,
    JUDGE_TIMEOUT_SECONDS,
)
from hotkeys.detector.adapters.stats_schema import HEADS_INDEX
from infra.alert_topic import AlertTopic
from infra.detector_function import DetectorFunction, FunctionBase, FunctionProps
from infra.monitoring import at_least, detector_metric
from infra.nag import acknowledge

# The judge's own metrics (hotkeys.detector.handlers.judge_app) as the dashboard graphs them: counts summed, and
# how late its looks were (seconds after their due time) at worst.
JUDGE_METRICS = {
    "JudgeLooks": "Sum",
    "JudgeAlertsPublished": "Sum",
    "JudgeLooksFailed": "Sum",
    "JudgeLookSeconds": "Maximum",
    "JudgeChainRestarts": "Sum",
}


@dataclass(frozen=True)
class JudgeProps:
    """What the judge reads and writes (``stats_table``), where it publishes (``alerts``, and the ``what_if``
    topic where the deployment proposes), the ``tables`` it watches, and its function: the detector's
    ``environment`` (its settings), ``memory_mb`` and what every function of the stack shares."""

    stats_table: dynamodb.ITable
    alerts: AlertTopic
    what_if: AlertTopic | None
    tables: Sequence[str]
    environment: Mapping[str, str]
    memory_mb: int
    functions: FunctionBase


class Judge(Construct):
    def __init__(self, scope: Construct, construct_id: str, props: JudgeProps) -> None:
        super().__init__(scope, construct_id)
        stats_table, what_if = props.stats_table, props.what_if
        # The chain's messages carry nothing but a look's time: SQS-managed encryption (no KMS requests),
        # no dead-letter queue (a message that fails is replaced by the watchdog's run). A body the judge did
        # not write (another queue's redrive) is ignored (handlers/judge_app.woken_for).
        self.queue = sqs.Queue(
            self,
            "Looks",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(JUDGE_QUEUE_VISIBILITY_SECONDS),
            retention_period=Duration.seconds(JUDGE_MESSAGE_RETENTION_SECONDS),
        )
        for finding in ("AwsSolutions::AwsSolutions-SQS3", "Serverless::Serverless-SQSRedrivePolicy"):
            acknowledge(
                self.queue,
                finding,
                "A look message carries only the next look's time: one that fails is not kept in a DLQ, the "
                "watchdog rule restarts the chain within a minute (its JudgeChainRestarts metric and alarm).",
            )
        self.runner = DetectorFunction(
            self,
            "Function",
            FunctionProps(
                props.functions,
                environment={
                    **props.environment,
                    "STATS_TABLE_NAME": stats_table.table_name,
                    "ALERT_TOPIC_ARN": props.alerts.topic.topic_arn,
                    **({"WHAT_IF_TOPIC_ARN": what_if.topic.topic_arn} if what_if is not None else {}),
                    "WATCHED_TABLES": ",".join(props.tables),
                    "JUDGE_QUEUE_URL": self.queue.queue_url,
                },
                handler=JUDGE_HANDLER,
                description="Judges each watched table's merged figures every flush: escalations, shares, resolutions",
                failure_handling="A failed look is not retried: the next look reads everything again. Its errors, "
                "missing wake-ups, failed looks and a chain that keeps stopping are alarmed.",
                timeout_seconds=JUDGE_TIMEOUT_SECONDS,
                memory_mb=props.memory_mb,
                async_retry_attempts=0,
            ),
        )
        self.function = self.runner.function
        self.rule = events.Rule(
            self,
            "Schedule",
            description="The hot-key judge's watchdog: restarts its chain of looks if it stopped",
            schedule=events.Schedule.rate(Duration.seconds(JUDGE_SCHEDULE_SECONDS)),
            targets=[
                targets.LambdaFunction(
                    self.function, retry_attempts=0, max_event_age=Duration.seconds(JUDGE_SCHEDULE_SECONDS)
                )
            ],
        )
        for finding in ("Serverless::Serverless-LambdaAsyncFailureDestination", "Serverless::Serverless-EventBusDLQ"):
            acknowledge(
                self,
                finding,
                "A scheduled run carries no data: one that fails or is not delivered is replaced by the next "
                "minute's, which reads everything again. The judge's errors and missing runs are alarmed.",
            )
        # One message at a time: a look is one invocation (a duplicate finds its claim taken).
        self.function.add_event_source(sources.SqsEventSource(self.queue, batch_size=1))
        acknowledge(
            self.function,
            "Serverless::Serverless-LambdaEventSourceMappingDestination",
            "A failed look's message is worth nothing once its look is past: the next look (or the watchdog's "
            "run) reads everything again. The judge's errors and a chain that keeps stopping are alarmed.",
        )
        self._grant(stats_table, props.alerts, what_if)
        self.alarms = self._alarms()

    def _grant(self, stats_table: dynamodb.ITable, alerts: AlertTopic, what_if: AlertTopic | None) -> None:
        role = self.runner.role
        role.add_to_policy(
            iam.PolicyStatement(
                sid="StatsTable",
                # Incidents, layouts and look claims: read by Query, written conditionally (a failed
                # condition returns the item as it stands: no GetItem), a look's end recorded in its claim
                # (UpdateItem); heads are read through the index.
                actions=["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"],
                resources=[stats_table.table_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="StatsWindowHeads",
                actions=["dynamodb:Query"],
                resources=[f"{stats_table.table_arn}/index/{HEADS_INDEX}"],
            )
        )
        topics, keys = [alerts.topic.topic_arn], [alerts.key.key_arn]
        if what_if is not None:
            topics.append(what_if.topic.topic_arn)
            keys.append(what_if.key.key_arn)
        role.add_to_policy(
            iam.PolicyStatement(sid="NextLook", actions=["sqs:SendMessage"], resources=[self.queue.queue_arn])
        )
        role.add_to_policy(iam.PolicyStatement(sid="PublishAlerts", actions=["sns:Publish"], resources=topics))
        role.add_to_policy(
            iam.PolicyStatement(sid="EncryptAlerts", actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=keys)
        )
        acknowledge(
            role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "Only actions AWS defines on '*' alone: xray:PutTraceSegments/PutTelemetryRecords (active tracing).",
        )

    def _alarms(self) -> dict[str, cloudwatch.Alarm]:
        five_minutes = Duration.minutes(5)
        runs = self.function.metric_invocations(period=five_minutes, statistic="Sum")
        return {
            "JudgeErrors": self.function.metric_errors(period=five_minutes, statistic="Sum").create_alarm(
                self,
                "ErrorsAlarm",
                threshold=2,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                alarm_description="The judge's runs fail: escalations, shares and resolutions wait (read its logs)",
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            # Thirty wake-ups are due in five minutes (a look every flush, the watchdog every minute);
            # fewer than three means both stopped (a throttled function, a disabled rule and a chain that
            # broke): nothing is judged but the consumers' first alarms.
            "JudgeNotRunning": runs.create_alarm(
                self,
                "NotRunningAlarm",
                threshold=3,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                alarm_description="The judge is not looking: escalations, shares and resolutions wait (check its "
                "throttles, its watchdog rule and its queue)",
                treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
            ),
            "JudgeLooksFailed": self._count_alarm(
                "LooksFailedAlarm",
                "JudgeLooksFailed",
                five_minutes,
                5,
                "The judge could not look at a table (the stats table throttled or failed, or SNS refused a "
                "message) in 5 looks of 5 minutes: read its warnings",
            ),
            # The watchdog restarts a chain that stopped (once after a deploy); again and again means the
            # looks happen once a minute, not every flush (sends refused, looks timing out).
            "JudgeChainRestarts": self._count_alarm(
                "ChainRestartsAlarm",
                "JudgeChainRestarts",
                Duration.minutes(15),
                3,
                "The judge's chain of looks keeps stopping and its watchdog restarting it: it looks once a minute "
                "instead of every flush (read its errors: sends to its queue, looks timing out)",
            ),
        }

    def _count_alarm(
        self, construct_id: str, metric: str, period: Duration, threshold: int, about: str
    ) -> cloudwatch.Alarm:
        """An alarm on a count the judge writes only when it is not zero."""
        return at_least(self, construct_id, detector_metric(self, metric, period=period), threshold, about)
