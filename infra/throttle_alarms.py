"""Alarms on DynamoDB's throttle metrics by cause, for each watched table and its GSIs.

One alarm per (table or index scope, operation, cause): each metric of ``hotkeys.throttling.THROTTLE_METRICS``
(the one catalogue of the causes, their metrics and their fixes), described with its cause's fix. Each fires
on one throttle event in a minute, and notifies the alert topic like the stack's other alarms (and when it
is OK again).

Which GSIs: a table the stack creates declares its indexes (``WatchedTable.indexes``), and each gets
its own alarms on the metric with ``TableName`` and ``GlobalSecondaryIndexName``. The stack does not
know an existing table's GSIs at synth time (the function learns them at run time from DescribeTable),
so for such a table one alarm per operation and cause watches all of its GSIs at once: a Metrics
Insights query summing the metric over ``SCHEMA("AWS/DynamoDB", GlobalSecondaryIndexName, TableName)``
for that table. AWS: "When you create an alarm based on a Metrics Insights query, the alarm
automatically adjusts as resources are added to or removed from your monitored group" (CloudWatch user
guide, "Create a CloudWatch alarm based on a Metrics Insights query"): a GSI added later is watched
without a redeploy. Which GSI throttled the query does not say: the throttle explainer reads the table from
the query (``hotkeys.detector.throttling.metrics_insights``), lists its GSIs and names each one's throttled keys
(decisions §69); the dashboard graphs each GSI, and ``hotkeys doctor`` reports each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from hotkeys.throttling import INDEX_DIMENSION, NAMESPACE, TABLE_DIMENSION, THROTTLE_METRICS, ThrottleMetric
from infra.detector import WatchedTable

# The index scope of an alarm that watches every GSI of its table (a Metrics Insights query).
ANY_INDEX = "*"
# CloudWatch's longest alarm name.
MAX_ALARM_NAME = 255


def alarm_name_prefix(stack_name: str) -> str:
    """What every throttle alarm's name starts with: the explainer's one invoke permission matches it
    (a function's resource policy is capped at 20 KB: one statement per alarm stops at three tables)."""
    return f"{stack_name}-throttle-"


def alarm_name(prefix: str, readable: str) -> str:
    """``prefix`` and ``readable``, cut to CloudWatch's limit with a digest keeping it unique."""
    name = prefix + readable
    if len(name) <= MAX_ALARM_NAME:
        return name
    digest = hashlib.sha256(readable.encode("utf-8")).hexdigest()[:12]
    return f"{name[: MAX_ALARM_NAME - len(digest) - 1]}-{digest}"


# One throttled event in a minute: a throttle is what an on-call engineer wants to know about.
THRESHOLD_EVENTS = 1
PERIOD = Duration.minutes(1)


@dataclass(frozen=True)
class ThrottleAlarmTarget:
    """What one alarm watches: a watched table (its ``WatchedTable.name`` and its table name, a token for
    a table the stack creates), the table itself (``index`` None), one GSI, or every GSI (``ANY_INDEX``),
    one operation and one cause (``hotkeys.throttling.Cause``)."""

    watched: str
    table_name: str
    index: str | None
    metric: ThrottleMetric

    @property
    def operation(self) -> str:
        return self.metric.operation

    @property
    def cause(self) -> str:
        return self.metric.cause.key

    @property
    def metric_name(self) -> str:
        return self.metric.name


def alarm_key(watched: str, index: str | None, metric_name: str) -> str:
    """The key of ``ThrottleAlarms.alarms``: ``<watched>/<metric>`` for the table, ``<watched>/<index>/<metric>``
    for a GSI (``*`` for every GSI)."""
    return f"{watched}/{metric_name}" if index is None else f"{watched}/{index}/{metric_name}"


def insights_query(metric_name: str, table_name: str) -> str:
    """A Metrics Insights query: the sum of ``metric_name`` over every GSI of ``table_name`` (table names are
    ``[a-zA-Z0-9_.-]``: nothing to escape in a quoted string)."""
    return (
        f'SELECT SUM({metric_name}) FROM SCHEMA("{NAMESPACE}", {INDEX_DIMENSION}, {TABLE_DIMENSION}) '
        f"WHERE {TABLE_DIMENSION} = '{table_name}'"
    )


class ThrottleAlarms(Construct):
    """``alarms`` and ``targets`` share their keys (``alarm_key``): add actions through ``alarms``, read each
    alarm's table, index, operation and cause in ``targets``."""

    def __init__(
        self, scope: Construct, construct_id: str, *, tables: Sequence[WatchedTable], topic: sns.ITopic
    ) -> None:
        super().__init__(scope, construct_id)
        self.name_prefix = alarm_name_prefix(Stack.of(self).stack_name)
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        self.targets: dict[str, ThrottleAlarmTarget] = {}
        for watched in tables:
            table_name = watched.table.table_name
            scopes: list[str | None] = [None]
            scopes += [ANY_INDEX] if watched.indexes is None else list(watched.indexes)
            for index in scopes:
                for metric in THROTTLE_METRICS:
                    target = ThrottleAlarmTarget(watched.name, table_name, index, metric)
                    key = alarm_key(watched.name, index, metric.name)
                    self.targets[key] = target
                    self.alarms[key] = self._alarm(target)
        for alarm in self.alarms.values():
            alarm.add_alarm_action(actions.SnsAction(topic))
            alarm.add_ok_action(actions.SnsAction(topic))

    def _alarm(self, target: ThrottleAlarmTarget) -> cloudwatch.Alarm:
        cause = target.metric.cause
        where = {None: "the table", ANY_INDEX: "a GSI"}.get(target.index, f"GSI {target.index}")
        description = (
            f"DynamoDB throttled {target.operation.lower()}s on {where} of {target.watched} "
            f"({target.metric_name}): {cause.what_to_do}."
        )
        metric = self._metric(target)
        suffix = "AnyIndex" if target.index == ANY_INDEX else ("" if target.index is None else f"Index{target.index}")
        construct_id = f"{target.watched}{suffix}{target.metric_name}"
        return metric.create_alarm(
            self,
            construct_id,
            alarm_name=alarm_name(self.name_prefix, construct_id),
            threshold=THRESHOLD_EVENTS,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            alarm_description=description[:1024],
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    @staticmethod
    def _metric(target: ThrottleAlarmTarget) -> cloudwatch.Metric | cloudwatch.MathExpression:
        """What the target's alarm evaluates: the table's or one GSI's metric, or the sum over every GSI."""
        if target.index == ANY_INDEX:
            return cloudwatch.MathExpression(
                expression=insights_query(target.metric_name, target.table_name),
                using_metrics={},
                period=PERIOD,
                label=f"{target.metric_name} (every GSI)",
            )
        dimensions = {TABLE_DIMENSION: target.table_name}
        if target.index is not None:
            dimensions[INDEX_DIMENSION] = target.index
        return cloudwatch.Metric(
            namespace=NAMESPACE,
            metric_name=target.metric_name,
            dimensions_map=dimensions,
            statistic="Sum",
            period=PERIOD,
        )

    def widgets(self) -> list[cloudwatch.IWidget]:
        """The dashboard's throttle graphs: one per watched table and one per GSI, each with a line per
        operation and cause, as its alarms evaluate them. For a table whose GSIs the stack does not know
        (``ANY_INDEX``), one graph of a search expression: a line per GSI and metric, so the graph names the
        index the aggregate alarm cannot (a GSI added later appears without a redeploy)."""
        scopes: dict[tuple[str, str | None], list[ThrottleAlarmTarget]] = {}
        for target in self.targets.values():
            scopes.setdefault((target.watched, target.index), []).append(target)
        widgets: list[cloudwatch.IWidget] = []
        for (watched, index), targets in scopes.items():
            where = {None: "table", ANY_INDEX: "every GSI"}.get(index, f"GSI {index}")
            title = f"DynamoDB throttle events: {watched} {where} (alarm at {THRESHOLD_EVENTS} a minute)"
            lines: list[cloudwatch.IMetric]
            if index == ANY_INDEX:
                lines = [
                    cloudwatch.MathExpression(
                        expression=search_expression([t.metric_name for t in targets], targets[0].table_name),
                        using_metrics={},
                        label="",
                        period=PERIOD,
                    )
                ]
            else:
                lines = [self._metric(target).with_(label=target.metric_name) for target in targets]
            widgets.append(cloudwatch.GraphWidget(title=title, width=12, left=lines))
        return widgets


def search_expression(metric_names: Sequence[str], table_name: str) -> str:
    """A dashboard search: each of ``metric_names`` for every GSI of ``table_name`` (exact matches, in
    double quotes: CloudWatch user guide, "CloudWatch search expression syntax")."""
    names = " OR ".join(f'MetricName="{name}"' for name in metric_names)
    schema = f"{{{NAMESPACE},{INDEX_DIMENSION},{TABLE_DIMENSION}}}"
    terms = f'{TABLE_DIMENSION}="{table_name}" ({names})'
    return f"SEARCH('{schema} {terms}', 'Sum', {int(PERIOD.to_seconds())})"
