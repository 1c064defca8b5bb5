"""The judge: a function woken every minute by an EventBridge rule, judging every watched table whole.

It reads the stats table (heads through the window-heads index, incidents, the layout registry),
writes incidents and layouts, publishes to the alert topic and reads the consumer's IteratorAge
from CloudWatch (docs/decisions.md §64). A missed run is covered by the next one (its looks read
everything again), so the schedule's invocation is not retried and a failure goes nowhere but the
alarms: its errors, runs that stop coming, and looks that fail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from hotkeys.deployment import JUDGE_HANDLER, JUDGE_SCHEDULE_SECONDS, JUDGE_TIMEOUT_SECONDS
from hotkeys.detector.adapters.stats_schema import HEADS_INDEX
from hotkeys.detector.names import NAMESPACE, SERVICE
from infra.alert_topic import AlertTopic
from infra.detector_function import DetectorFunction
from infra.nag import acknowledge

# The judge's own metrics (hotkeys.detector.handlers.judge_app) as the dashboard graphs them: counts summed, and
# how late its looks were (seconds after their due time) at worst.
JUDGE_METRICS = {
    "JudgeLooks": "Sum",
    "JudgeAlertsPublished": "Sum",
    "JudgeLooksFailed": "Sum",
    "JudgeLookSeconds": "Maximum",
}


class Judge(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stats_table: dynamodb.ITable,
        topic: sns.ITopic,
        topic_key: kms.IKey,
        what_if: AlertTopic | None,
        consumer: lambda_.IFunction,
        tables: Sequence[str],
        environment: Mapping[str, str],
        memory_mb: int,
        log_retention_days: int,
        powertools_layer_arn: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.runner = DetectorFunction(
            self,
            "Function",
            environment={
                **environment,
                "STATS_TABLE_NAME": stats_table.table_name,
                "ALERT_TOPIC_ARN": topic.topic_arn,
                **({"WHAT_IF_TOPIC_ARN": what_if.topic.topic_arn} if what_if is not None else {}),
                "WATCHED_TABLES": ",".join(tables),
                "CONSUMER_FUNCTION_NAME": consumer.function_name,
            },
            log_retention_days=log_retention_days,
            powertools_layer_arn=powertools_layer_arn,
            handler=JUDGE_HANDLER,
            description="Judges each watched table's merged figures every flush: escalations, shares, resolutions",
            failure_handling="A failed run is not retried: the next minute's run reads everything again. Its "
            "errors, missing runs and failed looks are alarmed.",
            timeout_seconds=JUDGE_TIMEOUT_SECONDS,
            memory_mb=memory_mb,
            async_retry_attempts=0,
        )
        self.function = self.runner.function
        self.rule = events.Rule(
            self,
            "Schedule",
            description="Wakes the hot-key judge every minute",
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
        self._grant(stats_table, topic, topic_key, what_if)
        self.alarms = self._alarms()

    def _grant(
        self, stats_table: dynamodb.ITable, topic: sns.ITopic, topic_key: kms.IKey, what_if: AlertTopic | None
    ) -> None:
        role = self.runner.role
        role.add_to_policy(
            iam.PolicyStatement(
                sid="StatsTable",
                # Incidents and layouts: read by Query, written conditionally (a failed condition returns
                # the item as it stands: no GetItem); a look's heads are read through the index.
                actions=["dynamodb:PutItem", "dynamodb:Query"],
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
        topics, keys = [topic.topic_arn], [topic_key.key_arn]
        if what_if is not None:
            topics.append(what_if.topic.topic_arn)
            keys.append(what_if.key.key_arn)
        role.add_to_policy(iam.PolicyStatement(sid="PublishAlerts", actions=["sns:Publish"], resources=topics))
        role.add_to_policy(
            iam.PolicyStatement(sid="EncryptAlerts", actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=keys)
        )
        # The consumer's IteratorAge: GetMetricData has no resource-level permissions (it is "*" alone).
        role.add_to_policy(iam.PolicyStatement(sid="StreamLag", actions=["cloudwatch:GetMetricData"], resources=["*"]))
        acknowledge(
            role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "Only actions AWS defines on '*' alone: cloudwatch:GetMetricData (the consumer's IteratorAge) and "
            "xray:PutTraceSegments/PutTelemetryRecords (active tracing).",
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
            # Five runs are due in five minutes; fewer than three means the schedule stopped (a disabled
            # rule, a throttled function): nothing is judged but the consumers' first alarms.
            "JudgeNotRunning": runs.create_alarm(
                self,
                "NotRunningAlarm",
                threshold=3,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                alarm_description="The judge is not running every minute: escalations, shares and resolutions "
                "wait (check its schedule rule and its throttles)",
                treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
            ),
            "JudgeLooksFailed": cloudwatch.Metric(
                namespace=NAMESPACE,
                metric_name="JudgeLooksFailed",
                dimensions_map={"service": SERVICE},
                statistic="Sum",
                period=five_minutes,
            ).create_alarm(
                self,
                "LooksFailedAlarm",
                threshold=5,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                alarm_description="The judge could not look at a table (the stats table throttled or failed, or "
                "SNS refused a message) in 5 looks of 5 minutes: read its warnings",
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
        }
