"""Alarms on the consumer's health, sent to the alert topic, and a dashboard of the detector."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsii
from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hotkeys.deployment import ITERATOR_AGE_ALARM_MS
from hotkeys.detector.names import INDEX_METRIC_PREFIX, SERVICE, metrics_namespace

# The function's metrics the dashboard graphs: RecordsCounted is in every EMF line; the others are
# published only in a minute that had some (hotkeys.detector.handlers.app.RARE_METRICS), so their graphs
# show gaps, not zeros.
DETECTOR_METRICS = (
    "RecordsCounted",
    "AlertsPublished",
    "ItemsArchived",
    "MalformedRecords",
    "RecordsWithoutImages",
    "ArchiveObjectsSpooled",
    "RecordsOutOfOrder",
    "StatesDiscarded",
    "TtlIgnoredItems",
)
# Figures of each flush that are properties of the EMF line, not metrics (app.LINE_PROPERTIES): the
# dashboard shows them with a CloudWatch Logs Insights query of the function's log group.
LINE_PROPERTIES_QUERY = (
    "filter ispresent(SummarySize)",
    "stats sum(StatsWrites) as StatsWrites, max(SummarySize) as SummarySize, "
    "max(KeysOverOnePercent) as KeysOverOnePercent by bin(1m)",
)
# The alarms a lean deployment keeps (-c lean): the ones that say the detector stopped doing its work.
LEAN_ALARMS = ("IteratorAge", "DeadLetters", "Errors")

ALARM_WIDGET_WIDTH = 6

# What the StatesDiscarded alarm tells the reader (hotkeys.detector.consumer.pipeline: a carried state this version
# did not write is not read, the shard starts afresh; docs/decisions.md, "One value type for a summary").
STATES_DISCARDED = (
    "A shard's carried tumbling-window state was not written by this version of the detector and was "
    "dropped: the shard started afresh, so the figures it had counted in that window are lost (that "
    "window reads low once; an alert due in it may come one window late). Expected once per shard "
    "right after a deploy that changes the state layout: nothing to do. Otherwise read the function's "
    "'carried state not written by this version' warnings (their error says why) and report it."
)

# What the TtlIgnored alarm tells the reader (hotkeys.detector.domain.health).
TTL_IGNORED = (
    "Items were written with a TTL attribute DynamoDB's TTL ignores (not a Number, in milliseconds or a "
    "finer unit, or more than five years past): they will never expire, and the TTL archive never sees "
    "them. `hotkeys top` and the replay's verdict name the table, the share and the fix."
)


def stack_namespace(scope: Construct) -> str:
    """The namespace of the detector's own metrics in ``scope``'s stack (``names.metrics_namespace``): what its
    functions write (``DetectorFunction`` sets it in their environment), and all its alarms and graphs read."""
    return metrics_namespace(Stack.of(scope).stack_name)


def detector_metric(
    scope: Construct, name: str, *, statistic: str = "Sum", period: Duration | None = None
) -> cloudwatch.Metric:
    """One of the functions' own metrics (their EMF lines) in ``scope``'s stack: its namespace, dimension
    service; a sum over five minutes unless told."""
    return cloudwatch.Metric(
        namespace=stack_namespace(scope),
        metric_name=name,
        dimensions_map={"service": SERVICE},
        statistic=statistic,
        period=period or Duration.minutes(5),
    )


@jsii.implements(cloudwatch.IWidget)
class WidgetGrid:
    """Widgets laid out as one ``cloudwatch.Row`` (left to right, wrapping at the dashboard's width), to
    which widgets may be added until the dashboard is rendered. CDK's ``Row.add_widget`` places a widget
    below and right of the row's last one instead: the row is built from the list when positioned."""

    def __init__(self) -> None:
        self._widgets: list[cloudwatch.IWidget] = []
        self._row: cloudwatch.Row | None = None

    def add(self, widget: cloudwatch.IWidget) -> None:
        if self._row is not None:
            raise RuntimeError("the dashboard is already rendered")
        self._widgets.append(widget)

    def _laid_out(self) -> cloudwatch.Row:
        return self._row or cloudwatch.Row(*self._widgets)

    @property
    def width(self) -> jsii.Number:
        return self._laid_out().width

    @property
    def height(self) -> jsii.Number:
        return self._laid_out().height

    @property
    def warnings(self) -> list[str] | None:
        return None

    @property
    def warnings_v2(self) -> dict[str, str] | None:
        return None

    def position(self, x: jsii.Number, y: jsii.Number) -> None:
        self._row = cloudwatch.Row(*self._widgets)
        self._row.position(x, y)

    def to_json(self) -> list[Any]:
        return self._laid_out().to_json()


@dataclass(frozen=True)
class MonitoringProps:
    """What is watched and where its alarms go: the consumer's ``function`` (its ``log_group``, for the
    dashboard's query of its EMF lines), its ``dead_letter_queue``, the alert ``topic``, the queues of alert
    messages that could not be delivered (``undelivered_alerts``, by subscriber kind), and ``lean`` (-c lean:
    no dashboard, and of the alarms on the consumer only ``LEAN_ALARMS``)."""

    function: lambda_.IFunction
    dead_letter_queue: sqs.IQueue
    topic: sns.ITopic
    undelivered_alerts: Mapping[str, sqs.IQueue] = field(default_factory=dict)
    log_group: logs.ILogGroup | None = None
    lean: bool = False


class Monitoring(Construct):
    def __init__(self, scope: Construct, construct_id: str, props: MonitoringProps) -> None:
        super().__init__(scope, construct_id)
        function, lean = props.function, props.lean
        self._topic = props.topic
        minute = Duration.minutes(1)
        # The alarms that say the detector stopped doing its work (``LEAN_ALARMS``: a lean deployment's too).
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
                props.dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=minute, statistic="Maximum"
                ),
                1,
                "Stream batches were given up on: redrive within 24 h (hotkeys redrive)",
            ),
            "Errors": self._at_least(
                "ErrorsAlarm",
                function.metric_errors(period=Duration.minutes(5), statistic="Sum"),
                3,
                "The detector function is failing (batches are being retried)",
            ),
        }
        if not lean:
            self.alarms.update(self._health_alarms(function))
        for alarm in self.alarms.values():
            self._notify(alarm)
        self._alarm_grid = WidgetGrid()
        self.dashboard: cloudwatch.Dashboard | None = None
        self.dashboard_url: str | None = None
        if not lean:
            self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
            # The alarms first on the dashboard; ``watch_queue`` adds to them after construction.
            self.dashboard.add_widgets(self._alarm_grid)
            for name, alarm in self.alarms.items():
                self._show_alarm(name, alarm)
        for name, queue in props.undelivered_alerts.items():
            self.watch_queue(
                f"Undelivered{name}",
                queue,
                f"Alert messages to {name} could not be delivered: they wait in {queue.node.path}",
            )
        if self.dashboard is not None:
            self._graphs(props.log_group)

    def _health_alarms(self, function: lambda_.IFunction) -> dict[str, cloudwatch.Alarm]:
        """The consumer's throttles, and the data's health: each on a count the function publishes only
        when it is not zero (missing data is no breach)."""
        return {
            "Throttles": self._at_least(
                "ThrottlesAlarm",
                function.metric_throttles(period=Duration.minutes(5), statistic="Sum"),
                1,
                "The detector function is throttled",
            ),
            "WithoutImages": self._at_least(
                "WithoutImagesAlarm",
                detector_metric(self, "RecordsWithoutImages"),
                1,
                "Stream records arrive without item images (the stream is not NEW_AND_OLD_IMAGES): sizes are "
                "key-only and TTL archives lack items. Recreate the stream with NEW_AND_OLD_IMAGES.",
            ),
            "ArchiveSpooled": self._at_least(
                "ArchiveSpooledAlarm",
                detector_metric(self, "ArchiveObjectsSpooled"),
                1,
                "S3 refuses TTL archive objects: they are kept in the stats table (spool) and moved into S3 "
                "when it takes them again (or by hotkeys redrive). Check the bucket's policy and S3's health.",
            ),
            "OutOfOrder": self._at_least(
                "OutOfOrderAlarm",
                detector_metric(self, "RecordsOutOfOrder"),
                1,
                "Stream records were redelivered below records already counted (out of sequence order). They "
                "were counted; the alarm says the delivery did something AWS does not document as usual.",
            ),
            "StatesDiscarded": self._at_least(
                "StatesDiscardedAlarm",
                detector_metric(self, "StatesDiscarded"),
                1,
                STATES_DISCARDED,
            ),
            "TtlIgnored": self._at_least(
                "TtlIgnoredAlarm",
                detector_metric(self, "TtlIgnoredItems"),
                1,
                TTL_IGNORED,
            ),
        }

    def _graphs(self, log_group: logs.ILogGroup | None) -> None:
        """The dashboard's graphs of the function's metrics, its EMF line's properties and its indexes."""
        assert self.dashboard is not None
        minute = Duration.minutes(1)
        self.dashboard.add_widgets(
            *[
                cloudwatch.GraphWidget(
                    title=name,
                    width=6,
                    left=[detector_metric(self, name, period=minute)],
                )
                for name in DETECTOR_METRICS
            ]
        )
        if log_group is not None:
            self.dashboard.add_widgets(
                cloudwatch.LogQueryWidget(
                    title="Each flush: stats writes, keys per summary, keys over 1% (EMF line properties)",
                    width=24,
                    log_group_names=[log_group.log_group_name],
                    query_lines=list(LINE_PROPERTIES_QUERY),
                    view=cloudwatch.LogQueryVisualizationType.LINE,
                )
            )
        # Every counted index's write units, one line per "<table>/<index>" (a search expression:
        # indexes appear as the function counts them, without redeploying).
        index_metric = INDEX_METRIC_PREFIX.rstrip("/")
        # (Only the stack's own namespace: another stack's indexes are its dashboard's. A name with other
        # than letters and digits, as another stack's namespace has, is quoted in a search's schema.)
        namespace = stack_namespace(self)
        schema = namespace if namespace.isalnum() else f'"{namespace}"'
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Index write units (GSI partitions are watched per key by the alerts and `hotkeys top --index`)",
                width=24,
                left=[
                    cloudwatch.MathExpression(
                        expression=f"SEARCH('{{{schema},service}} {index_metric}', 'Sum', 60)",
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

    def watch_queue(self, name: str, queue: sqs.IQueue, description: str) -> cloudwatch.Alarm:
        """An alarm on one message waiting in ``queue`` (an alert subscriber's undelivered messages, or a
        function's failed asynchronous invocations), notifying the topic like the others, in ``alarms`` under
        ``name`` and beside the others on the dashboard; ``description`` is what the notification says."""
        alarm = self._at_least(
            f"{name}Alarm",
            queue.metric_approximate_number_of_messages_visible(period=Duration.minutes(1), statistic="Maximum"),
            1,
            description,
        )
        self.watch(name, alarm)
        return alarm

    def add_widgets(self, *widgets: cloudwatch.IWidget) -> None:
        """Widgets on the dashboard, if there is one (a lean deployment has none)."""
        if self.dashboard is not None:
            self.dashboard.add_widgets(*widgets)

    def watch(self, name: str, alarm: cloudwatch.Alarm) -> None:
        """An alarm made elsewhere (another function's), notifying the topic and shown like the others."""
        if name in self.alarms:
            raise ValueError(f"an alarm named {name!r} is already watched")
        self.alarms[name] = alarm
        self._notify(alarm)
        self._show_alarm(name, alarm)

    def graph(self, title: str, statistics: Mapping[str, str]) -> None:
        """One graph of the detector's own metrics, each with its statistic per minute (name → statistic)."""
        self.add_widgets(
            cloudwatch.GraphWidget(
                title=title,
                width=24,
                left=[
                    detector_metric(self, name, statistic=statistic, period=Duration.minutes(1))
                    for name, statistic in statistics.items()
                ],
            )
        )

    def _notify(self, alarm: cloudwatch.Alarm) -> None:
        alarm.add_alarm_action(actions.SnsAction(self._topic))
        alarm.add_ok_action(actions.SnsAction(self._topic))

    def _show_alarm(self, name: str, alarm: cloudwatch.Alarm) -> None:
        if self.dashboard is None:
            return
        self._alarm_grid.add(cloudwatch.AlarmWidget(title=name, alarm=alarm, width=ALARM_WIDGET_WIDTH))

    def _at_least(self, alarm_id: str, metric: cloudwatch.Metric, threshold: int, description: str) -> cloudwatch.Alarm:
        return at_least(self, alarm_id, metric, threshold, description)


def at_least(
    scope: Construct, alarm_id: str, metric: cloudwatch.Metric, threshold: int, description: str
) -> cloudwatch.Alarm:
    """An alarm when a count reaches ``threshold`` in one period; no data is no breach (counts of what
    happens now and then are written only when they are not zero)."""
    return metric.create_alarm(
        scope,
        alarm_id,
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        alarm_description=description,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
