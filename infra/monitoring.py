"""Alarms on the consumer's health, sent to the alert topic, and a dashboard of the detector."""

from __future__ import annotations

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hotkeys.deployment import ITERATOR_AGE_ALARM_MS
from hotkeys.detector.names import INDEX_METRIC_PREFIX, NAMESPACE, SERVICE

DETECTOR_METRICS = (
    "RecordsCounted",
    "KeysOverOnePercent",
    "SummarySize",
    "StatsWrites",
    "AlertsPublished",
    "ItemsArchived",
    "MalformedRecords",
    "RecordsWithoutImages",
    "ArchiveObjectsSpooled",
    "RecordsOutOfOrder",
)


def _detector_metric(name: str) -> cloudwatch.Metric:
    """A sum over five minutes of one of the function's own metrics (its EMF line)."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=name,
        dimensions_map={"service": SERVICE},
        statistic="Sum",
        period=Duration.minutes(5),
    )


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        dead_letter_queue: sqs.IQueue,
        topic: sns.ITopic,
        undelivered_alerts: dict[str, sqs.IQueue] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        minute = Duration.minutes(1)
        self.alarms = {
            # Records expire from the stream after 24 h; 15 min of lag is the time to act.
            "IteratorAge": function.metric("IteratorAge", statistic="Maximum", period=minute).create_alarm(
                self,
                "IteratorAgeAlarm",
                threshold=ITERATOR_AGE_ALARM_MS,
                evaluation_periods=5,
                datapoints_to_alarm=3,
                alarm_description="The detector lags its stream by more than 15 minutes",
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            "DeadLetters": self._at_least(
                "DeadLetterAlarm",
                dead_letter_queue.metric_approximate_number_of_messages_visible(period=minute, statistic="Maximum"),
                1,
                "Stream batches were given up on: redrive within 24 h (hotkeys redrive)",
            ),
            "Errors": self._at_least(
                "ErrorsAlarm",
                function.metric_errors(period=Duration.minutes(5), statistic="Sum"),
                3,
                "The detector function is failing (batches are being retried)",
            ),
            "Throttles": self._at_least(
                "ThrottlesAlarm",
                function.metric_throttles(period=Duration.minutes(5), statistic="Sum"),
                1,
                "The detector function is throttled",
            ),
            "WithoutImages": self._at_least(
                "WithoutImagesAlarm",
                _detector_metric("RecordsWithoutImages"),
                1,
                "Stream records arrive without item images (the stream is not NEW_AND_OLD_IMAGES): sizes are "
                "key-only and TTL archives lack items. Recreate the stream with NEW_AND_OLD_IMAGES.",
            ),
            "ArchiveSpooled": self._at_least(
                "ArchiveSpooledAlarm",
                _detector_metric("ArchiveObjectsSpooled"),
                1,
                "S3 refuses TTL archive objects: they are kept in the stats table (spool) and moved into S3 "
                "when it takes them again (or by hotkeys redrive). Check the bucket's policy and S3's health.",
            ),
            "OutOfOrder": self._at_least(
                "OutOfOrderAlarm",
                _detector_metric("RecordsOutOfOrder"),
                1,
                "Stream records were redelivered below records already counted (out of sequence order). They "
                "were counted; the alarm says the delivery did something AWS does not document as usual.",
            ),
        }
        for name, queue in (undelivered_alerts or {}).items():
            self.alarms[f"Undelivered{name}"] = self._at_least(
                f"Undelivered{name}Alarm",
                queue.metric_approximate_number_of_messages_visible(period=minute, statistic="Maximum"),
                1,
                f"Alert messages to {name} could not be delivered: they wait in {queue.node.path}",
            )
        for alarm in self.alarms.values():
            alarm.add_alarm_action(actions.SnsAction(topic))
            alarm.add_ok_action(actions.SnsAction(topic))
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        self.dashboard.add_widgets(
            *[cloudwatch.AlarmWidget(title=name, alarm=alarm, width=6) for name, alarm in self.alarms.items()]
        )
        self.dashboard.add_widgets(
            *[
                cloudwatch.GraphWidget(
                    title=name,
                    width=6,
                    left=[
                        cloudwatch.Metric(
                            namespace=NAMESPACE,
                            metric_name=name,
                            dimensions_map={"service": SERVICE},
                            statistic="Maximum" if name == "SummarySize" else "Sum",
                            period=minute,
                        )
                    ],
                )
                for name in DETECTOR_METRICS
            ]
        )
        # Every counted index's write units, one line per "<table>/<index>" (a search expression:
        # indexes appear as the function counts them, without redeploying).
        index_metric = INDEX_METRIC_PREFIX.rstrip("/")
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Index write units (GSI partitions are watched per key by the alerts and `hotkeys top --index`)",
                width=24,
                left=[
                    cloudwatch.MathExpression(
                        expression=f"SEARCH('{{{NAMESPACE},service}} {index_metric}', 'Sum', 60)",
                        using_metrics={},
                        label="",
                        period=minute,
                    )
                ],
            )
        )
        self.dashboard_url = (
            f"https://{Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region={Aws.REGION}"
            f"#dashboards:name={self.dashboard.dashboard_name}"
        )

    def _at_least(self, alarm_id: str, metric: cloudwatch.Metric, threshold: int, description: str) -> cloudwatch.Alarm:
        return metric.create_alarm(
            self,
            alarm_id,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            alarm_description=description,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
